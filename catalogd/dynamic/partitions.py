"""Time partitions of dynamic tables: which partition a FULL refresh rewrites.

FLIP-435 lets a partitioned dynamic table name the date format of a string
partition column with the option ``partition.fields.<col>.date-formatter``. A
FULL refresh scheduled at time T then rewrites only the partition
``format(T - freshness)``: at midnight on 2024-03-02 a 1 DAY table refreshes
``ds='2024-03-01'``, a 1 HOUR table refreshes ``ds='2024-03-02'``.
"""

from __future__ import annotations

import datetime
import re

from catalogd.dynamic.freshness import Freshness, TimeUnit
from catalogd.errors import InvalidArgumentError

__all__ = [
    "FORMATTER_KEY_RE",
    "java_to_strftime",
    "parse_formatters",
    "parse_schedule_time",
    "partition_value",
]

#: Option keys naming a partition column's date format (FLIP-435).
FORMATTER_KEY_RE = re.compile(r"partition\.fields\.(?P<column>.+)\.date-formatter")

# Pattern letter runs that have an exact strftime twin. Single letters (M, d, H...)
# print without padding in Java, which strftime cannot do portably.
_FIELDS: dict[str, str] = {
    "yyyy": "%Y",
    "uuuu": "%Y",
    "yy": "%y",
    "uu": "%y",
    "MM": "%m",
    "dd": "%d",
    "HH": "%H",
    "mm": "%M",
    "ss": "%S",
}

# java.time gives these a meaning (optional sections, reserved); they are not literals.
_RESERVED = "[]{}#"

_SUPPORTED = "supported are yyyy, uuuu, yy, uu, MM, dd, HH, mm, ss, text in single quotes and other non-letters"


def java_to_strftime(pattern: str) -> str:
    """Convert a Java date pattern to a Python strftime format.

    Handles the zero-padded fields of ``java.time.format.DateTimeFormatter`` and
    ``SimpleDateFormat``: ``yyyy``/``uuuu``, ``yy``/``uu``, ``MM``, ``dd``, ``HH``,
    ``mm`` and ``ss``; text in single quotes (``''`` is a quote); other
    non-letters as they are.

    Args:
        pattern: The Java pattern, e.g. ``yyyy-MM-dd'T'HH``.

    Returns:
        The strftime format, e.g. ``%Y-%m-%dT%H``; a literal ``%`` becomes ``%%``.

    Raises:
        InvalidArgumentError: The pattern is empty, has an unterminated quote, or
            uses a pattern letter (or letter count) that is not supported.
    """
    if not isinstance(pattern, str) or not pattern:
        raise InvalidArgumentError("empty date-formatter pattern: use e.g. 'yyyy-MM-dd'")
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "'":
            if pattern.startswith("''", i):
                out.append("'")
                i += 2
                continue
            end = i + 1
            text: list[str] = []
            while True:
                if end >= n:
                    raise InvalidArgumentError(f"unterminated quote in date-formatter pattern {pattern!r}")
                if pattern[end] == "'":
                    if pattern.startswith("''", end):
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            out.append("".join(text).replace("%", "%%"))
            i = end + 1
        elif ch.isascii() and ch.isalpha():
            end = i
            while end < n and pattern[end] == ch:
                end += 1
            run = pattern[i:end]
            field = _FIELDS.get(run)
            if field is None:
                hint = ""
                padded = ch * 2
                if padded in _FIELDS:
                    hint = f" (use {padded} or yyyy)" if ch in "yu" else f" (use {padded})"
                raise InvalidArgumentError(
                    f"unsupported pattern letter {ch!r} ({run!r}) in date-formatter {pattern!r}{hint}: {_SUPPORTED}"
                )
            out.append(field)
            i = end
        elif ch in _RESERVED:
            raise InvalidArgumentError(
                f"unsupported character {ch!r} in date-formatter {pattern!r}: quote it ('{ch}'); {_SUPPORTED}"
            )
        else:
            out.append("%%" if ch == "%" else ch)
            i += 1
    return "".join(out)


