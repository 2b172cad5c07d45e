"""The HMS lock API held in catalogd's memory, with the semantics of HMS's TxnHandler (no transactions)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from hmsclient.genthrift.hive_metastore import ttypes as hms

from catalogd.errors import InvalidArgumentError

logger = logging.getLogger(__name__)

__all__ = ["LockManager"]

_SHARED_READ = hms.LockType.SHARED_READ
_SHARED_WRITE = hms.LockType.SHARED_WRITE
_EXCLUSIVE = hms.LockType.EXCLUSIVE

#: Requested type -> the held (or earlier waiting) types it must wait for: TxnHandler's jumpTable
#: reduced to its WAIT entries (its ACQUIRE and KEEP_LOOKING both mean "no conflict here").
_CONFLICTS: dict[int, frozenset[int]] = {
    _SHARED_READ: frozenset({_EXCLUSIVE}),
    _SHARED_WRITE: frozenset({_SHARED_WRITE, _EXCLUSIVE}),
    _EXCLUSIVE: frozenset({_SHARED_READ, _SHARED_WRITE, _EXCLUSIVE}),
}
_LEVELS = frozenset({hms.LockLevel.DB, hms.LockLevel.TABLE, hms.LockLevel.PARTITION})


def _lock_id(lockid: int) -> str:
    """HMS's JavaUtils.lockIdToString: its messages name a lock this way."""
    return f"lockid:{lockid}"


def _txn_id(txnid: int) -> str:
    """HMS's JavaUtils.txnIdToString."""
    return f"txnid:{txnid}"


@dataclass(frozen=True)
class _Component:
    """One locked object of a request (HMS's HIVE_LOCKS row)."""

    internal_id: int
    type: int
    db: str
    #: None: the whole database.
    table: str | None
    #: None: the whole table (or database).
    partition: str | None

    def overlaps(self, other: _Component) -> bool:
        # A missing table or partition name claims the whole database or table (TxnHandler.checkLock).
        if self.db != other.db:
            return False
        if self.table is not None and other.table is not None and self.table != other.table:
            return False
        return self.partition is None or other.partition is None or self.partition == other.partition


@dataclass
class _Lock:
    """One lock request: all its components are held, or none."""

    lockid: int
    components: list[_Component]
    user: str | None
    hostname: str | None
    agent_info: str | None
    state: int = hms.LockState.WAITING
    #: ``clock()`` of the last heartbeat (expiry).
    beat: float = 0.0
    #: Wall-clock milliseconds, as show_locks reports them.
    beat_ms: int = 0
    acquired_ms: int | None = None
    heartbeats: int = 0
    #: (lockid, internal id) of the component it last waited for.
    blocked_by: tuple[int, int] | None = None


