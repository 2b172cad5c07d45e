"""Tests for catalogd.dynamic.partitions: date formatters, partition values, schedule times."""

from __future__ import annotations

import datetime
from zoneinfo import ZoneInfo

import pytest

from catalogd.dynamic.freshness import Freshness, TimeUnit
from catalogd.dynamic.partitions import (
    FORMATTER_KEY_RE,
    java_to_strftime,
    parse_formatters,
    parse_schedule_time,
    partition_value,
)
from catalogd.errors import InvalidArgumentError

UTC = datetime.UTC
BERLIN = ZoneInfo("Europe/Berlin")
ONE_DAY = Freshness(1, TimeUnit.DAY)
ONE_HOUR = Freshness(1, TimeUnit.HOUR)

# --------------------------------------------------------------------------- java_to_strftime


@pytest.mark.parametrize(
    ("pattern", "fmt"),
    [
        ("yyyy-MM-dd", "%Y-%m-%d"),
        ("yyyyMMdd", "%Y%m%d"),
        ("uuuu-MM-dd", "%Y-%m-%d"),
        ("yy.MM.dd", "%y.%m.%d"),
        ("uuMMdd", "%y%m%d"),
        ("yyyy-MM-dd HH", "%Y-%m-%d %H"),
        ("yyyy/MM/dd HH:mm:ss", "%Y/%m/%d %H:%M:%S"),
        ("yyyy-MM-dd'T'HH", "%Y-%m-%dT%H"),
        ("'year='yyyy'/month='MM", "year=%Y/month=%m"),
        ("HH'h'", "%Hh"),
        ("yyyy''MM", "%Y'%m"),
        ("'it''s' yyyy", "it's %Y"),
        ("''", "'"),
        ("yyyy%MM", "%Y%%%m"),
        ("'100%' yyyy", "100%% %Y"),
        ("dd_MM,yyyy", "%d_%m,%Y"),
        ("yyyy-MM-dd-HH-mm", "%Y-%m-%d-%H-%M"),
        ("'MM dd' yyyy", "MM dd %Y"),
    ],
)
def test_java_to_strftime(pattern: str, fmt: str) -> None:
    assert java_to_strftime(pattern) == fmt


@pytest.mark.parametrize(
    ("pattern", "formatted"),
    [
        ("yyyy-MM-dd", "2024-03-01"),
        ("yyyyMMdd", "20240301"),
        ("yy/MM/dd HH:mm:ss", "24/03/01 07:08:09"),
        ("yyyy-MM-dd'T'HH'%'", "2024-03-01T07%"),
        ("'ds='yyyy-MM-dd", "ds=2024-03-01"),
    ],
)
def test_java_to_strftime_formats_like_java(pattern: str, formatted: str) -> None:
    moment = datetime.datetime(2024, 3, 1, 7, 8, 9)
    assert moment.strftime(java_to_strftime(pattern)) == formatted


@pytest.mark.parametrize(
    ("pattern", "letter"),
    [
        ("yyyy-MM-dd E", "E"),
        ("EEE", "E"),
        ("hh:mm a", "h"),
        ("HH:mm a", "a"),
        ("HH:mm:ss.SSS", "S"),
        ("yyyy-MM-dd z", "z"),
        ("yyyy-MM-dd XXX", "X"),
        ("yyyy-MM-dd Q", "Q"),
        ("yyyy-w", "w"),
        ("yyyyy", "y"),
        ("yyy", "y"),
        ("y", "y"),
        ("yyyy-M-dd", "M"),
        ("yyyy-MMM-dd", "M"),
        ("yyyy-MM-d", "d"),
        ("yyyy-MM-dd H", "H"),
        ("DDD", "D"),
        ("é", None),
    ],
)
def test_java_to_strftime_rejects_unsupported_letters(pattern: str, letter: str | None) -> None:
    if letter is None:
        # A non-ASCII letter is not a pattern letter: it is kept as it is.
        assert java_to_strftime(pattern) == pattern
        return
    with pytest.raises(InvalidArgumentError) as err:
        java_to_strftime(pattern)
    message = str(err.value)
    assert f"unsupported pattern letter {letter!r}" in message
    assert repr(pattern) in message
    assert "supported are yyyy, uuuu, yy, uu, MM, dd, HH, mm, ss" in message


