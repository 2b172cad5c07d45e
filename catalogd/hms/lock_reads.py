"""Reads of objects locked through the endpoint skip the metadata cache.

A commit under a metastore lock (Iceberg's ``HiveCatalog``: lock, read the metadata pointer,
``alter_table``, unlock) is only safe if the read after the lock sees the last holder's write.
Through one daemon it does (a write invalidates the cache before it is answered); through two,
the last holder may have written through the other daemon, whose invalidation is still on its
way. So for a while after a lock on a table (or database) is asked for or granted through this
endpoint, reads of it go to the metastore: the lock's holder reads what the metastore has.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["LockedReads", "Scope"]

#: (catalog, database, table) as the cache keys them; table "" is the whole database.
Scope = tuple[str, str, str]


class LockedReads:
    """The scopes locked through this endpoint lately, and the scopes of locks still waiting.

    Args:
        window: seconds a lock's scopes stay uncached after it was asked for or granted (read
            per call: a reload may change it); a lock held longer is read through the cache again.
        clock: monotonic seconds (tests pass a fake one).
        limit: the most scopes (and the most waiting locks) remembered: the oldest go first.
    """

    def __init__(self, window: Callable[[], float], clock: Callable[[], float] = time.monotonic,
                 limit: int = 100_000) -> None:
        self._window = window
        self._clock = clock
        self._limit = limit
        self._mutex = threading.Lock()
        #: Scope -> when it was last locked; oldest first.
        self._locked: OrderedDict[Scope, float] = OrderedDict()
        #: Lock id -> its scopes, for locks that answered WAITING (granted later by check_lock).
        self._waiting: OrderedDict[int, list[Scope]] = OrderedDict()

    def asked(self, scopes: list[Scope], lockid: int | None = None, waiting: bool = False) -> None:
        """A lock on ``scopes`` was asked for (and answered ``lockid``, ``waiting`` or granted)."""
        with self._mutex:
            self._mark(scopes)
            if waiting and lockid is not None:
                self._waiting[lockid] = scopes
                self._waiting.move_to_end(lockid)
                while len(self._waiting) > self._limit:
                    self._waiting.popitem(last=False)

    def granted(self, lockid: int) -> None:
        """``check_lock`` answered ACQUIRED for ``lockid``."""
        with self._mutex:
            scopes = self._waiting.pop(lockid, None)
            if scopes:
                self._mark(scopes)

    def released(self, lockid: int) -> None:
        with self._mutex:
            self._waiting.pop(lockid, None)

    def guarded(self, scope: Scope) -> bool:
        """Whether reads of ``scope`` skip the cache now."""
        catalog, database, table = scope
        with self._mutex:
            self._expire()
            if (catalog, database, "") in self._locked:
                return True
            return bool(table) and scope in self._locked

    def _mark(self, scopes: list[Scope]) -> None:
        now = self._clock()
        for scope in scopes:
            self._locked[scope] = now
            self._locked.move_to_end(scope)
        while len(self._locked) > self._limit:
            self._locked.popitem(last=False)
        self._expire()

    def _expire(self) -> None:
        oldest = self._clock() - self._window()
        while self._locked:
            scope, when = next(iter(self._locked.items()))
            if when >= oldest:
                break
            del self._locked[scope]
