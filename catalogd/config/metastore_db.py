"""``metastore-db``: the database an embedded metastore keeps its data in, given as a URL.

Only PostgreSQL is named this way (``postgresql://USER:PASSWORD@HOST:PORT/DB``); without the
key an embedded metastore keeps Derby under the data dir. The URL may carry the password, so
nothing here ever puts the URL as given into a message: problems name what is wrong, and a
parsed database shows itself with the password masked.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlencode

from pydantic import SecretStr

from catalogd.config.pg_url import split_url, url_host, url_params

__all__ = ["METASTORE_DB_FORM", "PostgresDatabase", "parse_metastore_db", "read_password_file"]

METASTORE_DB_FORM = "postgresql://USER:PASSWORD@HOST:PORT/DB"
_SCHEME = "postgresql"
_DEFAULT_PORT = 5432


@dataclass(frozen=True)
class PostgresDatabase:
    """A PostgreSQL database for an embedded metastore; ``str()`` never shows the password."""

    user: str
    host: str
    port: int
    name: str
    #: JDBC parameters from the URL's query (``?sslmode=require``), passed on as given.
    params: tuple[tuple[str, str], ...] = ()
    password: SecretStr | None = field(default=None, repr=False)

    @property
    def jdbc_url(self) -> str:
        """The JDBC URL: no user and no password in it (HMS logs its connection URL)."""
        query = f"?{urlencode(self.params)}" if self.params else ""
        return f"jdbc:postgresql://{url_host(self.host)}:{self.port}/{self.name}{query}"

    def with_password(self, password: SecretStr | None) -> PostgresDatabase:
        return PostgresDatabase(self.user, self.host, self.port, self.name, self.params, password)

    def __str__(self) -> str:
        secret = ":***" if self.password is not None else ""
        return f"{_SCHEME}://{self.user}{secret}@{url_host(self.host)}:{self.port}/{self.name}"


def parse_metastore_db(text: str) -> PostgresDatabase:
    """The database a ``metastore-db`` value names.

    Raises:
        ValueError: it is not a ``postgresql://`` URL with a user, a host and a database name; the
            message says what is missing and never quotes the value (it may hold a password).
    """
    expected = f"expected {METASTORE_DB_FORM}"
    value = text.strip()
    if not value:
        raise ValueError(f"empty value: {expected}")
    if "://" not in value:
        raise ValueError(f"not a URL: {expected}")
    split, port = split_url(value, "malformed URL", expected)
    scheme = split.scheme.lower()
    if scheme != _SCHEME:
        # The scheme is safe to show; the rest of the URL is not.
        hint = " (write postgresql://)" if scheme == "postgres" else " (PostgreSQL is the only one; leave the key " \
            "out for Derby under the data dir)"
        raise ValueError(f"unsupported database {scheme!r}{hint}: {expected}")
    user = unquote(split.username or "")
    if not user:
        raise ValueError(f"malformed URL: the user is missing: {expected}")
    if not split.hostname:
        raise ValueError(f"malformed URL: the host is missing: {expected}")
    if port == 0:
        raise ValueError(f"malformed URL: port 0 is not a PostgreSQL port: {expected}")
    name = unquote(split.path.removeprefix("/"))
    if not name:
        raise ValueError(f"malformed URL: the database name is missing: {expected}")
    if "/" in name:
        raise ValueError(f"malformed URL: the database name must be one path segment: {expected}")
    params = url_params(split, "malformed URL", expected,
                        f"give the user and password before the host, not as parameters: {expected}")
    password = unquote(split.password) if split.password is not None else None
    return PostgresDatabase(
        user=user,
        host=split.hostname,
        port=port or _DEFAULT_PORT,
        name=name,
        params=params,
        password=SecretStr(password) if password else None,
    )


def read_password_file(path: Path, euid: int) -> SecretStr:
    """The password in ``path``: a regular file of the daemon's user (``euid``) that nobody else may read.

    Raises:
        ValueError: the file is missing, not a regular file, someone else's, readable by group or
            others, or empty.
    """
    what = f"password file {str(path)!r}"
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ValueError(f"{what} does not exist") from None
    except OSError as exc:
        raise ValueError(f"{what} cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{what} is not a regular file")
    if info.st_uid != euid:
        raise ValueError(f"{what} belongs to uid {info.st_uid}, not to the daemon's user (uid {euid}): "
                         "chown it to the user that runs catalogd")
    if info.st_mode & 0o077:
        raise ValueError(f"{what} is readable by group or others (mode {stat.S_IMODE(info.st_mode):o}): "
                         "run chmod 600 on it")
    try:
        # A trailing newline (echo ... > file) is not part of the password; other spaces are.
        password = path.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} cannot be read: {exc}") from None
    if not password:
        raise ValueError(f"{what} is empty")
    return SecretStr(password)
