"""What the endpoint changes in the calls it passes on: names, listings and view text.

Mapping apart from access control (``policy``): a prefixed catalog's databases are
``<prefix>db`` to clients and ``db`` in its metastore, in args, in replies and in the text
of views (``view_text``); listings leave staging tables out (they stay reachable by exact
name); a database Spark creates without LOCATION loses the location Spark made up, so
that its catalog places it. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from catalogd.catalog.base import is_stage_table
from catalogd.errors import InvalidArgumentError
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import methods, view_text
from catalogd.hms.federation import Federation
from catalogd.hms.refused import meta_error

__all__ = ["LISTINGS", "Rewriting", "hide_stages", "spark_default_location"]

#: Listing calls whose answers leave out staging tables.
LISTINGS = frozenset({
    "get_tables", "get_all_tables", "get_table_meta", "get_table_names_by_filter", "get_table_objects_by_name",
    "get_table_objects_by_name_req", "get_tables_by_type", "get_tables_ext", "get_materialized_views_for_rewriting",
})


class Rewriting:
    """Names between clients and catalogs (see the module docstring).

    Args:
        federation: the current ``Federation`` (called per use: a config reload changes it).
        parse_timeout: the current bound on one view text's parse, in seconds
            (``server.hms-view-parse-timeout``).
    """

    def __init__(self, federation: Callable[[], Federation],
                 parse_timeout: Callable[[], float] = lambda: 10.0) -> None:
        self._federation = federation
        #: Parses view texts once per mapping, within bounds (kept across config reloads).
        self.views = view_text.new_parser(parse_timeout)

    def prefix(self, catalog: str) -> str:
        """The prefix of ``catalog``'s databases as clients see them ("": none)."""
        return self._federation().prefixes.get(catalog, "")

    def place(self, database: str) -> str:
        """A client's database name as its catalog knows it."""
        place = self._federation().locate(database)
        return place.database if place is not None else database.lower()

    def to_backing(self, method: str, args: Any, catalog: str) -> None:
        """Rename a call's args from the client's names to the catalog's (in place)."""
        prefix = self.prefix(catalog)
        if prefix:
            # A view's text is mapped while the view still has the client's names.
            try:
                methods.rename_args(method, args, self._federation().unprefix(catalog),
                                    on_table=lambda table: view_text.view_to_backing(table, prefix, self.views))
            except view_text.ViewTextRefused as e:
                raise meta_error(f"catalogd: {e.message}; {method} refused", InvalidArgumentError) from None

    def to_client(self, method: str, result: Any, catalog: str) -> None:
        """Rename a reply's result from the catalog's names to the client's (in place)."""
        prefix = self.prefix(catalog)
        if prefix and getattr(result, "success", None) is not None:  # void results have no success
            # A view's text is mapped while the view still has the backing metastore's names.
            result.success = methods.rename_result(
                method, result.success, self._federation().prefix(catalog),
                on_table=lambda table: view_text.view_to_client(table, prefix, self.views))

    def close(self) -> None:
        """Stop the view parser's worker processes."""
        self.views.close()


def hide_stages(result: Any) -> None:
    """Leave staging tables out of a listing's answer."""
    value = getattr(result, "success", None)
    if value is None:
        return
    if isinstance(value, list):
        result.success = [item for item in value if not is_stage_table(_table_name(item))]
    elif isinstance(value, hms.GetTablesResult) and value.tables is not None:
        value.tables = [t for t in value.tables if not is_stage_table(t.tableName or "")]


def _table_name(item: Any) -> str:
    if isinstance(item, str):
        return item
    # Hive 4's ExtendedTableInfo (get_tables_ext) calls it tblName.
    return getattr(item, "tableName", None) or getattr(item, "tblName", None) or ""


def spark_default_location(database: Any) -> None:
    """Leave a new database's location to its catalog when it is the one Spark makes up.

    Spark fills in ``<the session's spark.sql.warehouse.dir>/<name>.db`` for a database created
    without LOCATION; that is the session's warehouse, not the catalog's (a prefixed catalog's
    databases would land in the default catalog's warehouse, under their prefixed names). The
    metastore (or a memory catalog) puts a database with no location in its own warehouse.
    """
    location = (getattr(database, "locationUri", None) or "").rstrip("/")
    name = getattr(database, "name", None) or ""
    if name and location.lower().endswith(f"/{name.lower()}.db"):
        database.locationUri = None
