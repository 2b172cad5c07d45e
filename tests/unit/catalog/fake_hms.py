"""An in-memory stand-in for the typed HMS client (``catalogd.catalog.hive_client.HiveClient``).

It answers like Hive Metastore 2.3 where catalogd depends on the answer: copies
of objects (never the stored ones), HMS's own exception classes with HMS's kind
of messages, default locations under the database directory, renames that move
a managed table's directory. Unit tests only: integration tests use a real HMS.
"""

from __future__ import annotations

import copy
import re

from catalogd.hive_idl import ttypes as hms

WAREHOUSE = "file:/warehouse"


class FakeHms:
    """One metastore's databases, tables, partitions and functions, in dicts."""

    def __init__(self) -> None:
        self.databases: dict[str, hms.Database] = {}
        self.tables: dict[tuple[str, str], hms.Table] = {}
        self.partitions: dict[tuple[str, str], dict[tuple[str, ...], hms.Partition]] = {}
        self.functions: dict[tuple[str, str], hms.Function] = {}
        self.closed = False
        #: The directories HMS would have deleted (drops with deleteData of managed objects), in order.
        self.deleted: list[str] = []
        self.create_database(hms.Database(name="default", description="Default Hive database", parameters={}))

    # ------------------------------------------------------------ helpers

    def _db(self, name: str) -> hms.Database:
        if name not in self.databases:
            raise hms.NoSuchObjectException(f"{name}: database not found")
        return self.databases[name]

    def _table(self, database: str, name: str) -> hms.Table:
        key = (database, name.lower())
        if key not in self.tables:
            raise hms.NoSuchObjectException(f"{database}.{name} table not found")
        return self.tables[key]

    def _store_table(self, tbl: hms.Table) -> None:
        tbl = copy.deepcopy(tbl)
        tbl.tableName = tbl.tableName.lower()
        if tbl.sd is not None and not tbl.sd.location and tbl.tableType != "VIRTUAL_VIEW":
            tbl.sd.location = f"{self._db(tbl.dbName).locationUri}/{tbl.tableName}"
        self.tables[(tbl.dbName, tbl.tableName)] = tbl

    # ------------------------------------------------------------ metastore

    def close(self) -> None:
        self.closed = True

    def get_config_value(self, name: str, default: str) -> str:
        return WAREHOUSE if name == "hive.metastore.warehouse.dir" else default

    # ------------------------------------------------------------ databases

    def get_all_databases(self) -> list[str]:
        return sorted(self.databases)

    def get_database(self, name: str) -> hms.Database:
        return copy.deepcopy(self._db(name))

    def create_database(self, database: hms.Database) -> None:
        if database.name in self.databases:
            raise hms.AlreadyExistsException(f"Database {database.name} already exists")
        db = copy.deepcopy(database)
        db.locationUri = db.locationUri or f"{WAREHOUSE}/{db.name}.db"
        self.databases[db.name] = db

    def alter_database(self, name: str, database: hms.Database, *, retry: bool = False) -> None:
        self._db(name)
        self.databases[name] = copy.deepcopy(database)

    def drop_database(self, name: str, delete_data: bool, cascade: bool) -> None:
        self._db(name)
        if name == "default":
            raise hms.MetaException("Can not drop default database")
        tables = self.get_all_tables(name)
        if tables and not cascade:
            raise hms.InvalidOperationException(f"Database {name} is not empty. One or more tables exist.")
        for table in tables:
            self.drop_table(name, table, delete_data)
        if delete_data:
            self.deleted.append(self.databases[name].locationUri)
        del self.databases[name]

    # ------------------------------------------------------------ tables

    def get_all_tables(self, database: str) -> list[str]:
        return sorted(name for db, name in self.tables if db == database)

    def get_tables(self, database: str, pattern: str) -> list[str]:
        """HMS's patterns: ``*`` any characters, ``|`` alternatives, case ignored."""
        regex = "|".join(".*".join(re.escape(p) for p in alt.split("*")) for alt in pattern.split("|"))
        return sorted(name for db, name in self.tables if db == database and re.fullmatch(regex, name, re.I))

    def get_tables_by_type(self, database: str, pattern: str, table_type: str) -> list[str]:
        return sorted(name for (db, name), t in self.tables.items() if db == database and t.tableType == table_type)

    def get_table(self, database: str, name: str) -> hms.Table:
        return copy.deepcopy(self._table(database, name))

    def get_table_objects_by_name(self, database: str, names: list[str]) -> list[hms.Table]:
        return [copy.deepcopy(self.tables[(database, n)]) for n in names if (database, n) in self.tables]

    def create_table(self, table: hms.Table) -> None:
        self._db(table.dbName)
        if (table.dbName, table.tableName.lower()) in self.tables:
            raise hms.AlreadyExistsException(f"Table {table.tableName} already exists")
        self._store_table(table)

    def alter_table(self, database: str, name: str, table: hms.Table) -> None:
        if (database, name.lower()) not in self.tables:
            raise hms.InvalidOperationException(f"table {database}.{name} doesn't exist")
        old = self.tables[(database, name.lower())]
        new = copy.deepcopy(table)
        if new.tableName.lower() != name.lower():
            if (database, new.tableName.lower()) in self.tables:
                raise hms.InvalidOperationException(f"new table {database}.{new.tableName} already exists")
            if old.tableType == "MANAGED_TABLE" and new.sd.location == old.sd.location:
                # HMS moves a managed table's directory along with its name.
                new.sd.location = f"{self._db(database).locationUri}/{new.tableName.lower()}"
            del self.tables[(database, name.lower())]
            self.partitions[(database, new.tableName.lower())] = self.partitions.pop((database, name.lower()), {})
        self._store_table(new)

    def alter_table_with_environment_context(self, database: str, name: str, table: hms.Table,
                                             context: hms.EnvironmentContext) -> None:
        self.alter_table(database, name, table)

    def drop_table(self, database: str, name: str, delete_data: bool) -> None:
        tbl = self._table(database, name)
        if delete_data and (tbl.parameters or {}).get("EXTERNAL") != "TRUE" and tbl.sd and tbl.sd.location:
            self.deleted.append(tbl.sd.location)
            self.deleted.extend(p.sd.location for p in self.partitions.get((database, name.lower()), {}).values()
                                if not p.sd.location.startswith(tbl.sd.location + "/"))
        del self.tables[(database, name.lower())]
        self.partitions.pop((database, name.lower()), None)

    def drop_table_with_environment_context(self, database: str, name: str, delete_data: bool,
                                            context: hms.EnvironmentContext) -> None:
        self.drop_table(database, name, delete_data)

    # ------------------------------------------------------------ partitions

    def _parts(self, database: str, table: str) -> dict[tuple[str, ...], hms.Partition]:
        self._table(database, table)
        return self.partitions.setdefault((database, table.lower()), {})

    def get_partitions(self, database: str, table: str, max_parts: int = -1) -> list[hms.Partition]:
        return [copy.deepcopy(p) for _, p in sorted(self._parts(database, table).items())]

    def get_partitions_by_filter(self, database: str, table: str, filter: str,
                                 max_parts: int = -1) -> list[hms.Partition]:
        # Enough of HMS's filter language for tests: one ``key = 'value'``.
        key, eq, value = filter.partition("=")
        if not eq:
            raise hms.MetaException(f"Error parsing partition filter : line 1:{len(filter)} no viable alternative")
        tbl = self._table(database, table)
        index = [k.name for k in tbl.partitionKeys].index(key.strip())
        return [p for p in self.get_partitions(database, table) if p.values[index] == value.strip().strip("'")]

    def get_partition(self, database: str, table: str, values: list[str]) -> hms.Partition:
        parts = self._parts(database, table)
        if tuple(values) not in parts:
            raise hms.NoSuchObjectException(f"partition values={values}")
        return copy.deepcopy(parts[tuple(values)])

    def add_partition(self, partition: hms.Partition) -> None:
        parts = self._parts(partition.dbName, partition.tableName)
        if tuple(partition.values) in parts:
            raise hms.AlreadyExistsException(f"Partition already exists: {partition.values}")
        part = copy.deepcopy(partition)
        if not part.sd.location:
            tbl = self._table(partition.dbName, partition.tableName)
            names = "/".join(f"{k.name}={v}" for k, v in zip(tbl.partitionKeys, part.values, strict=True))
            part.sd.location = f"{tbl.sd.location}/{names}"
        parts[tuple(part.values)] = part

    def add_partitions(self, partitions: list[hms.Partition]) -> None:
        for partition in partitions:
            self.add_partition(partition)

    def alter_partitions(self, database: str, table: str, partitions: list[hms.Partition]) -> None:
        parts = self._parts(database, table)
        for partition in partitions:
            if tuple(partition.values) not in parts:
                raise hms.InvalidOperationException("alter is not possible: partition does not exist")
            parts[tuple(partition.values)] = copy.deepcopy(partition)

    def drop_partition(self, database: str, table: str, values: list[str], delete_data: bool) -> None:
        part = self.get_partition(database, table, values)
        if delete_data and (self._table(database, table).parameters or {}).get("EXTERNAL") != "TRUE":
            self.deleted.append(part.sd.location)
        del self._parts(database, table)[tuple(values)]

    def drop_partition_with_environment_context(self, database: str, table: str, values: list[str],
                                                delete_data: bool, context: hms.EnvironmentContext) -> None:
        self.drop_partition(database, table, values, delete_data)

    # ------------------------------------------------------------ functions

    def get_functions(self, database: str, pattern: str) -> list[str]:
        return sorted(name for db, name in self.functions if db == database)

    def get_function(self, database: str, name: str) -> hms.Function:
        if (database, name) not in self.functions:
            raise hms.NoSuchObjectException(f"Function {database}.{name} does not exist")
        return copy.deepcopy(self.functions[(database, name)])

    def create_function(self, function: hms.Function) -> None:
        self._db(function.dbName)
        if (function.dbName, function.functionName) in self.functions:
            raise hms.AlreadyExistsException(f"Function {function.functionName} already exists")
        self.functions[(function.dbName, function.functionName)] = copy.deepcopy(function)

    def alter_function(self, database: str, name: str, function: hms.Function) -> None:
        self.get_function(database, name)
        del self.functions[(database, name)]
        self.functions[(database, function.functionName)] = copy.deepcopy(function)

    def drop_function(self, database: str, name: str) -> None:
        self.get_function(database, name)
        del self.functions[(database, name)]
