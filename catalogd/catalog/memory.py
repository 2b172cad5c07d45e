"""An in-process catalog for scratch use: nothing survives a restart."""

from __future__ import annotations

import copy
import threading
import time

from catalogd.catalog.base import BaseCatalog, check_name
from catalogd.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    FunctionAlreadyExistsError,
    FunctionNotFoundError,
    InvalidArgumentError,
    TableAlreadyExistsError,
    TableNotFoundError,
    ViewAlreadyExistsError,
)
from catalogd.hive_types import parse_type
from catalogd.model import (
    CatalogInfo,
    Column,
    Database,
    DatabaseUpdate,
    Function,
    Statistics,
    Table,
    TableKind,
    TableUpdate,
    ViewUpdate,
)


def _normalized(columns: list[Column]) -> list[Column]:
    return [Column(c.name.lower(), parse_type(c.type), c.comment) for c in columns]


class MemoryCatalog(BaseCatalog):
    """Databases and tables in a dict, guarded by one lock; copies in and out."""

    def __init__(self, name: str, default_database: str = "default") -> None:
        super().__init__(name)
        self._lock = threading.RLock()
        self._databases: dict[str, Database] = {}
        self._tables: dict[str, dict[str, Table]] = {}
        self._functions: dict[tuple[str, str], Function] = {}
        self.default_database = default_database
        self.create_database(Database(name=default_database, comment="default database"), ignore_if_exists=True)

    def info(self) -> CatalogInfo:
        # Nothing to stage: a memory catalog holds no data files, so no write can be atomic or not.
        return CatalogInfo(name=self.name, type="memory", atomic_writes=False)

    def ping(self, timeout: float | None = None) -> None:
        return None

    def _tables_of(self, database: str) -> dict[str, Table]:
        if database not in self._databases:
            raise DatabaseNotFoundError(f"database {self.name}.{database} does not exist")
        return self._tables[database]

    def _tables_holding(self, database: str, name: str) -> dict[str, Table]:
        """The tables of ``database`` for an operation on table ``name``: no database, no table."""
        try:
            return self._tables_of(database)
        except DatabaseNotFoundError as e:
            raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist: {e}") from e

    # ------------------------------------------------------------ databases

    def list_databases(self) -> list[str]:
        with self._lock:
            return sorted(self._databases)

    def get_database(self, name: str) -> Database:
        with self._lock:
            if name not in self._databases:
                raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")
            return copy.deepcopy(self._databases[name])

    def create_database(self, database: Database, ignore_if_exists: bool = False) -> None:
        check_name(database.name, "database")
        with self._lock:
            if database.name in self._databases:
                if ignore_if_exists:
                    return
                raise DatabaseAlreadyExistsError(f"database {self.name}.{database.name} already exists")
            stored = copy.deepcopy(database)
            stored.catalog = self.name
            stored.location = stored.location or f"memory://{self.name}/{database.name}.db"
            self._databases[database.name] = stored
            self._tables[database.name] = {}

    def alter_database(self, name: str, update: DatabaseUpdate) -> None:
        with self._lock:
            if name not in self._databases:
                raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")
            db = self._databases[name]
            if update.comment is not None:
                db.comment = update.comment
            db.properties.update(update.set_properties)
            for key in update.unset_properties:
                db.properties.pop(key, None)

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        with self._lock:
            if name not in self._databases:
                if ignore_if_not_exists:
                    return
                raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")
            if name == self.default_database:  # as HMS refuses to drop `default`
                raise InvalidArgumentError(f"database {self.name}.{name}: the default database cannot be dropped")
            if self._tables[name] and not cascade:
                raise DatabaseNotEmptyError(
                    f"database {self.name}.{name} is not empty ({len(self._tables[name])} tables); "
                    "drop it with cascade"
                )
            del self._databases[name]
            self._functions = {k: v for k, v in self._functions.items() if k[0] != name}
            del self._tables[name]

    def rename_database(self, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        check_name(new_name, "database")
        with self._lock:
            if name not in self._databases:
                if ignore_if_not_exists:
                    return
                raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")
            if new_name in self._databases:
                raise DatabaseAlreadyExistsError(f"database {self.name}.{new_name} already exists")
            database = self._databases.pop(name)
            database.name = new_name
            self._databases[new_name] = database
            tables = self._tables.pop(name)
            for table in tables.values():
                table.database = new_name
            self._tables[new_name] = tables
            self._functions = {(new_name if d == name else d, n): f for (d, n), f in self._functions.items()}
            for (d, _), function in self._functions.items():
                function.database = d

    # ------------------------------------------------------------ tables

    def list_tables(self, database: str) -> list[str]:
        with self._lock:
            tables = self._tables_of(database)
            return sorted(n for n, t in tables.items() if t.kind != TableKind.VIEW)

    def get_table(self, database: str, name: str) -> Table:
        with self._lock:
            tables = self._tables_holding(database, name)
            if name not in tables:
                raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
            return copy.deepcopy(tables[name])

    def create_table(self, table: Table, ignore_if_exists: bool = False) -> Table:
        check_name(table.name, "table")
        self.check_new_table(table)
        with self._lock:
            tables = self._tables_of(table.database)
            if table.name in tables:
                if ignore_if_exists:
                    return copy.deepcopy(tables[table.name])
                raise TableAlreadyExistsError(f"table {self.name}.{table.database}.{table.name} already exists")
            stored = copy.deepcopy(table)
            stored.catalog = self.name
            stored.columns = _normalized(table.columns)
            stored.partition_keys = _normalized(table.partition_keys)
            if "connector" in stored.properties:
                # A generic (connector) table: its connector has the data.
                if stored.location or stored.kind is TableKind.EXTERNAL:
                    raise InvalidArgumentError(f"table {self.name}.{table.database}.{table.name}: "
                                               "a connector table has no location (its connector has the data)")
                stored.format = None
            elif stored.location is None:
                stored.location = f"{self._databases[table.database].location}/{table.name}"
            stored.created = int(time.time())
            tables[table.name] = stored
            return copy.deepcopy(stored)

    def alter_table(self, database: str, name: str, update: TableUpdate) -> Table:
        with self._lock:
            table = self._tables_holding(database, name).get(name)
            if table is None:
                raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
            if "connector" in table.properties and "connector" in update.unset_properties:
                raise InvalidArgumentError(f"table {self.name}.{database}.{name}: a connector table keeps its "
                                           "connector option")
            existing = {c.name for c in [*table.columns, *table.partition_keys]}
            added = []
            for col in update.add_columns:
                if col.name.lower() in existing:
                    raise InvalidArgumentError(f"column {col.name!r} already exists in {database}.{name}")
                existing.add(col.name.lower())
                added.extend(_normalized([col]))
            table.columns.extend(added)
            if update.comment is not None:
                table.comment = update.comment
            table.properties.update(update.set_properties)
            for key in update.unset_properties:
                table.properties.pop(key, None)
            return copy.deepcopy(table)

    def set_statistics(self, database: str, name: str, statistics: Statistics) -> None:
        """Record a table's basic statistics (the HMS endpoint's ANALYZE writes them here)."""
        with self._lock:
            table = self._tables_holding(database, name).get(name)
            if table is None:
                raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
            table.statistics = copy.deepcopy(statistics)

    def rename_table(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        check_name(new_name, "table")
        with self._lock:
            try:
                tables = self._tables_holding(database, name)
            except TableNotFoundError:
                if ignore_if_not_exists:
                    return
                raise
            if name not in tables:
                if ignore_if_not_exists:
                    return
                raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
            if new_name in tables:
                raise TableAlreadyExistsError(f"table {self.name}.{database}.{new_name} already exists")
            table = tables.pop(name)
            table.name = new_name
            tables[new_name] = table

    def drop_table(self, database: str, name: str, ignore_if_not_exists: bool = False, purge: bool = False) -> None:
        with self._lock:
            try:
                tables = self._tables_holding(database, name)
            except TableNotFoundError:
                if ignore_if_not_exists:
                    return
                raise
            if name not in tables:
                if ignore_if_not_exists:
                    return
                raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
            del tables[name]

    # ------------------------------------------------------------ views

    def list_views(self, database: str) -> list[str]:
        with self._lock:
            return sorted(n for n, t in self._tables_of(database).items() if t.kind == TableKind.VIEW)

    def create_view(self, view: Table, ignore_if_exists: bool = False) -> Table:
        check_name(view.name, "view")
        self.check_new_view(view)
        with self._lock:
            tables = self._tables_of(view.database)
            existing = tables.get(view.name)
            if existing is not None:
                if existing.kind != TableKind.VIEW:
                    raise ViewAlreadyExistsError(
                        f"{self.name}.{view.database}.{view.name} already exists and is a table, not a view"
                    )
                if ignore_if_exists:
                    return copy.deepcopy(existing)
                raise ViewAlreadyExistsError(f"view {self.name}.{view.database}.{view.name} already exists")
            stored = copy.deepcopy(view)
            stored.catalog, stored.kind, stored.format, stored.location = self.name, TableKind.VIEW, None, None
            stored.columns = _normalized(view.columns)
            stored.partition_keys = []
            stored.created = int(time.time())
            tables[view.name] = stored
            return copy.deepcopy(stored)

    def alter_view(self, database: str, name: str, update: ViewUpdate) -> Table:
        with self._lock:
            self.get_view(database, name)
            view = self._tables_of(database)[name]
            if update.expanded_text is not None and update.columns is not None and update.query is not None:
                view.view_text, view.view_expanded_text = update.query, update.expanded_text
                view.columns = _normalized(update.columns)
            if update.comment is not None:
                view.comment = update.comment
            view.properties.update(update.set_properties)
            for key in update.unset_properties:
                view.properties.pop(key, None)
            return copy.deepcopy(view)

    # ------------------------------------------------------------ functions

    def list_functions(self, database: str) -> list[str]:
        with self._lock:
            self._tables_of(database)
            return sorted(n for d, n in self._functions if d == database)

    def get_function(self, database: str, name: str) -> Function:
        with self._lock:
            found = self._functions.get((database, name))
            if found is None:
                raise FunctionNotFoundError(f"function {self.name}.{database}.{name} does not exist")
            return copy.deepcopy(found)

    def create_function(self, function: Function, ignore_if_exists: bool = False) -> Function:
        check_name(function.name, "function")
        self.check_function(function)
        with self._lock:
            self._tables_of(function.database)
            key = (function.database, function.name)
            if key in self._functions:
                if ignore_if_exists:
                    return copy.deepcopy(self._functions[key])
                raise FunctionAlreadyExistsError(
                    f"function {self.name}.{function.database}.{function.name} already exists")
            stored = copy.deepcopy(function)
            stored.catalog, stored.created = self.name, int(time.time())
            self._functions[key] = stored
            return copy.deepcopy(stored)

    def alter_function(self, database: str, name: str, function: Function) -> Function:
        self.check_function(function)
        with self._lock:
            current = self.get_function(database, name)
            stored = copy.deepcopy(function)
            stored.name, stored.database, stored.catalog, stored.created = name, database, self.name, current.created
            self._functions[(database, name)] = stored
            return copy.deepcopy(stored)

    def rename_function(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        check_name(new_name, "function")
        with self._lock:
            if (database, name) not in self._functions:
                if ignore_if_not_exists:
                    return
                raise FunctionNotFoundError(f"function {self.name}.{database}.{name} does not exist")
            if (database, new_name) in self._functions:
                raise FunctionAlreadyExistsError(f"function {self.name}.{database}.{new_name} already exists")
            function = self._functions.pop((database, name))
            function.name = new_name
            self._functions[(database, new_name)] = function

    def drop_function(self, database: str, name: str, ignore_if_not_exists: bool = False) -> None:
        with self._lock:
            if self._functions.pop((database, name), None) is None and not ignore_if_not_exists:
                raise FunctionNotFoundError(f"function {self.name}.{database}.{name} does not exist")
