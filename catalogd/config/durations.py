"""Durations as people write them (``20s``, ``5 min``, ``1 day``): parsing, formatting and the pydantic types.

:func:`parse_duration` and :func:`format_duration` are plain functions any part of
catalogd may use; :data:`Duration` and :data:`NonNegativeDuration` are the field types
of the configuration models (read from YAML, written back the same way in JSON mode).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, GetCoreSchemaHandler, PlainSerializer
from pydantic_core import CoreSchema, core_schema

from catalogd.config.problems import describe

__all__ = [
    "AtMost",
    "Duration",
    "NonNegativeDuration",
    "format_duration",
    "parse_duration",
    "positive_duration",
]

_MICROSECOND = datetime.timedelta(microseconds=1)
_US_PER_MS = 1_000
_US_PER_S = 1_000_000
_US_PER_MIN = 60 * _US_PER_S
_US_PER_H = 60 * _US_PER_MIN
_US_PER_DAY = 24 * _US_PER_H

_UNITS: dict[str, int] = {}
for _names, _micros in (
    (("ms", "msec", "msecs", "millis", "millisecond", "milliseconds"), _US_PER_MS),
    (("s", "sec", "secs", "second", "seconds"), _US_PER_S),
    (("m", "min", "mins", "minute", "minutes"), _US_PER_MIN),
    (("h", "hr", "hrs", "hour", "hours"), _US_PER_H),
    (("d", "day", "days"), _US_PER_DAY),
):
    for _name in _names:
        _UNITS[_name] = _micros

_DURATION_RE = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[a-z]*)")
_DURATION_FORMS = (
    "expected a number with a unit, such as '500ms', '20s', '90 seconds', '5 min', '10 minutes', "
    "'1 h', '2 hours' or '1 day' (a bare number means seconds)"
)


def _duration_from_micros(micros: int | Decimal | float, text: object) -> datetime.timedelta:
    try:
        return datetime.timedelta(microseconds=round(micros))
    except OverflowError:
        raise ValueError(f"duration {text!r} is too large") from None


def parse_duration(text: str | int | float) -> datetime.timedelta:
    """Parse a duration such as ``20s``, ``5 min``, ``1 h``, ``2 hours``, ``1 day`` or ``500ms``.

    A bare number (or a string holding only a number) is a number of seconds.
    Units are case-insensitive and may be separated from the number by spaces.

    Raises:
        ValueError: the text is not a duration, or the duration is negative.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError(f"invalid duration {text!r}: {_DURATION_FORMS}")
    if isinstance(text, (int, float)):
        if isinstance(text, float) and not math.isfinite(text):
            raise ValueError(f"invalid duration {text!r}: {_DURATION_FORMS}")
        if text < 0:
            raise ValueError(f"invalid duration {text!r}: a duration cannot be negative")
        return _duration_from_micros(Decimal(str(text)) * _US_PER_S, text)
    stripped = text.strip()
    if stripped.startswith("-"):
        raise ValueError(f"invalid duration {text!r}: a duration cannot be negative")
    match = _DURATION_RE.fullmatch(stripped.lower())
    if match is None:
        raise ValueError(f"invalid duration {text!r}: {_DURATION_FORMS}")
    unit = match["unit"] or "s"
    if unit not in _UNITS:
        raise ValueError(f"invalid duration {text!r}: unknown unit {unit!r}; {_DURATION_FORMS}")
    try:
        number = Decimal(match["number"])
    except InvalidOperation:  # pragma: no cover - the regex only lets decimal numbers through
        raise ValueError(f"invalid duration {text!r}: {_DURATION_FORMS}") from None
    return _duration_from_micros(number * _UNITS[unit], text)


def format_duration(td: datetime.timedelta) -> str:
    """Render a duration in the largest unit that holds it exactly: ``1 day``, ``1 h``, ``30 min``, ``20s``.

    The result is accepted by :func:`parse_duration` (which gives back the same duration).
    """
    if td < datetime.timedelta(0):
        return "-" + format_duration(-td)
    micros = td // _MICROSECOND
    if micros == 0:
        return "0s"
    if micros % _US_PER_DAY == 0:
        days = micros // _US_PER_DAY
        return "1 day" if days == 1 else f"{days} days"
    if micros % _US_PER_H == 0:
        return f"{micros // _US_PER_H} h"
    if micros % _US_PER_MIN == 0:
        return f"{micros // _US_PER_MIN} min"
    if micros % _US_PER_S == 0:
        return f"{micros // _US_PER_S}s"
    if micros % _US_PER_MS == 0:
        return f"{micros // _US_PER_MS}ms"
    fraction = f"{micros % _US_PER_S:06d}".rstrip("0")
    return f"{micros // _US_PER_S}.{fraction}s"


def _to_timedelta(value: object) -> datetime.timedelta:
    if isinstance(value, datetime.timedelta):
        return value
    if value is None:
        raise ValueError(f"expected a duration, got an empty value; {_DURATION_FORMS}")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"expected a duration, got {describe(value)}; {_DURATION_FORMS}")
    return parse_duration(value)


def positive_duration(value: datetime.timedelta) -> datetime.timedelta:
    """``value`` when it is longer than zero.

    Raises:
        ValueError: it is zero or negative (the message is a problem as the config file reports it).
    """
    if value <= datetime.timedelta(0):
        raise ValueError(f"must be longer than zero, got {format_duration(value)}")
    return value


def _non_negative_duration(value: datetime.timedelta) -> datetime.timedelta:
    if value < datetime.timedelta(0):
        raise ValueError(f"must not be negative, got {format_duration(value)}")
    return value


#: A duration in the YAML file: ``30 min``, ``20s``, ...; written back the same way in JSON mode.
Duration = Annotated[
    datetime.timedelta,
    BeforeValidator(_to_timedelta),
    AfterValidator(positive_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]

#: A duration that may be zero (``0s`` means "at once").
NonNegativeDuration = Annotated[
    datetime.timedelta,
    BeforeValidator(_to_timedelta),
    AfterValidator(_non_negative_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]


@dataclasses.dataclass(frozen=True)
class AtMost:
    """The longest a duration key may be: ``Annotated[Duration, AtMost(timedelta(days=1))]``.

    Without one, ``3650 days`` (or a timedelta near its own maximum, which overflows the first
    deadline computed from it) would be accepted and fail, or do nonsense, much later. ``le`` is
    what the generated reference shows as the key's bound.
    """

    limit: datetime.timedelta

    @property
    def le(self) -> str:
        return format_duration(self.limit)

    def check(self, value: datetime.timedelta) -> datetime.timedelta:
        """``value`` when it is at most the limit; ValueError (a problem as the file reports it) otherwise."""
        if value > self.limit:
            raise ValueError(f"must be at most {format_duration(self.limit)}, got {format_duration(value)}")
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))
