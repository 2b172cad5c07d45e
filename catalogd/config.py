"""The catalogd configuration: a YAML file turned into validated, typed settings.

The file has one section per concern (``server``, ``catalogs``, ``dynamic-tables``,
``spark``, ``staging``); keys are spelled with dashes as in YAML, while the Python
attributes use underscores (both spellings are accepted on input).

Before the YAML is parsed, ``${VAR}`` and ``${VAR:-default}`` are replaced by the
value of the environment variable ``VAR`` (``$${`` gives a literal ``${``; lines that
are entirely comments are left alone). Every problem found in a file is collected
and reported at once in a :class:`~catalogd.errors.ConfigError` whose ``problems``
read like ``conf/catalogd.yaml: catalogs[1].read-only: expected a boolean, got 'maybe'``.
"""

from __future__ import annotations

import datetime
import difflib
import logging
import math
import os
import re
from collections.abc import Iterator, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn, get_args, get_origin
from urllib.parse import urlsplit

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from catalogd.errors import ConfigError

logger = logging.getLogger(__name__)

__all__ = [
    "CatalogConfig",
    "Config",
    "DynamicTablesConfig",
    "ServerConfig",
    "SparkConfig",
    "StagingConfig",
    "default_config_path",
    "format_duration",
    "load_config",
    "parse_config",
    "parse_duration",
    "redact",
]

# --------------------------------------------------------------------------- durations

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
        raise ValueError(f"expected a duration, got {_describe(value)}; {_DURATION_FORMS}")
    return parse_duration(value)


def _positive_duration(value: datetime.timedelta) -> datetime.timedelta:
    if value <= datetime.timedelta(0):
        raise ValueError(f"must be longer than zero, got {format_duration(value)}")
    return value


