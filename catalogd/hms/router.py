"""Answers one HMS call: works out where it goes and dispatches it, applying catalogd's rules on the way.

What catalogd need not change goes to the backing metastore as the bytes the client sent,
and comes back as the bytes the metastore sent (newer clients' fields survive). What it
must change is decoded with hmsclient's IDL. The concerns live apart, this module only
dispatches between them:

* ``policy``: auth, audit, read-only catalogs, reserved ``catalogd.*`` parameters, the
  dynamic-table guard, staging tables written only by their stage's owner or an admin;
* ``rewriting``: a prefixed catalog's names (``<prefix>db`` <-> ``db``) in args, replies and
  view text; staging tables left out of listings;
* ``upstream``: relaying to the metastore of a catalog's ``RelayTarget``;
* here: routing by database, reads of databases, tables and partitions answered from the
  metadata cache through the catalog's caching client (one key scheme with the catalog's
  own reads; every write invalidates what it touched), listings across catalogs, memory
  catalogs (``MemoryMetastore``) and the lock API (``lock_rules`` on what a lock names,
  ``lock_owners`` on who may touch a lock, then the default catalog's metastore, or
  ``LockManager`` when there is no metastore database);
* ``drops``: drops catalogd makes itself (its deletion rules, a dynamic table's job
  stopped first, the stages of a dropped database aborted).
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from thrift.Thrift import TApplicationException

from catalogd.catalog.base import is_stage_table
from catalogd.catalog.caching_client import RAW
from catalogd.errors import (
    CatalogError,
    CatalogNotFoundError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    PermissionDeniedError,
    UnsupportedError,
)
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import catalog_calls, downgrade, limits, methods, rules
from catalogd.hms.catalog_names import CatalogNames, Door, Spelling
from catalogd.hms.claims import check_claims, check_move, claims_of
from catalogd.hms.drops import Drops
from catalogd.hms.errors import to_hms_error
from catalogd.hms.federation import Federation, Place, matches_pattern
from catalogd.hms.lock_owners import GUARDED, Guard, LockOwners, guard_for, owner_of
from catalogd.hms.lock_reads import LockedReads
from catalogd.hms.lock_rules import check_components, locked_scopes, lower_names, visible_locks
from catalogd.hms.locks import Holder
from catalogd.hms.memory import SCRATCH_WAREHOUSE
from catalogd.hms.policy import READER_GLOBAL_WRITES, CallRecord, Policy
from catalogd.hms.refused import Refused, message_of, meta_error, plain
from catalogd.hms.rewriting import LISTINGS, Rewriting, hide_stages, spark_default_location
from catalogd.hms.upstream import Upstreams
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
from catalogd.names import ObjectPath

if TYPE_CHECKING:
    from catalogd.auth.audit import AuditLog
    from catalogd.auth.model import Authority, Principal
    from catalogd.catalog.base import Catalog
    from catalogd.catalog.relay_target import CachedCalls, RelayTarget
    from catalogd.hms.identity import EndpointAuth
    from catalogd.hms.server import ClientConnection
    from catalogd.manager import CatalogManager

logger = logging.getLogger(__name__)

__all__ = ["LAST_ERROR", "Router"]

_ARGS = {n[:-5]: getattr(ThriftHiveMetastore, n) for n in dir(ThriftHiveMetastore) if n.endswith("_args")}
_RESULTS = {n[:-7]: getattr(ThriftHiveMetastore, n) for n in dir(ThriftHiveMetastore) if n.endswith("_result")}

#: ``ClientConnection.state`` key: the refusal or catalogd error of the connection's last failed call
#: (the REST door's in-process client answers it as its typed error, not the HMS exception's text).
LAST_ERROR = "last-error"
_LOCK_METHODS = frozenset({"lock", "check_lock", "unlock", "heartbeat", "show_locks"})
#: Reads of whole tables (their ``metadata_location``): they wait while an Iceberg multi-table
#: commit moves the table's pointer (``catalogd.iceberg.transactions.CommitGate``).
_SINGLE_TABLE_READS = frozenset({"get_table", "get_table_req"})
_GATED_READS = _SINGLE_TABLE_READS | {"get_table_objects_by_name", "get_table_objects_by_name_req"}
#: Served by catalogd itself when it issues delegation tokens (auth.kerberos).
_DELEGATION_METHODS = frozenset({"get_delegation_token", "renew_delegation_token", "cancel_delegation_token"})
#: Reads answered from the metadata cache (keyed by their exact args).
_CACHED_READS = frozenset({
    "get_database", "get_table", "get_table_req", "get_tables", "get_all_tables", "get_tables_by_type",
    "get_table_objects_by_name", "get_table_objects_by_name_req", "get_partitions", "get_partitions_by_filter",
    "get_partitions_ps", "get_partitions_ps_with_auth", "get_partition_names", "get_partition_names_ps",
    "get_partition", "get_partition_by_name", "get_partition_with_auth", "get_partitions_by_names",
    "get_partitions_with_auth", "get_num_partitions_by_filter", "get_fields", "get_schema",
    "get_fields_with_environment_context", "get_schema_with_environment_context", "get_table_meta",
    "get_partitions_by_expr", "get_function", "get_functions",
    # Hive 3.1 / 4.x requests of the same objects (scoped and invalidated as their 2.3 equivalents)
    "get_database_req", "get_fields_req", "get_schema_req", "get_partitions_req", "get_partition_req",
    "get_partition_names_req", "get_partitions_by_names_req", "get_partitions_by_filter_req",
    "get_partitions_ps_with_auth_req", "get_partition_names_ps_req", "fetch_partition_names_req",
    "get_partitions_spec_by_expr",
})


class LockService(Protocol):
    def lock(self, request: Any, connection: str | None = None, principal: str | None = None) -> Any: ...

    def check_lock(self, request: Any, allow: Guard | None = None) -> Any: ...

    def unlock(self, request: Any, allow: Guard | None = None) -> None: ...

    def heartbeat(self, request: Any, allow: Guard | None = None) -> None: ...

    def show_locks(self, request: Any) -> Any: ...


class CommitGate(Protocol):
    """The Iceberg REST door's gate (``catalogd.iceberg.transactions.CommitGate``)."""

    #: The tables whose pointers a multi-table commit is moving (empty: none).
    tables: dict[Any, Any]
    #: Counts the commits that began moving pointers.
    generation: int

    def wait(self, catalog: str, database: str, table: str, timeout: float = ...) -> None: ...