def parse_formatters(options: dict[str, str], partition_keys: list[str]) -> dict[str, str]:
    """The date formatters of a dynamic table's time partition columns.

    Args:
        options: The table's options (WITH clause); keys other than
            ``partition.fields.<col>.date-formatter`` are ignored.
        partition_keys: The table's partition columns.

    Returns:
        ``{column: java pattern}`` with lower-case column names.

    Raises:
        InvalidArgumentError: A formatter names a column that is not a partition
            column, two formatters name the same column, or a pattern is not
            supported (see ``java_to_strftime``).
    """
    keys = [k.lower() for k in partition_keys]
    formatters: dict[str, str] = {}
    for key, pattern in options.items():
        match = FORMATTER_KEY_RE.fullmatch(key)
        if match is None:
            continue
        column = match.group("column").lower()
        if column not in keys:
            known = f"partition columns: [{', '.join(keys)}]" if keys else "the table has no partition columns"
            raise InvalidArgumentError(f"{key}: {match.group('column')} is not a partition column ({known})")
        if column in formatters:
            raise InvalidArgumentError(f"{key}: column {column} has more than one date-formatter")
        try:
            java_to_strftime(pattern)
        except InvalidArgumentError as err:
            raise InvalidArgumentError(f"{key}: {err.message}") from None
        formatters[column] = pattern
    return formatters


def partition_value(schedule_time: datetime.datetime, freshness: Freshness, pattern: str) -> str:
    """The value of the time partition a FULL refresh rewrites (FLIP-435).

    It is ``format(schedule_time - freshness)``. A DAY freshness steps back in
    local calendar days and a shorter one in elapsed time, so that on DST days
    a daily refresh still names yesterday and an hourly one the hour that
    actually passed.

    Args:
        schedule_time: When the scheduler fired the refresh (naive values are
            taken as local wall-clock times).
        freshness: The table's freshness.
        pattern: The column's Java date pattern.

    Returns:
        The partition value, e.g. ``2024-03-01``.

    Raises:
        InvalidArgumentError: The pattern is not supported.
    """
    fmt = java_to_strftime(pattern)
    tz = schedule_time.tzinfo
    if freshness.unit is TimeUnit.DAY or tz is None or schedule_time.utcoffset() is None:
        start = schedule_time - freshness.timedelta
    else:
        start = (schedule_time.astimezone(datetime.UTC) - freshness.timedelta).astimezone(tz)
    return start.strftime(fmt)


_SCHEDULE_TIME_RE = re.compile(
    r"""
    (?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})
    (?:
        (?:T|\s+)(?P<hour>\d{2}):(?P<minute>\d{2})
        (?::(?P<second>\d{2})(?:[.,](?P<fraction>\d{1,9}))?)?
        \s*(?P<offset>Z|[+-]\d{2}(?::?\d{2})?)?
    )?
    """,
    re.VERBOSE | re.IGNORECASE,
)


def parse_schedule_time(text: str, tz: datetime.tzinfo) -> datetime.datetime:
    """Parse the schedule time a workflow scheduler passes with a refresh.

    Args:
        text: ``2024-03-02 00:00:00``, ``2024-03-02 00:00``,
            ``2024-03-02T00:00:00.123``, ``2024-03-02``, optionally followed by
            ``Z`` or an offset such as ``+01:00`` when a time is given.
        tz: The time zone of values without an offset, and of the result.

    Returns:
        A tz-aware datetime in ``tz`` (values with an offset are converted, so
        partitions are always named in the table's time zone).

    Raises:
        InvalidArgumentError: The text is not such a time, or names a date or
            time that does not exist.
    """
    example = "use e.g. '2024-03-02 00:00:00' (or with 'T', fractional seconds, 'Z' or '+01:00')"
    match = _SCHEDULE_TIME_RE.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise InvalidArgumentError(f"invalid schedule time {text!r}: {example}")
    parts = match.groupdict()
    fraction = (parts["fraction"] or "").ljust(6, "0")[:6]
    offset = parts["offset"]
    try:
        zone: datetime.tzinfo = tz
        if offset:
            if offset.upper() == "Z":
                zone = datetime.UTC
            else:
                digits = offset[1:].replace(":", "")
                minutes = int(digits[:2]) * 60 + int(digits[2:] or 0)
                sign = -1 if offset[0] == "-" else 1
                zone = datetime.timezone(datetime.timedelta(minutes=sign * minutes))
        value = datetime.datetime(
            int(parts["year"]),
            int(parts["month"]),
            int(parts["day"]),
            int(parts["hour"] or 0),
            int(parts["minute"] or 0),
            int(parts["second"] or 0),
            int(fraction),
            tzinfo=zone,
        )
    except ValueError as err:
        raise InvalidArgumentError(f"invalid schedule time {text!r} ({err}): {example}") from None
    return value.astimezone(tz) if offset else value
