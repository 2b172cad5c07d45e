"""One exception hierarchy for every layer of catalogd.

Each error has a stable ``kind`` (what the CLI prints and what crosses the
wire) and an ``exit_code`` for the CLI: 1 when an operation failed, 2 when the
request itself (usage, configuration) was wrong.
"""

from __future__ import annotations

EXIT_FAILED = 1
EXIT_USAGE = 2


class CatalogError(Exception):
    """Root of every catalogd error."""

    kind: str = "internal"
    exit_code: int = EXIT_FAILED

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class NotFoundError(CatalogError):
    """A catalog, database, table, function or partition does not exist."""

    kind = "not-found"
    object_type = "object"


class CatalogNotFoundError(NotFoundError):
    object_type = "catalog"


class DatabaseNotFoundError(NotFoundError):
    object_type = "database"


class TableNotFoundError(NotFoundError):
    object_type = "table"


class StageNotFoundError(NotFoundError):
    object_type = "stage"


class PartitionNotFoundError(NotFoundError):
    object_type = "partition"


class ViewNotFoundError(NotFoundError):
    object_type = "view"


class FunctionNotFoundError(NotFoundError):
    object_type = "function"


class AlreadyExistsError(CatalogError):
    """The object to create exists already."""

    kind = "already-exists"
    object_type = "object"


class DatabaseAlreadyExistsError(AlreadyExistsError):
    object_type = "database"


class TableAlreadyExistsError(AlreadyExistsError):
    object_type = "table"


class PartitionAlreadyExistsError(AlreadyExistsError):
    object_type = "partition"


class ViewAlreadyExistsError(AlreadyExistsError):
    object_type = "view"


class FunctionAlreadyExistsError(AlreadyExistsError):
    object_type = "function"


class DatabaseNotEmptyError(CatalogError):
    """A database to drop still holds tables and cascade was not asked for."""

    kind = "not-empty"


class InvalidArgumentError(CatalogError):
    """The request is malformed: bad name, bad type, bad option."""

    kind = "invalid-argument"


class UnsupportedError(CatalogError):
    """The catalog type cannot do this (for example HMS renaming a database)."""

    kind = "unsupported"


class MetastoreUnavailableError(CatalogError):
    """No metastore could be reached, or it failed while answering."""

    kind = "metastore-unavailable"


class PermissionDeniedError(CatalogError):
    """The catalog refuses the operation (read-only catalog, HMS authorization)."""

    kind = "permission-denied"


class ConflictError(CatalogError):
    """A concurrent change got in the way; the caller may retry."""

    kind = "conflict"


class RefreshQueueFullError(ConflictError):
    """A table has as many refreshes waiting as it may: try again after ``retry_after`` seconds.

    Crosses the Thrift API as a conflict (its message says when to retry: the IDL has no field
    for it); HTTP answers it 429 with a ``Retry-After`` header.
    """

    def __init__(self, message: str, retry_after: float = 60.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ConfigError(CatalogError):
    """The configuration file is malformed or inconsistent."""

    kind = "config"
    exit_code = EXIT_USAGE

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]


class UsageError(CatalogError):
    """A command line that cannot be run as written."""

    kind = "usage"
    exit_code = EXIT_USAGE


class ServerUnavailableError(CatalogError):
    """The catalogd daemon cannot be reached."""

    kind = "server-unavailable"


class InternalError(CatalogError):
    """A bug: the daemon logged the details."""

    kind = "internal"


#: Every concrete error class by (kind, object_type); used to rebuild errors
#: that crossed the wire.
ERRORS_BY_KIND: dict[tuple[str, str | None], type[CatalogError]] = {}
_cls: type[CatalogError]
for _cls in (
    NotFoundError,
    CatalogNotFoundError,
    DatabaseNotFoundError,
    TableNotFoundError,
    StageNotFoundError,
    PartitionNotFoundError,
    ViewNotFoundError,
    FunctionNotFoundError,
    AlreadyExistsError,
    PartitionAlreadyExistsError,
    ViewAlreadyExistsError,
    FunctionAlreadyExistsError,
    DatabaseAlreadyExistsError,
    TableAlreadyExistsError,
):
    ERRORS_BY_KIND[(_cls.kind, _cls.object_type)] = _cls
for _cls in (
    DatabaseNotEmptyError,
    InvalidArgumentError,
    UnsupportedError,
    MetastoreUnavailableError,
    PermissionDeniedError,
    ConflictError,
    ConfigError,
    UsageError,
    ServerUnavailableError,
    InternalError,
):
    ERRORS_BY_KIND[(_cls.kind, None)] = _cls


def error_for(kind: str, message: str, object_type: str | None = None) -> CatalogError:
    """Rebuild the most specific error for a kind (and object type) from the wire."""
    cls = ERRORS_BY_KIND.get((kind, object_type)) or ERRORS_BY_KIND.get((kind, "object"))
    cls = cls or ERRORS_BY_KIND.get((kind, None)) or InternalError
    return cls(message)
