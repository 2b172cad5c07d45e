"""Tests for catalogd.server.thrift_server: the selector + worker-pool Thrift server, run in-process on a free port.

The server runs the real generated ``CatalogService.Processor`` over a stub handler, so what is
tested is the server itself: framing, its limits (frame size, workers, connections, idle and
frame deadlines, buffered bytes), bad and vanishing clients, and its shutdown. Faults are real:
real sockets that stay idle, trickle bytes, send garbage or go away.
"""

from __future__ import annotations

import contextlib
import logging
import resource
import select
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from polling import holds_for, wait_until
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.Thrift import TApplicationException, TMessageType
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


def frame(payload: bytes) -> bytes:
    return struct.pack("!i", len(payload)) + payload


def message(name: str, seqid: int = 1) -> bytes:
    """A well-formed call of ``name`` with no arguments, as a Thrift client encodes it."""
    buffer = TTransport.TMemoryBuffer()
    protocol = TBinaryProtocolAccelerated(buffer)
    protocol.writeMessageBegin(name, TMessageType.CALL, seqid)
    protocol.writeStructBegin("args")
    protocol.writeFieldStop()
    protocol.writeStructEnd()
    protocol.writeMessageEnd()
    return buffer.getvalue()


def no_tracebacks_or_errors(caplog: pytest.LogCaptureFixture) -> bool:
    return not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.parametrize(
    "sent",
    [
        frame(bytes(range(256)) * 4),  # not a Thrift message at all
        frame(b"\x80\x01\x00\x01" + struct.pack("!i", 1 << 30) + b"ping"),  # a name longer than the frame
        frame(message("ping")[:-1] + b"\x0f\x00\x01\x0b\x7f\xff\xff\xff"),  # a list of 2^31 strings
        struct.pack("!i", -5),  # a negative frame size
        struct.pack("!i", 0),
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # an HTTP client on the Thrift port
    ],
    ids=["random-bytes", "lying-string-length", "lying-list-length", "negative-size", "empty-frame", "http"],
)
def test_a_garbage_frame_closes_that_connection_without_a_traceback(serve: Start, caplog: pytest.LogCaptureFixture,
                                                                    sent: bytes) -> None:
    caplog.set_level(logging.DEBUG, logger=SERVER_LOGGER)
    server = serve(workers=1)
    with connect(server) as bystander:
        assert bystander.ping() == "pong"
        with raw_socket(server) as sock:
            sock.sendall(sent)
            assert closed_by_server(sock)
        assert bystander.ping() == "pong"
    wait_until(lambda: server.stats()["busy"] == 0, DEADLINE, "the garbage call to be over")
    assert no_tracebacks_or_errors(caplog), caplog.text


def test_an_unknown_method_gets_a_thrift_error_and_the_connection_goes_on(serve: Start) -> None:
    server = serve()
    with raw_socket(server) as sock:
        sock.sendall(frame(message("dropEverything", seqid=7)))
        size = struct.unpack("!i", recv_exactly(sock, 4))[0]
        reply = TTransport.TMemoryBuffer(recv_exactly(sock, size))
        protocol = TBinaryProtocolAccelerated(reply)
        name, kind, seqid = protocol.readMessageBegin()
        assert (name, kind, seqid) == ("dropEverything", TMessageType.EXCEPTION, 7)
        error = TApplicationException()
        error.read(protocol)
        assert error.type == TApplicationException.UNKNOWN_METHOD
        # The same connection serves the next call.
        assert b"pong" in call_raw(sock, "ping")


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError(f"closed after {len(data)} of {size} bytes")
        data += chunk
    return data


def test_a_client_gone_mid_reply_does_not_break_the_server(serve: Start, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=SERVER_LOGGER)
    server = serve(workers=1)
    for _ in range(3):
        with raw_socket(server) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            request = TTransport.TMemoryBuffer()
            CatalogService.Client(TBinaryProtocolAccelerated(request)).send_listDatabases("big")
            sock.sendall(frame(request.getvalue()))
            assert len(sock.recv(1024)) > 0  # the reply has started: now go away in the middle of it
    wait_until(lambda: server.stats() == {"connections": 0, "buffered_bytes": 0, "busy": 0, "partial_frames": 0},
               DEADLINE, "the abandoned replies to be dropped")
    with connect(server) as client:
        assert client.ping() == "pong"
    assert no_tracebacks_or_errors(caplog), caplog.text


