"""Not-found errors that help: a missing database named as such, the closest existing names suggested.

Used by the manager on the error path only: one list call of the catalog (the names in the
object's database, or the databases of the catalog) after an operation failed with not-found.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterable

from catalogd.catalog.base import BaseCatalog
from catalogd.errors import (
    CatalogError,
    DatabaseNotFoundError,
    FunctionNotFoundError,
    NotFoundError,
    TableNotFoundError,
    ViewNotFoundError,
)

logger = logging.getLogger(__name__)

#: Marks a message that already carries suggestions (an error explained twice keeps its first hint).
HINT = "; did you mean "


def did_you_mean(name: str, candidates: Iterable[str], prefix: str = "") -> str:
    """``"; did you mean main.sales.orders?"`` for the closest candidates, or ``""`` when none is close."""
    scored = sorted(((difflib.SequenceMatcher(None, name, c).ratio(), c) for c in set(candidates) if c != name),
                    key=lambda sc: (-sc[0], sc[1]))
    # Close enough (difflib's usual 0.6), and not much further than the best: one clear
    # suggestion rather than a list of everything that shares a prefix.
    close = [c for score, c in scored if score >= 0.6 and score >= scored[0][0] - 0.1][:3]
    if not close:
        return ""
    shown = [f"{prefix}{c}" for c in close]
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
    return f"{HINT}{listed}?"


def _lister(catalog: BaseCatalog, kind: str) -> Callable[[str], list[str]]:
    if kind == "view":
        return catalog.list_views
    if kind == "function":
        return catalog.list_functions
    return catalog.list_tables


def missing_database(catalog: BaseCatalog, database: str) -> DatabaseNotFoundError:
    """``database main.sale does not exist; did you mean main.sales?``"""
    message = f"database {catalog.name}.{database} does not exist"
    try:
        message += did_you_mean(database, catalog.list_databases(), f"{catalog.name}.")
    except CatalogError as e:
        logger.debug("no database suggestions for %s.%s: %s", catalog.name, database, e)
    return DatabaseNotFoundError(message)


def explain(error: NotFoundError, catalog: BaseCatalog, database: str, name: str | None = None,
            kind: str = "table") -> NotFoundError:
    """The error to report instead of ``error`` (``error`` itself when there is nothing to add).

    Args:
        name: the object that was not found; None for an operation on the database itself.
        kind: what ``name`` is: ``table`` (also dynamic tables), ``view`` or ``function``;
            the names suggested are of that kind.
    """
    if HINT in error.message:
        return error
    if isinstance(error, DatabaseNotFoundError) or name is None:
        return missing_database(catalog, database) if isinstance(error, DatabaseNotFoundError) else error
    # Only "does not exist": "... is a table, not a view" needs no suggestion.
    if not isinstance(error, TableNotFoundError | ViewNotFoundError | FunctionNotFoundError) \
            or "does not exist" not in error.message:
        return error
    try:
        names = _lister(catalog, kind)(database)
    except DatabaseNotFoundError:
        # The object is missing because its database is: say that.
        return missing_database(catalog, database)
    except CatalogError as e:
        logger.debug("no suggestions for %s: %s", error.message, e)
        return error
    hint = did_you_mean(name, names, f"{catalog.name}.{database}.")
    return type(error)(error.message + hint) if hint else error
