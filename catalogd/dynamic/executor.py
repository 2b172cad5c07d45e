"""Batch refresh runs: a bounded pool (``dynamic-tables.max-concurrent-refreshes``) runs
each as a ``spark-submit`` job (engine ``submit``) or in a session of the Spark Connect
server (engine ``connect``), watches it, and records how it ended.

A request joins the run already waiting or going for the same table and partition; a new run
waits in its table's line of a ``FairQueue`` (bounded per table, tables served in turn), and
the request returns at once: it holds no server thread and makes no metastore call while
its run waits."""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalogd.config import Config
from catalogd.dynamic import job as spark_job
from catalogd.dynamic import runner as spark_runner
from catalogd.dynamic import store
from catalogd.dynamic.connect import READY_TIMEOUT, ConnectEngine, configured_session
from catalogd.dynamic.jobspec import JobFactory
from catalogd.dynamic.partitions import partition_value
from catalogd.dynamic.records import Records
from catalogd.dynamic.redaction import shown_error
from catalogd.dynamic.refresh_queue import FairQueue
from catalogd.dynamic.registry import Entry, Registry
from catalogd.dynamic.runner import KILL_WAIT, JobRunner, Process
from catalogd.dynamic.runs import CUT_OFF, STOPPED, RunIndex, RunKey, run_key
from catalogd.errors import CatalogError, InvalidArgumentError, NotFoundError, TableNotFoundError
from catalogd.manager import CatalogManager
from catalogd.model import RefreshJob, RefreshRun, RunStatus

logger = logging.getLogger(__name__)

#: A run that did not start because this member lost the cluster's lead.
NOT_LEADING = "this member no longer leads the cluster"
#: How often a spark-submit run's status file is read (its phase, and whether its result is written).
JOB_POLL = 0.2
#: Work dirs (spec, status, log) of finished runs kept for a look after the fact.
_KEEP_RUN_DIRS = 50
#: The triggers of requested runs (REST, Thrift, CLI, console): bounded per table. The daemon's
#: own (initial, schedule, catch-up) come at most once per fire time and are never refused.
REQUESTED = ("manual", "api")
#: Seconds a refused request is told to wait when its table never ran.
_DEFAULT_RETRY = 60.0


@dataclass
class _Queued:
    """A run waiting for a worker, with what it runs with."""

    entry: Entry
    run: RefreshRun
    key: RunKey
    conf: dict[str, str]
    schedule_time: datetime.datetime | None


