"""What the REST door raises, as the Iceberg REST spec's error model.

``{"error": {"message": ..., "type": ..., "code": ...}}``, with the status and type names the
spec gives (404 ``NoSuchTableException``, 409 ``CommitFailedException``, ...), which Iceberg's
clients turn back into their own exceptions. A refusal by catalogd's rules (the router's, met
through the loopback) is answered as catalogd's typed error, not as the HMS exception's text.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re

from pydantic import ValidationError
from pyiceberg import exceptions as ice

from catalogd import errors as cd
from catalogd.hms.server import ClientConnection
from catalogd.iceberg.loopback import typed_error
from catalogd.iceberg.tables import NoSuchNamespace

logger = logging.getLogger(__name__)

__all__ = ["CONNECTION", "IcebergError", "error_body", "iceberg_wording", "translate"]

#: The loopback connection of the request being served (its router refusals are typed).
CONNECTION: contextvars.ContextVar[ClientConnection | None] = contextvars.ContextVar("iceberg_conn", default=None)


class IcebergError(Exception):
    """An answer in the spec's error model."""

    def __init__(self, code: int, type: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.type = type
        self.message = message


def error_body(code: int, type: str, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": type, "code": code}}).encode()


#: catalogd error kinds -> (status, type).
_KINDS = {
    "invalid-argument": (400, "BadRequestException"),
    "usage": (400, "BadRequestException"),
    "already-exists": (409, "AlreadyExistsException"),
    "conflict": (409, "CommitFailedException"),
    "permission-denied": (403, "ForbiddenException"),
    "unsupported": (406, "UnsupportedOperationException"),
    "metastore-unavailable": (503, "ServiceUnavailableException"),
}


def _not_found(e: cd.CatalogError) -> IcebergError:
    if isinstance(e, cd.CatalogNotFoundError):
        return IcebergError(404, "NoSuchWarehouseException", e.message)
    if isinstance(e, cd.DatabaseNotFoundError):
        return IcebergError(404, "NoSuchNamespaceException", e.message)
    if isinstance(e, cd.ViewNotFoundError):
        return IcebergError(404, "NoSuchViewException", e.message)
    return IcebergError(404, "NoSuchTableException", e.message)


def _catalogd(e: cd.CatalogError) -> IcebergError:
    if isinstance(e, cd.NotFoundError):
        return _not_found(e)
    if isinstance(e, cd.DatabaseNotEmptyError):
        return IcebergError(409, "NamespaceNotEmptyException", e.message)
    code, type = _KINDS.get(e.kind, (500, "InternalServerError"))
    return IcebergError(code, type, e.message)


def translate(exc: BaseException) -> IcebergError:
    """The REST answer for anything a handler raised, in Iceberg's own words (:func:`iceberg_wording`)."""
    return iceberg_wording(_translate(exc))


#: (error type, pyiceberg's wording, Iceberg's): clients and the REST Compatibility Kit match
#: Iceberg's messages (``UpdateRequirement``, ``CatalogHandlers``), and pyiceberg's ``HiveCatalog``
#: and requirement checks, which serve the door, word them their own way. A database of a
#: catalog other than the default is spelled ``@catalog#db`` there: the REST name is ``db``.
_WORDING: list[tuple[str, re.Pattern[str], str]] = [
    ("NoSuchNamespaceException", re.compile(r"^Database does not exists?: (?:@[^#]*#)?(.*)$"),
     r"Namespace does not exist: \1"),
    ("AlreadyExistsException", re.compile(r"^Database (?:@[^#]*#)?(\S+) already exists$"),
     r"Namespace already exists: \1"),
    ("AlreadyExistsException", re.compile(r"^Table (?:@[^#]*#)?(\S+) already exists$"),
     r"Table already exists: \1"),
    ("CommitFailedException", re.compile(r"(^|: )Table already exists$"),
     r"\1Requirement failed: table already exists"),
    ("CommitFailedException", re.compile(r"Table UUID does not match: (\S+) != (\S+)"),
     r"Requirement failed: UUID does not match: expected \2 != \1"),
    ("CommitFailedException", re.compile(r"last assigned field id has changed: expected (\S+), found (\S+)"),
     r"last assigned field id changed: expected id \1 != \2"),
    ("CommitFailedException", re.compile(r"current schema id has changed: expected (\S+), found (\S+)"),
     r"current schema changed: expected id \1 != \2"),
    ("CommitFailedException", re.compile(r"last assigned partition id has changed: expected (\S+), found (\S+)"),
     r"last assigned partition id changed: expected id \1 != \2"),
    ("CommitFailedException", re.compile(r"default spec id has changed: expected (\S+), found (\S+)"),
     r"default partition spec changed: expected id \1 != \2"),
    ("CommitFailedException", re.compile(r"default sort order id has changed: expected (\S+), found (\S+)"),
     r"default sort order changed: expected id \1 != \2"),
    ("CommitFailedException", re.compile(r"has changed: expected id (\S+), found (\S+)"),
     r"has changed: expected id \1 != \2"),
]


def iceberg_wording(err: IcebergError) -> IcebergError:
    """``err`` with pyiceberg's wording of its message replaced by Iceberg's (same type and code)."""
    message = err.message
    for kind, pattern, replacement in _WORDING:
        if kind == err.type:
            message = pattern.sub(replacement, message)
    return err if message == err.message else IcebergError(err.code, err.type, message)


def _translate(exc: BaseException) -> IcebergError:
    if isinstance(exc, IcebergError):
        return exc
    conn = CONNECTION.get()
    if conn is not None:
        typed = typed_error(conn, exc)
        if typed is not None:
            return _catalogd(typed)
    if isinstance(exc, cd.CatalogError):
        return _catalogd(exc)
    if isinstance(exc, NoSuchNamespace):
        return IcebergError(404, "NoSuchNamespaceException", str(exc))
    mapped = _ICEBERG.get(type(exc))
    if mapped is not None:
        return IcebergError(mapped[0], mapped[1], str(exc))
    for kind, (code, name) in _ICEBERG.items():
        if isinstance(exc, kind):
            return IcebergError(code, name, str(exc))
    if isinstance(exc, ValidationError):
        return IcebergError(400, "BadRequestException", _validation_message(exc))
    if isinstance(exc, FileNotFoundError):
        # A metadata file the metastore names is gone: Iceberg's 404 NotFoundException (Java's
        # clients raise NotFoundException on it, not NoSuchTableException), in its words.
        missing = str(exc.filename) if exc.filename else re.sub(
            r"^Cannot (?:open file|get file info), (?:does not exist|file not found): ", "", str(exc))
        return IcebergError(404, "NotFoundException", f"Failed to open input stream for file: {missing}")
    if isinstance(exc, (ValueError, TypeError, KeyError)):
        return IcebergError(400, "BadRequestException", str(exc) or type(exc).__name__)
    message = getattr(exc, "message", None)
    if type(exc).__name__ in ("MetaException", "InvalidOperationException", "InvalidObjectException"):
        return IcebergError(400 if type(exc).__name__ != "MetaException" else 500,
                            "BadRequestException" if type(exc).__name__ != "MetaException" else "InternalServerError",
                            str(message or exc))
    logger.exception("Iceberg REST: internal error")
    return IcebergError(500, "InternalServerError", f"internal error: {exc}")


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error.get("loc", ()))
        problems.append(f"{where}: {error.get('msg')}" if where else str(error.get("msg")))
    return "bad request: " + "; ".join(problems)


_ICEBERG: dict[type[BaseException], tuple[int, str]] = {
    ice.NoSuchTableError: (404, "NoSuchTableException"),
    ice.NoSuchIcebergTableError: (404, "NoSuchTableException"),
    ice.NoSuchNamespaceError: (404, "NoSuchNamespaceException"),
    ice.NoSuchViewError: (404, "NoSuchViewException"),
    ice.TableAlreadyExistsError: (409, "AlreadyExistsException"),
    ice.NamespaceAlreadyExistsError: (409, "AlreadyExistsException"),
    ice.NamespaceNotEmptyError: (409, "NamespaceNotEmptyException"),
    ice.CommitFailedException: (409, "CommitFailedException"),
    ice.ValidationError: (400, "ValidationException"),
    ice.NoSuchPropertyException: (404, "NoSuchTableException"),
    ice.CommitStateUnknownException: (500, "CommitStateUnknownException"),
    NotImplementedError: (406, "UnsupportedOperationException"),
}
