"""The daemon's dynamic-table service: definitions, the FULL scheduler, refresh runs and
the supervisor of CONTINUOUS streaming jobs (DESIGN.md section 5, FLIP-435).

HMS is the source of truth (see ``store``); this service keeps a small in-memory
index of the dynamic tables it drives (mode, state, next fire time, the streaming
process) and the runs of the last hours.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import secrets
import shutil
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from catalogd.config import Config
from catalogd.dynamic import runner, store
from catalogd.dynamic.analyzer import Analyzer
from catalogd.dynamic.freshness import (
    Freshness,
    cron_expression,
    derive_mode,
    next_fire_time,
    parse_freshness,
    previous_fire_time,
)
from catalogd.dynamic.partitions import parse_formatters, parse_schedule_time, partition_value
from catalogd.dynamic.statements import AlterAction, CreateDynamicTable, DropDynamicTable, parse_statement
from catalogd.errors import (
    CatalogError,
    InvalidArgumentError,
    MetastoreUnavailableError,
    NotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.manager import CatalogManager
from catalogd.model import (
    DynamicTable,
    DynamicTableChange,
    DynamicTableSpec,
    RefreshJob,
    RefreshMode,
    RefreshRun,
    RefreshState,
    RunStatus,
    StatementResult,
    Table,
    TableFormat,
    TableKind,
)
from catalogd.names import ObjectPath, parse_object
from catalogd.spark.conf import spark_conf_for

logger = logging.getLogger(__name__)

#: Restart delays of a failing continuous job, seconds (the last one repeats).
BACKOFF = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 60.0)
#: A continuous job that ran this long is healthy again: the backoff starts over.
_HEALTHY_AFTER = 60.0
_MAX_JOBS = 1000
#: A streaming job that reports nothing for this long (or 10 triggers) is restarted.
_STALE_AFTER = 600.0
_INITIALIZE = "initialize"
#: How often catalogs or tables that failed to load are tried again, seconds.
_SYNC_EVERY = 60.0
#: How the error of a run the daemon's stop (or death) cut off begins; the tests look for it.
_CUT_OFF = "the daemon stopped"
_STOPPED = f"{_CUT_OFF} during the run"
#: Phases of a continuous job's status file while it refreshes (no status update meanwhile).
_REFRESH_PHASES = ("refreshing", "planning", "writing", "committing")


#: Spark settings a refresh request may give (resources and SQL tuning). Anything that
#: loads code or points the job elsewhere (spark.jars, extensions, extraJavaOptions, the
#: metastore) belongs in the daemon's own config: the REST port has no authentication.
JOB_SETTINGS = ("spark.executor.", "spark.driver.memory", "spark.driver.cores", "spark.cores.max",
                "spark.default.parallelism", "spark.dynamicAllocation.", "spark.memory.", "spark.task.cpus",
                "spark.sql.")
_JOB_SETTINGS_REFUSED = ("spark.sql.catalog", "spark.sql.extensions", "spark.sql.warehouse.dir",
                         "spark.sql.hive.metastore", "spark.executor.extraJavaOptions",
                         "spark.executor.extraClassPath", "spark.executor.extraLibraryPath")


def _job_setting_allowed(key: str) -> bool:
    return key.startswith(JOB_SETTINGS) and not key.startswith(_JOB_SETTINGS_REFUSED)


def _initialize(options: dict[str, str]) -> str:
    """The ``initialize`` option, normalised (``on_create`` when not given)."""
    return options.get(_INITIALIZE, "on_create").lower().replace("-", "_")


def _now() -> float:
    return time.time()


def _iso(ts: float | None, tz: datetime.tzinfo) -> str | None:
    if ts is None:
        return None
    return datetime.datetime.fromtimestamp(ts, tz).isoformat(sep=" ", timespec="seconds")


def _partition_key(partition: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(partition.items()))


@dataclass
class _Stream:
    """A CONTINUOUS table's streaming job as the supervisor sees it."""

    proc: subprocess.Popen[bytes] | None = None
    run: RefreshRun | None = None
    work_dir: Path | None = None
    started: float = 0.0
    failures: int = 0
    restart_at: float = 0.0
    restarts: int = 0
    ever_started: bool = False
    application_id: str | None = None


@dataclass
class _Entry:
    """One dynamic table this daemon drives."""

    catalog: str
    database: str
    name: str
    freshness: Freshness
    mode: RefreshMode
    state: RefreshState
    formatters: dict[str, str] = field(default_factory=dict)
    next_fire: datetime.datetime | None = None
    data_time: float | None = None
    last_duration: float = 0.0
    stream: _Stream | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def full_name(self) -> str:
        return f"{self.catalog}.{self.database}.{self.name}"


