"""Answers one HMS call: routes it to its catalog and applies catalogd's rules on the way.

What catalogd need not change goes to the backing metastore as the bytes the client sent,
and comes back as the bytes the metastore sent (newer clients' fields survive). What it
must change is decoded with hmsclient's IDL:

* names: a prefixed catalog's databases (``<prefix>db`` <-> ``db``), in args, replies and
  the text of views;
* listings: staging tables are left out (they stay reachable by exact name);
* writes: refused on a read-only catalog, on a dynamic table (except its drop), when they
  set or remove ``catalogd.*`` parameters; drops go through catalogd (its deletion rules,
  a dynamic table's job stopped first, the stages of a dropped database aborted);
* reads of databases, tables and partitions are answered from the metadata cache when
  it has them, and every write invalidates what it touched;
* memory catalogs are answered by ``MemoryMetastore``; the lock API by ``LockManager``
  when the default catalog's metastore cannot hold locks (an embedded one);
* with auth enabled, the connection's ``set_ugi`` user must be a principal holding the
  call's role (``catalogd.auth.operations.hms_role``) on the call's catalog (global calls:
  the default catalog); every write and every denial goes to the audit log.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore
from hmsclient.genthrift.hive_metastore import ttypes as hms
from thrift.Thrift import TApplicationException

from catalogd.auth.model import ANONYMOUS
from catalogd.auth.operations import hms_role
from catalogd.catalog.base import RESERVED_PROPERTY_PREFIX, is_stage_table
from catalogd.catalog.hive_codec import DYNAMIC_PREFIX
from catalogd.errors import (
    CatalogError,
    MetastoreUnavailableError,
)
from catalogd.hms import limits, methods, view_text
from catalogd.hms.errors import to_hms_error
from catalogd.hms.federation import Federation, Place, matches_pattern
from catalogd.manager import parse_stage_id
from catalogd.metastore.messages import (
    CALL,
    EXCEPTION,
    ONEWAY,
    REPLY,
    Message,
    decode,
    encode,
    header,
    parse_message,
)
from catalogd.metastore.relay import RelayPool
from catalogd.names import NamespacePath, ObjectPath

if TYPE_CHECKING:
    from catalogd.auth.audit import AuditLog
    from catalogd.auth.model import Authority, Principal
    from catalogd.catalog.hive import HiveCatalog
    from catalogd.hms.server import ClientConnection
    from catalogd.manager import CatalogManager

logger = logging.getLogger(__name__)

__all__ = ["HmsCache", "Router"]

_ARGS = {n[:-5]: getattr(ThriftHiveMetastore, n) for n in dir(ThriftHiveMetastore) if n.endswith("_args")}
_RESULTS = {n[:-7]: getattr(ThriftHiveMetastore, n) for n in dir(ThriftHiveMetastore) if n.endswith("_result")}

#: Listing calls whose answers leave out staging tables.
_LISTINGS = frozenset({
    "get_tables", "get_all_tables", "get_table_meta", "get_table_names_by_filter", "get_table_objects_by_name",
    "get_table_objects_by_name_req", "get_tables_by_type",
})
_LOCK_METHODS = frozenset({"lock", "check_lock", "unlock", "heartbeat", "show_locks"})
#: Global writes a reader makes (locks, transactions, its session's tokens): allowed on a
#: read-only default catalog; every other global write (roles, grants, keys, compactions,
#: file metadata, setMetaConf) is a metadata write and refused there.
_READER_GLOBAL_WRITES = frozenset({
    "lock", "check_lock", "unlock", "heartbeat", "heartbeat_txn_range", "open_txns", "commit_txn", "abort_txn",
    "abort_txns", "get_delegation_token", "renew_delegation_token", "cancel_delegation_token",
})
_DROP_TABLE = frozenset({"drop_table", "drop_table_with_environment_context"})
_DROP_PARTITION = frozenset({"drop_partition", "drop_partition_with_environment_context"})
_CREATE_TABLE = frozenset({"create_table", "create_table_with_environment_context", "create_table_with_constraints"})
_ALTER_TABLE = frozenset({"alter_table", "alter_table_with_environment_context", "alter_table_with_cascade"})
#: Reads answered from the metadata cache (keyed by their exact args).
_CACHED_READS = frozenset({
    "get_database", "get_table", "get_table_req", "get_tables", "get_all_tables", "get_tables_by_type",
    "get_table_objects_by_name", "get_table_objects_by_name_req", "get_partitions", "get_partitions_by_filter",
    "get_partitions_ps", "get_partitions_ps_with_auth", "get_partition_names", "get_partition_names_ps",
    "get_partition", "get_partition_by_name", "get_partition_with_auth", "get_partitions_by_names",
    "get_partitions_with_auth", "get_num_partitions_by_filter", "get_fields", "get_schema",
    "get_fields_with_environment_context", "get_schema_with_environment_context", "get_table_meta",
    "get_partitions_by_expr", "get_function", "get_functions",
})


class HmsCache(Protocol):
    """What the router needs of the metadata cache (``catalogd.catalog.hms_cache``)."""

    def token(self, scope: tuple[str, str, str]) -> int: ...

    def get(self, scope: tuple[str, str, str], key: Hashable) -> bytes | None: ...

    def put(self, scope: tuple[str, str, str], key: Hashable, value: bytes, token: int) -> None: ...

    def invalidate(self, catalog: str, database: str = "", table: str = "") -> None: ...


class LockService(Protocol):
    def lock(self, request: Any, client: str | None = None) -> Any: ...

    def check_lock(self, request: Any) -> Any: ...

    def unlock(self, request: Any) -> None: ...

    def heartbeat(self, request: Any) -> None: ...

    def show_locks(self, request: Any) -> Any: ...


class MemoryStore(Protocol):
    def call(self, method: str, args: Any) -> Any: ...


class _Refused(Exception):
    """A call catalogd answers with an HMS exception (already built)."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.exc = exc


