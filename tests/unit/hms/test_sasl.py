"""The server side of Thrift's SASL negotiation: what is refused before any Kerberos is involved."""

from __future__ import annotations

import io
import struct

import pytest

from catalogd.hms.identity import certificate_subject
from catalogd.hms.sasl import BAD, MAX_NEGOTIATION, START, SaslError, negotiate


def _message(status: int, payload: bytes) -> bytes:
    return struct.pack(">BI", status, len(payload)) + payload


def _negotiate(data: bytes) -> tuple[str, bytes]:
    sent = io.BytesIO()
    with pytest.raises(SaslError) as raised:
        negotiate(io.BytesIO(data).read, sent.write, None)
    return str(raised.value), sent.getvalue()


def test_a_plain_thrift_client_is_told_to_use_sasl() -> None:
    message, sent = _negotiate(b"\x80\x01\x00\x01\x00\x00\x00\x07set_ugi")
    assert "did not start a SASL negotiation" in message
    assert sent == b""  # a plain client could not read a SASL answer


def test_an_unoffered_mechanism_is_answered_bad() -> None:
    message, sent = _negotiate(_message(START, b"PLAIN") + _message(2, b"\x00alice\x00secret"))
    assert message == "SASL mechanism 'PLAIN' is not offered (none is)"
    assert sent[0] == BAD and b"not offered" in sent


def test_a_huge_negotiation_message_is_refused_before_it_is_read() -> None:
    message, _ = _negotiate(struct.pack(">BI", START, MAX_NEGOTIATION + 1))
    assert "at most" in message


def test_a_client_that_goes_away_mid_negotiation() -> None:
    with pytest.raises(EOFError):
        negotiate(io.BytesIO(_message(START, b"GSSAPI")[:4]).read, io.BytesIO().write, None)


def test_certificate_subject() -> None:
    cert = {"subject": ((("commonName", "trino"),), (("organizationName", "Example"),))}
    assert certificate_subject(cert) == "CN=trino,O=Example"
    assert certificate_subject({}) == ""


def _digest_exchange(username: str, password: str, lookup_password: str) -> tuple[object, list[int]]:
    """pure-sasl's DIGEST-MD5 client (as Python HMS clients use it) against DigestAcceptor, in memory."""
    from puresasl.client import SASLClient

    from catalogd.hms.sasl import COMPLETE, OK, DigestAcceptor

    client = SASLClient("default", "", mechanism="DIGEST-MD5", username=username, password=password)
    # What the client sends, as the server reads it: its (empty) initial response, then each
    # answer to a challenge, appended as the server writes the challenge.
    to_server = io.BytesIO(_message(OK, client.process() or b""))
    statuses: list[int] = []

    def read(size: int) -> bytes:
        data = to_server.read(size)
        if not data:
            raise EOFError
        return data

    def write(data: bytes) -> None:
        statuses.append(data[0])
        if data[0] == OK:
            answer = client.process(data[5:])
            rest = to_server.read()
            to_server.seek(0)
            to_server.truncate()
            to_server.write(rest + _message(OK, answer or b""))
            to_server.seek(0)
        elif data[0] == COMPLETE:
            client.process(data[5:])  # checks rspauth

    acceptor = DigestAcceptor(lambda name: (lookup_password, "alice@EXAMPLE.COM") if name == username
                              else (_ for _ in ()).throw(SaslError("unknown")))
    session = acceptor.accept(read, write)
    return session, statuses


def test_digest_md5_with_a_token_s_password() -> None:
    session, statuses = _digest_exchange("aWRlbnRpZmllcg==", "cGFzc3dvcmQ=", "cGFzc3dvcmQ=")
    assert statuses == [2, 5]
    assert (session.name, session.mechanism, session.qop) == ("alice@EXAMPLE.COM", "DIGEST-MD5", "auth")


def test_digest_md5_with_a_wrong_password_is_refused() -> None:
    with pytest.raises(SaslError, match="does not match"):
        _digest_exchange("aWRlbnRpZmllcg==", "d3Jvbmc=", "cGFzc3dvcmQ=")
