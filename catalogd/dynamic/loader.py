"""Which tables this daemon drives, kept in step with HMS: load each catalog's dynamic
tables (at start, after a live reload, and again for those that failed), restore them
(re-derive modes, catch up missed runs) and let go of removed or replaced catalogs."""

from __future__ import annotations

import datetime
import logging
import secrets
import threading
import time
from collections.abc import Callable

from catalogd.config import Config
from catalogd.dynamic import jobspec, store
from catalogd.dynamic.analyzer import Analyzers
from catalogd.dynamic.driver import Driver, initialize_option
from catalogd.dynamic.freshness import derive_mode, parse_freshness, previous_fire_time
from catalogd.dynamic.jobspec import UNSIGNED
from catalogd.dynamic.partitions import parse_formatters
from catalogd.dynamic.records import Records
from catalogd.dynamic.registry import Entry, Registry
from catalogd.dynamic.runs import CUT_OFF, STOPPED
from catalogd.errors import (
    CatalogError,
    InvalidArgumentError,
    MetastoreUnavailableError,
    NotFoundError,
    PermissionDeniedError,
    UnsupportedError,
)
from catalogd.manager import CatalogManager
from catalogd.model import DynamicTable, RefreshMode, RefreshRun, RefreshState, RunStatus

logger = logging.getLogger(__name__)

#: Under the dynamic tables' directory: one empty file per catalog whose tables this daemon
#: loaded since definitions are signed (``Loader._adopting``).
ADOPTED_DIR = "definitions-signed"
#: How often catalogs or tables that failed to load are tried again, seconds.
SYNC_EVERY = 60.0


