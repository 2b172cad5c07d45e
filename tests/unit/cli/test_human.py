"""Durations in human units and the reason a dynamic table is outside its target (catalogd.cli.human)."""

from __future__ import annotations

import pytest

from catalogd.cli.human import human_duration, lag_text, within_target_reason
from catalogd.model import DynamicTable, RefreshRun, RunStatus


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0.0 s"), (3.21, "3.2 s"), (59.99, "1 min"), (61, "1 min 1 s"), (720, "12 min"), (750, "12 min 30 s"),
    (3600.25, "1 h"), (7300, "2 h 1 min"), (86400, "1 day"), (2 * 86400 + 5, "2 days"), (90000, "1 day 1 h"),
    (86109129.9, "2 years 266 days"), (365 * 86400, "1 year"), (-1, "0.0 s"),
])
def test_durations_in_at_most_two_units(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def _dt(**kwargs: object) -> DynamicTable:
    return DynamicTable("main", "sales", "daily_totals", query="SELECT 1", freshness="1 DAY", **kwargs)  # type: ignore[arg-type]


PARTITION_RUN = RefreshRun("r1", "main.sales.daily_totals", "api", RunStatus.SUCCEEDED,
                           schedule_time="2024-03-02 00:00:00+00:00", partition={"ds": "2024-03-01"},
                           started=1763900000.0)


def test_within_target_needs_no_reason() -> None:
    dt = _dt(freshness_lag=720.0, within_target=True, data_time=1.0)
    assert within_target_reason(dt) is None
    assert lag_text(dt) == "12 min (within the 1 DAY target)"
    assert within_target_reason(_dt()) is None and lag_text(_dt()) is None


def test_an_old_schedule_time_is_said_plainly() -> None:
    """The README's example: a refresh for 2024-03-02 leaves the data as of 2024-03-02, years ago."""
    dt = _dt(freshness_lag=86109129.9, within_target=False, data_time=1709337600.0, data_time_run=PARTITION_RUN,
             last_refresh=PARTITION_RUN)
    assert lag_text(dt) == "2 years 266 days (outside the 1 DAY target)"
    assert within_target_reason(dt) == (
        "the data is as of 2024-03-02 00:00:00Z, the schedule time of run r1 (api, ds=2024-03-01); "
        "refresh without --schedule-time to bring the whole table up to now")


def test_a_whole_table_run_and_a_failed_one() -> None:
    whole = RefreshRun("r2", "t", "schedule", RunStatus.SUCCEEDED, started=1709337600.0)
    failed = RefreshRun("r3", "t", "manual", RunStatus.FAILED, started=1709340000.0)
    dt = _dt(freshness_lag=200000.0, within_target=False, data_time=1709337600.0, data_time_run=whole,
             last_refresh=whole)
    assert within_target_reason(dt) == ("the data is as of 2024-03-02 00:00:00Z, when run r2 (schedule) started; "
                                        "no refresh has made it newer since")
    dt.last_refresh = failed
    assert within_target_reason(dt) == ("the data is as of 2024-03-02 00:00:00Z, when run r2 (schedule) started; "
                                        "the last refresh, run r3, failed")
