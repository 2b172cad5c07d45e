"""Connections of a jdbc catalog to its database (psycopg 3), and its errors as catalogd's.

A small pool: connections are reused (a PostgreSQL login with SCRAM costs a round trip or
three), at most ``size`` are open at once and a caller past that waits up to the connect
timeout, then fails with metastore-unavailable (so a hung server never takes every thread of
the daemon). A connection that saw a connection-level error is closed, not reused.

The password goes to libpq as a keyword, never inside a connection string that could be
logged; libpq's own messages do not contain it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import errors as pgerr

from catalogd.errors import (
    CatalogError,
    ConflictError,
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    InternalError,
    InvalidArgumentError,
    MetastoreUnavailableError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

__all__ = ["PgConnections", "translate"]


def translate(exc: psycopg.Error, what: str) -> CatalogError:
    """A psycopg error as the catalogd error that says the same (``what``: the object acted on)."""
    text = (exc.diag.message_primary if isinstance(exc, psycopg.Error) and exc.diag else None) or str(exc)
    text = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if isinstance(exc, pgerr.DuplicateSchema):
        return DatabaseAlreadyExistsError(f"{what} already exists")
    if isinstance(exc, (pgerr.DuplicateTable, pgerr.DuplicateObject)):
        return TableAlreadyExistsError(f"{what}: {text}")
    if isinstance(exc, pgerr.InvalidSchemaName):
        return DatabaseNotFoundError(f"{what}: {text}")
    if isinstance(exc, pgerr.UndefinedTable):
        return TableNotFoundError(f"{what}: {text}")
    if isinstance(exc, pgerr.DependentObjectsStillExist):
        return ConflictError(f"{what}: {text} (drop the views that use it first)")
    if isinstance(exc, pgerr.InsufficientPrivilege):
        return PermissionDeniedError(f"{what}: PostgreSQL says: {text}")
    if isinstance(exc, (pgerr.LockNotAvailable, pgerr.SerializationFailure, pgerr.DeadlockDetected)):
        return ConflictError(f"{what}: {text}")
    if isinstance(exc, psycopg.OperationalError):
        return MetastoreUnavailableError(f"{what}: PostgreSQL is unavailable: {text}")
    if isinstance(exc, (psycopg.ProgrammingError, psycopg.DataError, psycopg.IntegrityError)):
        return InvalidArgumentError(f"{what}: PostgreSQL refused it: {text}")
    return InternalError(f"{what}: PostgreSQL: {text}")


class PgConnections:
    """At most ``size`` connections to one PostgreSQL database, reused.

    Args:
        connect: psycopg.connect keywords (host, port, dbname, user, password, ...).
        timeout: seconds to connect, and to wait for a free connection.
    """

    def __init__(self, connect: dict[str, Any], size: int = 8, timeout: float = 10.0) -> None:
        self._connect = dict(connect)
        self._timeout = timeout
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(size)
        self._closed = False

    def _new(self) -> psycopg.Connection[Any]:
        return psycopg.connect(**self._connect, connect_timeout=max(1, int(self._timeout)), autocommit=True,
                               application_name="catalogd")

    @contextlib.contextmanager
    def connection(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """A connection in autocommit mode (``with conn.transaction():`` for a transaction);
        psycopg errors of the block come out as catalogd errors about ``what``."""
        if not self._slots.acquire(timeout=self._timeout):
            raise MetastoreUnavailableError(f"{what}: every connection to PostgreSQL is busy")
        conn: psycopg.Connection[Any] | None = None
        try:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None or conn.closed:
                conn = self._new()
            yield conn
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.OperationalError) and conn is not None:
                conn.close()
            raise translate(exc, what) from None
        finally:
            if conn is not None:
                if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE or self._closed:
                    conn.close()
                else:
                    with self._lock:
                        self._idle.append(conn)
            self._slots.release()

    def close(self) -> None:
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()
