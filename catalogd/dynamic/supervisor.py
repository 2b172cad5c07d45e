"""The supervisor of CONTINUOUS tables' streaming jobs: starts them, follows their status,
restarts a failed or hung one (``RestartPolicy``), stops them outside any entry lock."""

from __future__ import annotations

import contextlib
import logging
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalogd.config import Config
from catalogd.dynamic import runner as spark_runner
from catalogd.dynamic.jobspec import JobFactory, trigger_seconds
from catalogd.dynamic.records import Records
from catalogd.dynamic.redaction import shown_error
from catalogd.dynamic.registry import Entry, Registry, Stream
from catalogd.dynamic.runner import JobRunner, Process
from catalogd.dynamic.runs import RunIndex
from catalogd.errors import CatalogError, InvalidArgumentError, PermissionDeniedError, TableNotFoundError
from catalogd.manager import CatalogManager
from catalogd.model import RefreshMode, RefreshRun, RefreshState, RunStatus

logger = logging.getLogger(__name__)

#: Phases of a continuous job's status file while it refreshes (no status update meanwhile).
#: A streaming job's token: it runs until stopped, and its token is revoked then (or dies with the daemon).
_STREAM_TOKEN_TTL = 10 * 365 * 86400.0
REFRESH_PHASES = ("refreshing", "planning", "writing", "committing")


@dataclass(frozen=True)
class RestartPolicy:
    """When a streaming job is started again.

    Attributes:
        backoff: restart delays of a failing job, seconds (the last one repeats).
        healthy_after: a job that ran this long is healthy again: the backoff starts over.
        stale_after: a job that reports nothing for this long (or 10 triggers) is hung.
    """

    backoff: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 60.0)
    healthy_after: float = 60.0
    stale_after: float = 600.0

    def delay(self, failures: int) -> float:
        """How long to wait before the next start after ``failures`` failures in a row."""
        return self.backoff[min(failures, len(self.backoff) - 1)]

    def hung_after(self, trigger: float, phase: str | None, refresh_timeout: float) -> float:
        """How long a job may report nothing before it counts as hung."""
        limit = max(10 * trigger, self.stale_after)
        if phase in REFRESH_PHASES:
            # One refresh may take long: it gets what a batch run gets.
            limit = max(limit, refresh_timeout)
        return limit


@dataclass
class Detached:
    """A streaming job taken off its entry (under the lock), to be stopped outside it."""

    entry: Entry
    proc: Process
    run: RefreshRun | None
    #: The job's token, revoked once the job is stopped.
    token: str | None = None


