"""The batch runs waiting for a worker: one queue per table, bounded, taken round-robin across tables.

A plain FIFO let one table's 200 queued partition refreshes delay another table's refresh by
all of them (PENDING for over 90 s with two workers). Here each table waits in a line of its
own; a free worker takes the head of the next table's line in turn, so a refresh of another
table waits for at most one run of each table ahead of it, however many each has queued. A
table's requested runs are bounded (``per_table``): one more is refused with a typed error that
says when to try again, not queued without end. The runs the daemon fires itself (initial,
schedule, catch-up: at most one per fire time) are never refused.

Not ``queue.py``: a refresh job runs a script of this folder, which puts the folder first on its
``sys.path``, where a module ``queue`` would hide the standard library's.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Generic, TypeVar

from catalogd.errors import RefreshQueueFullError

__all__ = ["FairQueue"]

T = TypeVar("T")


class FairQueue(Generic[T]):
    """Items per table, taken round-robin across tables and in order within one (thread-safe).

    Args:
        per_table: items of one table that ``put(..., bounded=True)`` allows at once.
        retry_after: seconds a refused caller should wait, for a table (its runs' duration).
    """

    def __init__(self, per_table: int, retry_after: Callable[[str], float] = lambda table: 60.0) -> None:
        self.per_table = per_table
        self._retry_after = retry_after
        self._lock = threading.Lock()
        #: Tables in the order their turn comes; each one's items in the order they came.
        self._lines: OrderedDict[str, deque[T]] = OrderedDict()
        #: Requests refused because their table's line was full (for the metrics and the tests).
        self.refused = 0

    def room(self, table: str) -> bool:
        """Whether ``table`` may queue one more bounded item now."""
        with self._lock:
            return len(self._lines.get(table, ())) < self.per_table

    def check(self, table: str) -> None:
        """Raise RefreshQueueFullError when ``table``'s line is full (nothing is queued)."""
        with self._lock:
            full = len(self._lines.get(table, ())) >= self.per_table
            if full:
                self.refused += 1
        if full:
            retry = max(1.0, self._retry_after(table))
            raise RefreshQueueFullError(
                f"{table} has {self.per_table} refreshes waiting already "
                f"(dynamic-tables.max-queued-refreshes-per-table): retry in about {retry:.0f}s", retry)

    def put(self, table: str, item: T) -> None:
        """Queue ``item`` behind ``table``'s others (``check`` first for a bounded request)."""
        with self._lock:
            line = self._lines.get(table)
            if line is None:
                line = self._lines[table] = deque()  # a new table's turn comes after the others'
            line.append(item)

    def take(self) -> T | None:
        """The next item: the head of the line whose turn it is (that table goes to the back); None: empty."""
        with self._lock:
            if not self._lines:
                return None
            table, line = next(iter(self._lines.items()))
            item = line.popleft()
            if line:
                self._lines.move_to_end(table)
            else:
                del self._lines[table]
            return item

    def remove(self, table: str) -> list[T]:
        """Take every item of ``table`` out of the queue (they never run)."""
        with self._lock:
            return list(self._lines.pop(table, ()))

    def waiting(self, table: str | None = None) -> int:
        """Items waiting: of ``table``, or of every table."""
        with self._lock:
            if table is not None:
                return len(self._lines.get(table, ()))
            return sum(len(line) for line in self._lines.values())

    def drain(self) -> list[T]:
        """Take every item out (the daemon stops)."""
        with self._lock:
            items = [item for line in self._lines.values() for item in line]
            self._lines.clear()
            return items
