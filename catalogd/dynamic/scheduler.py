"""The FULL scheduler: fires each RUNNING FULL table's refresh at its cron times."""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable

from catalogd.dynamic.freshness import next_fire_time
from catalogd.dynamic.registry import Entry, Registry
from catalogd.model import RefreshMode, RefreshState

logger = logging.getLogger(__name__)

#: The longest the scheduler sleeps between passes, seconds (a new table wakes it sooner).
MAX_WAIT = 1.0


class Scheduler:
    """Fires due refreshes; ``run`` is its thread's loop, ``tick`` one pass.

    Args:
        registry: the driven tables.
        fire: starts one scheduled refresh (entry, schedule time); an error is logged.
        clock: the current time, time-zone aware (the daemon's ``time-zone``).
        stopping: set when the daemon stops; the loop ends.
    """

    def __init__(self, registry: Registry, fire: Callable[[Entry, datetime.datetime], None],
                 clock: Callable[[], datetime.datetime], stopping: threading.Event) -> None:
        self.registry = registry
        self.fire = fire
        self.clock = clock
        self._stopping = stopping
        self._wake = threading.Event()
        #: Whether this daemon may fire now (in a cluster, only while it leads: the fence).
        self.leading: Callable[[], bool] = lambda: True

    def wake(self) -> None:
        """Look at the tables again now (one was added, resumed or changed)."""
        self._wake.set()

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                wait = self.tick()
            except Exception:  # the scheduler must outlive any one bad table
                logger.exception("dynamic-table scheduler pass failed")
                wait = MAX_WAIT
            self._wake.wait(max(0.01, wait))
            self._wake.clear()

    def tick(self) -> float:
        """Fire the due refreshes (each table's next fire time moves on); how long to sleep."""
        if not self.leading():
            return MAX_WAIT
        now = self.clock()
        due: list[tuple[Entry, datetime.datetime]] = []
        wait = MAX_WAIT
        for entry in self.registry.entries():
            with entry.lock:
                fire = entry.next_fire
                if fire is None or entry.mode is not RefreshMode.FULL or entry.state is not RefreshState.RUNNING:
                    continue
                if fire <= now:
                    due.append((entry, fire))
                    entry.next_fire = next_fire_time(entry.freshness, now)
                else:
                    wait = min(wait, (fire - now).total_seconds())
        for entry, fire in due:
            try:
                self.fire(entry, fire)
            except Exception:
                logger.exception("scheduled refresh of %s at %s failed to start", entry.full_name, fire)
        return wait
