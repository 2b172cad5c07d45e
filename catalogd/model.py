"""Catalog objects as plain dataclasses: no Thrift and no HMS types here."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class TableKind(enum.StrEnum):
    MANAGED = "MANAGED"
    EXTERNAL = "EXTERNAL"
    VIEW = "VIEW"


class TableFormat(enum.StrEnum):
    PARQUET = "parquet"
    ORC = "orc"
    AVRO = "avro"
    CSV = "csv"
    JSON = "json"
    TEXTFILE = "textfile"

    @classmethod
    def parse(cls, value: str) -> TableFormat:
        from catalogd.errors import InvalidArgumentError

        try:
            return cls(value.strip().lower())
        except ValueError:
            choices = ", ".join(f.value for f in cls)
            raise InvalidArgumentError(f"unknown format {value!r}; use one of {choices}") from None


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    comment: str | None = None


@dataclass
class CatalogInfo:
    """What the daemon tells about one configured catalog."""

    name: str
    type: str
    default: bool = False
    default_database: str = "default"
    read_only: bool = False
    metastore: str | None = None
    warehouse: str | None = None
    #: Whether ``catalogd.spark`` writes through stages (config ``atomic-writes``).
    atomic_writes: bool = True


@dataclass
class Database:
    name: str
    catalog: str = ""
    comment: str | None = None
    location: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    owner: str | None = None


@dataclass
class Statistics:
    """What HMS knows of a table's or partition's size; None means unknown."""

    row_count: int | None = None
    total_size: int | None = None  # bytes
    file_count: int | None = None

    @property
    def known(self) -> bool:
        return any(v is not None for v in (self.row_count, self.total_size, self.file_count))


@dataclass
class Partition:
    """One partition: its values in the order of the table's partition keys."""

    values: list[str]
    keys: list[str] = field(default_factory=list)
    location: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    created: int | None = None  # seconds since the epoch
    statistics: Statistics = field(default_factory=Statistics)

    @property
    def spec(self) -> dict[str, str]:
        return dict(zip(self.keys, self.values, strict=False))

    @property
    def name(self) -> str:
        """Hive's partition name, ``ds=2024-03-01/hr=01``."""
        return "/".join(f"{k}={v}" for k, v in zip(self.keys, self.values, strict=False))


@dataclass
class Table:
    name: str
    database: str
    catalog: str = ""
    columns: list[Column] = field(default_factory=list)
    partition_keys: list[Column] = field(default_factory=list)
    format: TableFormat | None = TableFormat.PARQUET
    location: str | None = None
    kind: TableKind = TableKind.MANAGED
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    owner: str | None = None
    created: int | None = None  # seconds since the epoch, as HMS keeps it
    statistics: Statistics = field(default_factory=Statistics)
    #: Views only: the query as written, and expanded (qualified, ``*`` replaced, quoted).
    view_text: str | None = None
    view_expanded_text: str | None = None

    @property
    def qualified_name(self) -> str:
        return f"{self.catalog}.{self.database}.{self.name}"


@dataclass
class DatabaseUpdate:
    """Changes for alter_database; None leaves a field as it is."""

    comment: str | None = None
    set_properties: dict[str, str] = field(default_factory=dict)
    unset_properties: list[str] = field(default_factory=list)


class FunctionLanguage(enum.StrEnum):
    JAVA = "java"
    SCALA = "scala"
    PYTHON = "python"

    @classmethod
    def parse(cls, value: str) -> FunctionLanguage:
        from catalogd.errors import InvalidArgumentError

        try:
            return cls(value.strip().lower())
        except ValueError:
            choices = ", ".join(f.value for f in cls)
            raise InvalidArgumentError(f"unknown function language {value!r}; use one of {choices}") from None


@dataclass(frozen=True)
class Resource:
    """A file a function needs: ``type`` is jar, file or archive."""

    type: str
    uri: str


