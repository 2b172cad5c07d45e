"""The Thrift handler of CatalogService: RPC names -> CatalogManager calls.

Every RPC goes through ``_rpc``, the one place where the caller's role is checked (with auth
on: ``catalogd.auth.operations.THRIFT_ROLES`` on the catalog the call names, plus the stage
owner for heartbeat, commit and abort), where writes and denials are audited, where catalogd
errors become IDL exceptions, where bugs are logged, and where metrics are recorded.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from catalogd import __version__, wire
from catalogd.auth.model import ANONYMOUS, Principal, Role
from catalogd.auth.operations import OWNED_STAGE_RPCS, THRIFT_ROLES
from catalogd.dynamic.run_events import parse_wait
from catalogd.errors import CatalogError, InvalidArgumentError, NotFoundError, PermissionDeniedError
from catalogd.gen.catalogd_thrift import ttypes as t
from catalogd.manager import CatalogManager, parse_stage_id
from catalogd.model import ClusterStatus
from catalogd.names import ObjectPath, parse_object, split_name
from catalogd.server.access import JOB_WRITES, NOT_AUTHENTICATED, Access
from catalogd.server.metrics import Metrics
from catalogd.server.session import Session, current_session

if TYPE_CHECKING:
    from catalogd.dynamic.service import DynamicTables

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

#: The principal of the call running on this thread (``_rpc`` sets it; ANONYMOUS with auth off).
_CALLER: contextvars.ContextVar[Principal] = contextvars.ContextVar("catalogd_caller", default=ANONYMOUS)
#: RPCs whose one string argument is a catalog name (empty: the default catalog).
_CATALOG_ARG = frozenset({"getCatalog", "listDatabases", "listStages", "listDynamicTables"})
#: RPCs whose one string argument is a stage id (``catalog.database.key``).
#: RPCs with a dropForeign argument (its position): it needs an admin.
_DROP_FOREIGN_ARG = {"dropDatabase": 3, "dropTable": 3}
_STAGE_ARG = frozenset({"heartbeatStage", "commitStage", "abortStage", "getStage"})


def _rpc(func: F) -> F:
    name = func.__name__
    needed = THRIFT_ROLES[name]
    writes = needed > Role.READER

    @functools.wraps(func)
    def wrapper(self: CatalogHandler, *args: Any) -> Any:
        start = time.perf_counter()
        outcome = "ok"
        access = self.access
        audited = writes and access is not None and access.audit is not None
        caller = ANONYMOUS
        target: str | None = None
        try:
            if access is not None and access.enabled:
                session = current_session()
                try:
                    caller, target = self._authorize(access, name, needed, session, args)
                except PermissionDeniedError as e:
                    audited = False
                    who = session.principal.name if session is not None and session.principal else None
                    access.record(principal=who, surface="thrift", client=session.peer if session else "local",
                                  operation=name, object=target or self._object_of(name, args), outcome="denied",
                                  detail=e.message)
                    raise
            elif audited:
                target = self._object_of(name, args)
            token = _CALLER.set(caller)
            try:
                result = func(self, *args)
            finally:
                _CALLER.reset(token)
            if audited:
                self._audit(caller, name, target, "ok", None)
            return result
        except CatalogError as e:
            outcome = e.kind
            logger.debug("rpc %s failed: %s: %s", name, e.kind, e.message)
            if audited:
                self._audit(caller, name, target, "error", f"{e.kind}: {e.message}")
            raise wire.error_to_thrift(e) from e
        except Exception as e:
            outcome = "internal"
            logger.exception("rpc %s: unexpected error", name)
            if audited:
                self._audit(caller, name, target, "error", f"internal error: {type(e).__name__}")
            raise t.InternalError(
                message=f"internal error in {name}: {type(e).__name__}: {e} (details in the daemon log)"
            ) from e
        finally:
            self.metrics.requests.labels(name, outcome).inc()
            self.metrics.latency.labels(name).observe(time.perf_counter() - start)

    return wrapper  # type: ignore[return-value]


def _dotted(*parts: str | None) -> str:
    return ".".join(p for p in parts if p)


def _name(value: str | None, what: str) -> str:
    parts = split_name(value or "")
    if len(parts) != 1:
        raise InvalidArgumentError(f"{what} must be a single name, got {value!r}")
    return parts[0]


def _object(path: t.ObjectPath) -> Any:
    p = wire.object_from_thrift(path)
    return type(p)(
        _name(p.catalog, "catalog") if p.catalog else None,
        _name(p.database, "database") if p.database else None,
        _name(p.name, "name"),
    )


def _namespace(path: t.NamespacePath) -> Any:
    p = wire.namespace_from_thrift(path)
    return type(p)(_name(p.catalog, "catalog") if p.catalog else None, _name(p.database, "database"))


class CatalogHandler:
    """Implements ``CatalogService`` (method names follow the IDL)."""

    def __init__(self, manager: CatalogManager, metrics: Metrics, reload: Callable[[], Any] | None = None,
                 dynamic: DynamicTables | None = None, access: Access | None = None,
                 cluster: Callable[[], ClusterStatus] | None = None) -> None:
        self.manager = manager
        self.metrics = metrics
        self._reload = reload
        self._cluster = cluster
        self._dynamic_tables = dynamic
        #: Authentication, roles and the audit log; None: every caller may do everything, unaudited.
        self.access = access

    # ------------------------------------------------------------ who may do what

    def _authorize(self, access: Access, name: str, needed: Role, session: Session | None,
                   args: tuple[Any, ...]) -> tuple[Principal, str | None]:
        """The caller, and the object its call is about, once it may make the call.

        Raises:
            PermissionDeniedError: the connection has not authenticated, or its principal lacks
                the role on the call's catalog, or (heartbeat, commit, abort) the stage is another
                principal's and it is not an admin there, or a refresh job's token reaches beyond
                its table.
        """
        principal = session.principal if session is not None else None
        if principal is None:
            raise PermissionDeniedError(NOT_AUTHENTICATED)
        if name in ("listCatalogs", "getRefreshJob", "clusterStatus"):
            # Not about one catalog: a reader of any may ask (listCatalogs shows only those it reads).
            access.require_any(principal, needed, name)
            return principal, args[0] if args else None
        if name == "reloadConfig":
            access.require(principal, None, needed, name)
            return principal, None
        if name == "executeStatement":
            return principal, self._authorize_statement(access, principal, str(args[0] or ""))
        if name == "refreshDynamicTables":
            tables = list(args[0].tables or [])
            for text in tables:
                access.require(principal, access.catalog(parse_object(text).catalog), needed, name)
            return principal, ", ".join(tables) or None
        if name in _STAGE_ARG:
            return principal, self._authorize_stage(access, principal, name, needed, str(args[0] or ""))
        job_write = False
        if name in _CATALOG_ARG:
            catalog = access.catalog(args[0] or None)
            target = catalog
        else:
            path = self._path_of(args[0])
            catalog = access.catalog(path.catalog)
            target = _dotted(catalog, path.database, path.name)
            if name in JOB_WRITES and principal.job_scope is not None:
                _, database, table = self.manager.resolve_object(ObjectPath(catalog, path.database, path.name))
                job_write = access.in_job_scope(principal, catalog, database, table)
        access.require(principal, catalog, needed, name, job_write=job_write)
        if name in _DROP_FOREIGN_ARG and len(args) > _DROP_FOREIGN_ARG[name] and args[_DROP_FOREIGN_ARG[name]]:
            # Objects catalogd did not create: only an admin's explicit word drops them.
            access.require(principal, catalog, Role.ADMIN, f"{name} with dropForeign (objects catalogd did not create)")
        return principal, target

    def _authorize_stage(self, access: Access, principal: Principal, name: str, needed: Role, stage_id: str) -> str:
        """Heartbeat, commit, abort, get: the role on the stage's catalog; a job's own table; the owner or an admin."""
        catalog = access.catalog(parse_stage_id(stage_id)[0])
        job = principal.job_scope is not None
        if not job:
            access.require(principal, catalog, needed, name)
        if job or name in OWNED_STAGE_RPCS:
            stage = self.manager.get_stage(stage_id)
            if job:
                in_scope = access.in_job_scope(principal, stage.catalog, stage.database, stage.target)
                access.require(principal, catalog, needed, f"{name} of a stage of {stage.catalog}.{stage.database}."
                               f"{stage.target}", job_write=in_scope)
            if name in OWNED_STAGE_RPCS and stage.owner != principal.name:
                # Another principal's stage: only an admin may end or extend it.
                access.require(principal, catalog, Role.ADMIN,
                               f"{name} of stage {stage_id}, which {stage.owner or 'another principal'} began")
        return stage_id

    def _authorize_statement(self, access: Access, principal: Principal, text: str) -> str:
        """A dynamic-table statement needs what its verb needs: SHOW CREATE reader, CREATE and
        REFRESH writer, the others (CREATE OR ALTER too: it may alter) admin."""
        from catalogd.dynamic.statements import (
            AlterAction,
            AlterDynamicTable,
            CreateDynamicTable,
            ShowCreateDynamicTable,
            parse_statement,
        )

        statement = parse_statement(text)
        verb = type(statement).__name__
        refresh = isinstance(statement, AlterDynamicTable) and statement.action is AlterAction.REFRESH
        create = isinstance(statement, CreateDynamicTable) and not statement.or_alter
        needed = (Role.READER if isinstance(statement, ShowCreateDynamicTable)
                  else Role.WRITER if create or refresh else Role.ADMIN)
        path = parse_object(statement.name)
        catalog = access.catalog(path.catalog)
        access.require(principal, catalog, needed, f"executeStatement ({verb})")
        return _dotted(catalog, path.database, path.name)

    @staticmethod
    def _path_of(arg: Any) -> ObjectPath:
        """The catalog, database and name a call's first argument is about (parts may be empty)."""
        if isinstance(arg, t.StageRequest):
            arg = arg.target
        elif isinstance(arg, t.DynamicTableSpec):
            arg = arg.path
        if isinstance(arg, t.ObjectPath):
            return ObjectPath(arg.catalog or None, arg.database or "", arg.name or "")
        if isinstance(arg, t.NamespacePath):
            return ObjectPath(arg.catalog or None, "", arg.database or "")
        if isinstance(arg, t.Database):
            return ObjectPath(arg.catalog or None, "", arg.name or "")
        if isinstance(arg, t.Table | t.Function):
            return ObjectPath(arg.catalog or None, arg.database or "", arg.name or "")
        raise InvalidArgumentError(f"cannot tell which catalog a {type(arg).__name__} is about")

    def _object_of(self, name: str, args: tuple[Any, ...]) -> str | None:
        """What an audit line names as the call's object, when the call was not authorized (auth off, or refused)."""
        if not args:
            return None
        if name == "executeStatement":
            # The table's name, not the text: a statement's options (WITH (...)) may carry a secret.
            from catalogd.dynamic.statements import parse_statement

            try:
                return parse_statement(str(args[0] or "")).name
            except CatalogError:
                return None
        first = args[0]
        if isinstance(first, str):
            return first or None
        if isinstance(first, t.RefreshRequest):
            return ", ".join(first.tables or []) or None
        try:
            path = self._path_of(first)
        except CatalogError:
            return None
        return _dotted(path.catalog or self.manager.default_catalog, path.database, path.name)

    def _audit(self, caller: Principal, name: str, target: str | None, outcome: str, detail: str | None) -> None:
        assert self.access is not None
        session = current_session()
        self.access.record(principal=caller.name, surface="thrift", client=session.peer if session else "local",
                           operation=name, object=target, outcome=outcome, detail=detail)

    def _dynamic(self) -> DynamicTables:
        from catalogd.errors import UnsupportedError

        if self._dynamic_tables is None:
            raise UnsupportedError("this server has no dynamic tables")
        return self._dynamic_tables

    def ping(self) -> str:
        return f"catalogd {__version__}"

    def authenticate(self, token: str) -> str:
        """The connection's principal from now on (open to every caller, as ping is)."""
        session = current_session()
        access = self.access
        try:
            principal = (access.authenticate(token or None, session.peer if session else "local")
                         if access is not None else ANONYMOUS)
        except PermissionDeniedError as e:
            if session is not None:
                session.principal = None  # a wrong token undoes an earlier authentication
            if access is not None:
                access.record(principal=None, surface="thrift", client=session.peer if session else "local",
                              operation="authenticate", object=None, outcome="denied", detail=e.message)
            raise wire.error_to_thrift(e) from None
        except Exception as e:
            logger.exception("rpc authenticate: unexpected error")
            raise t.InternalError(message=f"internal error in authenticate: {type(e).__name__}") from e
        if session is not None:
            session.principal = principal
        return principal.name

    # -- catalogs

    @_rpc
    def listCatalogs(self) -> list[t.CatalogInfo]:
        caller = _CALLER.get()
        found = self.manager.list_catalogs()
        if self.access is not None:
            found = [c for c in found if self.access.allows(caller, c.name, Role.READER)]
        return [wire.catalog_to_thrift(c) for c in found]

    @_rpc
    def getCatalog(self, name: str) -> t.CatalogInfo:
        return wire.catalog_to_thrift(self.manager.catalog_info(_name(name, "catalog") if name else None))

    # -- databases

    @_rpc
    def listDatabases(self, catalog: str) -> list[str]:
        return self.manager.list_databases(_name(catalog, "catalog") if catalog else None)

    @_rpc
    def getDatabase(self, path: t.NamespacePath) -> t.Database:
        return wire.database_to_thrift(self.manager.get_database(_namespace(path)))

    @_rpc
    def databaseExists(self, path: t.NamespacePath) -> bool:
        return self.manager.database_exists(_namespace(path))

    @_rpc
    def createDatabase(self, database: t.Database, ignoreIfExists: bool) -> None:
        db = wire.database_from_thrift(database)
        db.name = _name(db.name, "database")
        db.catalog = _name(db.catalog, "catalog") if db.catalog else ""
        self.manager.create_database(db, bool(ignoreIfExists))

    @_rpc
    def alterDatabase(self, path: t.NamespacePath, update: t.DatabaseUpdate) -> None:
        self.manager.alter_database(_namespace(path), wire.database_update_from_thrift(update))

    @_rpc
    def renameDatabase(self, path: t.NamespacePath, newName: str, ignoreIfNotExists: bool) -> None:
        self.manager.rename_database(_namespace(path), _name(newName, "new database name"), bool(ignoreIfNotExists))

    @_rpc
    def dropDatabase(self, path: t.NamespacePath, ignoreIfNotExists: bool, cascade: bool,
                     dropForeign: bool = False) -> None:
        self.manager.drop_database(_namespace(path), bool(ignoreIfNotExists), bool(cascade),
                                   drop_foreign=bool(dropForeign))

    # -- tables

    @_rpc
    def listTables(self, path: t.NamespacePath) -> list[str]:
        return self.manager.list_tables(_namespace(path))

    @_rpc
    def getTable(self, path: t.ObjectPath) -> t.Table:
        return wire.table_to_thrift(self.manager.get_table(_object(path)))

    @_rpc
    def tableExists(self, path: t.ObjectPath) -> bool:
        return self.manager.table_exists(_object(path))

    @_rpc
    def createTable(self, table: t.Table, ignoreIfExists: bool) -> t.Table:
        tbl = wire.table_from_thrift(table)
        tbl.name = _name(tbl.name, "table")
        tbl.database = _name(tbl.database, "database") if tbl.database else ""
        tbl.catalog = _name(tbl.catalog, "catalog") if tbl.catalog else ""
        return wire.table_to_thrift(self.manager.create_table(tbl, bool(ignoreIfExists)))

    @_rpc
    def alterTable(self, path: t.ObjectPath, update: t.TableUpdate) -> t.Table:
        return wire.table_to_thrift(self.manager.alter_table(_object(path), wire.table_update_from_thrift(update)))

    @_rpc
    def renameTable(self, path: t.ObjectPath, newName: str, ignoreIfNotExists: bool) -> None:
        self.manager.rename_table(_object(path), _name(newName, "new table name"), bool(ignoreIfNotExists))

    @_rpc
    def dropTable(self, path: t.ObjectPath, ignoreIfNotExists: bool, purge: bool, dropForeign: bool = False) -> None:
        self.manager.drop_table(_object(path), bool(ignoreIfNotExists), bool(purge), drop_foreign=bool(dropForeign))

    # -- functions

    @_rpc
    def listFunctions(self, path: t.NamespacePath) -> list[str]:
        return self.manager.list_functions(_namespace(path))

    @_rpc
    def getFunction(self, path: t.ObjectPath) -> t.Function:
        return wire.function_to_thrift(self.manager.get_function(_object(path)))

    @_rpc
    def createFunction(self, function: t.Function, ignoreIfExists: bool) -> t.Function:
        fn = wire.function_from_thrift(function)
        fn.name = _name(fn.name, "function")
        fn.database = _name(fn.database, "database") if fn.database else ""
        fn.catalog = _name(fn.catalog, "catalog") if fn.catalog else ""
        return wire.function_to_thrift(self.manager.create_function(fn, bool(ignoreIfExists)))

    @_rpc
    def alterFunction(self, path: t.ObjectPath, function: t.Function) -> t.Function:
        fn = wire.function_from_thrift(function)
        return wire.function_to_thrift(self.manager.alter_function(_object(path), fn))

    @_rpc
    def renameFunction(self, path: t.ObjectPath, newName: str, ignoreIfNotExists: bool) -> None:
        self.manager.rename_function(_object(path), _name(newName, "new function name"), bool(ignoreIfNotExists))

    @_rpc
    def dropFunction(self, path: t.ObjectPath, ignoreIfNotExists: bool) -> None:
        self.manager.drop_function(_object(path), bool(ignoreIfNotExists))

    # -- views

    @_rpc
    def listViews(self, path: t.NamespacePath) -> list[str]:
        return self.manager.list_views(_namespace(path))

    @_rpc
    def getView(self, path: t.ObjectPath) -> t.Table:
        return wire.table_to_thrift(self.manager.get_view(_object(path)))

    @_rpc
    def createView(self, view: t.Table, ignoreIfExists: bool) -> t.Table:
        tbl = wire.table_from_thrift(view)
        tbl.name = _name(tbl.name, "view")
        tbl.database = _name(tbl.database, "database") if tbl.database else ""
        tbl.catalog = _name(tbl.catalog, "catalog") if tbl.catalog else ""
        return wire.table_to_thrift(self.manager.create_view(tbl, bool(ignoreIfExists)))

    @_rpc
    def alterView(self, path: t.ObjectPath, update: t.ViewUpdate) -> t.Table:
        return wire.table_to_thrift(self.manager.alter_view(_object(path), wire.view_update_from_thrift(update)))

    @_rpc
    def renameView(self, path: t.ObjectPath, newName: str, ignoreIfNotExists: bool) -> None:
        self.manager.rename_view(_object(path), _name(newName, "new view name"), bool(ignoreIfNotExists))

    @_rpc
    def dropView(self, path: t.ObjectPath, ignoreIfNotExists: bool) -> None:
        self.manager.drop_view(_object(path), bool(ignoreIfNotExists))

    # -- partitions

    @_rpc
    def listPartitions(self, path: t.ObjectPath, filter: str) -> list[t.Partition]:
        return [wire.partition_to_thrift(p) for p in self.manager.list_partitions(_object(path), filter or None)]

    @_rpc
    def getPartition(self, path: t.ObjectPath, spec: dict[str, str]) -> t.Partition:
        return wire.partition_to_thrift(self.manager.get_partition(_object(path), dict(spec or {})))

    @_rpc
    def addPartition(self, path: t.ObjectPath, spec: dict[str, str], location: str,
                     ignoreIfExists: bool) -> t.Partition:
        added = self.manager.add_partition(_object(path), dict(spec or {}), location or None, bool(ignoreIfExists))
        return wire.partition_to_thrift(added)

    @_rpc
    def dropPartition(self, path: t.ObjectPath, spec: dict[str, str], ignoreIfNotExists: bool, purge: bool) -> None:
        self.manager.drop_partition(_object(path), dict(spec or {}), bool(ignoreIfNotExists), bool(purge))

    # -- stages (atomic writes)

    @_rpc
    def beginStage(self, request: t.StageRequest) -> t.Stage:
        req = wire.stage_request_from_thrift(request)
        req.target = _name(req.target, "table")
        req.database = _name(req.database, "database") if req.database else ""
        req.catalog = _name(req.catalog, "catalog") if req.catalog else ""
        if self.access is not None and self.access.enabled:
            # The stage is the caller's: only it (or an admin) may heartbeat, commit or abort it.
            req.owner = _CALLER.get().name
        return wire.stage_to_thrift(self.manager.begin_stage(req))

    @_rpc
    def heartbeatStage(self, stageId: str, leaseMillis: int) -> t.Stage:
        if leaseMillis is not None and leaseMillis < 0:
            raise InvalidArgumentError(f"the lease must not be negative, got {leaseMillis} ms")
        lease = leaseMillis / 1000 if leaseMillis else None
        return wire.stage_to_thrift(self.manager.heartbeat_stage(stageId, lease))

    @_rpc
    def commitStage(self, stageId: str) -> t.Stage:
        return wire.stage_to_thrift(self.manager.commit_stage(stageId))

    @_rpc
    def abortStage(self, stageId: str, writerStopped: bool) -> t.Stage:
        return wire.stage_to_thrift(self.manager.abort_stage(stageId, bool(writerStopped)))

    @_rpc
    def getStage(self, stageId: str) -> t.Stage:
        return wire.stage_to_thrift(self.manager.get_stage(stageId))

    @_rpc
    def listStages(self, catalog: str) -> list[t.Stage]:
        stages = self.manager.list_stages(_name(catalog, "catalog") if catalog else None)
        return [wire.stage_to_thrift(s) for s in stages]

    # -- configuration

    @_rpc
    def clusterStatus(self) -> t.ClusterStatus:
        if self._cluster is None:
            return wire.cluster_status_to_thrift(ClusterStatus(clustered=False, leading=True))
        return wire.cluster_status_to_thrift(self._cluster())

    @_rpc
    def reloadConfig(self) -> t.ReloadResult:
        from catalogd.errors import ConfigError, UnsupportedError

        if self._reload is None:
            raise UnsupportedError("this server cannot reload its configuration")
        try:
            result = self._reload()
        except ConfigError as e:
            lines = "\n".join(e.problems or [e.message])
            raise InvalidArgumentError("configuration rejected; the running one stays:\n" + lines) from e
        return wire.reload_result_to_thrift(result)

    # -- dynamic tables

    @_rpc
    def createDynamicTable(self, spec: t.DynamicTableSpec, ignoreIfExists: bool) -> t.DynamicTable:
        model = wire.dynamic_spec_from_thrift(spec)
        path = _object(spec.path)
        model.catalog, model.database, model.name = path.catalog or "", path.database or "", path.name
        return wire.dynamic_table_to_thrift(self._dynamic().create(model, bool(ignoreIfExists)))

    @_rpc
    def getDynamicTable(self, path: t.ObjectPath) -> t.DynamicTable:
        p = _object(path)
        with self.manager.helpful_not_found(p):
            return wire.dynamic_table_to_thrift(self._dynamic().get(p))

    @_rpc
    def listDynamicTables(self, catalog: str, database: str) -> list[t.DynamicTable]:
        found = self._dynamic().list_tables(_name(catalog, "catalog") if catalog else None,
                                     _name(database, "database") if database else None)
        return [wire.dynamic_table_to_thrift(dt) for dt in found]

    @_rpc
    def alterDynamicTable(self, path: t.ObjectPath, change: t.DynamicTableChange) -> t.DynamicTable:
        p = _object(path)
        with self.manager.helpful_not_found(p):
            return wire.dynamic_table_to_thrift(self._dynamic().alter(p, wire.dynamic_change_from_thrift(change)))

    @_rpc
    def dropDynamicTable(self, path: t.ObjectPath, ignoreIfNotExists: bool) -> None:
        p = _object(path)
        with self.manager.helpful_not_found(p):
            self._dynamic().drop(p, bool(ignoreIfNotExists))

    @_rpc
    def refreshDynamicTables(self, request: t.RefreshRequest) -> t.RefreshJob:
        trigger = request.trigger or "manual"
        if trigger not in ("manual", "api"):
            raise InvalidArgumentError(f"trigger {trigger!r}: use manual or api")
        tables = list(request.tables or [])
        try:
            job = self._dynamic().refresh(tables, request.scheduleTime or None, dict(request.partition or {}) or None,
                                          dict(request.configuration or {}), trigger)
        except NotFoundError as e:
            better = self._refresh_not_found(e, tables)
            if better is e:
                raise
            raise better from e
        return wire.refresh_job_to_thrift(job)

    def _refresh_not_found(self, error: NotFoundError, tables: list[str]) -> NotFoundError:
        """The first of ``tables`` that does not exist explains ``error`` (a typo gets its suggestion)."""
        for text in tables:
            try:
                path = parse_object(text)
                if not self.manager.table_exists(path):
                    return self.manager.explain_not_found(error, path)
            except CatalogError:
                continue
        return error

    @_rpc
    def getRefreshJob(self, jobId: str, waitSeconds: float | None = None) -> t.RefreshJob:
        # A long poll holds this worker: the service lets only a few wait at once (MAX_BLOCKING_WAITS).
        return wire.refresh_job_to_thrift(self._dynamic().get_job(jobId, parse_wait(waitSeconds)))

    @_rpc
    def dynamicTableHistory(self, path: t.ObjectPath, limit: int) -> list[t.RefreshRun]:
        p = _object(path)
        with self.manager.helpful_not_found(p):
            return [wire.refresh_run_to_thrift(r) for r in self._dynamic().history(p, int(limit or 0))]

    @_rpc
    def executeStatement(self, statement: str) -> t.StatementResult:
        return wire.statement_result_to_thrift(self._dynamic().execute(statement))

