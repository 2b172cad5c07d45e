"""Who may make an HMS call and which writes no client may make: catalogd's rules at the endpoint.

Access control apart from mapping (as Waggle Dance keeps ``server/security`` apart from
``mapping``): this module decides and records, the router dispatches, ``rewriting`` maps.

* auth: with auth enabled, the connection's user (proven by Kerberos, a certificate or a
  delegation token, or only asserted by ``set_ugi``) must be a principal holding the call's
  role (``catalogd.auth.operations.hms_role``) on the call's catalog (global calls: the default
  catalog; listings across catalogs: any catalog). An asserted user is refused unless
  ``auth.trust-asserted-users`` names a role, and then acts with its grants capped at it;
* audit: every write and every denial goes to the audit log;
* read-only catalogs refuse writes (a reader's global writes, such as locks, excepted);
* reserved parameters: no write may set or remove ``catalogd.*`` parameters (a dynamic
  table's definition, a stage's marks);
* dynamic tables: no write but their drop (catalogd refreshes them);
* stages: with auth enabled, a staging table is written (altered, dropped, its partitions
  or statistics changed) only by the principal that began its stage, or an admin of its
  catalog, as the Thrift API lets only them end the stage. The owner is read from the
  table the write names (fetched for the rules above anyway) and believed only when
  catalogd's signature covers it (``Catalog.stage_owner``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from thrift.Thrift import TApplicationException

from catalogd.auth.model import ANONYMOUS, Principal, Role
from catalogd.auth.operations import hms_role
from catalogd.catalog.base import RESERVED_PROPERTY_PREFIX, STAGE_TABLE_PREFIX, is_stage_table
from catalogd.catalog.hive_codec import DYNAMIC_PREFIX
from catalogd.errors import PermissionDeniedError
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import downgrade, methods
from catalogd.hms.refused import Refused, message_of, meta_error
from catalogd.metastore.messages import EXCEPTION, decode, parse_message

if TYPE_CHECKING:
    from catalogd.auth.audit import AuditLog
    from catalogd.auth.model import Authority
    from catalogd.hms.server import ClientConnection
    from catalogd.manager import CatalogManager

logger = logging.getLogger(__name__)

__all__ = ["DROP_TABLE", "READER_GLOBAL_WRITES", "CallRecord", "CurrentTable", "Policy", "StageOwner", "is_dynamic"]

#: Global writes a reader makes (locks, transactions, its session's tokens): allowed on a
#: read-only default catalog; every other global write (roles, grants, keys, compactions,
#: file metadata, setMetaConf) is a metadata write and refused there.
READER_GLOBAL_WRITES = frozenset({
    "lock", "check_lock", "unlock", "heartbeat", "heartbeat_txn_range", "open_txns", "commit_txn", "abort_txn",
    "abort_txns", "get_delegation_token", "renew_delegation_token", "cancel_delegation_token",
    # Hive 4's reader records the write ids its open transaction reads (for the cleaner).
    "add_write_ids_to_min_history",
})
DROP_TABLE = frozenset({"drop_table", "drop_table_with_environment_context"})
#: A dynamic table is written only by these (and by catalogd): its drop.
_DROPS_OF_A_TABLE = DROP_TABLE | {"drop_table_req"}
_CREATE_TABLE = frozenset({"create_table", "create_table_with_environment_context", "create_table_with_constraints"})
_ALTER_TABLE = frozenset({"alter_table", "alter_table_with_environment_context", "alter_table_with_cascade"})

#: What the audit log calls a connection that never called set_ugi.
_NO_UGI = "a connection without set_ugi"
#: How a connection proves who it is (the way out of a refusal of an asserted user).
PROVE = ("authenticate with Kerberos (auth.kerberos), a client certificate (server.tls.client-ca) or a "
         "delegation token, or set auth.trust-asserted-users to the highest role a set_ugi user may have")

#: The table as the metastore has it now (None: none), for the rules that depend on it.
CurrentTable = Callable[[str, str], Any]
#: Who began the stage of a staging table as the metastore has it, when catalogd signed it
#: (None: unsigned, so no owner catalogd can vouch for): ``Catalog.stage_owner``.
StageOwner = Callable[[Any], str | None]


@dataclass
class CallRecord:
    """What one call's authorization found, for its audit line and for listings across catalogs."""

    principal: Principal | None = None
    #: The call writes metadata: its outcome is audited.
    audited: bool = False
    object: str | None = None


