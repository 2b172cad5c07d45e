"""Freshness of a dynamic table: parsing, refresh-mode derivation and the refresh schedule.

A freshness is an interval such as ``INTERVAL '1' DAY`` (FLIP-435). It decides the
refresh mode (below the configured threshold a table is refreshed continuously,
otherwise by scheduled FULL refreshes) and, in FULL mode, the schedule: a
Quartz-style cron expression built as Flink builds it, whose fire times are
local midnight plus whole multiples of the freshness.
"""

from __future__ import annotations

import datetime
import enum
import re
from dataclasses import dataclass

from catalogd.errors import InvalidArgumentError
from catalogd.model import RefreshMode

__all__ = [
    "Freshness",
    "TimeUnit",
    "cron_expression",
    "default_freshness",
    "derive_mode",
    "freshness_of",
    "next_fire_time",
    "parse_freshness",
    "previous_fire_time",
    "schedulable_amounts",
]


class TimeUnit(enum.StrEnum):
    """The unit a freshness is written in."""

    SECOND = "SECOND"
    MINUTE = "MINUTE"
    HOUR = "HOUR"
    DAY = "DAY"

    @property
    def seconds(self) -> int:
        """How many seconds one unit lasts."""
        return _UNIT_SECONDS[self]

    @classmethod
    def parse(cls, text: str) -> TimeUnit:
        """Parse a unit as SQL writes it: SECOND, MINUTES, hour, DAYS...

        Args:
            text: The unit, singular or plural, in any case.

        Returns:
            The unit.

        Raises:
            InvalidArgumentError: The text is not a unit.
        """
        word = text.strip().upper() if isinstance(text, str) else ""
        for candidate in (word, word.removesuffix("S")):
            if candidate in cls.__members__:
                return cls(candidate)
        raise InvalidArgumentError(f"unknown time unit {text!r} (use SECOND, MINUTE, HOUR or DAY)")


_UNIT_SECONDS: dict[TimeUnit, int] = {
    TimeUnit.SECOND: 1,
    TimeUnit.MINUTE: 60,
    TimeUnit.HOUR: 3600,
    TimeUnit.DAY: 86400,
}

# Every spelling accepted for a unit, in lower case.
_UNIT_ALIASES: dict[str, TimeUnit] = {}
for _unit, _names in (
    (TimeUnit.SECOND, ("s", "sec", "secs", "second", "seconds")),
    (TimeUnit.MINUTE, ("min", "mins", "minute", "minutes")),
    (TimeUnit.HOUR, ("h", "hr", "hrs", "hour", "hours")),
    (TimeUnit.DAY, ("d", "day", "days")),
):
    for _name in _names:
        _UNIT_ALIASES[_name] = _unit

# The longest freshness a datetime.timedelta can hold; anything longer is a typo.
_MAX_SECONDS = datetime.timedelta.max.days * 86400

_FRESHNESS_RE = re.compile(
    r"""
    (?:INTERVAL\s+)?
    (?P<quote>'?)\s*(?P<amount>[+-]?\d+)\s*(?P=quote)
    \s*(?P<unit>[A-Za-z]+)
    """,
    re.VERBOSE | re.IGNORECASE,
)

_EXAMPLE = "use e.g. '1 day', '10 minutes', INTERVAL '1' HOUR"