class DynamicTables:
    """Create, alter, drop and refresh dynamic tables; schedule and supervise their jobs.

    Args:
        manager: the daemon's catalogs.
        config: the daemon's configuration (``dynamic-tables``, ``spark``, data dir).
        address: the daemon's Thrift ``host:port`` (jobs commit through it); called
            when a job starts, after the server is bound.
    """

    def __init__(self, manager: CatalogManager, config: Config, address: Callable[[], str]) -> None:
        self.manager = manager
        self.config = config
        self.address = address
        settings = config.dynamic_tables
        self.tz = ZoneInfo(settings.time_zone)
        self.work_dir = config.server.data_dir / "dynamic"
        self._entries: dict[str, _Entry] = {}
        self._runs: OrderedDict[str, RefreshRun] = OrderedDict()
        self._jobs: OrderedDict[str, RefreshJob] = OrderedDict()
        self._active: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}
        self._analyzers: dict[str, Analyzer] = {}
        self._lock = threading.RLock()
        self._slots = threading.BoundedSemaphore(settings.max_concurrent_refreshes)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._run_threads: set[threading.Thread] = set()
        #: The table each run thread refreshes, and each running batch job's process.
        self._run_tables: dict[threading.Thread, str] = {}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        #: The catalog object each catalog's dynamic tables were loaded from (a live reload
        #: that replaces or removes it is seen by ``sync``), and tables to try again.
        self._loaded: dict[str, object] = {}
        self._retry: set[tuple[str, str, str]] = set()
        self._sync_lock = threading.Lock()
        manager.table_hooks.append(self._table_hook)

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Load every dynamic table, re-derive modes, catch up missed runs, start the jobs."""
        if not self.config.dynamic_tables.enabled:
            logger.info("dynamic tables are disabled on this daemon (dynamic-tables.enabled: false)")
            return
        self.sync()
        for target, label in ((self._schedule_loop, "dt-scheduler"), (self._supervise_loop, "dt-supervisor"),
                              (self._sync_loop, "dt-sync")):
            thread = threading.Thread(target=target, name=label, daemon=True)
            thread.start()
            self._threads.append(thread)
        logger.info("dynamic tables: %d loaded", len(self._entries))

    def sync(self) -> None:
        """Drive the dynamic tables of every hive catalog: at start, after a live reload
        (added catalogs are loaded; removed or replaced ones are let go, their jobs
        stopped), and every minute for catalogs or tables whose metastore failed before."""
        if not self.config.dynamic_tables.enabled or self._stopping.is_set():
            return
        with self._sync_lock:
            try:
                self._sync()
            except Exception:  # the next pass tries again; a reload must not fail on it
                logger.exception("loading dynamic tables failed (trying again in a minute)")

    def _sync_loop(self) -> None:
        while not self._stopping.wait(_SYNC_EVERY):
            self.sync()

    def _sync(self) -> None:
        catalogs = self.manager.catalogs()
        for name, loaded in list(self._loaded.items()):
            if catalogs.get(name) is not loaded:
                self._release_catalog(name)
        now = _now()
        for name, catalog in catalogs.items():
            if name in self._loaded:
                continue
            try:
                found = catalog.tables_with_parameter(store.FRESHNESS)
            except UnsupportedError:
                self._loaded[name] = catalog
                continue
            except CatalogError as e:
                logger.error("cannot load the dynamic tables of catalog %s (trying again in a minute): %s", name, e)
                continue
            self._loaded[name] = catalog
            for database, table, params in found:
                self._try_restore(name, database, table, params, now)
        for name, database, table in sorted(self._retry):
            self._retry.discard((name, database, table))
            if name not in self._loaded or self._entry(f"{name}.{database}.{table}") is not None:
                continue
            try:
                params = dict(self.manager.catalog(name).get_table(database, table).properties)
            except NotFoundError:
                continue
            except CatalogError:
                self._retry.add((name, database, table))
                continue
            if store.is_dynamic(params):
                self._try_restore(name, database, table, params, now)

    def _try_restore(self, catalog: str, database: str, table: str, params: dict[str, str], now: float) -> None:
        try:
            self._restore(catalog, database, table, params, now)
        except MetastoreUnavailableError as e:
            logger.error("cannot restore dynamic table %s.%s.%s yet (trying again in a minute): %s",
                         catalog, database, table, e)
            self._retry.add((catalog, database, table))
        except Exception as e:  # one bad table must not keep the daemon from starting
            logger.error("cannot restore dynamic table %s.%s.%s (it is not refreshed): %s: %s",
                         catalog, database, table, type(e).__name__, e)

    def _release_catalog(self, name: str) -> None:
        """Stop driving a catalog's tables (removed or replaced by a reload); their
        checkpoints stay for when the catalog comes back."""
        del self._loaded[name]
        with self._lock:
            released = [e for e in self._entries.values() if e.catalog == name]
            for entry in released:
                del self._entries[entry.full_name]
            analyzer = self._analyzers.pop(name, None)
        if analyzer is not None:
            analyzer.close()  # it reads the old catalog's metastore
        for entry in released:
            self._let_go(entry, f"catalog {name} changed in the configuration")
        if released:
            logger.info("catalog %s was removed or replaced: %d dynamic table(s) no longer driven from it",
                        name, len(released))

    def stop(self) -> None:
        """Stop the scheduler and every job (continuous jobs resume on the next start)."""
        self._stopping.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(10)
        with self._lock:
            entries = list(self._entries.values())
        for entry in entries:
            self._stop_stream(entry, "the daemon stopped")
        for analyzer in self._analyzers.values():
            analyzer.close()
        for thread in list(self._run_threads):
            thread.join(30)

    # ------------------------------------------------------------ helpers

    def _catalog(self, name: str | None) -> Any:
        catalog = self.manager.catalog(name or None)
        if catalog.info().type != "hive":
            raise UnsupportedError(f"catalog {catalog.name!r} is a {catalog.info().type} catalog: "
                                   "dynamic tables need a hive catalog (Spark refreshes them)")
        return catalog

    def _check_enabled(self) -> None:
        if not self.config.dynamic_tables.enabled:
            raise UnsupportedError("this daemon runs no dynamic tables (dynamic-tables.enabled is false): "
                                   "use the daemon that drives them")

    def _resolve(self, path: ObjectPath) -> tuple[Any, str, str]:
        catalog, database, name = self.manager.resolve_object(path)
        self._catalog(catalog.name)
        return catalog, database, name

    def _spark_conf(self, catalog: Any, extra: dict[str, str] | None = None) -> dict[str, str]:
        # The catalog's metastore settings win over spark.conf; a request's configuration over both.
        return {"spark.ui.enabled": "false", **self.config.spark.conf, **spark_conf_for(catalog.info()),
                **(extra or {})}

    def _analyzer(self, catalog: Any) -> Analyzer:
        with self._lock:
            analyzer = self._analyzers.get(catalog.name)
            if analyzer is None:
                analyzer = self._analyzers[catalog.name] = Analyzer(self._spark_conf(catalog))
            return analyzer

    def _params(self, catalog: Any, database: str, name: str) -> tuple[Table, dict[str, str]]:
        table = catalog.get_table(database, name)
        params = dict(table.properties)
        if not store.is_dynamic(params):
            raise TableNotFoundError(f"{catalog.name}.{database}.{name} is a table, not a dynamic table")
        return table, params

    def _update(self, entry: _Entry, set: dict[str, str], remove: tuple[str, ...] = ()) -> dict[str, str]:
        catalog = self.manager.catalog(entry.catalog)
        return catalog.update_table_parameters(entry.database, entry.name, set, remove)

    def _set_handler(self, entry: _Entry, detail: dict[str, Any] | None = None) -> None:
        with entry.lock:
            if detail is None:
                detail = self._detail(entry)
            self._update(entry, store.handler_params(entry.mode, entry.state, detail))

    def _detail(self, entry: _Entry) -> dict[str, Any]:
        detail: dict[str, Any] = {"freshness": str(entry.freshness)}
        if entry.mode is RefreshMode.FULL:
            detail["schedule"] = cron_expression(entry.freshness)
            detail["timeZone"] = self.config.dynamic_tables.time_zone
            if entry.next_fire is not None and entry.state is RefreshState.RUNNING:
                detail["nextRefresh"] = entry.next_fire.isoformat(sep=" ")
            if entry.formatters:
                detail["partitionFormatters"] = entry.formatters
        else:
            stream = entry.stream or _Stream()
            detail.update({
                "trigger": f"{self._trigger_seconds(entry.freshness)} seconds",
                "checkpoint": str(self._table_dir(entry) / "checkpoint"),
                "applicationId": stream.application_id,
                "pid": stream.proc.pid if stream.proc is not None and stream.proc.poll() is None else None,
                "restarts": stream.restarts,
                "master": self.config.spark.master,
            })
        return detail

    def _table_dir(self, entry: _Entry) -> Path:
        return self.work_dir / entry.catalog / entry.database / entry.name

    @staticmethod
    def _trigger_seconds(freshness: Freshness) -> int:
        # Half the freshness: a change waits at most one trigger, then one refresh.
        return max(1, freshness.seconds // 2)

    def _entry(self, full_name: str) -> _Entry | None:
        with self._lock:
            return self._entries.get(full_name)

    # ------------------------------------------------------------ create / restore

    def create(self, spec: DynamicTableSpec, ignore_if_exists: bool = False) -> DynamicTable:
        """Validate the query, derive the schema and mode, create the table, start its job.

        Raises:
            InvalidArgumentError: bad query, freshness, mode, partition or option; nothing created.
            TableAlreadyExistsError: the name is taken (unless ignore_if_exists).
        """
        catalog, database, name = self._resolve(ObjectPath(spec.catalog, spec.database, spec.name))
        self.manager.check_writable(catalog)
        self._check_enabled()
        full = f"{catalog.name}.{database}.{name}"
        reserved = sorted(k for k in spec.options if k.lower().startswith("catalogd."))
        if reserved:
            raise InvalidArgumentError(f"{full}: options starting with 'catalogd.' are reserved: {reserved}")
        if catalog.table_exists(database, name):
            if ignore_if_exists:
                try:
                    return self.get(ObjectPath(catalog.name, database, name))
                except TableNotFoundError as e:
                    raise TableAlreadyExistsError(f"{full} exists and is not a dynamic table") from e
            raise TableAlreadyExistsError(f"{full} already exists")
        # Refreshes need spark-submit: find out before anything is created.
        runner.spark_submit_path()
        freshness = parse_freshness(spec.freshness)
        mode = derive_mode(freshness, self.config.dynamic_tables.freshness_threshold, spec.refresh_mode)
        expanded = self.manager.expand_query(catalog, database, spec.query, kind="dynamic table")
        columns = self._analyzer(catalog).analyze(expanded.qualified)
        keys = [k.lower() for k in spec.partitioned_by]
        by_name = {c.name: c for c in columns}
        missing = [k for k in keys if k not in by_name]
        if missing:
            raise InvalidArgumentError(f"{full}: partition column(s) {missing} are not among the query's columns "
                                       f"{list(by_name)}")
        if len(set(keys)) != len(keys):
            raise InvalidArgumentError(f"{full}: a partition column is listed twice: {keys}")
        formatters = parse_formatters(spec.options, keys)
        if formatters and mode is RefreshMode.CONTINUOUS:
            raise InvalidArgumentError(f"{full}: partition.fields.*.date-formatter needs the FULL refresh mode "
                                       f"(freshness {freshness} gives CONTINUOUS)")
        initialize = _initialize(spec.options)
        if initialize not in ("on_create", "on_schedule"):
            raise InvalidArgumentError(f"{full}: option initialize is {initialize!r}: use on_create or on_schedule")
        dt = DynamicTable(
            catalog=catalog.name, database=database, name=name, query=expanded.original,
            freshness=str(freshness), expanded_query=expanded.qualified, declared_mode=spec.refresh_mode,
            refresh_mode=mode, state=RefreshState.INITIALIZING,
            columns=[c for c in columns if c.name not in keys], partition_keys=[by_name[k] for k in keys],
            options=dict(spec.options), comment=spec.comment,
        )
        created = _now()
        table = Table(name=name, database=database, catalog=catalog.name, columns=dt.columns,
                      partition_keys=dt.partition_keys, format=TableFormat.PARQUET, kind=TableKind.MANAGED,
                      comment=spec.comment,
                      properties={**spec.options, **store.definition_params(dt, expanded.tables, created)})
        catalog.create_table(table)
        entry = _Entry(catalog.name, database, name, freshness, mode, RefreshState.INITIALIZING, formatters)
        with self._lock:
            self._entries[entry.full_name] = entry
        try:
            self._activate(entry, initial=initialize == "on_create")
        except Exception:
            # A table that cannot be driven is not left behind half made.
            logger.error("dynamic table %s could not start its refresh job: dropping it again", full)
            self.forget(catalog.name, database, name, only=entry)
            try:
                catalog.drop_table(database, name, True, True)
            except CatalogError as e:
                logger.error("dynamic table %s could not be dropped either (%s): it is restored later", full, e)
                with self._sync_lock:
                    self._retry.add((catalog.name, database, name))
            raise
        logger.info("dynamic table %s created: freshness %s, %s refresh", full, freshness, mode.value)
        return self.get(ObjectPath(catalog.name, database, name))

    def _activate(self, entry: _Entry, initial: bool = False, catch_up: datetime.datetime | None = None) -> None:
        """Start the schedule or the streaming job; the handler goes RUNNING."""
        with entry.lock:
            entry.state = RefreshState.RUNNING
            if entry.mode is RefreshMode.FULL:
                now = datetime.datetime.now(self.tz)
                entry.next_fire = next_fire_time(entry.freshness, now)
                self._set_handler(entry)
                if initial:
                    schedule = previous_fire_time(entry.freshness, now) if entry.formatters else None
                    self._submit([entry], trigger="initial", schedule_time=schedule)
                elif catch_up is not None:
                    self._submit([entry], trigger="catch-up", schedule_time=catch_up)
            else:
                entry.stream = entry.stream or _Stream()
                entry.stream.restart_at = 0.0
                self._set_handler(entry)
        self._wake.set()

    def _restore(self, catalog_name: str, database: str, name: str, params: dict[str, str], now: float) -> None:
        catalog = self.manager.catalog(catalog_name)
        dt = store.decode(catalog_name, database, name, params)
        freshness = parse_freshness(dt.freshness)
        keys = [k.name for k in catalog.get_table(database, name).partition_keys]
        entry = _Entry(catalog_name, database, name, freshness, dt.refresh_mode, dt.state,
                       parse_formatters(dt.options, keys))
        entry.data_time = store.float_param(params, store.DATA_TIME)
        with self._lock:
            if entry.full_name in self._entries:
                return  # created (or restored) meanwhile: that entry drives it
            self._entries[entry.full_name] = entry
        try:
            self._restore_entry(entry, dt, params, now)
        except BaseException:
            with self._lock:
                if self._entries.get(entry.full_name) is entry:
                    del self._entries[entry.full_name]
            self._let_go(entry, "its restore failed")
            raise

    def _restore_entry(self, entry: _Entry, dt: DynamicTable, params: dict[str, str], now: float) -> None:
        freshness = entry.freshness
        # Runs the previous daemon left unfinished did not finish.
        runs = store.history(params)
        stale = [r for r in runs if not r.status.finished]
        for run in stale:
            run.status, run.ended = RunStatus.FAILED, run.ended or now
            run.error = run.error or _STOPPED
        if stale:
            self._update(entry, store.history_params(runs), (store.HISTORY + ".",))
        if dt.declared_mode is None:
            try:
                wanted = derive_mode(freshness, self.config.dynamic_tables.freshness_threshold)
            except InvalidArgumentError as e:
                wanted = entry.mode
                logger.warning("dynamic table %s keeps its %s refresh: %s", entry.full_name, entry.mode.value, e)
            if wanted is RefreshMode.CONTINUOUS and entry.formatters:
                logger.warning("dynamic table %s keeps its FULL refresh: it has partition date formatters",
                               entry.full_name)
            elif wanted is not entry.mode:
                logger.info("dynamic table %s: the freshness threshold changed, %s refresh becomes %s",
                            entry.full_name, entry.mode.value, wanted.value)
                entry.mode = wanted
        if entry.state is RefreshState.SUSPENDED:
            self._set_handler(entry)
            return
        # The initial refresh the previous daemon never ran, or that it was cut off in, runs now.
        cut_off = not runs or (runs[0].trigger == "initial" and (runs[0].error or "").startswith(_CUT_OFF))
        initial = _initialize(dt.options) == "on_create" and (entry.state is RefreshState.INITIALIZING or cut_off)
        catch_up = None
        if entry.mode is RefreshMode.FULL and not initial:
            last_fire = previous_fire_time(freshness, datetime.datetime.now(self.tz))
            last_done = store.float_param(params, store.LAST_SCHEDULED)
            created = store.float_param(params, store.CREATED) or now
            resumed = store.float_param(params, store.RESUMED)
            if last_fire.timestamp() > max(last_done or 0.0, created, resumed or 0.0):
                catch_up = last_fire
        self._activate(entry, initial=initial, catch_up=catch_up)

    # ------------------------------------------------------------ read

    def get(self, path: ObjectPath) -> DynamicTable:
        """The definition, the handler, the last refresh and the current lag.

        Raises:
            TableNotFoundError: no such dynamic table.
        """
        catalog, database, name = self._resolve(path)
        table, params = self._params(catalog, database, name)
        dt = store.decode(catalog.name, database, name, params, table.columns, table.partition_keys,
                          table.comment, table.created)
        entry = self._entry(dt.full_name)
        freshness = parse_freshness(dt.freshness)
        if dt.refresh_mode is RefreshMode.FULL:
            with contextlib.suppress(InvalidArgumentError):
                dt.schedule = cron_expression(freshness)
        runs = store.history(params)
        with self._lock:
            live = {r.id: r for r in self._runs.values() if r.table == dt.full_name}
        runs = [live.get(r.id, r) for r in runs]
        dt.last_refresh = runs[0] if runs else None
        if entry is not None:
            # The live view (next fire, the streaming job's pid) over what HMS last got.
            dt.job_detail = {**dt.job_detail, **self._detail(entry)}
        lag, within = self._lag(entry, params, freshness)
        dt.freshness_lag, dt.within_target = lag, within
        return dt

    def _lag(self, entry: _Entry | None, params: dict[str, str] | None,
             freshness: Freshness) -> tuple[float | None, bool | None]:
        data_time = entry.data_time if entry is not None else None
        if data_time is None and params is not None:
            data_time = store.float_param(params, store.DATA_TIME)
        if entry is not None and entry.mode is RefreshMode.CONTINUOUS and entry.stream is not None \
                and entry.stream.work_dir is not None:
            fresh = runner.read_json(entry.stream.work_dir / "status.json").get("fresh_as_of")
            if fresh is not None:
                data_time = max(data_time or 0.0, float(fresh))
        if data_time is None:
            return None, None
        lag = max(0.0, _now() - data_time)
        allowance = entry.last_duration if entry is not None and entry.mode is RefreshMode.FULL else 0.0
        return round(lag, 3), lag <= freshness.seconds + allowance

    def list(self, catalog: str | None = None, database: str | None = None) -> list[DynamicTable]:
        """Every dynamic table of a catalog (or one database of it), sorted by name."""
        cat = self._catalog(catalog)
        found = []
        for db, name, _ in cat.tables_with_parameter(store.FRESHNESS):
            if database and db != database:
                continue
            with contextlib.suppress(NotFoundError):
                found.append(self.get(ObjectPath(cat.name, db, name)))
        return sorted(found, key=lambda d: (d.database, d.name))

    def history(self, path: ObjectPath, limit: int = 20) -> list[RefreshRun]:
        """The recorded runs, newest first (running ones with their live phase)."""
        catalog, database, name = self._resolve(path)
        _, params = self._params(catalog, database, name)
        full = f"{catalog.name}.{database}.{name}"
        with self._lock:
            live = {r.id: r for r in self._runs.values() if r.table == full}
        runs = [live.get(r.id, r) for r in store.history(params)]
        return runs[:limit] if limit > 0 else runs

    def lags(self) -> list[tuple[str, float | None, bool | None]]:
        """(table, lag seconds, within target) for /metrics, from memory (no HMS call)."""
        with self._lock:
            entries = list(self._entries.values())
        return [(e.full_name, *self._lag(e, None, e.freshness)) for e in entries]

    # ------------------------------------------------------------ alter / drop

    def alter(self, path: ObjectPath, change: DynamicTableChange) -> DynamicTable:
        """SUSPEND, RESUME, SET FRESHNESS or SET REFRESH_MODE.

        Raises:
            TableNotFoundError: no such dynamic table.
            InvalidArgumentError: a freshness or mode that does not work; nothing changed.
        """
        catalog, database, name = self._resolve(path)
        self.manager.check_writable(catalog)
        self._params(catalog, database, name)
        full = f"{catalog.name}.{database}.{name}"
        entry = self._entry(full)
        if entry is None:
            raise UnsupportedError(f"{full} is not driven by this daemon (dynamic-tables.enabled is false, "
                                   "or it was made by another daemon since this one started)")
        action = (change.action or "").upper()
        with entry.lock:
            _, params = self._params(catalog, database, name)
            if action == "SUSPEND":
                if entry.state is not RefreshState.SUSPENDED:
                    entry.state = RefreshState.SUSPENDED
                    entry.next_fire = None
                    self._stop_stream(entry, "suspended")
                    self._set_handler(entry)
                    logger.info("dynamic table %s suspended", full)
            elif action == "RESUME":
                if entry.state is RefreshState.SUSPENDED:
                    logger.info("dynamic table %s resumed", full)
                    self._update(entry, {store.RESUMED: str(_now())})
                    self._activate(entry)
            elif action:
                raise InvalidArgumentError(f"unknown action {change.action!r}: use SUSPEND or RESUME")
            elif change.freshness is not None or change.refresh_mode is not None:
                freshness = parse_freshness(change.freshness) if change.freshness is not None else entry.freshness
                declared = change.refresh_mode
                if declared is None and change.freshness is not None:
                    old = params.get(store.DECLARED_MODE) or None
                    declared = RefreshMode(old) if old else None
                mode = derive_mode(freshness, self.config.dynamic_tables.freshness_threshold, declared)
                if entry.formatters and mode is RefreshMode.CONTINUOUS:
                    raise InvalidArgumentError(f"{full} has partition date formatters: it needs the FULL refresh mode")
                set_params = {store.FRESHNESS: str(freshness)}
                if change.refresh_mode is not None:
                    set_params[store.DECLARED_MODE] = change.refresh_mode.value
                self._update(entry, set_params)
                old_mode, old_freshness = entry.mode, entry.freshness
                entry.freshness, entry.mode = freshness, mode
                if old_mode is not mode or (mode is RefreshMode.CONTINUOUS and freshness != old_freshness):
                    # The streaming job's trigger comes from the freshness: a new one needs a new job.
                    self._stop_stream(entry, f"{mode.value} refresh, freshness {freshness}")
                    entry.stream = None
                    entry.next_fire = None
                if entry.state is RefreshState.SUSPENDED:
                    self._set_handler(entry)
                else:
                    self._activate(entry)
                logger.info("dynamic table %s: freshness %s, %s refresh", full, freshness, mode.value)
            else:
                raise InvalidArgumentError("nothing to change: give a freshness, a refresh mode, SUSPEND or RESUME")
        return self.get(ObjectPath(catalog.name, database, name))

    def drop(self, path: ObjectPath, ignore_if_not_exists: bool = False) -> None:
        """Stop the schedule and the job, then drop the table and its files.

        Raises:
            TableNotFoundError: no such dynamic table (unless ignore_if_not_exists).
        """
        catalog, database, name = self._resolve(path)
        self.manager.check_writable(catalog)
        full = f"{catalog.name}.{database}.{name}"
        try:
            self._params(catalog, database, name)
        except TableNotFoundError:
            if ignore_if_not_exists and not catalog.table_exists(database, name):
                return
            raise
        forgotten = self.forget(catalog.name, database, name)
        try:
            catalog.drop_table(database, name, False, True)
        except CatalogError:
            if forgotten is not None:
                # Still there: drive it again rather than leave it unrefreshed.
                self._restore(catalog.name, database, name, self._params(catalog, database, name)[1], _now())
            raise
        logger.info("dynamic table %s dropped", full)

    def _table_hook(self, op: str, catalog: str, database: str, name: str) -> None:
        if op == "drop-database":
            with self._lock:
                doomed = [e for e in self._entries.values() if (e.catalog, e.database) == (catalog, database)]
            for entry in doomed:
                self.forget(entry.catalog, entry.database, entry.name)
            return
        if self._entry(f"{catalog}.{database}.{name}") is None:
            return
        if op == "rename":
            raise UnsupportedError(f"{catalog}.{database}.{name} is a dynamic table: it cannot be renamed "
                                   "(its jobs and history are kept under its name); drop and re-create it")
        self.forget(catalog, database, name)

    def forget(self, catalog: str, database: str, name: str, only: _Entry | None = None) -> _Entry | None:
        """Stop driving a table (before it is dropped, by ``drop`` or ``table drop``): no
        schedule, no streaming job, and the batch runs going are stopped, so that none
        commits into a table of that name later.

        Args:
            only: forget the table only if it is still this entry (not a re-created table).

        Returns:
            The entry forgotten, if any.
        """
        full = f"{catalog}.{database}.{name}"
        with self._lock:
            entry = self._entries.get(full)
            if entry is None or (only is not None and entry is not only):
                return None
            del self._entries[full]
        self._let_go(entry, "dropped")
        shutil.rmtree(self._table_dir(entry), ignore_errors=True)
        return entry

    def _let_go(self, entry: _Entry, why: str) -> None:
        """Stop everything of an entry already out of ``_entries``: its schedule, its
        streaming job (never restarted: the state is SUSPENDED in memory) and its batch runs."""
        with self._lock:
            procs = [p for run_id, p in self._procs.items() if self._runs.get(run_id, None) is not None
                     and self._runs[run_id].table == entry.full_name]
            threads = [t for t, table in self._run_tables.items() if table == entry.full_name]
        with entry.lock:
            entry.state = RefreshState.SUSPENDED
            entry.next_fire = None
            self._stop_stream(entry, why)
        for proc in procs:
            runner.stop(proc)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(60)

    # ------------------------------------------------------------ refresh

    def refresh(self, tables: list[str], schedule_time: str | None = None, partition: dict[str, str] | None = None,
                configuration: dict[str, str] | None = None, trigger: str = "manual") -> RefreshJob:
        """Refresh now (works while suspended); joins a run already going for the same partition.

        Args:
            tables: dynamic table names (``cat.db.dt``; shorter forms use the defaults).
            schedule_time: the run's logical time; with date formatters it picks the partition.
            partition: refresh exactly this partition (instead of the schedule time's).
            configuration: extra Spark settings for the job.

        Raises:
            InvalidArgumentError: bad names, time or partition; nothing started.
            TableNotFoundError: a table is not a dynamic table.
        """
        if not tables:
            raise InvalidArgumentError("name at least one dynamic table to refresh")
        when = parse_schedule_time(schedule_time, self.tz) if schedule_time else None
        conf = dict(configuration or {})
        refused = sorted(k for k in conf if not _job_setting_allowed(k))
        if refused:
            raise InvalidArgumentError(
                f"configuration {refused} may not be set per request: allowed are {', '.join(JOB_SETTINGS)} "
                "(except the catalog's own settings); put others in the daemon's spark.conf")
        entries = []
        for text in tables:
            path = parse_object(text)
            catalog, database, name = self._resolve(path)
            self.manager.check_writable(catalog)
            self._params(catalog, database, name)
            entry = self._entry(f"{catalog.name}.{database}.{name}")
            if entry is None:
                raise UnsupportedError(f"{catalog.name}.{database}.{name} is not driven by this daemon "
                                       "(dynamic-tables.enabled is false?)")
            entries.append(entry)
        return self._submit(entries, trigger=trigger, schedule_time=when, partition=partition, conf=conf)

    def _partition_for(self, entry: _Entry, schedule_time: datetime.datetime | None,
                       partition: dict[str, str] | None) -> dict[str, str]:
        if partition:
            catalog = self.manager.catalog(entry.catalog)
            keys = [k.name for k in catalog.get_table(entry.database, entry.name).partition_keys]
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

    def _submit(self, entries: list[_Entry], trigger: str, schedule_time: datetime.datetime | None = None,
                partition: dict[str, str] | None = None, conf: dict[str, str] | None = None,
                fired: float | None = None) -> RefreshJob:
        plans = [(entry, self._partition_for(entry, schedule_time, partition)) for entry in entries]
        job = RefreshJob(id=secrets.token_hex(8), status=RunStatus.PENDING,
                         cluster_info={"master": self.config.spark.master, "deployMode": "client",
                                       "submitter": str(runner.spark_submit_path())})
        for entry, spec in plans:
            key = (entry.full_name, _partition_key(spec))
            with self._lock:
                joined_run = self._runs.get(self._active.get(key) or "")
                # A run that just ended is still listed until its history is written: start anew.
                if joined_run is not None and not joined_run.status.finished:
                    job.runs.append(joined_run)
                    continue
                run = RefreshRun(id=secrets.token_hex(8), table=entry.full_name, trigger=trigger,
                                 status=RunStatus.PENDING, partition=spec, submitted=_now(), fired=fired,
                                 schedule_time=schedule_time.isoformat(sep=" ") if schedule_time else None)
                self._runs[run.id] = run
                self._active[key] = run.id
                self._evict_runs()
            job.runs.append(run)
            thread = threading.Thread(target=self._run, args=(entry, run, key, dict(conf or {}), schedule_time),
                                      name=f"dt-run-{run.id}", daemon=True)
            with self._lock:
                self._run_threads.add(thread)
                self._run_tables[thread] = entry.full_name
            thread.start()
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > _MAX_JOBS:
                self._jobs.popitem(last=False)
        return self.get_job(job.id)

    def _evict_runs(self) -> None:
        """Forget the oldest finished runs beyond the limit (never a run still going)."""
        finished = [run_id for run_id, r in self._runs.items() if r.status.finished]
        for run_id in finished[:max(0, len(self._runs) - _MAX_JOBS)]:
            del self._runs[run_id]

    def get_job(self, job_id: str) -> RefreshJob:
        """A refresh request's status: SUCCEEDED when all its runs did, FAILED when one failed.

        Raises:
            NotFoundError: no such job (jobs of a previous daemon: see ``history``).
        """
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                # A run id works too (the history shows those).
                run = self._runs.get(job_id)
                if run is None:
                    raise NotFoundError(f"no refresh job {job_id!r} (this daemon keeps the last {_MAX_JOBS}; "
                                        "older runs are in `catalogd dt history`)")
                job = RefreshJob(id=run.id, status=run.status, runs=[run],
                                 cluster_info={"master": self.config.spark.master})
            statuses = [r.status for r in job.runs]
            if all(s is RunStatus.SUCCEEDED for s in statuses):
                job.status = RunStatus.SUCCEEDED
            elif all(s.finished for s in statuses):
                job.status = RunStatus.FAILED
                job.error = "; ".join(f"{r.table}: {r.error}" for r in job.runs if r.status is RunStatus.FAILED)
            elif any(s is not RunStatus.PENDING for s in statuses):
                job.status = RunStatus.RUNNING
            else:
                job.status = RunStatus.PENDING
            apps = [r.application_id for r in job.runs if r.application_id]
            if apps:
                job.cluster_info["applicationIds"] = ",".join(apps)
            return RefreshJob(id=job.id, status=job.status, runs=[RefreshRun(**r.__dict__) for r in job.runs],
                              cluster_info=dict(job.cluster_info), error=job.error)

    def _record(self, entry: _Entry, run: RefreshRun, extra: dict[str, str] | None = None) -> None:
        """Put the run (new or updated) at its place in the table's history."""
        limit = self.config.dynamic_tables.history_size
        catalog = self.manager.catalog(entry.catalog)
        try:
            with entry.lock:
                params = catalog.get_table(entry.database, entry.name).properties
                runs = [r for r in store.history(params) if r.id != run.id]
                runs = [RefreshRun(**run.__dict__), *runs][:limit]
                runs.sort(key=lambda r: r.submitted or 0.0, reverse=True)
                extra = dict(extra or {})
                for key in (store.LAST_SCHEDULED, store.DATA_TIME):
                    # Runs end out of order: these only move forward.
                    if key in extra:
                        extra[key] = str(max(float(extra[key]), store.float_param(params, key) or 0.0))
                self._update(entry, {**store.history_params(runs), **extra}, (store.HISTORY + ".",))
        except TableNotFoundError:
            logger.info("dynamic table %s is gone; run %s not recorded", entry.full_name, run.id)

    def _run(self, entry: _Entry, run: RefreshRun, key: tuple[str, tuple[tuple[str, str], ...]],
             conf: dict[str, str], schedule_time: datetime.datetime | None) -> None:
        try:
            with self._slots:
                if self._stopping.is_set():
                    raise CatalogError(f"{_CUT_OFF} before the run started")
                if self._entry(entry.full_name) is not entry:
                    raise CatalogError("the dynamic table was dropped before the run started")
                self._execute(entry, run, conf)
        except TableNotFoundError as e:
            run.status, run.error = RunStatus.FAILED, e.message
            if self._entry(entry.full_name) is entry:
                logger.warning("dynamic table %s was dropped outside catalogd: its schedule stops", entry.full_name)
                threading.Thread(target=self.forget, args=(entry.catalog, entry.database, entry.name, entry),
                                 daemon=True).start()
        except CatalogError as e:
            run.status, run.error = RunStatus.FAILED, e.message
        except Exception as e:
            logger.exception("refresh run %s of %s failed", run.id, entry.full_name)
            run.status, run.error = RunStatus.FAILED, f"{type(e).__name__}: {e}"
        finally:
            run.ended = run.ended or _now()
            run.phase = None
            with self._lock:
                if self._active.get(key) == run.id:
                    del self._active[key]
                self._procs.pop(run.id, None)
                self._run_threads.discard(threading.current_thread())
                self._run_tables.pop(threading.current_thread(), None)
            extra: dict[str, str] = {}
            if run.status is RunStatus.SUCCEEDED:
                # Data as of: the run's start; a formatter partition's run, its schedule time. A
                # hand-picked partition says nothing about the rest of the table.
                data_time = run.started or run.ended
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
                if self._entry(entry.full_name) is entry:
                    self._record(entry, run, extra)
            except Exception:
                logger.exception("recording run %s of %s failed", run.id, entry.full_name)
            level = logging.INFO if run.status is RunStatus.SUCCEEDED else logging.WARNING
            logger.log(level, "refresh %s of %s (%s%s): %s%s", run.id, entry.full_name, run.trigger,
                       f", partition {run.partition}" if run.partition else "", run.status.value,
                       f": {run.error}" if run.error else f", {run.rows} rows")

    def _job_spec(self, entry: _Entry, work_dir: Path, mode: str, partition: dict[str, str] | None = None,
                  run_id: str | None = None) -> dict[str, Any]:
        catalog = self.manager.catalog(entry.catalog)
        params = catalog.get_table(entry.database, entry.name).properties
        spec: dict[str, Any] = {
            "mode": mode, "daemon": self.address(), "table": entry.full_name,
            "query": store.unchunk(params, store.EXPANDED), "partition": partition or None,
            "status_file": str(work_dir / "status.json"), "result_file": str(work_dir / "result.json"),
            "app_name": f"catalogd {mode} refresh of {entry.full_name}" + (f" ({run_id})" if run_id else ""),
        }
        if mode == "continuous":
            spec["trigger_seconds"] = self._trigger_seconds(entry.freshness)
            spec["checkpoint"] = str(self._table_dir(entry) / "checkpoint")
            spec["sources"] = store.sources(params)
        return spec

    def _execute(self, entry: _Entry, run: RefreshRun, conf: dict[str, str]) -> None:
        work_dir = self.work_dir / "runs" / run.id
        spec = self._job_spec(entry, work_dir, "batch", run.partition, run.id)
        catalog = self.manager.catalog(entry.catalog)
        run.status, run.started, run.phase = RunStatus.RUNNING, _now(), "starting"
        self._record(entry, run)
        proc = runner.launch(self.config.spark.master, self._spark_conf(catalog, conf), spec, work_dir)
        with self._lock:
            self._procs[run.id] = proc
        timeout = self.config.dynamic_tables.refresh_timeout.total_seconds()
        timed_out = False
        while proc.poll() is None:
            if self._stopping.wait(0.5):
                runner.stop(proc)
                break
            if _now() - run.started > timeout:
                timed_out = True
                runner.stop(proc)
                break
            status = runner.read_json(work_dir / "status.json")
            run.phase = status.get("phase", run.phase)
            run.application_id = status.get("application_id", run.application_id)
        (work_dir / "spark.properties").unlink(missing_ok=True)  # may hold secrets
        result = runner.read_json(work_dir / "result.json")
        run.ended = result.get("ended") or _now()
        run.application_id = result.get("application_id", run.application_id)
        if result.get("ok"):
            run.status = RunStatus.SUCCEEDED
            run.rows = result.get("rows")
            run.input_files = result.get("input_files")
            run.source_partitions = result.get("source_partitions") or []
        else:
            run.status = RunStatus.FAILED
            run.error = result.get("error") or (
                f"the job exited with code {proc.returncode} and no result: {runner.log_tail(work_dir)}")
            if self._stopping.is_set():
                run.error = f"{_STOPPED}; {run.error}"
            if timed_out:
                run.error = (f"stopped after dynamic-tables.refresh-timeout "
                             f"({self.config.dynamic_tables.refresh_timeout}); {run.error}")
        self._prune_runs()

    def _prune_runs(self, keep: int = 50) -> None:
        """Keep the work dirs (spec, status, log) of the last ``keep`` finished runs."""
        runs = self.work_dir / "runs"
        with self._lock:
            going = {run_id for run_id, r in self._runs.items() if not r.status.finished}
        with contextlib.suppress(OSError):
            done = [d for d in runs.iterdir() if d.name not in going and (d / "result.json").exists()]
            for old in sorted(done, key=lambda p: p.stat().st_mtime)[:-keep]:
                shutil.rmtree(old, ignore_errors=True)

    # ------------------------------------------------------------ scheduler (FULL)

    def _schedule_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                wait = self._schedule_pass()
            except Exception:  # the scheduler must outlive any one bad table
                logger.exception("dynamic-table scheduler pass failed")
                wait = 1.0
            self._wake.wait(max(0.01, wait))
            self._wake.clear()

    def _schedule_pass(self) -> float:
        """Fire the due FULL refreshes; returns how long to sleep."""
        now = datetime.datetime.now(self.tz)
        due: list[tuple[_Entry, datetime.datetime]] = []
        wait = 1.0
        with self._lock:
            entries = list(self._entries.values())
        for entry in entries:
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
                self._submit([entry], trigger="schedule", schedule_time=fire, fired=_now())
                self._set_handler(entry)  # its nextRefresh moved on
            except Exception:
                logger.exception("scheduled refresh of %s at %s failed to start", entry.full_name, fire)
        return wait

    # ------------------------------------------------------------ supervisor (CONTINUOUS)

    def _supervise_loop(self) -> None:
        while not self._stopping.wait(0.5):
            with self._lock:
                entries = list(self._entries.values())
            for entry in entries:
                try:
                    self._supervise(entry)
                except TableNotFoundError:
                    logger.warning("dynamic table %s was dropped outside catalogd: its job stops", entry.full_name)
                    self.forget(entry.catalog, entry.database, entry.name)
                except CatalogError as e:
                    logger.error("supervising %s: %s", entry.full_name, e)
                except Exception:
                    logger.exception("supervising %s", entry.full_name)

    def _supervise(self, entry: _Entry) -> None:
        with entry.lock:
            if self._entry(entry.full_name) is not entry:
                return  # dropped or let go while this pass waited for the lock
            stream = entry.stream
            if entry.mode is not RefreshMode.CONTINUOUS or entry.state is not RefreshState.RUNNING or stream is None:
                return
            now = _now()
            if stream.proc is not None and stream.proc.poll() is None:
                status = runner.read_json(stream.work_dir / "status.json") if stream.work_dir else {}
                app = status.get("application_id")
                if app and app != stream.application_id:
                    stream.application_id = app
                    if stream.run is not None:
                        stream.run.application_id = app
                        self._record(entry, stream.run)
                    self._set_handler(entry)
                if stream.run is not None:
                    stream.run.phase = status.get("phase")
                    stream.run.rows = status.get("last_rows", stream.run.rows)
                    if status.get("fresh_as_of"):
                        entry.data_time = max(entry.data_time or 0.0, float(status["fresh_as_of"]))
                if now - stream.started > _HEALTHY_AFTER:
                    stream.failures = 0
                stale = max(10 * self._trigger_seconds(entry.freshness), _STALE_AFTER)
                if status.get("phase") in _REFRESH_PHASES:
                    # One refresh may take long: it gets what a batch run gets.
                    stale = max(stale, self.config.dynamic_tables.refresh_timeout.total_seconds())
                if now - float(status.get("updated") or stream.started) > stale:
                    # Alive but no trigger for that long: hung (a lost executor, a stuck
                    # listing). Stopped here, restarted below on the next pass.
                    logger.warning("continuous job of %s made no progress for %.0fs: restarting it",
                                   entry.full_name, stale)
                    runner.stop(stream.proc)
                return
            if stream.proc is not None:
                self._stream_ended(entry, stream, now)
            if now >= stream.restart_at:
                self._start_stream(entry, stream, now)

    def _stream_ended(self, entry: _Entry, stream: _Stream, now: float) -> None:
        assert stream.proc is not None and stream.work_dir is not None
        result = runner.read_json(stream.work_dir / "result.json")
        error = result.get("error") or (f"the streaming job exited with code {stream.proc.returncode}: "
                                        f"{runner.log_tail(stream.work_dir)}")
        delay = BACKOFF[min(stream.failures, len(BACKOFF) - 1)]
        stream.failures += 1
        stream.restart_at = now + delay
        stream.proc = None
        logger.warning("continuous job of %s stopped (%s); restarting in %.0fs", entry.full_name, error, delay)
        if stream.run is not None:
            stream.run.status, stream.run.ended, stream.run.error = RunStatus.FAILED, now, error
            stream.run.phase = None
            self._record(entry, stream.run)
            stream.run = None

    def _start_stream(self, entry: _Entry, stream: _Stream, now: float) -> None:
        # If the start itself fails, the next try waits as a restart after a failure would.
        stream.restart_at = now + BACKOFF[min(stream.failures, len(BACKOFF) - 1)]
        stream.failures += 1
        work_dir = self._table_dir(entry) / "job"
        shutil.rmtree(work_dir, ignore_errors=True)
        spec = self._job_spec(entry, work_dir, "continuous")
        catalog = self.manager.catalog(entry.catalog)
        run = RefreshRun(id=secrets.token_hex(8), table=entry.full_name, trigger="continuous",
                         status=RunStatus.RUNNING, submitted=now, started=now, phase="starting")
        stream.proc = runner.launch(self.config.spark.master, self._spark_conf(catalog), spec, work_dir)
        stream.work_dir, stream.started, stream.run, stream.application_id = work_dir, now, run, None
        stream.failures -= 1
        if stream.ever_started:
            stream.restarts += 1
        stream.ever_started = True
        with self._lock:
            self._runs[run.id] = run
        self._record(entry, run)
        self._set_handler(entry)
        logger.info("continuous job of %s started (pid %d, trigger %ss)", entry.full_name, stream.proc.pid,
                    spec["trigger_seconds"])

    def _stop_stream(self, entry: _Entry, why: str) -> None:
        stream = entry.stream
        if stream is None or stream.proc is None:
            return
        runner.stop(stream.proc)
        if stream.run is not None:
            stream.run.status, stream.run.ended, stream.run.phase = RunStatus.SUCCEEDED, _now(), None
            stream.run.error = f"stopped: {why}"
            with contextlib.suppress(CatalogError):
                self._record(entry, stream.run)
            stream.run = None
        stream.proc = None
        stream.application_id = None
        stream.restart_at = 0.0

    # ------------------------------------------------------------ statements

    def execute(self, statement: str) -> StatementResult:
        """Run a CREATE / ALTER / DROP DYNAMIC TABLE statement.

        Raises:
            UnsupportedError: not a dynamic-table statement.
            InvalidArgumentError: a syntax error (with what was expected), or bad values.
        """
        parsed = parse_statement(statement)
        path = parse_object(parsed.name)
        if isinstance(parsed, CreateDynamicTable):
            catalog, database, name = self._resolve(path)
            exists = catalog.table_exists(database, name)
            dt = self.create(DynamicTableSpec(
                catalog=catalog.name, database=database, name=name, query=parsed.query,
                freshness=str(parsed.freshness), refresh_mode=parsed.mode, partitioned_by=list(parsed.partitioned_by),
                options=dict(parsed.options), comment=parsed.comment), ignore_if_exists=parsed.if_not_exists)
            if exists:
                return StatementResult("exists", f"{dt.full_name} exists already; nothing changed", dt)
            return StatementResult("created", f"created dynamic table {dt.full_name} "
                                   f"(freshness {dt.freshness}, {dt.refresh_mode.value} refresh)", dt)
        if isinstance(parsed, DropDynamicTable):
            catalog, database, name = self._resolve(path)
            full = f"{catalog.name}.{database}.{name}"
            if parsed.if_exists and not catalog.table_exists(database, name):
                return StatementResult("not-found", f"{full} does not exist; nothing dropped")
            self.drop(path, parsed.if_exists)
            return StatementResult("dropped", f"dropped dynamic table {full}")
        action = parsed.action
        if action is AlterAction.REFRESH:
            job = self.refresh([parsed.name], partition=dict(parsed.partition or {}) or None)
            return StatementResult("refreshing", f"refresh job {job.id} started", job=job)
        if action in (AlterAction.SUSPEND, AlterAction.RESUME):
            dt = self.alter(path, DynamicTableChange(action=action.value))
            kind = "suspended" if action is AlterAction.SUSPEND else "resumed"
            return StatementResult(kind, f"{dt.full_name} is {dt.state.value}", dt)
        change = DynamicTableChange(freshness=str(parsed.freshness) if parsed.freshness else None,
                                    refresh_mode=parsed.mode)
        dt = self.alter(path, change)
        return StatementResult("altered", f"{dt.full_name}: freshness {dt.freshness}, "
                               f"{dt.refresh_mode.value} refresh, {dt.state.value}", dt)
