"""CatalogManager: the named catalogs, the default catalog and name resolution."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from catalogd import not_found
from catalogd.catalog import load_catalog
from catalogd.catalog.base import BaseCatalog, Catalog
from catalogd.catalog.reserved import check_client_metadata
from catalogd.config import CatalogConfig, Config, TlsConfig, hms_prefix_of
from catalogd.errors import (
    CatalogNotFoundError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ViewAlreadyExistsError,
    ViewNotFoundError,
)
from catalogd.model import (
    CatalogInfo,
    Column,
    Database,
    DatabaseUpdate,
    Function,
    Partition,
    ReloadResult,
    Stage,
    StageRequest,
    Table,
    TableKind,
    TableUpdate,
    ViewUpdate,
)
from catalogd.names import NamespacePath, ObjectPath, split_name

if TYPE_CHECKING:
    from catalogd.catalog.hms_cache import MetadataCache
    from catalogd.views import ExpandedView

#: Catalog keys the manager applies itself: a change of only these keeps the open catalog.
_MANAGER_KEYS = {"default", "read_only", "atomic_writes"}
#: Sections that apply at the next start only (field name, YAML name).
_RESTART_SECTIONS = (("server", "server"), ("staging", "staging"), ("spark", "spark"),
                     ("dynamic_tables", "dynamic-tables"), ("cache", "cache"), ("cluster", "cluster"))


def _backend(conf: CatalogConfig) -> dict[str, Any]:
    return conf.model_dump(exclude=_MANAGER_KEYS)


def parse_stage_id(stage_id: str) -> tuple[str, str, str]:
    """``catalog.database.key`` -> its three parts.

    Raises:
        InvalidArgumentError: not a stage id.
    """
    try:
        parts = split_name(stage_id or "")
    except InvalidArgumentError:
        parts = []
    if len(parts) != 3:
        raise InvalidArgumentError(
            f"bad stage id {stage_id!r}: expected catalog.database.<16 hex digits>, as begin answered"
        )
    return parts[0], parts[1], parts[2]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServedEndpoint:
    """catalogd's HMS endpoint as clients reach it: what catalog infos (and ``spark-conf``) show.

    Known only once the endpoint listens (its port may be chosen then), so the daemon hands
    it over with ``CatalogManager.serve_endpoint`` after binding, as one value.
    """

    #: ``thrift://host:port``.
    uri: str
    #: The endpoint's TLS settings (None: plain).
    tls: TlsConfig | None = None
    #: The endpoint's Kerberos service principal (None: no Kerberos).
    kerberos_principal: str | None = None
    #: The Iceberg REST catalog's URI on the HTTP port (``http(s)://host:port/iceberg``; None: not served).
    iceberg_uri: str | None = None


class CatalogManager:
    """Holds the open catalogs of one config and resolves names against them.

    A missing catalog part means the default catalog; a missing database part
    means that catalog's ``default-database``. Read-only catalogs refuse every
    write with PermissionDeniedError before the backend sees it.
    """

    def __init__(self, config: Config, cache: MetadataCache | None = None) -> None:
        self.config = config
        #: The daemon's one metadata cache, handed to every hive catalog (None: no cache).
        self.cache = cache
        self._confs: dict[str, CatalogConfig] = {c.name: c for c in config.catalogs}
        self._catalogs: dict[str, Catalog] = {}
        self._lock = threading.RLock()
        self._reload_lock = threading.Lock()
        #: Called with ("drop" | "rename", catalog, database, table) before a table is
        #: dropped or renamed, ("drop-database", catalog, database, "") before a cascading
        #: database drop (the dynamic-table service stops the tables' jobs first).
        self.table_hooks: list[Callable[[str, str, str, str], None]] = []
        #: Called with (catalog, database, table) before ``get_table`` reads: returns once no
        #: Iceberg multi-table commit is moving the table's pointer (set by the Iceberg door).
        self.table_gate: Callable[[str, str, str], None] | None = None
        #: catalogd's HMS endpoint, once it listens (None: not yet, or a manager without one).
        self._endpoint: ServedEndpoint | None = None

    def serve_endpoint(self, endpoint: ServedEndpoint) -> None:
        """Show ``endpoint`` in every catalog's info from now on; called once, after it is bound.

        Raises:
            InternalError: an endpoint was handed over already (one daemon binds one endpoint).
        """
        if self._endpoint is not None:
            raise InternalError(f"the HMS endpoint is {self._endpoint.uri} already, not {endpoint.uri}")
        self._endpoint = endpoint

    # ------------------------------------------------------------ lifecycle

    def open(self) -> None:
        """Open every configured catalog; on a failure close those already open and re-raise."""
        try:
            for conf in self.config.catalogs:
                catalog = load_catalog(conf, self.config, self.cache)
                logger.info("opening catalog %s (%s)", conf.name, conf.type)
                catalog.open()
                self._catalogs[conf.name] = catalog
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for name, catalog in reversed(list(self._catalogs.items())):
            try:
                catalog.close()
            except Exception:
                logger.exception("closing catalog %s failed", name)
        self._catalogs.clear()

    # ------------------------------------------------------------ reload

    def _conf(self, name: str) -> CatalogConfig:
        conf = self._confs.get(name)
        if conf is None:  # removed by a reload while a request was on its way
            raise CatalogNotFoundError(f"catalog {name!r} does not exist (any more)")
        return conf

    def reload(self, config: Config, grace: float = 10.0) -> ReloadResult:
        """Switch to ``config``'s catalogs without dropping requests in flight.

        New and changed catalogs are opened before anything is switched; if one fails
        the running set stays. Catalogs removed or replaced are closed ``grace`` seconds
        after the switch, so requests already holding them finish. A changed *embedded*
        catalog is the exception: its metastore must stop before the new one starts.
        Sections other than ``catalogs`` (server, staging, spark, dynamic-tables, cache, cluster) apply
        at the next start; the result names the ones that changed.

        Raises:
            CatalogError: a catalog failed to open (nothing was changed).
        """
        with self._reload_lock:
            running = self.config
            merged = config.model_copy(update={
                "server": running.server, "staging": running.staging,
                "spark": running.spark, "dynamic_tables": running.dynamic_tables, "cache": running.cache,
                "cluster": running.cluster,
            })
            old, new = dict(self._confs), {c.name: c for c in merged.catalogs}
            added = [n for n in new if n not in old]
            removed = [n for n in old if n not in new]
            changed = [n for n in new if n in old and _backend(new[n]) != _backend(old[n])]
            flags = [n for n in new if n in old and n not in changed and new[n] != old[n]]
            restart = [alias for field, alias in _RESTART_SECTIONS if getattr(config, field) != getattr(running, field)]
            opened: dict[str, Catalog] = {}
            try:
                for name in added + [n for n in changed if not old[n].is_embedded]:
                    catalog = load_catalog(new[name], merged, self.cache)
                    logger.info("reload: opening catalog %s (%s)", name, new[name].type)
                    catalog.open()
                    opened[name] = catalog
                for name in [n for n in changed if old[n].is_embedded]:
                    opened[name] = self._restart_embedded(name, old[name], new[name], merged, running)
            except BaseException:
                for catalog in opened.values():
                    catalog.close()
                raise
            with self._lock:
                retired = [self._catalogs.pop(n) for n in removed if n in self._catalogs]
                retired += [self._catalogs[n] for n in changed if n in self._catalogs and not old[n].is_embedded]
                self._catalogs.update(opened)
                self._confs = new
                self.config = merged
            if self.cache is not None:
                # A catalog removed or pointed at another metastore: nothing read from the old one holds.
                for name in removed + changed:
                    # This daemon's catalogs changed, not the metastore: nothing for the other members.
                    self.cache.invalidate(name, announce=False)
            if retired:
                timer = threading.Timer(grace, self._close_all, args=(retired,))
                timer.daemon = True
                timer.start()
            result = ReloadResult(added=sorted(added), removed=sorted(removed), changed=sorted(changed + flags),
                                  unchanged=sorted(n for n in new if n in old and n not in changed + flags),
                                  restart_needed=restart, source=config.source)
            logger.info("reloaded %s: added %s, removed %s, changed %s%s", config.source, result.added,
                        result.removed, result.changed,
                        f"; restart to apply {', '.join(restart)}" if restart else "")
            return result

    def _restart_embedded(self, name: str, old: CatalogConfig, new: CatalogConfig, merged: Config,
                          running: Config) -> Catalog:
        """Stop an embedded metastore and start it with its new settings (or the old ones again)."""
        with self._lock:
            current = self._catalogs.get(name)
        if current is not None:
            current.close()
        try:
            catalog = load_catalog(new, merged, self.cache)
            catalog.open()
            return catalog
        except BaseException:
            logger.exception("reload: catalog %s did not start with its new settings; restarting the old ones", name)
            previous = load_catalog(old, running, self.cache)
            previous.open()
            with self._lock:
                self._catalogs[name] = previous
            raise

    @staticmethod
    def _close_all(catalogs: list[Catalog]) -> None:
        for catalog in catalogs:
            try:
                catalog.close()
            except Exception:
                logger.exception("closing retired catalog %s failed", catalog.name)

    # ------------------------------------------------------------ catalogs

    @property
    def default_catalog(self) -> str:
        return self.config.default_catalog.name

    def catalog(self, name: str | None = None) -> BaseCatalog:
        name = name or self.default_catalog
        with self._lock:
            catalog = self._catalogs.get(name)
        if catalog is None:
            known = ", ".join(sorted(self._catalogs)) or "none"
            raise CatalogNotFoundError(f"catalog {name!r} does not exist (catalogs: {known})")
        assert isinstance(catalog, BaseCatalog)
        return catalog

    def catalogs(self) -> dict[str, Catalog]:
        with self._lock:
            return dict(self._catalogs)

    def catalog_info(self, name: str | None = None) -> CatalogInfo:
        catalog = self.catalog(name)
        conf = self._conf(catalog.name)
        info = catalog.info()
        info.default = catalog.name == self.default_catalog
        info.default_database = conf.default_namespace
        info.read_only = conf.read_only
        # The backend may have nothing to stage (memory): then no config makes its writes atomic.
        info.atomic_writes = conf.atomic_writes and info.atomic_writes
        endpoint = self._endpoint
        info.hms_endpoint = endpoint.uri if endpoint is not None else None
        if endpoint is not None and endpoint.tls is not None:
            info.hms_tls = True
            info.hms_truststore = str(endpoint.tls.truststore) if endpoint.tls.truststore else None
            info.hms_truststore_password_env = endpoint.tls.truststore_password_env if endpoint.tls.truststore else None
        if endpoint is not None:
            info.hms_kerberos_principal = endpoint.kerberos_principal
            info.iceberg_uri = endpoint.iceberg_uri
        info.hms_prefix = hms_prefix_of(conf)
        return info

    def catalogs_sharing(self, name: str) -> list[str]:
        """The other hive catalogs on the same metastore as ``name`` (an address in common)."""
        from catalogd.catalog.hive import HiveCatalog

        catalogs = self.catalogs()
        mine = catalogs.get(name)
        if not isinstance(mine, HiveCatalog):
            return []
        addresses = set(mine.session.addresses())
        return [other for other, catalog in catalogs.items()
                if other != name and isinstance(catalog, HiveCatalog) and addresses & set(catalog.session.addresses())]

    def list_catalogs(self) -> list[CatalogInfo]:
        return [self.catalog_info(name) for name in sorted(self.catalogs())]

    def check_writable(self, catalog: Catalog) -> None:
        """Raises PermissionDeniedError for a read-only catalog."""
        if self._conf(catalog.name).read_only:
            raise PermissionDeniedError(f"catalog {catalog.name!r} is read-only")

    def _namespace(self, path: NamespacePath) -> tuple[BaseCatalog, str]:
        return self.catalog(path.catalog), path.database

    def resolve_object(self, path: ObjectPath) -> tuple[BaseCatalog, str, str]:
        """The catalog, database and name a path means (defaults filled in)."""
        catalog = self.catalog(path.catalog)
        return catalog, path.database or self._conf(catalog.name).default_namespace, path.name

    @contextlib.contextmanager
    def _helpful(self, catalog: BaseCatalog, database: str, name: str | None = None,
                 kind: str = "table") -> Iterator[None]:
        """Not-found errors of the block name a missing database and suggest the closest names."""
        try:
            yield
        except NotFoundError as e:
            better = not_found.explain(e, catalog, database, name, kind)
            if better is e:
                raise
            raise better from e

    @contextlib.contextmanager
    def helpful_not_found(self, path: ObjectPath, kind: str = "table") -> Iterator[None]:
        """``_helpful`` for callers that hold only a path (dynamic tables)."""
        catalog, database, name = self.resolve_object(path)
        with self._helpful(catalog, database, name, kind):
            yield

    def explain_not_found(self, error: NotFoundError, path: ObjectPath, kind: str = "table") -> NotFoundError:
        """``error`` about ``path``, naming a missing database and suggesting close names (see ``not_found``)."""
        catalog, database, name = self.resolve_object(path)
        return not_found.explain(error, catalog, database, name, kind)

    # ------------------------------------------------------------ databases

    def list_databases(self, catalog: str | None) -> list[str]:
        return self.catalog(catalog).list_databases()

    def get_database(self, path: NamespacePath) -> Database:
        catalog, db = self._namespace(path)
        with self._helpful(catalog, db):
            return catalog.get_database(db)

    def database_exists(self, path: NamespacePath) -> bool:
        catalog, db = self._namespace(path)
        return catalog.database_exists(db)

    def create_database(self, database: Database, ignore_if_exists: bool = False) -> None:
        catalog = self.catalog(database.catalog or None)
        self.check_writable(catalog)
        check_client_metadata(f"database {catalog.name}.{database.name}", database.properties, [database.comment])
        catalog.create_database(database, ignore_if_exists)

    def alter_database(self, path: NamespacePath, update: DatabaseUpdate) -> None:
        catalog, db = self._namespace(path)
        self.check_writable(catalog)
        check_client_metadata(f"database {catalog.name}.{db}", [*update.set_properties, *update.unset_properties],
                              [update.comment])
        with self._helpful(catalog, db):
            catalog.alter_database(db, update)

    def rename_database(self, path: NamespacePath, new_name: str, ignore_if_not_exists: bool = False) -> None:
        catalog, db = self._namespace(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db):
            catalog.rename_database(db, new_name, ignore_if_not_exists)

    def drop_database(self, path: NamespacePath, ignore_if_not_exists: bool = False, cascade: bool = False,
                      drop_foreign: bool = False) -> None:
        """``drop_foreign``: objects catalogd did not create go too (the caller checked it is an admin's word)."""
        catalog, db = self._namespace(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db):
            if cascade:
                for hook in self.table_hooks:
                    hook("drop-database", catalog.name, db, "")
            catalog.drop_database(db, ignore_if_not_exists, cascade, drop_foreign=drop_foreign)

    # ------------------------------------------------------------ tables

    def list_tables(self, path: NamespacePath) -> list[str]:
        catalog, db = self._namespace(path)
        with self._helpful(catalog, db):
            return catalog.list_tables(db)

    def get_table(self, path: ObjectPath) -> Table:
        catalog, db, name = self.resolve_object(path)
        gate = self.table_gate
        if gate is not None:
            gate(catalog.name, db, name)
        with self._helpful(catalog, db, name, "table"):
            return catalog.get_table(db, name)

    def table_exists(self, path: ObjectPath) -> bool:
        catalog, db, name = self.resolve_object(path)
        return catalog.table_exists(db, name)

    def create_table(self, table: Table, ignore_if_exists: bool = False) -> Table:
        catalog = self.catalog(table.catalog or None)
        self.check_writable(catalog)
        table.catalog = catalog.name
        table.database = table.database or self._conf(catalog.name).default_namespace
        # A forged definition or stage mark would be believed (a jdbc catalog keeps them in the comment).
        check_client_metadata(f"table {catalog.name}.{table.database}.{table.name}", table.properties,
                              [table.comment])
        with self._helpful(catalog, table.database):
            return catalog.create_table(table, ignore_if_exists)

    def alter_table(self, path: ObjectPath, update: TableUpdate) -> Table:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        check_client_metadata(f"table {catalog.name}.{db}.{name}", [*update.set_properties, *update.unset_properties],
                              [update.comment])
        with self._helpful(catalog, db, name, "table"):
            return catalog.alter_table(db, name, update)

    def rename_table(self, path: ObjectPath, new_name: str, ignore_if_not_exists: bool = False) -> None:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db, name, "table"):
            for hook in self.table_hooks:
                hook("rename", catalog.name, db, name)
            catalog.rename_table(db, name, new_name, ignore_if_not_exists)

    def drop_table(self, path: ObjectPath, ignore_if_not_exists: bool = False, purge: bool = False,
                   drop_foreign: bool = False) -> None:
        """``drop_foreign``: a table catalogd did not create goes too (the caller checked it is an admin's word)."""
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db, name, "table"):
            for hook in self.table_hooks:
                hook("drop", catalog.name, db, name)
            catalog.drop_table(db, name, ignore_if_not_exists, purge, drop_foreign=drop_foreign)

    # ------------------------------------------------------------ functions

    def list_functions(self, path: NamespacePath) -> list[str]:
        catalog, db = self._namespace(path)
        with self._helpful(catalog, db):
            return catalog.list_functions(db)

    def get_function(self, path: ObjectPath) -> Function:
        catalog, db, name = self.resolve_object(path)
        with self._helpful(catalog, db, name, "function"):
            return catalog.get_function(db, name)

    def create_function(self, function: Function, ignore_if_exists: bool = False) -> Function:
        catalog = self.catalog(function.catalog or None)
        self.check_writable(catalog)
        function.catalog = catalog.name
        function.database = function.database or self._conf(catalog.name).default_namespace
        with self._helpful(catalog, function.database):
            return catalog.create_function(function, ignore_if_exists)

    def alter_function(self, path: ObjectPath, function: Function) -> Function:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db, name, "function"):
            return catalog.alter_function(db, name, function)

    def rename_function(self, path: ObjectPath, new_name: str, ignore_if_not_exists: bool = False) -> None:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db, name, "function"):
            catalog.rename_function(db, name, new_name, ignore_if_not_exists)

    def drop_function(self, path: ObjectPath, ignore_if_not_exists: bool = False) -> None:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db, name, "function"):
            catalog.drop_function(db, name, ignore_if_not_exists)

    # ------------------------------------------------------------ views

    def expand_query(self, catalog: BaseCatalog, database: str, query: str, kind: str = "view") -> ExpandedView:
        """Validate a view's or dynamic table's query against the catalog and expand it.

        Args:
            kind: what the query defines ("view", "dynamic table"), for the error messages.
        """
        from catalogd.views import expand_view

        # Fresh: the expansion is stored with the view or dynamic table (a write), so it is
        # made against the metastore's tables as they are now.
        fresh = catalog.fresh()

        def resolve(db: str, table: str) -> list[Column]:
            found = fresh.get_table(db, table)
            return [*found.columns, *found.partition_keys]

        return expand_view(query, database, catalog.name, resolve, kind)

    def list_views(self, path: NamespacePath) -> list[str]:
        catalog, db = self._namespace(path)
        with self._helpful(catalog, db):
            return catalog.list_views(db)

    def get_view(self, path: ObjectPath) -> Table:
        catalog, db, name = self.resolve_object(path)
        with self._helpful(catalog, db, name, "view"):
            return catalog.get_view(db, name)

    def create_view(self, view: Table, ignore_if_exists: bool = False) -> Table:
        """Validate and expand ``view.view_text`` against the catalog, then create the view."""
        catalog = self.catalog(view.catalog or None)
        self.check_writable(catalog)
        view.catalog = catalog.name
        view.database = view.database or self._conf(catalog.name).default_namespace
        view.kind = TableKind.VIEW
        check_client_metadata(f"view {catalog.name}.{view.database}.{view.name}", view.properties, [view.comment])
        if ignore_if_exists:
            try:
                return catalog.get_view(view.database, view.name)
            except ViewNotFoundError as e:
                if catalog.table_exists(view.database, view.name):
                    raise ViewAlreadyExistsError(
                        f"{catalog.name}.{view.database}.{view.name} already exists and is a table, not a view"
                    ) from e
        expanded = self.expand_query(catalog, view.database, view.view_text or "")
        view.view_text, view.view_expanded_text, view.columns = expanded.original, expanded.expanded, expanded.columns
        with self._helpful(catalog, view.database):
            return catalog.create_view(view, ignore_if_exists)

    def alter_view(self, path: ObjectPath, update: ViewUpdate) -> Table:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        check_client_metadata(f"view {catalog.name}.{db}.{name}", [*update.set_properties, *update.unset_properties],
                              [update.comment])
        with self._helpful(catalog, db, name, "view"):
            catalog.get_view(db, name)
            if update.query is not None:
                expanded = self.expand_query(catalog, db, update.query)
                update.query, update.expanded_text, update.columns = (
                    expanded.original, expanded.expanded, expanded.columns)
            return catalog.alter_view(db, name, update)

    def rename_view(self, path: ObjectPath, new_name: str, ignore_if_not_exists: bool = False) -> None:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db, name, "view"):
            catalog.rename_view(db, name, new_name, ignore_if_not_exists)

    def drop_view(self, path: ObjectPath, ignore_if_not_exists: bool = False) -> None:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db, name, "view"):
            catalog.drop_view(db, name, ignore_if_not_exists)

    # ------------------------------------------------------------ partitions

    def list_partitions(self, path: ObjectPath, filter: str | None = None) -> list[Partition]:
        catalog, db, name = self.resolve_object(path)
        with self._helpful(catalog, db, name, "table"):
            return catalog.list_partitions(db, name, filter)

    def get_partition(self, path: ObjectPath, spec: dict[str, str]) -> Partition:
        catalog, db, name = self.resolve_object(path)
        with self._helpful(catalog, db, name, "table"):
            return catalog.get_partition(db, name, spec)

    def add_partition(self, path: ObjectPath, spec: dict[str, str], location: str | None = None,
                      ignore_if_exists: bool = False) -> Partition:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db, name, "table"):
            return catalog.add_partition(db, name, spec, location, ignore_if_exists)

    def drop_partition(self, path: ObjectPath, spec: dict[str, str], ignore_if_not_exists: bool = False,
                       purge: bool = False) -> None:
        catalog, db, name = self.resolve_object(path)
        self.check_writable(catalog)
        with self._helpful(catalog, db, name, "table"):
            catalog.drop_partition(db, name, spec, ignore_if_not_exists, purge)

    # ------------------------------------------------------------ stages

    def _stage(self, stage_id: str, write: bool = True) -> tuple[BaseCatalog, str, str]:
        catalog_name, database, key = parse_stage_id(stage_id)
        catalog = self.catalog(catalog_name)
        if write:
            self.check_writable(catalog)
        return catalog, database, key

    def begin_stage(self, request: StageRequest) -> Stage:
        catalog = self.catalog(request.catalog or None)
        self.check_writable(catalog)
        request.catalog = catalog.name
        request.database = request.database or self._conf(catalog.name).default_namespace
        # The properties and comment the target gets at commit (the stagers refuse reserved keys too).
        check_client_metadata(f"stage of {catalog.name}.{request.database}.{request.target}", request.properties,
                              [request.comment])
        return catalog.begin_stage(request)

    def get_stage(self, stage_id: str) -> Stage:
        catalog, database, key = self._stage(stage_id, write=False)
        return catalog.get_stage(database, key)

    def list_stages(self, catalog: str | None) -> list[Stage]:
        return self.catalog(catalog).list_stages()

    def heartbeat_stage(self, stage_id: str, lease: float | None = None) -> Stage:
        catalog, database, key = self._stage(stage_id)
        return catalog.heartbeat_stage(database, key, lease)

    def commit_stage(self, stage_id: str) -> Stage:
        catalog, database, key = self._stage(stage_id)
        return catalog.commit_stage(database, key)

    def abort_stage(self, stage_id: str, writer_stopped: bool = False) -> Stage:
        catalog, database, key = self._stage(stage_id)
        return catalog.abort_stage(database, key, writer_stopped)

    def janitor_pass(self, startup: bool = False, fence: Callable[[], bool] | None = None) -> int:
        """One janitor sweep over every writable catalog; a failing catalog does not stop the others.

        ``fence``: in a cluster, whether this member leads (asked before each stage is acted on).
        """
        acted = 0
        for name, catalog in self.catalogs().items():
            if self._conf(name).read_only:
                continue
            if fence is not None and not fence():
                break
            try:
                acted += catalog.janitor_pass(startup, fence)
            except Exception as e:
                logger.warning("janitor: catalog %s: %s", name, e)
        return acted

    def ping(self, timeout: float = 1.5) -> dict[str, str | None]:
        """Check every catalog at once; maps catalog name to None (fine) or the problem.

        Answers within about ``timeout`` seconds whatever the metastores do: a catalog
        that has not answered by then is reported as not answering.
        """
        catalogs = self.catalogs()
        lock = threading.Lock()
        result: dict[str, str | None] = {name: f"no answer within {timeout:g}s" for name in catalogs}

        def check(name: str, catalog: Catalog) -> None:
            try:
                catalog.ping(timeout)
                problem = None
            except Exception as e:
                problem = str(e)
            with lock:
                result[name] = problem

        threads = [threading.Thread(target=check, args=item, name=f"ping-{item[0]}", daemon=True)
                   for item in catalogs.items()]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + timeout + 0.2
        for thread in threads:
            thread.join(max(deadline - time.monotonic(), 0))
        with lock:
            return dict(result)
