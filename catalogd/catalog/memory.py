"""An in-process catalog for scratch use: nothing survives a restart.

Its objects live once, as HMS objects in a ``MemoryStore``; this class reads and writes
them through the codec, as ``HiveCatalog`` does over a metastore client, and the HMS
endpoint (``hms.memory.MemoryMetastore``) serves the same store to Spark. So the API and
CLI see what Spark made and Spark sees what the API made, with nothing to keep in step.
"""

from __future__ import annotations

from catalogd.catalog import hive_codec as codec
from catalogd.catalog import spark_schema
from catalogd.catalog.base import BaseCatalog, check_name
from catalogd.catalog.locations import Roots
from catalogd.catalog.memory_files import file_uri
from catalogd.catalog.memory_store import MemoryStore
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
from catalogd.hive_idl import ttypes as hms
from catalogd.hive_types import parse_type
from catalogd.model import (
    CatalogInfo,
    Column,
    Database,
    DatabaseUpdate,
    Function,
    Table,
    TableKind,
    TableUpdate,
    ViewUpdate,
)


def _normalized(columns: list[Column]) -> list[Column]:
    return [Column(c.name.lower(), parse_type(c.type), c.comment) for c in columns]


class MemoryCatalog(BaseCatalog):
    """The catalog API over one ``MemoryStore`` (``store``), which the HMS endpoint serves too."""

    def __init__(self, name: str, default_database: str = "default",
                 allowed_locations: list[str] | None = None) -> None:
        super().__init__(name)
        self.store = MemoryStore()
        self.default_database = default_database
        #: ``allowed-locations``: where else than its scratch warehouse a table or partition may
        #: be placed; None: anywhere (see ``confine``).
        self.allowed_locations = allowed_locations
        Roots(allowed_locations or [], ("file", ""))  # a root that is no location stops the catalog now
        self.create_database(Database(name=default_database, comment="default database"), ignore_if_exists=True)

    def info(self) -> CatalogInfo:
        # Nothing to stage: a memory catalog holds no data files, so no write can be atomic or not.
        return CatalogInfo(name=self.name, type="memory", atomic_writes=False)

    def ping(self, timeout: float | None = None) -> None:
        return None

    # ------------------------------------------------------------ the rules both faces apply

    def check_table(self, table: Table) -> None:
        """A new table's definition (made through the API or by Spark at the endpoint)."""
        check_name(table.name, "table")
        self.check_new_table(table)

    def confine(self, uri: str | None, what: str) -> None:
        """With ``allowed-locations``: a table's or partition's location must lie strictly inside
        one of them or inside the scratch warehouse (once the HMS endpoint serves the catalog),
        as a hive catalog's must lie inside its own. Spark clears the directory of a table it
        overwrites: a table placed elsewhere would have it clear files catalogd does not own.
        Locations catalogd made up (``memory:``) hold no files.

        Raises:
            PermissionDeniedError: it is outside.
        """
        if self.allowed_locations is None or not uri or uri.startswith("memory:"):
            return
        uris = list(self.allowed_locations)
        files = self.store.files
        if files is not None:
            uris.append(file_uri(files.path))
        Roots(uris, ("file", "")).confine(uri, what)

    def check_view(self, view: Table) -> None:
        """A new view's definition (made through the API or by Spark at the endpoint)."""
        check_name(view.name, "view")
        self.check_new_view(view)

    def check_connector(self, table: Table) -> None:
        """A generic (connector) table: its connector has the data, so it has no location."""
        if codec.CONNECTOR in table.properties and (table.location or table.kind is TableKind.EXTERNAL):
            raise InvalidArgumentError(f"table {self.name}.{table.database}.{table.name}: "
                                       "a connector table has no location (its connector has the data)")

    @staticmethod
    def added_columns(current: Table, add: list[Column]) -> list[Column]:
        """``add`` normalized, each a new name (partition keys included)."""
        existing = {c.name for c in [*current.columns, *current.partition_keys]}
        added = []
        for col in add:
            if col.name.lower() in existing:
                raise InvalidArgumentError(f"column {col.name!r} already exists in {current.database}.{current.name}")
            existing.add(col.name.lower())
            added.extend(_normalized([col]))
        return added

    # ------------------------------------------------------------ lookups (callers hold the lock)

    def _database(self, name: str) -> hms.Database:
        db = self.store.database(name)
        if db is None:
            raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")
        return db

    def _table(self, database: str, name: str) -> hms.Table:
        """No database, no table: both are a missing table."""
        try:
            self._database(database)
        except DatabaseNotFoundError as e:
            raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist: {e}") from e
        tbl = self.store.table(database, name)
        if tbl is None:
            raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
        return tbl

    def _names(self, database: str, views: bool) -> list[str]:
        self._database(database)
        return [n for n in self.store.table_names(database)
                if (self.store.table_type(database, n) == codec.VIRTUAL_VIEW) == views]

    # ------------------------------------------------------------ databases

    def list_databases(self) -> list[str]:
        with self.store.lock:
            return self.store.database_names()

    def get_database(self, name: str) -> Database:
        with self.store.lock:
            return codec.to_database(self.name, self._database(name))

    def create_database(self, database: Database, ignore_if_exists: bool = False) -> None:
        check_name(database.name, "database")
        with self.store.lock:
            if self.store.database(database.name) is not None:
                if ignore_if_exists:
                    return
                raise DatabaseAlreadyExistsError(f"database {self.name}.{database.name} already exists")
            db = codec.to_hms_database(database, database.owner)
            db.locationUri = database.location or f"memory://{self.name}/{database.name}.db"
            self.store.put_database(db)

    def alter_database(self, name: str, update: DatabaseUpdate) -> None:
        with self.store.lock:
            db = self._database(name)
            if update.comment is not None:
                db.description = update.comment
            params = dict(db.parameters or {})
            params.update(update.set_properties)
            for key in update.unset_properties:
                params.pop(key, None)
            db.parameters = params
            self.store.put_database(db)

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False,
                      drop_foreign: bool = False) -> None:
        with self.store.lock:
            if self.store.database(name) is None:
                if ignore_if_not_exists:
                    return
                raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")
            if name == self.default_database:  # as HMS refuses to drop `default`
                raise InvalidArgumentError(f"database {self.name}.{name}: the default database cannot be dropped")
            tables = self.store.table_names(name)
            if tables and not cascade:
                raise DatabaseNotEmptyError(
                    f"database {self.name}.{name} is not empty ({len(tables)} tables); drop it with cascade"
                )
            self.store.drop_database(name, delete_data=True)

    def rename_database(self, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        check_name(new_name, "database")
        with self.store.lock:
            if self.store.database(name) is None:
                if ignore_if_not_exists:
                    return
                raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")
            if self.store.database(new_name) is not None:
                raise DatabaseAlreadyExistsError(f"database {self.name}.{new_name} already exists")
            self.store.rename_database(name, new_name)

    # ------------------------------------------------------------ tables

    def list_tables(self, database: str) -> list[str]:
        with self.store.lock:
            return self._names(database, views=False)

    def get_table(self, database: str, name: str) -> Table:
        with self.store.lock:
            return codec.to_table(self.name, self._table(database, name))

    def create_table(self, table: Table, ignore_if_exists: bool = False) -> Table:
        self.check_table(table)
        with self.store.lock:
            db = self._database(table.database)
            existing = self.store.table(table.database, table.name)
            if existing is not None:
                if ignore_if_exists:
                    return codec.to_table(self.name, existing)
                raise TableAlreadyExistsError(f"table {self.name}.{table.database}.{table.name} already exists")
            self.check_connector(table)
            model = Table(**{**table.__dict__, "catalog": self.name, "columns": _normalized(table.columns),
                             "partition_keys": _normalized(table.partition_keys)})
            if codec.CONNECTOR in model.properties:
                model.format = None
            elif model.location is None:
                model.location = f"{db.locationUri}/{table.name}"
            else:
                self.confine(model.location, f"table {self.name}.{table.database}.{table.name}")
            # A view handed to create_table stays a view, as before views had calls of their own.
            make = codec.to_hms_view if model.kind is TableKind.VIEW else codec.to_hms_table
            tbl = make(model, model.owner)
            self.store.put_table(tbl)
            if self.store.files is not None and model.kind is TableKind.MANAGED:
                self.store.files.make_dir(tbl.sd.location)
            return codec.to_table(self.name, tbl)

    def alter_table(self, database: str, name: str, update: TableUpdate) -> Table:
        with self.store.lock:
            tbl = self._table(database, name)
            current = codec.to_table(self.name, tbl)
            params = dict(tbl.parameters or {})
            generic = params.get(codec.GENERIC) == "true"
            if generic and codec.CONNECTOR in update.unset_properties:
                raise InvalidArgumentError(f"table {self.name}.{database}.{name}: a connector table keeps its "
                                           "connector option")
            added = self.added_columns(current, update.add_columns)
            if added:
                tbl.sd.cols = [*(tbl.sd.cols or []), *codec.field_schemas(added)]
                if spark_schema.PROVIDER in params and spark_schema.has_schema(params):
                    # Spark reads a data source table's columns from its own schema: it gets them too.
                    params = {k: v for k, v in params.items() if not spark_schema.is_schema_key(k)}
                    params.update(spark_schema.schema_properties([*current.columns, *added],
                                                                 current.partition_keys))
            if update.comment is not None:
                params["comment"] = update.comment
            # A connector table keeps its options under a prefix (see the codec).
            prefix = codec.GENERIC_OPTION if generic else ""
            params.update({prefix + k: v for k, v in update.set_properties.items()})
            for key in update.unset_properties:
                params.pop(prefix + key, None)
            tbl.parameters = params
            self.store.put_table(tbl)
            return codec.to_table(self.name, tbl)

    def rename_table(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        check_name(new_name, "table")
        with self.store.lock:
            try:
                tbl = self._table(database, name)
            except TableNotFoundError:
                if ignore_if_not_exists:
                    return
                raise
            if self.store.table(database, new_name) is not None:
                raise TableAlreadyExistsError(f"table {self.name}.{database}.{new_name} already exists")
            tbl.tableName = new_name
            self.store.rename_table(database, name, tbl)

    def drop_table(self, database: str, name: str, ignore_if_not_exists: bool = False, purge: bool = False,
                   drop_foreign: bool = False) -> None:
        with self.store.lock:
            try:
                self._table(database, name)
            except TableNotFoundError:
                if ignore_if_not_exists:
                    return
                raise
            self.store.drop_table(database, name, delete_data=True)

    # ------------------------------------------------------------ views

    def list_views(self, database: str) -> list[str]:
        with self.store.lock:
            return self._names(database, views=True)

    def create_view(self, view: Table, ignore_if_exists: bool = False) -> Table:
        self.check_view(view)
        with self.store.lock:
            self._database(view.database)
            existing = self.store.table(view.database, view.name)
            if existing is not None:
                if existing.tableType != codec.VIRTUAL_VIEW:
                    raise ViewAlreadyExistsError(
                        f"{self.name}.{view.database}.{view.name} already exists and is a table, not a view"
                    )
                if ignore_if_exists:
                    return codec.to_table(self.name, existing)
                raise ViewAlreadyExistsError(f"view {self.name}.{view.database}.{view.name} already exists")
            model = Table(**{**view.__dict__, "columns": _normalized(view.columns)})
            tbl = codec.to_hms_view(model, model.owner)
            self.store.put_table(tbl)
            return codec.to_table(self.name, tbl)

    def alter_view(self, database: str, name: str, update: ViewUpdate) -> Table:
        with self.store.lock:
            self.get_view(database, name)
            tbl = self._table(database, name)
            if update.expanded_text is not None and update.columns is not None and update.query is not None:
                tbl.viewOriginalText, tbl.viewExpandedText = update.query, update.expanded_text
                tbl.sd.cols = codec.field_schemas(_normalized(update.columns))
            params = dict(tbl.parameters or {})
            if update.comment is not None:
                params["comment"] = update.comment
            params.update(update.set_properties)
            for key in update.unset_properties:
                params.pop(key, None)
            tbl.parameters = params
            self.store.put_table(tbl)
            return codec.to_table(self.name, tbl)

    # ------------------------------------------------------------ functions

    def list_functions(self, database: str) -> list[str]:
        with self.store.lock:
            self._database(database)
            return self.store.function_names(database)

    def _function(self, database: str, name: str) -> hms.Function:
        fn = self.store.function(database, name)
        if fn is None:
            raise FunctionNotFoundError(f"function {self.name}.{database}.{name} does not exist")
        return fn

    def get_function(self, database: str, name: str) -> Function:
        with self.store.lock:
            return codec.to_function(self.name, self._function(database, name))

    def create_function(self, function: Function, ignore_if_exists: bool = False) -> Function:
        check_name(function.name, "function")
        self.check_function(function)
        with self.store.lock:
            self._database(function.database)
            existing = self.store.function(function.database, function.name)
            if existing is not None:
                if ignore_if_exists:
                    return codec.to_function(self.name, existing)
                raise FunctionAlreadyExistsError(
                    f"function {self.name}.{function.database}.{function.name} already exists")
            fn = codec.to_hms_function(function, function.owner)
            self.store.put_function(fn)
            return codec.to_function(self.name, fn)

    def alter_function(self, database: str, name: str, function: Function) -> Function:
        self.check_function(function)
        with self.store.lock:
            current = self._function(database, name)
            fn = codec.to_hms_function(function, function.owner)
            fn.functionName, fn.dbName, fn.createTime = name, database, current.createTime
            self.store.put_function(fn)
            return codec.to_function(self.name, fn)

    def rename_function(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        check_name(new_name, "function")
        with self.store.lock:
            fn = self.store.function(database, name)
            if fn is None:
                if ignore_if_not_exists:
                    return
                raise FunctionNotFoundError(f"function {self.name}.{database}.{name} does not exist")
            if self.store.function(database, new_name) is not None:
                raise FunctionAlreadyExistsError(f"function {self.name}.{database}.{new_name} already exists")
            self.store.drop_function(database, name)
            fn.functionName = new_name
            self.store.put_function(fn)

    def drop_function(self, database: str, name: str, ignore_if_not_exists: bool = False) -> None:
        with self.store.lock:
            if not self.store.drop_function(database, name) and not ignore_if_not_exists:
                raise FunctionNotFoundError(f"function {self.name}.{database}.{name} does not exist")


__all__ = ["MemoryCatalog"]
