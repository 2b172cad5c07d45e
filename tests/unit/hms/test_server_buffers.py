"""The HMS endpoint's bound on the bytes it holds (issue 21, item 1): counted as they arrive, over
all connections together, given back when a call is answered or a connection ends; the
largest partly received call is the one closed; nothing of a call stays with its connection."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator

import pytest
from polling import wait_until

from catalogd.hive_idl import ThriftHiveMetastore, ttypes
from catalogd.hms import limits
from catalogd.hms.server import ClientConnection, HmsServer
from catalogd.metastore.messages import CALL, REPLY, Message, MessageStream, encode

KiB = 1024
BOUND = 256 * KiB
#: Holds calls named "slow" until a test lets them finish.
_RELEASE = threading.Event()


def _answer(conn: ClientConnection, message: Message) -> bytes:
    if message.name == "slow":
        _RELEASE.wait(30)
    return encode(message.name, REPLY, message.seqid, ThriftHiveMetastore.get_all_databases_result(success=["ok"]))


@pytest.fixture
def server() -> Iterator[HmsServer]:
    _RELEASE.clear()
    srv = HmsServer(_answer, "127.0.0.1", 0, idle_timeout=30.0, frame_timeout=30.0, max_buffered_bytes=BOUND)
    srv.start()
    yield srv
    _RELEASE.set()
    srv.shutdown(2.0)


def _call_head(name: str, announced: int) -> bytes:
    """A call's header and a string field announcing ``announced`` bytes (none of them sent yet)."""
    encoded = name.encode()
    return (struct.pack("!Ii", 0x80010001, len(encoded)) + encoded + struct.pack("!i", 1)
            + b"\x0b\x00\x01" + struct.pack("!i", announced))


def _partial(port: int, send: int, name: str = "set_ugi") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(_call_head(name, 1 << 28) + b"x" * send)
    return sock


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def _buffered(server: HmsServer) -> int:
    return server.stats()["buffered"]


def test_partial_calls_are_counted_as_they_arrive_and_released_when_they_go(server: HmsServer) -> None:
    a = _partial(server.port, 50 * KiB)
    b = _partial(server.port, 30 * KiB)
    try:
        # Counted as arrived (header included), not as announced (256 MiB).
        wait_until(lambda: _buffered(server) >= 80 * KiB, 10, what="both partial calls counted")
        assert _buffered(server) < 81 * KiB
    finally:
        a.close()
    wait_until(lambda: 30 * KiB <= _buffered(server) < 31 * KiB, 10, what="a's bytes released")
    b.close()
    wait_until(lambda: _buffered(server) == 0, 10, what="every byte released")


def test_past_the_bound_the_largest_partial_call_is_closed(server: HmsServer) -> None:
    small = _partial(server.port, 20 * KiB)
    large = _partial(server.port, 150 * KiB)
    wait_until(lambda: _buffered(server) >= 170 * KiB, 10, what="both counted")
    newcomer = _partial(server.port, 10 * KiB)
    try:
        newcomer.sendall(b"x" * 80 * KiB)  # 90 KiB more would pass 256 KiB: the 150 KiB call goes
        assert _closed(large)
        wait_until(lambda: _buffered(server) >= 110 * KiB, 10, what="the newcomer's bytes counted")
        assert _buffered(server) <= BOUND
        # The smaller ones stay open.
        for sock in (small, newcomer):
            sock.settimeout(0.2)
            with pytest.raises(TimeoutError):
                sock.recv(1)
    finally:
        for sock in (small, large, newcomer):
            sock.close()
    wait_until(lambda: _buffered(server) == 0, 10, what="every byte released")


def test_a_call_larger_than_the_bound_is_refused_alone(server: HmsServer) -> None:
    assert server.max_message == BOUND
    sock = _partial(server.port, 0)
    try:
        with contextlib.suppress(OSError):  # reset while still sending: closed already
            for _ in range(BOUND // (64 * KiB) + 2):
                sock.sendall(b"x" * 64 * KiB)
        assert _closed(sock)
    finally:
        sock.close()
    wait_until(lambda: _buffered(server) == 0, 10, what="its bytes released")


def test_a_running_call_stays_counted_until_it_is_answered(server: HmsServer) -> None:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        call = encode("slow", CALL, 1, ThriftHiveMetastore.set_ugi_args(user_name="u" * 100 * KiB, group_names=[]))
        sock.sendall(call)
        wait_until(lambda: server.stats()["busy"] == 1, 10, what="the call running")
        assert _buffered(server) == len(call)
        _RELEASE.set()
        assert sock.recv(65536)  # the reply
        wait_until(lambda: _buffered(server) == 0, 10, what="the answered call's bytes released")
    finally:
        sock.close()


def test_a_stream_keeps_only_the_bytes_past_its_message() -> None:
    first = encode("set_ugi", CALL, 1, ThriftHiveMetastore.set_ugi_args(user_name="u" * 300 * KiB, group_names=[]))
    second = encode("get_all_databases", CALL, 2, ThriftHiveMetastore.get_all_databases_args())
    data = first + second
    position = 0

    def recv(size: int) -> bytes:
        nonlocal position
        chunk = data[position:position + size]
        position += len(chunk)
        return chunk

    stream = MessageStream(recv, 10 ** 7)
    assert stream.read_message().raw == first
    assert len(stream.cstringio_buf.getbuffer()) == stream.buffered() == len(second)
    stream.close()
    assert len(stream.cstringio_buf.getbuffer()) == 0


# ---------------------------------------------------------------- field limits

def test_set_ugi_limits() -> None:
    assert limits.set_ugi_error(limits.MAX_SET_UGI_BYTES) is None
    error = limits.set_ugi_error(4 * 1024 * KiB)
    assert error is not None and "set_ugi of 4194304 bytes is over the limit" in str(error.message)
    assert limits.identity_error("u" * limits.MAX_USER_NAME) is None
    error = limits.identity_error("u" * 1000)
    assert error is not None and "user name of 1000 characters" in str(error.message)


def _view(text: str) -> ttypes.Table:
    return ttypes.Table(tableName="v", dbName="db", tableType="VIRTUAL_VIEW", viewOriginalText=text,
                        viewExpandedText=text)


def test_view_text_limit_on_creates_and_alters_only() -> None:
    create = ThriftHiveMetastore.create_table_args(tbl=_view("x" * 1001))
    error = limits.view_text_error("create_table", create, 1000)
    assert error is not None
    assert str(error.message) == ("catalogd: the original text of view db.v is 1001 bytes, over the limit of 1000 "
                                  "(server.hms-max-view-text); create_table refused")
    assert limits.view_text_error("create_table", create, 1001) is None
    # Bytes, not characters: 300 three-byte characters are 900 bytes.
    assert limits.view_text_error("create_table", ThriftHiveMetastore.create_table_args(tbl=_view("€" * 300)),
                                  899) is not None
    alter = ThriftHiveMetastore.alter_table_with_environment_context_args(dbname="db", tbl_name="v",
                                                                          new_tbl=_view("x" * 2000))
    assert limits.view_text_error("alter_table_with_environment_context", alter, 1000) is not None
    assert limits.view_text_error("get_table", create, 10) is None
