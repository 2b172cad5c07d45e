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
    #: catalogd's HMS endpoint (``thrift://host:port``), where engines see every catalog.
    hms_endpoint: str | None = None
    #: What this catalog's database names start with on the HMS endpoint ('' for none).
    hms_prefix: str = ""
    #: Whether the HMS endpoint serves TLS only (``server.tls``).
    hms_tls: bool = False
    #: The JKS truststore Hive clients of the endpoint verify it with (``server.tls.truststore``).
    hms_truststore: str | None = None
    #: The environment variable Hive clients read its password from
    #: (``server.tls.truststore-password-env``): the daemon never holds or hands out the password.
    hms_truststore_password_env: str | None = None
    #: jdbc catalogs: the role catalogd logs in as (``metastore`` is the JDBC URL, no credentials).
    jdbc_user: str | None = None
    #: jdbc catalogs: the JDBC driver jar Spark reads and writes the catalog's tables with.
    jdbc_driver_jar: str | None = None
    #: The HMS endpoint's Kerberos service principal (auth.kerberos.principal); None: no Kerberos.
    hms_kerberos_principal: str | None = None
    #: The Iceberg REST catalog's URI on catalogd's HTTP port (``http(s)://host:port/iceberg``), where
    #: this catalog is the warehouse of its name (None: a daemon that does not serve it).
    iceberg_uri: str | None = None


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
    #: INSERT INTO: the staged rows join the target's (new partitions added, files moved into existing ones).
    APPEND = "APPEND"

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
    """What ``begin_stage`` needs. Empty columns under OVERWRITE_PARTITIONS and APPEND mean the target's."""

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
    """A write in progress on one target table (see docs/atomic-writes.md)."""

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


@dataclass
class MemberStatus:
    """One member of a cluster as the daemon that answered saw it (``cluster status``)."""

    #: ``host:port`` of its Thrift API, as in ``cluster.members``.
    address: str
    hms_uri: str
    http_address: str
    #: It answered a ping just now.
    up: bool
    #: Why not, when it is down.
    problem: str | None = None
    #: It holds the leader lease's latest term.
    leader: bool = False
    #: It is the daemon that answered.
    answering: bool = False


@dataclass
class ClusterStatus:
    """The members of a cluster, its leader and the lease (``catalogd cluster status``)."""

    #: False: no ``cluster`` section; the daemon works alone and leads itself.
    clustered: bool
    members: list[MemberStatus] = field(default_factory=list)
    #: ``host:port`` of the leader (None: no term seen yet).
    leader: str | None = None
    #: When the leader's term began, epoch seconds.
    leader_since: float | None = None
    #: The latest term's number: each takeover adds one.
    epoch: int = 0
    #: Seconds since the leader's lease was last renewed, as the answering daemon saw it.
    lease_age: float | None = None
    #: ``cluster.lease``, seconds.
    lease: float = 0.0
    #: Where the lease is kept (a metastore's address); None: the daemon leads alone.
    lease_store: str | None = None
    #: The answering daemon's last error reaching the lease store.
    problem: str | None = None
    #: Whether the answering daemon does the background work now.
    leading: bool = False


# ---------------------------------------------------------------- dynamic tables

class RefreshMode(enum.StrEnum):
    """How a dynamic table is kept fresh (FLIP-435)."""

    FULL = "FULL"
    CONTINUOUS = "CONTINUOUS"

    @classmethod
    def parse(cls, value: str) -> RefreshMode:
        from catalogd.errors import InvalidArgumentError

        try:
            return cls(value.strip().upper())
        except ValueError:
            raise InvalidArgumentError(f"unknown refresh mode {value!r} (use FULL or CONTINUOUS)") from None


class RefreshState(enum.StrEnum):
    """The RefreshJobHandler's state: the refresh job's lifecycle."""

    INITIALIZING = "INITIALIZING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"


class RunStatus(enum.StrEnum):
    """One refresh run (or a request of several)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"

    @property
    def finished(self) -> bool:
        return self in (RunStatus.SUCCEEDED, RunStatus.FAILED)


#: How a run was started (``append``, ``merge`` and ``recompute``: a trigger of an incremental
#: continuous table that committed, by appending the new files' rows, by merging their
#: aggregation into the table's state, or by recomputing the whole table).
TRIGGERS = ("schedule", "catch-up", "initial", "manual", "api", "continuous", "append", "merge", "recompute")


@dataclass
class RefreshRun:
    """One refresh of one dynamic table (or one lifetime of a continuous job)."""

    id: str
    table: str
    trigger: str
    status: RunStatus
    schedule_time: str | None = None
    partition: dict[str, str] = field(default_factory=dict)
    submitted: float | None = None
    started: float | None = None
    ended: float | None = None
    error: str | None = None
    rows: int | None = None
    application_id: str | None = None
    input_files: int | None = None
    source_partitions: list[str] = field(default_factory=list)
    #: Where a running job is: starting, planning, writing, committing...
    phase: str | None = None
    #: The scheduler's fire time (schedule runs): ``started - fired`` is its overhead.
    fired: float | None = None

    def to_json(self) -> dict[str, object]:
        return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RefreshRun:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["status"] = RunStatus(str(known.get("status", "FAILED")))
        return cls(**known)  # type: ignore[arg-type]


@dataclass
class RefreshJob:
    """A refresh request (``dt refresh``, REST): the runs it started or joined."""

    id: str
    status: RunStatus
    runs: list[RefreshRun] = field(default_factory=list)
    cluster_info: dict[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass
class DynamicTable:
    """A table defined by a query and a freshness target (FLIP-435 CatalogDynamicTable)."""

    catalog: str
    database: str
    name: str
    query: str
    freshness: str
    expanded_query: str = ""
    #: The mode the statement asked for; None: derived from the freshness threshold.
    declared_mode: RefreshMode | None = None
    #: The RefreshJobHandler: actual mode, state and a JSON job detail.
    refresh_mode: RefreshMode = RefreshMode.FULL
    state: RefreshState = RefreshState.INITIALIZING
    job_detail: dict[str, object] = field(default_factory=dict)
    columns: list[Column] = field(default_factory=list)
    partition_keys: list[Column] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    #: Quartz cron of a FULL refresh.
    schedule: str | None = None
    created: int | None = None
    last_refresh: RefreshRun | None = None
    #: Seconds since the data was current (None: never refreshed).
    freshness_lag: float | None = None
    within_target: bool | None = None
    #: Seconds since the epoch the data is current as of (None: never refreshed).
    data_time: float | None = None
    #: The run that made the data current as of ``data_time`` (None: not in the history any more).
    data_time_run: RefreshRun | None = None

    @property
    def full_name(self) -> str:
        return f"{self.catalog}.{self.database}.{self.name}"


@dataclass
class DynamicTableSpec:
    """What CREATE DYNAMIC TABLE asks for."""

    catalog: str
    database: str
    name: str
    query: str
    freshness: str
    refresh_mode: RefreshMode | None = None
    partitioned_by: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None


@dataclass
class DynamicTableChange:
    """ALTER DYNAMIC TABLE: one of the fields is set."""

    freshness: str | None = None
    refresh_mode: RefreshMode | None = None
    #: "SUSPEND" or "RESUME".
    action: str | None = None


@dataclass
class StatementResult:
    """What ``catalogd sql`` did."""

    kind: str
    message: str
    table: DynamicTable | None = None
    job: RefreshJob | None = None
