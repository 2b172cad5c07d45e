"""The Catalog interface (FLIP-30 ReadableWritableCatalog) and a middle base.

Backends are named after their store (``hive``, ``memory``). Names handed to a
catalog are already resolved and lower-cased: a database name and an object
name, no catalog part.
"""

from __future__ import annotations

import abc

from catalogd.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    TableNotFoundError,
)
from catalogd.model import CatalogInfo, Database, DatabaseUpdate, Table, TableKind, TableUpdate


class Catalog(abc.ABC):
    """A named catalog of databases and tables."""

    def __init__(self, name: str) -> None:
        self.name = name

    # ------------------------------------------------------------ lifecycle

    def open(self) -> None:  # noqa: B027 - optional hook
        """Connect to the backing store; called once before any operation."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and child processes."""

    @abc.abstractmethod
    def info(self) -> CatalogInfo:
        """Describe this catalog (type, metastore address, warehouse)."""

    @abc.abstractmethod
    def ping(self) -> None:
        """Check that the backing store answers.

        Raises:
            MetastoreUnavailableError: it does not.
        """

    # ------------------------------------------------------------ databases

    @abc.abstractmethod
    def list_databases(self) -> list[str]:
        """List the names of all databases, sorted."""

    @abc.abstractmethod
    def get_database(self, name: str) -> Database:
        """Get a database.

        Raises:
            DatabaseNotFoundError: no database of that name.
        """

    @abc.abstractmethod
    def create_database(self, database: Database, ignore_if_exists: bool = False) -> None:
        """Create a database.

        Args:
            database: name, comment, location (None: under the warehouse), properties.
            ignore_if_exists: do nothing, instead of failing, when it exists.

        Raises:
            DatabaseAlreadyExistsError: it exists and ignore_if_exists is False.
        """

    @abc.abstractmethod
    def alter_database(self, name: str, update: DatabaseUpdate) -> None:
        """Change a database's comment or properties.

        Raises:
            DatabaseNotFoundError: no database of that name.
        """

    @abc.abstractmethod
    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        """Drop a database.

        Args:
            cascade: drop its tables too; without it a non-empty database is refused.

        Raises:
            DatabaseNotFoundError: it does not exist and ignore_if_not_exists is False.
            DatabaseNotEmptyError: it holds tables and cascade is False.
        """

    # ------------------------------------------------------------ tables

    @abc.abstractmethod
    def list_tables(self, database: str) -> list[str]:
        """List the names of the tables (not views) of a database, sorted.

        Raises:
            DatabaseNotFoundError: no database of that name.
        """

    @abc.abstractmethod
    def get_table(self, database: str, name: str) -> Table:
        """Get a table.

        Raises:
            TableNotFoundError: no such table (or no such database).
        """

    @abc.abstractmethod
    def create_table(self, table: Table, ignore_if_exists: bool = False) -> Table:
        """Create a table.

        Args:
            table: the definition; ``table.database`` names the database.
            ignore_if_exists: return the existing table instead of failing.

        Returns:
            The table as stored, with location and defaults filled in.

        Raises:
            DatabaseNotFoundError: the database does not exist.
            TableAlreadyExistsError: it exists and ignore_if_exists is False.
            InvalidArgumentError: bad column types, duplicate columns, bad format.
        """

    @abc.abstractmethod
    def alter_table(self, database: str, name: str, update: TableUpdate) -> Table:
        """Change a table's comment, properties or add columns.

        Returns:
            The table after the change.

        Raises:
            TableNotFoundError: no such table.
            InvalidArgumentError: an added column exists already or has a bad type.
        """

    @abc.abstractmethod
    def rename_table(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        """Rename a table within its database.

        Raises:
            TableNotFoundError: it does not exist and ignore_if_not_exists is False.
            TableAlreadyExistsError: the new name is taken.
        """

    @abc.abstractmethod
    def drop_table(self, database: str, name: str, ignore_if_not_exists: bool = False, purge: bool = False) -> None:
        """Drop a table; a managed table's files go with it.

        Args:
            purge: delete the files at once instead of moving them to a trash dir.

        Raises:
            TableNotFoundError: it does not exist and ignore_if_not_exists is False.
        """


class BaseCatalog(Catalog, abc.ABC):
    """Operations derived from the primitive ones, shared by every backend."""

    def database_exists(self, name: str) -> bool:
        try:
            self.get_database(name)
        except DatabaseNotFoundError:
            return False
        return True

    def table_exists(self, database: str, name: str) -> bool:
        try:
            self.get_table(database, name)
        except TableNotFoundError:
            return False
        return True

    @staticmethod
    def check_new_table(table: Table) -> None:
        """Validate a table definition before any store sees it."""
        from catalogd.catalog import types

        if not table.columns:
            raise InvalidArgumentError(f"table {table.database}.{table.name} needs at least one column")
        seen: set[str] = set()
        for col in [*table.columns, *table.partition_keys]:
            key = col.name.lower()
            if key in seen:
                raise InvalidArgumentError(f"duplicate column {col.name!r} in {table.database}.{table.name}")
            seen.add(key)
            types.parse_type(col.type)
        if table.kind is TableKind.EXTERNAL and not table.location:
            raise InvalidArgumentError(f"table {table.database}.{table.name}: an external table needs a location")