def test_a_client_that_does_not_take_its_reply_is_closed_after_the_frame_timeout(serve: Start) -> None:
    server = serve(workers=1, frame_timeout=1.0)
    with raw_socket(server) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        request = TTransport.TMemoryBuffer()
        CatalogService.Client(TBinaryProtocolAccelerated(request)).send_listDatabases("big")
        sock.sendall(frame(request.getvalue()))
        # The reply is several MiB and this client reads none of it.
        wait_until(lambda: server.stats()["connections"] == 0, DEADLINE, "the stalled reader to be closed")
        assert server.stats()["busy"] == 0
    with connect(server) as client:
        assert client.ping() == "pong"


# ---------------------------------------------------------------- limits: idle, slow and greedy connections


@pytest.fixture
def many_fds() -> None:
    """Raise this process's open file limit: the tests below hold both ends of over a thousand connections."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * 1024
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the open file limit ({hard}) is too low for this test")
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


class Trickle:
    """Connections that each announce a frame and then send it one byte at a time, never finishing."""

    def __init__(self, server: ThriftServer, count: int, frame_size: int = 1 << 20, every: float = 0.2) -> None:
        self.sockets = [raw_socket(server) for _ in range(count)]
        for sock in self.sockets:
            sock.sendall(struct.pack("!i", frame_size) + b"\x80\x01")
        self._stop = threading.Event()
        self._every = every
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.send(b"\x00")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock in self.sockets:
            sock.close()


@pytest.mark.usefixtures("many_fds")
def test_a_thousand_idle_and_fifty_slow_connections_do_not_stop_a_new_client(serve: Start) -> None:
    idle_count, slow_count = 1000, 50
    server = serve(workers=4, max_connections=2000)
    with contextlib.ExitStack() as stack:
        idle = [stack.enter_context(raw_socket(server)) for _ in range(idle_count)]
        slow = Trickle(server, slow_count)
        stack.callback(slow.close)
        wait_until(lambda: server.stats()["connections"] == idle_count + slow_count, DEADLINE,
                   "the server to hold every connection")
        wait_until(lambda: server.stats()["partial_frames"] == slow_count, DEADLINE, "the slow frames to start")
        # A thread-per-connection server with 4 (or 32) slots never answers: the socket's deadline fails the call.
        for _ in range(20):
            with connect(server) as client:
                assert client.ping() == "pong"
        assert server.stats()["connections"] >= idle_count + slow_count
        assert all(not closed_now(sock) for sock in idle)


def closed_now(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` already (does not wait)."""
    poller = select.poll()  # not select.select: these descriptors go past 1024
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0)) and closed_by_server(sock)


def test_an_idle_connection_is_closed_after_the_idle_timeout(serve: Start) -> None:
    handler = StubHandler()
    server = serve(handler, idle_timeout=0.5)
    with connect(server) as busy, raw_socket(server) as idle:
        # A call running longer than the idle timeout keeps its connection.
        call, answer = in_thread(lambda: busy.listDatabases("slow"))
        wait_until(handler.entered.is_set, DEADLINE, "the slow call to start")
        # The idle one is closed (the test waits, without a timing assertion, for the server to do it).
        assert closed_by_server(idle)
        holds_for(call.is_alive, 1.0, "the slow call still running, its connection open")
        handler.release.set()
        wait_until(lambda: not call.is_alive(), DEADLINE, "the slow call to end")
        assert answer == {"value": ["slow"]}


def test_a_frame_must_arrive_within_the_frame_timeout(serve: Start, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=SERVER_LOGGER)
    server = serve(idle_timeout=600, frame_timeout=1.0)
    slow = Trickle(server, 3, every=0.1)  # active all along: only the deadline of the whole frame ends them
    try:
        wait_until(lambda: server.stats()["partial_frames"] == 3, DEADLINE, "the slow frames to start")
        wait_until(lambda: server.stats()["connections"] == 0, DEADLINE, "the slow frames to be cut off")
        for sock in slow.sockets:
            sock.settimeout(DEADLINE)
            assert closed_by_server_after_draining(sock)
    finally:
        slow.close()
    assert server.stats()["buffered_bytes"] == 0
    assert any("did not arrive within" in r.getMessage() for r in caplog.records), caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def closed_by_server_after_draining(sock: socket.socket) -> bool:
    while True:
        try:
            if sock.recv(4096) == b"":
                return True
        except ConnectionResetError:
            return True