def test_java_to_strftime_hints_the_padded_form() -> None:
    with pytest.raises(InvalidArgumentError, match=r"\(use MM\)"):
        java_to_strftime("yyyy-M-dd")
    with pytest.raises(InvalidArgumentError, match=r"\(use HH\)"):
        java_to_strftime("H")
    with pytest.raises(InvalidArgumentError, match=r"\(use yy or yyyy\)"):
        java_to_strftime("yyy")


@pytest.mark.parametrize("pattern", ["yyyy-MM-dd'T", "'", "yyyy 'it''s"])
def test_java_to_strftime_rejects_unterminated_quotes(pattern: str) -> None:
    with pytest.raises(InvalidArgumentError, match="unterminated quote"):
        java_to_strftime(pattern)


@pytest.mark.parametrize("pattern", ["[yyyy]", "yyyy{MM}", "yyyy#"])
def test_java_to_strftime_rejects_reserved_characters(pattern: str) -> None:
    with pytest.raises(InvalidArgumentError, match="unsupported character"):
        java_to_strftime(pattern)


def test_java_to_strftime_accepts_reserved_characters_in_quotes() -> None:
    assert java_to_strftime("'['yyyy']'") == "[%Y]"


def test_java_to_strftime_rejects_empty() -> None:
    with pytest.raises(InvalidArgumentError, match="empty date-formatter pattern"):
        java_to_strftime("")


# --------------------------------------------------------------------------- parse_formatters


def test_formatter_key_re() -> None:
    match = FORMATTER_KEY_RE.fullmatch("partition.fields.ds.date-formatter")
    assert match is not None
    assert match.group("column") == "ds"
    assert FORMATTER_KEY_RE.fullmatch("partition.fields.ds.time-formatter") is None
    assert FORMATTER_KEY_RE.fullmatch("partition.fields..date-formatter") is None
    assert FORMATTER_KEY_RE.fullmatch("x.partition.fields.ds.date-formatter") is None


def test_parse_formatters() -> None:
    options = {
        "partition.fields.ds.date-formatter": "yyyy-MM-dd",
        "partition.fields.HR.date-formatter": "HH",
        "format": "parquet",
        "partition.fields.ds.other": "ignored",
    }
    assert parse_formatters(options, ["ds", "hr", "region"]) == {"ds": "yyyy-MM-dd", "hr": "HH"}


def test_parse_formatters_matches_partition_keys_case_insensitively() -> None:
    assert parse_formatters({"partition.fields.ds.date-formatter": "yyyyMMdd"}, ["DS"]) == {"ds": "yyyyMMdd"}


def test_parse_formatters_without_formatters() -> None:
    assert parse_formatters({}, ["ds"]) == {}
    assert parse_formatters({"a": "b"}, []) == {}


def test_parse_formatters_rejects_a_column_that_is_not_a_partition_column() -> None:
    with pytest.raises(InvalidArgumentError) as err:
        parse_formatters({"partition.fields.x.date-formatter": "yyyy-MM-dd"}, ["ds", "hr"])
    assert str(err.value) == (
        "partition.fields.x.date-formatter: x is not a partition column (partition columns: [ds, hr])"
    )


def test_parse_formatters_on_an_unpartitioned_table() -> None:
    with pytest.raises(InvalidArgumentError) as err:
        parse_formatters({"partition.fields.ds.date-formatter": "yyyy-MM-dd"}, [])
    assert str(err.value) == (
        "partition.fields.ds.date-formatter: ds is not a partition column (the table has no partition columns)"
    )


def test_parse_formatters_rejects_a_bad_pattern() -> None:
    with pytest.raises(InvalidArgumentError) as err:
        parse_formatters({"partition.fields.ds.date-formatter": "yyyy-MM-dd EEE"}, ["ds"])
    message = str(err.value)
    assert message.startswith("partition.fields.ds.date-formatter: unsupported pattern letter 'E'")
    assert "supported are yyyy" in message
    with pytest.raises(InvalidArgumentError, match=r"partition\.fields\.ds\.date-formatter: empty"):
        parse_formatters({"partition.fields.ds.date-formatter": ""}, ["ds"])