class MemoryStore(Protocol):
    def call(self, method: str, args: Any) -> Any: ...

    def check_claim(self, location: str, what: str, own_table: tuple[str, str] | None = None) -> None: ...


#: ``ClientConnection.state`` key: the plans of the cached reads the connection made (``_known_hit``).
_PLANS = "read-plans"
#: Plans kept per connection (a client reading more objects than this starts over).
_MAX_PLANS = 512


@dataclass(frozen=True)
class _Plan:
    """What serving one cached read decided: where its answer is looked up."""

    scope: tuple[str, str, str]
    form: str
    caching: CachedCalls
    config: object
    #: The connection's user when it was made (set_ugi may name another one later).
    identity: object


@dataclass
class _Route:
    """Where one call goes."""

    catalog: str
    #: The databases the call names, as the catalog knows them.
    places: list[Place]


class Router:
    """The HMS endpoint's call handler (``HmsServer`` calls ``handle`` per message).

    Args:
        manager: the catalogs (looked up per call: a config reload changes them); a catalog
            with a ``relay_target()`` is relayed to, reading and invalidating its cache.
        locks: answers the lock API where no metastore keeps locks; None: relay it to the
            default catalog's metastore (its transaction tables).
        memory_store: the ``MemoryMetastore`` of a memory catalog, by name.
        drop_dynamic: drops a dynamic table as ``dt drop`` does (its job stopped first).
        max_message: the largest reply relayed.
        authority: who may do what; None: everyone may do everything.
        audit: where writes and denials are recorded; None: nowhere.
    """

    def __init__(self, manager: CatalogManager, *, locks: LockService | None = None,
                 memory_store: Callable[[str], MemoryStore] | None = None,
                 drop_dynamic: Callable[[ObjectPath], None] | None = None,
                 max_message: int = 256 * 1024 * 1024, authority: Authority | None = None,
                 audit: AuditLog | None = None) -> None:
        self.manager = manager
        self.policy = Policy(manager, authority, audit)
        self.rewriting = Rewriting(lambda: self.federation,
                                   lambda: self.manager.config.server.hms_view_parse_timeout.total_seconds())
        self.upstreams = Upstreams(max_message)
        self.drops = Drops(manager, drop_dynamic)
        self.locks = locks
        #: Objects locked through this endpoint lately: read from the metastore, not the cache.
        self.locked_reads = LockedReads(lambda: self.manager.config.server.hms_lock_timeout.total_seconds())
        #: The holders of the locks a metastore keeps (auth on: only they, or an admin, touch them).
        self.lock_owners = LockOwners()
        #: Names each connection once for the per-connection lock bound (a peer's port is reused).
        self._connections = itertools.count(1)
        #: Issues delegation tokens (set by the endpoint with auth.kerberos); None: relayed.
        self.delegation: EndpointAuth | None = None
        self._memory_store = memory_store
        self._federation: tuple[object, Federation] | None = None
        self._names: tuple[object, CatalogNames] | None = None
        #: (backend (catalog, addresses), method): Hive 3/4 calls a backend answered UNKNOWN_METHOD.
        self._hive2_only: set[tuple[tuple[str, tuple[tuple[str, int], ...]], str]] = set()
        #: Calls answered, by method and outcome (for /metrics).
        self.calls: dict[tuple[str, str], int] = {}
        self._calls_lock = threading.Lock()
        #: The Iceberg REST door's gate (set by the door): table reads wait while a multi-table
        #: commit moves the table's pointer. None: no door.
        self.commit_gate: CommitGate | None = None

    # ------------------------------------------------------------ plumbing

    @property
    def federation(self) -> Federation:
        config = self.manager.config
        cached = self._federation
        if cached is None or cached[0] is not config:
            cached = (config, Federation.from_config(config))
            self._federation = cached
        return cached[1]

    @property
    def names(self) -> CatalogNames:
        """HMS 3's ``@catalog#db`` grammar for the current configuration."""
        config = self.manager.config
        cached = self._names
        if cached is None or cached[0] is not config:
            cached = (config, CatalogNames(self.federation, [c.name for c in config.catalogs]))
            self._names = cached
        return cached[1]

    def call_counts(self) -> dict[tuple[str, str], int]:
        """A snapshot of the calls answered: (method, outcome) -> count."""
        with self._calls_lock:
            return dict(self.calls)

    def _count(self, method: str, outcome: str) -> None:
        with self._calls_lock:
            key = (method, outcome)
            self.calls[key] = self.calls.get(key, 0) + 1

    def _target(self, catalog: str) -> RelayTarget | None:
        """Where ``catalog``'s calls are relayed; None: a catalog answered here (memory)."""
        found = self.manager.catalogs().get(catalog)
        return found.relay_target() if found is not None else None

    def close(self) -> None:
        self.upstreams.close()
        self.rewriting.close()

    def _relay(self, target: RelayTarget, conn: ClientConnection, request: bytes, retry: bool) -> Message:
        call = parse_message(request) if self._hive2_only else None
        if call is not None and call.name in downgrade.EQUIVALENTS and \
                (_backend(target), call.name) in self._hive2_only:
            # Known not to be there: said in 2.3 at once (no round trip to be refused first).
            said = self._downgraded(target, conn, call, retry)
            if said is not None:
                return parse_message(said)
        reply = self.upstreams.relay(target, conn.identity, request, retry)
        if reply.type == EXCEPTION and downgrade.is_unknown_method(reply):
            # A Hive 2.3 metastore does not know a Hive 3/4 call: said in 2.3 where it can be.
            call = call or parse_message(request)
            said = self._downgraded(target, conn, call, retry)
            if said is not None:
                self._hive2_only.add((_backend(target), call.name))  # at most every backend's EQUIVALENTS
                return parse_message(said)
        return reply

    def _downgraded(self, target: RelayTarget, conn: ClientConnection, call: Message, retry: bool) -> bytes | None:
        if call.name not in downgrade.EQUIVALENTS:
            return None
        args = decode(_ARGS[call.name](), call.body)
        return downgrade.answer(call.name, call.seqid, args,
                                lambda method, hive2: self._upstream(target, conn, method, hive2, retry))

    def _upstream(self, target: RelayTarget, conn: ClientConnection, method: str, args: Any,
                  retry: bool = True) -> Any:
        """One decoded call on the catalog's metastore: the result struct."""
        return self.upstreams.call(target, conn.identity, method, args, retry)

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
        if method in _CACHED_READS and message.type == CALL:
            hit = self._known_hit(conn, message)
            if hit is not None:
                self._count(method, "ok")
                return hit
        if message.type not in (CALL, ONEWAY):
            app = TApplicationException(TApplicationException.INVALID_MESSAGE_TYPE, "expected a call")
            return encode(method, EXCEPTION, message.seqid, app)
        call = CallRecord()
        policy = self.policy
        try:
            reply = self._handle(conn, message, call)
            self._count(method, "ok")
            if call.audited:
                policy.audit_reply(conn, method, call, reply)
        except Refused as refused:
            self._count(method, "refused")
            conn.state[LAST_ERROR] = refused
            reply = self._error_reply(method, message.seqid, refused.exc)
            if call.audited:
                policy.record(conn, method, call, "error", message_of(refused.exc))
        except CatalogError as e:
            self._count(method, "refused")
            conn.state[LAST_ERROR] = e
            reply = self._error_reply(method, message.seqid, to_hms_error(e, method))
            if call.audited:
                policy.record(conn, method, call, "error", f"{e.kind}: {e.message}")
        except Exception as e:  # a bug must not take the connection down with no answer
            self._count(method, "error")
            logger.exception("HMS endpoint: %s from %s failed", method, conn.peer)
            internal = hms.MetaException(message=f"catalogd: internal error: {e}")
            reply = self._error_reply(method, message.seqid, internal)
            if call.audited:
                policy.record(conn, method, call, "error", f"internal error: {e}")
        return None if message.type == ONEWAY else reply

    def _known_hit(self, conn: ClientConnection, message: Message) -> bytes | None:
        """A cached read this connection made before, answered without decoding it again.

        The first time a connection's read is served from the cache path, ``_read`` notes its
        plan (scope, cache form, the catalog's cache) under its exact bytes: everything
        routing, naming and authorization decided for this connection's principal. While the
        daemon's configuration object is the same one (a reload makes a new one: catalogs,
        prefixes and grants may change) and the connection's user is the same (``set_ugi``
        may name another), the same bytes mean the same plan, so only the
        lookup is left: the same ``lookup`` the full path makes (read-your-writes, the
        cluster's invalidations and locked tables' fresh reads hold as they do there). A miss
        goes the full way.
        """
        plans = conn.state.get(_PLANS)
        if plans is None:
            return None
        plan = plans.get((message.name, message.body))  # type: ignore[attr-defined]
        if plan is None or plan.config is not self.manager.config or plan.identity != conn.identity:
            return None
        if self.locked_reads.guarded(plan.scope):
            return None
        body: bytes | None = plan.caching.lookup(plan.scope, message.name, message.body, plan.form).body
        if body is None:
            return None
        return header(message.name, REPLY, message.seqid) + body

    def _note_plan(self, conn: ClientConnection, message: Message, scope: tuple[str, str, str], form: str,
                   caching: CachedCalls) -> None:
        plans = conn.state.get(_PLANS)
        if plans is None:
            plans = conn.state[_PLANS] = {}
        assert isinstance(plans, dict)
        if len(plans) >= _MAX_PLANS:
            plans.clear()  # a client that reads many objects: start over (bounded per connection)
        plans[(message.name, message.body)] = _Plan(scope, form, caching, self.manager.config, conn.identity)

    def _handle(self, conn: ClientConnection, message: Message, call: CallRecord) -> bytes:
        method = message.name
        policy = self.policy
        if method == "set_ugi":
            return self._set_ugi(conn, message, call)
        kind = methods.kind(method)
        if method in _DELEGATION_METHODS and self.delegation is not None and self.delegation.tokens is not None:
            policy.authorize(conn, method, kind, self.federation.default, call)
            return self._delegation_call(conn, message, call)
        if method in _LOCK_METHODS:
            return self._locks(conn, message, call)
        if method in catalog_calls.METHODS and method in _ARGS:
            return self._catalog_call(conn, message, call)
        if kind is None or method not in _ARGS:
            policy.authorize(conn, method, kind, self.federation.default, call)
            return self._global(conn, message)
        args = decode(_ARGS[method](), message.body)
        too_large = limits.view_text_error(method, args, self.manager.config.server.hms_max_view_text)
        if too_large is not None:  # before a view's text is parsed or rewritten
            raise Refused(too_large, InvalidArgumentError(plain(message_of(too_large))))
        if method in ("get_databases", "get_all_databases", "get_table_meta"):
            # Across catalogs: a reader of any catalog may list, and sees the catalogs it reads.
            policy.authorize(conn, method, kind, None, call)
            door = self._pattern_door(method, args)
            if method == "get_table_meta":
                return self._table_meta(conn, message, args, call.principal, door)
            return self._databases(conn, message, args, call.principal, door)
        if kind in (methods.Kind.GLOBAL_READ, methods.Kind.GLOBAL_WRITE):
            policy.authorize(conn, method, kind, self.federation.default, call)
            if kind is methods.Kind.GLOBAL_WRITE and method not in READER_GLOBAL_WRITES:
                policy.check_writable(self.federation.default, method)
                refused = rules.refusal(method)  # a global write that moves or deletes any path
                if refused is not None:
                    raise meta_error(refused, PermissionDeniedError)
            # A privilege object's or an event's database, say, in a Hive 3+ client's spelling.
            spelling = self.names.unwrap(method, args)
            if spelling is not None:
                return self._spelt(message, args, spelling, lambda inner: self._global(conn, inner))
            return self._global(conn, message)
        # A Hive 3+ client's ``@catalog#db`` names: served as the 2.3 names they mean, answered
        # in the client's spelling.
        spelling = self.names.unwrap(method, args)
        if spelling is not None:
            return self._spelt(message, args, spelling,
                               lambda inner: self._routed(conn, inner, args, kind, call, spelling))
        return self._routed(conn, message, args, kind, call)

    def _spelt(self, message: Message, args: Any, spelling: Spelling, serve: Callable[[Message], bytes]) -> bytes:
        """A call with catalog-qualified names (already unwrapped in ``args``): served (``serve``)
        as a 2.3 client's call, its answer and errors put back in the client's spelling."""
        method = message.name
        inner = parse_message(encode(method, message.type, message.seqid, args))
        try:
            reply = serve(inner)
        except Refused as refused:
            raise refused.respelt(spelling.error(refused.exc)) from None
        except CatalogError as e:
            raise Refused(spelling.error(to_hms_error(e, method)), e) from None
        if spelling.spelt:  # a read that spelt its answer before caching it
            return reply
        answer = parse_message(reply)
        if answer.type != REPLY:
            return reply
        result = decode(_RESULTS[method](), answer.body)
        spelling.reply(method, result)
        return self._reply(method, message.seqid, result)

    def _catalog_call(self, conn: ClientConnection, message: Message, call: CallRecord) -> bytes:
        """get_catalogs / get_catalog answered from catalogd's catalogs; create/alter/drop_catalog refused."""
        method = message.name
        refused = method in catalog_calls.REFUSED
        kind = methods.Kind.GLOBAL_WRITE if refused else methods.Kind.GLOBAL_READ
        # A reader of any catalog may ask; each answer shows only the catalogs it reads.
        self.policy.authorize(conn, method, kind, None, call)
        args = decode(_ARGS[method](), message.body)
        value = catalog_calls.answer(method, args, self.manager.catalogs(), self.federation.default,
                                     lambda name: self.policy.readable(call.principal, name), self.warehouse_location)
        return self._reply(method, message.seqid, _RESULTS[method](success=value))

    def warehouse_location(self, catalog: Catalog) -> str | None:
        """A catalog's warehouse (a memory catalog's: where the endpoint keeps its files); None:
        neither (a catalog whose metastore keeps its own, or one the endpoint does not serve)."""
        info = catalog.info()
        if info.warehouse:
            return info.warehouse
        if catalog.relay_target() is None and catalog.hms_served:
            return (self.manager.config.server.data_dir / SCRATCH_WAREHOUSE / info.name).as_uri()
        return None

    def _pattern_door(self, method: str, args: Any) -> Door | None:
        """A listing's ``@catalog#pattern``: its door, the pattern left in ``args`` without it."""
        field = methods.PATTERN_METHODS.get(method)
        value = getattr(args, field, None) if field is not None else None
        if not isinstance(value, str):
            return None
        door, rest = self.names.pattern(value)
        if door is not None:
            setattr(args, field, rest)  # type: ignore[arg-type]
        return door

    def _routed(self, conn: ClientConnection, message: Message, args: Any, kind: methods.Kind,
                call: CallRecord, spelling: Spelling | None = None) -> bytes:
        """A decoded call that names databases (2.3 names): routed to their catalog (``spelling``:
        how a Hive 3+ client named them, for a read to cache its answer in that spelling)."""
        method = message.name
        policy = self.policy
        route = self._route(method, args)
        if route is None:
            policy.authorize(conn, method, kind, self.federation.default, call)
            return self._global(conn, message)
        policy.authorize(conn, method, kind, route.catalog, call,
                         lambda: ".".join(part for part in self._scope(route, method, args) if part))
        gate = self.commit_gate
        if gate is None or method not in _GATED_READS or conn.internal:
            # catalogd's own reads (the roll-forward's) do not wait on the pointers they move.
            return self._serve_routed(conn, message, args, route, kind, call, spelling)
        if method in _SINGLE_TABLE_READS:
            if gate.tables:  # only while a transaction moves pointers: one truth test otherwise
                self._wait_gate(gate, method, args)
            return self._serve_routed(conn, message, args, route, kind, call, spelling)
        # Several tables in one answer: read again when a transaction began moving pointers
        # during the read (the answer could hold one table moved and another not).
        while True:
            generation = gate.generation
            if gate.tables:
                self._wait_gate(gate, method, args)
            reply = self._serve_routed(conn, message, args, route, kind, call, spelling)
            if gate.generation == generation:
                return reply
            args = decode(_ARGS[method](), message.body)
            if spelling is not None:
                spelling.spelt = False

    def _serve_routed(self, conn: ClientConnection, message: Message, args: Any, route: _Route,
                      kind: methods.Kind, call: CallRecord, spelling: Spelling | None) -> bytes:
        method = message.name
        policy = self.policy
        catalog = self.manager.catalogs().get(route.catalog)
        if catalog is None:
            raise Refused(hms.NoSuchObjectException(message=f"catalogd: no catalog {route.catalog!r}"),
                          CatalogNotFoundError(f"no catalog {route.catalog!r}"))
        if not catalog.hms_served:
            raise Refused(hms.NoSuchObjectException(
                message=f"catalogd: catalog {route.catalog!r} is a {catalog.info().type} catalog, which HMS clients "
                        "cannot read: use catalogd.spark's reader or the database itself"),
                UnsupportedError(f"catalog {route.catalog!r} is a {catalog.info().type} catalog, which HMS clients "
                                 "cannot read"))
        writes = kind is methods.Kind.WRITE
        if writes:
            policy.check_writable(route.catalog, method)
            # Before any catalog sees it: a write catalogd cannot judge is never relayed.
            refused = rules.refusal(method)
            if refused is not None:
                raise meta_error(refused, PermissionDeniedError)
            if method == "create_database":
                spark_default_location(args.database)
        target = catalog.relay_target()
        if target is None:
            return self._memory(conn, message, args, route)
        if writes:
            return self._write(conn, message, args, route, catalog, target, call)
        return self._read(conn, message, args, route, target, spelling)

    def _wait_gate(self, gate: CommitGate, method: str, args: Any) -> None:
        """Wait until no transaction moves the pointer of a table the call reads."""
        federation = self.federation
        for database, table in methods.target_in_args(method, args):
            place = federation.locate(database)
            if place is not None and table:
                gate.wait(place.catalog, place.database, table)

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
                raise Refused(hms.NoSuchObjectException(message=f"catalogd: no catalog has a database {name!r}"),
                              DatabaseNotFoundError(f"no catalog has a database {name!r}"))
            places.append(place)
        catalogs = {p.catalog for p in places}
        if len(catalogs) > 1:
            raise meta_error(f"catalogd: {method} cannot span catalogs ({', '.join(sorted(catalogs))})",
                             InvalidArgumentError)
        return _Route(places[0].catalog, places)

    def _to_backing(self, method: str, args: Any, catalog: str) -> None:
        self.rewriting.to_backing(method, args, catalog)

    def _to_client(self, method: str, result: Any, catalog: str) -> None:
        self.rewriting.to_client(method, result, catalog)

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

    @staticmethod
    def _caching(target: RelayTarget) -> CachedCalls:
        """The catalog's metastore client behind the metadata cache (the catalog's own reads
        and writes use it too)."""
        return target.cached_calls()

    def _read(self, conn: ClientConnection, message: Message, args: Any, route: _Route,
              target: RelayTarget, spelling: Spelling | None = None) -> bytes:
        method = message.name
        prefix = self.rewriting.prefix(route.catalog)
        prefixed = bool(prefix)
        rewritten = prefixed or method in LISTINGS or spelling is not None
        # A cache that is off (cache.ttl 0s) is skipped, so the reply goes back as it came.
        caching = self._caching(target)
        found = None
        if method in _CACHED_READS and caching.enabled and not self.locked_reads.guarded(
                self._scope(route, method, args)):
            # The metastore's reply as relayed (RAW), or the one rewritten here for the client.
            form = f"hms:{prefix}" if rewritten else RAW
            if spelling is not None:  # the answer as a Hive 3+ client's spelling has it
                form = f"{form}:{spelling.form()}"
                spelling.spelt = True
            scope = self._scope(route, method, args)
            found = caching.lookup(scope, method, message.body, form)
            if spelling is None:
                # The client's own bytes (a spelt call's were re-encoded): its next same call
                # goes straight to the lookup (``_known_hit``).
                self._note_plan(conn, message, scope, form, caching)
            if found.body is not None:
                return header(method, REPLY, message.seqid) + found.body
        if prefixed:
            self._to_backing(method, args, route.catalog)
            reply = self._relay(target, conn, encode(method, CALL, message.seqid, args), retry=True)
        else:
            reply = self._relay(target, conn, message.raw, retry=True)
        if reply.type != REPLY:
            return reply.raw
        if found is None and not rewritten:
            return reply.raw
        body = reply.body
        if rewritten:
            result = decode(_RESULTS[method](), body)
            if method in LISTINGS:
                hide_stages(result)
            self._to_client(method, result, route.catalog)
            if spelling is not None:
                spelling.reply(method, result)
                spelling.spelt = True
            body = encode(method, REPLY, message.seqid, result)[len(header(method, REPLY, message.seqid)):]
        if found is not None:
            found.keep(body)
        return header(method, REPLY, message.seqid) + body

    def _databases(self, conn: ClientConnection, message: Message, args: Any,
                   principal: Principal | None = None, door: Door | None = None) -> bytes:
        """get_databases / get_all_databases: every (readable) catalog's, under their client names
        (through a native ``door``: that catalog's, by their own names)."""
        pattern = getattr(args, "pattern", None)
        federation = self.federation
        native = door.catalog if door is not None else None
        names: set[str] = set()
        for name, catalog in self.manager.catalogs().items():
            if not catalog.hms_served or not self.policy.readable(principal, name):
                continue
            if native is not None and name != native:
                continue
            target = catalog.relay_target()
            try:
                if target is not None:
                    found = self._upstream(target, conn, "get_all_databases",
                                           ThriftHiveMetastore.get_all_databases_args()).success or []
                else:
                    found = catalog.list_databases()
            except (Refused, CatalogError) as e:
                if name == federation.default:
                    raise
                logger.warning("HMS endpoint: databases of catalog %s left out: %s", name, e)
                continue
            for database in found:
                if native is not None:
                    if matches_pattern(database, pattern):
                        names.add(database)
                    continue
                if federation.visible(name, database):
                    client = federation.client_name(name, database)
                    if matches_pattern(client, pattern):
                        names.add(client)
        result = _RESULTS[message.name](success=sorted(names))
        return self._reply(message.name, message.seqid, result)

    def _table_meta(self, conn: ClientConnection, message: Message, args: Any,
                    principal: Principal | None = None, door: Door | None = None) -> bytes:
        """get_table_meta(db_patterns, tbl_patterns, tbl_types) across (readable) catalogs, stages left out
        (through a native ``door``: that catalog's, by their own names; a ``door`` sets ``catName``)."""
        federation = self.federation
        native = door.catalog if door is not None else None
        metas: list[Any] = []
        for name, catalog in self.manager.catalogs().items():
            if not catalog.hms_served or not self.policy.readable(principal, name):
                continue
            if native is not None and name != native:
                continue
            target = catalog.relay_target()
            if target is None:
                try:
                    found = self._store(name).call("get_table_meta", _ARGS["get_table_meta"](
                        db_patterns="*", tbl_patterns=args.tbl_patterns, tbl_types=args.tbl_types))
                except Exception as e:  # a memory catalog that cannot answer leaves out its tables
                    logger.debug("HMS endpoint: get_table_meta on %s: %s", name, e)
                    continue
            else:
                request = _ARGS["get_table_meta"](db_patterns="*", tbl_patterns=args.tbl_patterns,
                                                  tbl_types=args.tbl_types)
                found = self._upstream(target, conn, "get_table_meta", request).success or []
            for meta in found:
                if is_stage_table(meta.tableName):
                    continue
                if native is None:
                    if not federation.visible(name, meta.dbName):
                        continue
                    meta.dbName = federation.client_name(name, meta.dbName)
                if matches_pattern(meta.dbName, args.db_patterns):
                    if door is not None and hasattr(meta, "catName"):
                        meta.catName = door.written
                    metas.append(meta)
        return self._reply(message.name, message.seqid, _RESULTS[message.name](success=metas))

    # ------------------------------------------------------------ writes

    def _write(self, conn: ClientConnection, message: Message, args: Any, route: _Route, catalog: Catalog,
               target: RelayTarget, call: CallRecord) -> bytes:
        method = message.name
        place = self.rewriting.place
        targets = [(place(db), table) for db, table in methods.target_in_args(method, args)]
        touched = [(database.lower(), (table or "").lower()) for database, table in targets]
        # Invalidated however the write ends: it may have happened before the answer was lost.
        with self._caching(target).writing(method, touched):
            self.policy.check_write(method, args, route.catalog, targets,
                                    lambda database, table: self._current_table(target, conn, database, table),
                                    conn, call, catalog.stage_owner)
            upstream = functools.partial(self._upstream, target, conn)
            dropped = self.drops.drop(method, args, catalog, target, self.rewriting.place,
                                      lambda database, table: self._current_table(target, conn, database, table),
                                      upstream)
            if dropped is not None:
                return self._reply(method, message.seqid, dropped)
            check_move(method, args, self.rewriting.place, upstream)
            if rules.rule_of(method) is not rules.Rule.CLAIM:
                return self._relay_write(conn, message, args, route, target)
            # Checked and relayed under the files lock: no other write takes the directory between.
            with target.files():
                check_claims(claims_of(method, args, self.rewriting.place, upstream, catalog.stage_owner),
                             target, method)
                return self._relay_write(conn, message, args, route, target)

    def _relay_write(self, conn: ClientConnection, message: Message, args: Any, route: _Route,
                     target: RelayTarget) -> bytes:
        method = message.name
        prefixed = bool(self.rewriting.prefix(route.catalog))
        if prefixed or method == "create_database":
            # Renamed, or a made-up location taken out (spark_default_location).
            self._to_backing(method, args, route.catalog)
            reply = self._relay(target, conn, encode(method, CALL, message.seqid, args), retry=False)
        else:
            reply = self._relay(target, conn, message.raw, retry=False)
        if reply.type == REPLY and prefixed:
            result = decode(_RESULTS[method](), reply.body)
            self._to_client(method, result, route.catalog)
            return self._reply(method, message.seqid, result)
        return reply.raw

    def _current_table(self, target: RelayTarget, conn: ClientConnection, database: str, table: str) -> Any | None:
        result = self._upstream(target, conn, "get_table", ThriftHiveMetastore.get_table_args(database, table))
        return result.success

    # ------------------------------------------------------------ memory catalogs, globals, locks

    def memory_store(self, catalog: str) -> MemoryStore:
        """The store that serves memory catalog ``catalog`` on the endpoint."""
        return self._store(catalog)

    def _store(self, catalog: str) -> MemoryStore:
        if self._memory_store is None:
            raise meta_error(f"catalogd: memory catalog {catalog!r} is not served on the HMS endpoint",
                             UnsupportedError)
        return self._memory_store(catalog)

    def _memory(self, conn: ClientConnection, message: Message, args: Any, route: _Route) -> bytes:
        method = message.name
        store = self._store(route.catalog)
        self._to_backing(method, args, route.catalog)
        # A memory catalog answers the Hive 2.3 IDL: a Hive 3/4 call is said in 2.3 (None: it cannot be).
        said = downgrade.as_hive2(method, args) if method in downgrade.EQUIVALENTS else None
        try:
            if said is not None:
                value = store.call(*said)
                hive2_result = _RESULTS[said[0]]
                made = hive2_result(success=value) if "success" in _field_names(hive2_result) else hive2_result()
                result = downgrade.result_of(method, args, made)
                self._to_client(method, result, route.catalog)
                return self._reply(method, message.seqid, result)
            value = store.call(method, args)
        except (hms.MetaException, hms.NoSuchObjectException, hms.AlreadyExistsException,
                hms.InvalidObjectException, hms.InvalidOperationException, hms.InvalidInputException,
                hms.UnknownDBException, hms.UnknownTableException, hms.InvalidPartitionException,
                hms.UnknownPartitionException) as e:
            raise Refused(e) from None
        result = _RESULTS[method](success=value) if "success" in _field_names(_RESULTS[method]) else \
            _RESULTS[method]()
        if method in LISTINGS:
            hide_stages(result)
        self._to_client(method, result, route.catalog)
        return self._reply(method, message.seqid, result)

    def _global(self, conn: ClientConnection, message: Message) -> bytes:
        """A call that names no database (or one catalogd does not know): the default catalog's metastore."""
        target = self._target(self.federation.default)
        if target is None:
            app = TApplicationException(TApplicationException.UNKNOWN_METHOD,
                                        f"catalogd: {message.name} is not served for a memory default catalog")
            return encode(message.name, EXCEPTION, message.seqid, app)
        kind = methods.kind(message.name)
        return self._relay(target, conn, message.raw, retry=kind is methods.Kind.GLOBAL_READ).raw

    def _set_ugi(self, conn: ClientConnection, message: Message, call: CallRecord) -> bytes:
        too_large = limits.set_ugi_error(len(message.body))
        if too_large is not None:
            raise Refused(too_large, InvalidArgumentError(plain(message_of(too_large))))
        args = decode(ThriftHiveMetastore.set_ugi_args(), message.body)
        too_long = limits.identity_error(args.user_name)
        if too_long is not None:
            raise Refused(too_long, InvalidArgumentError(plain(message_of(too_long))))
        groups = list(args.group_names or [])
        if conn.proven is not None:
            # A proven identity stays: set_ugi to oneself is a no-op (clients call it), to anyone
            # else an attempt to act as them.
            proven = conn.identity[0] if conn.identity else ""
            if (args.user_name or "") != proven:
                raise self.policy.denied(
                    conn, "set_ugi", call, f"catalogd: permission denied: the connection is {proven!r} "
                    f"(proven by {conn.proven} {conn.proven_name!r}); set_ugi cannot make it {args.user_name!r}")
            conn.identity = (proven, tuple(groups))
        else:
            conn.identity = (args.user_name or "", tuple(groups))
        return self._reply("set_ugi", message.seqid, ThriftHiveMetastore.set_ugi_result(success=groups))

    def _delegation_call(self, conn: ClientConnection, message: Message, call: CallRecord) -> bytes:
        """get/renew/cancel_delegation_token, answered by catalogd's own tokens (audited)."""
        from catalogd.errors import PermissionDeniedError

        auth = self.delegation
        assert auth is not None
        method = message.name
        args = decode(getattr(ThriftHiveMetastore, f"{method}_args")(), message.body)
        result_type = getattr(ThriftHiveMetastore, f"{method}_result")
        try:
            if method == "get_delegation_token":
                value: Any = auth.get_delegation_token(conn, args.token_owner or "",
                                                       args.renewer_kerberos_principal_name or "")
                detail = f"renewer {args.renewer_kerberos_principal_name!r}"
            elif method == "renew_delegation_token":
                value = auth.renew_delegation_token(conn, args.token_str_form or "")
                detail = f"until {value} ms"
            else:
                auth.cancel_delegation_token(conn, args.token_str_form or "")
                value, detail = None, None
        except PermissionDeniedError as e:
            raise self.policy.denied(conn, method, call, f"catalogd: permission denied: {e.message}") from None
        if self.policy.audit is not None:
            name = conn.identity[0] if conn.identity else None
            self.policy.audit.record(principal=name, surface=conn.surface, client=conn.peer, operation=method,
                                     object=None, outcome="ok", detail=detail)
        result = result_type() if method == "cancel_delegation_token" else result_type(success=value)
        return self._reply(method, message.seqid, result)

    def _locks(self, conn: ClientConnection, message: Message, call: CallRecord) -> bytes:
        """The lock API: catalogd's rules on what a lock names, then the lock keeper (the default
        catalog's metastore, or ``self.locks`` where there is none)."""
        method = message.name
        kind = methods.kind(method)
        federation = self.federation
        args = decode(_ARGS[method](), message.body)
        guard: Guard | None = None
        if method in ("lock", "show_locks"):
            # A Hive 3+ client's (and the REST door's) ``@catalog#db`` in the 2.3 spelling, so
            # that every door's lock on a table is one lock to the keeper.
            self.names.unwrap(method, args)
        if method == "lock":
            # Judged per component, each by its own catalog: a reader of any catalog gets this far.
            self.policy.authorize(conn, method, kind, None, call)
            check_components(args.rqst, federation, self.policy, conn, call,
                             self.manager.config.server.hms_max_lock_components)
            owner = owner_of(self.policy, call)
            if owner is not None:
                # The keeper records the holder: the user a client sends is only its claim.
                args.rqst.user = owner
        else:
            self.policy.authorize(conn, method, kind, federation.default, call)
            # heartbeat's request is called ``ids``; the others' ``rqst``.
            lockid = (args.ids if method == "heartbeat" else args.rqst).lockid if method in GUARDED else None
            if lockid:
                guard = guard_for(self.policy, federation, conn, call, method, lockid)
        if self.locks is not None:
            return self._lock_call(conn, message, args, call, guard)
        target = self._target(federation.default)
        if target is None:
            return self._global(conn, message)
        if guard is not None:
            assert lockid
            absent = self._guard_relayed(target, conn, method, message.seqid, lockid, guard)
            if absent is not None:
                return absent
        if method == "heartbeat":
            return self._global(conn, message)
        if method == "unlock":
            self.locked_reads.released(args.rqst.lockid or 0)
            self.lock_owners.forget(args.rqst.lockid or 0)
            return self._global(conn, message)
        if method == "check_lock":
            reply = self._relay(target, conn, message.raw, retry=False)
            if reply.type == REPLY:
                answer = decode(_RESULTS[method](), reply.body).success
                if answer is not None and answer.state == hms.LockState.ACQUIRED:
                    self.locked_reads.granted(answer.lockid)
            return reply.raw
        # HMS 2.3 keeps a lock's names as sent: "DB.T" and "db.t" would be two objects to it.
        lower_names(args.rqst)
        if method == "lock":
            scopes = locked_scopes(args.rqst, federation)
            # Before the lock can be granted: its holder's reads must not come from the cache.
            self.locked_reads.asked(scopes)
            reply = self._relay(target, conn, encode(method, CALL, message.seqid, args), retry=False)
            if reply.type == REPLY:
                answer = decode(_RESULTS[method](), reply.body).success
                if answer is not None and answer.state == hms.LockState.WAITING:
                    self.locked_reads.asked(scopes, answer.lockid, waiting=True)
                if answer is not None and answer.lockid and owner_of(self.policy, call) is not None:
                    self.lock_owners.remember(answer.lockid, Holder(
                        args.rqst.user, frozenset((c.dbname or "").lower() for c in args.rqst.component or [])))
            return reply.raw
        reply = self._relay(target, conn, encode(method, CALL, message.seqid, args), retry=True)
        if reply.type != REPLY:
            return reply.raw
        result = decode(_RESULTS[method](), reply.body)
        visible_locks(result, federation, self.policy, call.principal)
        return self._reply(method, message.seqid, result)

    def _guard_relayed(self, target: RelayTarget, conn: ClientConnection, method: str, seqid: int,
                       lockid: int, guard: Guard) -> bytes | None:
        """Check, before it is relayed, that the caller may make ``method`` of the metastore's lock
        ``lockid`` (raises ``Refused``); the answer for a lock the metastore does not have (given
        here, not relayed: a lock taken after the metastore was read must not be reached
        unchecked), or None to relay the call."""
        def read() -> list[Any]:
            result = self._upstream(target, conn, "show_locks",
                                    ThriftHiveMetastore.show_locks_args(rqst=hms.ShowLocksRequest()))
            return list(result.success.locks or []) if result.success is not None else []

        holder = self.lock_owners.holder(lockid, read)
        if holder is not None:
            guard(holder)
            return None
        if method == "unlock":  # HMS 2.3's unlock of a lock that is gone is a no-op
            return self._reply(method, seqid, ThriftHiveMetastore.unlock_result())
        sep = ":" if method == "heartbeat" else ""
        raise Refused(hms.NoSuchLockException(message=f"No such lock{sep} lockid:{lockid}"))

    def _lock_call(self, conn: ClientConnection, message: Message, args: Any, call: CallRecord,
                   guard: Guard | None) -> bytes:
        """A lock call answered by catalogd's in-memory lock manager."""
        assert self.locks is not None
        method = message.name
        # heartbeat's request is called ``ids``; the others' ``rqst``.
        request = args.ids if method == "heartbeat" else args.rqst
        try:
            if method == "lock":
                # Bounded per connection (named once: a peer's port is reused) and per principal,
                # never per host: one client must not take the room of the others on its host.
                name = conn.state.get("lock-connection")
                if name is None:
                    name = conn.state["lock-connection"] = f"{conn.peer}#{next(self._connections)}"
                value = self.locks.lock(request, connection=str(name), principal=owner_of(self.policy, call))
            elif method == "show_locks":
                value = self.locks.show_locks(request)
            else:
                value = getattr(self.locks, method)(request, allow=guard)
        except (hms.NoSuchLockException, hms.NoSuchTxnException, hms.TxnAbortedException,
                hms.TxnOpenException, hms.MetaException) as e:
            raise Refused(e) from None
        result = _RESULTS[method](success=value) if "success" in _field_names(_RESULTS[method]) else \
            _RESULTS[method]()
        if method == "show_locks":
            visible_locks(result, self.federation, self.policy, call.principal)
        return self._reply(method, message.seqid, result)


# ---------------------------------------------------------------- helpers



def _backend(target: RelayTarget) -> tuple[str, tuple[tuple[str, int], ...]]:
    """A metastore as the calls it lacks are remembered: its catalog and addresses (another one there may have them)."""
    return target.name, tuple(target.addresses())


def _field_names(cls: Any) -> set[str]:
    return {spec[2] for spec in cls.thrift_spec if spec}