@dataclass(frozen=True)
class Freshness:
    """How stale a dynamic table may get, kept in the unit it was written in.

    ``60 SECOND`` stays ``60 SECOND`` (not ``1 MINUTE``) so that what users wrote
    is what they read back.
    """

    amount: int
    unit: TimeUnit

    def __post_init__(self) -> None:
        # bool is an int subclass, and True SECOND is certainly a mistake.
        if isinstance(self.amount, bool) or not isinstance(self.amount, int):
            raise InvalidArgumentError(f"freshness amount must be an integer, got {self.amount!r}")
        if self.amount <= 0:
            raise InvalidArgumentError(f"freshness must be positive, got {self.amount} {self.unit}")
        if not isinstance(self.unit, TimeUnit):
            try:
                object.__setattr__(self, "unit", TimeUnit(str(self.unit).upper()))
            except ValueError:
                units = ", ".join(TimeUnit)
                raise InvalidArgumentError(f"unknown freshness unit {self.unit!r} (use {units})") from None
        if self.amount * self.unit.seconds > _MAX_SECONDS:
            raise InvalidArgumentError(f"freshness {self.amount} {self.unit} is too long")

    @property
    def seconds(self) -> int:
        """The freshness in seconds."""
        return self.amount * self.unit.seconds

    @property
    def timedelta(self) -> datetime.timedelta:
        """The freshness as a ``datetime.timedelta``."""
        return datetime.timedelta(seconds=self.seconds)

    @property
    def sql(self) -> str:
        """The freshness as a SQL interval literal, e.g. ``INTERVAL '1' DAY``."""
        return f"INTERVAL '{self.amount}' {self.unit}"

    def __str__(self) -> str:
        return f"{self.amount} {self.unit}"