def test_parse_formatters_rejects_two_formatters_for_one_column() -> None:
    options = {"partition.fields.ds.date-formatter": "yyyy-MM-dd", "partition.fields.DS.date-formatter": "yyyyMMdd"}
    with pytest.raises(InvalidArgumentError, match="column ds has more than one date-formatter"):
        parse_formatters(options, ["ds"])


# --------------------------------------------------------------------------- partition_value


def test_flip_435_daily_example() -> None:
    # Scheduled at midnight on March 2, 2024, a 1 DAY table refreshes yesterday's partition.
    schedule = datetime.datetime(2024, 3, 2, 0, 0, tzinfo=UTC)
    assert partition_value(schedule, ONE_DAY, "yyyy-MM-dd") == "2024-03-01"
    assert partition_value(schedule, ONE_DAY, "yyyyMMdd") == "20240301"


def test_flip_435_hourly_example() -> None:
    schedule = datetime.datetime(2024, 3, 2, 1, 0, tzinfo=UTC)
    assert partition_value(schedule, ONE_HOUR, "yyyy-MM-dd") == "2024-03-02"
    assert partition_value(schedule, ONE_HOUR, "yyyy-MM-dd HH") == "2024-03-02 00"
    midnight = datetime.datetime(2024, 3, 2, 0, 0, tzinfo=UTC)
    assert partition_value(midnight, ONE_HOUR, "yyyy-MM-dd") == "2024-03-01"
    assert partition_value(midnight, ONE_HOUR, "yyyy-MM-dd HH") == "2024-03-01 23"


@pytest.mark.parametrize(
    ("freshness", "schedule", "pattern", "value"),
    [
        (Freshness(15, TimeUnit.MINUTE), datetime.datetime(2024, 3, 2, 0, 0), "yyyy-MM-dd HH:mm", "2024-03-01 23:45"),
        (Freshness(2, TimeUnit.HOUR), datetime.datetime(2024, 3, 2, 0, 0), "yyyyMMddHH", "2024030122"),
        (Freshness(10, TimeUnit.SECOND), datetime.datetime(2024, 3, 2, 0, 0), "HH:mm:ss", "23:59:50"),
        (ONE_DAY, datetime.datetime(2024, 1, 1, 0, 0), "yyyy-MM-dd", "2023-12-31"),
        (ONE_DAY, datetime.datetime(2024, 3, 1, 0, 0), "yyyy-MM-dd", "2024-02-29"),
        (ONE_DAY, datetime.datetime(2024, 3, 2, 0, 0), "'ds='yyyy-MM-dd", "ds=2024-03-01"),
    ],
)
def test_partition_value_naive(freshness: Freshness, schedule: datetime.datetime, pattern: str, value: str) -> None:
    assert partition_value(schedule, freshness, pattern) == value


def test_partition_value_daily_across_dst_uses_calendar_days() -> None:
    spring = datetime.datetime(2024, 4, 1, 0, 0, tzinfo=BERLIN)  # after a 23-hour day
    assert partition_value(spring, ONE_DAY, "yyyy-MM-dd") == "2024-03-31"
    fall = datetime.datetime(2024, 10, 28, 0, 0, tzinfo=BERLIN)  # after a 25-hour day
    assert partition_value(fall, ONE_DAY, "yyyy-MM-dd") == "2024-10-27"


def test_partition_value_hourly_across_dst_uses_elapsed_time() -> None:
    # 03:00 CEST follows 01:00 CET on 2024-03-31: the hour that passed is 01.
    spring = datetime.datetime(2024, 3, 31, 3, 0, tzinfo=BERLIN)
    assert partition_value(spring, ONE_HOUR, "yyyy-MM-dd HH") == "2024-03-31 01"
    # The second 02:00 (CET) follows the first one (CEST).
    fall = datetime.datetime(2024, 10, 27, 2, 0, tzinfo=BERLIN, fold=1)
    assert partition_value(fall, ONE_HOUR, "yyyy-MM-dd HH") == "2024-10-27 02"
    assert partition_value(datetime.datetime(2024, 6, 1, 10, 0, tzinfo=BERLIN), ONE_HOUR, "HH") == "09"


