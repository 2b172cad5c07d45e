"""Tests for catalogd.config.durations: every accepted and refused spelling of a duration, and formatting."""

from __future__ import annotations

import datetime

import pytest
from config_cases import td

from catalogd.config import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20s", td(seconds=20)),
        ("20 s", td(seconds=20)),
        ("5 min", td(minutes=5)),
        ("5m", td(minutes=5)),
        ("1 h", td(hours=1)),
        ("1h", td(hours=1)),
        ("2 hours", td(hours=2)),
        ("1 day", td(days=1)),
        ("1d", td(days=1)),
        ("3 days", td(days=3)),
        ("500ms", td(milliseconds=500)),
        ("90 seconds", td(seconds=90)),
        ("10 minutes", td(minutes=10)),
        ("1.5h", td(minutes=90)),
        ("  7 MIN ", td(minutes=7)),
        ("0s", td()),
        ("45", td(seconds=45)),
        (45, td(seconds=45)),
        (2.5, td(seconds=2.5)),
        (0, td()),
    ],
)
def test_parse_duration_accepts(text: str | int | float, expected: datetime.timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "   ", "soon", "5 parsecs", "1h30m", "s", "5 s s", "1e3s", ".5s", "5,0s"],
)
def test_parse_duration_rejects_garbage_naming_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    message = str(info.value)
    assert repr(text) in message
    assert "20s" in message and "5 min" in message and "1 day" in message


@pytest.mark.parametrize("value", ["-5s", " -1 h", "-3", -1, -0.5])
def test_parse_duration_rejects_negatives(value: str | int | float) -> None:
    with pytest.raises(ValueError, match="negative"):
        parse_duration(value)


@pytest.mark.parametrize("value", [True, None, float("nan"), float("inf"), [5]])
def test_parse_duration_rejects_non_durations(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (td(minutes=30), "30 min"),
        (td(seconds=20), "20s"),
        (td(hours=1), "1 h"),
        (td(days=1), "1 day"),
        (td(days=2), "2 days"),
        (td(minutes=90), "90 min"),
        (td(milliseconds=500), "500ms"),
        (td(microseconds=1500), "0.0015s"),
        (td(), "0s"),
    ],
)
def test_format_duration(value: datetime.timedelta, text: str) -> None:
    assert format_duration(value) == text
    assert parse_duration(text) == value
