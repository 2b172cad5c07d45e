"""Tests for catalogd.server.http over real sockets: uvicorn in-process, slow and stalled clients cut."""

from __future__ import annotations

import contextlib
import json
import logging
import select
import signal
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from polling import wait_until

from catalogd.model import RefreshJob, RunStatus
from catalogd.server.http import HttpServer
from catalogd.server.http_app import REFRESH
from catalogd.server.metrics import Metrics

#: Generous: a busy 2-core machine can be slow to do anything.
PATIENCE = 60.0


class FakeManager:
    def ping(self) -> dict[str, str | None]:
        return {"main": None}


class SlowDynamic:
    """A refresh takes ``seconds`` (as one that waits for a metastore would)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.started = threading.Event()

    def refresh(self, tables: list[str], schedule_time: str | None = None, partition: dict[str, str] | None = None,
                configuration: dict[str, str] | None = None, trigger: str = "manual") -> RefreshJob:
        self.started.set()
        time.sleep(self.seconds)
        return RefreshJob(id="job-1", status=RunStatus.PENDING, cluster_info={"master": "local[1]"})

    def get_job(self, job_id: str) -> RefreshJob:
        return RefreshJob(id=job_id, status=RunStatus.SUCCEEDED)


@contextlib.contextmanager
def serving(dynamic: SlowDynamic | None = None, **kwargs: Any) -> Iterator[HttpServer]:
    server = HttpServer("127.0.0.1", 0, FakeManager(), Metrics(), dynamic or SlowDynamic(), **kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def quiet_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Fails the test when anything logs a traceback or an error."""
    with caplog.at_level(logging.DEBUG):
        yield caplog
    bad = [r for r in caplog.records if r.exc_info is not None or r.levelno >= logging.ERROR]
    assert not bad, [r.getMessage() for r in bad]


def get(server: HttpServer, path: str, timeout: float = PATIENCE) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def connect(server: HttpServer, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE)
    if data:
        sock.sendall(data)
    return sock


def read_to_eof(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a socket timeout fails the test)."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def status_and_body(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


@pytest.mark.parametrize("data", [
    b"",                                                            # connected, silent
    b"GET /healthz HTTP/1.1\r\nHost: x\r\n",                        # headers never finished
    b"POST " + REFRESH.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",  # body never finished
], ids=["silent", "stalled-headers", "stalled-body"])
def test_a_stalled_client_gets_408_and_is_closed(quiet_log: pytest.LogCaptureFixture, data: bytes) -> None:
    with serving(request_timeout=0.5) as server, connect(server, data) as sock:
        status, body = status_and_body(read_to_eof(sock))
        assert status == 408
        assert body["error"]["kind"] == "request-timeout"
        assert get(server, "/healthz")[0] == 200


def test_a_trickling_client_is_cut_at_the_deadline(quiet_log: pytest.LogCaptureFixture) -> None:
    """A byte now and then keeps a connection alive past any idle timeout, not past the request's deadline."""
    with serving(request_timeout=1.0, keep_alive=1) as server, connect(server) as sock:
        header = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10_000
        deadline = time.monotonic() + PATIENCE
        sent = 0
        while not select.select([sock], [], [], 0.1)[0]:
            assert time.monotonic() < deadline, "the server never cut a client that trickles its headers"
            sock.sendall(header[sent:sent + 1])
            sent += 1
        assert status_and_body(read_to_eof(sock))[0] == 408


def test_after_its_408_the_server_takes_the_clients_last_bytes_without_a_reset(
        quiet_log: pytest.LogCaptureFixture) -> None:
    """The close after a 408 is clean: the server reads what still comes until the client closes.

    A server that closes at once answers each later byte with a reset; one of those, racing the
    408 on a busy machine, is how a trickling client read "connection reset" instead of its answer.
    """
    with serving(request_timeout=0.5) as server, connect(server, b"GET /healthz HTTP/1.1\r\nHost:") as sock:
        assert select.select([sock], [], [], PATIENCE)[0], "no 408"
        head = sock.recv(65536)
        assert head.startswith(b"HTTP/1.1 408 ")
        sock.sendall(b" x")  # the rest of a header the client was still sending
        time.sleep(0.3)  # a closed socket's reset arrives by now
        sock.sendall(b"y\r\n")
        sock.shutdown(socket.SHUT_WR)
        assert b"408" in head + read_to_eof(sock)


