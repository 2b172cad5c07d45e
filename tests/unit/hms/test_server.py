"""The HMS endpoint's wire layer on real sockets: whole messages kept as bytes, the server's
transports, deadlines and caps, and the relay pool's connections per identity."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest
from polling import wait_until
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from catalogd.hive_idl import ThriftHiveMetastore, ttypes
from catalogd.hms.server import ClientConnection, HmsServer
from catalogd.metastore.messages import CALL, REPLY, Message, MessageStream, ProtocolError, decode, encode
from catalogd.metastore.relay import RelayPool


def _partitions_reply(n: int) -> bytes:
    parts = [ttypes.Partition(values=[str(i)], dbName="db", tableName="t", parameters={"k": "v" * 20},
                              sd=ttypes.StorageDescriptor(location=f"file:/w/t/ds={i}",
                                                          cols=[ttypes.FieldSchema("c", "int", None)]))
             for i in range(n)]
    return encode("get_partitions", REPLY, 7, ThriftHiveMetastore.get_partitions_result(success=parts))


class _Chunks:
    """recv() over fixed bytes, ``size`` bytes at a time at most."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.pos = data, size, 0

    def __call__(self, wanted: int) -> bytes:
        chunk = self.data[self.pos:self.pos + min(wanted, self.size)]
        self.pos += len(chunk)
        return chunk


@pytest.mark.parametrize("chunk", [1, 7, 4096, 10 ** 7])
def test_a_message_comes_back_as_the_exact_bytes_and_the_next_one_follows(chunk):
    first = _partitions_reply(300)
    second = encode("get_all_databases", CALL, 8, ThriftHiveMetastore.get_all_databases_args())
    stream = MessageStream(_Chunks(first + second, chunk), max_size=10 ** 8)
    one = stream.read_message()
    assert (one.name, one.type, one.seqid, one.raw) == ("get_partitions", REPLY, 7, first)
    assert len(decode(ThriftHiveMetastore.get_partitions_result(), one.body).success) == 300
    two = stream.read_message()
    assert (two.name, two.seqid, two.raw) == ("get_all_databases", 8, second)
    with pytest.raises(EOFError):
        stream.read_message()


def test_bad_and_oversized_messages_are_protocol_errors():
    with pytest.raises(ProtocolError):
        MessageStream(_Chunks(b"GET / HTTP/1.1\r\n\r\n" * 4, 100), max_size=10 ** 6).read_message()
    big = _partitions_reply(2000)
    with pytest.raises(ProtocolError, match="larger than"):
        MessageStream(_Chunks(big, 65536), max_size=len(big) // 2).read_message()
    # A message cut short is the end of the stream, not a message.
    with pytest.raises(EOFError):
        MessageStream(_Chunks(big[:1000], 65536), max_size=10 ** 8).read_message()


# ---------------------------------------------------------------- server


#: Holds "slow" calls until a test lets them finish.
_RELEASE = threading.Event()


def _echo_databases(conn: ClientConnection, message: Message) -> bytes:
    """get_all_databases answered with the connection's identity, if any."""
    if message.name == "slow":
        _RELEASE.wait(30)
    user = conn.identity[0] if conn.identity else "nobody"
    return encode(message.name, REPLY, message.seqid,
                  ThriftHiveMetastore.get_all_databases_result(success=[user, "framed" if conn.framed else "buffered"]))


@pytest.fixture
def server() -> Iterator[HmsServer]:
    srv = HmsServer(_echo_databases, "127.0.0.1", 0, max_connections=3, idle_timeout=2.0, frame_timeout=1.0,
                    max_message=1024 * 1024)
    srv.start()
    yield srv
    srv.shutdown(2.0)


def _client(port: int, framed: bool = False) -> tuple[ThriftHiveMetastore.Client, TTransport.TTransportBase]:
    sock = TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(10000)
    transport = TTransport.TFramedTransport(sock) if framed else TTransport.TBufferedTransport(sock)
    transport.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol(transport)), transport


