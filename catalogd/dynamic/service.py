"""The daemon's dynamic-table service (docs/dynamic-tables.md, FLIP-435): wires the parts
together, runs their threads, and is the one object the server calls.

    registry   the driven tables in memory (Entry, Stream)
    runs       live runs and refresh jobs by id
    jobspec    job specs, Spark settings, work dirs
    records    handler and history in HMS parameters
    executor   batch runs on a bounded pool
    scheduler  FULL tables' cron fires
    supervisor CONTINUOUS tables' streaming jobs, restart policy
    driver     activate / let go one table
    loader     sync with HMS: load, restore, release catalogs
    tables     create, get, list, history, alter, drop, refresh
    dispatch   CREATE / ALTER / DROP DYNAMIC TABLE statements
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Protocol
from zoneinfo import ZoneInfo

from catalogd.auth.model import Authority
from catalogd.config import Config
from catalogd.dynamic import dispatch
from catalogd.dynamic import runner as spark_runner
from catalogd.dynamic.analyzer import Analyzers
from catalogd.dynamic.connect import ConnectEngine, ConnectRunner
from catalogd.dynamic.driver import Driver
from catalogd.dynamic.executor import RunExecutor
from catalogd.dynamic.jobspec import JobFactory
from catalogd.dynamic.loader import Loader
from catalogd.dynamic.lockdown import unguarded
from catalogd.dynamic.records import Records
from catalogd.dynamic.registry import Entry, Registry
from catalogd.dynamic.run_events import MAX_WAIT, job_over
from catalogd.dynamic.runs import RunIndex
from catalogd.dynamic.scheduler import Scheduler
from catalogd.dynamic.supervisor import Supervisor
from catalogd.dynamic.tables import TableOperations
from catalogd.errors import NotFoundError
from catalogd.manager import CatalogManager
from catalogd.model import (
    DynamicTable,
    DynamicTableChange,
    DynamicTableSpec,
    RefreshJob,
    RefreshMode,
    RefreshRun,
    StatementResult,
)
from catalogd.names import ObjectPath

logger = logging.getLogger(__name__)

#: Long polls that may hold a thread at once: a Thrift ``getRefreshJob`` with a wait holds one of
#: the server's workers (``server.workers``, 32 by default), and a member that does not lead holds
#: one thread per wait it forwards to the leader. More than this many are answered at once, as
#: without a wait (the client asks again): waiters never take every worker. The REST routes wait
#: for this member's own jobs without a thread, unbounded.
MAX_BLOCKING_WAITS = 8


class LeaderCalls(Protocol):
    """The same operations, run by the cluster's leader (``catalogd.server.forwarding``): a member
    that does not lead sends every change of what drives tables there, so that it happens once."""

    def create(self, spec: DynamicTableSpec, ignore_if_exists: bool) -> DynamicTable: ...

    def alter(self, path: ObjectPath, change: DynamicTableChange) -> DynamicTable: ...

    def drop(self, path: ObjectPath, ignore_if_not_exists: bool) -> None: ...

    def refresh(self, tables: list[str], schedule_time: str | None, partition: dict[str, str] | None,
                configuration: dict[str, str] | None, trigger: str) -> RefreshJob: ...

    def get_job(self, job_id: str, wait: float = 0.0) -> RefreshJob: ...

    def execute(self, statement: str) -> StatementResult: ...


class DynamicTables:
    """Create, alter, drop and refresh dynamic tables; schedule and supervise their jobs.

    Args:
        manager: the daemon's catalogs.
        config: the daemon's configuration (``dynamic-tables``, ``spark``, data dir,
            ``server.shutdown-grace``).
        address: the daemon's Thrift ``host:port`` (jobs commit through it); called
            when a job starts, after the server is bound.
        authority: mints each job run's token when auth is enabled.
        leading: in a cluster, whether this member leads now (only the leader drives tables,
            and every action checks it first); default: always.
        leader: in a cluster, runs the changes on the leader when this member does not lead.
    """

    def __init__(self, manager: CatalogManager, config: Config, address: Callable[[], str],
                 authority: Authority | None = None, leading: Callable[[], bool] | None = None,
                 leader: LeaderCalls | None = None) -> None:
        self.manager = manager
        self.config = config
        self.tz = ZoneInfo(config.dynamic_tables.time_zone)
        self._grace = config.server.shutdown_grace.total_seconds()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._leading: Callable[[], bool] = leading or (lambda: True)
        self._leader = leader
        self._blocking_waits = threading.BoundedSemaphore(MAX_BLOCKING_WAITS)
        registry = self._registry = Registry()
        runs = RunIndex(config.spark.master)
        jobs = JobFactory(manager, config, address, config.server.data_dir / "dynamic", authority)
        records = Records(manager, config, jobs)
        self._jobs = jobs
        #: The warm engine (``spark.engine: connect``): batch runs, continuous tables' queries
        #: and query checks go to its Connect servers.
        self.engine: ConnectEngine | None = None
        if config.spark.engine == "connect":
            self.engine = ConnectEngine(config.spark.master, config.server.data_dir / "dynamic" / "connect",
                                        config.spark.connect_port, config.spark.remote,
                                        warmup=config.spark.connect_warmup)
        self._analyzers = Analyzers(self.engine, config.server.data_dir / "dynamic" / "analyzer")
        self._executor = RunExecutor(manager, config, registry, runs, records, jobs, self._stopping,
                                     table_gone=self._table_gone, engine=self.engine)
        # CONTINUOUS tables: streaming queries in catalogd's own Connect server with the connect
        # engine (an outside server could not write their status files here), else a job each.
        stream_runner = ConnectRunner(self.engine) if self.engine is not None and self.engine.remote is None \
            else spark_runner
        self._supervisor = Supervisor(manager, config, registry, runs, records, jobs, self._stopping,
                                      table_gone=self._table_gone, runner=stream_runner)
        self._scheduler = Scheduler(registry, self._fire, self._clock, self._stopping)
        self._driver = Driver(registry, records, jobs, self._executor, self._scheduler, self._supervisor,
                              self._clock)
        self._loader = Loader(manager, config, registry, records, self._driver, self._analyzers, self._stopping,
                              self._clock, self._leading)
        self._executor.leading = self._scheduler.leading = self._supervisor.leading = self._leading
        self._runs = runs
        self._tables = TableOperations(manager, config, registry, runs, records, jobs, self._executor,
                                       self._driver, self._loader, self._analyzers)
        manager.table_hooks.append(self._tables.table_hook)

    def _clock(self) -> datetime.datetime:
        return datetime.datetime.now(self.tz)

    def _fire(self, entry: Entry, schedule_time: datetime.datetime) -> None:
        self._driver.fire(entry, schedule_time)

    def _table_gone(self, entry: Entry) -> None:
        self._driver.forget(entry.catalog, entry.database, entry.name, only=entry)

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Load every dynamic table, re-derive modes, catch up missed runs, start the jobs."""
        if not self.config.dynamic_tables.enabled:
            logger.info("dynamic tables are disabled on this daemon (dynamic-tables.enabled: false)")
            return
        self.sync()
        why = unguarded(self.config.spark.master, self.config.spark.conf)
        if why:
            logger.warning("the refresh engine: %s", why)
        self._warm_engine()
        for target, label in ((self._scheduler.run, "dt-scheduler"), (self._supervisor.run, "dt-supervisor"),
                              (self._loader.run, "dt-sync")):
            thread = threading.Thread(target=target, name=label, daemon=True)
            thread.start()
            self._threads.append(thread)
        logger.info("dynamic tables: %d loaded", len(self._registry))

    def lead(self, leading: bool) -> None:
        """This member took up (True) or gave up (False) the cluster's lead: drive every
        dynamic table, or none (their jobs stopped; the new leader restores them)."""
        if not self.config.dynamic_tables.enabled or self._stopping.is_set():
            return
        if leading:
            self.sync()
            logger.info("dynamic tables: %d driven by this member (it leads the cluster)", len(self._registry))
        else:
            self._loader.release_all("this member no longer leads the cluster")

    def _remote(self) -> LeaderCalls | None:
        """The leader's calls when this member is in a cluster and does not lead; else None."""
        if self._leader is None or self._leading():
            return None
        return self._leader

    def _warm_engine(self) -> None:
        """Start the default catalog's Connect server now, not at the first refresh."""
        if self.engine is None:
            return
        try:
            catalog = self.manager.catalog(None)
            self.engine.server(self._jobs.spark_conf(catalog))
        except Exception as e:  # a memory catalog without HMS endpoint, say: its runs fail on their own
            logger.info("the Spark Connect server starts with the first refresh: %s", e)

    def sync(self) -> None:
        """Drive the dynamic tables of every hive catalog (see ``Loader.sync``); start the
        default catalog's analyzer in the background (``dynamic-tables.warm-analyzer``), also
        after a reload replaced it."""
        self._loader.sync()
        # In a cluster only the leader creates tables (the others send their creates there).
        if self.config.dynamic_tables.enabled and self.config.dynamic_tables.warm_analyzer \
                and not self._stopping.is_set() and self._leading():
            self._tables.warm_analyzer()
        self._warn_retention()

    def _warn_retention(self) -> None:
        """A retention of 0 with continuous tables: nearly every query on them can fail."""
        if not self.config.dynamic_tables.enabled or self.config.staging.replaced_data_retention:
            return
        continuous = sorted(e.full_name for e in self._registry.entries() if e.mode is RefreshMode.CONTINUOUS)
        logger.warning(
            "staging.replaced-data-retention is 0s: each commit deletes the data it replaced at once, so a query "
            "planned before a commit fails (FILE_NOT_EXIST); continuous dynamic tables commit every few seconds "
            "(%d here%s): set a retention longer than your longest query", len(continuous),
            f": {', '.join(continuous[:5])}{' ...' if len(continuous) > 5 else ''}" if continuous else "")

    def stop(self) -> None:
        """Stop the scheduler and every job (continuous jobs resume on the next start); each
        wait is bounded by ``server.shutdown-grace``."""
        self._stopping.set()  # batch runs start stopping their jobs now
        self._runs.events.close()  # long polls answer now
        self._scheduler.wake()
        for thread in self._threads:
            thread.join(self._grace)
        entries = self._registry.entries()
        detached = []
        for entry in entries:
            with entry.lock:
                detached.append(self._supervisor.detach(entry))
        self._supervisor.finish(detached, "the daemon stopped")
        self._analyzers.close()
        self._executor.shutdown()
        if self.engine is not None:
            self.engine.close(self._grace)

    # ------------------------------------------------------------ operations

    def create(self, spec: DynamicTableSpec, ignore_if_exists: bool = False) -> DynamicTable:
        """See ``TableOperations.create``."""
        remote = self._remote()
        if remote is not None:
            return remote.create(spec, ignore_if_exists)
        return self._tables.create(spec, ignore_if_exists)

    def get(self, path: ObjectPath) -> DynamicTable:
        """See ``TableOperations.get``."""
        return self._tables.get(path)

    def list_tables(self, catalog: str | None = None, database: str | None = None) -> list[DynamicTable]:
        """Every dynamic table of a catalog (or one database of it), sorted by name."""
        return self._tables.list_tables(catalog, database)

    def history(self, path: ObjectPath, limit: int = 20) -> list[RefreshRun]:
        """The recorded runs, newest first (running ones with their live phase)."""
        return self._tables.history(path, limit)

    def queue_stats(self) -> dict[str, int]:
        """Refresh runs waiting for a worker, and requests refused by a full queue (for /metrics)."""
        return self._executor.queue_stats()

    def lags(self) -> list[tuple[str, float | None, bool | None]]:
        """(table, lag seconds, within target) for /metrics, from memory (no HMS call)."""
        return self._tables.lags()

    def alter(self, path: ObjectPath, change: DynamicTableChange) -> DynamicTable:
        """See ``TableOperations.alter``."""
        remote = self._remote()
        if remote is not None:
            return remote.alter(path, change)
        return self._tables.alter(path, change)

    def drop(self, path: ObjectPath, ignore_if_not_exists: bool = False) -> None:
        """See ``TableOperations.drop``."""
        remote = self._remote()
        if remote is not None:
            remote.drop(path, ignore_if_not_exists)
            return
        self._tables.drop(path, ignore_if_not_exists)

    def refresh(self, tables: list[str], schedule_time: str | None = None, partition: dict[str, str] | None = None,
                configuration: dict[str, str] | None = None, trigger: str = "manual") -> RefreshJob:
        """See ``TableOperations.refresh``."""
        remote = self._remote()
        if remote is not None:
            return remote.refresh(tables, schedule_time, partition, configuration, trigger)
        return self._tables.refresh(tables, schedule_time, partition, configuration, trigger)

    def get_job(self, job_id: str, wait: float = 0.0) -> RefreshJob:
        """See ``RunIndex.get_job``; in a cluster, a job this member does not know is asked of the leader.

        Args:
            wait: seconds (cut to ``MAX_WAIT``) to wait for every run of the job to end, woken by
                the runs' ends; then the job as it is. Blocks the calling thread: at most
                ``MAX_BLOCKING_WAITS`` wait at once, others answer at once.
        """
        with self._blocking_slot(wait) as wait:
            try:
                job = self._runs.get_job(job_id)
            except NotFoundError:
                remote = self._remote()
                if remote is None:
                    raise
                return remote.get_job(job_id, wait)
            if wait <= 0 or job_over(job):
                return job
            return self._runs.events.wait(lambda: self._runs.get_job(job_id), wait)

    async def wait_job(self, job_id: str, wait: float) -> RefreshJob:
        """``get_job`` for the event loop: this member's own job is waited for without a thread
        (the run's end resolves the wait); a job of the leader's is asked there with the wait, on
        a thread of its own (one of ``MAX_BLOCKING_WAITS``; none free: asked without the wait)."""
        wait = min(max(wait, 0.0), MAX_WAIT)
        try:
            # From memory under a lock held for a dict lookup and a copy: fit for the event loop.
            self._runs.get_job(job_id)
        except NotFoundError:
            remote = self._remote()
            if remote is None:
                raise
            return await self._forwarded_wait(remote, job_id, wait)
        return await self._runs.events.wait_async(lambda: self._runs.get_job(job_id), wait)

    async def _forwarded_wait(self, remote: LeaderCalls, job_id: str, wait: float) -> RefreshJob:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[RefreshJob] = loop.create_future()

        def settle(job: RefreshJob | None, error: BaseException | None) -> None:
            if answer.done():
                return
            if error is not None:
                answer.set_exception(error)
            else:
                answer.set_result(job)  # type: ignore[arg-type]

        def ask() -> None:
            # A daemon thread, not a pool's: a shutdown does not wait for a wait the leader holds.
            with self._blocking_slot(wait) as given:
                try:
                    job = remote.get_job(job_id, given)
                except BaseException as e:  # handed to the waiting request
                    with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                        loop.call_soon_threadsafe(settle, None, e)
                    return
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, job, None)

        threading.Thread(target=ask, name="dt-forwarded-wait", daemon=True).start()
        return await answer

    @contextlib.contextmanager
    def _blocking_slot(self, wait: float) -> Iterator[float]:
        """The wait a blocking waiter may take: ``wait`` (cut to ``MAX_WAIT``) while a slot is
        free, else 0 (no slot is taken for no wait)."""
        wait = min(max(wait, 0.0), MAX_WAIT)
        if wait <= 0 or not self._blocking_waits.acquire(blocking=False):
            yield 0.0
            return
        try:
            yield wait
        finally:
            self._blocking_waits.release()

    def forget(self, catalog: str, database: str, name: str, only: Entry | None = None) -> Entry | None:
        """See ``Driver.forget``."""
        return self._driver.forget(catalog, database, name, only)

    def execute(self, statement: str) -> StatementResult:
        """Run a CREATE / ALTER / DROP DYNAMIC TABLE statement (see ``dispatch.execute``)."""
        remote = self._remote()
        if remote is not None:
            return remote.execute(statement)
        return dispatch.execute(self._tables, statement)
