"""Tests for catalogd.dynamic.freshness: parsing, mode derivation, cron and fire times."""

from __future__ import annotations

import datetime
from zoneinfo import ZoneInfo

import pytest

from catalogd.dynamic.freshness import (
    Freshness,
    TimeUnit,
    cron_expression,
    default_freshness,
    derive_mode,
    freshness_of,
    next_fire_time,
    parse_freshness,
    previous_fire_time,
    schedulable_amounts,
)
from catalogd.errors import InvalidArgumentError
from catalogd.model import RefreshMode

UTC = datetime.UTC
BERLIN = ZoneInfo("Europe/Berlin")
S, MIN, H, D = TimeUnit.SECOND, TimeUnit.MINUTE, TimeUnit.HOUR, TimeUnit.DAY


def utc(*args: int) -> datetime.datetime:
    return datetime.datetime(*args, tzinfo=UTC)


def berlin(*args: int, fold: int = 0) -> datetime.datetime:
    return datetime.datetime(*args, tzinfo=BERLIN, fold=fold)


def same_instant(a: datetime.datetime, b: datetime.datetime) -> bool:
    """Equal instants and equal UTC offsets (== ignores fold within one zone)."""
    return a.astimezone(UTC) == b.astimezone(UTC) and a.utcoffset() == b.utcoffset()


# --------------------------------------------------------------------------- TimeUnit / Freshness


def test_time_unit_values_and_seconds() -> None:
    assert [u.value for u in TimeUnit] == ["SECOND", "MINUTE", "HOUR", "DAY"]
    assert [u.seconds for u in TimeUnit] == [1, 60, 3600, 86400]


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("SECOND", S),
        ("seconds", S),
        ("Minute", MIN),
        ("MINUTES", MIN),
        ("hour", H),
        ("HOURS", H),
        ("day", D),
        (" DAYS ", D),
    ],
)
def test_time_unit_parse(text: str, unit: TimeUnit) -> None:
    assert TimeUnit.parse(text) is unit


@pytest.mark.parametrize("text", ["", "week", "s", "SS", "DAYSS", "month"])
def test_time_unit_parse_rejects(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="use SECOND, MINUTE, HOUR or DAY"):
        TimeUnit.parse(text)


def test_freshness_properties() -> None:
    f = Freshness(1, D)
    assert str(f) == "1 DAY"
    assert f.sql == "INTERVAL '1' DAY"
    assert f.seconds == 86400
    assert f.timedelta == datetime.timedelta(days=1)
    ten = Freshness(10, S)
    assert str(ten) == "10 SECOND"
    assert ten.sql == "INTERVAL '10' SECOND"
    assert ten.timedelta == datetime.timedelta(seconds=10)
    assert Freshness(90, MIN).seconds == 5400


def test_freshness_is_frozen_and_hashable() -> None:
    f = Freshness(2, H)
    with pytest.raises(AttributeError):
        f.amount = 3  # type: ignore[misc]
    assert {f, Freshness(2, H)} == {Freshness(2, H)}
    assert Freshness(60, S) != Freshness(1, MIN)