class Policy:
    """The endpoint's rules (see the module docstring).

    Args:
        manager: the catalogs and their configuration (read per call: a reload changes them).
        authority: who may do what; None: everyone may do everything.
        audit: where writes and denials are recorded; None: nowhere.
    """

    def __init__(self, manager: CatalogManager, authority: Authority | None = None,
                 audit: AuditLog | None = None) -> None:
        self.manager = manager
        self.authority = authority
        self.audit = audit

    # ------------------------------------------------------------ authorization

    def authorize(self, conn: ClientConnection, method: str, kind: methods.Kind | None, catalog: str | None,
                  call: CallRecord, obj: Callable[[], str] | None = None) -> None:
        """Refuse the call unless the connection's set_ugi user holds its role on ``catalog``
        (None: on any catalog); note what the audit line of a write needs."""
        needed = hms_role(kind.value if kind is not None else None, method)
        writes = kind is methods.Kind.WRITE or (kind is methods.Kind.GLOBAL_WRITE and method not in
                                                READER_GLOBAL_WRITES) or kind is None
        call.audited = writes and self.audit is not None
        authority = self.authority
        if call.audited:
            call.object = obj() if obj is not None else catalog
        if authority is None or not authority.enabled or conn.internal:
            call.principal = ANONYMOUS
            return
        user = conn.identity[0] if conn.identity else None
        asserted = bool(user) and conn.proven is None
        trust = self.manager.config.auth.trust_asserted_users
        if asserted and trust == "none":
            if self.audit is not None and call.object is None:
                call.object = obj() if obj is not None else catalog
            raise self.denied(conn, method, call, f"catalogd: permission denied: user {user!r} is only asserted by "
                                                  f"set_ugi, which auth.trust-asserted-users (none) does not trust: "
                                                  f"{PROVE}")
        cap = Role.parse(trust) if asserted else None
        principal = authority.principal_named(user, cap) if user else None
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
        elif principal is not None and cap is not None and \
                authority.role_of(Principal(principal.name), catalog) != authority.role_of(principal, catalog):
            who += f" (only asserted by set_ugi: auth.trust-asserted-users caps it at {cap.label})"
        where = f"catalog {catalog}" if catalog is not None else "any catalog"
        if self.audit is not None and call.object is None:
            call.object = obj() if obj is not None else catalog
        raise self.denied(conn, method, call,
                           f"catalogd: permission denied: {who} needs role {needed.label} on {where} for {method}")

    def denied(self, conn: ClientConnection, method: str, call: CallRecord, text: str) -> Refused:
        """The refusal of a call the principal may not make, recorded as a denial (not as a
        write that failed)."""
        call.audited = False
        if self.audit is not None:
            user = conn.identity[0] if conn.identity else None
            self.audit.record(principal=user or None, surface=conn.surface, client=conn.peer, operation=method,
                              object=call.object, outcome="denied", detail=text)
        return meta_error(text, PermissionDeniedError)

    def readable(self, principal: Principal | None, catalog: str) -> bool:
        """Whether a listing across catalogs shows ``catalog`` to ``principal``."""
        authority = self.authority
        if authority is None or not authority.enabled:
            return True
        return principal is not None and authority.allows(principal, catalog, hms_role("read"))

    # ------------------------------------------------------------ audit

    def record(self, conn: ClientConnection, method: str, call: CallRecord, outcome: str,
               detail: str | None) -> None:
        """One audit line for an audited call."""
        assert self.audit is not None
        name = call.principal.name if call.principal is not None else None
        self.audit.record(principal=name, surface=conn.surface, client=conn.peer, operation=method, object=call.object,
                          outcome=outcome, detail=detail)

    def audit_reply(self, conn: ClientConnection, method: str, call: CallRecord, reply: bytes) -> None:
        """Audit a write by what its reply says: an HMS exception in the result is an error."""
        outcome, detail = "ok", None
        try:
            answer = parse_message(reply)
            result_type = getattr(ThriftHiveMetastore, f"{method}_result", None)
            if answer.type == EXCEPTION:
                outcome = "error"
                detail = decode(TApplicationException(), answer.body).message
            elif result_type is not None:
                result = decode(result_type(), answer.body)
                failure = next((value for key, value in vars(result).items()
                                if key != "success" and value is not None), None)
                if failure is not None:
                    outcome, detail = "error", message_of(failure)
        except Exception as e:  # an answer we cannot read is still recorded
            logger.debug("HMS endpoint: reading the reply of %s for the audit log: %s", method, e)
        self.record(conn, method, call, outcome, detail)

    # ------------------------------------------------------------ writes

    def check_writable(self, catalog: str, method: str) -> None:
        """Refuse a write to a read-only catalog."""
        conf = self.manager.config.catalog(catalog)
        if conf is not None and conf.read_only:
            raise meta_error(f"catalogd: catalog {catalog!r} is read-only: {method} refused", PermissionDeniedError)

    def check_write(self, method: str, args: Any, catalog: str, targets: list[tuple[str, str]],
                    current: CurrentTable, conn: ClientConnection | None = None, call: CallRecord | None = None,
                    stage_owner: StageOwner | None = None) -> None:
        """Refuse what no client may do through the endpoint, or this client may not (raises ``Refused``).

        Args:
            targets: the (database, table) the write names, as the catalog knows them.
            current: reads a target table as the metastore has it now.
            conn, call: the caller and what its authorization found (the principal the stage
                rule compares with a stage's owner, and where a denial is recorded).
            stage_owner: the owner of a staging table (``Catalog.stage_owner``); None: no
                staging table has an owner catalogd vouches for (only an admin writes one).
        """
        # A Hive 3/4 call (create_table_req, alter_table_req, ...) is judged as its Hive 2.3 equivalent.
        judged, judged_args = downgrade.judged_as(method, args)
        new_tables = list(methods.tables_in(args))
        for table in new_tables:
            reserved = _reserved(table.parameters)
            if judged in _CREATE_TABLE and reserved:
                raise meta_error(f"catalogd: parameters {reserved} are catalogd's own (a dynamic table's "
                                 f"definition, a stage's marks); {method} refused", PermissionDeniedError)
        for database in methods.databases_in_args(judged, judged_args) if judged in ("create_database",
                                                                                      "alter_database") else []:
            db_obj = getattr(judged_args, "database", None) or getattr(judged_args, "db", None)
            if db_obj is not None and _reserved(getattr(db_obj, "parameters", None)):
                raise meta_error(f"catalogd: parameters starting with {RESERVED_PROPERTY_PREFIX!r} on database "
                                 f"{database} are catalogd's own; {method} refused", PermissionDeniedError)
        tables = {(d, t) for d, t in targets if t}
        owners = self._owners_checked(conn, call)
        for database, table in sorted(tables):
            found = None
            try:
                found = current(database, table)
            except Refused as refused:
                if not isinstance(refused.exc, hms.NoSuchObjectException | hms.MetaException):
                    raise
                if owners and is_stage_table(table) and isinstance(refused.exc, hms.MetaException):
                    # Whose stage it is cannot be told: fail closed rather than let anyone write it.
                    raise meta_error(f"catalogd: cannot read staging table {catalog}.{database}.{table} to tell "
                                     f"whose stage it is ({message_of(refused.exc)}); {method} refused",
                                     PermissionDeniedError) from None
            if found is None:
                continue
            if owners and is_stage_table(table):
                assert conn is not None and call is not None
                self._check_stage_owner(conn, call, method, catalog, database, table,
                                        stage_owner(found) if stage_owner is not None else None)
            params = found.parameters or {}
            if is_dynamic(params) and not is_stage_table(table) and method not in _DROPS_OF_A_TABLE:
                raise meta_error(f"catalogd: {catalog}.{database}.{table} is a dynamic table: {method} "
                                 "refused (catalogd refreshes it; change it with `catalogd dt`)", PermissionDeniedError)
            if judged in _ALTER_TABLE and judged_args.new_tbl is not None and \
                    _reserved_map(judged_args.new_tbl.parameters) != _reserved_map(params):
                raise meta_error(f"catalogd: {method} of {catalog}.{database}.{table} would set or "
                                 f"remove catalogd's own parameters ({RESERVED_PROPERTY_PREFIX}*); refused",
                                 PermissionDeniedError)

    # ------------------------------------------------------------ stages

    def _owners_checked(self, conn: ClientConnection | None, call: CallRecord | None) -> bool:
        """Whether writes to staging tables are limited to their owners: with auth on (off, a
        stage's owner is free text its writer sent, and anyone may end any stage)."""
        authority = self.authority
        return authority is not None and authority.enabled and conn is not None and call is not None

    def _check_stage_owner(self, conn: ClientConnection, call: CallRecord, method: str, catalog: str,
                           database: str, table: str, owner: str | None) -> None:
        """Refuse a write to a staging table by anyone but its stage's owner or an admin of its catalog.

        The same principals the Thrift API lets heartbeat, commit or abort the stage: whoever
        else altered or dropped its table would end it behind its owner's back (the owner's
        commit then finds no stage). ``owner`` None: catalogd did not sign the table, so the
        owner it names is anyone's claim and only an admin may write it.
        """
        authority = self.authority
        principal = call.principal
        assert authority is not None
        if principal is not None and owner and owner == principal.name:
            return
        if principal is not None and authority.allows(principal, catalog, Role.ADMIN):
            return
        user = conn.identity[0] if conn.identity else None
        key = table.lower()[len(STAGE_TABLE_PREFIX):]
        if owner is None:
            whose = "which catalogd did not sign (its owner is unknown)"
        else:
            whose = f"which {owner or 'another principal'} began"
        if call.object is None:
            call.object = f"{catalog}.{database}.{table}"
        raise self.denied(conn, method, call,
                           f"catalogd: permission denied: user {user!r} needs role admin on catalog {catalog} for "
                           f"{method} of staging table {database}.{table} (stage {catalog}.{database}.{key}), "
                           f"{whose}")


def is_dynamic(params: dict[str, str] | None) -> bool:
    """Whether a table's parameters define a dynamic table."""
    return any(k.startswith(DYNAMIC_PREFIX) for k in (params or {}))


def _reserved(params: dict[str, str] | None) -> list[str]:
    return sorted(k for k in (params or {}) if k.lower().startswith(RESERVED_PROPERTY_PREFIX))


def _reserved_map(params: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (params or {}).items() if k.lower().startswith(RESERVED_PROPERTY_PREFIX)}
