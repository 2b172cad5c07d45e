"""Starting and stopping what keeps one table fresh: its schedule or streaming job
(activate), and all of it, batch runs included, when the table is let go."""

from __future__ import annotations

import datetime
import logging
import shutil
import time
from collections.abc import Callable

from catalogd.dynamic.executor import RunExecutor
from catalogd.dynamic.freshness import next_fire_time, previous_fire_time
from catalogd.dynamic.jobspec import JobFactory
from catalogd.dynamic.records import Records
from catalogd.dynamic.registry import Entry, Registry, Stream
from catalogd.dynamic.scheduler import Scheduler
from catalogd.dynamic.supervisor import Supervisor
from catalogd.model import RefreshMode, RefreshState

logger = logging.getLogger(__name__)

_INITIALIZE = "initialize"


def initialize_option(options: dict[str, str]) -> str:
    """The ``initialize`` option, normalised (``on_create`` when not given)."""
    return options.get(_INITIALIZE, "on_create").lower().replace("-", "_")


class Driver:
    """Activates entries and lets them go.

    Args:
        clock: the current time in the daemon's time zone.
    """

    def __init__(self, registry: Registry, records: Records, jobs: JobFactory, executor: RunExecutor,
                 scheduler: Scheduler, supervisor: Supervisor, clock: Callable[[], datetime.datetime]) -> None:
        self.registry = registry
        self.records = records
        self.jobs = jobs
        self.executor = executor
        self.scheduler = scheduler
        self.supervisor = supervisor
        self.clock = clock

    def activate(self, entry: Entry, initial: bool = False, catch_up: datetime.datetime | None = None) -> None:
        """Start the schedule or the streaming job; the handler goes RUNNING.

        Args:
            initial: run the initial refresh now (FULL).
            catch_up: run the refresh of this missed fire time now (FULL).
        """
        with entry.lock:
            entry.state = RefreshState.RUNNING
            if entry.mode is RefreshMode.FULL:
                now = self.clock()
                entry.next_fire = next_fire_time(entry.freshness, now)
                self.records.set_handler(entry)
                if initial:
                    schedule = previous_fire_time(entry.freshness, now) if entry.formatters else None
                    self.executor.submit([entry], trigger="initial", schedule_time=schedule)
                elif catch_up is not None:
                    self.executor.submit([entry], trigger="catch-up", schedule_time=catch_up)
            else:
                entry.stream = entry.stream or Stream()
                entry.stream.restart_at = 0.0
                self.records.set_handler(entry)
        self.scheduler.wake()

    def fire(self, entry: Entry, schedule_time: datetime.datetime) -> None:
        """The scheduler's refresh of ``entry`` at ``schedule_time``."""
        self.executor.submit([entry], trigger="schedule", schedule_time=schedule_time, fired=time.time())
        self.records.set_handler(entry)  # its nextRefresh moved on

    def let_go(self, entry: Entry, why: str) -> None:
        """Stop everything of an entry already out of the registry: its schedule, its
        streaming job (never restarted: the state is SUSPENDED in memory) and its batch runs."""
        with entry.lock:
            entry.state = RefreshState.SUSPENDED
            entry.next_fire = None
            detached = self.supervisor.detach(entry)
        self.supervisor.finish([detached], why)
        self.executor.stop_table(entry.full_name)

    def forget(self, catalog: str, database: str, name: str, only: Entry | None = None) -> Entry | None:
        """Stop driving a table (before it is dropped, by ``drop`` or ``table drop``): no
        schedule, no streaming job, and the batch runs going are stopped, so that none
        commits into a table of that name later.

        Args:
            only: forget the table only if it is still this entry (not a re-created table).

        Returns:
            The entry forgotten, if any.
        """
        entry = self.registry.remove(f"{catalog}.{database}.{name}", only)
        if entry is None:
            return None
        self.let_go(entry, "dropped")
        shutil.rmtree(self.jobs.table_dir(entry), ignore_errors=True)
        return entry
