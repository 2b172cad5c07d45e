"""The Catalog interface (FLIP-30 ReadableWritableCatalog) and a middle base.

Backends are named after their store (``hive``, ``memory``). Names handed to a
catalog are already resolved and lower-cased: a database name and an object
name, no catalog part.
"""

from __future__ import annotations

import abc
import re
import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, Self

from catalogd.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    TableNotFoundError,
    UnsupportedError,
    ViewNotFoundError,
)
from catalogd.model import (
    CatalogInfo,
    Column,
    Database,
    DatabaseUpdate,
    Function,
    Partition,
    Stage,
    StageRequest,
    Table,
    TableKind,
    TableUpdate,
    ViewUpdate,
)

if TYPE_CHECKING:
    from catalogd.catalog.relay_target import RelayTarget
    from catalogd.hive_idl import ttypes as hms

#: Names of hidden staging tables start with this; no user table may.
STAGE_TABLE_PREFIX = "__catalogd_stage_"


#: Table properties that start with this are catalogd's own: no client sets them at create.
RESERVED_PROPERTY_PREFIX = "catalogd."
#: A dynamic table's definition and state (``catalogd.dynamic.store``): target properties a REPLACE keeps.
DYNAMIC_TABLE_PREFIX = "catalogd.dt."

#: What a Hive Metastore accepts as a database name (Java's ``[\\w_]+``), and catalogd as any object name.
_NAME = re.compile(r"[A-Za-z0-9_]+")
MAX_NAME_LENGTH = 128


def is_stage_table(name: str) -> bool:
    return name.lower().startswith(STAGE_TABLE_PREFIX)


#: A stage's key (its id within its database): lower-case hex digits, the same for every backend.
STAGE_KEY_LENGTH = 16


