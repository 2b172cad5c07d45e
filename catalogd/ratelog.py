"""Log lines a client can cause, at a bounded rate: the first at once, then at most one per interval with a count.

A refusal (an unsigned peer message, a failed TLS handshake, a malformed HMS message) is worth a
line to an operator, but a client that sends a thousand a second must not be able to write a
thousand lines a second into the daemon's log (5 MB in 10 s was measured). ``BoundedLog`` logs
the first event of its kind at once; the events within ``interval`` after a line are counted,
not logged, and the next line that is logged says how many there were. Every event is counted
(``events``, ``suppressed``), and ``counts()`` gives each kind's totals to ``/metrics``, so the
exact numbers are there even for the events of the last interval that no line has told yet.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable

__all__ = ["BoundedLog", "counts"]

#: Every BoundedLog made, for ``counts`` (weak: a server's logs go with it).
_ALL: weakref.WeakSet[BoundedLog] = weakref.WeakSet()
_ALL_LOCK = threading.Lock()


class BoundedLog:
    """One kind of line, logged at most once per ``interval`` seconds (thread-safe).

    Args:
        logger: where the lines go.
        kind: the kind's name in ``/metrics`` (``catalogd_log_lines_suppressed_total{kind=...}``).
        level: the lines' level.
        interval: seconds after a line during which the same kind is only counted.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, logger: logging.Logger, kind: str, level: int = logging.WARNING, interval: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.kind = kind
        self.level = level
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._next = float("-inf")
        self._last = 0.0
        self._pending = 0
        #: Events reported, and those not written as a line of their own.
        self.events = 0
        self.suppressed = 0
        with _ALL_LOCK:
            _ALL.add(self)

    def log(self, message: str, *args: object) -> bool:
        """Log ``message % args``, unless a line of this kind was written within the interval
        (then it is only counted); whether it was written."""
        now = self._clock()
        with self._lock:
            self.events += 1
            if now < self._next:
                self._pending += 1
                self.suppressed += 1
                return False
            pending, since = self._pending, now - self._last
            self._pending = 0
            self._next = now + self.interval
            self._last = now
        if pending:
            message += " (and %d more like it in the %.0fs before this line, not logged one by one)"
            args = (*args, pending, since)
        self.logger.log(self.level, message, *args)
        return True

    # The callers of the earlier per-module helpers called ``warning``.
    warning = log


def counts() -> dict[str, tuple[int, int]]:
    """(events, suppressed) of every kind, summed over the BoundedLogs of that kind."""
    with _ALL_LOCK:
        logs = list(_ALL)
    totals: dict[str, tuple[int, int]] = {}
    for log in logs:
        events, suppressed = totals.get(log.kind, (0, 0))
        totals[log.kind] = (events + log.events, suppressed + log.suppressed)
    return totals