def test_partition_value_rejects_a_bad_pattern() -> None:
    with pytest.raises(InvalidArgumentError, match="unsupported pattern letter 'E'"):
        partition_value(datetime.datetime(2024, 3, 2, tzinfo=UTC), ONE_DAY, "EEE")


# --------------------------------------------------------------------------- parse_schedule_time


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-03-02 00:00:00", (2024, 3, 2, 0, 0, 0, 0)),
        ("2024-03-02 00:00", (2024, 3, 2, 0, 0, 0, 0)),
        ("2024-03-02T00:00:00", (2024, 3, 2, 0, 0, 0, 0)),
        ("2024-03-02t13:14:15", (2024, 3, 2, 13, 14, 15, 0)),
        ("2024-03-02", (2024, 3, 2, 0, 0, 0, 0)),
        ("  2024-03-02 01:02:03  ", (2024, 3, 2, 1, 2, 3, 0)),
        ("2024-03-02 01:02:03.5", (2024, 3, 2, 1, 2, 3, 500000)),
        ("2024-03-02 01:02:03,25", (2024, 3, 2, 1, 2, 3, 250000)),
        ("2024-03-02T01:02:03.123456", (2024, 3, 2, 1, 2, 3, 123456)),
        ("2024-03-02T01:02:03.123456789", (2024, 3, 2, 1, 2, 3, 123456)),
    ],
)
def test_parse_schedule_time_local(text: str, expected: tuple[int, ...]) -> None:
    result = parse_schedule_time(text, BERLIN)
    assert result == datetime.datetime(*expected, tzinfo=BERLIN)
    assert result.tzinfo is BERLIN


@pytest.mark.parametrize(
    ("text", "utc_expected"),
    [
        ("2024-03-02T00:00:00Z", (2024, 3, 2, 0, 0)),
        ("2024-03-02 00:00:00z", (2024, 3, 2, 0, 0)),
        ("2024-03-02T00:00:00+01:00", (2024, 3, 1, 23, 0)),
        ("2024-03-02T00:00:00-05:30", (2024, 3, 2, 5, 30)),
        ("2024-03-02T00:00:00+0100", (2024, 3, 1, 23, 0)),
        ("2024-03-02T00:00:00+01", (2024, 3, 1, 23, 0)),
        ("2024-03-02 00:00 +01:00", (2024, 3, 1, 23, 0)),
        ("2024-03-02T00:00:00.250Z", (2024, 3, 2, 0, 0)),
    ],
)
def test_parse_schedule_time_with_offset_is_converted(text: str, utc_expected: tuple[int, ...]) -> None:
    result = parse_schedule_time(text, BERLIN)
    assert result.astimezone(UTC).replace(microsecond=0) == datetime.datetime(*utc_expected, tzinfo=UTC)
    assert result.tzinfo is BERLIN


def test_parse_schedule_time_utc_midnight_is_a_berlin_partition_of_that_day() -> None:
    result = parse_schedule_time("2024-03-01T23:00:00Z", BERLIN)
    assert result.isoformat() == "2024-03-02T00:00:00+01:00"
    assert partition_value(result, ONE_DAY, "yyyy-MM-dd") == "2024-03-01"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "2024-3-2",
        "2024-03-02 0:00",
        "2024/03/02",
        "20240302",
        "2024-03-02Z",
        "2024-03-02 00",
        "2024-03-02 00:00:00 UTC",
        "2024-03-02 00:00:00.",
        "2024-03-02T",
        "1709337600",
    ],
)
def test_parse_schedule_time_rejects_bad_text(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        parse_schedule_time(text, UTC)
    assert str(err.value).startswith(f"invalid schedule time {text!r}: use e.g. '2024-03-02 00:00:00'")


@pytest.mark.parametrize(
    "text", ["2024-02-30", "2024-13-01", "2024-03-02 24:00:00", "2024-03-02 00:60", "2024-03-02T00:00:00+25:00"]
)
def test_parse_schedule_time_rejects_impossible_values(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        parse_schedule_time(text, UTC)
    assert str(err.value).startswith(f"invalid schedule time {text!r} (")
    assert "2024-03-02 00:00:00" in str(err.value)
