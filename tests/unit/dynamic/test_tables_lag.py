"""Tests for the freshness lag and target a FULL table reports (``TableOperations.lags``,
what ``/metrics`` exports): a scheduled run queued or running extends the target by the
time since it was fired, up to one more freshness period."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from dynamic_fakes import entry

from catalogd.dynamic import tables
from catalogd.dynamic.registry import Registry
from catalogd.dynamic.tables import TableOperations
from catalogd.model import RefreshMode, RefreshRun, RunStatus

SLOT = 1_700_000_040.0  # a minute's fire time


def operations(monkeypatch: pytest.MonkeyPatch, now: float, runs: list[RefreshRun], data_time: float,
               last_duration: float, mode: RefreshMode = RefreshMode.FULL) -> TableOperations:
    monkeypatch.setattr(tables, "time", SimpleNamespace(time=lambda: now))
    registry = Registry()
    driven = entry("t", "1 minute", mode)
    driven.data_time, driven.last_duration = data_time, last_duration
    registry.put(driven)
    ops: Any = object.__new__(TableOperations)
    ops.registry = registry
    ops.runs = SimpleNamespace(live=lambda full: {r.id: r for r in runs})
    result: TableOperations = ops
    return result


def scheduled(status: RunStatus, fired: float, trigger: str = "schedule") -> RefreshRun:
    return RefreshRun(id=f"r{fired}", table="main.db.t", trigger=trigger, status=status, fired=fired,
                      started=fired + 20.0 if status is not RunStatus.PENDING else None)


def test_a_run_committing_later_after_its_slot_than_the_last_one_keeps_the_table_within_target(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The last run started 1 s after its slot and took 2 s; this minute's run waited 20 s in
    # the queue and is still running 25 s after its slot: lag 84 s, over 60 + 2, but the run
    # has until the next slot to commit.
    ops = operations(monkeypatch, now=SLOT + 25.0, runs=[scheduled(RunStatus.RUNNING, SLOT)],
                     data_time=SLOT - 60.0 + 1.0, last_duration=2.0)
    assert ops.lags() == [("main.db.t", 84.0, True)]


def test_a_run_late_past_the_next_slot_puts_the_table_outside_its_target(monkeypatch: pytest.MonkeyPatch) -> None:
    # Still queued 70 s after its slot: the target is 60 s plus at most one more period.
    ops = operations(monkeypatch, now=SLOT + 70.0, runs=[scheduled(RunStatus.PENDING, SLOT)],
                     data_time=SLOT - 60.0 + 1.0, last_duration=2.0)
    assert ops.lags() == [("main.db.t", 129.0, False)]


@pytest.mark.parametrize("run", [
    scheduled(RunStatus.SUCCEEDED, SLOT),  # it ended: the next commit is the next slot's
    scheduled(RunStatus.RUNNING, SLOT, trigger="manual"),  # not what the schedule waits for
])
def test_without_a_scheduled_run_going_the_target_is_the_freshness_and_the_last_duration(
        monkeypatch: pytest.MonkeyPatch, run: RefreshRun) -> None:
    ops = operations(monkeypatch, now=SLOT + 25.0, runs=[run], data_time=SLOT - 60.0 + 1.0, last_duration=2.0)
    assert ops.lags() == [("main.db.t", 84.0, False)]
    ops = operations(monkeypatch, now=SLOT + 1.0, runs=[run], data_time=SLOT - 60.0 + 1.0, last_duration=2.0)
    assert ops.lags() == [("main.db.t", 60.0, True)]


def test_a_continuous_table_gets_no_allowance(monkeypatch: pytest.MonkeyPatch) -> None:
    ops = operations(monkeypatch, now=SLOT + 61.0, runs=[scheduled(RunStatus.RUNNING, SLOT)], data_time=SLOT,
                     last_duration=2.0, mode=RefreshMode.CONTINUOUS)
    assert ops.lags() == [("main.db.t", 61.0, False)]
