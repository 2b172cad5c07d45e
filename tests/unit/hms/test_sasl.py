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
