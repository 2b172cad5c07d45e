"""Drops a client asks the endpoint for that catalogd makes itself instead of relaying them.

A drop that deletes files goes by catalogd's deletion rules (``HiveSession.drop_table`` and
``drop_partition``: files deleted only where allowed); a dynamic table's drop stops its job
first (as ``dt drop`` does); a database dropped with cascade has its open stages aborted
first. A drop that deletes nothing is relayed as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore
from hmsclient.genthrift.hive_metastore import ttypes as hms

from catalogd.catalog.base import Catalog
from catalogd.catalog.relay_target import RelayTarget
from catalogd.errors import CatalogError, UnsupportedError
from catalogd.hms.policy import DROP_TABLE, CurrentTable, is_dynamic
from catalogd.hms.refused import Refused
from catalogd.manager import CatalogManager, parse_stage_id
from catalogd.names import NamespacePath, ObjectPath

logger = logging.getLogger(__name__)

__all__ = ["Drops"]

_DROP_PARTITION = frozenset({"drop_partition", "drop_partition_with_environment_context"})


class Drops:
    """Makes the drops catalogd makes itself.

    Args:
        manager: drops tables and databases through their catalogs.
        drop_dynamic: drops a dynamic table as ``dt drop`` does; None: as a table.
    """

    def __init__(self, manager: CatalogManager, drop_dynamic: Callable[[ObjectPath], None] | None = None) -> None:
        self.manager = manager
        self._drop_dynamic = drop_dynamic

    def drop(self, method: str, args: Any, catalog: Catalog, target: RelayTarget, database: Callable[[str], str],
             current: CurrentTable) -> Any | None:
        """Make the drop ``method`` asks for: its result struct; None: not one catalogd makes (relay it).

        Args:
            database: a client's database name as the catalog knows it.
            current: reads a table as the metastore has it now.
        """
        if method in DROP_TABLE:
            name = database(args.dbname)
            path = ObjectPath(catalog.name, name, args.name.lower())
            purge = _purge(getattr(args, "environment_context", None))
            try:
                found = current(name, args.name)
            except Refused:
                found = None
            if found is None:
                raise Refused(hms.NoSuchObjectException(message=f"{name}.{args.name} table not found"))
            if self._drop_dynamic is not None and is_dynamic(found.parameters):
                self._drop_dynamic(path)
            elif not args.deleteData:
                return None  # the metastore deletes nothing: relayed as it is
            else:
                self.manager.drop_table(path, ignore_if_not_exists=False, purge=purge)
            return _result(method)
        if method in _DROP_PARTITION and args.deleteData:
            target.drop_partition(database(args.db_name), args.tbl_name.lower(), list(args.part_vals or []),
                                  purge=_purge(getattr(args, "environment_context", None)))
            return _result(method, success=True)
        if method == "drop_database":
            name = database(args.name)
            if args.cascade:
                _abort_stages(catalog, name)
            self.manager.drop_database(NamespacePath(catalog.name, name), ignore_if_not_exists=False,
                                       cascade=bool(args.cascade))
            return _result(method)
        return None


def _abort_stages(catalog: Catalog, database: str) -> None:
    try:
        stages = catalog.list_stages()
    except UnsupportedError:  # a catalog that stages no writes has none to abort
        return
    for stage in stages:
        if stage.database.lower() == database and stage.state.name == "OPEN":
            try:
                catalog.abort_stage(stage.database, parse_stage_id(stage.id)[2], writer_stopped=False)
            except CatalogError as e:
                logger.warning("HMS endpoint: aborting stage %s before dropping %s: %s", stage.id, database, e)


def _result(method: str, **fields: Any) -> Any:
    """The method's ``_result`` struct, as the metastore would have answered the drop."""
    return getattr(ThriftHiveMetastore, f"{method}_result")(**fields)


def _purge(context: Any) -> bool:
    properties = getattr(context, "properties", None) or {}
    return str(properties.get("ifPurge", "")).lower() == "true"