def new_stage_key() -> str:
    return secrets.token_hex(STAGE_KEY_LENGTH // 2)


def check_stage_key(key: str) -> str:
    if len(key) != STAGE_KEY_LENGTH or any(c not in "0123456789abcdef" for c in key):
        raise InvalidArgumentError(f"bad stage id: {key!r} is not {STAGE_KEY_LENGTH} lower-case hex digits")
    return key


#: The hidden views of a cluster's leader lease (``catalog.hive_lease``): under the staging
#: prefix so that every listing hides them; no stage key starts like this (keys are hex digits).
LEASE_TABLE_PREFIX = STAGE_TABLE_PREFIX + "_leader_"


def is_lease_table(name: str) -> bool:
    return name.lower().startswith(LEASE_TABLE_PREFIX)


def check_name(name: str, what: str) -> str:
    """A database, table, view or function name as a Hive Metastore accepts it: letters,
    digits and underscores (so no ``..``, no ``a.b``), at most 128 characters.

    Raises:
        InvalidArgumentError: anything else.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > MAX_NAME_LENGTH:
        raise InvalidArgumentError(f"{what} name {name!r}: use letters, digits and underscores "
                                   f"(at most {MAX_NAME_LENGTH} characters)")
    return name


class Catalog(abc.ABC):
    """A named catalog of databases and tables."""

    #: Whether catalogd's HMS endpoint serves this catalog (HMS clients cannot read a jdbc catalog's tables).
    hms_served: bool = True

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

    def relay_target(self) -> RelayTarget | None:
        """Where the HMS endpoint relays this catalog's calls (a catalog kept in a metastore);
        None: the endpoint answers them itself (a memory catalog)."""
        return None

    def job_password(self) -> str | None:
        """The password the daemon's own Spark jobs use on this catalog (a jdbc catalog's, for
        Spark's JDBC source); None: they need none."""
        return None

    def fresh(self) -> Self:
        """This catalog with every read asked of its backing store, never of a cache.

        For callers that decide what to write, delete or commit on what they read (a dynamic
        table's history read back and rewritten, the query a refresh commits). A catalog
        without a cache is its own fresh view.
        """
        return self

    @abc.abstractmethod
    def ping(self, timeout: float | None = None) -> None:
        """Check that the backing store answers (within ``timeout`` seconds, when given).

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
    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False,
                      drop_foreign: bool = False) -> None:
        """Drop a database.

        Args:
            cascade: drop its tables too; without it a non-empty database is refused.
            drop_foreign: an admin's explicit word that objects catalogd did not create go too
                (a jdbc catalog refuses to drop them otherwise; a hive catalog deletes only the
                files it may whatever is said).

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
    def drop_table(self, database: str, name: str, ignore_if_not_exists: bool = False, purge: bool = False,
                   drop_foreign: bool = False) -> None:
        """Drop a table; a managed table's files go with it.

        Args:
            purge: delete the files at once instead of moving them to a trash dir.
            drop_foreign: an admin's explicit word that a table catalogd did not create goes too
                (see ``drop_database``).

        Raises:
            TableNotFoundError: it does not exist and ignore_if_not_exists is False.
        """

    def rename_database(self, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        """Rename a database (FLIP-30); a store that cannot refuses with UnsupportedError.

        Raises:
            DatabaseNotFoundError: it does not exist and ignore_if_not_exists is False.
            DatabaseAlreadyExistsError: the new name is taken.
        """
        raise UnsupportedError(f"catalog {self.name!r} cannot rename databases")

    # ------------------------------------------------------------ functions

    def list_functions(self, database: str) -> list[str]:
        """The names of a database's functions, sorted.

        Raises:
            DatabaseNotFoundError: no database of that name.
        """
        raise UnsupportedError(f"catalog {self.name!r} has no functions")

    def get_function(self, database: str, name: str) -> Function:
        """Raises: FunctionNotFoundError."""
        raise UnsupportedError(f"catalog {self.name!r} has no functions")

    def create_function(self, function: Function, ignore_if_exists: bool = False) -> Function:
        """Raises: FunctionAlreadyExistsError (unless ignore_if_exists), DatabaseNotFoundError."""
        raise UnsupportedError(f"catalog {self.name!r} has no functions")

    def alter_function(self, database: str, name: str, function: Function) -> Function:
        """Replace a function's class, language and resources. Raises: FunctionNotFoundError."""
        raise UnsupportedError(f"catalog {self.name!r} has no functions")

    def rename_function(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        """Raises: FunctionNotFoundError, FunctionAlreadyExistsError."""
        raise UnsupportedError(f"catalog {self.name!r} has no functions")

    def drop_function(self, database: str, name: str, ignore_if_not_exists: bool = False) -> None:
        """Raises: FunctionNotFoundError (unless ignore_if_not_exists)."""
        raise UnsupportedError(f"catalog {self.name!r} has no functions")

    @staticmethod
    def check_function(function: Function) -> None:
        """A class name that fits the language, and resources of a known type."""
        from catalogd.model import FunctionLanguage

        what = f"function {function.database}.{function.name}"
        cls = function.class_name.strip()
        if not cls:
            raise InvalidArgumentError(f"{what} needs a class (java, scala) or module:function (python)")
        if function.language is FunctionLanguage.PYTHON:
            module, sep, attr = cls.partition(":")
            if not sep or not module or not attr or not all(p.isidentifier() for p in [*module.split("."), attr]):
                raise InvalidArgumentError(f"{what}: a python function is module:function, got {cls!r}")
        elif not all(p.isidentifier() for p in cls.replace("$", "_").split(".")):
            raise InvalidArgumentError(f"{what}: {cls!r} is not a JVM class name")
        for resource in function.resources:
            if resource.type not in ("jar", "file", "archive"):
                raise InvalidArgumentError(f"{what}: resource type {resource.type!r}: use jar, file or archive")
            if not resource.uri.strip():
                raise InvalidArgumentError(f"{what}: an empty resource URI")

    # ------------------------------------------------------------ table parameters

    def update_table_parameters(self, database: str, name: str, set: dict[str, str],
                                remove_prefixes: tuple[str, ...] = (),
                                add_columns: Sequence[Column] = ()) -> dict[str, str]:
        """Change some of a table's parameters in one read-modify-write, serialised with
        commits onto the table (a commit never loses a change made here, or the reverse).

        Args:
            set: parameters to add or replace.
            remove_prefixes: parameters whose key starts with one of these are removed
                first (then ``set`` is applied).
            add_columns: data columns appended in the same write (a dynamic table's new
                query and the columns it adds change together, or not at all).

        Returns:
            All the table's parameters afterwards.

        Raises:
            TableNotFoundError: no such table.
        """
        raise UnsupportedError(f"catalog {self.name!r} does not keep table parameters")

    def tables_with_parameter(self, key: str) -> list[tuple[str, str, dict[str, str]]]:
        """Every table (all databases) that has parameter ``key``: (database, table, parameters).

        Raises:
            MetastoreUnavailableError: the store cannot be reached.
        """
        raise UnsupportedError(f"catalog {self.name!r} does not keep table parameters")

    def watch_parameter(self, key: str, found: Callable[[str, str], None]) -> None:  # noqa: B027 - optional hook
        """Call ``found(database, table)`` when a table with parameter ``key`` shows up that was
        not seen before, written behind the catalog's back (another daemon on the same
        metastore); a catalog that cannot tell does nothing."""

    # ------------------------------------------------------------ views

    def list_views(self, database: str) -> list[str]:
        """List the names of the views (not tables) of a database, sorted.

        Raises:
            DatabaseNotFoundError: no database of that name.
        """
        raise UnsupportedError(f"catalog {self.name!r} has no views")

    def create_view(self, view: Table, ignore_if_exists: bool = False) -> Table:
        """Create a view: ``view.kind`` is VIEW, with columns, ``view_text`` and ``view_expanded_text``.

        Raises:
            ViewAlreadyExistsError: a view or table of that name exists (and ignore_if_exists
                is False, or it is a table).
        """
        raise UnsupportedError(f"catalog {self.name!r} has no views")

    def alter_view(self, database: str, name: str, update: ViewUpdate) -> Table:
        """Change a view's query (already expanded), comment or properties.

        Raises:
            ViewNotFoundError: no such view.
        """
        raise UnsupportedError(f"catalog {self.name!r} has no views")

    # ------------------------------------------------------------ partitions
    # Optional: a backend without them refuses with UnsupportedError.

    def list_partitions(self, database: str, table: str, filter: str | None = None) -> list[Partition]:
        """The partitions of a partitioned table, sorted by values.

        Args:
            filter: a condition on partition keys (``ds >= '2024-03-01' AND hr = '01'``).

        Raises:
            TableNotFoundError: no such table.
            InvalidArgumentError: the table is not partitioned, or a bad filter.
        """
        raise UnsupportedError(f"catalog {self.name!r} has no partitions")

    def get_partition(self, database: str, table: str, spec: dict[str, str]) -> Partition:
        """One partition by its values.

        Raises:
            NotFoundError: no such table or partition.
            InvalidArgumentError: the spec does not name exactly the partition keys.
        """
        raise UnsupportedError(f"catalog {self.name!r} has no partitions")

    def add_partition(self, database: str, table: str, spec: dict[str, str], location: str | None = None,
                      ignore_if_exists: bool = False) -> Partition:
        """Add a partition (its directory is ``location``, else under the table's).

        Raises:
            AlreadyExistsError: it exists and ignore_if_exists is False.
        """
        raise UnsupportedError(f"catalog {self.name!r} has no partitions")

    def drop_partition(self, database: str, table: str, spec: dict[str, str], ignore_if_not_exists: bool = False,
                       purge: bool = False) -> None:
        """Drop a partition; a managed table's partition files go with it.

        Raises:
            NotFoundError: it does not exist and ignore_if_not_exists is False.
        """
        raise UnsupportedError(f"catalog {self.name!r} has no partitions")

    # ------------------------------------------------------------ stages (atomic writes)
    # Optional: a backend without them refuses with UnsupportedError. ``key`` is the
    # last part of a stage id (``catalog.database.key``).

    def _no_stages(self) -> UnsupportedError:
        return UnsupportedError(f"catalog {self.name!r} cannot stage writes: atomic writes need a hive catalog")

    def begin_stage(self, request: StageRequest) -> Stage:
        """Open a stage: create a hidden staging table for ``request.target``.

        Returns:
            The open stage; under CREATE_IF_NOT_EXISTS with an existing target, a
            stage that is ABORTED already (there is nothing to write).

        Raises:
            DatabaseNotFoundError: the target's database does not exist.
            TableAlreadyExistsError: CREATE and the target exists.
            TableNotFoundError: OVERWRITE_PARTITIONS or APPEND and the target does not exist.
            UnsupportedError: APPEND to a table the daemon cannot move files into (not ``file:``).
            InvalidArgumentError: bad schema, or a target that cannot be replaced.
        """
        raise self._no_stages()

    def get_stage(self, database: str, key: str) -> Stage:
        """A stage by id, including COMMITTED ones whose target carries their tag.

        Raises:
            StageNotFoundError: no open stage and no committed target carries its id.
        """
        raise self._no_stages()

    def list_stages(self) -> list[Stage]:
        """Every stage the store holds: open, committing, or committed with replaced data kept."""
        raise self._no_stages()

    def heartbeat_stage(self, database: str, key: str, lease: float | None = None) -> Stage:
        """Extend an open stage's lease to ``lease`` seconds (None: the default) from now.

        Raises:
            StageNotFoundError: the stage is not open (aborted or unknown).
            ConflictError: its lease lapsed already (the stage is aborted now).
        """
        raise self._no_stages()

    def commit_stage(self, database: str, key: str) -> Stage:
        """Publish a stage's data into its target, atomically (idempotent).

        Raises:
            StageNotFoundError: the stage was aborted or never existed.
            TableAlreadyExistsError: CREATE and the target appeared meanwhile (the stage is aborted).
            ConflictError: its lease lapsed (the stage is aborted).
        """
        raise self._no_stages()

    def abort_stage(self, database: str, key: str, writer_stopped: bool = False) -> Stage:
        """Abort a stage (idempotent: an unknown stage answers ABORTED).

        Args:
            writer_stopped: the writer asks and writes no more: drop the files now. Otherwise
                keep an ABORTED tombstone for a lease, so late files of a running writer go too.

        Raises:
            ConflictError: the stage is committed.
        """
        raise self._no_stages()

    def janitor_pass(self, startup: bool = False, fence: Callable[[], bool] | None = None) -> int:
        """Abort lapsed stages, finish interrupted commits, delete retired data; returns how many acted on.

        ``fence``: checked before each stage is acted on; the pass ends when it answers False
        (in a cluster: this member no longer leads).
        """
        return 0

    def stage_owner(self, table: hms.Table) -> str | None:
        """Who began the stage of ``table`` (a staging table as the metastore holds it; "": its
        writer named no one), when catalogd signed it; None when it did not, or the catalog
        stages nothing. The HMS endpoint lets only that owner (or an admin) write the table.
        """
        return None


class StageBackend(Protocol):
    """What does a catalog's stage operations (``Catalog.begin_stage`` & co.): a hive catalog's
    ``hive_staging.HiveStager``, a jdbc catalog's ``jdbc_staging.JdbcStager``."""

    def begin(self, request: StageRequest) -> Stage: ...

    def get(self, database: str, key: str) -> Stage: ...

    def list_stages(self) -> list[Stage]: ...

    def heartbeat(self, database: str, key: str, lease: float | None = None) -> Stage: ...

    def commit(self, database: str, key: str) -> Stage: ...

    def abort(self, database: str, key: str, reason: str = "aborted", tombstone: bool = False) -> Stage: ...

    def janitor_pass(self, startup: bool = False, fence: Callable[[], bool] | None = None) -> int: ...


class BaseCatalog(Catalog, abc.ABC):
    """Operations derived from the primitive ones, shared by every backend."""

    # ------------------------------------------------------------ stages: handed to the backend's stager

    def stage_backend(self) -> StageBackend | None:
        """What does this catalog's stage operations; None: it stages nothing (they are refused)."""
        return None

    def _stages(self) -> StageBackend:
        backend = self.stage_backend()
        if backend is None:
            raise self._no_stages()
        return backend

    def begin_stage(self, request: StageRequest) -> Stage:
        return self._stages().begin(request)

    def get_stage(self, database: str, key: str) -> Stage:
        return self._stages().get(database, key)

    def list_stages(self) -> list[Stage]:
        return self._stages().list_stages()

    def heartbeat_stage(self, database: str, key: str, lease: float | None = None) -> Stage:
        return self._stages().heartbeat(database, key, lease)

    def commit_stage(self, database: str, key: str) -> Stage:
        return self._stages().commit(database, key)

    def abort_stage(self, database: str, key: str, writer_stopped: bool = False) -> Stage:
        reason = "aborted by its writer" if writer_stopped else "aborted on request"
        return self._stages().abort(database, key, reason, tombstone=not writer_stopped)

    def janitor_pass(self, startup: bool = False, fence: Callable[[], bool] | None = None) -> int:
        backend = self.stage_backend()
        return backend.janitor_pass(startup, fence) if backend is not None else 0

    # ------------------------------------------------------------ derived operations

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

    def get_view(self, database: str, name: str) -> Table:
        """A view (a table of that name is not one).

        Raises:
            ViewNotFoundError: no view of that name.
        """
        try:
            table = self.get_table(database, name)
        except TableNotFoundError as e:
            raise ViewNotFoundError(f"view {self.name}.{database}.{name} does not exist") from e
        if table.kind is not TableKind.VIEW:
            raise ViewNotFoundError(f"{self.name}.{database}.{name} is a table, not a view")
        return table

    def rename_view(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        """Rename a view within its database.

        Raises:
            ViewNotFoundError: it does not exist and ignore_if_not_exists is False.
            ViewAlreadyExistsError: the new name is taken.
        """
        from catalogd.errors import TableAlreadyExistsError, ViewAlreadyExistsError

        try:
            self.get_view(database, name)
        except ViewNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        try:
            self.rename_table(database, name, new_name)
        except TableAlreadyExistsError as e:
            raise ViewAlreadyExistsError(f"{self.name}.{database}.{new_name} already exists") from e

    def drop_view(self, database: str, name: str, ignore_if_not_exists: bool = False) -> None:
        """Drop a view (never a table).

        Raises:
            ViewNotFoundError: it does not exist and ignore_if_not_exists is False.
        """
        try:
            self.get_view(database, name)
        except ViewNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        self.drop_table(database, name)

    @staticmethod
    def check_new_view(view: Table) -> None:
        if not view.columns or not view.view_text or not view.view_expanded_text:
            raise InvalidArgumentError(f"view {view.database}.{view.name} needs a query, its expansion and columns")
        if is_stage_table(view.name):
            raise InvalidArgumentError(f"view name {view.name!r}: {STAGE_TABLE_PREFIX!r} is reserved")

    @staticmethod
    def check_new_table(table: Table) -> None:
        """Validate a table definition before any store sees it."""
        from catalogd import hive_types

        if is_stage_table(table.name):
            raise InvalidArgumentError(
                f"table name {table.name!r}: names starting with {STAGE_TABLE_PREFIX!r} are reserved for staging tables"
            )
        if not table.columns:
            raise InvalidArgumentError(f"table {table.database}.{table.name} needs at least one column")
        seen: set[str] = set()
        for col in [*table.columns, *table.partition_keys]:
            key = col.name.lower()
            if key in seen:
                raise InvalidArgumentError(f"duplicate column {col.name!r} in {table.database}.{table.name}")
            seen.add(key)
            hive_types.parse_type(col.type)
        if table.kind is TableKind.EXTERNAL and not table.location:
            raise InvalidArgumentError(f"table {table.database}.{table.name}: an external table needs a location")
