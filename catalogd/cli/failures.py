"""The CLI's own errors: a refresh job that failed, a configuration file with problems."""

from __future__ import annotations

from catalogd.errors import CatalogError, ConfigError


class RefreshFailed(CatalogError):
    """``dt refresh --wait``: the job ended FAILED."""

    kind = "refresh-failed"


class ConfigRejected(ConfigError):
    """A configuration file with problems: they are printed one per line, not as one ``error:`` line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems[0] if problems else "configuration rejected", problems=list(problems))
