"""The SASL client transport's framing over a real socket pair, with a stand-in for GSSAPI.

The Kerberos exchange itself runs against a real KDC and a secure HMS in
tests/integration/test_kerberos_metastore.py; here the mechanism is replaced by one that
"wraps" by reversing bytes, so that a frame that skipped wrapping or unwrapping shows.
"""

from __future__ import annotations

import io
import socket
import struct
import threading
from typing import Any

import pytest
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.transport.TTransport import TTransportException

from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.metastore import sasl
from catalogd.metastore.messages import REPLY, MessageStream, encode


class _Reversing:
    """Negotiates like GSSAPI on the wire (START, OK ..., COMPLETE) and wraps by reversing."""

    def __init__(self, login: Any, service: str) -> None:
        self.qop = ""

    def negotiate(self, read: sasl.Read, write: sasl.Write) -> None:
        sasl.send_message(write, sasl.START, b"GSSAPI")
        sasl.send_message(write, sasl.OK, b"token")
        status, payload = sasl.read_message(read)
        if status != sasl.COMPLETE:
            raise sasl.SaslError(payload.decode())
        self.qop = "auth-conf"

    def wrap(self, data: bytes) -> bytes:
        return data[::-1]

    def unwrap(self, data: bytes) -> bytes:
        return data[::-1]


def _server(sock: socket.socket, databases: list[str], refuse: bool = False) -> None:
    """The metastore's side: the negotiation, then one wrapped call answered with ``databases``."""
    read = sock.recv
    assert sasl.read_message(read) == (sasl.START, b"GSSAPI")
    assert sasl.read_message(read) == (sasl.OK, b"token")
    if refuse:
        sasl.send_message(sock.sendall, sasl.BAD, b"no such principal")
        sock.close()
        return
    sasl.send_message(sock.sendall, sasl.COMPLETE)
    (length,) = struct.unpack("!i", sasl.read_exact(read, 4))
    call = sasl.read_exact(read, length)[::-1]
    message = MessageStream(io.BytesIO(call).read, 1 << 20).read_message()
    reply = encode(message.name, REPLY, message.seqid, ThriftHiveMetastore.get_all_databases_result(success=databases))
    # The reply in two frames: the transport must read on across them.
    for part in (reply[:7], reply[7:]):
        sock.sendall(struct.pack("!i", len(part)) + part[::-1])
    sock.close()


@pytest.fixture
def reversing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sasl, "_Gssapi", _Reversing)


def test_calls_travel_in_wrapped_frames(reversing: None) -> None:
    ours, theirs = socket.socketpair()
    databases = [f"db_{i:05d}" for i in range(5000)]  # a reply larger than one read
    server = threading.Thread(target=_server, args=(theirs, databases))
    server.start()
    transport = sasl.SaslClientTransport(ours, sasl.KerberosLogin("catalogd/h@R", "/nonexistent"), "hive/h@R")
    transport.open()
    try:
        assert ThriftHiveMetastore.Client(TBinaryProtocolAccelerated(transport)).get_all_databases() == databases
    finally:
        transport.close()
        server.join(10)


def test_a_refused_negotiation_is_a_transport_error_that_says_why(reversing: None) -> None:
    ours, theirs = socket.socketpair()
    server = threading.Thread(target=_server, args=(theirs, [], True))
    server.start()
    transport = sasl.SaslClientTransport(ours, sasl.KerberosLogin("catalogd/h@R", "/nonexistent"), "hive/h@R")
    with pytest.raises(TTransportException, match="no such principal"):
        transport.open()
    server.join(10)


def test_host_in_the_service_principal() -> None:
    assert sasl.service_principal("hive/_HOST@EXAMPLE.COM", "HMS1.example.com") == "hive/hms1.example.com@EXAMPLE.COM"
    assert sasl.service_principal("hive/hms2@EXAMPLE.COM", "hms1") == "hive/hms2@EXAMPLE.COM"