class LockManager:
    """HMS's ``lock``/``check_lock``/``unlock``/``heartbeat``/``show_locks`` answered from memory.

    The locks live only in this process: a daemon restart loses them, as a metastore whose lock
    tables are lost would. A request is granted whole or waits; a waiting request is granted on
    ``check_lock`` once nothing held, and no earlier waiting request, conflicts with it. A lock
    with no heartbeat (``heartbeat`` or ``check_lock``) for ``timeout`` seconds is released.

    Args:
        timeout: seconds without a heartbeat after which a lock is dropped.
        clock: monotonic seconds (expiry); tests pass a fake one.
        wall: epoch seconds for the times show_locks reports.
    """

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic, *,
                 wall: Callable[[], float] = time.time) -> None:
        if timeout <= 0:
            raise InvalidArgumentError(f"lock timeout must be positive, not {timeout}")
        self.timeout = timeout
        self._clock = clock
        self._wall = wall
        self._mutex = threading.Lock()
        # Insertion order is request order (ids only grow): FIFO among waiting requests.
        self._locks: dict[int, _Lock] = {}
        self._next_lockid = 1
        self._next_internal = 1

    # ------------------------------------------------------------ the HMS calls

    def lock(self, request: hms.LockRequest) -> hms.LockResponse:
        """Enqueue a request and try to grant it at once (ACQUIRED or WAITING)."""
        txnid = request.txnid or 0
        if txnid > 0:
            # catalogd opens no transactions, so every txn id is unknown (HMS's ensureValidTxn).
            raise hms.NoSuchTxnException(message=f"No such transaction {_txn_id(txnid)}")
        specs = [_parse_component(c) for c in (request.component or [])]
        if not specs:
            raise hms.MetaException(message="LockRequest has no components")
        with self._mutex:
            self._expire_locked()
            components = []
            for kind, db, table, partition in specs:
                components.append(_Component(self._next_internal, kind, db, table, partition))
                self._next_internal += 1
            entry = _Lock(self._next_lockid, components, request.user, request.hostname, request.agentInfo)
            self._next_lockid += 1
            self._beat(entry, first=True)
            self._locks[entry.lockid] = entry
            self._try_acquire(entry)
            logger.debug("HMS lock %s for %s@%s: %s", entry.lockid, entry.user, entry.hostname,
                         _state_name(entry.state))
            return hms.LockResponse(lockid=entry.lockid, state=entry.state)

    def check_lock(self, request: hms.CheckLockRequest) -> hms.LockResponse:
        """Heartbeat a lock and grant it if it is waiting and nothing ahead conflicts any more."""
        lockid = request.lockid
        with self._mutex:
            self._expire_locked()
            entry = self._locks.get(lockid) if lockid is not None else None
            if entry is None:
                raise hms.NoSuchLockException(message=f"No such lock {_lock_id(lockid or 0)}")
            self._beat(entry)
            if entry.state == hms.LockState.WAITING:
                self._try_acquire(entry)
            return hms.LockResponse(lockid=entry.lockid, state=entry.state)

    def unlock(self, request: hms.UnlockRequest) -> None:
        """Release a lock, held or waiting."""
        lockid = request.lockid
        with self._mutex:
            self._expire_locked()
            if lockid is None or self._locks.pop(lockid, None) is None:
                raise hms.NoSuchLockException(message=f"No such lock {_lock_id(lockid or 0)}")
            logger.debug("HMS lock %s released", lockid)

    def heartbeat(self, request: hms.HeartbeatRequest) -> None:
        """Keep a lock alive; lock id 0 (or none) is no lock, as in HMS."""
        lockid = request.lockid or 0
        txnid = request.txnid or 0
        with self._mutex:
            self._expire_locked()
            if lockid:
                entry = self._locks.get(lockid)
                if entry is None:
                    raise hms.NoSuchLockException(message=f"No such lock: {_lock_id(lockid)}")
                self._beat(entry)
        if txnid > 0:
            raise hms.NoSuchTxnException(message=f"No such transaction {_txn_id(txnid)}")

    def show_locks(self, request: hms.ShowLocksRequest) -> hms.ShowLocksResponse:
        """Every lock component, optionally only those on one database/table/partition.

        Like HMS 2.3, ``isExtended`` changes nothing here: the extended fields are always filled
        and the client decides what it prints.
        """
        db = (request.dbname or "").lower() or None
        table = (request.tablename or "").lower() or None
        partition = request.partname or None
        with self._mutex:
            self._expire_locked()
            elements = []
            for entry in self._locks.values():
                for c in entry.components:
                    # HMS filters on the columns: a table filter skips database-level locks.
                    if db is not None and c.db != db:
                        continue
                    if table is not None and c.table != table:
                        continue
                    if partition is not None and c.partition != partition:
                        continue
                    elements.append(_element(entry, c))
        return hms.ShowLocksResponse(locks=elements)

    def expire(self) -> int:
        """Drop the locks with no heartbeat for ``timeout``; how many were dropped."""
        with self._mutex:
            return self._expire_locked()

    # ------------------------------------------------------------ internals (mutex held)

    def _beat(self, entry: _Lock, *, first: bool = False) -> None:
        entry.beat = self._clock()
        entry.beat_ms = int(self._wall() * 1000)
        if not first:
            entry.heartbeats += 1

    def _expire_locked(self) -> int:
        now = self._clock()
        dead = [e for e in self._locks.values() if now - e.beat > self.timeout]
        for entry in dead:
            del self._locks[entry.lockid]
            logger.info("HMS lock %s of %s@%s released: no heartbeat for %.0f s", entry.lockid, entry.user,
                        entry.hostname, now - entry.beat)
        return len(dead)

    def _try_acquire(self, entry: _Lock) -> None:
        """Grant every component of ``entry`` or none; record what it waits for."""
        blocker = self._blocker(entry)
        if blocker is not None:
            entry.state = hms.LockState.WAITING
            entry.blocked_by = blocker
            return
        entry.state = hms.LockState.ACQUIRED
        entry.blocked_by = None
        entry.acquired_ms = int(self._wall() * 1000)

    def _blocker(self, entry: _Lock) -> tuple[int, int] | None:
        for other in self._locks.values():
            if other is entry:
                continue
            # Held locks always count; waiting ones only if they asked first (no queue jumping,
            # and no cycle: a request only ever waits for older or held ones).
            if other.state != hms.LockState.ACQUIRED and other.lockid > entry.lockid:
                continue
            for mine in entry.components:
                conflicting = _CONFLICTS[mine.type]
                for theirs in other.components:
                    if theirs.type in conflicting and mine.overlaps(theirs):
                        return other.lockid, theirs.internal_id
        return None


def _parse_component(c: hms.LockComponent) -> tuple[int, str, str | None, str | None]:
    """(type, db, table, partition) of a component, or MetaException for one HMS could not lock."""
    if c.type not in _CONFLICTS:
        raise hms.MetaException(message=f"LockComponent has an unknown lock type {c.type!r}")
    if c.level not in _LEVELS:
        raise hms.MetaException(message=f"LockComponent has an unknown lock level {c.level!r}")
    if not c.dbname:
        raise hms.MetaException(message="LockComponent has no dbname")
    # HMS lower-cases database and table names; a partition name carries values, which keep their case.
    db = c.dbname.lower()
    table = c.tablename.lower() if c.tablename else None
    partition = c.partitionname or None
    level = c.level
    if level == hms.LockLevel.DB and (table is not None or partition is not None):
        raise hms.MetaException(message=f"a DB lock names no table or partition (got {c.tablename!r})")
    if level == hms.LockLevel.TABLE and (table is None or partition is not None):
        raise hms.MetaException(message="a TABLE lock names a table and no partition")
    if level == hms.LockLevel.PARTITION and (table is None or partition is None):
        raise hms.MetaException(message="a PARTITION lock names a table and a partition")
    return c.type, db, table, partition


def _element(entry: _Lock, c: _Component) -> hms.ShowLocksResponseElement:
    blocked = entry.blocked_by if entry.state == hms.LockState.WAITING else None
    return hms.ShowLocksResponseElement(
        lockid=entry.lockid, dbname=c.db, tablename=c.table, partname=c.partition, state=entry.state,
        type=c.type, lastheartbeat=entry.beat_ms,
        acquiredat=entry.acquired_ms if entry.state == hms.LockState.ACQUIRED else None,
        user=entry.user, hostname=entry.hostname, heartbeatCount=entry.heartbeats, agentInfo=entry.agent_info,
        blockedByExtId=blocked[0] if blocked else None, blockedByIntId=blocked[1] if blocked else None,
        lockIdInternal=c.internal_id)


def _state_name(state: int) -> str:
    name: str = hms.LockState._VALUES_TO_NAMES.get(state, str(state))
    return name