class RunExecutor:
    """Submits batch runs to a pool of ``max-concurrent-refreshes`` threads; more wait PENDING.

    Args:
        stopping: set when the daemon stops: runs going stop their jobs, runs not started fail.
        table_gone: called (on a thread of its own) with an entry whose table a run found
            dropped outside catalogd.
        runner: launches and stops jobs (``catalogd.dynamic.runner``; a fake in tests).
        clock: epoch seconds.
        engine: the Spark Connect servers runs use (``spark.engine: connect``); None: spark-submit.
    """

    def __init__(self, manager: CatalogManager, config: Config, registry: Registry, runs: RunIndex,
                 records: Records, jobs: JobFactory, stopping: threading.Event,
                 table_gone: Callable[[Entry], None], runner: JobRunner = spark_runner,
                 clock: Callable[[], float] = time.time, engine: ConnectEngine | None = None) -> None:
        self.manager = manager
        self.config = config
        self.registry = registry
        self.runs = runs
        self.records = records
        self.jobs = jobs
        self.runner = runner
        self.clock = clock
        self.engine = engine
        self._stopping = stopping
        self._table_gone = table_gone
        self._grace = config.server.shutdown_grace.total_seconds()
        self._pool = ThreadPoolExecutor(max_workers=config.dynamic_tables.max_concurrent_refreshes,
                                        thread_name_prefix="dt-run")
        self._lock = threading.Lock()
        #: The runs waiting for a worker: one line per table, served in turn.
        self._queue: FairQueue[_Queued] = FairQueue(config.dynamic_tables.max_queued_refreshes_per_table,
                                                    self._retry_after)
        #: The pool's tasks not done (one per run queued; each takes the run whose turn it is).
        self._tasks: set[Future[None]] = set()
        #: Each run taken from the queue until it ends (set then), and each running batch job's process.
        self._going: dict[str, threading.Event] = {}
        self._procs: dict[str, Process] = {}
        #: Processes of runs that ended (their result written) and are still exiting.
        self._exiting: dict[str, Process] = {}
        #: Whether this daemon may start runs now (in a cluster, only while it leads: the fence).
        self.leading: Callable[[], bool] = lambda: True

    # ------------------------------------------------------------ submit

    def submit(self, entries: list[Entry], trigger: str, schedule_time: datetime.datetime | None = None,
               partition: dict[str, str] | None = None, conf: dict[str, str] | None = None,
               fired: float | None = None) -> RefreshJob:
        """One run per table (joining a run already waiting or going for the same partition); the job.

        A request whose every table joined one run answers that run's job (same jobId). New
        runs wait in their tables' lines; this returns without waiting for them.

        Raises:
            InvalidArgumentError: a partition the table does not have; nothing started.
            RefreshQueueFullError: a requested run (``REQUESTED``) of a table whose line is full;
                nothing started.
        """
        plans = [(entry, self._partition_for(entry, schedule_time, partition)) for entry in entries]
        submitter = self.engine.describe() if self.engine is not None else str(self.runner.spark_submit_path())
        job = RefreshJob(id=secrets.token_hex(8), status=RunStatus.PENDING,
                         cluster_info={"master": self.config.spark.master, "deployMode": "client",
                                       "submitter": submitter})
        queued: list[_Queued] = []
        with self._lock:
            if trigger in REQUESTED:
                # Every table's line first: a request is queued whole or not at all.
                for entry, spec in plans:
                    if self.runs.going(run_key(entry.full_name, spec)) is None:
                        self._queue.check(entry.full_name)
            for entry, spec in plans:
                key = run_key(entry.full_name, spec)
                new = RefreshRun(id=secrets.token_hex(8), table=entry.full_name, trigger=trigger,
                                 status=RunStatus.PENDING, partition=spec, submitted=self.clock(), fired=fired,
                                 schedule_time=schedule_time.isoformat(sep=" ") if schedule_time else None)
                run = self.runs.start(key, new)
                job.runs.append(run)
                if run is new:
                    queued.append(_Queued(entry, run, key, dict(conf or {}), schedule_time))
            for item in queued:
                self._queue.put(item.entry.full_name, item)
                try:
                    task = self._pool.submit(self._next)
                except RuntimeError:  # the pool is shut down: the daemon is stopping
                    for left in self._queue.drain():
                        self._cut_off(left.run, left.key, f"{CUT_OFF} before the run started")
                    break
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)  # at once if it is done already
        if not queued and len(job.runs) == 1:
            origin = self.runs.job_of(job.runs[0].id)
            if origin is not None:
                with contextlib.suppress(NotFoundError):
                    found = self.runs.get_job(origin)
                    if len(found.runs) == 1:  # the joined run's own job: one jobId for all
                        return found
        self.runs.add_job(job)
        return self.runs.get_job(job.id)

    def _retry_after(self, table: str) -> float:
        """When a refused request may find room: about one run of its table (the last one's time)."""
        entry = self.registry.get(table)
        last = entry.last_duration if entry is not None else 0.0
        return min(max(last, 1.0), 3600.0) if last > 0 else _DEFAULT_RETRY

    def waiting(self) -> int:
        """Runs waiting for a worker, every table's."""
        return self._queue.waiting()

    def queue_stats(self) -> dict[str, int]:
        """For /metrics: runs waiting for a worker, and requests refused because their table's line was full."""
        return {"waiting": self._queue.waiting(), "refused": self._queue.refused}

    def _next(self) -> None:
        """A pool task: run the run whose turn it is (none: its table was let go meanwhile)."""
        with self._lock:
            item = self._queue.take()
            if item is None:
                return
            done = self._going[item.run.id] = threading.Event()
        try:
            self._run(item.entry, item.run, item.key, item.conf, item.schedule_time)
        finally:
            with self._lock:
                self._going.pop(item.run.id, None)
            done.set()

    def _partition_for(self, entry: Entry, schedule_time: datetime.datetime | None,
                       partition: dict[str, str] | None) -> dict[str, str]:
        if partition:
            keys = entry.partition_keys
            if keys is None:
                # Asked of the metastore once per entry (they cannot change): a request joining a
                # run, or queueing one, makes no metastore call that a burst could multiply.
                catalog = self.manager.catalog(entry.catalog).fresh()  # the partition a refresh overwrites
                keys = entry.partition_keys = [k.name for k in catalog.get_table(entry.database,
                                                                                 entry.name).partition_keys]
            spec = {k.lower(): v for k, v in partition.items()}
            unknown = [k for k in spec if k not in keys]
            if unknown:
                raise InvalidArgumentError(f"{entry.full_name} has no partition column(s) {unknown} "
                                           f"(partition columns: {keys})")
            return spec
        if schedule_time is not None and entry.formatters:
            return {col: partition_value(schedule_time, entry.freshness, pattern)
                    for col, pattern in entry.formatters.items()}
        return {}

    def _cut_off(self, run: RefreshRun, key: RunKey, error: str) -> None:
        """A run that never started: FAILED in memory (nothing of it is in HMS yet)."""
        run.status, run.error, run.ended, run.phase = RunStatus.FAILED, error, self.clock(), None
        self.runs.release(key, run.id)
        self.runs.ended(run.id)

    # ------------------------------------------------------------ one run

    def _run(self, entry: Entry, run: RefreshRun, key: RunKey, conf: dict[str, str],
             schedule_time: datetime.datetime | None) -> None:
        try:
            if self._stopping.is_set():
                raise CatalogError(f"{CUT_OFF} before the run started")
            if not self.registry.is_live(entry):
                raise CatalogError("the dynamic table was dropped before the run started")
            if not self.leading():
                raise CatalogError(f"{NOT_LEADING} before the run started")
            self._execute(entry, run, conf)
        except TableNotFoundError as e:
            run.status, run.error = RunStatus.FAILED, e.message
            if self.registry.is_live(entry):
                logger.warning("dynamic table %s was dropped outside catalogd: its schedule stops", entry.full_name)
                # Not on this thread: letting the table go waits for this run to end.
                threading.Thread(target=self._table_gone, args=(entry,), daemon=True).start()
        except CatalogError as e:
            run.status, run.error = RunStatus.FAILED, e.message
        except Exception as e:
            logger.exception("refresh run %s of %s failed", run.id, entry.full_name)
            run.status, run.error = RunStatus.FAILED, f"{type(e).__name__}: {e}"
        finally:
            self._finish(entry, run, key, schedule_time)
            self._await_exit(run.id)

    def _await_exit(self, run_id: str) -> None:
        """Wait for the process of a run that ended before it exited (its job stopping its
        SparkSession); stopped when it takes longer than the shutdown grace, or the daemon stops."""
        with self._lock:
            proc = self._exiting.pop(run_id, None)
        if proc is None:
            return
        deadline = time.monotonic() + self._grace
        while proc.poll() is None:
            if self._stopping.wait(JOB_POLL) or time.monotonic() > deadline:
                self.runner.stop(proc, self._grace)
                return

    def _finish(self, entry: Entry, run: RefreshRun, key: RunKey, schedule_time: datetime.datetime | None) -> None:
        run.ended = run.ended or self.clock()
        run.phase = None
        self.runs.release(key, run.id)
        # Waiters answer now, as a poll would see it (the history's record follows).
        self.runs.ended(run.id)
        with self._lock:
            self._procs.pop(run.id, None)
        extra: dict[str, str] = {}
        if run.status is RunStatus.SUCCEEDED:
            # Data as of: the run's start; a formatter partition's run, its schedule time. A
            # hand-picked partition says nothing about the rest of the table.
            data_time: float | None = run.started or run.ended
            if run.partition:
                data_time = schedule_time.timestamp() if schedule_time is not None else None
            if data_time is not None:
                entry.data_time = max(entry.data_time or 0.0, data_time)
                extra[store.DATA_TIME] = str(entry.data_time)
            entry.last_duration = (run.ended or 0.0) - (run.started or 0.0)
        if run.trigger in ("schedule", "catch-up") and schedule_time is not None and not self._stopping.is_set():
            # A run the shutdown cut short is caught up at the next start.
            extra[store.LAST_SCHEDULED] = str(schedule_time.timestamp())
        try:
            if self.registry.is_live(entry):
                self.records.record(entry, run, extra)
        except Exception:
            logger.exception("recording run %s of %s failed", run.id, entry.full_name)
        level = logging.INFO if run.status is RunStatus.SUCCEEDED else logging.WARNING
        logger.log(level, "refresh %s of %s (%s%s): %s%s", run.id, entry.full_name, run.trigger,
                   f", partition {run.partition}" if run.partition else "", run.status.value,
                   f": {run.error}" if run.error else f", {run.rows} rows")

    def _execute(self, entry: Entry, run: RefreshRun, conf: dict[str, str]) -> None:
        if self.engine is not None:
            self._execute_connect(entry, run, conf, self.engine)
            return
        work_dir = self.jobs.runs_dir() / run.id
        spec = self.jobs.spec(entry, work_dir, "batch", run.partition, run.id)
        started = self.clock()
        run.status, run.started, run.phase = RunStatus.RUNNING, started, "starting"
        self.records.record(entry, run)
        # Launched from this pool thread, which waits for the job: the job's parent-death
        # signal follows the thread that started it.
        timeout = self.config.dynamic_tables.refresh_timeout.total_seconds()
        # Good for this run only: revoked when it ends, and it could not outlive its timeout anyway.
        token = self.jobs.mint_token(entry, timeout + self._grace + KILL_WAIT + 60.0)
        timed_out = False
        try:
            proc = self.runner.launch(self.config.spark.master, self.jobs.run_conf(entry, conf), spec, work_dir,
                                      env={**self.jobs.job_env(token), **self.jobs.catalog_env(entry)})
            with self._lock:
                self._procs[run.id] = proc
            while proc.poll() is None:
                if self._stopping.wait(JOB_POLL) or not self.registry.is_live(entry):
                    self.runner.stop(proc, self._grace)
                    break
                if self.clock() - started > timeout:
                    timed_out = True
                    self.runner.stop(proc, self._grace)
                    break
                status = self.runner.read_json(work_dir / "status.json")
                run.phase = status.get("phase", run.phase)
                run.application_id = status.get("application_id", run.application_id)
                if status.get("phase") in ("done", "failed") and self.runner.read_json(work_dir / "result.json"):
                    # The job wrote its result (its stage committed or aborted) and is stopping its
                    # SparkSession, which takes a second or more: the run is over now. Its exit is
                    # awaited after the run is recorded, on this thread (_await_exit), so the
                    # pool's slot stays taken until the JVM is gone.
                    with self._lock:
                        self._exiting[run.id] = proc
                    break
        finally:
            self.jobs.revoke_token(token)
        (work_dir / "spark.properties").unlink(missing_ok=True)  # may hold secrets
        result = self.runner.read_json(work_dir / "result.json")
        run.ended = result.get("ended") or self.clock()
        run.application_id = result.get("application_id", run.application_id)
        if result.get("ok"):
            run.status = RunStatus.SUCCEEDED
            run.rows = result.get("rows")
            run.input_files = result.get("input_files")
            run.source_partitions = result.get("source_partitions") or []
        else:
            run.status = RunStatus.FAILED
            # What the job says is shown without the data it quotes (``redaction``; the log keeps it).
            run.error = shown_error(result.get("error")) or (
                f"the job exited with code {proc.returncode} and no result: "
                f"{shown_error(self.runner.log_tail(work_dir), first_line=False)}")
            if self._stopping.is_set():
                run.error = f"{STOPPED}; {run.error}"
            if timed_out:
                run.error = (f"stopped after dynamic-tables.refresh-timeout "
                             f"({self.config.dynamic_tables.refresh_timeout}); {run.error}")
        self._prune_run_dirs()

    def _execute_connect(self, entry: Entry, run: RefreshRun, conf: dict[str, str], engine: ConnectEngine) -> None:
        """One run in a Connect session of its own, driven from this thread: the same
        refresh code, stage protocol, job token and TLS as a spark-submit job's."""
        from catalogd.client import CatalogClient

        work_dir = self.jobs.runs_dir() / run.id
        spec = self.jobs.spec(entry, work_dir, "batch", run.partition, run.id)
        started = self.clock()
        laps = spark_job.Laps()
        run.status, run.started, run.phase = RunStatus.RUNNING, started, "starting"
        # Recorded while the run gets its session and plans; waited for before its stage begins
        # (a run whose record cannot be written writes nothing) and before it ends (the final
        # record comes after this one).
        recording = _Background(lambda: self.records.record(entry, run), f"dt-record-{run.id}")
        timeout = self.config.dynamic_tables.refresh_timeout.total_seconds()
        token = self.jobs.mint_token(entry, timeout + self._grace + KILL_WAIT + 60.0)
        server = engine.server(self.jobs.run_conf(entry))
        why: list[str] = []
        done = threading.Event()
        session: Any = None
        generation = -1
        client: CatalogClient | None = None
        timings: dict[str, float] = {}
        try:
            # A jdbc catalog's password goes to the server's password file, not into the run's plan.
            password = self.jobs.catalog_password(entry)
            if password is not None:
                info = self.manager.catalog(entry.catalog).info()
                server.give_jdbc_password(info.metastore or "", info.jdbc_user, password)
            # This session's settings only, in one request.
            session, generation = configured_session(server, conf, min(timeout, READY_TIMEOUT))
            run.application_id = server.application_id
            watcher = threading.Thread(target=self._watch_session, args=(entry, session, started, timeout, why, done),
                                       name=f"dt-watch-{run.id}", daemon=True)
            watcher.start()
            laps.lap("session_s")
            client = CatalogClient(spec["daemon"], token=token or "",
                                   tls_context=spark_job._tls_context(spec.get("tls")))
            laps.lap("client_s")
            result = spark_job.refresh(session, client, spec, run.partition or None, _RunReporter(run),
                                       before_stage=recording.result)
            laps.lap()
            timings = result.get("timings") or {}
            # Ended once committed, as a spark-submit run ends with its result (before its
            # spark.stop()): releasing the session is clean-up its outcome does not wait for. All
            # set before the status, so that whoever sees it SUCCEEDED sees them.
            run.rows = result.get("rows")
            run.input_files = result.get("input_files")
            run.source_partitions = result.get("source_partitions") or []
            run.ended = self.clock()
            run.status = RunStatus.SUCCEEDED
            # A waiting client learns of the end now, not after the session's release.
            self.runs.ended(run.id)
        except Exception as e:
            run.ended = self.clock()
            run.status = RunStatus.FAILED
            if generation >= 0 and not server.alive(generation):
                run.error = (f"the Spark Connect server died during the run (it is restarted; the next run "
                             f"retries): {shown_error(spark_job._describe(e))}")
            else:
                run.error = e.message if isinstance(e, CatalogError) else shown_error(spark_job._describe(e))
            if why:
                run.error = f"{why[0]}; {run.error}"
            self.runs.ended(run.id)
        finally:
            done.set()
            self.jobs.revoke_token(token)
            if client is not None:
                client.close()
            if session is not None:
                server.release(session, generation)
            laps.lap("release_s")
            with contextlib.suppress(Exception):  # its failure failed the run already, or it is moot now
                recording.result()
            self._write_result(work_dir, run, {**laps.seconds, **timings})

    def _write_result(self, work_dir: Path, run: RefreshRun, timings: dict[str, float]) -> None:
        """A Connect run's ``result.json``, as a spark-submit job leaves one: how it ended and
        where its time went (seconds per step; ``benchmarks/dynamic_tables.py`` prints them)."""
        try:
            spark_runner.own_dir(work_dir)
            (work_dir / "result.json").write_text(json.dumps(
                {"ok": run.status is RunStatus.SUCCEEDED, "error": run.error, "rows": run.rows,
                 "ended": run.ended, "timings": timings}))
        except OSError as e:
            logger.debug("writing %s/result.json: %s", work_dir, e)
        self._prune_run_dirs()

    def _watch_session(self, entry: Entry, session: Any, started: float, timeout: float, why: list[str],
                       done: threading.Event) -> None:
        """Interrupt a Connect run when the daemon stops, its table is let go or it times out."""
        while not done.wait(0.5):
            if self._stopping.is_set():
                why.append(STOPPED)
            elif not self.registry.is_live(entry):
                why.append("the dynamic table was let go during the run")
            elif self.clock() - started > timeout:
                limit = self.config.dynamic_tables.refresh_timeout
                why.append(f"stopped after dynamic-tables.refresh-timeout ({limit})")
            else:
                continue
            with contextlib.suppress(Exception):
                session.interruptAll()
            return

    def _prune_run_dirs(self) -> None:
        """Keep the work dirs (spec, status, log) of the last finished runs."""
        going = self.runs.unfinished_ids()
        with contextlib.suppress(OSError):
            done = [d for d in self.jobs.runs_dir().iterdir() if d.name not in going and (d / "result.json").exists()]
            for old in sorted(done, key=lambda p: p.stat().st_mtime)[:-_KEEP_RUN_DIRS]:
                shutil.rmtree(old, ignore_errors=True)

    # ------------------------------------------------------------ stopping

    def stop_table(self, table: str) -> None:
        """Stop the batch runs of a table let go: their jobs are stopped, runs not started
        never start; returns when they have ended (or the shutdown grace is over)."""
        with self._lock:
            queued = self._queue.remove(table)
            going = {run_id: done for run_id, done in self._going.items() if self.runs.table_of(run_id) == table}
            procs = [self._procs[run_id] for run_id in going if run_id in self._procs]
        for item in queued:  # still waiting for a worker: it never starts
            self._cut_off(item.run, item.key, "the dynamic table was dropped before the run started")
        self.runner.stop_all(procs, self._grace)
        deadline = time.monotonic() + self._grace + KILL_WAIT
        for done in going.values():
            done.wait(max(0.0, deadline - time.monotonic()))

    def shutdown(self) -> None:
        """After ``stopping`` is set: wait for the runs to stop their jobs and record how
        they ended (at most the shutdown grace, and the time a SIGKILL takes). Runs still
        waiting are taken by the pool's tasks and fail at once (the daemon stopped)."""
        with self._lock:
            self._pool.shutdown(wait=False)
            tasks = list(self._tasks)
        _, not_done = wait_futures(tasks, timeout=self._grace + KILL_WAIT)
        if not_done:
            logger.warning("%d refresh run(s) did not end within the shutdown grace", len(not_done))


class _Background:
    """A call on a thread of its own; ``result()`` waits for it and raises what it raised."""

    def __init__(self, fn: Callable[[], None], name: str) -> None:
        self._fn = fn
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._fn()
        except BaseException as e:  # handed to whoever waits for it
            self._error = e

    def result(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


class _RunReporter:
    """A Connect run's progress: its phase straight into the run record."""

    def __init__(self, run: RefreshRun) -> None:
        self.run = run

    def update(self, **values: Any) -> None:
        if "phase" in values:
            self.run.phase = values["phase"]
