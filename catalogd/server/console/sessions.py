"""The console's browser sessions: a random id in an HTTP-only cookie, held in memory with its CSRF token.

A session keeps the token it was opened with (in this process's memory only, never in a page,
a cookie or a log) so that every request authenticates again: a token removed by a reload ends
its sessions at their next click. Sessions end after ``idle`` seconds without a request, at
logout, and at a restart; at most ``limit`` are kept (the least recently used goes first).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["COOKIE", "Session", "Sessions"]

#: The cookie's name (a ``__Host-`` prefix would demand ``Secure``, which plain HTTP cannot set).
COOKIE = "catalogd_console"


@dataclass
class Session:
    id: str
    #: The bearer token it logged in with; None with auth off.
    token: str | None
    #: The value every form of the session posts back (a forged request from another site cannot know it).
    csrf: str
    last_used: float

    def csrf_ok(self, sent: str | None) -> bool:
        return sent is not None and hmac.compare_digest(sent.encode(), self.csrf.encode())


class Sessions:
    """Open sessions by id; thread-safe."""

    def __init__(self, idle: float = 8 * 3600.0, limit: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.idle = idle
        self.limit = limit
        self._clock = clock
        self._lock = threading.Lock()
        self._open: OrderedDict[str, Session] = OrderedDict()

    def open(self, token: str | None) -> Session:
        session = Session(secrets.token_urlsafe(32), token, secrets.token_urlsafe(32), self._clock())
        with self._lock:
            self._open[session.id] = session
            while len(self._open) > self.limit:
                self._open.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session of ``session_id`` (its idle time restarts), or None."""
        if not session_id:
            return None
        now = self._clock()
        with self._lock:
            session = self._open.get(session_id)
            if session is None:
                return None
            if now - session.last_used > self.idle:
                del self._open[session_id]
                return None
            session.last_used = now
            self._open.move_to_end(session_id)
            return session

    def close(self, session_id: str | None) -> None:
        with self._lock:
            self._open.pop(session_id or "", None)
