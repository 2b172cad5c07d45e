"""The dynamic-table operations the server offers: create, get, list, history, lags,
alter (suspend, resume, freshness, mode), drop and refresh now."""

from __future__ import annotations

import contextlib
import datetime
import logging
import shutil
import time
from zoneinfo import ZoneInfo

from catalogd.catalog.base import BaseCatalog
from catalogd.catalog.reserved import check_client_metadata
from catalogd.config import Config
from catalogd.dynamic import jobspec, runner, store
from catalogd.dynamic.analyzer import Analyzers
from catalogd.dynamic.driver import Driver, initialize_option
from catalogd.dynamic.evolution import added_columns
from catalogd.dynamic.executor import RunExecutor
from catalogd.dynamic.freshness import Freshness, cron_expression, default_freshness, derive_mode, parse_freshness
from catalogd.dynamic.jobconf import check_request_settings
from catalogd.dynamic.jobspec import UNSIGNED, JobFactory
from catalogd.dynamic.loader import Loader
from catalogd.dynamic.partitions import parse_formatters, parse_schedule_time
from catalogd.dynamic.records import Records
from catalogd.dynamic.registry import Entry, Registry
from catalogd.dynamic.runs import RunIndex
from catalogd.dynamic.supervisor import Detached
from catalogd.dynamic.validation import check_query
from catalogd.errors import (
    CatalogError,
    ConflictError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.manager import CatalogManager
from catalogd.model import (
    Column,
    DynamicTable,
    DynamicTableChange,
    DynamicTableSpec,
    RefreshJob,
    RefreshMode,
    RefreshRun,
    RefreshState,
    RunStatus,
    StageState,
    Table,
    TableFormat,
    TableKind,
)
from catalogd.names import ObjectPath, parse_object
from catalogd.views import catalogs_named

logger = logging.getLogger(__name__)

class TableOperations:
    """Each operation checks its input, changes HMS, then what drives the table."""

    def __init__(self, manager: CatalogManager, config: Config, registry: Registry, runs: RunIndex,
                 records: Records, jobs: JobFactory, executor: RunExecutor, driver: Driver, loader: Loader,
                 analyzers: Analyzers) -> None:
        self.manager = manager
        self.config = config
        self.registry = registry
        self.runs = runs
        self.records = records
        self.jobs = jobs
        self.executor = executor
        self.driver = driver
        self.loader = loader
        self.analyzers = analyzers
        self.tz = ZoneInfo(config.dynamic_tables.time_zone)

    # ------------------------------------------------------------ helpers

    def catalog(self, name: str | None) -> BaseCatalog:
        """A catalog dynamic tables live in, by name (the default when None): hive, or jdbc.

        Raises:
            UnsupportedError: the catalog is neither a hive nor a jdbc catalog.
        """
        catalog = self.manager.catalog(name or None)
        if catalog.info().type not in ("hive", "jdbc"):
            raise UnsupportedError(f"catalog {catalog.name!r} is a {catalog.info().type} catalog: "
                                   "dynamic tables need a hive or a jdbc catalog (Spark refreshes them)")
        return catalog

    def source_catalog(self, catalog: BaseCatalog, query: str) -> BaseCatalog | None:
        """The hive catalog a jdbc catalog's dynamic table reads (None: a hive catalog's table,
        whose query reads its own catalog). Spark reads the sources from that catalog's
        metastore, so the query names it in every table: ``hive.sales.orders``.

        Raises:
            InvalidArgumentError: a table without its catalog, or tables of several catalogs.
            UnsupportedError: the catalog named is not a hive catalog.
        """
        if catalog.info().type != "jdbc":
            return None
        named = catalogs_named(query)
        where = f"a dynamic table in jdbc catalog {catalog.name!r}"
        if None in named:
            raise InvalidArgumentError(f"{where} reads hive tables: name each with its catalog "
                                       "(catalog.database.table)")
        if len(named) != 1:
            raise InvalidArgumentError(f"{where} reads the tables of one hive catalog; the query names "
                                       f"{sorted(str(n) for n in named) or 'none'}")
        source = self.manager.catalog(named.pop())
        if source.info().type != "hive":
            raise UnsupportedError(f"{where} reads hive tables; {source.name!r} is a {source.info().type} catalog")
        return source

    def resolve(self, path: ObjectPath) -> tuple[BaseCatalog, str, str]:
        """The (hive or jdbc) catalog, database and name a path means."""
        catalog, database, name = self.manager.resolve_object(path)
        self.catalog(catalog.name)
        return catalog, database, name

    def _check_enabled(self) -> None:
        if not self.config.dynamic_tables.enabled:
            raise UnsupportedError("this daemon runs no dynamic tables (dynamic-tables.enabled is false): "
                                   "use the daemon that drives them")

    @staticmethod
    def _params(catalog: BaseCatalog, database: str, name: str, cached: bool = False) -> tuple[Table, dict[str, str]]:
        """``cached``: for a read shown to a user; changes and drops decide on the metastore's own answer."""
        table = (catalog if cached else catalog.fresh()).get_table(database, name)
        params = dict(table.properties)
        if not store.is_dynamic(params):
            raise TableNotFoundError(f"{catalog.name}.{database}.{name} is a table, not a dynamic table")
        return table, params

    def warm_analyzer(self) -> None:
        """Start the default catalog's Spark analyzer in the background (a JVM start that
        the first create would otherwise wait for); only a writable hive catalog gets one."""
        try:
            info = self.manager.catalog_info()
            catalog = self.manager.catalog(info.name)
        except CatalogError as e:
            logger.warning("the Spark analyzer is not started in the background: %s", e)
            return
        if info.type != "hive" or info.read_only:
            return
        self.analyzers.get(catalog.name, lambda: self.jobs.spark_conf(catalog)).warm()

    # ------------------------------------------------------------ create

    def create(self, spec: DynamicTableSpec, ignore_if_exists: bool = False) -> DynamicTable:
        """Validate the query, derive the schema and mode, create the table, start its job.

        Raises:
            InvalidArgumentError: bad query, freshness, mode, partition or option; nothing created.
            TableAlreadyExistsError: the name is taken (unless ignore_if_exists).
        """
        catalog, database, name = self.resolve(ObjectPath(spec.catalog, spec.database, spec.name))
        self.manager.check_writable(catalog)
        self._check_enabled()
        full = f"{catalog.name}.{database}.{name}"
        reserved = sorted(k for k in spec.options if k.lower().startswith("catalogd."))
        if reserved:
            raise InvalidArgumentError(f"{full}: options starting with 'catalogd.' are reserved: {reserved}")
        check_client_metadata(f"dynamic table {full}", (), [spec.comment])
        if catalog.table_exists(database, name):
            if ignore_if_exists:
                try:
                    return self.get(ObjectPath(catalog.name, database, name))
                except TableNotFoundError as e:
                    raise TableAlreadyExistsError(f"{full} exists and is not a dynamic table") from e
            raise TableAlreadyExistsError(f"{full} already exists")
        # Refreshes need spark-submit: find out before anything is created.
        runner.spark_submit_path()
        if (spec.freshness or "").strip():
            freshness = parse_freshness(spec.freshness)
        else:
            # No FRESHNESS: the configured default of the declared mode (FLIP-551).
            conf = self.config.dynamic_tables
            freshness = default_freshness(spec.refresh_mode, conf.default_freshness_continuous,
                                          conf.default_freshness_full)
        mode = derive_mode(freshness, self.config.dynamic_tables.freshness_threshold, spec.refresh_mode)
        full_only = jobspec.full_only(catalog)
        if full_only is not None and mode is RefreshMode.CONTINUOUS:
            raise UnsupportedError(f"{full}: {full_only}: declare REFRESH_MODE = FULL, or a freshness of at least "
                                   f"dynamic-tables.freshness-threshold")
        if full_only is not None and spec.partitioned_by:
            raise UnsupportedError(f"{full}: a jdbc catalog has no partitions (PARTITIONED BY): each refresh "
                                   "replaces the whole table")
        source = self.source_catalog(catalog, spec.query) or catalog
        source_db = database if source is catalog else self.manager.catalog_info(source.name).default_database
        # The rules every run checks again (no path-based or file-reading source...), before Spark sees it.
        check_query(spec.query, f"dynamic table {full}", frozenset({source.name}))
        expanded = self.manager.expand_query(source, source_db, spec.query, kind="dynamic table")
        analyzer = self.analyzers.get(source.name, lambda: self.jobs.spark_conf(source))
        columns = analyzer.analyze(expanded.qualified)
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
        initialize = initialize_option(spec.options)
        if initialize not in ("on_create", "on_schedule"):
            raise InvalidArgumentError(f"{full}: option initialize is {initialize!r}: use on_create or on_schedule")
        dt = DynamicTable(
            catalog=catalog.name, database=database, name=name, query=expanded.original,
            freshness=str(freshness), expanded_query=expanded.qualified, declared_mode=spec.refresh_mode,
            refresh_mode=mode, state=RefreshState.INITIALIZING,
            columns=[c for c in columns if c.name not in keys], partition_keys=[by_name[k] for k in keys],
            options=dict(spec.options), comment=spec.comment,
        )
        created = time.time()
        source_name = source.name if source is not catalog else None
        definition = store.definition_params(dt, expanded.tables, created, source_name)
        # As a run checks it (the stored expansion, its views too), then signed: only this is ever run.
        self.jobs.check_definition(catalog.name, database, name, definition, signed=False)
        definition.update(self.jobs.signer.signed(full, definition))
        table = Table(name=name, database=database, catalog=catalog.name, columns=dt.columns,
                      partition_keys=dt.partition_keys, format=None if source_name else TableFormat.PARQUET,
                      kind=TableKind.MANAGED, comment=spec.comment, properties={**spec.options, **definition})
        catalog.create_table(table)
        entry = Entry(catalog.name, database, name, freshness, mode, RefreshState.INITIALIZING, formatters,
                      source_name)
        self.loader.forget_refusal(full)  # a refused table of this name was dropped meanwhile
        self.registry.put(entry)
        try:
            self.driver.activate(entry, initial=initialize == "on_create")
        except Exception:
            # A table that cannot be driven is not left behind half made.
            logger.error("dynamic table %s could not start its refresh job: dropping it again", full)
            self.driver.forget(catalog.name, database, name, only=entry)
            try:
                catalog.drop_table(database, name, True, True)
            except CatalogError as e:
                logger.error("dynamic table %s could not be dropped either (%s): it is restored later", full, e)
                self.loader.retry_later(catalog.name, database, name)
            raise
        logger.info("dynamic table %s created: freshness %s, %s refresh", full, freshness, mode.value)
        return self.get(ObjectPath(catalog.name, database, name))

    # ------------------------------------------------------------ read

    def get(self, path: ObjectPath) -> DynamicTable:
        """The definition, the handler, the last refresh and the current lag.

        Raises:
            TableNotFoundError: no such dynamic table.
        """
        catalog, database, name = self.resolve(path)
        table, params = self._params(catalog, database, name, cached=True)
        dt = store.decode(catalog.name, database, name, params, table.columns, table.partition_keys,
                          table.comment, table.created)
        entry = self.registry.get(dt.full_name)
        freshness = parse_freshness(dt.freshness)
        if dt.refresh_mode is RefreshMode.FULL:
            with contextlib.suppress(InvalidArgumentError):
                dt.schedule = cron_expression(freshness)
        live = self.runs.live(dt.full_name)
        runs = self._refused(dt.full_name) + [live.get(r.id, r) for r in store.history(params)]
        dt.last_refresh = runs[0] if runs else None
        if entry is not None:
            # The live view (next fire, the streaming job's pid) over what HMS last got.
            dt.job_detail = {**dt.job_detail, **self.records.detail(entry)}
        lag, within = self._lag(entry, params, freshness)
        dt.freshness_lag, dt.within_target = lag, within
        dt.data_time = self._data_time(entry, params)
        dt.data_time_run = _run_of_data_time(runs, dt.data_time)
        return dt

    def _data_time(self, entry: Entry | None, params: dict[str, str] | None) -> float | None:
        """Seconds since the epoch the data is current as of (None: never refreshed)."""
        data_time = entry.data_time if entry is not None else None
        if data_time is None and params is not None:
            data_time = store.float_param(params, store.DATA_TIME)
        if entry is not None and entry.mode is RefreshMode.CONTINUOUS and entry.stream is not None \
                and entry.stream.work_dir is not None:
            fresh = runner.read_json(entry.stream.work_dir / "status.json").get("fresh_as_of")
            if fresh is not None:
                data_time = max(data_time or 0.0, float(fresh))
        return data_time

    def _lag(self, entry: Entry | None, params: dict[str, str] | None,
             freshness: Freshness) -> tuple[float | None, bool | None]:
        data_time = self._data_time(entry, params)
        if data_time is None:
            return None, None
        now = time.time()
        lag = max(0.0, now - data_time)
        allowance = 0.0
        if entry is not None and entry.mode is RefreshMode.FULL:
            # Just before a FULL run commits, the lag is the freshness plus the time since the
            # run's slot: its wait in the queue and its duration. The last run's duration alone
            # would put a table outside its target whenever a run commits later after its slot
            # than the previous one did (a longer queue), though every run commits before the
            # next slot. So while a scheduled run is queued or running, the time since it was
            # fired counts too, up to one more freshness period (then it is late).
            allowance = entry.last_duration
            due = self._due_since(entry)
            if due is not None:
                allowance = max(allowance, min(float(freshness.seconds), now - due))
        return round(lag, 3), lag <= freshness.seconds + allowance

    def _due_since(self, entry: Entry) -> float | None:
        """When the oldest scheduled run of a table still queued or running was fired (None: none is)."""
        fired = [r.fired for r in self.runs.live(entry.full_name).values()
                 if r.trigger == "schedule" and r.fired is not None and not r.status.finished]
        return min(fired) if fired else None

    def list_tables(self, catalog: str | None = None, database: str | None = None) -> list[DynamicTable]:
        """Every dynamic table of a catalog (or one database of it), sorted by name."""
        cat = self.catalog(catalog)
        found = []
        for db, name, _ in cat.tables_with_parameter(store.FRESHNESS):
            if database and db != database:
                continue
            with contextlib.suppress(NotFoundError):
                found.append(self.get(ObjectPath(cat.name, db, name)))
        return sorted(found, key=lambda d: (d.database, d.name))

    def history(self, path: ObjectPath, limit: int = 20) -> list[RefreshRun]:
        """The recorded runs, newest first (running ones with their live phase)."""
        catalog, database, name = self.resolve(path)
        _, params = self._params(catalog, database, name, cached=True)
        full = f"{catalog.name}.{database}.{name}"
        live = self.runs.live(full)
        runs = self._refused(full) + [live.get(r.id, r) for r in store.history(params)]
        return runs[:limit] if limit > 0 else runs

    def _refused(self, full: str) -> list[RefreshRun]:
        """This daemon's refusal to drive the table at its last load, as the newest run (or none)."""
        refusal = self.loader.refusal(full) if self.registry.get(full) is None else None
        return [refusal] if refusal is not None else []

    def lags(self) -> list[tuple[str, float | None, bool | None]]:
        """(table, lag seconds, within target) for /metrics, from memory (no HMS call)."""
        return [(e.full_name, *self._lag(e, None, e.freshness)) for e in self.registry.entries()]

    # ------------------------------------------------------------ alter / drop

    def _driven_entry(self, path: ObjectPath) -> tuple[BaseCatalog, str, str, Entry]:
        """The writable dynamic table a change names, and this daemon's registry entry for it."""
        catalog, database, name = self.resolve(path)
        self.manager.check_writable(catalog)
        _, params = self._params(catalog, database, name)
        full = f"{catalog.name}.{database}.{name}"
        entry = self.registry.get(full)
        if entry is None and self.loader.adopt(catalog.name, database, name, params):
            entry = self.registry.get(full)
        if entry is None:
            raise UnsupportedError(f"{full} is not driven by this daemon (dynamic-tables.enabled is false, "
                                   "or it was made by another daemon since this one started)")
        return catalog, database, name, entry

    def alter(self, path: ObjectPath, change: DynamicTableChange) -> DynamicTable:
        """SUSPEND, RESUME, SET FRESHNESS or SET REFRESH_MODE.

        Raises:
            TableNotFoundError: no such dynamic table.
            InvalidArgumentError: a freshness or mode that does not work; nothing changed.
        """
        catalog, database, name, entry = self._driven_entry(path)
        full = entry.full_name
        action = (change.action or "").upper()
        # The streaming job is taken off under the lock and stopped after it (a stop can take long).
        detached: Detached | None = None
        why = ""
        try:
            with entry.lock:
                _, params = self._params(catalog, database, name)
                if action == "SUSPEND":
                    if entry.state is not RefreshState.SUSPENDED:
                        entry.state = RefreshState.SUSPENDED
                        entry.next_fire = None
                        detached, why = self.driver.supervisor.detach(entry), "suspended"
                        self.records.set_handler(entry)
                        logger.info("dynamic table %s suspended", full)
                elif action == "RESUME":
                    if entry.state is RefreshState.SUSPENDED:
                        logger.info("dynamic table %s resumed", full)
                        self.records.update(entry, {store.RESUMED: str(time.time())})
                        self.driver.activate(entry)
                elif action:
                    raise InvalidArgumentError(f"unknown action {change.action!r}: use SUSPEND or RESUME")
                elif change.freshness is not None or change.refresh_mode is not None:
                    detached, why = self._change_schedule(entry, change, params)
                else:
                    raise InvalidArgumentError("nothing to change: give a freshness, a refresh mode, SUSPEND or "
                                               "RESUME")
        finally:
            self.driver.supervisor.finish([detached], why)
        return self.get(ObjectPath(catalog.name, database, name))

    def set_query(self, path: ObjectPath, query: str) -> tuple[DynamicTable, list[Column]]:
        """``ALTER DYNAMIC TABLE t AS <query>`` (FLIP-492): the table and the columns the query added.

        The new query must keep the table's schema (``evolution.added_columns``). A FULL
        table refreshes with it from its next run; a CONTINUOUS table's job is stopped
        first and started again from scratch (a new checkpoint: the old one belongs to the
        old query). While a batch refresh of the table runs, it is refused: that run would
        commit the old schema over the new one.

        Raises:
            TableNotFoundError: no such dynamic table.
            InvalidArgumentError: Spark cannot analyse the query, or it changes the schema
                otherwise than by appending columns; nothing changed.
            ConflictError: a refresh of the table is under way; nothing changed.
        """
        self._check_enabled()
        catalog, database, name, entry = self._driven_entry(path)
        full = entry.full_name
        check_query(query, f"dynamic table {full}", frozenset({catalog.name}))
        expanded = self.manager.expand_query(catalog, database, query, kind="dynamic table")
        if f"{database}.{name}" in expanded.tables:
            raise InvalidArgumentError(f"{full}: the new query reads the table itself")
        # Spark's analysis takes a while: outside the lock, which the scheduler needs.
        columns = self.analyzers.get(catalog.name, lambda: self.jobs.spark_conf(catalog)).analyze(expanded.qualified)
        continuous = restart = False
        detached: Detached | None = None
        with entry.lock:
            table, _ = self._params(catalog, database, name)
            added = added_columns(full, table.columns, table.partition_keys, columns)
            self._check_no_batch_run(full)
            if entry.mode is RefreshMode.CONTINUOUS:
                # The streaming job stops before the schema changes (it would commit the old one).
                continuous, restart = True, entry.state is RefreshState.RUNNING
                detached, entry.stream = self.driver.supervisor.detach(entry), None
        try:
            self.driver.supervisor.finish([detached], "its query changed (ALTER ... AS)")
            with entry.lock:
                table, params = self._params(catalog, database, name)
                added = added_columns(full, table.columns, table.partition_keys, columns)
                self._check_no_batch_run(full)
                changed = {**store.chunks(store.QUERY, expanded.original),
                           **store.chunks(store.EXPANDED, expanded.qualified), store.SOURCES: ",".join(expanded.tables)}
                params = {k: v for k, v in params.items()
                          if not k.startswith((store.QUERY + ".", store.EXPANDED + "."))}
                params.update(changed)
                # Checked as a run checks it, then signed anew (the old signature covers the old query).
                self.jobs.check_definition(catalog.name, database, name, params, signed=False)
                catalog.update_table_parameters(
                    database, name, {**changed, **self.jobs.signer.signed(full, params)},
                    (store.QUERY + ".", store.EXPANDED + "."), add_columns=added)
            if continuous:
                shutil.rmtree(self.jobs.checkpoint(entry), ignore_errors=True)
        finally:
            if continuous and restart:
                self.driver.activate(entry)
        logger.info("dynamic table %s has a new query%s", full,
                    f" (columns added: {', '.join(c.name for c in added)})" if added else "")
        return self.get(ObjectPath(catalog.name, database, name)), added

    def _check_no_batch_run(self, full: str) -> None:
        busy = sorted(r.id for r in self.runs.live(full).values()
                      if r.trigger != "continuous" and r.status in (RunStatus.PENDING, RunStatus.RUNNING))
        if busy:
            raise ConflictError(f"{full}: refresh run(s) {', '.join(busy)} are under way and would commit the old "
                                "schema: change the query once they ended (dt history shows them)")

    def _change_schedule(self, entry: Entry, change: DynamicTableChange,
                         params: dict[str, str]) -> tuple[Detached | None, str]:
        """A new freshness or mode (under ``entry.lock``); the streaming job to stop, and why."""
        full = entry.full_name
        freshness = parse_freshness(change.freshness) if change.freshness is not None else entry.freshness
        declared = change.refresh_mode
        if declared is None and change.freshness is not None:
            old = params.get(store.DECLARED_MODE) or None
            declared = RefreshMode(old) if old else None
        mode = derive_mode(freshness, self.config.dynamic_tables.freshness_threshold, declared)
        if entry.formatters and mode is RefreshMode.CONTINUOUS:
            raise InvalidArgumentError(f"{full} has partition date formatters: it needs the FULL refresh mode")
        full_only = jobspec.full_only(self.manager.catalog(entry.catalog))
        if full_only is not None and mode is RefreshMode.CONTINUOUS:
            raise UnsupportedError(f"{full}: {full_only}; nothing changed")
        set_params = {store.FRESHNESS: str(freshness)}
        if change.refresh_mode is not None:
            set_params[store.DECLARED_MODE] = change.refresh_mode.value
        # The new definition is catalogd's: signed anew (only a definition catalogd signed is run).
        if not self.jobs.signer.verify(full, params):
            raise PermissionDeniedError(UNSIGNED.format(table=full))
        set_params.update(self.jobs.signer.signed(full, {**params, **set_params}))
        self.records.update(entry, set_params)
        old_mode, old_freshness = entry.mode, entry.freshness
        entry.freshness, entry.mode = freshness, mode
        detached, why = None, ""
        if old_mode is not mode or (mode is RefreshMode.CONTINUOUS and freshness != old_freshness):
            # The streaming job's trigger comes from the freshness: a new one needs a new job.
            detached, why = self.driver.supervisor.detach(entry), f"{mode.value} refresh, freshness {freshness}"
            entry.stream = None
            entry.next_fire = None
        if entry.state is RefreshState.SUSPENDED:
            self.records.set_handler(entry)
        else:
            self.driver.activate(entry)
        logger.info("dynamic table %s: freshness %s, %s refresh", full, freshness, mode.value)
        return detached, why

    def drop(self, path: ObjectPath, ignore_if_not_exists: bool = False) -> None:
        """Stop the schedule and the job, then drop the table and its files.

        Raises:
            TableNotFoundError: no such dynamic table (unless ignore_if_not_exists).
        """
        catalog, database, name = self.resolve(path)
        self.manager.check_writable(catalog)
        full = f"{catalog.name}.{database}.{name}"
        try:
            self._params(catalog, database, name)
        except TableNotFoundError:
            if ignore_if_not_exists and not catalog.table_exists(database, name):
                return
            raise
        forgotten = self.driver.forget(catalog.name, database, name)
        try:
            catalog.drop_table(database, name, False, True)
        except CatalogError:
            if forgotten is not None:
                # Still there: drive it again rather than leave it unrefreshed.
                self.loader.restore(catalog.name, database, name, self._params(catalog, database, name)[1],
                                    time.time())
            raise
        self._abort_open_stages(catalog, database, name)
        self.loader.forget_refusal(full)
        logger.info("dynamic table %s dropped", full)

    @staticmethod
    def _abort_open_stages(catalog: BaseCatalog, database: str, name: str) -> None:
        """Abort the stages a stopped run left open on the dropped table: its job may have begun
        one (a run begins its stage beside the query's analysis) and been stopped before it
        could abort it; its lease would end it only later. Aborted with a tombstone, so a late
        file of a writer still stopping goes too."""
        try:
            stages = catalog.list_stages()
        except CatalogError:
            return  # a catalog that stages nothing
        for stage in stages:
            if (stage.database, stage.target.lower()) == (database, name.lower()) and stage.state is StageState.OPEN:
                try:
                    catalog.abort_stage(database, stage.id.rsplit(".", 1)[1])
                except CatalogError as e:  # its lease ends it all the same
                    logger.warning("dropping %s.%s: aborting its open stage %s: %s", database, name, stage.id, e)

    def table_hook(self, op: str, catalog: str, database: str, name: str) -> None:
        """Called by the catalog manager before a table is dropped or renamed, or a database dropped."""
        if op == "drop-database":
            doomed = [e for e in self.registry.entries() if (e.catalog, e.database) == (catalog, database)]
            for entry in doomed:
                self.driver.forget(entry.catalog, entry.database, entry.name)
            return
        if self.registry.get(f"{catalog}.{database}.{name}") is None:
            return
        if op == "rename":
            raise UnsupportedError(f"{catalog}.{database}.{name} is a dynamic table: it cannot be renamed "
                                   "(its jobs and history are kept under its name); drop and re-create it")
        self.driver.forget(catalog, database, name)

    # ------------------------------------------------------------ refresh

    def refresh(self, tables: list[str], schedule_time: str | None = None, partition: dict[str, str] | None = None,
                configuration: dict[str, str] | None = None, trigger: str = "manual") -> RefreshJob:
        """Refresh now (works while suspended); joins a run already going for the same partition.

        Args:
            tables: dynamic table names (``cat.db.dt``; shorter forms use the defaults).
            schedule_time: the run's logical time; with date formatters it picks the partition.
            partition: refresh exactly this partition (instead of the schedule time's).
            configuration: extra Spark settings for the job (jobconf.REQUEST_SETTINGS keys only).

        Raises:
            InvalidArgumentError: bad names, time or partition; nothing started.
            TableNotFoundError: a table is not a dynamic table.
        """
        if not tables:
            raise InvalidArgumentError("name at least one dynamic table to refresh")
        when: datetime.datetime | None = parse_schedule_time(schedule_time, self.tz) if schedule_time else None
        conf = check_request_settings(configuration or {})
        entries = []
        for text in tables:
            path = parse_object(text)
            catalog, database, name = self.resolve(path)
            self.manager.check_writable(catalog)
            full = f"{catalog.name}.{database}.{name}"
            # A table this daemon drives is known from memory: a request (joined or queued) makes
            # no metastore call, so that a burst of them takes no metastore slot from reads. A
            # table dropped outside catalogd meanwhile fails its run (and is let go then); each run
            # checks the definition's signature and rules before it starts.
            entry = self.registry.get(full)
            if entry is None:
                refusal = self.loader.refusal(full)
                if refusal is not None:
                    # Why it is not driven (the loader refused it): said to whoever asks for a run.
                    raise PermissionDeniedError(f"{full} was refused when it was loaded and is never run: "
                                                f"{refusal.error}")
                _, params = self._params(catalog, database, name)  # not a dynamic table, or none at all: says which
                if not self.jobs.signer.verify(full, params):
                    raise PermissionDeniedError(UNSIGNED.format(table=full))
                # Made through another member just before this one took the lead: driven from now on.
                if self.loader.adopt(catalog.name, database, name, params):
                    entry = self.registry.get(full)
                if entry is None:
                    raise UnsupportedError(f"{full} is not driven by this daemon (dynamic-tables.enabled is false?)")
            entries.append(entry)
        return self.executor.submit(entries, trigger=trigger, schedule_time=when, partition=partition, conf=conf)


def _run_of_data_time(runs: list[RefreshRun], data_time: float | None) -> RefreshRun | None:
    """The run (newest first in ``runs``) that made the data current as of ``data_time``.

    As the executor sets it: a formatter partition's run, its schedule time; another run, its
    start; a streaming job, its last up-to-date trigger (any time during the job's lifetime).
    """
    if data_time is None:
        return None
    for run in runs:
        if run.trigger == "continuous":
            if (run.started or 0.0) <= data_time + 1.0 and (run.ended is None or data_time <= run.ended + 1.0):
                return run
            continue
        if run.status is not RunStatus.SUCCEEDED:
            continue
        as_of = run.started
        if run.partition:
            try:
                as_of = datetime.datetime.fromisoformat(run.schedule_time or "").timestamp()
            except ValueError:
                continue
        if as_of is not None and abs(as_of - data_time) < 0.5:
            return run
    return None

