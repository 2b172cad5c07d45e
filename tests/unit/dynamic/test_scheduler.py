"""The FULL scheduler with a fake clock: what fires, when, and what it sleeps."""

from __future__ import annotations

import datetime
import threading

import pytest
from dynamic_fakes import entry
from polling import wait_until

from catalogd.dynamic.freshness import next_fire_time
from catalogd.dynamic.registry import Entry, Registry
from catalogd.dynamic.scheduler import MAX_WAIT, Scheduler
from catalogd.model import RefreshMode, RefreshState

UTC = datetime.UTC
NOON = datetime.datetime(2024, 3, 2, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime.datetime) -> None:
        self.now = now

    def __call__(self) -> datetime.datetime:
        return self.now


def _full(name: str, next_fire: datetime.datetime | None, freshness: str = "1 hour",
          state: RefreshState = RefreshState.RUNNING) -> Entry:
    made = entry(name, freshness, RefreshMode.FULL, state)
    made.next_fire = next_fire
    return made


Fired = list[tuple[str, datetime.datetime]]


def _scheduler(*entries: Entry, clock: Clock, fire: object = None) -> tuple[Scheduler, Fired]:
    registry = Registry()
    for e in entries:
        registry.put(e)
    fired: Fired = []

    def record(e: Entry, when: datetime.datetime) -> None:
        fired.append((e.name, when))

    return Scheduler(registry, fire or record, clock, threading.Event()), fired  # type: ignore[arg-type]


def test_a_due_table_fires_once_at_its_fire_time_and_moves_on() -> None:
    clock = Clock(NOON + datetime.timedelta(seconds=3))
    due = _full("due", NOON)
    scheduler, fired = _scheduler(due, clock=clock)
    scheduler.tick()
    assert fired == [("due", NOON)]
    assert due.next_fire == next_fire_time(due.freshness, clock.now) == NOON + datetime.timedelta(hours=1)
    scheduler.tick()
    assert fired == [("due", NOON)]  # not again until the next hour
    clock.now = NOON + datetime.timedelta(hours=1)
    scheduler.tick()
    assert fired[-1] == ("due", NOON + datetime.timedelta(hours=1))


def test_it_sleeps_until_the_next_fire_but_never_longer_than_max_wait() -> None:
    clock = Clock(NOON)
    soon = _full("soon", NOON + datetime.timedelta(seconds=0.25))
    scheduler, fired = _scheduler(soon, _full("later", NOON + datetime.timedelta(hours=1)), clock=clock)
    assert scheduler.tick() == pytest.approx(0.25)
    assert fired == []
    scheduler, _ = _scheduler(_full("later", NOON + datetime.timedelta(hours=1)), clock=clock)
    assert scheduler.tick() == MAX_WAIT


def test_suspended_continuous_and_unscheduled_tables_never_fire() -> None:
    clock = Clock(NOON + datetime.timedelta(days=1))
    suspended = _full("suspended", NOON, state=RefreshState.SUSPENDED)
    continuous = entry("continuous", "10 seconds", RefreshMode.CONTINUOUS)
    continuous.next_fire = NOON
    scheduler, fired = _scheduler(suspended, continuous, _full("unscheduled", None), clock=clock)
    scheduler.tick()
    assert fired == []
    assert suspended.next_fire == NOON  # untouched


def test_a_fire_that_fails_does_not_keep_the_others_from_firing(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock(NOON)
    fired: list[str] = []

    def fire(e: Entry, when: datetime.datetime) -> None:
        if e.name == "bad":
            raise RuntimeError("boom")
        fired.append(e.name)

    scheduler, _ = _scheduler(_full("bad", NOON), _full("good", NOON), clock=clock, fire=fire)
    scheduler.tick()
    assert fired == ["good"]
    assert "scheduled refresh of main.db.bad" in caplog.text


def test_the_loop_fires_when_woken_and_ends_when_stopping() -> None:
    clock = Clock(NOON)
    registry = Registry()
    fired: list[datetime.datetime] = []
    stopping = threading.Event()
    scheduler = Scheduler(registry, lambda e, when: fired.append(when), clock, stopping)
    thread = threading.Thread(target=scheduler.run, daemon=True)
    thread.start()
    registry.put(_full("new", NOON))
    scheduler.wake()
    wait_until(lambda: fired == [NOON], 10.0, "the woken scheduler to fire")
    stopping.set()
    scheduler.wake()
    thread.join(10.0)
    assert not thread.is_alive()
