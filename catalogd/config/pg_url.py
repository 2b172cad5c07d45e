"""The parts of a PostgreSQL server URL that ``base-url`` (``jdbc_url``) and ``metastore-db``
(``metastore_db``) read alike: the split with its port, the JDBC parameters after ``?`` (never
the credentials), and the host as a URL writes it. Each module checks the rest its own way.

No message quotes the URL: it may hold a password.
"""

from __future__ import annotations

from urllib.parse import SplitResult, parse_qsl, urlsplit

__all__ = ["CREDENTIAL_PARAMS", "split_url", "url_host", "url_params"]

#: JDBC parameters that would carry the credentials a second way (and the password into the URL).
CREDENTIAL_PARAMS = ("user", "password")


def split_url(value: str, malformed: str, expected: str) -> tuple[SplitResult, int | None]:
    """The URL's parts and its port (None: none given).

    Args:
        malformed: how a message starts ("malformed URL", "malformed JDBC URL").
        expected: what a message ends with (the form expected).

    Raises:
        ValueError: the port is not a number between 1 and 65535.
    """
    try:
        split = urlsplit(value)
        return split, split.port
    except ValueError:
        raise ValueError(f"{malformed} (the port must be a number between 1 and 65535): {expected}") from None


def url_params(split: SplitResult, malformed: str, expected: str, credentials: str) -> tuple[tuple[str, str], ...]:
    """The JDBC parameters after ``?`` (``sslmode=require``), in order, as given.

    Args:
        credentials: the message when a parameter is ``user`` or ``password``.

    Raises:
        ValueError: a ``#`` part, parameters that are not ``key=value`` pairs, or credentials among them.
    """
    if split.fragment:
        raise ValueError(f"{malformed}: nothing may follow '#': {expected}")
    try:
        params = tuple(parse_qsl(split.query, keep_blank_values=True, strict_parsing=bool(split.query)))
    except ValueError:
        raise ValueError(f"{malformed}: the parameters after '?' are not key=value pairs: {expected}") from None
    if any(key.lower() in CREDENTIAL_PARAMS for key, _ in params):
        raise ValueError(credentials)
    return params


def url_host(host: str) -> str:
    """``host`` as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host