def _alive(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        return sock.recv(1) != b""
    except TimeoutError:
        return True
    except OSError:
        return False


def test_buffered_and_framed_clients_are_both_served(server):
    buffered, t1 = _client(server.port)
    framed, t2 = _client(server.port, framed=True)
    try:
        assert buffered.get_all_databases() == ["nobody", "buffered"]
        assert framed.get_all_databases() == ["nobody", "framed"]
        assert buffered.get_all_databases() == ["nobody", "buffered"]
    finally:
        t1.close()
        t2.close()


def test_noise_a_stalled_call_and_an_idle_connection_are_closed_and_the_server_serves_on(server):
    noise = socket.create_connection(("127.0.0.1", server.port))
    noise.sendall(b"\x16\x03\x01\x02\x00" + b"x" * 100)  # a TLS hello
    stalled = socket.create_connection(("127.0.0.1", server.port))
    whole = encode("get_all_databases", CALL, 1, ThriftHiveMetastore.get_all_databases_args())
    stalled.sendall(whole[:5])  # then nothing: the frame timeout (1 s) closes it
    idle = socket.create_connection(("127.0.0.1", server.port))  # the idle timeout (2 s) closes it
    try:
        wait_until(lambda: not _alive(noise), 10, "the noisy connection to be closed")
        wait_until(lambda: not _alive(stalled), 10, "the stalled connection to be closed")
        wait_until(lambda: not _alive(idle), 15, "the idle connection to be closed")
        client, transport = _client(server.port)
        assert client.get_all_databases() == ["nobody", "buffered"]
        transport.close()
    finally:
        for s in (noise, stalled, idle):
            s.close()


def test_an_oversized_frame_is_refused(server):
    sock = socket.create_connection(("127.0.0.1", server.port))
    try:
        sock.sendall(struct.pack("!i", 64 * 1024 * 1024))
        wait_until(lambda: not _alive(sock), 10, "the connection announcing 64 MiB to be closed")
    finally:
        sock.close()


def test_at_the_cap_the_longest_idle_connection_makes_room(server):
    clients = [_client(server.port) for _ in range(3)]
    try:
        for client, _ in clients:
            client.get_all_databases()
            # The reply goes out before the server marks the call done; wait for that, so
            # the connections' idle clocks start in the order the calls were made.
            wait_until(lambda: server.stats()["busy"] == 0, 10, "the call marked done")
        wait_until(lambda: server.stats()["open"] == 3, 10, "three connections open")
        newcomer, transport = _client(server.port)
        assert newcomer.get_all_databases() == ["nobody", "buffered"]
        transport.close()
        with pytest.raises((TTransport.TTransportException, OSError, EOFError)):
            clients[0][0].get_all_databases()  # the longest idle one was closed
    finally:
        for _, t in clients:
            t.close()


def test_at_the_cap_with_every_connection_busy_a_new_one_is_closed_at_once(server):
    busy = [_client(server.port) for _ in range(3)]
    _RELEASE.clear()
    threads = [threading.Thread(target=_call, args=(c, "slow")) for c, _ in busy]
    try:
        for t in threads:
            t.start()
        wait_until(lambda: server.stats()["busy"] == 3, 10, "three busy connections")
        late = socket.create_connection(("127.0.0.1", server.port))
        assert not _alive(late)
        assert server.stats()["refused"] >= 1
        late.close()
    finally:
        _RELEASE.set()
        for t in threads:
            t.join()
        for _, t in busy:
            t.close()


def _call(client: ThriftHiveMetastore.Client, name: str) -> None:
    client._oprot.writeMessageBegin(name, CALL, 1)
    ThriftHiveMetastore.get_all_databases_args().write(client._oprot)
    client._oprot.writeMessageEnd()
    client._oprot.trans.flush()
    client.recv_get_all_databases()


# ---------------------------------------------------------------- relay pool


class _Upstream:
    """A metastore stand-in on a real socket: remembers each connection's set_ugi user and
    answers get_all_databases with it (the relay's identity handling is what is tested)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        stream = MessageStream(sock.recv, 10 ** 6)
        user = None
        try:
            while True:
                message = stream.read_message()
                if message.name == "set_ugi":
                    args = decode(ThriftHiveMetastore.set_ugi_args(), message.body)
                    assert user is None, "set_ugi twice on one connection"
                    user = args.user_name
                    result = ThriftHiveMetastore.set_ugi_result(success=args.group_names)
                else:
                    result = ThriftHiveMetastore.get_all_databases_result(success=[user or "nobody"])
                sock.sendall(encode(message.name, REPLY, message.seqid, result))
        except (EOFError, OSError, ProtocolError):
            sock.close()


def test_the_relay_never_hands_one_identitys_connection_to_another():
    upstream = _Upstream()
    pool = RelayPool("test", lambda: [("127.0.0.1", upstream.port)], max_idle=8)
    request = encode("get_all_databases", CALL, 5, ThriftHiveMetastore.get_all_databases_args())

    def ask(identity):
        reply = pool.call(identity, request, retry=True)
        assert reply.seqid == 5
        return decode(ThriftHiveMetastore.get_all_databases_result(), reply.body).success

    try:
        for _ in range(3):
            assert ask(("alice", ("a",))) == ["alice"]
            assert ask(None) == ["nobody"]
            assert ask(("bob", ())) == ["bob"]
        # One connection per identity, reused.
        assert upstream.connections == 3
        assert pool.idle_count() == 3
    finally:
        pool.close()
        upstream.listener.close()
