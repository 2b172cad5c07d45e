"""The REST door's in-process HMS client: calls reach the handler as a socket client's would."""

from __future__ import annotations

from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hms.server import ClientConnection
from catalogd.iceberg.loopback import LoopbackClient, connection
from catalogd.metastore.messages import REPLY, Message, decode, encode


def test_a_call_goes_to_the_handler_with_the_caller_s_connection_and_its_reply_comes_back() -> None:
    seen: list[tuple[ClientConnection, str, object]] = []

    def handle(conn: ClientConnection, message: Message) -> bytes:
        args = decode(ThriftHiveMetastore.get_databases_args(), message.body)
        seen.append((conn, message.name, args.pattern))
        return encode(message.name, REPLY, message.seqid, ThriftHiveMetastore.get_databases_result(success=["a", "b"]))

    conn = connection("alice", "10.0.0.1:5")
    with LoopbackClient(handle, conn) as client:
        assert client.get_databases("@scratch#*") == ["a", "b"]
    assert [(c.identity, c.proven, c.surface, name, pattern) for c, name, pattern in seen] == [
        (("alice", ()), "token", "iceberg", "get_databases", "@scratch#*")]


def test_anonymous_has_no_identity() -> None:
    conn = connection(None, "x")
    assert conn.identity is None and conn.proven is None and conn.surface == "iceberg"