def meta_error(message: str) -> _Refused:
    return _Refused(hms.MetaException(message=message))


@dataclass
class _Call:
    """What one call's authorization found, for its audit line and for listings across catalogs."""

    principal: Principal | None = None
    #: The call writes metadata: its outcome is audited.
    audited: bool = False
    object: str | None = None


#: What the audit log calls a connection that never called set_ugi.
_NO_UGI = "a connection without set_ugi"


@dataclass
class _Route:
    """Where one call goes."""

    catalog: str
    #: The databases the call names, as the catalog knows them.
    places: list[Place]


class Router:
    """The HMS endpoint's call handler (``HmsServer`` calls ``handle`` per message).

    Args:
        manager: the catalogs (looked up per call: a config reload changes them).
        cache: the metadata cache; None: no caching.
        locks: answers the lock API for the default catalog; None: relay it.
        memory_store: the ``MemoryMetastore`` of a memory catalog, by name.
        drop_dynamic: drops a dynamic table as ``dt drop`` does (its job stopped first).
        max_message: the largest reply relayed.
        authority: who may do what; None: everyone may do everything.
        audit: where writes and denials are recorded; None: nowhere.
    """

    def __init__(self, manager: CatalogManager, *, cache: HmsCache | None = None,
                 locks: LockService | None = None, memory_store: Callable[[str], MemoryStore] | None = None,
                 drop_dynamic: Callable[[ObjectPath], None] | None = None,
                 max_message: int = 256 * 1024 * 1024, authority: Authority | None = None,
                 audit: AuditLog | None = None) -> None:
        self.manager = manager
        self.authority = authority
        self.audit = audit
        self.cache = cache
        self.locks = locks
        self._memory_store = memory_store
        self._drop_dynamic = drop_dynamic
        self._max_message = max_message
        self._pools: dict[tuple[str, int], RelayPool] = {}
        self._pools_lock = threading.Lock()
        self._federation: tuple[object, Federation] | None = None
        #: Calls answered, by method and outcome (for /metrics).
        self.calls: dict[tuple[str, str], int] = {}
        self._calls_lock = threading.Lock()

    # ------------------------------------------------------------ plumbing

    @property
    def federation(self) -> Federation:
        config = self.manager.config
        cached = self._federation
        if cached is None or cached[0] is not config:
            cached = (config, Federation.from_config(config))
            self._federation = cached
        return cached[1]

    def call_counts(self) -> dict[tuple[str, str], int]:
        """A snapshot of the calls answered: (method, outcome) -> count."""
        with self._calls_lock:
            return dict(self.calls)

    def _count(self, method: str, outcome: str) -> None:
        with self._calls_lock:
            key = (method, outcome)
            self.calls[key] = self.calls.get(key, 0) + 1

    def _hive(self, catalog: str) -> HiveCatalog | None:
        from catalogd.catalog.hive import HiveCatalog

        found = self.manager.catalogs().get(catalog)
        return found if isinstance(found, HiveCatalog) else None

    def _pool(self, catalog: HiveCatalog) -> RelayPool:
        session = catalog.session
        key = (catalog.name, id(session))
        with self._pools_lock:
            pool = self._pools.get(key)
            if pool is None:
                for stale in [k for k in self._pools if k[0] == catalog.name]:
                    self._pools.pop(stale).close()
                pool = RelayPool(f"catalog {catalog.name}", session.addresses,
                                 connect_timeout=session.connect_timeout, socket_timeout=session.socket_timeout,
                                 max_in_flight=session.max_concurrent_calls, max_message=self._max_message)
                self._pools[key] = pool
        return pool

    def close(self) -> None:
        with self._pools_lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close()

    def _relay(self, catalog: HiveCatalog, conn: ClientConnection, request: bytes, retry: bool) -> Message:
        try:
            # A metastore being restarted by the supervisor fails now, not after a connect timeout.
            catalog.session.check_up()
        except MetastoreUnavailableError as e:
            raise meta_error(f"catalogd: {e.message}") from e
        try:
            return self._pool(catalog).call(conn.identity, request, retry)
        except MetastoreUnavailableError as e:
            raise meta_error(f"catalogd: {e.message}") from e

    def _upstream(self, catalog: HiveCatalog, conn: ClientConnection, method: str, args: Any,
                  retry: bool = True) -> Any:
        """One decoded call on the catalog's metastore: the result struct."""
        reply = self._relay(catalog, conn, encode(method, CALL, 0, args), retry)
        if reply.type == EXCEPTION:
            error = decode(TApplicationException(), reply.body)
            raise _Refused(hms.MetaException(message=f"metastore: {error.message}"))
        return decode(_RESULTS[method](), reply.body)

    @staticmethod
    def _reply(method: str, seqid: int, result: Any) -> bytes:
        return encode(method, REPLY, seqid, result)

    @staticmethod
    def _error_reply(method: str, seqid: int, exc: Exception) -> bytes:
        result = methods.error_result(method, exc)
        if result is not None:
            return encode(method, REPLY, seqid, result)
        app = TApplicationException(TApplicationException.INTERNAL_ERROR, str(getattr(exc, "message", exc)))
        return encode(method, EXCEPTION, seqid, app)

    # ------------------------------------------------------------ entry

    def handle(self, conn: ClientConnection, message: Message) -> bytes | None:
        method = message.name
        if message.type not in (CALL, ONEWAY):
            app = TApplicationException(TApplicationException.INVALID_MESSAGE_TYPE, "expected a call")
            return encode(method, EXCEPTION, message.seqid, app)
        call = _Call()
        try:
            reply = self._handle(conn, message, call)
            self._count(method, "ok")
            if call.audited:
                self._audit_reply(conn, method, call, reply)
        except _Refused as refused:
            self._count(method, "refused")
            reply = self._error_reply(method, message.seqid, refused.exc)
            if call.audited:
                self._record(conn, method, call, "error", _message_of(refused.exc))
        except CatalogError as e:
            self._count(method, "refused")
            reply = self._error_reply(method, message.seqid, to_hms_error(e, method))
            if call.audited:
                self._record(conn, method, call, "error", f"{e.kind}: {e.message}")
        except Exception as e:  # a bug must not take the connection down with no answer
            self._count(method, "error")
            logger.exception("HMS endpoint: %s from %s failed", method, conn.peer)
            internal = hms.MetaException(message=f"catalogd: internal error: {e}")
            reply = self._error_reply(method, message.seqid, internal)
            if call.audited:
                self._record(conn, method, call, "error", f"internal error: {e}")
        return None if message.type == ONEWAY else reply

    def _handle(self, conn: ClientConnection, message: Message, call: _Call) -> bytes:
        method = message.name
        if method == "set_ugi":
            return self._set_ugi(conn, message)
        kind = methods.kind(method)
        if method in _LOCK_METHODS and self.locks is not None:
            self._authorize(conn, method, kind, self.federation.default, call)
            return self._lock_call(conn, message)
        if kind is None or method not in _ARGS:
            self._authorize(conn, method, kind, self.federation.default, call)
            return self._global(conn, message)
        args = decode(_ARGS[method](), message.body)
        too_large = limits.view_text_error(method, args, self.manager.config.server.hms_max_view_text)
        if too_large is not None:  # before a view's text is parsed or rewritten
            raise _Refused(too_large)
        if method in ("get_databases", "get_all_databases", "get_table_meta"):
            # Across catalogs: a reader of any catalog may list, and sees the catalogs it reads.
            self._authorize(conn, method, kind, None, call)
            if method == "get_table_meta":
                return self._table_meta(conn, message, args, call.principal)
            return self._databases(conn, message, args, call.principal)
        if kind in (methods.Kind.GLOBAL_READ, methods.Kind.GLOBAL_WRITE):
            self._authorize(conn, method, kind, self.federation.default, call)
            if kind is methods.Kind.GLOBAL_WRITE and method not in _READER_GLOBAL_WRITES:
                self._check_writable(self.federation.default, method)
            return self._global(conn, message)
        route = self._route(method, args)
        if route is None:
            self._authorize(conn, method, kind, self.federation.default, call)
            return self._global(conn, message)
        self._authorize(conn, method, kind, route.catalog, call,
                        lambda: ".".join(part for part in self._scope(route, method, args) if part))
        catalog = self.manager.catalogs().get(route.catalog)
        if catalog is None:
            raise _Refused(hms.NoSuchObjectException(message=f"catalogd: no catalog {route.catalog!r}"))
        writes = kind is methods.Kind.WRITE
        if writes:
            self._check_writable(route.catalog, method)
            if method == "create_database":
                _spark_default_location(args.database)
        hive = self._hive(route.catalog)
        if hive is None:
            return self._memory(conn, message, args, route)
        if writes:
            return self._write(conn, message, args, route, hive)
        return self._read(conn, message, args, route, hive)

    # ------------------------------------------------------------ authorization and audit

    def _authorize(self, conn: ClientConnection, method: str, kind: methods.Kind | None, catalog: str | None,
                   call: _Call, obj: Callable[[], str] | None = None) -> None:
        """Refuse the call unless the connection's set_ugi user holds its role on ``catalog``
        (None: on any catalog); note what the audit line of a write needs."""
        needed = hms_role(kind.value if kind is not None else None, method)
        writes = kind is methods.Kind.WRITE or (kind is methods.Kind.GLOBAL_WRITE and method not in
                                                _READER_GLOBAL_WRITES) or kind is None
        call.audited = writes and self.audit is not None
        authority = self.authority
        if call.audited:
            call.object = obj() if obj is not None else catalog
        if authority is None or not authority.enabled:
            call.principal = ANONYMOUS
            return
        user = conn.identity[0] if conn.identity else None
        principal = authority.principal_named(user) if user else None
        call.principal = principal
        if principal is not None:
            if catalog is None:
                if any(authority.allows(principal, name, needed) for name in self.manager.catalogs()):
                    return
            elif authority.allows(principal, catalog, needed):
                return
        who = f"user {user!r}" if user else _NO_UGI
        if user and principal is None:
            who += " (not a configured principal)"
        where = f"catalog {catalog}" if catalog is not None else "any catalog"
        text = f"catalogd: permission denied: {who} needs role {needed.label} on {where} for {method}"
        call.audited = False
        if self.audit is not None:
            if call.object is None:
                call.object = obj() if obj is not None else catalog
            self.audit.record(principal=user or None, surface="hms", client=conn.peer, operation=method,
                              object=call.object, outcome="denied", detail=text)
        raise meta_error(text)

    def _readable(self, principal: Principal | None, catalog: str) -> bool:
        authority = self.authority
        if authority is None or not authority.enabled:
            return True
        return principal is not None and authority.allows(principal, catalog, hms_role("read"))

    def _record(self, conn: ClientConnection, method: str, call: _Call, outcome: str, detail: str | None) -> None:
        assert self.audit is not None
        name = call.principal.name if call.principal is not None else None
        self.audit.record(principal=name, surface="hms", client=conn.peer, operation=method, object=call.object,
                          outcome=outcome, detail=detail)

    def _audit_reply(self, conn: ClientConnection, method: str, call: _Call, reply: bytes) -> None:
        """Audit a write by what its reply says: an HMS exception in the result is an error."""
        outcome, detail = "ok", None
        try:
            answer = parse_message(reply)
            if answer.type == EXCEPTION:
                outcome = "error"
                detail = decode(TApplicationException(), answer.body).message
            elif method in _RESULTS:
                result = decode(_RESULTS[method](), answer.body)
                failure = next((value for key, value in vars(result).items()
                                if key != "success" and value is not None), None)
                if failure is not None:
                    outcome, detail = "error", _message_of(failure)
        except Exception as e:  # an answer we cannot read is still recorded
            logger.debug("HMS endpoint: reading the reply of %s for the audit log: %s", method, e)
        self._record(conn, method, call, outcome, detail)

    def _check_writable(self, catalog: str, method: str) -> None:
        conf = self.manager.config.catalog(catalog)
        if conf is not None and conf.read_only:
            raise meta_error(f"catalogd: catalog {catalog!r} is read-only: {method} refused")

    # ------------------------------------------------------------ routing

    def _route(self, method: str, args: Any) -> _Route | None:
        names = methods.databases_in_args(method, args)
        if not names:
            return None
        federation = self.federation
        places = []
        for name in names:
            place = federation.locate(name)
            if place is None:
                raise _Refused(hms.NoSuchObjectException(message=f"catalogd: no catalog has a database {name!r}"))
            places.append(place)
        catalogs = {p.catalog for p in places}
        if len(catalogs) > 1:
            raise meta_error(f"catalogd: {method} cannot span catalogs ({', '.join(sorted(catalogs))})")
        return _Route(places[0].catalog, places)

    def _prefix(self, catalog: str) -> str:
        return self.federation.prefixes.get(catalog, "")

    def _to_backing(self, method: str, args: Any, catalog: str) -> None:
        prefix = self._prefix(catalog)
        if prefix:
            # A view's text is mapped while the view still has the client's names.
            methods.rename_args(method, args, self.federation.unprefix(catalog),
                                on_table=lambda table: view_text.view_to_backing(table, prefix))

    def _to_client(self, method: str, result: Any, catalog: str) -> None:
        prefix = self._prefix(catalog)
        if prefix and getattr(result, "success", None) is not None:  # void results have no success
            # A view's text is mapped while the view still has the backing metastore's names.
            result.success = methods.rename_result(method, result.success, self.federation.prefix(catalog),
                                                   on_table=lambda table: view_text.view_to_client(table, prefix))

    # ------------------------------------------------------------ reads

    def _scope(self, route: _Route, method: str, args: Any) -> tuple[str, str, str]:
        targets = methods.target_in_args(method, args)
        if len(targets) == 1:
            database, table = targets[0]
            place = self.federation.locate(database)
            return (route.catalog, (place.database if place else database).lower(), (table or "").lower())
        # Several tables (get_table_objects_by_name): the database's scope, which a write to
        # any of its tables invalidates.
        return (route.catalog, route.places[0].database.lower(), "")

    def _read(self, conn: ClientConnection, message: Message, args: Any, route: _Route,
              hive: HiveCatalog) -> bytes:
        method = message.name
        # A cache that is off (cache.ttl 0s) is skipped, so the reply goes back as it came.
        cache = self.cache if method in _CACHED_READS and getattr(self.cache, "enabled", True) else None
        scope = self._scope(route, method, args)
        key = ("hms", method, message.body)
        token = 0
        if cache is not None:
            body = cache.get(scope, key)
            if body is not None:
                return header(method, REPLY, message.seqid) + body
            token = cache.token(scope)
        prefixed = bool(self._prefix(route.catalog))
        if prefixed:
            self._to_backing(method, args, route.catalog)
            reply = self._relay(hive, conn, encode(method, CALL, message.seqid, args), retry=True)
        else:
            reply = self._relay(hive, conn, message.raw, retry=True)
        if reply.type != REPLY:
            return reply.raw
        if cache is None and not prefixed and method not in _LISTINGS:
            return reply.raw
        body = reply.body
        if prefixed or method in _LISTINGS:
            result = decode(_RESULTS[method](), body)
            if method in _LISTINGS:
                _hide_stages(result)
            self._to_client(method, result, route.catalog)
            body = encode(method, REPLY, message.seqid, result)[len(header(method, REPLY, message.seqid)):]
        if cache is not None:
            cache.put(scope, key, body, token)
        return header(method, REPLY, message.seqid) + body

    def _databases(self, conn: ClientConnection, message: Message, args: Any,
                   principal: Principal | None = None) -> bytes:
        """get_databases / get_all_databases: every (readable) catalog's, under their client names."""
        pattern = getattr(args, "pattern", None)
        federation = self.federation
        names: set[str] = set()
        for name, catalog in self.manager.catalogs().items():
            if not self._readable(principal, name):
                continue
            hive = self._hive(name)
            try:
                if hive is not None:
                    found = self._upstream(hive, conn, "get_all_databases",
                                           ThriftHiveMetastore.get_all_databases_args()).success or []
                else:
                    found = catalog.list_databases()
            except (_Refused, CatalogError) as e:
                if name == federation.default:
                    raise
                logger.warning("HMS endpoint: databases of catalog %s left out: %s", name, e)
                continue
            for database in found:
                if federation.visible(name, database):
                    client = federation.client_name(name, database)
                    if matches_pattern(client, pattern):
                        names.add(client)
        result = _RESULTS[message.name](success=sorted(names))
        return self._reply(message.name, message.seqid, result)

    def _table_meta(self, conn: ClientConnection, message: Message, args: Any,
                    principal: Principal | None = None) -> bytes:
        """get_table_meta(db_patterns, tbl_patterns, tbl_types) across (readable) catalogs, stages left out."""
        federation = self.federation
        metas: list[Any] = []
        for name in self.manager.catalogs():
            if not self._readable(principal, name):
                continue
            hive = self._hive(name)
            if hive is None:
                try:
                    found = self._store(name).call("get_table_meta", _ARGS["get_table_meta"](
                        db_patterns="*", tbl_patterns=args.tbl_patterns, tbl_types=args.tbl_types))
                except Exception as e:  # a memory catalog that cannot answer leaves out its tables
                    logger.debug("HMS endpoint: get_table_meta on %s: %s", name, e)
                    continue
            else:
                request = _ARGS["get_table_meta"](db_patterns="*", tbl_patterns=args.tbl_patterns,
                                                  tbl_types=args.tbl_types)
                found = self._upstream(hive, conn, "get_table_meta", request).success or []
            for meta in found:
                if is_stage_table(meta.tableName) or not federation.visible(name, meta.dbName):
                    continue
                meta.dbName = federation.client_name(name, meta.dbName)
                if matches_pattern(meta.dbName, args.db_patterns):
                    metas.append(meta)
        return self._reply(message.name, message.seqid, _RESULTS[message.name](success=metas))

    # ------------------------------------------------------------ writes

    def _write(self, conn: ClientConnection, message: Message, args: Any, route: _Route,
               hive: HiveCatalog) -> bytes:
        method = message.name
        targets = [(self._place(db), table) for db, table in methods.target_in_args(method, args)]
        try:
            self._check_write(conn, method, args, route, hive, targets)
            handled = self._write_through_catalogd(conn, message, args, route, hive)
            if handled is not None:
                return handled
            if self._prefix(route.catalog) or method == "create_database":
                # Renamed, or a made-up location taken out (_spark_default_location).
                self._to_backing(method, args, route.catalog)
                reply = self._relay(hive, conn, encode(method, CALL, message.seqid, args), retry=False)
            else:
                reply = self._relay(hive, conn, message.raw, retry=False)
            if reply.type == REPLY and self._prefix(route.catalog):
                result = decode(_RESULTS[method](), reply.body)
                self._to_client(method, result, route.catalog)
                return self._reply(method, message.seqid, result)
            return reply.raw
        finally:
            # Also after a failure: the write may have happened before the answer was lost.
            self._invalidate(route.catalog, targets)

    def _place(self, database: str) -> str:
        place = self.federation.locate(database)
        return place.database if place is not None else database.lower()

    def _invalidate(self, catalog: str, targets: list[tuple[str, str]]) -> None:
        if self.cache is None:
            return
        if not targets:
            self.cache.invalidate(catalog)
        for database, table in targets:
            self.cache.invalidate(catalog, database.lower(), (table or "").lower())

    def _current_table(self, hive: HiveCatalog, conn: ClientConnection, database: str, table: str) -> Any | None:
        result = self._upstream(hive, conn, "get_table", ThriftHiveMetastore.get_table_args(database, table))
        return result.success

    def _check_write(self, conn: ClientConnection, method: str, args: Any, route: _Route, hive: HiveCatalog,
                     targets: list[tuple[str, str]]) -> None:
        """Refuse what no client may do through the endpoint (raises ``_Refused``)."""
        new_tables = list(methods.tables_in(args))
        for table in new_tables:
            reserved = _reserved(table.parameters)
            if method in _CREATE_TABLE and reserved:
                raise meta_error(f"catalogd: parameters {reserved} are catalogd's own (a dynamic table's "
                                 f"definition, a stage's marks); {method} refused")
        for database in methods.databases_in_args(method, args) if method in ("create_database",
                                                                                 "alter_database") else []:
            db_obj = getattr(args, "database", None) or getattr(args, "db", None)
            if db_obj is not None and _reserved(getattr(db_obj, "parameters", None)):
                raise meta_error(f"catalogd: parameters starting with {RESERVED_PROPERTY_PREFIX!r} on database "
                                 f"{database} are catalogd's own; {method} refused")
        tables = {(d, t) for d, t in targets if t}
        for database, table in sorted(tables):
            current = None
            try:
                current = self._current_table(hive, conn, database, table)
            except _Refused as refused:
                if not isinstance(refused.exc, hms.NoSuchObjectException | hms.MetaException):
                    raise
            if current is None:
                continue
            params = current.parameters or {}
            dynamic = any(k.startswith(DYNAMIC_PREFIX) for k in params) and not is_stage_table(table)
            if dynamic and method not in _DROP_TABLE:
                raise meta_error(f"catalogd: {route.catalog}.{database}.{table} is a dynamic table: {method} "
                                 "refused (catalogd refreshes it; change it with `catalogd dt`)")
            if method in _ALTER_TABLE and _reserved_map(args.new_tbl.parameters) != _reserved_map(params):
                raise meta_error(f"catalogd: {method} of {route.catalog}.{database}.{table} would set or "
                                 f"remove catalogd's own parameters ({RESERVED_PROPERTY_PREFIX}*); refused")

    def _write_through_catalogd(self, conn: ClientConnection, message: Message, args: Any, route: _Route,
                                hive: HiveCatalog) -> bytes | None:
        """Drops catalogd makes itself (its deletion rules, dynamic tables, stages); None: relay."""
        method = message.name
        if method in _DROP_TABLE:
            database = self._place(args.dbname)
            path = ObjectPath(route.catalog, database, args.name.lower())
            purge = _purge(getattr(args, "environment_context", None))
            try:
                current = self._current_table(hive, conn, database, args.name)
            except _Refused:
                current = None
            if current is None:
                raise _Refused(hms.NoSuchObjectException(message=f"{database}.{args.name} table not found"))
            if self._drop_dynamic is not None and any(k.startswith(DYNAMIC_PREFIX)
                                                      for k in (current.parameters or {})):
                self._drop_dynamic(path)
            elif not args.deleteData:
                return None  # the metastore deletes nothing: relayed as it is
            else:
                self.manager.drop_table(path, ignore_if_not_exists=False, purge=purge)
            return self._reply(method, message.seqid, _RESULTS[method]())
        if method in _DROP_PARTITION and args.deleteData:
            database = self._place(args.db_name)
            hive.session.drop_partition(database, args.tbl_name.lower(), list(args.part_vals or []),
                                        purge=_purge(getattr(args, "environment_context", None)))
            return self._reply(method, message.seqid, _RESULTS[method](success=True))
        if method == "drop_database":
            database = self._place(args.name)
            if args.cascade:
                self._abort_stages(hive, database)
            self.manager.drop_database(NamespacePath(route.catalog, database), ignore_if_not_exists=False,
                                       cascade=bool(args.cascade))
            return self._reply(method, message.seqid, _RESULTS[method]())
        return None

    @staticmethod
    def _abort_stages(hive: HiveCatalog, database: str) -> None:
        for stage in hive.list_stages() if hive.stages is not None else []:
            if stage.database.lower() == database and stage.state.name == "OPEN":
                try:
                    hive.abort_stage(stage.database, parse_stage_id(stage.id)[2], writer_stopped=False)
                except CatalogError as e:
                    logger.warning("HMS endpoint: aborting stage %s before dropping %s: %s", stage.id, database, e)

    # ------------------------------------------------------------ memory catalogs, globals, locks

    def _store(self, catalog: str) -> MemoryStore:
        if self._memory_store is None:
            raise meta_error(f"catalogd: memory catalog {catalog!r} is not served on the HMS endpoint")
        return self._memory_store(catalog)

    def _memory(self, conn: ClientConnection, message: Message, args: Any, route: _Route) -> bytes:
        method = message.name
        store = self._store(route.catalog)
        self._to_backing(method, args, route.catalog)
        try:
            value = store.call(method, args)
        except (hms.MetaException, hms.NoSuchObjectException, hms.AlreadyExistsException,
                hms.InvalidObjectException, hms.InvalidOperationException, hms.InvalidInputException,
                hms.UnknownDBException, hms.UnknownTableException, hms.InvalidPartitionException,
                hms.UnknownPartitionException) as e:
            raise _Refused(e) from None
        result = _RESULTS[method](success=value) if "success" in _field_names(_RESULTS[method]) else \
            _RESULTS[method]()
        if method in _LISTINGS:
            _hide_stages(result)
        self._to_client(method, result, route.catalog)
        return self._reply(method, message.seqid, result)

    def _global(self, conn: ClientConnection, message: Message) -> bytes:
        """A call that names no database (or one catalogd does not know): the default catalog's metastore."""
        hive = self._hive(self.federation.default)
        if hive is None:
            app = TApplicationException(TApplicationException.UNKNOWN_METHOD,
                                        f"catalogd: {message.name} is not served for a memory default catalog")
            return encode(message.name, EXCEPTION, message.seqid, app)
        kind = methods.kind(message.name)
        return self._relay(hive, conn, message.raw, retry=kind is methods.Kind.GLOBAL_READ).raw

    def _set_ugi(self, conn: ClientConnection, message: Message) -> bytes:
        too_large = limits.set_ugi_error(len(message.body))
        if too_large is not None:
            raise _Refused(too_large)
        args = decode(ThriftHiveMetastore.set_ugi_args(), message.body)
        too_long = limits.identity_error(args.user_name)
        if too_long is not None:
            raise _Refused(too_long)
        groups = list(args.group_names or [])
        conn.identity = (args.user_name or "", tuple(groups))
        return self._reply("set_ugi", message.seqid, ThriftHiveMetastore.set_ugi_result(success=groups))

    def _lock_call(self, conn: ClientConnection, message: Message) -> bytes:
        assert self.locks is not None
        method = message.name
        args = decode(_ARGS[method](), message.body)
        # heartbeat's request is called ``ids``; the others' ``rqst``.
        request = args.ids if method == "heartbeat" else args.rqst
        try:
            if method == "lock":
                # One client's locks are bounded by its host: locks outlive connections (Hive
                # heartbeats from another one), and a set_ugi user is only asserted.
                value = self.locks.lock(request, client=conn.peer.rsplit(":", 1)[0])
            else:
                value = getattr(self.locks, method)(request)
        except (hms.NoSuchLockException, hms.NoSuchTxnException, hms.TxnAbortedException,
                hms.TxnOpenException, hms.MetaException) as e:
            raise _Refused(e) from None
        result = _RESULTS[method](success=value) if "success" in _field_names(_RESULTS[method]) else \
            _RESULTS[method]()
        return self._reply(method, message.seqid, result)


