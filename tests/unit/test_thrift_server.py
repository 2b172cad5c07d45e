"""Tests for catalogd.server.thrift_server: the selector + worker-pool Thrift server, run in-process on a free port.

The server runs the real generated ``CatalogService.Processor`` over a stub handler, so what is
tested is the server itself: framing, its limits (frame size, workers, connections, idle and
frame deadlines, buffered bytes), bad and vanishing clients, and its shutdown. Faults are real:
real sockets that stay idle, trickle bytes, send garbage or go away.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from polling import holds_for, wait_until
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.transport import TSocket, TTransport

from catalogd.gen.catalogd_thrift import CatalogService
from catalogd.server.thrift_server import ThriftServer

SERVER_LOGGER = "catalogd.server.thrift_server"
#: How long a test waits for something that should happen at once (a busy machine may be slow).
DEADLINE = 30.0
#: ``listDatabases("big")`` answers this many names: a reply of several MiB, more than socket buffers hold.
BIG_REPLY_NAMES = 400_000


class StubHandler:
    """The two RPCs the tests call. ``listDatabases`` echoes its argument; two arguments are special:

    * ``"slow"`` blocks until the test sets ``release`` (a request in flight);
    * ``"together"`` waits at ``barrier`` until every concurrent caller is inside the handler.
    """

    def __init__(self, parties: int = 1) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.barrier = threading.Barrier(parties)

    def ping(self) -> str:
        return "pong"

    def listDatabases(self, catalog: str) -> list[str]:  # the generated interface names it so
        if catalog == "big":
            return [f"database_{i:08d}" for i in range(BIG_REPLY_NAMES)]
        if catalog == "slow":
            self.entered.set()
            self.release.wait(120)
        elif catalog == "together":
            self.barrier.wait(DEADLINE)  # a server that serves one at a time breaks the barrier
        return [catalog]


Start = Callable[..., ThriftServer]


@pytest.fixture
def serve() -> Iterator[Start]:
    """``serve(handler, max_frame_size=..., workers=..., **limits)``: a started server on a free port."""
    started: list[tuple[ThriftServer, StubHandler]] = []

    def start(handler: StubHandler | None = None, max_frame_size: int = 1 << 20,
              workers: int = 8, **limits: Any) -> ThriftServer:
        handler = handler or StubHandler()
        server = ThriftServer(CatalogService.Processor(handler), "127.0.0.1", 0, max_frame_size, workers, **limits)
        server.start()
        started.append((server, handler))
        return server

    yield start
    for server, handler in started:
        handler.release.set()
        server.shutdown(grace=5)


@contextlib.contextmanager
def connect(server: ThriftServer) -> Iterator[CatalogService.Client]:
    """A generated client on a framed transport, as catalogd's own client talks."""
    sock = TSocket.TSocket("127.0.0.1", server.port)
    sock.setTimeout(DEADLINE * 1000)
    transport = TTransport.TFramedTransport(sock)
    transport.open()
    try:
        yield CatalogService.Client(TBinaryProtocolAccelerated(transport))
    finally:
        transport.close()


def raw_socket(server: ThriftServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE)


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (reads end of file, or a reset); blocks up to the socket's timeout."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def refused(server: ThriftServer) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5):
            return False
    except ConnectionRefusedError:
        return True