def test_partial_frames_cannot_hold_more_than_the_buffered_bytes_cap(serve: Start,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=SERVER_LOGGER)
    frame_size, cap, greedy = 1 << 20, 4 << 20, 12
    server = serve(max_frame_size=frame_size, max_buffered_bytes=cap, frame_timeout=600, idle_timeout=600)
    # Each sends all of a maximum-size frame but its last byte (the finding: 29 x 16 MiB - 1 -> +900 MiB RSS).
    sockets = [raw_socket(server) for _ in range(greedy)]
    try:
        def send_all_but_one(sock: socket.socket) -> None:
            with contextlib.suppress(OSError):
                sock.sendall(struct.pack("!i", frame_size) + b"\x00" * (frame_size - 1))

        senders = [in_thread(lambda sock=sock: send_all_but_one(sock))[0] for sock in sockets]  # type: ignore[misc]
        wait_until(lambda: not any(t.is_alive() for t in senders), DEADLINE, "every sender to finish or be cut off")
        wait_until(lambda: server.stats()["connections"] <= cap // frame_size, DEADLINE, "the greedy ones to be cut")
        stats = server.stats()
        assert 0 < stats["buffered_bytes"] <= cap, stats
        assert any("max-buffered-bytes" in r.getMessage() for r in caplog.records), caplog.text
        # The warning is rate-limited: one line for the whole burst.
        assert len([r for r in caplog.records if "max-buffered-bytes" in r.getMessage()]) == 1, caplog.text
        # Room is kept for an ordinary call once the greedy frames are cut.
        with connect(server) as client:
            assert client.ping() == "pong"
    finally:
        for sock in sockets:
            sock.close()


def test_at_the_connection_cap_the_longest_idle_connection_makes_room(serve: Start,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=SERVER_LOGGER)
    server = serve(max_connections=3, frame_timeout=600)
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(raw_socket(server)) for _ in range(3)]
        wait_until(lambda: server.stats()["connections"] == 3, DEADLINE, "three connections")
        for sock in clients[1:]:  # these were active last; the first has been idle the longest
            assert b"pong" in call_raw(sock, "ping")
        with connect(server) as newcomer:
            assert newcomer.ping() == "pong"
            assert closed_by_server(clients[0])
            for sock in clients[1:]:
                assert not closed_now(sock)
                assert b"pong" in call_raw(sock, "ping")
    assert not [r for r in caplog.records if "max-connections" in r.getMessage()], caplog.text


def call_raw(sock: socket.socket, name: str) -> bytes:
    """Send a call without arguments on a raw socket; the reply's payload."""
    sock.sendall(frame(message(name)))
    size = struct.unpack("!i", recv_exactly(sock, 4))[0]
    return recv_exactly(sock, size)


def test_at_the_connection_cap_with_none_idle_a_new_connection_is_closed_at_once(
        serve: Start, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=SERVER_LOGGER)
    server = serve(max_connections=2, frame_timeout=600)
    with contextlib.ExitStack() as stack:
        ping = message("ping")
        busy = [stack.enter_context(raw_socket(server)) for _ in range(2)]
        for sock in busy:
            sock.sendall(struct.pack("!i", len(ping)))  # a frame arriving: not idle
        wait_until(lambda: server.stats()["partial_frames"] == 2, DEADLINE, "two frames arriving")
        with raw_socket(server) as refused_one:
            assert closed_by_server(refused_one)
        assert any("max-connections" in r.getMessage() for r in caplog.records), caplog.text
        # The connections already open are untouched: one of them finishes its call ...
        busy[0].sendall(ping)
        size = struct.unpack("!i", recv_exactly(busy[0], 4))[0]
        assert b"pong" in recv_exactly(busy[0], size)
        # ... and, idle now, makes room for the next newcomer.
        with connect(server) as client:
            assert client.ping() == "pong"
        assert closed_by_server(busy[0])


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