def test_a_kept_alive_connection_serves_several_requests_then_idles_out(quiet_log: pytest.LogCaptureFixture) -> None:
    with serving(request_timeout=30.0, keep_alive=1) as server, connect(server) as sock:
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        sock.sendall(request + request)
        answer = read_to_eof(sock)  # closed by the keep-alive timeout, long before the request deadline
        assert answer.count(b"HTTP/1.1 200 OK") == 2
        assert b"408" not in answer


def test_a_slow_answer_is_not_cut(quiet_log: pytest.LogCaptureFixture) -> None:
    """The deadline is for receiving the request; the daemon may take its time to answer."""
    dynamic = SlowDynamic()
    dynamic.seconds = 1.5
    with serving(dynamic, request_timeout=0.5) as server:
        request = urllib.request.Request(f"http://127.0.0.1:{server.port}{REFRESH}", data=b'{"tables": ["a"]}',
                                         method="POST")
        with urllib.request.urlopen(request, timeout=PATIENCE) as response:
            assert response.status == 200
            assert json.loads(response.read())["jobId"] == "job-1"


def test_a_malformed_request_is_a_json_400(quiet_log: pytest.LogCaptureFixture) -> None:
    with serving() as server:
        for length in (b"lots", b"-5"):
            with connect(server, b"POST " + REFRESH.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                         length + b"\r\n\r\n{}") as sock:
                status, body = status_and_body(read_to_eof(sock))
                assert status == 400 and body["error"]["kind"] == "invalid-argument"
                assert "Content-Length" in body["error"]["message"]
        with connect(server, b"NOT HTTP AT ALL\r\n\r\n") as sock:
            assert status_and_body(read_to_eof(sock))[0] == 400
        assert get(server, "/healthz")[0] == 200


def test_healthz_answers_beside_2000_slow_connections_and_after(quiet_log: pytest.LogCaptureFixture) -> None:
    with serving(request_timeout=PATIENCE * 2) as server:
        slow = []
        try:
            for _ in range(2000):
                slow.append(connect(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\n"))
            status, body = get(server, "/healthz")
            assert status == 200 and json.loads(body) == {"status": "ok"}
        finally:
            for sock in slow:
                sock.close()
        assert get(server, "/healthz")[0] == 200
        assert get(server, "/readyz")[0] == 200


def test_stop_lets_a_request_in_flight_finish_then_closes_the_port(quiet_log: pytest.LogCaptureFixture) -> None:
    dynamic = SlowDynamic()
    dynamic.seconds = 1.0
    server = HttpServer("127.0.0.1", 0, FakeManager(), Metrics(), dynamic, shutdown_grace=PATIENCE)
    server.start()
    answers: list[int] = []

    def refresh() -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{server.port}{REFRESH}", data=b'{"tables": ["a"]}',
                                         method="POST")
        with urllib.request.urlopen(request, timeout=PATIENCE) as response:
            answers.append(response.status)

    client = threading.Thread(target=refresh)
    client.start()
    assert dynamic.started.wait(PATIENCE)
    server.stop()
    client.join(PATIENCE)
    assert answers == [200]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE)


def test_a_port_in_use_fails_at_construction_and_signals_stay_with_the_caller() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with serving() as server:
        with pytest.raises(OSError):
            HttpServer("127.0.0.1", server.port, FakeManager(), Metrics())
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
        wait_until(lambda: get(server, "/healthz")[0] == 200, PATIENCE, "/healthz")
