"""The HMS port bound early: a call made while the daemon starts is answered once it serves."""

from __future__ import annotations

import socket
import threading

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hms.listener import listen, listen_early
from catalogd.hms.server import ClientConnection, HmsServer
from catalogd.metastore.messages import REPLY, Message, encode


def _answer(conn: ClientConnection, message: Message) -> bytes:
    return encode(message.name, REPLY, message.seqid, ThriftHiveMetastore.get_all_databases_result(success=["up"]))


def test_a_call_made_before_the_server_starts_is_answered_once_it_does() -> None:
    listener = listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    sock = TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(30_000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()  # the kernel takes it: nothing accepts yet
    answers: list[list[str]] = []
    caller = threading.Thread(target=lambda: answers.append(
        ThriftHiveMetastore.Client(TBinaryProtocol(transport)).get_all_databases()))
    caller.start()
    caller.join(0.5)
    assert caller.is_alive() and not answers, "held while the daemon starts"
    server = HmsServer(_answer, "127.0.0.1", port)
    server.bind(listener)
    server.start()
    try:
        caller.join(30)
        assert answers == [["up"]]
        assert server.port == port
    finally:
        transport.close()
        server.shutdown(2.0)


def test_port_0_or_a_port_in_use_is_left_to_the_start() -> None:
    assert listen_early("127.0.0.1", 0) is None
    with socket.create_server(("127.0.0.1", 0)) as taken:
        assert listen_early("127.0.0.1", taken.getsockname()[1]) is None
