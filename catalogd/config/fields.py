"""Field types and value checks shared by the configuration models: ports, counts, names and setting maps."""

from __future__ import annotations

import datetime
import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator
from pydantic_core import PydanticCustomError

from catalogd.config.problems import Loc, describe

__all__ = [
    "NonNegativeInt",
    "Port",
    "PositiveInt",
    "identifier",
    "lower",
    "none_as_empty",
    "string_map",
]


def none_as_empty(value: object) -> object:
    """A section or mapping left empty in YAML (every key commented out) means its defaults."""
    return {} if value is None else value


def _no_bool(value: object) -> object:
    # YAML's true/false are ints to pydantic; as a port or a count they are a mistake.
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


def _check_port(value: int) -> int:
    if not 0 <= value <= 65535:
        raise ValueError(f"expected a port number between 0 and 65535 (0 picks a free port), got {value}")
    return value


def _positive_int(value: int) -> int:
    if value <= 0:
        raise ValueError(f"must be at least 1, got {value}")
    return value


def _non_negative_int(value: int) -> int:
    if value < 0:
        raise ValueError(f"must be 0 or more, got {value}")
    return value


#: A TCP port; 0 picks a free one.
Port = Annotated[int, BeforeValidator(_no_bool), AfterValidator(_check_port)]
#: A count of at least 1.
PositiveInt = Annotated[int, BeforeValidator(_no_bool), AfterValidator(_positive_int)]
#: A count that may be 0.
NonNegativeInt = Annotated[int, BeforeValidator(_no_bool), AfterValidator(_non_negative_int)]


def lower(value: object) -> object:
    """A choice compared without regard to case or surrounding spaces."""
    return value.strip().lower() if isinstance(value, str) else value


def string_map(value: object, what: str) -> tuple[dict[str, str], list[tuple[Loc, str]]]:
    """Coerce a YAML mapping of settings into ``dict[str, str]``; numbers and booleans become strings."""
    if value is None:
        return {}, []
    if not isinstance(value, dict):
        return {}, [((), f"expected a mapping of {what}, got {describe(value)}")]
    result: dict[str, str] = {}
    problems: list[tuple[Loc, str]] = []
    for key, item in value.items():
        if not isinstance(key, str):
            problems.append(((str(key),), f"expected a text key, got {describe(key)}"))
            continue
        if isinstance(item, bool):
            result[key] = "true" if item else "false"
        elif isinstance(item, (str, int, float, datetime.date)):
            result[key] = str(item)
        else:  # describe shows only the kind of a list or mapping, never a (secret) value
            problems.append(((key,), f"expected a text, number or boolean value, got {describe(item)}"))
    return result, problems


_IDENTIFIER_RE = re.compile(r"[a-z_][a-z0-9_]*")
_MAX_NAME_LENGTH = 128


def identifier(value: str, what: str) -> str:
    """``value`` lower-cased when it is a valid name of a catalog or database.

    Raises:
        ValueError: it is not (the message names ``what`` and the rule it breaks).
    """
    if not value.isascii():
        # Lower-casing alone would take the Kelvin sign for 'k' (and NFKC 'ﬁ' for 'fi'): a name would
        # silently become another one. Only ASCII names are names; say what it would have become.
        normal = unicodedata.normalize("NFKC", value).strip().lower()
        if normal != value.strip().lower() or _IDENTIFIER_RE.fullmatch(value.strip().lower()):
            odd = next(c for c in value if not c.isascii())
            raise ValueError(f"invalid {what} {value!r}: U+{ord(odd):04X} {unicodedata.name(odd, '?')} is changed "
                             f"by Unicode normalisation (NFKC) (the name would read as {normal!r}): write it in ASCII")
    lowered = value.strip().lower()
    if not _IDENTIFIER_RE.fullmatch(lowered):
        raise ValueError(
            f"invalid {what} {value!r}: use letters, digits and underscores, not starting with a digit"
        )
    if len(lowered) > _MAX_NAME_LENGTH:
        raise ValueError(f"invalid {what} {value!r}: longer than {_MAX_NAME_LENGTH} characters")
    return lowered
