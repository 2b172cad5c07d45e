"""Delegation tokens: Hadoop's Writable format, HMAC-SHA1 passwords, expiry, renewal and revocation."""

from __future__ import annotations

import base64

import pytest

from catalogd.auth.delegation import (
    KIND,
    DelegationTokens,
    TokenIdentifier,
    _read_vlong,
    _vlong,
    decode_token,
    encode_token,
)
from catalogd.errors import PermissionDeniedError

SECRET = b"0123456789abcdef0123456789abcdef"


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("value", "encoded"), [
    (0, b"\x00"), (127, b"\x7f"), (-112, b"\x90"), (128, b"\x8f\x80"), (-113, b"\x87\x70"),
    (1_700_000_000_000, b"\x8a\x01\x8b\xcf\xe5\x68\x00"),
])
def test_writable_vlongs_as_hadoop_writes_them(value: int, encoded: bytes) -> None:
    assert _vlong(value) == encoded
    assert _read_vlong(encoded, 0) == (value, len(encoded))


def test_a_token_round_trips_and_is_checked() -> None:
    clock = Clock()
    tokens = DelegationTokens(SECRET, renew_interval=3600, max_lifetime=7200, clock=clock)
    token = tokens.issue("alice@EXAMPLE.COM", "alice")
    identifier, password, kind = decode_token(token)
    assert kind == KIND and "=" not in token
    ident = TokenIdentifier.decode(identifier)
    assert (ident.owner, ident.renewer, ident.issue_date, ident.max_date) == (
        "alice@EXAMPLE.COM", "alice", 1_700_000_000_000, 1_700_007_200_000)
    assert tokens.check(token) == ident
    # Another secret (a daemon that does not share it) does not accept it; a replica sharing it does.
    with pytest.raises(PermissionDeniedError, match="password is wrong"):
        DelegationTokens(b"another-secret-0123456789abcdef!", clock=clock).check(token)
    assert DelegationTokens(SECRET, clock=clock).check(token) == ident
    forged = encode_token(identifier, bytes([password[0] ^ 1]) + password[1:])
    with pytest.raises(PermissionDeniedError):
        tokens.check(forged)


def test_expiry_renewal_and_cancellation() -> None:
    clock = Clock()
    tokens = DelegationTokens(SECRET, renew_interval=3600, max_lifetime=7200, clock=clock)
    token = tokens.issue("alice@EXAMPLE.COM", "alice")
    clock.now += 3000
    with pytest.raises(PermissionDeniedError, match="renewer"):
        tokens.renew(token, lambda renewer: renewer == "bob")
    assert tokens.renew(token, lambda renewer: renewer == "alice") == int((clock.now + 3600) * 1000)
    clock.now += 3000  # past the first interval, within the renewed one
    tokens.check(token)
    assert tokens.renew(token, lambda renewer: True) == 1_700_007_200_000  # never past the max date
    clock.now += 1300
    with pytest.raises(PermissionDeniedError, match="expired"):
        tokens.check(token)
    fresh = tokens.issue("bob@EXAMPLE.COM", "bob")
    with pytest.raises(PermissionDeniedError, match="owner"):
        tokens.cancel(fresh, lambda ident: False)
    tokens.cancel(fresh, lambda ident: ident.owner.startswith("bob"))
    with pytest.raises(PermissionDeniedError, match="cancelled"):
        tokens.check(fresh)


def test_garbage_is_no_token() -> None:
    tokens = DelegationTokens(SECRET)
    for text in ("", "!!!", base64.urlsafe_b64encode(b"\x05abc").decode()):
        with pytest.raises(PermissionDeniedError):
            tokens.check(text)
    with pytest.raises(PermissionDeniedError):
        tokens.verify(b"\x01junk")
