"""The HMS calls catalogd makes, typed: one method per call, saying which are safe to retry.

``HiveClient`` runs each call on a pool (``catalogd.metastore.client.MetastoreClient``) and
lets HMS's own exceptions through; ``hive_client.HiveSession`` turns them into catalogd errors
and ``caching_client.CachingHiveClient`` puts the metadata cache in front of it. Kept apart
from both so that each can build on it without importing the other.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from thrift.Thrift import TApplicationException

from catalogd.hive_idl import ttypes as hms

__all__ = ["HiveClient", "RpcPool"]


class RpcPool(Protocol):
    """What HiveClient needs of ``MetastoreClient``: run one RPC by name."""

    def call(self, method: str, *args: Any, idempotent: bool = True) -> Any: ...

    def close(self) -> None: ...


class HiveClient:
    """The HMS calls catalogd makes, typed; HMS's own exceptions pass through.

    Every call goes through ``_read`` or ``_write``: the one place a decorator
    (``CachingHiveClient``) changes, so it need not repeat the typed calls.

    Reads are retried once on a broken connection (on a fresh one, which fails
    over); writes are not, since they may have run before the connection broke.

    Args:
        pool: runs the RPCs (``MetastoreClient``, or a fake in unit tests).
    """

    def __init__(self, pool: RpcPool) -> None:
        self._pool = pool

    def close(self) -> None:
        self._pool.close()

    def _read(self, method: str, *args: Any) -> Any:
        return self._pool.call(method, *args, idempotent=True)

    def _write(self, method: str, *args: Any, retry: bool = False) -> Any:
        """``retry``: the caller knows that running it twice does no harm."""
        return self._pool.call(method, *args, idempotent=retry)

    # ------------------------------------------------------------ metastore

    def get_config_value(self, name: str, default: str) -> str:
        return cast(str, self._read("get_config_value", name, default))

    # ------------------------------------------------------------ databases

    def get_all_databases(self) -> list[str]:
        return list(self._read("get_all_databases"))

    def get_database(self, name: str) -> hms.Database:
        return self._read("get_database", name)

    def create_database(self, database: hms.Database) -> None:
        self._write("create_database", database)

    def alter_database(self, name: str, database: hms.Database, *, retry: bool = False) -> None:
        """``retry``: the caller knows that running it twice does no harm."""
        self._write("alter_database", name, database, retry=retry)

    def drop_database(self, name: str, delete_data: bool, cascade: bool) -> None:
        self._write("drop_database", name, delete_data, cascade)

    # ------------------------------------------------------------ tables

    def get_all_tables(self, database: str) -> list[str]:
        return list(self._read("get_all_tables", database))

    def get_tables(self, database: str, pattern: str) -> list[str]:
        """The names matching ``pattern`` (HMS's: ``*`` any characters, ``|`` alternatives, case ignored)."""
        return list(self._read("get_tables", database, pattern))

    def get_tables_by_type(self, database: str, pattern: str, table_type: str) -> list[str]:
        return list(self._read("get_tables_by_type", database, pattern, table_type))

    def get_table(self, database: str, name: str) -> hms.Table:
        return self._read("get_table", database, name)

    def get_table_objects_by_name(self, database: str, names: list[str]) -> list[hms.Table]:
        try:
            return list(self._read("get_table_objects_by_name", database, names))
        except TApplicationException as e:
            # HMS 2.3 answers a database that is gone (dropped since its tables were listed) with
            # no result at all ("unknown result"): say which, so that callers skip the database.
            if e.type == TApplicationException.MISSING_RESULT:
                self.get_database(database)  # NoSuchObjectException when it is gone
            raise

    def create_table(self, table: hms.Table) -> None:
        self._write("create_table", table)

    def alter_table(self, database: str, name: str, table: hms.Table) -> None:
        self._write("alter_table", database, name, table)

    def alter_table_with_environment_context(self, database: str, name: str, table: hms.Table,
                                             context: hms.EnvironmentContext) -> None:
        self._write("alter_table_with_environment_context", database, name, table, context)

    def drop_table(self, database: str, name: str, delete_data: bool) -> None:
        self._write("drop_table", database, name, delete_data)

    def drop_table_with_environment_context(self, database: str, name: str, delete_data: bool,
                                            context: hms.EnvironmentContext) -> None:
        self._write("drop_table_with_environment_context", database, name, delete_data, context)

    # ------------------------------------------------------------ partitions

    def get_partitions(self, database: str, table: str, max_parts: int = -1) -> list[hms.Partition]:
        return list(self._read("get_partitions", database, table, max_parts))

    def get_partitions_by_filter(self, database: str, table: str, filter: str,
                                 max_parts: int = -1) -> list[hms.Partition]:
        """A filter HMS cannot parse is answered with a MetaException."""
        return list(self._read("get_partitions_by_filter", database, table, filter, max_parts))

    def get_partition(self, database: str, table: str, values: list[str]) -> hms.Partition:
        return self._read("get_partition", database, table, values)

    def add_partition(self, partition: hms.Partition) -> None:
        self._write("add_partition", partition)

    def add_partitions(self, partitions: list[hms.Partition]) -> None:
        self._write("add_partitions", partitions)

    def alter_partitions(self, database: str, table: str, partitions: list[hms.Partition]) -> None:
        self._write("alter_partitions", database, table, partitions)

    def drop_partition(self, database: str, table: str, values: list[str], delete_data: bool) -> None:
        self._write("drop_partition", database, table, values, delete_data)

    def drop_partition_with_environment_context(self, database: str, table: str, values: list[str],
                                                delete_data: bool, context: hms.EnvironmentContext) -> None:
        self._write("drop_partition_with_environment_context", database, table, values, delete_data, context)

    # ------------------------------------------------------------ functions

    def get_functions(self, database: str, pattern: str) -> list[str]:
        return list(self._read("get_functions", database, pattern))

    def get_function(self, database: str, name: str) -> hms.Function:
        return self._read("get_function", database, name)

    def create_function(self, function: hms.Function) -> None:
        self._write("create_function", function)

    def alter_function(self, database: str, name: str, function: hms.Function) -> None:
        self._write("alter_function", database, name, function)

    def drop_function(self, database: str, name: str) -> None:
        self._write("drop_function", database, name)
