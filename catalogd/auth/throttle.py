"""Failed authentications slow the next ones: a growing back-off per client address and per principal.

Every surface that checks a secret (a token on the Thrift API and HTTP, a SASL exchange on the
HMS endpoint) asks ``wait`` before checking and reports ``failed`` or ``succeeded`` after. The
first ``free`` failures of a key cost nothing (a mistyped token); each further one locks the key
for ``base * 2**(n - free)`` seconds, at most ``max_delay``. While a key is locked its attempts
are refused *without checking the secret*, so a guesser gets at most one checked guess per
back-off period however fast it sends, and no server thread sleeps for it (a sleeping worker
would let a guesser hold every worker). A key without a failure for ``forget`` seconds starts
over; a success from an address clears that address. Keys are per address (the port is left
out: a new connection is no new chance) and per principal, so other addresses are not slowed.

The table is bounded (``max_keys``): past it, the keys whose last failure is oldest go first.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["THROTTLED", "Throttle", "address_of"]

#: The audit detail of an attempt refused while its key is locked: one text, so that the audit
#: log's coalescing makes one line of a burst.
THROTTLED = "too many failed authentications: attempt refused unchecked during the back-off"


def address_of(client: str) -> str:
    """``10.0.0.7`` of ``10.0.0.7:39000`` (``[::1]:5`` -> ``[::1]``); anything else as it is."""
    host, sep, port = client.rpartition(":")
    return host if sep and port.isdigit() else client


@dataclass
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

    def wait(self, address: str, principal: str | None = None) -> float:
        """Seconds until ``address`` (and ``principal``) may try again; 0: now. A positive answer
        counts as an attempt refused: the caller refuses it without checking its secret."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        with self._lock:
            left = max((self._left(key, now) for key in _keys(address, principal)), default=0.0)
            if left > 0:
                self.refused += 1
            return left

    def failed(self, address: str, principal: str | None = None) -> float:
        """Count a failed authentication; the back-off it starts (0: none yet)."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        delay = 0.0
        with self._lock:
            self.failures += 1
            for key in _keys(address, principal):
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
                    delay = max(delay, entry.until - now)
                self._entries[key] = entry  # the most recent failure last: the oldest go first
            while len(self._entries) > self.max_keys:
                self._entries.popitem(last=False)
        return delay

    def succeeded(self, address: str, principal: str | None = None) -> None:
        """A successful authentication clears its address and principal."""
        if not self.enabled:
            return
        with self._lock:
            for key in _keys(address, principal):
                self._entries.pop(key, None)

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


def _keys(address: str, principal: str | None) -> list[tuple[str, str]]:
    keys = [("address", address_of(address))]
    if principal:
        keys.append(("principal", principal))
    return keys