def test_freshness_unit_given_as_text_is_coerced() -> None:
    assert Freshness(1, "day").unit is D  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("amount", "unit", "message"),
    [
        (0, D, "must be positive"),
        (-1, H, "must be positive"),
        (True, S, "must be an integer"),
        (1.5, S, "must be an integer"),
        ("1", S, "must be an integer"),
        (1, "week", "unknown freshness unit"),
        (10**12, D, "too long"),
    ],
)
def test_freshness_rejects(amount: object, unit: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        Freshness(amount, unit)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- parse_freshness


@pytest.mark.parametrize(
    ("text", "amount", "unit"),
    [
        ("1 day", 1, D),
        ("1 DAY", 1, D),
        ("2 days", 2, D),
        ("1 d", 1, D),
        ("1d", 1, D),
        ("10 s", 10, S),
        ("10s", 10, S),
        ("10 sec", 10, S),
        ("10 secs", 10, S),
        ("10 second", 10, S),
        ("10 seconds", 10, S),
        ("30 min", 30, MIN),
        ("30min", 30, MIN),
        ("30 minutes", 30, MIN),
        ("1 Minute", 1, MIN),
        ("1 h", 1, H),
        ("2 hours", 2, H),
        ("3 hr", 3, H),
        ("INTERVAL '1' DAY", 1, D),
        ("interval '10' second", 10, S),
        ("INTERVAL 10 SECONDS", 10, S),
        ("Interval '2' Hours", 2, H),
        ("  \t1 day\n ", 1, D),
        ("60 seconds", 60, S),
        ("24 hours", 24, H),
        ("010 s", 10, S),
    ],
)
def test_parse_freshness(text: str, amount: int, unit: TimeUnit) -> None:
    assert parse_freshness(text) == Freshness(amount, unit)


def test_parse_freshness_keeps_the_unit_written() -> None:
    f = parse_freshness("60 seconds")
    assert (f.amount, f.unit) == (60, S)
    assert str(f) == "60 SECOND"
    assert str(parse_freshness("24 hours")) == "24 HOUR"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "day",
        "1",
        "1 week",
        "1 month",
        "1 m",
        "1.5 hours",
        "one day",
        "1 day 2 hours",
        "INTERVAL '1 DAY'",
        "INTERVAL '1 DAY",
        "INTERVAL1 DAY",
        "1 days ago",
        "PT1H",
    ],
)
def test_parse_freshness_rejects_bad_text(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        parse_freshness(text)
    assert str(err.value) == f"invalid freshness {text!r}: use e.g. '1 day', '10 minutes', INTERVAL '1' HOUR"


@pytest.mark.parametrize("text", ["0 day", "-1 hour", "INTERVAL '0' SECOND", "INTERVAL '-5' MINUTE"])
def test_parse_freshness_rejects_non_positive(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        parse_freshness(text)
    assert "positive integer" in str(err.value)
    assert repr(text) in str(err.value)
    assert "INTERVAL '1' HOUR" in str(err.value)


def test_parse_freshness_rejects_non_text() -> None:
    with pytest.raises(InvalidArgumentError, match="invalid freshness"):
        parse_freshness(10)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- cron_expression


@pytest.mark.parametrize(
    ("amount", "unit", "cron"),
    [
        (1, S, "0/1 * * * * ? *"),
        (10, S, "0/10 * * * * ? *"),
        (30, S, "0/30 * * * * ? *"),
        (60, S, "0 * * * * ? *"),
        (1, MIN, "0 0/1 * * * ? *"),
        (15, MIN, "0 0/15 * * * ? *"),
        (60, MIN, "0 0 * * * ? *"),
        (1, H, "0 0 0/1 * * ? *"),
        (2, H, "0 0 0/2 * * ? *"),
        (8, H, "0 0 0/8 * * ? *"),
        (24, H, "0 0 0 * * ? *"),
        (1, D, "0 0 0 * * ? *"),
    ],
)
def test_cron_expression(amount: int, unit: TimeUnit, cron: str) -> None:
    assert cron_expression(Freshness(amount, unit)) == cron


def test_schedulable_amounts() -> None:
    assert schedulable_amounts(S) == [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60]
    assert schedulable_amounts(MIN) == [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60]
    assert schedulable_amounts(H) == [1, 2, 3, 4, 6, 8, 12, 24]
    assert schedulable_amounts(D) == [1]


@pytest.mark.parametrize("amount", [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60])
def test_cron_expression_accepts_every_divisor_of_60(amount: int) -> None:
    cron_expression(Freshness(amount, S))
    cron_expression(Freshness(amount, MIN))


def test_cron_expression_message_for_minutes() -> None:
    with pytest.raises(InvalidArgumentError) as err:
        cron_expression(Freshness(7, MIN))
    assert str(err.value) == (
        "freshness 7 MINUTE cannot be scheduled for a FULL refresh: use 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 "
        "or 60 MINUTE (divisors of 60), or CONTINUOUS refresh mode"
    )


def test_cron_expression_message_for_seconds() -> None:
    with pytest.raises(InvalidArgumentError) as err:
        cron_expression(Freshness(90, S))
    assert str(err.value) == (
        "freshness 90 SECOND cannot be scheduled for a FULL refresh: use 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 "
        "or 60 SECOND (divisors of 60), or CONTINUOUS refresh mode"
    )


def test_cron_expression_message_for_hours() -> None:
    with pytest.raises(InvalidArgumentError) as err:
        cron_expression(Freshness(5, H))
    assert str(err.value) == (
        "freshness 5 HOUR cannot be scheduled for a FULL refresh: use 1, 2, 3, 4, 6, 8, 12 or 24 HOUR "
        "(divisors of 24), or CONTINUOUS refresh mode"
    )


@pytest.mark.parametrize("amount", [2, 7, 30])
def test_cron_expression_message_for_days(amount: int) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        cron_expression(Freshness(amount, D))
    assert str(err.value) == (
        f"freshness {amount} DAY cannot be scheduled for a FULL refresh: use 1 DAY (a daily refresh), "
        "or CONTINUOUS refresh mode"
    )


@pytest.mark.parametrize(("amount", "unit"), [(7, S), (45, S), (120, S), (9, MIN), (90, MIN), (5, H), (48, H)])
def test_cron_expression_rejects(amount: int, unit: TimeUnit) -> None:
    with pytest.raises(InvalidArgumentError, match="cannot be scheduled for a FULL refresh"):
        cron_expression(Freshness(amount, unit))


# --------------------------------------------------------------------------- derive_mode

THIRTY_MINUTES = datetime.timedelta(minutes=30)


@pytest.mark.parametrize(
    ("freshness", "mode"),
    [
        (Freshness(10, S), RefreshMode.CONTINUOUS),
        (Freshness(29, MIN), RefreshMode.CONTINUOUS),  # not schedulable, but not FULL either
        (Freshness(1799, S), RefreshMode.CONTINUOUS),
        (Freshness(30, MIN), RefreshMode.FULL),  # equal to the threshold is not below it
        (Freshness(60, MIN), RefreshMode.FULL),
        (Freshness(1, H), RefreshMode.FULL),
        (Freshness(1, D), RefreshMode.FULL),
    ],
)
def test_derive_mode_from_threshold(freshness: Freshness, mode: RefreshMode) -> None:
    assert derive_mode(freshness, THIRTY_MINUTES) is mode


def test_derive_mode_explicit_wins() -> None:
    assert derive_mode(Freshness(1, D), THIRTY_MINUTES, RefreshMode.CONTINUOUS) is RefreshMode.CONTINUOUS
    assert derive_mode(Freshness(10, S), THIRTY_MINUTES, RefreshMode.FULL) is RefreshMode.FULL
    assert derive_mode(Freshness(7, MIN), THIRTY_MINUTES, RefreshMode.CONTINUOUS) is RefreshMode.CONTINUOUS
    assert derive_mode(Freshness(2, D), THIRTY_MINUTES, RefreshMode.CONTINUOUS) is RefreshMode.CONTINUOUS


def test_derive_mode_accepts_explicit_text() -> None:
    assert derive_mode(Freshness(10, S), THIRTY_MINUTES, "full") is RefreshMode.FULL  # type: ignore[arg-type]


def test_derive_mode_validates_a_full_schedule() -> None:
    # Derived FULL: 45 MINUTE is not below 30 minutes, and cannot be scheduled.
    with pytest.raises(InvalidArgumentError, match="freshness 45 MINUTE cannot be scheduled"):
        derive_mode(Freshness(45, MIN), THIRTY_MINUTES)
    with pytest.raises(InvalidArgumentError, match="freshness 7 MINUTE cannot be scheduled"):
        derive_mode(Freshness(7, MIN), datetime.timedelta(minutes=1))
    with pytest.raises(InvalidArgumentError, match="freshness 7 SECOND cannot be scheduled"):
        derive_mode(Freshness(7, S), THIRTY_MINUTES, RefreshMode.FULL)
    with pytest.raises(InvalidArgumentError, match="freshness 2 DAY cannot be scheduled"):
        derive_mode(Freshness(2, D), THIRTY_MINUTES)
    # 1800 SECOND equals the threshold, so FULL, and seconds must divide 60.
    with pytest.raises(InvalidArgumentError, match="freshness 1800 SECOND cannot be scheduled"):
        derive_mode(Freshness(1800, S), THIRTY_MINUTES)


def test_derive_mode_zero_threshold_means_always_full() -> None:
    assert derive_mode(Freshness(1, S), datetime.timedelta(0)) is RefreshMode.FULL


# --------------------------------------------------------------------------- fire times (UTC)


@pytest.mark.parametrize(
    ("amount", "unit", "after", "expected"),
    [
        (10, S, utc(2024, 3, 2, 12, 0, 0), utc(2024, 3, 2, 12, 0, 10)),
        (10, S, utc(2024, 3, 2, 12, 0, 5), utc(2024, 3, 2, 12, 0, 10)),
        (10, S, utc(2024, 3, 2, 12, 0, 9, 999999), utc(2024, 3, 2, 12, 0, 10)),
        (10, S, utc(2024, 3, 2, 23, 59, 50), utc(2024, 3, 3, 0, 0, 0)),
        (10, S, utc(2024, 3, 2, 23, 59, 59, 1), utc(2024, 3, 3, 0, 0, 0)),
        (60, S, utc(2024, 3, 2, 12, 0, 0), utc(2024, 3, 2, 12, 1, 0)),
        (15, MIN, utc(2024, 3, 2, 12, 0, 0), utc(2024, 3, 2, 12, 15)),
        (15, MIN, utc(2024, 3, 2, 12, 14, 59, 999999), utc(2024, 3, 2, 12, 15)),
        (15, MIN, utc(2024, 3, 2, 12, 15), utc(2024, 3, 2, 12, 30)),
        (15, MIN, utc(2024, 3, 2, 23, 45), utc(2024, 3, 3, 0, 0)),
        (15, MIN, utc(2024, 12, 31, 23, 50), utc(2025, 1, 1, 0, 0)),
        (2, H, utc(2024, 3, 2, 0, 0), utc(2024, 3, 2, 2, 0)),
        (2, H, utc(2024, 3, 2, 1, 59, 59), utc(2024, 3, 2, 2, 0)),
        (2, H, utc(2024, 3, 2, 13, 0), utc(2024, 3, 2, 14, 0)),
        (2, H, utc(2024, 3, 2, 22, 0), utc(2024, 3, 3, 0, 0)),
        (1, D, utc(2024, 3, 1, 0, 0), utc(2024, 3, 2, 0, 0)),
        (1, D, utc(2024, 3, 1, 23, 59, 59, 999999), utc(2024, 3, 2, 0, 0)),
        (1, D, utc(2024, 2, 28, 12, 0), utc(2024, 2, 29, 0, 0)),
        (24, H, utc(2024, 3, 1, 0, 0), utc(2024, 3, 2, 0, 0)),
    ],
)
def test_next_fire_time_utc(amount: int, unit: TimeUnit, after: datetime.datetime, expected: datetime.datetime) -> None:
    result = next_fire_time(Freshness(amount, unit), after)
    assert result == expected
    assert result.tzinfo is UTC


@pytest.mark.parametrize(
    ("amount", "unit", "at", "expected"),
    [
        (10, S, utc(2024, 3, 2, 12, 0, 10), utc(2024, 3, 2, 12, 0, 10)),
        (10, S, utc(2024, 3, 2, 12, 0, 9, 999999), utc(2024, 3, 2, 12, 0, 0)),
        (10, S, utc(2024, 3, 2, 0, 0, 0), utc(2024, 3, 2, 0, 0, 0)),
        (10, S, utc(2024, 3, 1, 23, 59, 59), utc(2024, 3, 1, 23, 59, 50)),
        (15, MIN, utc(2024, 3, 2, 12, 15), utc(2024, 3, 2, 12, 15)),
        (15, MIN, utc(2024, 3, 2, 12, 29, 59), utc(2024, 3, 2, 12, 15)),
        (15, MIN, utc(2024, 3, 2, 0, 14), utc(2024, 3, 2, 0, 0)),
        (2, H, utc(2024, 3, 2, 1, 59), utc(2024, 3, 2, 0, 0)),
        (2, H, utc(2024, 3, 2, 2, 0), utc(2024, 3, 2, 2, 0)),
        (2, H, utc(2024, 3, 2, 23, 59), utc(2024, 3, 2, 22, 0)),
        (1, D, utc(2024, 3, 2, 23, 59), utc(2024, 3, 2, 0, 0)),
        (1, D, utc(2024, 3, 2, 0, 0), utc(2024, 3, 2, 0, 0)),
        (1, D, utc(2024, 3, 1, 23, 59, 59, 999999), utc(2024, 3, 1, 0, 0)),
    ],
)
def test_previous_fire_time_utc(
    amount: int, unit: TimeUnit, at: datetime.datetime, expected: datetime.datetime
) -> None:
    result = previous_fire_time(Freshness(amount, unit), at)
    assert result == expected
    assert result.tzinfo is UTC


def test_fire_times_walk_every_10_seconds() -> None:
    f = Freshness(10, S)
    t = utc(2024, 3, 2, 23, 59, 30)
    seen = []
    for _ in range(5):
        t = next_fire_time(f, t)
        seen.append(t.strftime("%d %H:%M:%S"))
    assert seen == ["02 23:59:40", "02 23:59:50", "03 00:00:00", "03 00:00:10", "03 00:00:20"]


def test_fire_times_in_a_fixed_offset_zone_are_at_local_midnight() -> None:
    ist = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    after = datetime.datetime(2024, 3, 1, 12, 0, tzinfo=ist)
    result = next_fire_time(Freshness(1, D), after)
    assert result == datetime.datetime(2024, 3, 2, 0, 0, tzinfo=ist)
    assert result.tzinfo is ist
    assert previous_fire_time(Freshness(1, D), after) == datetime.datetime(2024, 3, 1, 0, 0, tzinfo=ist)


def test_fire_times_reject_naive_datetimes() -> None:
    naive = datetime.datetime(2024, 3, 2, 12, 0)
    with pytest.raises(InvalidArgumentError, match="no time zone"):
        next_fire_time(Freshness(1, D), naive)
    with pytest.raises(InvalidArgumentError, match="no time zone"):
        previous_fire_time(Freshness(1, D), naive)


def test_fire_times_reject_unschedulable_freshness() -> None:
    with pytest.raises(InvalidArgumentError, match="freshness 7 MINUTE cannot be scheduled"):
        next_fire_time(Freshness(7, MIN), utc(2024, 3, 2))
    with pytest.raises(InvalidArgumentError, match="freshness 2 DAY cannot be scheduled"):
        previous_fire_time(Freshness(2, D), utc(2024, 3, 2))


def test_fire_times_at_the_end_of_the_calendar() -> None:
    with pytest.raises(InvalidArgumentError, match="too close to the end of the calendar"):
        next_fire_time(Freshness(1, D), datetime.datetime(9999, 12, 31, 12, tzinfo=UTC))


# --------------------------------------------------------------------------- fire times (DST)


def test_daily_fires_at_local_midnight_around_spring_forward() -> None:
    f = Freshness(1, D)
    first = next_fire_time(f, berlin(2024, 3, 30, 12, 0))
    assert same_instant(first, berlin(2024, 3, 31, 0, 0))
    assert first.utcoffset() == datetime.timedelta(hours=1)
    second = next_fire_time(f, first)
    assert same_instant(second, berlin(2024, 4, 1, 0, 0))
    assert second.utcoffset() == datetime.timedelta(hours=2)
    # The DST day is 23 hours long.
    assert second.astimezone(UTC) - first.astimezone(UTC) == datetime.timedelta(hours=23)
    assert same_instant(previous_fire_time(f, berlin(2024, 3, 31, 23, 0)), first)
    assert same_instant(previous_fire_time(f, berlin(2024, 3, 31, 3, 0)), first)


def test_daily_fires_at_local_midnight_around_fall_back() -> None:
    f = Freshness(1, D)
    first = next_fire_time(f, berlin(2024, 10, 26, 12, 0))
    second = next_fire_time(f, first)
    assert same_instant(first, berlin(2024, 10, 27, 0, 0))
    assert same_instant(second, berlin(2024, 10, 28, 0, 0))
    assert second.astimezone(UTC) - first.astimezone(UTC) == datetime.timedelta(hours=25)


def test_hourly_skips_the_missing_hour() -> None:
    f = Freshness(1, H)
    result = next_fire_time(f, berlin(2024, 3, 31, 1, 30))
    # 02:00 does not exist on 2024-03-31 in Berlin: the next fire is 03:00 CEST.
    assert result.astimezone(UTC) == utc(2024, 3, 31, 1, 0)
    assert (result.hour, result.utcoffset()) == (3, datetime.timedelta(hours=2))


def test_two_hourly_fires_when_the_gap_ends() -> None:
    f = Freshness(2, H)
    # 02:00 falls in the gap: it fires once, when the gap ends (like cron and Quartz).
    result = next_fire_time(f, berlin(2024, 3, 31, 0, 30))
    assert result.astimezone(UTC) == utc(2024, 3, 31, 1, 0)
    assert result.hour == 3
    after = next_fire_time(f, result)
    assert (after.hour, after.utcoffset()) == (4, datetime.timedelta(hours=2))
    assert same_instant(previous_fire_time(f, berlin(2024, 3, 31, 3, 30)), result)
    assert same_instant(previous_fire_time(f, berlin(2024, 3, 31, 1, 59)), berlin(2024, 3, 31, 0, 0))


def test_quarter_hours_on_the_spring_forward_day() -> None:
    f = Freshness(15, MIN)
    t = berlin(2024, 3, 31, 1, 30)
    seen = []
    for _ in range(4):
        t = next_fire_time(f, t)
        seen.append(t.isoformat())
    assert seen == [
        "2024-03-31T01:45:00+01:00",
        "2024-03-31T03:00:00+02:00",
        "2024-03-31T03:15:00+02:00",
        "2024-03-31T03:30:00+02:00",
    ]
    assert previous_fire_time(f, berlin(2024, 3, 31, 3, 10)).isoformat() == "2024-03-31T03:00:00+02:00"


def test_hourly_fires_in_both_passes_of_the_repeated_hour() -> None:
    f = Freshness(1, H)
    t = berlin(2024, 10, 27, 1, 30)
    seen = []
    for _ in range(4):
        t = next_fire_time(f, t)
        seen.append(t.isoformat())
    assert seen == [
        "2024-10-27T02:00:00+02:00",
        "2024-10-27T02:00:00+01:00",
        "2024-10-27T03:00:00+01:00",
        "2024-10-27T04:00:00+01:00",
    ]
    second_pass = berlin(2024, 10, 27, 2, 30, fold=1)
    assert previous_fire_time(f, second_pass).isoformat() == "2024-10-27T02:00:00+01:00"
    assert previous_fire_time(f, berlin(2024, 10, 27, 2, 30)).isoformat() == "2024-10-27T02:00:00+02:00"


def test_fire_times_stay_consistent_over_dst_days() -> None:
    f = Freshness(15, MIN)
    for day, fires in (((2024, 3, 31), 92), ((2024, 10, 27), 100)):
        start = berlin(*day)
        end = next_fire_time(Freshness(1, D), start)
        t, count = start, 0
        while t.astimezone(UTC) < end.astimezone(UTC):
            nxt = next_fire_time(f, t)
            assert nxt.astimezone(UTC) > t.astimezone(UTC)
            assert same_instant(previous_fire_time(f, nxt), nxt)
            just_before = (nxt.astimezone(UTC) - datetime.timedelta(microseconds=1)).astimezone(BERLIN)
            assert same_instant(previous_fire_time(f, just_before), t)
            t, count = nxt, count + 1
        assert count == fires
        assert same_instant(t, end)


def test_fire_time_keeps_the_zone_object() -> None:
    result = next_fire_time(Freshness(1, H), berlin(2024, 6, 1, 10, 5))
    assert result.tzinfo is BERLIN
    assert result.isoformat() == "2024-06-01T11:00:00+02:00"


@pytest.mark.parametrize(
    "freshness",
    [Freshness(10, S), Freshness(60, S), Freshness(15, MIN), Freshness(2, H), Freshness(1, D), Freshness(7, D)],
)
def test_freshness_text_round_trips(freshness: Freshness) -> None:
    assert parse_freshness(str(freshness)) == freshness
    assert parse_freshness(freshness.sql) == freshness


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(1, Freshness(1, TimeUnit.SECOND)), (90, Freshness(90, TimeUnit.SECOND)), (180, Freshness(3, TimeUnit.MINUTE)),
     (3600, Freshness(1, TimeUnit.HOUR)), (86400, Freshness(1, TimeUnit.DAY)), (7200, Freshness(2, TimeUnit.HOUR))],
)
def test_freshness_of_a_duration(seconds: int, expected: Freshness) -> None:
    assert freshness_of(datetime.timedelta(seconds=seconds)) == expected


@pytest.mark.parametrize("duration", [datetime.timedelta(0), datetime.timedelta(milliseconds=1500)])
def test_freshness_of_a_bad_duration(duration: datetime.timedelta) -> None:
    with pytest.raises(InvalidArgumentError, match="positive whole number of seconds"):
        freshness_of(duration)


def test_default_freshness_per_mode() -> None:
    # FLIP-551: FULL gets the FULL default; CONTINUOUS and an undeclared mode the CONTINUOUS one.
    continuous, full = datetime.timedelta(minutes=3), datetime.timedelta(hours=1)
    assert default_freshness(RefreshMode.FULL, continuous, full) == Freshness(1, TimeUnit.HOUR)
    assert default_freshness(RefreshMode.CONTINUOUS, continuous, full) == Freshness(3, TimeUnit.MINUTE)
    assert default_freshness(None, continuous, full) == Freshness(3, TimeUnit.MINUTE)
    # Without a declared mode it is derived from that default, as from a written freshness.
    assert derive_mode(default_freshness(None, continuous, full), datetime.timedelta(minutes=30)) \
        is RefreshMode.CONTINUOUS
