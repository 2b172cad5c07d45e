"""catalogd's rules on the objects an HMS lock names, wherever the lock is kept.

Locks are kept by the default catalog's metastore (its transaction tables) or, with no
metastore database, by catalogd's in-memory ``LockManager``; either way the endpoint first
judges each component of a ``lock`` request by the catalog its database belongs to:

* the catalog must exist (a name no catalog has is refused, as routing refuses it);
* grants: a shared-read lock needs the reader role on that catalog, a shared-write or an
  exclusive lock the writer role (a reader could otherwise stall every writer of a table);
* read-only catalogs take shared-read locks only (their tables are never written here);
* staging tables are hidden: no lock names one (their stage's commit is catalogd's), and
  ``show_locks`` leaves them out, with the locks on catalogs the caller cannot read.

Components keep the names clients use (``<prefix>db`` for a prefixed catalog): the lock
tables are one name space for the whole endpoint, the same on every daemon of a deployment
(they share their catalogs' config), and a name maps to one (catalog, database).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catalogd.auth.operations import hms_role
from catalogd.catalog.base import is_stage_table
from catalogd.errors import DatabaseNotFoundError, InvalidArgumentError, PermissionDeniedError
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.refused import meta_error

if TYPE_CHECKING:
    from catalogd.auth.model import Principal
    from catalogd.hms.federation import Federation
    from catalogd.hms.policy import CallRecord, Policy
    from catalogd.hms.server import ClientConnection

__all__ = ["check_components", "locked_scopes", "lower_names", "visible_locks"]

#: Lock types that guard a write: they need the writer role and a writable catalog.
_WRITING = frozenset({hms.LockType.SHARED_WRITE, hms.LockType.EXCLUSIVE})


def check_components(request: Any, federation: Federation, policy: Policy, conn: ClientConnection,
                     call: CallRecord, max_components: int) -> None:
    """Refuse a ``lock`` request one of whose components breaks a rule, or that has more than
    ``max_components`` (raises ``Refused``)."""
    count = len(request.component or [])
    if count > max_components:
        # Before any work per component, and before the lock keeper sees it.
        raise meta_error(f"catalogd: a lock request of {count} components is over the limit of {max_components} "
                         "(server.hms-max-lock-components)", InvalidArgumentError)
    for component in request.component or []:
        db = component.dbname
        if not db:
            continue  # the lock manager refuses it with its own message
        place = federation.locate(db)
        if place is None:
            raise meta_error(f"catalogd: no catalog has a database {db!r}: lock refused", DatabaseNotFoundError)
        table = component.tablename or ""
        what = f"{db}.{table}" if table else db
        if table and is_stage_table(table):
            raise meta_error(f"catalogd: {what} is a staging table, which only its stage's commit changes: "
                             "no lock may name it", PermissionDeniedError)
        writes = component.type in _WRITING
        _authorize(policy, conn, call, place.catalog, writes, what)
        if writes:
            policy.check_writable(place.catalog, f"{_type_name(component.type)} lock on {what}")


def lower_names(request: Any) -> None:
    """Database and table names in lower case (in place), as the metastore keeps its objects'; a
    partition name keeps its values' case. For a ``lock`` or ``show_locks`` request."""
    for component in getattr(request, "component", None) or []:
        if component.dbname:
            component.dbname = component.dbname.lower()
        if component.tablename:
            component.tablename = component.tablename.lower()
    for field in ("dbname", "tablename"):
        value = getattr(request, field, None)
        if value:
            setattr(request, field, value.lower())


def locked_scopes(request: Any, federation: Federation) -> list[tuple[str, str, str]]:
    """The (catalog, database, table) cache scopes a ``lock`` request's components name (table ""
    for a whole database), as the metadata cache keys them."""
    scopes = []
    for component in request.component or []:
        place = federation.locate(component.dbname or "")
        if place is not None:
            scopes.append((place.catalog, place.database.lower(), (component.tablename or "").lower()))
    return scopes


def visible_locks(result: Any, federation: Federation, policy: Policy, principal: Principal | None) -> None:
    """Take out of a ``show_locks`` result what the caller may not see (in place)."""
    if result.success is None:
        return
    shown = []
    for element in result.success.locks or []:
        if element.tablename and is_stage_table(element.tablename):
            continue
        place = federation.locate(element.dbname or "")
        if place is not None and not policy.readable(principal, place.catalog):
            continue
        shown.append(element)
    result.success.locks = shown


def _authorize(policy: Policy, conn: ClientConnection, call: CallRecord, catalog: str, writes: bool,
               what: str) -> None:
    authority = policy.authority
    if authority is None or not authority.enabled:
        return
    needed = hms_role("write" if writes else "read")
    principal = call.principal
    if principal is not None and authority.allows(principal, catalog, needed):
        return
    user = conn.identity[0] if conn.identity else None
    who = f"user {user!r}" if user else "a connection without set_ugi"
    raise policy.denied(conn, "lock", call, f"catalogd: permission denied: {who} needs role {needed.label} on "
                                            f"catalog {catalog} to lock {what}")


def _type_name(kind: int) -> str:
    name: str = hms.LockType._VALUES_TO_NAMES.get(kind, str(kind))
    return name.lower().replace("_", "-")
