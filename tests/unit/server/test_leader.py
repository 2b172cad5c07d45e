"""The leader lease on a store in memory and a hand-moved clock: one leader, takeover, fencing."""

from __future__ import annotations

from catalogd.errors import MetastoreUnavailableError
from catalogd.server.leader import HEARTBEAT, MEMBER, RELEASED, Leadership


class MemoryStore:
    """Terms in a dict; ``down`` makes every call fail as an unreachable metastore does."""

    where = "memory"

    def __init__(self) -> None:
        self.terms: dict[int, dict[str, str]] = {}
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise MetastoreUnavailableError("the metastore does not answer")

    def epochs(self) -> list[int]:
        self._check()
        return sorted(self.terms)

    def read(self, epoch: int) -> dict[str, str] | None:
        self._check()
        found = self.terms.get(epoch)
        return dict(found) if found is not None else None

    def claim(self, epoch: int, params: dict[str, str]) -> bool:
        self._check()
        if epoch in self.terms:
            return False
        self.terms[epoch] = dict(params)
        return True

    def renew(self, epoch: int, params: dict[str, str]) -> None:
        self._check()
        self.terms[epoch].update(params)

    def drop(self, epoch: int) -> None:
        self._check()
        self.terms.pop(epoch, None)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _member(store: MemoryStore, clock: Clock, name: str, changes: list[bool] | None = None) -> Leadership:
    leadership = Leadership(store, name, lease=3.0, clock=clock, wall=clock,
                            on_change=changes.append if changes is not None else None)
    return leadership


def _run(clock: Clock, members: list[Leadership], seconds: float, down: frozenset[str] = frozenset()) -> None:
    """Step every member (but those ``down``: killed or stopped) each interval for ``seconds``."""
    end = clock.now + seconds
    while clock.now < end:
        for member in members:
            if member.member not in down:
                member.step()
        clock.now += 0.5


def test_a_daemon_alone_always_leads() -> None:
    solo = Leadership(None, "solo")
    solo.step()
    assert solo.is_leader()
    status = solo.status()
    assert status.leading and status.leader == "solo" and status.store is None and status.epoch == 0


def test_the_first_member_leads_at_once_and_the_other_follows() -> None:
    store, clock = MemoryStore(), Clock()
    a, b = _member(store, clock, "a:1"), _member(store, clock, "b:1")
    a.step()
    assert a.is_leader()
    _run(clock, [a, b], 10)
    assert a.is_leader() and not b.is_leader()
    assert sorted(store.terms) == [1]
    status = b.status()
    assert status.leader == "a:1" and status.epoch == 1 and not status.leading
    assert status.lease_age is not None and status.lease_age <= 1.0


def test_a_killed_leader_is_replaced_after_the_lease_and_the_fencing_wait() -> None:
    store, clock = MemoryStore(), Clock()
    a, b = _member(store, clock, "a:1"), _member(store, clock, "b:1")
    _run(clock, [a, b], 5)
    killed_at = clock.now
    taken = None
    while clock.now < killed_at + 20:
        b.step()
        if b.is_leader():
            taken = clock.now
            break
        clock.now += 0.5
    assert taken is not None
    # The lease (3 s), a poll, and the fencing wait (2 s): well within 10 s.
    assert 3.0 <= taken - killed_at <= 7.0
    assert store.terms[2][MEMBER] == "b:1"
    assert not a.is_leader()  # its confirmation lapsed long ago


def test_a_stopped_leader_that_comes_back_does_nothing_and_steps_down() -> None:
    store, clock = MemoryStore(), Clock()
    a_changes: list[bool] = []
    a, b = _member(store, clock, "a:1", a_changes), _member(store, clock, "b:1")
    _run(clock, [a, b], 5)
    assert a.is_leader()
    # SIGSTOP: a makes no step while b takes over; its monotonic clock goes on.
    _run(clock, [a, b], 10, down=frozenset({"a:1"}))
    assert b.is_leader()
    # SIGCONT: before its next step, the fence already says no (its lease lapsed).
    assert not a.is_leader()
    a.step()
    assert not a.is_leader() and b.is_leader()
    assert a.status().lost >= 1 and a.status().leader == "b:1"
    _run(clock, [a, b], 10)
    assert b.is_leader() and not a.is_leader()


def test_at_no_time_do_two_members_lead() -> None:
    store, clock = MemoryStore(), Clock()
    members = [_member(store, clock, f"m{i}:1") for i in range(3)]
    pattern: list[set[str]] = [set(), {"m0:1"}, set(), {"m1:1"}, {"m2:1", "m0:1"}, set()]
    for down in pattern:
        end = clock.now + 8
        while clock.now < end:
            for member in members:
                if member.member not in down:
                    member.step()
            assert sum(m.is_leader() for m in members) <= 1
            clock.now += 0.5


def test_a_new_leader_waits_out_the_old_ones_last_confirmation() -> None:
    """The old leader's renewal began before the claim landed: the new one waits until it is over."""
    store, clock = MemoryStore(), Clock()
    a, b = _member(store, clock, "a:1"), _member(store, clock, "b:1")
    _run(clock, [a, b], 5)
    # b claims term 2 by hand while a's last confirmation is fresh.
    a.step()
    assert a.is_leader()
    b._claim(store, 2, [1])
    assert not b.is_leader()  # not before a's confirmation lapsed
    clock.now += a.valid
    assert not a.is_leader()
    b.step()
    assert b.is_leader()


def test_an_unreachable_store_ends_the_lead_and_it_comes_back() -> None:
    store, clock = MemoryStore(), Clock()
    changes: list[bool] = []
    a = _member(store, clock, "a:1", changes)
    _run(clock, [a], 2)
    assert a.is_leader()
    store.down = True
    _run(clock, [a], 3)
    assert not a.is_leader()
    assert a.status().problem == "the metastore does not answer"
    store.down = False
    _run(clock, [a], 2)
    assert a.is_leader() and a.status().problem is None
    a._work.shutdown(wait=True)
    assert changes == [True, False, True]


def test_a_restarted_member_retakes_its_own_term_at_once_and_a_released_one_is_free() -> None:
    store, clock = MemoryStore(), Clock()
    a = _member(store, clock, "a:1")
    _run(clock, [a], 2)
    restarted = _member(store, clock, "a:1")
    restarted.step()
    assert sorted(store.terms)[-1] == 2 and store.terms[2][MEMBER] == "a:1"
    store.terms[2][HEARTBEAT] = RELEASED
    b = _member(store, clock, "b:1")
    b.step()
    assert store.terms[3][MEMBER] == "b:1"


def test_old_terms_are_dropped() -> None:
    store, clock = MemoryStore(), Clock()
    for epoch in range(1, 8):
        store.terms[epoch] = {MEMBER: "gone:1", HEARTBEAT: "1:0"}
    b = _member(store, clock, "b:1")
    _run(clock, [b], 10)
    assert b.is_leader()
    assert sorted(store.terms) == [5, 6, 7, 8]