# ---------------------------------------------------------------- helpers

def _message_of(exc: object) -> str:
    return str(getattr(exc, "message", None) or exc)


def _spark_default_location(database: Any) -> None:
    """Leave a new database's location to its catalog when it is the one Spark makes up.

    Spark fills in ``<the session's spark.sql.warehouse.dir>/<name>.db`` for a database created
    without LOCATION; that is the session's warehouse, not the catalog's (a prefixed catalog's
    databases would land in the default catalog's warehouse, under their prefixed names). The
    metastore (or a memory catalog) puts a database with no location in its own warehouse.
    """
    location = (getattr(database, "locationUri", None) or "").rstrip("/")
    name = getattr(database, "name", None) or ""
    if name and location.lower().endswith(f"/{name.lower()}.db"):
        database.locationUri = None


def _field_names(cls: Any) -> set[str]:
    return {spec[2] for spec in cls.thrift_spec if spec}


def _reserved(params: dict[str, str] | None) -> list[str]:
    return sorted(k for k in (params or {}) if k.lower().startswith(RESERVED_PROPERTY_PREFIX))


def _reserved_map(params: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (params or {}).items() if k.lower().startswith(RESERVED_PROPERTY_PREFIX)}


def _purge(context: Any) -> bool:
    properties = getattr(context, "properties", None) or {}
    return str(properties.get("ifPurge", "")).lower() == "true"


def _hide_stages(result: Any) -> None:
    """Leave staging tables out of a listing's answer."""
    value = getattr(result, "success", None)
    if value is None:
        return
    if isinstance(value, list):
        result.success = [item for item in value if not is_stage_table(_table_name(item))]
    elif isinstance(value, hms.GetTablesResult) and value.tables is not None:
        value.tables = [t for t in value.tables if not is_stage_table(t.tableName or "")]


def _table_name(item: Any) -> str:
    if isinstance(item, str):
        return item
    return getattr(item, "tableName", "") or ""