class Loader:
    """Loads, restores and releases the driven tables of each catalog.

    Args:
        clock: the current time in the daemon's time zone.
    """

    def __init__(self, manager: CatalogManager, config: Config, registry: Registry, records: Records,
                 driver: Driver, analyzers: Analyzers, stopping: threading.Event,
                 clock: Callable[[], datetime.datetime], leading: Callable[[], bool] = lambda: True) -> None:
        self.manager = manager
        self.config = config
        self.registry = registry
        self.records = records
        self.driver = driver
        self.analyzers = analyzers
        self.clock = clock
        self.leading = leading
        self._stopping = stopping
        #: The catalog object each catalog's dynamic tables were loaded from (a live reload
        #: that replaces or removes it is seen by ``sync``), and tables to try again.
        self._loaded: dict[str, object] = {}
        self._retry: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        #: Definitions refused at a load, by full name: their refusal as a run (``refusal``).
        self._refused: dict[str, RefreshRun] = {}
        self._refused_lock = threading.Lock()

    def run(self) -> None:
        """The sync thread: tries again every minute what failed."""
        while not self._stopping.wait(SYNC_EVERY):
            self.sync()

    def sync(self) -> None:
        """Drive the dynamic tables of every hive catalog: at start, after a live reload
        (added catalogs are loaded; removed or replaced ones are let go, their jobs
        stopped), and every minute for catalogs or tables whose metastore failed before."""
        if not self.config.dynamic_tables.enabled or self._stopping.is_set():
            return
        with self._lock:
            # In a cluster only the leader drives tables (it loads them when it takes the lead).
            if not self.leading():
                return
            try:
                self._sync()
            except Exception:  # the next pass tries again; a reload must not fail on it
                logger.exception("loading dynamic tables failed (trying again in a minute)")

    def retry_later(self, catalog: str, database: str, table: str) -> None:
        """Restore this table at the next pass (its create could not be undone)."""
        with self._lock:
            self._retry.add((catalog, database, table))

    def _sync(self) -> None:
        catalogs = self.manager.catalogs()
        for name, loaded in list(self._loaded.items()):
            if catalogs.get(name) is not loaded:
                self._release_catalog(name)
        now = time.time()
        for name, catalog in catalogs.items():
            if name in self._loaded:
                continue
            if catalog.info().read_only:
                # Its refreshes could not write: the daemon (or catalog) that writes the tables drives them.
                self._loaded[name] = catalog
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
            # Found at start by the catalog's location index (hive): one made behind this
            # daemon's back (another member) shows at its next pass, restored at the next sync.
            catalog.watch_parameter(store.FRESHNESS, self._later(name))
            for database, table, params in found:
                self._try_restore(name, database, table, params, now)
            self._adopted(name)
        for name, database, table in sorted(self._retry):
            self._retry.discard((name, database, table))
            if name not in self._loaded or self.registry.get(f"{name}.{database}.{table}") is not None:
                continue
            try:
                # Fresh: restoring decides which jobs run.
                params = dict(self.manager.catalog(name).fresh().get_table(database, table).properties)
            except NotFoundError:
                continue
            except CatalogError:
                self._retry.add((name, database, table))
                continue
            if store.is_dynamic(params):
                self._try_restore(name, database, table, params, now)

    def _later(self, catalog: str) -> Callable[[str, str], None]:
        def found(database: str, table: str) -> None:
            self.retry_later(catalog, database, table)
        return found

    def adopt(self, catalog: str, database: str, table: str, params: dict[str, str]) -> bool:
        """Drive a dynamic table that this daemon does not drive yet but should: one made through
        another member just before this one took the lead (its loader had passed already, and the
        watch that would find it runs later). False when this daemon must not drive it (dynamic
        tables off here, not leading, its catalog not loaded yet) or its restore failed; a refused
        definition's refusal is kept as at a load.
        """
        if not self.config.dynamic_tables.enabled or self._stopping.is_set() or not self.leading():
            return False
        with self._lock:
            if catalog not in self._loaded or not self.leading():
                return False
            self._try_restore(catalog, database, table, params, time.time())
        return self.registry.get(f"{catalog}.{database}.{table}") is not None

    def _try_restore(self, catalog: str, database: str, table: str, params: dict[str, str], now: float) -> None:
        try:
            self.restore(catalog, database, table, params, now)
        except MetastoreUnavailableError as e:
            logger.error("cannot restore dynamic table %s.%s.%s yet (trying again in a minute): %s",
                         catalog, database, table, e)
            self._retry.add((catalog, database, table))
        except Exception as e:  # one bad table must not keep the daemon from starting
            logger.error("cannot restore dynamic table %s.%s.%s (it is not refreshed): %s: %s",
                         catalog, database, table, type(e).__name__, e)

    def release_all(self, why: str) -> None:
        """Stop driving every table (this member no longer leads the cluster); the next ``sync``
        loads them again."""
        with self._lock:
            for name in list(self._loaded):
                self._release_catalog(name, why)
            self._retry.clear()

    def _release_catalog(self, name: str, why: str | None = None) -> None:
        """Stop driving a catalog's tables (removed or replaced by a reload); their
        checkpoints stay for when the catalog comes back."""
        del self._loaded[name]
        released = self.registry.remove_where(lambda e: e.catalog == name)
        self.analyzers.release(name)  # it reads the old catalog's metastore
        for entry in released:
            self.driver.let_go(entry, why or f"catalog {name} changed in the configuration")
        if why is not None:
            if released:
                logger.info("catalog %s: %d dynamic table(s) no longer driven here: %s", name, len(released), why)
        elif released:
            logger.info("catalog %s was removed or replaced: %d dynamic table(s) no longer driven from it",
                        name, len(released))

    def restore(self, catalog_name: str, database: str, name: str, params: dict[str, str], now: float) -> None:
        """Drive a table found in HMS (unless an entry drives it already); on a failure none is left.

        Raises:
            PermissionDeniedError: catalogd did not sign its definition (shown in its history).
            InvalidArgumentError: an unsigned definition from before signing that breaks a rule.
        """
        catalog = self.manager.catalog(catalog_name)
        params = self._signed(catalog_name, database, name, params, now)
        dt = store.decode(catalog_name, database, name, params)
        freshness = parse_freshness(dt.freshness)
        keys = [k.name for k in catalog.fresh().get_table(database, name).partition_keys]
        entry = Entry(catalog_name, database, name, freshness, dt.refresh_mode, dt.state,
                      parse_formatters(dt.options, keys), params.get(store.SOURCE_CATALOG) or None)
        entry.data_time = store.float_param(params, store.DATA_TIME)
        if not self.registry.add(entry):
            return  # created (or restored) meanwhile: that entry drives it
        try:
            self._restore_entry(entry, dt, params, now)
        except BaseException:
            self.registry.remove(entry.full_name, only=entry)
            self.driver.let_go(entry, "its restore failed")
            raise

    def _adopting(self, catalog: str) -> bool:
        """Whether this daemon has yet to load ``catalog``'s dynamic tables since definitions are signed."""
        return not (self.records.jobs.work_dir / ADOPTED_DIR / catalog).exists()

    def _adopted(self, catalog: str) -> None:
        """``catalog``'s tables were loaded once with signing: from now on an unsigned definition is refused."""
        try:
            marks = self.records.jobs.work_dir / ADOPTED_DIR
            marks.mkdir(parents=True, exist_ok=True)
            (marks / catalog).touch()
        except OSError as e:
            logger.warning("cannot note that catalog %s's definitions were adopted (again at the next start): %s",
                           catalog, e)

    def _signed(self, catalog: str, database: str, name: str, params: dict[str, str], now: float) -> dict[str, str]:
        """The parameters of a definition catalogd signed; an unsigned one from before signing
        (no signature, first load of its catalog) is checked and signed now ("adopted").

        Raises:
            PermissionDeniedError: a forged or changed definition, or an unsigned one after the
                first load: shown in the table's history as a refused run (``refusal``), never run.
            InvalidArgumentError: an unsigned one that breaks a rule of ``validation``.
        """
        jobs = self.records.jobs
        full = f"{catalog}.{database}.{name}"
        if jobs.signer.verify(full, params):
            return params
        refusal: CatalogError = PermissionDeniedError(UNSIGNED.format(table=full))
        writable = not self.manager.catalog(catalog).info().read_only
        if store.SIGNATURE not in params and writable and self._adopting(catalog):
            try:
                jobs.check_definition(catalog, database, name, params, signed=False)
            except CatalogError as e:
                refusal = e
            else:
                signed = jobs.signer.signed(full, params)
                self.manager.catalog(catalog).update_table_parameters(database, name, signed)
                logger.warning("dynamic table %s: its definition was written before catalogd signed definitions; "
                               "it keeps every rule, so it is signed now", full)
                return {**params, **signed}
        self._record_refusal(catalog, database, name, refusal, now)
        raise refusal

    def _record_refusal(self, catalog: str, database: str, name: str, refusal: CatalogError, now: float) -> None:
        """Keep a refused definition's refusal, shown as a FAILED run (trigger ``refused``) at the
        head of its history (``refusal``), and log it.

        It is kept in this daemon's memory, made again at each load, not written into the table:
        a daemon does not write into a definition it does not trust (a read-only catalog's, or
        one another daemon signed with another key, which the documentation says not to do).
        """
        full = f"{catalog}.{database}.{name}"
        error = f"{refusal.kind}: {refusal.message}"
        logger.error("dynamic table %s is not driven: %s", full, error)
        with self._refused_lock:
            known = self._refused.get(full)
            if known is None or known.error != error:
                self._refused[full] = RefreshRun(id=secrets.token_hex(8), table=full, trigger="refused",
                                                 status=RunStatus.FAILED, submitted=now, ended=now, error=error)

    def refusal(self, full_name: str) -> RefreshRun | None:
        """Why this daemon refused to drive ``full_name`` at its last load (None: it did not)."""
        with self._refused_lock:
            return self._refused.get(full_name)

    def forget_refusal(self, full_name: str) -> None:
        """The table was dropped or made anew: its old definition's refusal no longer holds."""
        with self._refused_lock:
            self._refused.pop(full_name, None)

    def _restore_entry(self, entry: Entry, dt: DynamicTable, params: dict[str, str], now: float) -> None:
        freshness = entry.freshness
        # Runs the previous daemon left unfinished did not finish.
        runs = store.history(params)
        stale = [r for r in runs if not r.status.finished]
        for run in stale:
            run.status, run.ended = RunStatus.FAILED, run.ended or now
            run.error = run.error or STOPPED
        if stale:
            self.records.update(entry, store.history_params(runs), (store.HISTORY + ".",))
        if dt.declared_mode is None:
            try:
                wanted = derive_mode(freshness, self.config.dynamic_tables.freshness_threshold)
            except InvalidArgumentError as e:
                wanted = entry.mode
                logger.warning("dynamic table %s keeps its %s refresh: %s", entry.full_name, entry.mode.value, e)
            full_only = jobspec.full_only(self.manager.catalog(entry.catalog))
            if wanted is RefreshMode.CONTINUOUS and entry.formatters:
                logger.warning("dynamic table %s keeps its FULL refresh: it has partition date formatters",
                               entry.full_name)
            elif wanted is RefreshMode.CONTINUOUS and full_only is not None:
                logger.warning("dynamic table %s keeps its FULL refresh: %s", entry.full_name, full_only)
            elif wanted is not entry.mode:
                logger.info("dynamic table %s: the freshness threshold changed, %s refresh becomes %s",
                            entry.full_name, entry.mode.value, wanted.value)
                entry.mode = wanted
        if entry.state is RefreshState.SUSPENDED:
            self.records.set_handler(entry)
            return
        # The initial refresh the previous daemon never ran, or that it was cut off in, runs now.
        cut_off = not runs or (runs[0].trigger == "initial" and (runs[0].error or "").startswith(CUT_OFF))
        initial = initialize_option(dt.options) == "on_create" and (entry.state is RefreshState.INITIALIZING
                                                                     or cut_off)
        catch_up = None
        if entry.mode is RefreshMode.FULL and not initial:
            last_fire = previous_fire_time(freshness, self.clock())
            last_done = store.float_param(params, store.LAST_SCHEDULED)
            created = store.float_param(params, store.CREATED) or now
            resumed = store.float_param(params, store.RESUMED)
            if last_fire.timestamp() > max(last_done or 0.0, created, resumed or 0.0):
                catch_up = last_fire
        self.driver.activate(entry, initial=initial, catch_up=catch_up)
