"""Delegation tokens as the Hive Metastore issues them: Hadoop's token format, signed with a shared secret.

A kerberized client (a Spark driver) asks for a token with ``get_delegation_token``; whoever holds
the token's string (its executors, a job in the cluster) authenticates with SASL DIGEST-MD5,
the token's identifier as user name and its password as password, without a Kerberos ticket.

The format is Hadoop's ``Token<DelegationTokenIdentifier>`` (kind ``HIVE_DELEGATION_TOKEN``) in
its URL-safe base64 string, so Hive's and Spark's clients take it as they take a metastore's:
the identifier is ``AbstractDelegationTokenIdentifier``'s Writable (version, owner, renewer,
real user, issue and max dates, sequence number, master key id) and the password is
HMAC-SHA1 of the identifier with the secret key, as Hadoop's ``SecretManager`` computes it.
Daemons sharing the secret (replicas) verify each other's tokens.

A token lives until ``renew_interval`` after it was issued or last renewed, and never past its
max date (``max_lifetime`` after issue). Renewals and cancellations are kept by the daemon that
made them: a token cancelled on one replica is refused there at once, and on the others when
its renewal interval runs out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from catalogd.errors import PermissionDeniedError

__all__ = ["KIND", "DelegationTokens", "TokenIdentifier", "decode_token", "encode_token"]

KIND = "HIVE_DELEGATION_TOKEN"
#: Cancelled or renewed tokens remembered at once (the oldest are forgotten first; a forgotten
#: cancelled token is refused anyway once its renewal interval is over).
MAX_REMEMBERED = 100_000


# ---------------------------------------------------------------- Hadoop's Writable encoding

def _vlong(value: int) -> bytes:
    """``WritableUtils.writeVLong``."""
    if -112 <= value <= 127:
        return bytes([value & 0xFF])
    length = -112
    if value < 0:
        value ^= -1
        length = -120
    tmp = value
    while tmp != 0:
        tmp >>= 8
        length -= 1
    out = bytearray([length & 0xFF])
    size = -(length + 120) if length < -120 else -(length + 112)
    for index in range(size, 0, -1):
        out.append((value >> ((index - 1) * 8)) & 0xFF)
    return bytes(out)


def _read_vlong(data: bytes, pos: int) -> tuple[int, int]:
    first = data[pos] - 256 if data[pos] > 127 else data[pos]
    pos += 1
    if first >= -112:
        return first, pos
    negative = first < -120
    size = -(first + 120) if negative else -(first + 112)
    if pos + size > len(data):
        raise ValueError("truncated")
    value = 0
    for byte in data[pos:pos + size]:
        value = (value << 8) | byte
    return (value ^ -1) if negative else value, pos + size


def _text(value: str) -> bytes:
    raw = value.encode()
    return _vlong(len(raw)) + raw


def _read_bytes(data: bytes, pos: int) -> tuple[bytes, int]:
    size, pos = _read_vlong(data, pos)
    if size < 0 or pos + size > len(data):
        raise ValueError("truncated")
    return data[pos:pos + size], pos + size


@dataclass(frozen=True)
class TokenIdentifier:
    """``AbstractDelegationTokenIdentifier``: who the token is for, who may renew it, its dates (ms)."""

    owner: str
    renewer: str
    real_user: str
    issue_date: int
    max_date: int
    sequence: int
    master_key_id: int = 1

    def encode(self) -> bytes:
        return (b"\x00" + _text(self.owner) + _text(self.renewer) + _text(self.real_user)
                + _vlong(self.issue_date) + _vlong(self.max_date) + _vlong(self.sequence)
                + _vlong(self.master_key_id))

    @classmethod
    def decode(cls, data: bytes) -> TokenIdentifier:
        if not data or data[0] != 0:
            raise ValueError("not a version 0 delegation token identifier")
        pos = 1
        texts = []
        for _ in range(3):
            raw, pos = _read_bytes(data, pos)
            texts.append(raw.decode("utf-8", "replace"))
        numbers = []
        for _ in range(4):
            number, pos = _read_vlong(data, pos)
            numbers.append(number)
        if pos != len(data):
            raise ValueError("trailing bytes")
        return cls(texts[0], texts[1], texts[2], *numbers)


def encode_token(identifier: bytes, password: bytes, service: str = "") -> str:
    """``Token.encodeToUrlString``: the Writable token in URL-safe base64 without padding."""
    raw = _vlong(len(identifier)) + identifier + _vlong(len(password)) + password + _text(KIND) + _text(service)
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(text: str) -> tuple[bytes, bytes, str]:
    """(identifier, password, kind) of a token string (``Token.decodeFromUrlString``)."""
    try:
        padded = text.strip() + "=" * (-len(text.strip()) % 4)
        raw = base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
        identifier, pos = _read_bytes(raw, 0)
        password, pos = _read_bytes(raw, pos)
        kind, pos = _read_bytes(raw, pos)
        return identifier, password, kind.decode("utf-8", "replace")
    except (ValueError, IndexError) as e:
        raise PermissionDeniedError(f"not a delegation token: {e}") from None


# ---------------------------------------------------------------- the secret manager

class DelegationTokens:
    """Issues, renews, cancels and checks delegation tokens (thread-safe).

    Args:
        secret: the key that signs tokens; daemons that share it accept each other's tokens.
        renew_interval: seconds a token lives after its issue or last renewal.
        max_lifetime: seconds after issue past which no renewal helps.
        clock: wall-clock seconds (tokens carry dates).
    """

    def __init__(self, secret: bytes, renew_interval: float = 86400.0, max_lifetime: float = 7 * 86400.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self.renew_interval = renew_interval
        self.max_lifetime = max_lifetime
        self._clock = clock
        self._lock = threading.Lock()
        #: sequence -> expiry (ms) of tokens renewed here; None: cancelled here.
        self._known: dict[int, int | None] = {}

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def password(self, identifier: bytes) -> bytes:
        return hmac.new(self._secret, identifier, hashlib.sha1).digest()

    def issue(self, owner: str, renewer: str, real_user: str = "") -> str:
        """A new token's string for ``owner`` (renewable by ``renewer``)."""
        now = self._now_ms()
        # Random sequence numbers: replicas issue tokens independently and must not collide.
        ident = TokenIdentifier(owner, renewer, real_user, now, now + int(self.max_lifetime * 1000),
                                secrets.randbelow(2**31 - 1) + 1)
        raw = ident.encode()
        return encode_token(raw, self.password(raw))

    def verify(self, identifier: bytes) -> tuple[TokenIdentifier, bytes]:
        """The identifier's fields and its password, when it is ours and alive.

        Raises:
            PermissionDeniedError: not a token we signed, expired or cancelled.
        """
        try:
            ident = TokenIdentifier.decode(identifier)
        except (ValueError, IndexError) as e:
            raise PermissionDeniedError(f"not a delegation token identifier: {e}") from None
        self._check_alive(ident)
        return ident, self.password(identifier)

    def check(self, token: str) -> TokenIdentifier:
        """The identifier of ``token`` when its password is ours and it is alive."""
        identifier, password, kind = decode_token(token)
        if kind != KIND:
            raise PermissionDeniedError(f"a {kind!r} token is not a {KIND}")
        ident, expected = self.verify(identifier)
        if not hmac.compare_digest(expected, password):
            raise PermissionDeniedError("the delegation token's password is wrong (signed with another secret)")
        return ident

    def _check_alive(self, ident: TokenIdentifier) -> None:
        now = self._now_ms()
        with self._lock:
            known = self._known.get(ident.sequence, 0)
        if known is None:
            raise PermissionDeniedError("the delegation token was cancelled")
        expiry = known or min(ident.issue_date + int(self.renew_interval * 1000), ident.max_date)
        if now >= expiry or now >= ident.max_date:
            raise PermissionDeniedError("the delegation token has expired")

    def renew(self, token: str, renewer: Callable[[str], bool]) -> int:
        """Extend ``token`` by the renewal interval (never past its max date); the new expiry (ms).

        ``renewer``: whether the caller is the token's renewer (given the renewer's name).
        """
        ident = self.check(token)
        if not ident.renewer or not renewer(ident.renewer):
            raise PermissionDeniedError(f"only the token's renewer ({ident.renewer or 'none named'}) may renew it")
        expiry = min(self._now_ms() + int(self.renew_interval * 1000), ident.max_date)
        self._remember(ident.sequence, expiry)
        return expiry

    def cancel(self, token: str, allowed: Callable[[TokenIdentifier], bool]) -> None:
        """Revoke ``token`` at once (``allowed``: whether the caller may: its owner or renewer)."""
        identifier, password, _ = decode_token(token)
        try:
            ident = TokenIdentifier.decode(identifier)
        except (ValueError, IndexError) as e:
            raise PermissionDeniedError(f"not a delegation token identifier: {e}") from None
        if not hmac.compare_digest(self.password(identifier), password):
            raise PermissionDeniedError("the delegation token's password is wrong (signed with another secret)")
        if not allowed(ident):
            raise PermissionDeniedError(f"only the token's owner ({ident.owner}) or renewer may cancel it")
        self._remember(ident.sequence, None)

    def _remember(self, sequence: int, expiry: int | None) -> None:
        with self._lock:
            self._known.pop(sequence, None)
            self._known[sequence] = expiry
            while len(self._known) > MAX_REMEMBERED:
                self._known.pop(next(iter(self._known)))