class Supervisor:
    """Keeps each RUNNING CONTINUOUS table's streaming job alive; ``run`` is its thread's loop.

    Args:
        table_gone: called with an entry whose table was dropped outside catalogd.
        runner: launches and stops jobs (``catalogd.dynamic.runner``; a fake in tests).
        clock: epoch seconds.
    """

    def __init__(self, manager: CatalogManager, config: Config, registry: Registry, runs: RunIndex,
                 records: Records, jobs: JobFactory, stopping: threading.Event,
                 table_gone: Callable[[Entry], None], policy: RestartPolicy | None = None,
                 runner: JobRunner = spark_runner, clock: Callable[[], float] = time.time,
                 every: float = 0.5) -> None:
        self.manager = manager
        self.config = config
        self.registry = registry
        self.runs = runs
        self.records = records
        self.jobs = jobs
        self.policy = policy or RestartPolicy()
        self.runner = runner
        self.clock = clock
        self.every = every
        self.grace = config.server.shutdown_grace.total_seconds()
        self._stopping = stopping
        self._table_gone = table_gone
        #: Whether this daemon may start jobs now (in a cluster, only while it leads: the fence).
        self.leading: Callable[[], bool] = lambda: True

    def run(self) -> None:
        while not self._stopping.wait(self.every):
            self.tick()

    def tick(self) -> None:
        """One pass over every driven table."""
        if not self.leading():
            return
        for entry in self.registry.entries():
            try:
                self.supervise(entry)
            except TableNotFoundError:
                logger.warning("dynamic table %s was dropped outside catalogd: its job stops", entry.full_name)
                self._table_gone(entry)
            except CatalogError as e:
                logger.error("supervising %s: %s", entry.full_name, e)
            except Exception:
                logger.exception("supervising %s", entry.full_name)

    def supervise(self, entry: Entry) -> None:
        """Follow one table's job: note its progress, stop it when hung, start it when due."""
        hung: Process | None = None
        with entry.lock:
            if not self.registry.is_live(entry):
                return  # dropped or let go while this pass waited for the lock
            stream = entry.stream
            if entry.mode is not RefreshMode.CONTINUOUS or entry.state is not RefreshState.RUNNING or stream is None:
                return
            now = self.clock()
            if stream.proc is not None and stream.proc.poll() is None:
                if self._follow(entry, stream, now):
                    hung = stream.proc
            else:
                if stream.proc is not None:
                    self._ended(entry, stream, now)
                entry.retiring = [p for p in entry.retiring if p.poll() is None]
                if now >= stream.restart_at and not entry.retiring:
                    self._start(entry, stream, now)
        if hung is not None:
            # Outside the lock (a stop can take the whole grace); the next pass sees it ended
            # and restarts it.
            self.runner.stop(hung, self.grace)

    def _follow(self, entry: Entry, stream: Stream, now: float) -> bool:
        """Take in a running job's status; whether it is hung."""
        status: dict[str, Any] = self.runner.read_json(stream.work_dir / "status.json") if stream.work_dir else {}
        app = status.get("application_id")
        if app and app != stream.application_id:
            stream.application_id = app
            if stream.run is not None:
                stream.run.application_id = app
                self.records.record(entry, stream.run)
            self.records.set_handler(entry)
        if stream.run is not None:
            stream.run.phase = status.get("phase")
            stream.run.rows = status.get("last_rows", stream.run.rows)
            stream.run.input_files = status.get("last_input_files", stream.run.input_files)
            self._record_triggers(entry, stream, stream.run, status.get("triggers") or [])
            if status.get("fresh_as_of"):
                entry.data_time = max(entry.data_time or 0.0, float(status["fresh_as_of"]))
        if now - stream.started > self.policy.healthy_after:
            stream.failures = 0
        limit = self.policy.hung_after(trigger_seconds(entry.freshness), status.get("phase"),
                                       self.config.dynamic_tables.refresh_timeout.total_seconds())
        if now - float(status.get("updated") or stream.started) > limit:
            # Alive but no trigger for that long: hung (a lost executor, a stuck listing).
            logger.warning("continuous job of %s made no progress for %.0fs: restarting it",
                           entry.full_name, limit)
            return True
        return False

    def _record_triggers(self, entry: Entry, stream: Stream, run: RefreshRun, triggers: list[dict[str, Any]]) -> None:
        """Record an incremental job's committed triggers as runs of their own (``append`` or
        ``recompute``): rows written and files read by each."""
        for trigger in triggers:
            batch = int(trigger.get("batch", -1))
            if batch <= stream.recorded_batch:
                continue
            stream.recorded_batch = batch
            self.records.record(entry, RefreshRun(
                id=f"{run.id}-{batch}", table=entry.full_name, trigger=str(trigger.get("mode", "append")),
                status=RunStatus.SUCCEEDED, submitted=trigger.get("started"), started=trigger.get("started"),
                ended=trigger.get("ended"), rows=trigger.get("rows"), application_id=run.application_id,
                input_files=trigger.get("input_files")))

    def _ended(self, entry: Entry, stream: Stream, now: float) -> None:
        assert stream.proc is not None and stream.work_dir is not None
        result = self.runner.read_json(stream.work_dir / "result.json")
        # Shown without the data it quotes (``redaction``; the job's log keeps it).
        error = shown_error(result.get("error")) or (
            f"the streaming job exited with code {stream.proc.returncode}: "
            f"{shown_error(self.runner.log_tail(stream.work_dir), first_line=False)}")
        delay = self.policy.delay(stream.failures)
        stream.failures += 1
        stream.restart_at = now + delay
        stream.proc = None
        self.jobs.revoke_token(stream.token)
        stream.token = None
        logger.warning("continuous job of %s stopped (%s); restarting in %.0fs", entry.full_name, error, delay)
        if stream.run is not None:
            stream.run.status, stream.run.ended, stream.run.error = RunStatus.FAILED, now, error
            stream.run.phase = None
            self.runs.ended(stream.run.id)
            self.records.record(entry, stream.run)
            stream.run = None

    def _start(self, entry: Entry, stream: Stream, now: float) -> None:
        # If the start itself fails, the next try waits as a restart after a failure would.
        stream.restart_at = now + self.policy.delay(stream.failures)
        stream.failures += 1
        work_dir = self.jobs.table_dir(entry) / "job"
        shutil.rmtree(work_dir, ignore_errors=True)
        try:
            spec = self.jobs.spec(entry, work_dir, "continuous")
        except (PermissionDeniedError, InvalidArgumentError) as e:
            # A definition that may not run (unsigned, or it breaks a rule): said in its history, as
            # a batch run's refusal is; tried again after the back-off (a missing source may return).
            self.records.record(entry, RefreshRun(id=secrets.token_hex(8), table=entry.full_name, trigger="continuous",
                                                  status=RunStatus.FAILED, submitted=now, ended=now, error=e.message))
            raise
        run = RefreshRun(id=secrets.token_hex(8), table=entry.full_name, trigger="continuous",
                         status=RunStatus.RUNNING, submitted=now, started=now, phase="starting")
        # A streaming job runs until it is stopped: its token lives as long, and is revoked when it ends.
        token = self.jobs.mint_token(entry, _STREAM_TOKEN_TTL)
        try:
            stream.proc = self.runner.launch(self.config.spark.master, self.jobs.run_conf(entry), spec, work_dir,
                                             env={**self.jobs.job_env(token), **self.jobs.catalog_env(entry)})
        except BaseException:
            self.jobs.revoke_token(token)
            raise
        stream.token = token
        stream.work_dir, stream.started, stream.run, stream.application_id = work_dir, now, run, None
        stream.recorded_batch = -1
        stream.refresh_way = {"refresh": spec.get("refresh", "recompute"), "refreshWhy": spec.get("refresh_why", "")}
        stream.failures -= 1
        if stream.ever_started:
            stream.restarts += 1
        stream.ever_started = True
        self.runs.add(run)
        self.records.record(entry, run)
        self.records.set_handler(entry)
        logger.info("continuous job of %s started (pid %d, trigger %ss)", entry.full_name, stream.proc.pid,
                    spec["trigger_seconds"])

    # ------------------------------------------------------------ stopping

    def detach(self, entry: Entry) -> Detached | None:
        """Take the entry's job off it (the caller holds ``entry.lock``); stop it with ``finish``
        once the lock is released. Until then no new job of the table starts."""
        stream = entry.stream
        if stream is None or stream.proc is None:
            return None
        detached = Detached(entry, stream.proc, stream.run, stream.token)
        stream.token = None
        entry.retiring.append(stream.proc)
        stream.run = None
        stream.proc = None
        stream.application_id = None
        stream.restart_at = 0.0
        return detached

    def finish(self, detached: list[Detached | None], why: str) -> None:
        """Stop detached jobs (all within one grace) and record their runs as stopped."""
        going = [d for d in detached if d is not None]
        self.runner.stop_all([d.proc for d in going], self.grace)
        for d in going:
            self.jobs.revoke_token(d.token)
            with d.entry.lock:
                if d.proc in d.entry.retiring:
                    d.entry.retiring.remove(d.proc)
            run = d.run
            if run is not None:
                run.status, run.ended, run.phase = RunStatus.SUCCEEDED, self.clock(), None
                run.error = f"stopped: {why}"
                self.runs.ended(run.id)
                with contextlib.suppress(CatalogError):
                    self.records.record(d.entry, run)
