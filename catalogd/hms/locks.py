"""The HMS lock API held in catalogd's memory, with the semantics of HMS's TxnHandler (no transactions).

Built so that no client can confuse or stall it:

* lock ids never repeat, across restarts too: an id is ``epoch << ID_BITS | n``, and the epoch
  is a counter kept in the data dir (``next_epoch``) that every start moves on, so a holder from
  before a restart gets ``NoSuchLockException`` for its old id, never someone else's lock;
* locks are indexed by the object they lock (database -> table -> partition), so a lock call
  looks only at the locks on its own objects (and those containing or contained in them), and
  expiry pops the locks in heartbeat order instead of scanning them all;
* a request's components are bounded, checked before the mutex is taken, so no request holds
  the mutex for long; the components held or waiting are bounded per connection, per principal
  (auth on) and in all, so that no client takes the others' room (issue 31: a bound per client
  host let one client lock out every other one on its host);
* a lock remembers its holder (the principal that took it, with auth on): ``holder`` tells the
  endpoint whose it is before anyone else's ``unlock``, ``heartbeat`` or ``check_lock`` reaches it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from catalogd.errors import InvalidArgumentError
from catalogd.hive_idl import ttypes as hms

logger = logging.getLogger(__name__)

__all__ = ["ID_BITS", "Holder", "LockManager", "next_epoch"]

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

#: The low bits of a lock id count the locks of one epoch (2**39: 17 years at 1,000 locks a
#: second); the 24 bits above them (a Thrift i64 is signed) are the epoch.
ID_BITS = 39
_EPOCH_LIMIT = 1 << (63 - ID_BITS)
#: Under the data dir: the last epoch a daemon started with.
EPOCH_FILE = "hms-lock-epoch"
#: Defaults of ``server.hms-max-lock-components``, ``-max-locks-per-connection``,
#: ``-max-locks-per-principal`` and ``-max-locks``.
DEFAULT_MAX_COMPONENTS = 10_000
DEFAULT_MAX_PER_CONNECTION = 50_000
DEFAULT_MAX_PER_PRINCIPAL = 100_000
DEFAULT_MAX_TOTAL = 1_000_000


def next_epoch(data_dir: Path) -> int:
    """The epoch for this start: one more than the last one recorded in ``data_dir``, recorded first.

    Recorded (written, synced, renamed into place) before any id of it is handed out, so a
    crash right after cannot hand the same epoch to the next start. A missing file is epoch 0
    before; an unreadable one (edited by hand) is replaced by one derived from the clock (hours
    since 2020), which no recent start can have used unless it started tens of thousands of times.
    """
    path = data_dir / EPOCH_FILE
    try:
        previous = int(path.read_text().strip())
        if not 0 <= previous < _EPOCH_LIMIT:
            raise ValueError(f"{previous} is outside 0..{_EPOCH_LIMIT - 1}")
    except FileNotFoundError:
        previous = 0
    except (OSError, ValueError) as e:
        previous = int((time.time() - 1_577_836_800) // 3600) % (_EPOCH_LIMIT - 1)
        logger.warning("HMS locks: %s is unreadable (%s); starting from epoch %d", path, e, previous + 1)
    epoch = previous % (_EPOCH_LIMIT - 1) + 1
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{EPOCH_FILE}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, f"{epoch}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    with contextlib.suppress(OSError):  # the rename itself survives a crash once the directory is synced
        dir_fd = os.open(data_dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return epoch


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

    def path(self) -> tuple[str, ...]:
        return (self.db,) + ((self.table,) if self.table is not None else ()) + \
            ((self.partition,) if self.partition is not None else ())


class _Node:
    """One object of the lock index (the root, a database, a table or a partition)."""

    __slots__ = ("children", "held", "name", "parent")

    def __init__(self, parent: _Node | None, name: str) -> None:
        self.parent = parent
        self.name = name
        #: lock id -> that lock's components on exactly this object (in internal-id order).
        self.held: dict[int, list[_Component]] = {}
        self.children: dict[str, _Node] = {}

    def subtree(self) -> Iterator[_Node]:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children.values())


@dataclass(frozen=True)
class Holder:
    """Whose a lock is: the principal that took it (None: taken with auth off) and the databases it names."""

    owner: str | None
    databases: frozenset[str]


#: Shown a lock's holder; raises to refuse the call.
Allow = Callable[[Holder], None]


@dataclass
class _Lock:
    """One lock request: all its components are held, or none."""

    lockid: int
    components: list[_Component]
    user: str | None
    hostname: str | None
    agent_info: str | None
    #: The connection the per-connection bound counts it against.
    connection: str = ""
    #: The principal that took it (auth on): its holder, and whom the per-principal bound counts.
    owner: str | None = None
    state: int = hms.LockState.WAITING
    #: ``clock()`` of the last heartbeat (expiry).
    beat: float = 0.0
    #: Wall-clock milliseconds, as show_locks reports them.
    beat_ms: int = 0
    acquired_ms: int | None = None
    heartbeats: int = 0
    #: (lockid, internal id) of the component it last waited for.
    blocked_by: tuple[int, int] | None = None
    #: The index nodes its components sit on (to take them out again).
    nodes: list[_Node] = field(default_factory=list)


class LockManager:
    """HMS's ``lock``/``check_lock``/``unlock``/``heartbeat``/``show_locks`` answered from memory.

    The locks live only in this process: a daemon restart loses them, as a metastore whose lock
    tables are lost would, and the ids of the next start are new ones (see the module text). A
    request is granted whole or waits; a waiting request is granted on ``check_lock`` once nothing
    held, and no earlier waiting request, conflicts with it. A lock with no heartbeat
    (``heartbeat`` or ``check_lock``) for ``timeout`` seconds is released.

    Args:
        timeout: seconds without a heartbeat after which a lock is dropped.
        clock: monotonic seconds (expiry); tests pass a fake one.
        wall: epoch seconds for the times show_locks reports.
        epoch: gives the epoch of the ids (``next_epoch``), called at start and again should one
            epoch's ids run out; None: 0, 1, 2, ... (ids start at 1: tests, one process only).
        max_components: the most components one request may have.
        max_per_connection: the most components (held or waiting) of the locks one connection took.
        max_per_principal: the most components (held or waiting) of one principal's locks.
        max_total: the most components (held or waiting) of all locks.
        id_bits: the low bits of an id that count within an epoch (tests make it small).
    """

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic, *,
                 wall: Callable[[], float] = time.time, epoch: Callable[[], int] | None = None,
                 max_components: int = DEFAULT_MAX_COMPONENTS, max_per_connection: int = DEFAULT_MAX_PER_CONNECTION,
                 max_per_principal: int = DEFAULT_MAX_PER_PRINCIPAL, max_total: int = DEFAULT_MAX_TOTAL,
                 id_bits: int = ID_BITS) -> None:
        if timeout <= 0:
            raise InvalidArgumentError(f"lock timeout must be positive, not {timeout}")
        if min(max_components, max_per_connection, max_per_principal, max_total) <= 0:
            raise InvalidArgumentError("lock bounds must be positive")
        self.timeout = timeout
        self.max_components = max_components
        self.max_per_connection = max_per_connection
        self.max_per_principal = max_per_principal
        self.max_total = max_total
        self._clock = clock
        self._wall = wall
        self._id_bits = id_bits
        self._epochs = epoch if epoch is not None else itertools.count().__next__
        self.epoch = self._epochs()
        self._mutex = threading.Lock()
        # Insertion order is request order (ids only grow): show_locks lists in this order.
        self._locks: dict[int, _Lock] = {}
        # Lock ids, least recently heartbeated first: expiry pops from the front.
        self._by_beat: OrderedDict[int, None] = OrderedDict()
        self._root = _Node(None, "")
        self._per_connection: dict[str, int] = {}
        self._per_principal: dict[str, int] = {}
        self._total = 0
        self._next_seq = 1
        self._next_internal = 1

    # ------------------------------------------------------------ the HMS calls

    def lock(self, request: hms.LockRequest, connection: str | None = None,
             principal: str | None = None) -> hms.LockResponse:
        """Enqueue a request and try to grant it at once (ACQUIRED or WAITING).

        ``connection`` is the connection the per-connection bound counts the request against
        (the endpoint names each connection once); ``principal`` (auth on) is the lock's holder,
        which the per-principal bound counts it against (None: no holder, no such bound).
        """
        txnid = request.txnid or 0
        if txnid > 0:
            # catalogd opens no transactions, so every txn id is unknown (HMS's ensureValidTxn).
            raise hms.NoSuchTxnException(message=f"No such transaction {_txn_id(txnid)}")
        count = len(request.component or [])
        # Before any work proportional to the request (and before the mutex).
        if count > self.max_components:
            raise hms.MetaException(message=f"catalogd: a lock request of {count} components is over the limit "
                                            f"of {self.max_components} (server.hms-max-lock-components)")
        specs = [_parse_component(c) for c in (request.component or [])]
        if not specs:
            raise hms.MetaException(message="LockRequest has no components")
        conn = connection or ""
        with self._mutex:
            self._expire_locked()
            self._check_bounds(conn, principal, len(specs))
            components = []
            for kind, db, table, partition in specs:
                components.append(_Component(self._next_internal, kind, db, table, partition))
                self._next_internal += 1
            entry = _Lock(self._new_lockid(), components, request.user, request.hostname, request.agentInfo,
                          connection=conn, owner=principal)
            self._beat(entry, first=True)
            # Tried before it is indexed: its own components are then no candidates to skip.
            self._try_acquire(entry)
            self._add(entry)
            logger.debug("HMS lock %s for %s@%s: %s", entry.lockid, entry.user, entry.hostname,
                         _state_name(entry.state))
            return hms.LockResponse(lockid=entry.lockid, state=entry.state)

    def check_lock(self, request: hms.CheckLockRequest, allow: Allow | None = None) -> hms.LockResponse:
        """Heartbeat a lock and grant it if it is waiting and nothing ahead conflicts any more.

        ``allow`` (here and in ``unlock`` and ``heartbeat``) is shown the lock's holder under the
        mutex, before anything changes, and raises to refuse the call (the endpoint's rule that
        only a lock's holder or an admin touches it).
        """
        lockid = request.lockid
        with self._mutex:
            self._expire_locked()
            entry = self._locks.get(lockid) if lockid is not None else None
            if entry is None:
                raise hms.NoSuchLockException(message=f"No such lock {_lock_id(lockid or 0)}{self._hint(lockid)}")
            _allowed(entry, allow)
            self._beat(entry)
            if entry.state == hms.LockState.WAITING:
                self._try_acquire(entry)
            return hms.LockResponse(lockid=entry.lockid, state=entry.state)

    def unlock(self, request: hms.UnlockRequest, allow: Allow | None = None) -> None:
        """Release a lock, held or waiting."""
        lockid = request.lockid
        with self._mutex:
            self._expire_locked()
            entry = self._locks.get(lockid) if lockid is not None else None
            if entry is None:
                raise hms.NoSuchLockException(message=f"No such lock {_lock_id(lockid or 0)}{self._hint(lockid)}")
            _allowed(entry, allow)
            self._remove(entry)
            logger.debug("HMS lock %s released", lockid)

    def heartbeat(self, request: hms.HeartbeatRequest, allow: Allow | None = None) -> None:
        """Keep a lock alive; lock id 0 (or none) is no lock, as in HMS."""
        lockid = request.lockid or 0
        txnid = request.txnid or 0
        with self._mutex:
            self._expire_locked()
            if lockid:
                entry = self._locks.get(lockid)
                if entry is None:
                    raise hms.NoSuchLockException(message=f"No such lock: {_lock_id(lockid)}{self._hint(lockid)}")
                _allowed(entry, allow)
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
            found: list[tuple[_Lock, _Component]] = []
            if db is None:
                found = [(entry, c) for entry in self._locks.values() for c in entry.components]
            else:
                node = self._root.children.get(db)
                if node is not None and table is not None:
                    node = node.children.get(table)
                for each in node.subtree() if node is not None else ():
                    found.extend((self._locks[lockid], c) for lockid, cs in each.held.items() for c in cs)
                # Request order, as HMS lists them (and as the unfiltered listing is).
                found.sort(key=lambda pair: (pair[0].lockid, pair[1].internal_id))
            elements = []
            for entry, c in found:
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

    def held_by(self, connection: str) -> int:
        """Components (held or waiting) counted against ``connection``."""
        with self._mutex:
            return self._per_connection.get(connection, 0)

    def held_by_principal(self, principal: str) -> int:
        """Components (held or waiting) of ``principal``'s locks."""
        with self._mutex:
            return self._per_principal.get(principal, 0)

    def holder(self, lockid: int | None) -> Holder | None:
        """Whose lock ``lockid`` is (None: no such lock, or an expired one)."""
        with self._mutex:
            self._expire_locked()
            entry = self._locks.get(lockid) if lockid is not None else None
            if entry is None:
                return None
            return Holder(entry.owner, frozenset(c.db for c in entry.components))

    # ------------------------------------------------------------ internals (mutex held)

    def _check_bounds(self, connection: str, principal: str | None, count: int) -> None:
        """Refuse ``count`` more components past one of the bounds (most specific first, so the
        message names the caller's own bound when that is the one reached)."""
        held = self._per_connection.get(connection, 0)
        if held + count > self.max_per_connection:
            raise hms.MetaException(
                message=f"catalogd: this connection's locks have {held} components held or waiting; {count} more "
                        f"would pass the limit of {self.max_per_connection} (server.hms-max-locks-per-connection): "
                        "unlock some first")
        if principal is not None:
            held = self._per_principal.get(principal, 0)
            if held + count > self.max_per_principal:
                raise hms.MetaException(
                    message=f"catalogd: {principal}'s locks have {held} components held or waiting; {count} more "
                            f"would pass the limit of {self.max_per_principal} (server.hms-max-locks-per-principal): "
                            "unlock some first")
        if self._total + count > self.max_total:
            raise hms.MetaException(
                message=f"catalogd: the endpoint holds {self._total} lock components; {count} more would pass the "
                        f"limit of {self.max_total} (server.hms-max-locks): try again once locks are released")

    def _new_lockid(self) -> int:
        if self._next_seq >= 1 << self._id_bits:
            # This start's ids ran out: move on to a new epoch (larger, so ids keep growing).
            self.epoch = self._epochs()
            self._next_seq = 1
        lockid = self.epoch << self._id_bits | self._next_seq
        self._next_seq += 1
        return lockid

    def _hint(self, lockid: int | None) -> str:
        """Why an id is unknown when it is one of an earlier start's."""
        if lockid is not None and 0 < lockid >> self._id_bits < self.epoch:
            return " (taken before catalogd restarted: its locks were released)"
        return ""

    def _add(self, entry: _Lock) -> None:
        self._locks[entry.lockid] = entry
        self._by_beat[entry.lockid] = None
        count = len(entry.components)
        self._total += count
        self._per_connection[entry.connection] = self._per_connection.get(entry.connection, 0) + count
        if entry.owner is not None:
            self._per_principal[entry.owner] = self._per_principal.get(entry.owner, 0) + count
        nodes: dict[int, _Node] = {}
        for c in entry.components:
            node = self._root
            for name in c.path():
                child = node.children.get(name)
                if child is None:
                    child = node.children[name] = _Node(node, name)
                node = child
            node.held.setdefault(entry.lockid, []).append(c)
            nodes[id(node)] = node
        entry.nodes = list(nodes.values())

    def _remove(self, entry: _Lock) -> None:
        del self._locks[entry.lockid]
        self._by_beat.pop(entry.lockid, None)
        count = len(entry.components)
        self._total -= count
        _release(self._per_connection, entry.connection, count)
        if entry.owner is not None:
            _release(self._per_principal, entry.owner, count)
        for node in entry.nodes:
            node.held.pop(entry.lockid, None)
            # Prune objects no lock names any more (the index stays as large as the locks).
            while node.parent is not None and not node.held and not node.children:
                if node.parent.children.get(node.name) is node:
                    del node.parent.children[node.name]
                node = node.parent
        entry.nodes = []

    def _beat(self, entry: _Lock, *, first: bool = False) -> None:
        entry.beat = self._clock()
        entry.beat_ms = int(self._wall() * 1000)
        if not first:
            entry.heartbeats += 1
            self._by_beat.move_to_end(entry.lockid)

    def _expire_locked(self) -> int:
        now = self._clock()
        dropped = 0
        while self._by_beat:
            entry = self._locks[next(iter(self._by_beat))]
            if now - entry.beat <= self.timeout:
                break  # every later one beat later
            self._remove(entry)
            dropped += 1
            logger.info("HMS lock %s of %s@%s released: no heartbeat for %.0f s", entry.lockid, entry.user,
                        entry.hostname, now - entry.beat)
        return dropped

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

    def _overlapping(self, c: _Component) -> Iterator[_Node]:
        """The index nodes whose locks overlap ``c``: the objects containing it (a missing table or
        partition name claims the whole database or table, as in TxnHandler.checkLock), the object
        itself and everything inside it."""
        node = self._root
        path = c.path()
        for depth, name in enumerate(path):
            child = node.children.get(name)
            if child is None:
                return
            node = child
            if depth < len(path) - 1:
                yield node
        yield from node.subtree()

    def _blocker(self, entry: _Lock) -> tuple[int, int] | None:
        """The earliest (lock id, internal id) that ``entry`` must wait for, or None."""
        best: tuple[int, int] | None = None
        seen: set[tuple[tuple[str, ...], int]] = set()
        for mine in entry.components:
            key = (mine.path(), mine.type)
            if key in seen:  # a request naming one object many times is looked at once
                continue
            seen.add(key)
            conflicting = _CONFLICTS[mine.type]
            for node in self._overlapping(mine):
                for lockid, theirs in node.held.items():
                    if lockid == entry.lockid or (best is not None and lockid > best[0]):
                        continue
                    other = self._locks[lockid]
                    # Held locks always count; waiting ones only if they asked first (no queue
                    # jumping, and no cycle: a request only ever waits for older or held ones).
                    if other.state != hms.LockState.ACQUIRED and lockid > entry.lockid:
                        continue
                    for c in theirs:
                        if c.type in conflicting:
                            if best is None or (lockid, c.internal_id) < best:
                                best = (lockid, c.internal_id)
                            break
        return best


def _allowed(entry: _Lock, allow: Allow | None) -> None:
    if allow is not None:
        allow(Holder(entry.owner, frozenset(c.db for c in entry.components)))


def _release(counts: dict[str, int], key: str, count: int) -> None:
    """Take ``count`` off ``key``'s count (a key at 0 is dropped: the map stays as large as the holders)."""
    left = counts.get(key, 0) - count
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)


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
