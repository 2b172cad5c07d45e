"""One leader for background work among the members of a cluster: a lease in the shared metastore.

The janitor, the FULL scheduler, the streaming supervisor, dynamic-table restore and the
cleanup of retired data run only on the member that holds the lease (``is_leader``). Without
``cluster.members`` (or without a writable hive catalog to keep the lease in) the daemon leads
alone, as before clusters.

The lease is a sequence of terms (``LeaseStore``; ``catalogd.catalog.hive_lease`` keeps them
in the metastore). Taking term N+1 is an atomic create that exactly one member wins.

- The holder renews its term every ``interval`` (the lease / 6): it writes a new heartbeat,
  then lists the terms. A renewal that found no newer term *confirms* the lease: the holder
  may act until ``valid`` (one lease) after the renewal *began*, on its own monotonic clock
  (which goes on while the process is stopped).
- A member that sees the latest term's heartbeat unchanged for a whole ``lease`` claims the
  next term. Having won it, it waits ``valid`` before acting (fencing): the old holder's last
  confirmation began before the claim landed (its listing did not see it), so its right to act
  ended before that wait is over, whether it was killed, stopped or cut off.
- A holder that sees a newer term, or whose confirmation lapsed, stops acting at once; the
  background services let their work go (``on_change``).

Takeover after the leader dies: at most the lease, plus a poll, plus ``valid``: with the
default lease of 3 s, about 6.5 s. Safety rests on the new leader's wait alone; the lease only
sets how long a silent leader is waited for, and ``valid`` how long a leader whose renewals are
slow goes on acting (a busy metastore must not make the leadership flap). The only assumption
is that the members' monotonic clocks run at about the same rate; a pause between a fence check
and the action it guards (a few milliseconds of code) is the window the check cannot close.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from catalogd.errors import CatalogError

logger = logging.getLogger(__name__)

#: The term's parameters: who holds it, since when (epoch ms), and its heartbeat (a counter and epoch ms).
MEMBER = "catalogd.leader.member"
SINCE = "catalogd.leader.since"
HEARTBEAT = "catalogd.leader.heartbeat"
#: The heartbeat of a term its holder gave up (at shutdown): the next is claimed without waiting.
RELEASED = "released"
#: Old terms kept (for ``cluster status``); older ones are dropped by the member that claims.
_KEEP_TERMS = 3


class LeaseStore(Protocol):
    """Where the terms are kept (``catalogd.catalog.hive_lease.HmsLeaseStore``)."""

    @property
    def where(self) -> str: ...

    def epochs(self) -> list[int]: ...

    def read(self, epoch: int) -> dict[str, str] | None: ...

    def claim(self, epoch: int, params: dict[str, str]) -> bool: ...

    def renew(self, epoch: int, params: dict[str, str]) -> None:
        """Replace the term's parameters with ``params`` (all of them)."""

    def drop(self, epoch: int) -> None: ...


@dataclass(frozen=True)
class LeaderStatus:
    """What this member knows of the leadership (``cluster status``, ``/metrics``)."""

    #: This member (``host:port`` as in ``cluster.members``).
    member: str
    #: Whether this member acts as the leader now.
    leading: bool
    #: The member holding the latest term (None: none seen yet).
    leader: str | None
    #: The latest term's number (0: none).
    epoch: int
    #: When the latest term was taken, epoch seconds.
    since: float | None
    #: Seconds since the leader's heartbeat last changed, as this member saw it.
    lease_age: float | None
    #: The lease duration, seconds.
    lease: float
    #: Terms this member took, and lost (to a newer term or a lapse), since it started.
    acquired: int
    lost: int
    #: Where the lease is kept (the metastore's address); None: this daemon leads alone.
    store: str | None
    #: The last error reaching the store (None: the last pass went through).
    problem: str | None


