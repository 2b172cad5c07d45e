"""Tests for catalogd.metastore.client that need no metastore: URIs, unreachable hosts, broken connections."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from polling import wait_until

from catalogd.errors import InvalidArgumentError, MetastoreUnavailableError
from catalogd.metastore.client import MetastoreClient, parse_uris

# --------------------------------------------------------------------------- parse_uris


@pytest.mark.parametrize(
    ("uris", "expected"),
    [
        ("thrift://h:9083", [("h", 9083)]),
        ("thrift://metastore.example.com:19083", [("metastore.example.com", 19083)]),
        ("thrift://h1:9083,thrift://h2:9084", [("h1", 9083), ("h2", 9084)]),
        (" thrift://h1:1 , thrift://h2:2 ", [("h1", 1), ("h2", 2)]),
        (["thrift://a:1", "thrift://b:2"], [("a", 1), ("b", 2)]),
        ("thrift://h", [("h", 9083)]),  # HMS's usual port when none is given
        ("thrift://10.0.0.7:9083", [("10.0.0.7", 9083)]),
        ("thrift://[::1]:9083", [("::1", 9083)]),
    ],
)
def test_parse_uris(uris: str | list[str], expected: list[tuple[str, int]]) -> None:
    assert parse_uris(uris) == expected


@pytest.mark.parametrize(
    ("uris", "message"),
    [
        ("", "bad metastore URI ''"),
        ([], "no metastore URI given"),
        ("h:9083", "bad metastore URI 'h:9083'"),
        ("http://h:9083", "bad metastore URI 'http://h:9083'"),
        ("thrift://:9083", "expected thrift://HOST:PORT"),
        ("thrift://h:9083,", "bad metastore URI ''"),
        ("thrift://h:9083,,thrift://g:1", "bad metastore URI ''"),
        ("thrift://h:port", "bad metastore URI 'thrift://h:port'"),
        ("thrift://h:99999", "bad metastore URI 'thrift://h:99999'"),
        ("thrift://h:-1", "bad metastore URI"),
        ("embedded", "bad metastore URI 'embedded'"),
    ],
)
def test_parse_uris_rejects(uris: str | list[str], message: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_uris(uris)
    assert message in str(info.value)


# --------------------------------------------------------------------------- unreachable metastores


def closed_port() -> int:
    """A local port nothing listens on (bound for a moment, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_no_reachable_metastore_names_every_uri() -> None:
    ports = [closed_port(), closed_port(), closed_port()]
    connect_timeout = 2.0
    client = MetastoreClient([("127.0.0.1", p) for p in ports], connect_timeout=connect_timeout, socket_timeout=5)
    start = time.monotonic()
    with pytest.raises(MetastoreUnavailableError) as info:
        client.call("get_all_databases")
    elapsed = time.monotonic() - start
    message = str(info.value)
    assert message.startswith("no metastore reachable")
    for port in ports:
        assert f"thrift://127.0.0.1:{port}" in message
    assert elapsed < connect_timeout + 1.0
    client.close()


@pytest.fixture
def blackholed_ports() -> Iterator[list[int]]:
    """Two local ports that never answer a connect: listeners whose accept queue is full.

    Linux drops the SYNs a full queue cannot take, so a connect waits for its timeout,
    as it would for a host that is down.
    """
    listeners: list[socket.socket] = []
    fillers: list[socket.socket] = []
    ports = []
    try:
        for _ in range(2):
            listener = socket.create_server(("127.0.0.1", 0), backlog=0)
            listeners.append(listener)
            port = int(listener.getsockname()[1])
            for _ in range(8):
                filler = socket.socket()
                fillers.append(filler)
                filler.settimeout(0.3)
                try:
                    filler.connect(("127.0.0.1", port))
                except (TimeoutError, OSError):
                    break  # the queue is full: this port now swallows connects
            else:
                pytest.skip("this kernel does not let a full accept queue drop connects")
            ports.append(port)
        yield ports
    finally:
        for sock in fillers + listeners:
            sock.close()


def test_a_metastore_that_does_not_answer_times_out_per_uri(blackholed_ports: list[int]) -> None:
    connect_timeout = 0.5
    client = MetastoreClient([("127.0.0.1", p) for p in blackholed_ports], connect_timeout=connect_timeout)
    start = time.monotonic()
    with pytest.raises(MetastoreUnavailableError) as info:
        client.call("get_all_databases")
    elapsed = time.monotonic() - start
    for port in blackholed_ports:
        assert f"thrift://127.0.0.1:{port}" in str(info.value)
    # Each URI gets its connect timeout, one after the other, and no more.
    assert connect_timeout * len(blackholed_ports) * 0.8 <= elapsed < connect_timeout * len(blackholed_ports) + 1.5


def test_unreachable_metastore_fails_for_writes_too() -> None:
    port = closed_port()
    client = MetastoreClient([("127.0.0.1", port)], connect_timeout=1, socket_timeout=1)
    with pytest.raises(MetastoreUnavailableError, match=f"thrift://127.0.0.1:{port}"):
        client.call("create_database", None, idempotent=False)


def test_a_closed_client_refuses_calls() -> None:
    client = MetastoreClient([("127.0.0.1", closed_port())])
    client.close()
    with pytest.raises(MetastoreUnavailableError, match="closed"):
        client.call("get_all_databases")


def test_a_client_needs_uris() -> None:
    with pytest.raises(InvalidArgumentError, match="no metastore URI given"):
        MetastoreClient([])


def test_uri_string() -> None:
    client = MetastoreClient([("h1", 9083), ("h2", 9084)])
    assert client.uri_string == "thrift://h1:9083,thrift://h2:9084"


# --------------------------------------------------------------------------- connections that break


class HangUpServer:
    """Accepts connections, reads the request and hangs up without answering."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = int(self.listener.getsockname()[1])
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    conn.recv(65536)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.listener.close()


@pytest.fixture
def hang_up_server() -> Iterator[HangUpServer]:
    server = HangUpServer()
    yield server
    server.close()


def test_a_broken_read_is_retried_once_on_a_new_connection(hang_up_server: HangUpServer) -> None:
    client = MetastoreClient([("127.0.0.1", hang_up_server.port)], connect_timeout=2, socket_timeout=2)
    with pytest.raises(MetastoreUnavailableError, match="metastore call get_all_databases failed"):
        client.call("get_all_databases")
    assert hang_up_server.accepted == 2
    client.close()


def test_a_broken_write_is_not_retried(hang_up_server: HangUpServer) -> None:
    """The write may have run before the connection broke: running it again is not safe."""
    client = MetastoreClient([("127.0.0.1", hang_up_server.port)], connect_timeout=2, socket_timeout=2)
    with pytest.raises(MetastoreUnavailableError, match="metastore call drop_database failed"):
        client.call("drop_database", "db", True, False, idempotent=False)
    assert hang_up_server.accepted == 1
    client.close()


def test_failover_skips_an_unreachable_uri(hang_up_server: HangUpServer) -> None:
    dead = closed_port()
    client = MetastoreClient(
        [("127.0.0.1", dead), ("127.0.0.1", hang_up_server.port)], connect_timeout=2, socket_timeout=2
    )
    with pytest.raises(MetastoreUnavailableError) as info:
        client.call("get_all_databases")
    # It got through to the second URI (which then hung up), not stuck at the first.
    assert hang_up_server.accepted == 2
    assert "failed" in str(info.value)
    client.close()


# --------------------------------------------------------------------------- a metastore that hangs


class SilentServer:
    """Accepts connections and keeps them open without ever answering (a SIGSTOPped metastore)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(conn)

    def close(self) -> None:
        # shutdown() wakes the accept(); close() alone does not on Linux.
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self._thread.join(timeout=5)
        for conn in self.connections:
            conn.close()


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def test_calls_beyond_the_in_flight_cap_fail_at_once(silent_server: SilentServer) -> None:
    client = MetastoreClient([("127.0.0.1", silent_server.port)], connect_timeout=5, socket_timeout=60,
                             max_in_flight=2, name="catalog slow")
    errors: list[BaseException] = []

    def hung_call() -> None:
        try:
            client.call("get_all_databases")
        except BaseException as e:
            errors.append(e)

    hung = [threading.Thread(target=hung_call, daemon=True) for _ in range(2)]
    for thread in hung:
        thread.start()
    wait_until(lambda: len(silent_server.connections) == 2, 10, "both calls to be waiting on the metastore")
    # The third is refused without touching the network (the server would make it wait 60s).
    with pytest.raises(MetastoreUnavailableError, match=r"catalog slow: too many calls in flight \(2\)"):
        client.call("get_all_databases")
    assert len(silent_server.connections) == 2
    client.close()
    for conn in silent_server.connections:
        conn.shutdown(socket.SHUT_RDWR)  # the hung calls fail now and give their slots back
    for thread in hung:
        thread.join(10)
    assert len(errors) == 2 and all(isinstance(e, MetastoreUnavailableError) for e in errors)


def test_a_slot_is_given_back_after_each_call(hang_up_server: HangUpServer) -> None:
    client = MetastoreClient([("127.0.0.1", hang_up_server.port)], connect_timeout=2, socket_timeout=2,
                             max_in_flight=1)
    for _ in range(3):
        with pytest.raises(MetastoreUnavailableError, match="failed"):
            client.call("get_all_databases")
    client.close()


def test_a_probe_gives_up_at_its_own_deadline(silent_server: SilentServer) -> None:
    """The pool's 60s socket timeout does not apply to a health probe."""
    client = MetastoreClient([("127.0.0.1", silent_server.port)], connect_timeout=5, socket_timeout=60,
                             max_in_flight=1)
    outcome: list[BaseException] = []

    def probe() -> None:
        try:
            client.probe(0.5)
        except BaseException as e:
            outcome.append(e)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    wait_until(lambda: outcome, 15, "the probe to give up (a 60s wait would time out here)")
    assert isinstance(outcome[0], MetastoreUnavailableError)
    assert "no answer within 0.5s" in str(outcome[0])
    client.close()


def test_a_closed_connection_names_the_settings_that_could_be_missing(hang_up_server: HangUpServer) -> None:
    """A kerberized metastore, and another catalogd's embedded one (without its key), close the
    connection at the first call: the error says which settings would help."""
    plain = MetastoreClient([("127.0.0.1", hang_up_server.port)], connect_timeout=2, socket_timeout=2)
    with pytest.raises(MetastoreUnavailableError) as info:
        plain.call("get_all_databases", idempotent=False)
    assert "hive.metastore.sasl.enabled" in str(info.value) and "metastore-key-file" in str(info.value)
    keyed = MetastoreClient([("127.0.0.1", hang_up_server.port)], connect_timeout=2, socket_timeout=2,
                            key=lambda: b"k")
    with pytest.raises(MetastoreUnavailableError) as info:
        keyed.call("get_all_databases", idempotent=False)
    assert "metastore-key-file" not in str(info.value)
