"""Failed authentications slow the next ones: a growing back-off per source address and claimed credential.

Every surface that checks a secret (a token on the Thrift API, HTTP and the console, a SASL
exchange or a client certificate on the HMS endpoint) asks ``wait`` before checking and reports
``failed`` or ``succeeded`` after, each with the client's address and what the attempt claimed:
``claim_of_token`` of the token presented, ``claim_of_name`` of a certificate subject or a user
name, or None when nothing could be read (a SASL exchange that never named anyone). The first
``free`` failures of a key cost nothing (a mistyped token); each further one locks the key for
``base * 2**(n - free)`` seconds, at most ``max_delay``. While a key is locked its attempts are
refused *without checking the secret*, so one credential tried again and again from one source
gets at most one checked try per back-off period however fast it is sent, and no server thread
sleeps for it (a sleeping worker would let a guesser hold every worker). A key without a failure
for ``forget`` seconds starts over; a success clears its own key.

A key is (address, claim), never the address alone: a flood of wrong tokens from 127.0.0.1 (a
shared host, every job of this daemon runs there) must not refuse a different, correct token
from the same address (a refresh job's, an admin's). A correct token's key has no failures, so it
is checked, cheaply, whatever others fail. What this does not slow is a guesser who sends a new
token each time: each guess is checked; against that stand the tokens' length (at least 16
characters configured, 256 random bits minted) and the audit log, not a lock-out that a guesser
could turn against everyone sharing its address. The port is left out of the address (a new
connection is no new chance). A claim is a keyed hash (a key made at start, never stored): the
table holds no token, and a copy of it could not be used to test guesses offline.

The table is bounded (``max_keys``): past it, the keys whose last failure is oldest go first, so
a flood of distinct wrong tokens costs at most ``max_keys`` small entries.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["THROTTLED", "Throttle", "address_of", "claim_of_name", "claim_of_token"]

#: The audit detail of an attempt refused while its key is locked: one text, so that the audit
#: log's coalescing makes one line of a burst.
THROTTLED = "too many failed authentications: attempt refused unchecked during the back-off"


#: The key of the claims' hashes: made at start, never written anywhere.
_CLAIM_KEY = secrets.token_bytes(32)


def claim_of_token(token: str) -> str:
    """What a presented token claims, as a throttle key: a keyed hash of it (never the token)."""
    return "token:" + hmac.new(_CLAIM_KEY, token.encode(), hashlib.sha256).hexdigest()[:32]


def claim_of_name(kind: str, name: str) -> str:
    """What a certificate subject or a user name claims (``kind``: certificate, kerberos, user)."""
    return f"{kind}:{name}"


def address_of(client: str) -> str:
    """``10.0.0.7`` of ``10.0.0.7:39000`` (``[::1]:5`` -> ``[::1]``); anything else as it is."""
    host, sep, port = client.rpartition(":")
    return host if sep and port.isdigit() else client


@dataclass(slots=True)
class _Entry:
    failures: int = 0
    until: float = 0.0
    last: float = 0.0


class Throttle:
    """The back-off of failed authentications (thread-safe; see the module docstring).

    Args:
        free: failures of one key that cost nothing.
        base: the first back-off, in seconds; each further failure doubles it.
        max_delay: the longest back-off.
        forget: seconds without a failure after which a key starts over.
        max_keys: keys remembered at once.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, free: int = 5, base: float = 1.0, max_delay: float = 60.0, forget: float = 600.0,
                 max_keys: int = 100_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.free = free
        self.base = base
        self.max_delay = max_delay
        self.forget = forget
        self.max_keys = max_keys
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        #: Counts for the metrics: failures reported, attempts refused unchecked, back-offs begun.
        self.failures = 0
        self.refused = 0
        self.lockouts = 0

    @property
    def enabled(self) -> bool:
        return self.base > 0 and self.max_delay > 0

    def wait(self, address: str, claim: str | None = None) -> float:
        """Seconds until ``claim`` from ``address`` may be tried again; 0: now. A positive answer
        counts as an attempt refused: the caller refuses it without checking its secret."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        with self._lock:
            left = self._left(_key(address, claim), now)
            if left > 0:
                self.refused += 1
            return left

    def failed(self, address: str, claim: str | None = None) -> float:
        """Count a failed authentication of ``claim`` from ``address``; the back-off it starts (0: none yet)."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        key = _key(address, claim)
        delay = 0.0
        with self._lock:
            self.failures += 1
            entry = self._entries.pop(key, None)
            if entry is None or now - entry.last >= self.forget:
                entry = _Entry()
            entry.failures += 1
            entry.last = now
            if entry.failures > self.free:
                step = min(entry.failures - self.free - 1, 62)
                entry.until = now + min(self.base * 2.0 ** step, self.max_delay)
                if step == 0:
                    self.lockouts += 1
                delay = entry.until - now
            self._entries[key] = entry  # the most recent failure last: the oldest go first
            while len(self._entries) > self.max_keys:
                self._entries.popitem(last=False)
        return delay

    def succeeded(self, address: str, claim: str | None = None) -> None:
        """A successful authentication clears its own key (others' failures stay theirs)."""
        if not self.enabled:
            return
        with self._lock:
            self._entries.pop(_key(address, claim), None)

    def stats(self) -> dict[str, int]:
        now = self._clock()
        with self._lock:
            locked = sum(1 for entry in self._entries.values() if entry.until > now)
            return {"failures": self.failures, "refused": self.refused, "lockouts": self.lockouts,
                    "locked": locked}

    def _left(self, key: tuple[str, str], now: float) -> float:
        entry = self._entries.get(key)
        if entry is None:
            return 0.0
        return max(entry.until - now, 0.0)


def _key(address: str, claim: str | None) -> tuple[str, str]:
    return address_of(address), claim or ""
