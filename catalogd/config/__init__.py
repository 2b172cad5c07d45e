"""The catalogd configuration: a YAML file turned into validated, typed settings.

The file has one section per concern (``server``, ``catalogs``, ``dynamic-tables``,
``spark``, ``staging``, ``cache``, ``auth``); keys are spelled with dashes as in YAML, while the Python
attributes use underscores (both spellings are accepted on input).

Before the YAML is parsed, ``${VAR}`` and ``${VAR:-default}`` are replaced by the
value of the environment variable ``VAR`` (``$${`` gives a literal ``${``; lines that
are entirely comments are left alone). Every problem found in a file is collected
and reported at once in a :class:`~catalogd.errors.ConfigError` whose ``problems``
read like ``conf/catalogd.yaml: catalogs[1].read-only: expected a boolean, got 'maybe'``.

The modules, in the order they depend on each other:

- ``problems``: how a problem is worded, and pydantic's errors turned into problem lines
- ``durations``: ``20s``, ``5 min``, ``1 day`` parsed and formatted; the duration field types
- ``fields``: the other field types and value checks (ports, counts, names, setting maps)
- ``redaction``: secret settings hidden from reprs and logs
- ``models``: one pydantic class per section, with the rules for its keys
- ``env``: ``${VAR}`` expansion
- ``loading``: read a file, parse its YAML, validate it; where the default file is
"""

from __future__ import annotations

from catalogd.config.durations import Duration, NonNegativeDuration, format_duration, parse_duration
from catalogd.config.loading import default_config_path, load_config, parse_config
from catalogd.config.models import (
    AuthConfig,
    CacheConfig,
    CatalogConfig,
    Config,
    DynamicTablesConfig,
    ServerConfig,
    SparkConfig,
    StagingConfig,
    TlsConfig,
    hms_prefix_of,
)
from catalogd.config.redaction import redact

__all__ = [
    "AuthConfig",
    "CacheConfig",
    "CatalogConfig",
    "Config",
    "Duration",
    "DynamicTablesConfig",
    "NonNegativeDuration",
    "ServerConfig",
    "SparkConfig",
    "StagingConfig",
    "TlsConfig",
    "default_config_path",
    "format_duration",
    "hms_prefix_of",
    "load_config",
    "parse_config",
    "parse_duration",
    "redact",
]
