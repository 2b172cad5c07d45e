"""Locks belong to their holders: whose an HMS lock is, and who may unlock, heartbeat or check it.

HMS itself lets anyone who knows a lock id (``show_locks`` lists them) release or keep alive
anyone's lock; an Iceberg-style commit (lock, read the pointer, write, unlock) then loses its
mutual exclusion to a reader that unlocks it (issue 31). With auth on, the endpoint holds a
lock's id to the principal that took it:

* ``lock``: the request's ``user`` becomes the caller's principal (what a client writes there is
  only asserted), so the lock keeper records the holder: catalogd's ``LockManager`` in memory,
  or the metastore's ``HIVE_LOCKS.HL_USER``, where it survives a restart and is seen by every
  daemon sharing the metastore;
* ``unlock``, ``heartbeat`` and ``check_lock`` of a lock held by another principal are refused
  with ``NoSuchLockException`` (the exception all three declare) saying why, unless the caller is
  an admin of every catalog the lock names (an admin breaks a lock its holder left behind);
* for a metastore, ``LockOwners`` remembers the holders of the locks taken through this
  endpoint (a bounded map) and reads ``show_locks`` for an id it does not know (a restart,
  another daemon, an id guessed): one such read at a time, and a lock it does not find is
  answered here as absent (unlock is a no-op, as in HMS 2.3; the others ``NoSuchLockException``),
  never passed on, so a lock taken after the read cannot be reached unchecked.

With auth off every caller may do everything, as before: nothing is checked or recorded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from catalogd.auth.model import Role
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.locks import Holder
from catalogd.hms.refused import Refused

if TYPE_CHECKING:
    from catalogd.hms.federation import Federation
    from catalogd.hms.policy import CallRecord, Policy
    from catalogd.hms.server import ClientConnection

__all__ = ["GUARDED", "Guard", "LockOwners", "guard_for", "holders_in", "owner_of"]

#: The lock calls that name a lock by its id: only its holder (or an admin) may make them.
GUARDED = frozenset({"unlock", "heartbeat", "check_lock"})

#: Raises ``Refused`` when the caller may not touch a lock held by ``Holder``.
Guard = Callable[[Holder], None]


def owner_of(policy: Policy, call: CallRecord) -> str | None:
    """The principal a lock taken by this call belongs to; None with auth off (no holder is kept)."""
    authority = policy.authority
    if authority is None or not authority.enabled or call.principal is None:
        return None
    return call.principal.name


def guard_for(policy: Policy, federation: Federation, conn: ClientConnection, call: CallRecord, method: str,
              lockid: int) -> Guard | None:
    """The check a ``method`` of lock ``lockid`` must pass once the lock's holder is known; None
    with auth off."""
    authority = policy.authority
    if authority is None or not authority.enabled or conn.internal:
        # catalogd itself (conn.internal): the Iceberg roll-forward reuses or releases the locks a
        # dead daemon took for its callers.
        return None

    def guard(holder: Holder) -> None:
        principal = call.principal
        if principal is not None and holder.owner is not None and holder.owner == principal.name:
            return
        catalogs = {place.catalog for place in map(federation.locate, holder.databases) if place is not None}
        catalogs = catalogs or {federation.default}
        if principal is not None and all(authority.allows(principal, c, Role.ADMIN) for c in sorted(catalogs)):
            return
        user = conn.identity[0] if conn.identity else None
        whose = f"held by {holder.owner!r}" if holder.owner else "taken with auth off (it has no holder)"
        text = (f"catalogd: permission denied: lockid:{lockid} is {whose}; only its holder or an admin of "
                f"catalog {', '.join(sorted(catalogs))} may {method.replace('_', ' ')} it, not {user!r}")
        # Recorded as a denial; answered with the exception the call declares.
        policy.denied(conn, method, call, text)
        raise Refused(hms.NoSuchLockException(message=text))

    return guard


def holders_in(elements: list[Any]) -> dict[int, Holder]:
    """Lock id -> holder, from ``show_locks`` elements (one element per component)."""
    users: dict[int, str | None] = {}
    databases: dict[int, set[str]] = {}
    for element in elements:
        if element.lockid is None:
            continue
        users.setdefault(element.lockid, element.user or None)
        databases.setdefault(element.lockid, set()).add((element.dbname or "").lower())
    return {lockid: Holder(users[lockid], frozenset(dbs)) for lockid, dbs in databases.items()}


class LockOwners:
    """The holders of locks a metastore keeps, as far as this endpoint knows them.

    Args:
        limit: the most holders remembered (the least recently used go first; a forgotten one
            is read again from the metastore when asked for).
    """

    def __init__(self, limit: int = 100_000) -> None:
        self._limit = limit
        self._mutex = threading.Lock()
        self._known: OrderedDict[int, Holder] = OrderedDict()
        #: One metastore read at a time: a burst of unknown ids costs one read each, in turn.
        self._reading = threading.Lock()

    def remember(self, lockid: int, holder: Holder) -> None:
        with self._mutex:
            self._known[lockid] = holder
            self._known.move_to_end(lockid)
            while len(self._known) > self._limit:
                self._known.popitem(last=False)

    def forget(self, lockid: int) -> None:
        with self._mutex:
            self._known.pop(lockid, None)

    def known(self, lockid: int) -> Holder | None:
        with self._mutex:
            found = self._known.get(lockid)
            if found is not None:
                self._known.move_to_end(lockid)
            return found

    def holder(self, lockid: int, read: Callable[[], list[Any]]) -> Holder | None:
        """The holder of ``lockid``: remembered, or found by ``read`` (the metastore's
        ``show_locks`` elements); None: the metastore has no such lock."""
        found = self.known(lockid)
        if found is not None:
            return found
        with self._reading:
            found = self.known(lockid)  # a read that ran meanwhile may have found it
            if found is not None:
                return found
            holders = holders_in(read())
            for each, holder in holders.items():
                self.remember(each, holder)
            return holders.get(lockid)