#: A duration in the YAML file: ``30 min``, ``20s``, ...; written back the same way in JSON mode.
Duration = Annotated[
    datetime.timedelta,
    BeforeValidator(_to_timedelta),
    AfterValidator(_positive_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]


def _non_negative_duration(value: datetime.timedelta) -> datetime.timedelta:
    if value < datetime.timedelta(0):
        raise ValueError(f"must not be negative, got {format_duration(value)}")
    return value


#: A duration that may be zero (``0s`` means "at once").
NonNegativeDuration = Annotated[
    datetime.timedelta,
    BeforeValidator(_to_timedelta),
    AfterValidator(_non_negative_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]

# --------------------------------------------------------------------------- helpers

_SECRET_WORDS = ("password", "secret", "token", "credential")
_REDACTED = "***"


def _is_secret_key(key: object) -> bool:
    lowered = str(key).lower()
    return any(word in lowered for word in _SECRET_WORDS)


def redact(mapping: dict[str, str]) -> dict[str, str]:
    """A copy of ``mapping`` in which secret values (passwords, tokens, ...) are replaced by ``***``.

    A value is secret when its key contains ``password``, ``secret``, ``token`` or
    ``credential`` (in any case).
    """
    return {key: (_REDACTED if _is_secret_key(key) else value) for key, value in mapping.items()}


def _describe(value: object) -> str:
    """How a YAML value is shown in a problem: ``'maybe'``, ``12``, ``true``, ``a list``."""
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return repr(shown)
    return str(value)


def _suggest(key: object, candidates: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` when a candidate is close to ``key``, else ``''``."""
    wanted = str(key).lower().replace("_", "-")
    matches = difflib.get_close_matches(wanted, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {matches[0]!r}?)" if matches else ""


def _unknown_key(key: object, candidates: Sequence[str]) -> str:
    return f"unknown key '{key}'" + _suggest(key, candidates)


Loc = tuple[str | int, ...]

_PROBLEMS_ERROR = "catalogd_problems"


def _problems(problems: Sequence[tuple[Loc, str]]) -> PydanticCustomError:
    """One pydantic error carrying several problems, each at a location below the failing field."""
    return PydanticCustomError(
        _PROBLEMS_ERROR,
        "{summary}",
        {"summary": "; ".join(message for _, message in problems), "problems": tuple(problems)},
    )


def _none_as_empty(value: object) -> object:
    """A section or mapping left empty in YAML (every key commented out) means its defaults."""
    return {} if value is None else value


def _no_bool(value: object) -> object:
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


Port = Annotated[int, BeforeValidator(_no_bool), AfterValidator(_check_port)]
PositiveInt = Annotated[int, BeforeValidator(_no_bool), AfterValidator(_positive_int)]


def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _string_map(value: object, what: str) -> tuple[dict[str, str], list[tuple[Loc, str]]]:
    """Coerce a YAML mapping of settings into ``dict[str, str]``; numbers and booleans become strings."""
    if value is None:
        return {}, []
    if not isinstance(value, dict):
        return {}, [((), f"expected a mapping of {what}, got {_describe(value)}")]
    result: dict[str, str] = {}
    problems: list[tuple[Loc, str]] = []
    for key, item in value.items():
        if not isinstance(key, str):
            problems.append(((str(key),), f"expected a text key, got {_describe(key)}"))
            continue
        if isinstance(item, bool):
            result[key] = "true" if item else "false"
        elif isinstance(item, (str, int, float, datetime.date)):
            result[key] = str(item)
        else:  # _describe shows only the kind of a list or mapping, never a (secret) value
            problems.append(((key,), f"expected a text, number or boolean value, got {_describe(item)}"))
    return result, problems


_IDENTIFIER_RE = re.compile(r"[a-z_][a-z0-9_]*")
_MAX_NAME_LENGTH = 128


def _identifier(value: str, what: str) -> str:
    lowered = value.strip().lower()
    if not _IDENTIFIER_RE.fullmatch(lowered):
        raise ValueError(
            f"invalid {what} {value!r}: use letters, digits and underscores, not starting with a digit"
        )
    if len(lowered) > _MAX_NAME_LENGTH:
        raise ValueError(f"invalid {what} {value!r}: longer than {_MAX_NAME_LENGTH} characters")
    return lowered


# --------------------------------------------------------------------------- models


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, hide_input_in_errors=True)


class ServerConfig(_Model):
    """Where the daemon listens and keeps its state."""

    host: str = "127.0.0.1"
    port: Port = 9190
    http_port: Port = Field(default=9191, alias="http-port")
    data_dir: Path = Field(default=Path("~/.catalogd"), alias="data-dir", validate_default=True)
    max_frame_size: PositiveInt = Field(default=16 * 1024 * 1024, alias="max-frame-size")
    #: The largest number of Thrift connections served at the same time.
    workers: PositiveInt = 32
    log_level: Annotated[Literal["debug", "info", "warning", "error"], BeforeValidator(_lower)] = Field(
        default="info", alias="log-level"
    )
    #: How long a shutdown waits for each thing it stops (requests, refresh runs, streaming jobs,
    #: the metastore) before it forces it.
    shutdown_grace: NonNegativeDuration = Field(default=datetime.timedelta(seconds=10), alias="shutdown-grace")

    @field_validator("host")
    @classmethod
    def _check_host(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("data_dir", mode="before")
    @classmethod
    def _check_data_dir(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("data_dir")
    @classmethod
    def _absolute_data_dir(cls, value: Path) -> Path:
        try:
            value = value.expanduser()
        except RuntimeError as exc:
            raise ValueError(f"cannot expand '~' in {str(value)!r}: {exc}") from None
        return value if value.is_absolute() else Path.cwd() / value

    @model_validator(mode="after")
    def _distinct_ports(self) -> ServerConfig:
        if self.port != 0 and self.port == self.http_port:
            raise ValueError(f"port and http-port are both {self.port}: use two different ports")
        return self


_URIS_KEY = "hive.metastore.uris"
_CONNECT_TIMEOUT_KEY = "hive.metastore.connect.timeout"
_SOCKET_TIMEOUT_KEY = "hive.metastore.client.socket.timeout"
_KNOWN_CONNECTION_KEYS = (
    _URIS_KEY,
    "hive.metastore.username",
    _CONNECT_TIMEOUT_KEY,
    _SOCKET_TIMEOUT_KEY,
)
_DURATION_KEYS = {
    _CONNECT_TIMEOUT_KEY: datetime.timedelta(seconds=5),
    _SOCKET_TIMEOUT_KEY: datetime.timedelta(seconds=60),
}
_EMBEDDED = "embedded"
_URIS_FORMS = "'embedded' or a comma-separated list such as 'thrift://h1:9083,thrift://h2:9083'"


def _uri_problems(value: str) -> list[str]:
    """What is wrong with a ``hive.metastore.uris`` value (nothing when it is valid)."""
    if value.strip().lower() == _EMBEDDED:
        return []
    if not value.strip():
        return [f"empty value: expected {_URIS_FORMS}"]
    problems: list[str] = []
    for position, part in enumerate(value.split(",")):
        uri = part.strip()
        if not uri:
            problems.append(f"empty URI at position {position + 1}: expected {_URIS_FORMS}")
            continue
        if uri.lower() == _EMBEDDED:
            problems.append("'embedded' cannot be combined with thrift:// URIs")
            continue
        split = urlsplit(uri)
        try:
            port = split.port
        except ValueError:
            problems.append(f"invalid URI {uri!r}: the port must be a number between 1 and 65535")
            continue
        if split.scheme.lower() != "thrift" or not split.netloc:
            problems.append(f"invalid URI {uri!r}: expected thrift://host:port ({_URIS_FORMS})")
        elif not split.hostname:
            problems.append(f"invalid URI {uri!r}: the host is missing")
        elif port is None or port == 0:
            problems.append(
                f"invalid URI {uri!r}: the port is missing (the metastore usually listens on 9083)"
            )
        elif split.path not in ("", "/") or split.query or split.fragment:
            problems.append(f"invalid URI {uri!r}: expected thrift://host:port with nothing after the port")
    return problems


class CatalogConfig(_Model):
    """One catalog: a Hive Metastore (remote or embedded) or an in-memory catalog."""

    name: str
    type: Annotated[Literal["hive", "memory"], BeforeValidator(_lower)]
    default: bool = False
    default_database: str = Field(default="default", alias="default-database")
    connection: dict[str, str] = Field(default_factory=dict)
    warehouse: str | None = None
    read_only: bool = Field(default=False, alias="read-only")
    #: Whether ``catalogd.spark`` writes through stages (Flink's ``table.ctas.atomicity-enabled``);
    #: when false its helpers fall back to Spark's plain, non-atomic writes.
    atomic_writes: bool = Field(default=True, alias="atomic-writes")
    #: The port an embedded metastore listens on (0 picks a free port); only for ``embedded``.
    metastore_port: Port = Field(default=0, alias="metastore-port")

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return _identifier(value, "catalog name")

    @field_validator("default_database")
    @classmethod
    def _check_default_database(cls, value: str) -> str:
        return _identifier(value, "database name")

    @field_validator("connection", mode="before")
    @classmethod
    def _check_connection(cls, value: object) -> dict[str, str]:
        result, problems = _string_map(value, "'hive.*' settings")
        for key, item in result.items():
            if not key.startswith("hive."):
                problems.append(
                    (
                        (key,),
                        f"unknown connection key {key!r}: connection keys start with 'hive.'"
                        + _suggest(key, _KNOWN_CONNECTION_KEYS),
                    )
                )
            elif key == _URIS_KEY:
                problems.extend(((key,), problem) for problem in _uri_problems(item))
            elif key in _DURATION_KEYS:
                try:
                    _positive_duration(parse_duration(item))
                except ValueError as exc:
                    problems.append(((key,), str(exc)))
            elif key not in _KNOWN_CONNECTION_KEYS:
                close = difflib.get_close_matches(key, _KNOWN_CONNECTION_KEYS, n=1, cutoff=0.9)
                if close:
                    logger.warning("connection key %r is passed on as is; did you mean %r?", key, close[0])
        if problems:
            raise _problems(problems)
        return result

    @model_validator(mode="after")
    def _check_type_rules(self) -> CatalogConfig:
        problems: list[tuple[Loc, str]] = []
        if self.type == "memory":
            if self.connection:
                problems.append((("connection",), "a memory catalog takes no connection settings"))
            if self.warehouse is not None:
                problems.append((("warehouse",), "a memory catalog has no warehouse"))
        elif _URIS_KEY not in self.connection:
            close = difflib.get_close_matches(_URIS_KEY, list(self.connection), n=1, cutoff=0.8)
            hint = f" (is {close[0]!r} a misspelling?)" if close else ""
            problems.append((("connection",), f"a hive catalog needs {_URIS_KEY!r}: {_URIS_FORMS}{hint}"))
        if self.metastore_port and not self.is_embedded:
            problems.append(
                (("metastore-port",), f"only used by an embedded metastore ({_URIS_KEY}: embedded)")
            )
        if problems:
            raise _problems(problems)
        return self

    @property
    def is_embedded(self) -> bool:
        """Whether catalogd runs the metastore itself (``hive.metastore.uris: embedded``)."""
        uris = self.connection.get(_URIS_KEY, "")
        return self.type == "hive" and uris.strip().lower() == _EMBEDDED

    @property
    def uris(self) -> list[str]:
        """The ``thrift://host:port`` metastore URIs, in order; empty for embedded and memory catalogs."""
        if self.type != "hive" or self.is_embedded:
            return []
        return [part.strip() for part in self.connection.get(_URIS_KEY, "").split(",") if part.strip()]

    @property
    def connect_timeout(self) -> datetime.timedelta:
        """``hive.metastore.connect.timeout`` (default 5s)."""
        return self._duration_setting(_CONNECT_TIMEOUT_KEY)

    @property
    def socket_timeout(self) -> datetime.timedelta:
        """``hive.metastore.client.socket.timeout`` (default 60s)."""
        return self._duration_setting(_SOCKET_TIMEOUT_KEY)

    def _duration_setting(self, key: str) -> datetime.timedelta:
        text = self.connection.get(key)
        return _DURATION_KEYS[key] if text is None else parse_duration(text)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (redact(value) if name == "connection" else value)


class DynamicTablesConfig(_Model):
    """Dynamic (derived) tables."""

    #: A freshness below this gets the CONTINUOUS refresh mode, else FULL (unless a
    #: table asks for a mode). A changed threshold re-derives the modes on restart.
    freshness_threshold: Duration = Field(default=datetime.timedelta(minutes=30), alias="freshness-threshold")
    #: Run the schedules and jobs of dynamic tables on this daemon. Turn it off on all
    #: but one daemon sharing a metastore (each would run every refresh).
    enabled: bool = True
    #: The zone of cron fire times and of schedule times given without an offset.
    time_zone: str = Field(default="UTC", alias="time-zone")
    #: Batch refresh jobs running at once; more wait (PENDING).
    max_concurrent_refreshes: PositiveInt = Field(default=2, alias="max-concurrent-refreshes")
    #: Runs kept in each table's history.
    history_size: PositiveInt = Field(default=50, alias="history-size")
    #: A batch refresh running longer is stopped and recorded FAILED.
    refresh_timeout: Duration = Field(default=datetime.timedelta(hours=2), alias="refresh-timeout")

    @field_validator("time_zone")
    @classmethod
    def _check_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r} (use an IANA name like UTC or Europe/Berlin)") from None
        return value


class SparkConfig(_Model):
    """The Spark session catalogd uses to run jobs."""

    master: str = "local[2]"
    conf: dict[str, str] = Field(default_factory=dict)

    @field_validator("conf", mode="before")
    @classmethod
    def _check_conf(cls, value: object) -> dict[str, str]:
        result, problems = _string_map(value, "Spark settings")
        if problems:
            raise _problems(problems)
        return result

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (redact(value) if name == "conf" else value)


class StagingConfig(_Model):
    """Stages (staging tables) handed out to writers: atomic writes."""

    #: How long a stage stays open without a heartbeat; a writer may ask for another length.
    lease: Duration = datetime.timedelta(seconds=60)
    #: How often the janitor aborts stages whose lease lapsed and finishes interrupted commits.
    janitor_interval: Duration = Field(default=datetime.timedelta(seconds=10), alias="janitor-interval")
    #: How long the files a REPLACE or partition overwrite replaced are kept, so that
    #: queries planned before the commit can finish reading them (0s: delete at once).
    replaced_data_retention: NonNegativeDuration = Field(
        default=datetime.timedelta(seconds=30), alias="replaced-data-retention"
    )


def _catalog_set_problems(names: Sequence[str | None], defaults: Sequence[bool | None]) -> list[str]:
    """Problems with the catalogs as a whole; a ``None`` name or default is one that is invalid."""
    problems: list[str] = []
    first_seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name is None:
            continue
        if name in first_seen:
            problems.append(
                f"two catalogs named {name!r} (catalogs[{first_seen[name]}] and catalogs[{index}])"
            )
        else:
            first_seen[name] = index
    marked = [f"catalogs[{index}]" for index, flag in enumerate(defaults) if flag is True]
    if len(marked) >= 2:
        listed = ", ".join(marked[:-1]) + " and " + marked[-1]
        both = "both" if len(marked) == 2 else "all"
        problems.append(f"{listed} are {both} marked 'default: true': mark only one")
    elif not marked and len(defaults) > 1 and None not in defaults:
        problems.append("no default catalog: mark one with 'default: true'")
    return problems


class Config(_Model):
    """The whole configuration file."""

    server: ServerConfig = Field(default_factory=ServerConfig)
    catalogs: list[CatalogConfig]
    dynamic_tables: DynamicTablesConfig = Field(default_factory=DynamicTablesConfig, alias="dynamic-tables")
    spark: SparkConfig = Field(default_factory=SparkConfig)
    staging: StagingConfig = Field(default_factory=StagingConfig)
    #: The file the configuration came from (set by the loader, never read from the YAML).
    source: str = Field(default="<string>", exclude=True)

    @field_validator("server", "dynamic_tables", "spark", "staging", mode="before")
    @classmethod
    def _empty_sections(cls, value: object) -> object:
        return _none_as_empty(value)

    @field_validator("catalogs", mode="before")
    @classmethod
    def _catalogs_none(cls, value: object) -> object:
        return [] if value is None else value

    @field_validator("catalogs")
    @classmethod
    def _check_catalogs(cls, value: list[CatalogConfig]) -> list[CatalogConfig]:
        if not value:
            raise ValueError("at least one catalog is required")
        problems = _catalog_set_problems([c.name for c in value], [c.default for c in value])
        if problems:
            raise _problems([((), problem) for problem in problems])
        if len(value) == 1 and not value[0].default:
            value = [value[0].model_copy(update={"default": True})]
        return value

    @property
    def default_catalog(self) -> CatalogConfig:
        """The catalog used when a name leaves its catalog out."""
        return next((c for c in self.catalogs if c.default), self.catalogs[0])

    def catalog(self, name: str) -> CatalogConfig | None:
        """The catalog called ``name`` (case-insensitive), or None."""
        wanted = name.strip().lower()
        return next((c for c in self.catalogs if c.name == wanted), None)


# --------------------------------------------------------------------------- problems


def _format_loc(loc: Loc) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


def _problem(source: str, loc: Loc, message: str) -> str:
    path = _format_loc(loc)
    return f"{source}: {path}: {message}" if path else f"{source}: {message}"


def _model_at(loc: Loc) -> type[BaseModel] | None:
    """The model class that validates the mapping at ``loc`` (for unknown-key suggestions)."""
    current: Any = Config
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next(
                (f for n, f in current.model_fields.items() if part in (n, f.alias)),
                None,
            )
            if field is None:
                return None
            current = field.annotation
        elif get_origin(current) is list and isinstance(part, int):
            current = get_args(current)[0]
        else:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _known_keys(model: type[BaseModel] | None) -> list[str]:
    if model is None:
        return []
    return [f.alias or n for n, f in model.model_fields.items() if not (model is Config and n == "source")]


_EXPECTED = {
    "bool_type": "expected a boolean (true or false)",
    "bool_parsing": "expected a boolean",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "int_parsing_size": "expected a smaller integer",
    "string_type": "expected a text value",
    "list_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "path_type": "expected a path",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
}


def _convert_errors(exc: ValidationError, source: str) -> list[str]:
    """Turn pydantic's errors into ``<source>: <key path>: <problem>`` lines."""
    problems: list[str] = []
    for error in exc.errors():
        kind = error["type"]
        loc: Loc = tuple(error["loc"])
        ctx = error.get("ctx") or {}
        value = error.get("input")
        shown = _describe(value)
        if kind == _PROBLEMS_ERROR:
            problems.extend(_problem(source, loc + tuple(sub), message) for sub, message in ctx["problems"])
            continue
        if kind == "extra_forbidden":
            key = loc[-1]
            problems.append(_problem(source, loc[:-1], _unknown_key(key, _known_keys(_model_at(loc[:-1])))))
            continue
        if kind == "missing":
            message = "required key is missing"
        elif kind in ("value_error", "assertion_error"):
            message = str(ctx.get("error", error["msg"]))
            message = message.removeprefix("Value error, ")
        elif kind == "literal_error":
            message = f"expected {ctx.get('expected')}, got {shown}"
        elif kind == "list_type" and loc == ("catalogs",):
            message = f"expected a list of catalogs (each item starting with '- name:'), got {shown}"
        elif kind in _EXPECTED:
            message = f"{_EXPECTED[kind]}, got {shown}"
        else:
            text = str(error["msg"])
            message = f"{text[:1].lower()}{text[1:]}, got {shown}"
        problems.append(_problem(source, loc, message))
    return problems


def _raw_catalog_problems(catalogs: object) -> list[str]:
    """The catalog-set rules applied to raw YAML, for when validation stopped before they ran."""
    if not isinstance(catalogs, list) or not catalogs:
        return []
    names: list[str | None] = []
    defaults: list[bool | None] = []
    for item in catalogs:
        item = item if isinstance(item, dict) else {}
        name = item.get("name")
        try:
            names.append(_identifier(name, "catalog name") if isinstance(name, str) else None)
        except ValueError:
            names.append(None)
        flag = item.get("default", False)
        defaults.append(flag if isinstance(flag, bool) else None)
    return _catalog_set_problems(names, defaults)


def _raise(problems: list[str]) -> NoReturn:
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise ConfigError(problems[0] + more, problems=list(problems))


# --------------------------------------------------------------------------- env and YAML

_VAR_RE = re.compile(r"\$\$\{|\$\{(?P<body>[^}\n]*)\}|\$\{")
_VAR_BODY_RE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


def _expand_env(text: str, source: str) -> tuple[str, list[str]]:
    """Replace ``${VAR}`` and ``${VAR:-default}``; ``$${`` is a literal ``${``."""
    problems: list[str] = []
    lines: list[str] = []
    for lineno, line in enumerate(text.splitlines(keepends=True), start=1):
        if line.lstrip().startswith("#"):
            lines.append(line)
            continue

        def replace(match: re.Match[str], lineno: int = lineno) -> str:
            if match[0] == "$${":
                return "${"
            body = match["body"]
            if body is None:
                problems.append(
                    f"{source}: line {lineno}: unterminated '${{' (write '$${{' for a literal '${{')"
                )
                return ""
            parsed = _VAR_BODY_RE.fullmatch(body)
            if parsed is None:
                problems.append(
                    f"{source}: line {lineno}: malformed variable reference '${{{body}}}': "
                    "expected ${NAME} or ${NAME:-default}"
                )
                return ""
            name, default = parsed["name"], parsed["default"]
            value = os.environ.get(name)
            if default is not None and not value:
                return default
            if value is None:
                problems.append(
                    f"{source}: line {lineno}: environment variable {name!r} is not set "
                    f"(set it, or give a default with ${{{name}:-default}})"
                )
                return ""
            return value

        lines.append(_VAR_RE.sub(replace, line))
    return "".join(lines), problems


class _Loader(yaml.SafeLoader):
    """A safe YAML loader that notes keys given twice in one mapping."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, int, str]] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            try:
                key = self.construct_object(key_node, deep=True)
                hash(key)
            except (yaml.YAMLError, TypeError):
                continue
            line = key_node.start_mark.line + 1
            if key in seen:
                self.duplicates.append((line, seen[key], str(key)))
            else:
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _load_yaml(text: str, source: str) -> tuple[object, list[str]]:
    """The parsed document and the problems found (a syntax error leaves the document None)."""
    loader = _Loader(text)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = ": ".join(part for part in (exc.context, exc.problem) if part)
        return None, [f"{source}: {where}invalid YAML: {what}"]
    except yaml.YAMLError as exc:
        return None, [f"{source}: invalid YAML: {exc}"]
    finally:
        loader.dispose()
    problems = [
        f"{source}: line {line}: duplicate key '{key}' (already given on line {first})"
        for line, first, key in loader.duplicates
    ]
    if data is None:
        problems.append(f"{source}: the configuration is empty: expected at least a 'catalogs' section")
    elif not isinstance(data, dict):
        problems.append(f"{source}: expected a mapping of sections at the top level, got {_describe(data)}")
    return data, problems


# --------------------------------------------------------------------------- loading


def parse_config(text: str, source: str = "<string>") -> Config:
    """Validate the text of a configuration file.

    Raises:
        ConfigError: with every problem found, each as ``<source>: <key path>: <problem>``.
    """
    expanded, problems = _expand_env(text, source)
    if problems:
        _raise(problems)
    data, problems = _load_yaml(expanded, source)
    if not isinstance(data, dict):
        _raise(problems)
    fields = {key: value for key, value in data.items() if key != "source"}
    late: list[str] = []
    if "source" in data:  # a field of Config, but one only the loader sets
        late.append(_problem(source, (), _unknown_key("source", _known_keys(Config))))
    try:
        config = Config.model_validate({**fields, "source": source})
    except ValidationError as exc:
        problems.extend(_convert_errors(exc, source))
        for message in _raw_catalog_problems(fields.get("catalogs")):
            problem = _problem(source, ("catalogs",), message)
            if problem not in problems:
                problems.append(problem)
        _raise(problems + late)
    if problems or late:
        _raise(problems + late)
    logger.debug(
        "configuration from %s: %d catalog(s), default %r",
        source,
        len(config.catalogs),
        config.default_catalog.name,
    )
    return config


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a configuration file.

    Raises:
        ConfigError: the file cannot be read, or its content is not a valid configuration.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{source}: no such configuration file", problems=None) from None
    except IsADirectoryError:
        raise ConfigError(f"{source}: is a directory, not a configuration file", problems=None) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not a UTF-8 text file ({exc.reason})", problems=None) from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read: {exc.strerror or exc}", problems=None) from None
    logger.debug("loading configuration from %s", source)
    return parse_config(text, source=source)


def default_config_path() -> Path:
    """The configuration file to use when none is given.

    ``$CATALOGD_CONFIG`` when set, else ``conf/catalogd.yaml`` below the current
    directory when it exists, else the default packaged with catalogd.
    """
    from_env = os.environ.get("CATALOGD_CONFIG")
    if from_env:
        return Path(from_env).expanduser()
    local = Path.cwd() / "conf" / "catalogd.yaml"
    if local.is_file():
        return local
    return Path(__file__).parent / "default.yaml"
