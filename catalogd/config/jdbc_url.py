"""``base-url`` of a jdbc catalog: ``jdbc:postgresql://HOST:PORT``, as Flink's JDBC catalog takes it.

The URL names the server only: the database is ``default-database`` and the credentials are
``username`` and ``password`` (so that no URL ever carries a password into a log). The
sub-protocol names the dialect; PostgreSQL is the only one catalogd speaks, and any other is
refused by name rather than half supported.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalogd.config.pg_url import split_url, url_host, url_params

__all__ = ["BASE_URL_FORM", "DIALECTS", "BaseUrl", "parse_base_url"]

BASE_URL_FORM = "jdbc:postgresql://HOST:PORT"
#: Sub-protocol -> default port, of the dialects catalogd speaks.
DIALECTS = {"postgresql": 5432}


@dataclass(frozen=True)
class BaseUrl:
    """A parsed ``base-url``: the dialect (``postgresql``), the server and its JDBC parameters."""

    dialect: str
    host: str
    port: int
    params: tuple[tuple[str, str], ...] = ()

    def jdbc_url(self, database: str) -> str:
        """The JDBC URL of ``database`` on this server (no credentials)."""
        query = "?" + "&".join(f"{k}={v}" for k, v in self.params) if self.params else ""
        return f"jdbc:{self.dialect}://{url_host(self.host)}:{self.port}/{database}{query}"


def parse_base_url(text: str) -> BaseUrl:
    """The server a ``base-url`` names.

    Raises:
        ValueError: not ``jdbc:<dialect>://HOST:PORT`` of a dialect catalogd speaks; the message
            never quotes the parameters (they might hold a secret).
    """
    expected = f"expected {BASE_URL_FORM}"
    value = text.strip()
    if not value.lower().startswith("jdbc:"):
        raise ValueError(f"not a JDBC URL: {expected}")
    rest = value[len("jdbc:"):]
    if "://" not in rest:
        raise ValueError(f"malformed JDBC URL: {expected}")
    split, port = split_url(rest, "malformed JDBC URL", expected)
    dialect = split.scheme.lower()
    if dialect not in DIALECTS:
        raise ValueError(f"unsupported JDBC dialect {dialect!r}: catalogd speaks {', '.join(sorted(DIALECTS))} "
                         f"({expected})")
    if split.username or split.password:
        raise ValueError(f"give the user and password as username and password (or password-file), "
                         f"not in the URL: {expected}")
    if not split.hostname:
        raise ValueError(f"malformed JDBC URL: the host is missing: {expected}")
    if split.path not in ("", "/"):
        raise ValueError(f"base-url names the server only; the database is default-database: {expected}")
    params = url_params(split, "malformed JDBC URL", expected,
                        f"give the user and password as username and password, not as URL parameters: {expected}")
    return BaseUrl(dialect=dialect, host=split.hostname, port=port or DIALECTS[dialect], params=params)