class Leadership:
    """Elects one leader among the members sharing ``store``; ``store`` None: always the leader.

    Args:
        store: where the terms are kept, or None (a single daemon).
        member: this member's name.
        lease: seconds a silent leader keeps its lease.
        on_change: called (on the leadership thread) with True when this member starts
            acting as the leader, False when it stops.
        clock: monotonic seconds; ``wall``: epoch seconds (tests replace both).
    """

    def __init__(self, store: LeaseStore | None, member: str, lease: float = 3.0,
                 on_change: Callable[[bool], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self.store = store
        self.member = member
        self.lease = lease
        self.valid = lease
        self.interval = lease / 6
        self.on_change = on_change
        self.clock = clock
        self.wall = wall
        self._lock = threading.Lock()
        self._epoch: int | None = None
        #: The held term's parameters as claimed (a renewal writes them all, with a new heartbeat).
        self._term: dict[str, str] = {}
        self._beats = 0
        self._valid_until = 0.0
        self._acting_from = 0.0
        self._acting = store is None
        #: The latest term and heartbeat seen, and when (monotonic) it was first seen so.
        self._seen: tuple[int, str | None] = (0, None)
        self._seen_at = clock()
        self._latest: tuple[int, dict[str, str]] = (0, {})
        self._acquired = 0
        self._lost = 0
        self._problem: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Runs ``on_change`` calls one at a time, in order.
        self._work = ThreadPoolExecutor(max_workers=1, thread_name_prefix="catalogd-leader-work")

    def attach(self, store: LeaseStore) -> None:
        """Elect through ``store`` from now on (before ``start``): not leading until elected."""
        with self._lock:
            self.store = store
            self._acting = False

    # ------------------------------------------------------------ asking

    def is_leader(self) -> bool:
        """Whether this member may do background work now (the fence checked before each action)."""
        if self.store is None:
            return True
        with self._lock:
            now = self.clock()
            return self._epoch is not None and self._acting_from <= now < self._valid_until

    def status(self) -> LeaderStatus:
        with self._lock:
            epoch, params = self._latest
            since = _seconds(params.get(SINCE))
            leading = self.store is None or (self._epoch is not None
                                             and self._acting_from <= self.clock() < self._valid_until)
            age = None if self.store is None or not epoch else max(0.0, self.clock() - self._seen_at)
            if self._epoch is not None and self._epoch == epoch:
                age = max(0.0, self.clock() - (self._valid_until - self.valid))
            return LeaderStatus(
                member=self.member, leading=leading,
                leader=self.member if self.store is None else params.get(MEMBER), epoch=epoch, since=since,
                lease_age=age, lease=self.lease, acquired=self._acquired, lost=self._lost,
                store=self.store.where if self.store is not None else None, problem=self._problem)

    # ------------------------------------------------------------ the loop

    def start(self) -> None:
        if self.store is None:
            return
        self._thread = threading.Thread(target=self._loop, name="catalogd-leader", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop electing; the work taken up is let go (``on_change(False)``) before this returns,
        then the term is marked released so that another member claims it without waiting."""
        if self.store is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        with self._lock:
            epoch, self._epoch = self._epoch, None
        self._change(False)
        self._work.shutdown(wait=True)
        if epoch is not None:
            try:
                self.store.renew(epoch, {**self._term, HEARTBEAT: RELEASED})
            except CatalogError as e:
                logger.warning("leader lease: could not release term %d: %s", epoch, e.message)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.step()
            self._stop.wait(self.interval)

    def step(self) -> None:
        """One pass: renew the held term, or watch the latest one and claim the next when it lapsed."""
        if self.store is None:
            return
        try:
            self._step(self.store)
            self._problem = None
        except CatalogError as e:
            if self._problem != e.message:
                logger.warning("leader lease (%s): %s", self.store.where, e.message)
            self._problem = e.message
        except Exception as e:  # the loop must outlive any one failure
            logger.exception("leader lease pass failed")
            self._problem = f"{type(e).__name__}: {e}"
        self._change(self.is_leader())

    def _step(self, store: LeaseStore) -> None:
        began = self.clock()
        if self._epoch is not None:
            self._beats += 1
            heartbeat = f"{self._beats}:{int(self.wall() * 1000)}"
            store.renew(self._epoch, {**self._term, HEARTBEAT: heartbeat})
            epochs = store.epochs()
            latest = epochs[-1] if epochs else 0
            if latest <= self._epoch:
                with self._lock:
                    self._valid_until = began + self.valid
                    self._latest = (self._epoch, {**self._latest[1], HEARTBEAT: heartbeat})
                return
            logger.warning("leader lease: term %d of another member is newer than ours (%d): no longer leading",
                           latest, self._epoch)
            with self._lock:
                self._epoch = None
                self._lost += 1
        epochs = store.epochs()
        latest = epochs[-1] if epochs else 0
        params = store.read(latest) if latest else None
        with self._lock:
            self._latest = (latest, params or {})
            beat = (latest, (params or {}).get(HEARTBEAT))
            if beat != self._seen:
                self._seen, self._seen_at = beat, began
                if latest and (params or {}).get(MEMBER) != self.member \
                        and (params or {}).get(HEARTBEAT) != RELEASED:
                    return
        # A term of this member's previous process (it held our address, so it is gone) needs no wait.
        free = params is not None and (params.get(MEMBER) == self.member or params.get(HEARTBEAT) == RELEASED)
        if latest and params is not None and not free and self.clock() - self._seen_at < self.lease:
            return
        self._claim(store, latest + 1, epochs)

    def _claim(self, store: LeaseStore, epoch: int, epochs: list[int]) -> None:
        began = self.clock()
        now_ms = str(int(self.wall() * 1000))
        params = {MEMBER: self.member, SINCE: now_ms, HEARTBEAT: f"0:{now_ms}"}
        if not store.claim(epoch, params):
            return
        landed = self.clock()
        with self._lock:
            self._epoch, self._beats, self._term = epoch, 0, params
            self._valid_until = began + self.valid
            # Fencing: the previous holder may act until ``valid`` after a confirmation that began
            # before this claim landed; act only once that is surely over.
            self._acting_from = landed + self.valid if epoch > 1 else landed
            self._latest = (epoch, params)
            self._seen, self._seen_at = (epoch, params[HEARTBEAT]), began
            self._acquired += 1
        logger.info("leader lease: this member (%s) took term %d (%s)", self.member, epoch, store.where)
        for old in epochs[:-_KEEP_TERMS]:
            try:
                store.drop(old)
            except CatalogError as e:
                logger.debug("leader lease: dropping term %d: %s", old, e)

    def _change(self, acting: bool) -> None:
        with self._lock:
            if acting == self._acting:
                return
            self._acting = acting
            if not acting and self._epoch is not None:
                self._lost += 1
        logger.info("leader lease: this member %s background work", "takes up" if acting else "stops")
        if self.on_change is not None:
            # Not on this thread: taking up or letting go of the work may take long, and the
            # renewals must go on meanwhile.
            self._work.submit(self._call_on_change, acting)

    def _call_on_change(self, acting: bool) -> None:
        assert self.on_change is not None
        try:
            self.on_change(acting)
        except Exception:
            logger.exception("leader change (%s) failed", "taking up" if acting else "stopping")


def _seconds(ms: str | None) -> float | None:
    try:
        return int(ms) / 1000.0 if ms else None
    except ValueError:
        return None