@dataclass
class Function:
    """A catalog function: a JVM class (java, scala) or a Python ``module:function``."""

    name: str
    database: str
    catalog: str = ""
    class_name: str = ""
    language: FunctionLanguage = FunctionLanguage.JAVA
    resources: list[Resource] = field(default_factory=list)
    owner: str | None = None
    created: int | None = None

    @property
    def qualified_name(self) -> str:
        return f"{self.catalog}.{self.database}.{self.name}"


@dataclass
class ViewUpdate:
    """Changes for alter_view; None leaves a field as it is.

    ``query`` is what a user gives; the manager fills ``expanded_text`` and
    ``columns`` from it before a catalog sees the update.
    """

    query: str | None = None
    comment: str | None = None
    set_properties: dict[str, str] = field(default_factory=dict)
    unset_properties: list[str] = field(default_factory=list)
    expanded_text: str | None = None
    columns: list[Column] | None = None


@dataclass
class TableUpdate:
    """Changes for alter_table; None leaves a field as it is."""

    comment: str | None = None
    set_properties: dict[str, str] = field(default_factory=dict)
    unset_properties: list[str] = field(default_factory=list)
    add_columns: list[Column] = field(default_factory=list)

    def is_empty(self) -> bool:
        return (
            self.comment is None
            and not self.set_properties
            and not self.unset_properties
            and not self.add_columns
        )


class StagePurpose(enum.StrEnum):
    """What a stage does to its target when committed."""

    CREATE = "CREATE"
    CREATE_IF_NOT_EXISTS = "CREATE_IF_NOT_EXISTS"
    REPLACE = "REPLACE"
    OVERWRITE_PARTITIONS = "OVERWRITE_PARTITIONS"

    @classmethod
    def parse(cls, value: str) -> StagePurpose:
        from catalogd.errors import InvalidArgumentError

        try:
            return cls(value.strip().upper().replace("-", "_"))
        except ValueError:
            choices = ", ".join(p.value for p in cls)
            raise InvalidArgumentError(f"unknown stage purpose {value!r}; use one of {choices}") from None


class StageState(enum.StrEnum):
    """Where a stage is in its life; COMMITTED and ABORTED are final."""

    OPEN = "OPEN"
    COMMITTING = "COMMITTING"
    COMMITTED = "COMMITTED"
    ABORTED = "ABORTED"


@dataclass
class StageRequest:
    """What ``begin_stage`` needs. Empty columns under OVERWRITE_PARTITIONS mean the target's."""

    catalog: str
    database: str
    target: str
    purpose: StagePurpose = StagePurpose.CREATE
    columns: list[Column] = field(default_factory=list)
    partition_keys: list[Column] = field(default_factory=list)
    format: TableFormat | None = None
    properties: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    #: Seconds; None means the daemon's ``staging.lease``.
    lease: float | None = None
    owner: str | None = None


@dataclass
class Stage:
    """A write in progress on one target table (see DESIGN.md section 4)."""

    id: str
    catalog: str
    database: str
    target: str
    purpose: StagePurpose
    state: StageState
    owner: str | None = None
    created: int | None = None  # milliseconds since the epoch
    lease_deadline: int | None = None  # milliseconds since the epoch
    #: The hidden HMS table the job writes into, in the target's database.
    staging_table: str | None = None
    location: str | None = None
    columns: list[Column] = field(default_factory=list)
    partition_keys: list[Column] = field(default_factory=list)
    format: TableFormat | None = None
    #: Why a stage ended the way it did (e.g. "the target exists already").
    message: str | None = None

    @property
    def target_name(self) -> str:
        return f"{self.catalog}.{self.database}.{self.target}"

    @property
    def spark_table(self) -> str:
        """The name Spark writes into (its session catalog is this catalog's metastore)."""
        return f"{self.database}.{self.staging_table}"


@dataclass
class ReloadResult:
    """What a reload did, by catalog name."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    #: Sections that changed but apply only after a restart.
    restart_needed: list[str] = field(default_factory=list)
    source: str = ""