def parse_freshness(text: str) -> Freshness:
    """Parse a freshness written by a user.

    Accepts ``1 day``, ``2 days``, ``10s``, ``10 sec``, ``30 minutes``, ``1 h``,
    ``INTERVAL '1' DAY``, ``INTERVAL 10 SECONDS`` and the like, case-insensitively.

    Args:
        text: The freshness as written.

    Returns:
        The freshness, in the unit it was written in.

    Raises:
        InvalidArgumentError: The text is not a freshness, or its amount is not a
            positive integer.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"invalid freshness {text!r}: {_EXAMPLE}")
    match = _FRESHNESS_RE.fullmatch(text.strip())
    unit = _UNIT_ALIASES.get(match.group("unit").lower()) if match else None
    if match is None or unit is None:
        raise InvalidArgumentError(f"invalid freshness {text!r}: {_EXAMPLE}")
    amount = int(match.group("amount"))
    if amount <= 0:
        raise InvalidArgumentError(f"invalid freshness {text!r}: the amount must be a positive integer; {_EXAMPLE}")
    return Freshness(amount, unit)


def freshness_of(duration: datetime.timedelta) -> Freshness:
    """A duration as a freshness in the largest unit that holds it whole (``3 min``: 3 MINUTE).

    Raises:
        InvalidArgumentError: not a positive whole number of seconds.
    """
    seconds = duration.total_seconds()
    if seconds <= 0 or seconds != int(seconds):
        raise InvalidArgumentError(f"a freshness is a positive whole number of seconds, got {duration}")
    for unit in (TimeUnit.DAY, TimeUnit.HOUR, TimeUnit.MINUTE, TimeUnit.SECOND):
        if int(seconds) % unit.seconds == 0:
            return Freshness(int(seconds) // unit.seconds, unit)
    raise AssertionError("every whole number of seconds is a whole number of SECOND")  # pragma: no cover


def default_freshness(declared: RefreshMode | None, continuous: datetime.timedelta,
                      full: datetime.timedelta) -> Freshness:
    """The freshness of a table created without FRESHNESS (FLIP-551).

    ``REFRESH_MODE = FULL`` gets ``full``; any other table ``continuous`` (a declared
    CONTINUOUS table, and one without a mode, whose mode is then derived from it).
    """
    return freshness_of(full if declared is RefreshMode.FULL else continuous)


def derive_mode(
    freshness: Freshness,
    threshold: datetime.timedelta,
    explicit: RefreshMode | None = None,
) -> RefreshMode:
    """Choose how a dynamic table is refreshed (FLIP-435).

    An explicit mode wins. Otherwise a freshness below the threshold
    (``dynamic.table.refresh-mode.freshness-threshold``) means CONTINUOUS and any
    other freshness FULL.

    Args:
        freshness: The table's freshness.
        threshold: Freshness values below it are refreshed continuously.
        explicit: The mode the user asked for, if any.

    Returns:
        The refresh mode.

    Raises:
        InvalidArgumentError: The mode is FULL but the freshness cannot be
            turned into a cron schedule.
    """
    if explicit is not None:
        mode = explicit if isinstance(explicit, RefreshMode) else RefreshMode.parse(explicit)
    elif freshness.timedelta < threshold:
        mode = RefreshMode.CONTINUOUS
    else:
        mode = RefreshMode.FULL
    if mode is RefreshMode.FULL:
        # Fail when the table is defined, not when the scheduler first needs the cron.
        cron_expression(freshness)
    return mode


def schedulable_amounts(unit: TimeUnit) -> list[int]:
    """The freshness amounts that a FULL refresh can be scheduled with, for one unit.

    Args:
        unit: The freshness unit.

    Returns:
        The amounts in increasing order: divisors of 60 for seconds and minutes,
        of 24 for hours, and only 1 for days.
    """
    bound = _CRON_BOUND[unit]
    return [n for n in range(1, bound + 1) if bound % n == 0]


# A cron field repeats within the next larger unit, so the amount must divide it.
_CRON_BOUND: dict[TimeUnit, int] = {
    TimeUnit.SECOND: 60,
    TimeUnit.MINUTE: 60,
    TimeUnit.HOUR: 24,
    TimeUnit.DAY: 1,
}


def _check_schedulable(freshness: Freshness) -> None:
    amounts = schedulable_amounts(freshness.unit)
    if freshness.amount in amounts:
        return
    if freshness.unit is TimeUnit.DAY:
        choices = f"1 {TimeUnit.DAY} (a daily refresh)"
    else:
        listed = ", ".join(str(n) for n in amounts[:-1]) + f" or {amounts[-1]}"
        choices = f"{listed} {freshness.unit} (divisors of {_CRON_BOUND[freshness.unit]})"
    raise InvalidArgumentError(
        f"freshness {freshness} cannot be scheduled for a FULL refresh: use {choices}, or CONTINUOUS refresh mode"
    )


def cron_expression(freshness: Freshness) -> str:
    """The Quartz cron expression of a FULL refresh, as Flink derives it.

    Args:
        freshness: The table's freshness.

    Returns:
        For example ``0/10 * * * * ? *`` for 10 SECOND, ``0 0/15 * * * ? *`` for
        15 MINUTE, ``0 0 0/2 * * ? *`` for 2 HOUR and ``0 0 0 * * ? *`` for 1 DAY.

    Raises:
        InvalidArgumentError: The freshness does not divide the next larger unit
            (or is a DAY freshness other than 1 DAY), so no cron can express it.
    """
    _check_schedulable(freshness)
    n = freshness.amount
    # n == bound means once per next larger unit: "0/60" would be rejected by Quartz.
    every = n != _CRON_BOUND[freshness.unit]
    if freshness.unit is TimeUnit.SECOND:
        return f"0/{n} * * * * ? *" if every else "0 * * * * ? *"
    if freshness.unit is TimeUnit.MINUTE:
        return f"0 0/{n} * * * ? *" if every else "0 0 * * * ? *"
    if freshness.unit is TimeUnit.HOUR:
        return f"0 0 0/{n} * * ? *" if every else "0 0 0 * * ? *"
    return "0 0 0 * * ? *"


# ---------------------------------------------------------------------------- fire times
#
# Fire times are the instants whose local wall-clock time is midnight plus a
# multiple of the period. Wall-clock times skipped by a DST gap fire once, when
# the gap ends (as cron and Quartz do), so a daily refresh is not lost where
# midnight itself is skipped; times repeated by a DST fold fire once per pass, so
# a 10 SECOND table keeps refreshing through the repeated hour. Within a stretch
# of constant UTC offset the wall clock moves with real time, so the search goes
# stretch by stretch, in whole microseconds since the epoch.

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_US = datetime.timedelta(microseconds=1)
_US_PER_SECOND = 1_000_000


def _check_aware(value: datetime.datetime, what: str) -> datetime.tzinfo:
    if not isinstance(value, datetime.datetime):
        raise InvalidArgumentError(f"{what} must be a datetime, got {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidArgumentError(f"{what} {value.isoformat()} has no time zone; pass a tz-aware datetime")
    return value.tzinfo


def _to_us(value: datetime.datetime) -> int:
    return (value - _EPOCH) // _US


def _from_us(us: int, tz: datetime.tzinfo) -> datetime.datetime:
    return (_EPOCH + datetime.timedelta(microseconds=us)).astimezone(tz)


def _offset_us(us: int, tz: datetime.tzinfo) -> int:
    offset = _from_us(us, tz).utcoffset()
    return 0 if offset is None else offset // _US


def _first_change(lo: int, hi: int, tz: datetime.tzinfo) -> int:
    """The first instant in (lo, hi] whose UTC offset differs from lo's; hi's differs."""
    start = _offset_us(lo, tz)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _offset_us(mid, tz) == start:
            lo = mid
        else:
            hi = mid
    return hi


# More stretches than any real zone changes offset within one period (a day).
_MAX_STRETCHES = 8


def _fire_time(freshness: Freshness, when: datetime.datetime, forward: bool, what: str) -> datetime.datetime:
    tz = _check_aware(when, what)
    _check_schedulable(freshness)
    period = freshness.seconds * _US_PER_SECOND
    try:
        us = _to_us(when)
        inclusive = not forward
        for _ in range(_MAX_STRETCHES):
            offset = _offset_us(us, tz)
            wall = us + offset
            # The naive epoch is a local midnight and every period divides a day,
            # so the grid of fire times is aligned on multiples of the period.
            if forward:
                fire = -((-wall) // period) * period if inclusive else (wall // period + 1) * period
            else:
                fire = wall // period * period if inclusive else ((wall - 1) // period) * period
            candidate = fire - offset
            if _offset_us(candidate, tz) == offset:
                return _from_us(candidate, tz)
            # The offset changes before the candidate is reached.
            if forward:
                change = _first_change(us, candidate, tz)
                if fire < change + _offset_us(change, tz):
                    return _from_us(change, tz)  # the candidate is in a gap
                us = change  # go on with the first instant of the next stretch
            else:
                change = _first_change(candidate, us, tz)
                if fire >= change + _offset_us(change - 1, tz):
                    return _from_us(change, tz)  # the candidate is in a gap
                us = change - 1  # go on with the last instant of the previous stretch
            inclusive = True
        raise InvalidArgumentError(f"no fire time for freshness {freshness} near {when.isoformat()}")
    except OverflowError:
        raise InvalidArgumentError(f"{what} {when.isoformat()} is too close to the end of the calendar") from None


def next_fire_time(freshness: Freshness, after: datetime.datetime) -> datetime.datetime:
    """The first FULL-refresh fire time strictly after a given instant.

    Fire times are local midnight plus multiples of the freshness, in the
    datetime's own time zone: a 1 DAY freshness fires at local midnight even on
    DST days.

    Args:
        freshness: The table's freshness.
        after: A tz-aware datetime.

    Returns:
        The fire time, a tz-aware datetime in the time zone of ``after``.

    Raises:
        InvalidArgumentError: ``after`` is naive, or the freshness cannot be
            scheduled (see ``cron_expression``).
    """
    return _fire_time(freshness, after, forward=True, what="after")


def previous_fire_time(freshness: Freshness, at: datetime.datetime) -> datetime.datetime:
    """The last FULL-refresh fire time at or before a given instant.

    Args:
        freshness: The table's freshness.
        at: A tz-aware datetime.

    Returns:
        The fire time (``at`` itself when ``at`` is one), a tz-aware datetime in
        the time zone of ``at``.

    Raises:
        InvalidArgumentError: ``at`` is naive, or the freshness cannot be
            scheduled (see ``cron_expression``).
    """
    return _fire_time(freshness, at, forward=False, what="at")