def in_thread(target: Callable[[], object]) -> tuple[threading.Thread, dict[str, object]]:
    """Run ``target`` on a thread; its result (``"value"``) or exception (``"error"``) lands in the dict."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = target()
        except BaseException as e:  # handed to the test, which asserts on it
            outcome["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


# ---------------------------------------------------------------- calls


def test_calls_are_answered_on_one_connection(serve: Start) -> None:
    server = serve()
    assert server.port != 0  # port 0 asks for a free one; the server says which
    with connect(server) as client:
        assert client.ping() == "pong"
        assert client.listDatabases("main") == ["main"]
        assert client.ping() == "pong"


def test_several_clients_are_served_at_once(serve: Start) -> None:
    parties = 4
    handler = StubHandler(parties)
    server = serve(handler, workers=parties)

    def call() -> list[str]:
        with connect(server) as client:
            return client.listDatabases("together")

    calls = [in_thread(call) for _ in range(parties)]
    wait_until(lambda: all(not thread.is_alive() for thread, _ in calls), DEADLINE, "every concurrent call")
    assert [outcome for _, outcome in calls] == [{"value": ["together"]}] * parties


def test_an_idle_connection_holds_no_worker(serve: Start) -> None:
    server = serve(workers=1)
    with connect(server) as first, connect(server) as second:
        assert first.ping() == "pong"
        # The first client stays connected, idle, holding the only worker in a thread-per-connection server.
        assert second.ping() == "pong"
        assert first.ping() == "pong"


def test_calls_beyond_the_pool_wait_for_a_worker(serve: Start) -> None:
    handler = StubHandler()
    server = serve(handler, workers=1)
    with connect(server) as busy, connect(server) as waiting:
        call, answer = in_thread(lambda: busy.listDatabases("slow"))
        wait_until(handler.entered.is_set, DEADLINE, "the slow call to take the only worker")
        second, outcome = in_thread(waiting.ping)
        holds_for(second.is_alive, 1.0, "the second call waiting for the worker")
        handler.release.set()
        wait_until(lambda: not call.is_alive() and not second.is_alive(), DEADLINE, "both calls")
        assert answer == {"value": ["slow"]}
        assert outcome == {"value": "pong"}


# ---------------------------------------------------------------- bad and broken clients


def test_an_oversize_frame_closes_that_connection_only(serve: Start, caplog: pytest.LogCaptureFixture) -> None:
    server = serve(max_frame_size=4096, workers=1)
    with connect(server) as client:
        assert client.listDatabases("x" * 3000) == ["x" * 3000]  # a frame under the limit
    caplog.set_level(logging.WARNING, logger=SERVER_LOGGER)
    with connect(server) as client, pytest.raises(TTransport.TTransportException):
        client.listDatabases("x" * 5000)  # refused: the server closes the connection, no reply
    assert any("larger than the maximum" in r.getMessage() for r in caplog.records), caplog.text
    # Only a frame header that announces too much: refused before anything else is read.
    with raw_socket(server) as sock:
        sock.sendall(struct.pack("!i", 1 << 30))
        assert closed_by_server(sock)
    # The server goes on, and its only worker is free.
    with connect(server) as client:
        assert client.ping() == "pong"


@pytest.mark.parametrize(
    "sent",
    [b"\x00\x00", struct.pack("!i", 100), struct.pack("!i", 100) + b"\x80\x01\x00\x01"],
    ids=["half-a-header", "header-only", "header-and-part-of-the-frame"],
)
def test_a_client_gone_mid_frame_does_not_break_the_server(serve: Start, caplog: pytest.LogCaptureFixture,
                                                           sent: bytes) -> None:
    caplog.set_level(logging.DEBUG, logger=SERVER_LOGGER)
    server = serve(workers=1)
    with raw_socket(server) as sock:
        sock.sendall(sent)
    # Its only worker is free and the server answers the next client.
    with connect(server) as client:
        assert client.ping() == "pong"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


# ---------------------------------------------------------------- shutdown


def test_shutdown_closes_idle_connections_without_waiting_for_the_grace(serve: Start) -> None:
    server = serve()
    with contextlib.ExitStack() as stack:
        idle = [stack.enter_context(connect(server)) for _ in range(3)]
        for client in idle:
            assert client.ping() == "pong"
        # A grace far longer than the deadline below: returning in time proves it was not waited for.
        stopping, outcome = in_thread(lambda: server.shutdown(grace=600))
        wait_until(lambda: not stopping.is_alive(), DEADLINE, "shutdown with only idle connections")
        assert outcome == {"value": None}
        assert refused(server)
        for client in idle:
            with pytest.raises((TTransport.TTransportException, OSError, EOFError)):
                client.ping()


def test_shutdown_lets_a_request_in_flight_finish(serve: Start) -> None:
    handler = StubHandler()
    server = serve(handler)
    with connect(server) as client:
        call, answer = in_thread(lambda: client.listDatabases("slow"))
        wait_until(handler.entered.is_set, DEADLINE, "the slow request to reach the handler")
        stopping, outcome = in_thread(lambda: server.shutdown(grace=600))
        # New connections are refused at once; the request in flight holds the shutdown.
        wait_until(lambda: refused(server), DEADLINE, "the listener to close")
        holds_for(lambda: stopping.is_alive() and call.is_alive(), 0.5, "shutdown waiting for the request")
        handler.release.set()
        wait_until(lambda: not call.is_alive(), DEADLINE, "the request in flight to finish")
        assert answer == {"value": ["slow"]}
        wait_until(lambda: not stopping.is_alive(), DEADLINE, "shutdown once the request finished")
        assert outcome == {"value": None}


def test_shutdown_gives_up_on_a_request_that_outlasts_the_grace(serve: Start,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=SERVER_LOGGER)
    handler = StubHandler()
    server = serve(handler)
    with connect(server) as client:
        call, _ = in_thread(lambda: client.listDatabases("slow"))
        wait_until(handler.entered.is_set, DEADLINE, "the slow request to reach the handler")
        stopping, outcome = in_thread(lambda: server.shutdown(grace=0.5))
        wait_until(lambda: not stopping.is_alive(), DEADLINE, "shutdown after its grace")
        assert outcome == {"value": None}
        assert call.is_alive(), "the stuck request was not stuck: nothing tested"
        assert any("still running after" in r.getMessage() for r in caplog.records), caplog.text
        handler.release.set()
        wait_until(lambda: not call.is_alive(), DEADLINE, "the released request to end")
