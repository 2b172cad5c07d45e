"""The ``hive`` catalog: databases and tables kept in a Hive Metastore.

HMS Thrift types live only in this module (and the metastore client under
it): everything that leaves is a ``catalogd.model`` object, and every HMS
error is translated into a catalogd error where the call is made.
"""

from __future__ import annotations

import copy
import logging
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hmsclient.genthrift.hive_metastore import ttypes as hms
from thrift.Thrift import TApplicationException

from catalogd.catalog import spark_schema
from catalogd.catalog.base import BaseCatalog, is_stage_table
from catalogd.catalog.hive_staging import HiveStager
from catalogd.catalog.types import parse_type
from catalogd.errors import (
    AlreadyExistsError,
    CatalogError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    FunctionAlreadyExistsError,
    FunctionNotFoundError,
    InvalidArgumentError,
    MetastoreUnavailableError,
    NotFoundError,
    PartitionAlreadyExistsError,
    PartitionNotFoundError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
    ViewAlreadyExistsError,
    ViewNotFoundError,
)
from catalogd.metastore.client import MetastoreClient, parse_uris
from catalogd.metastore.embedded import EmbeddedMetastore
from catalogd.model import (
    CatalogInfo,
    Column,
    Database,
    DatabaseUpdate,
    Function,
    FunctionLanguage,
    Partition,
    Stage,
    StageRequest,
    Statistics,
    Table,
    TableFormat,
    TableKind,
    TableUpdate,
    ViewUpdate,
)

if TYPE_CHECKING:
    from catalogd.config import CatalogConfig, Config

logger = logging.getLogger(__name__)

MANAGED_TABLE = "MANAGED_TABLE"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
VIRTUAL_VIEW = "VIRTUAL_VIEW"
LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"
#: Parameters HMS or Spark keep for themselves; hidden from ``properties``
#: (``spark.sql.sources.schema`` itself and its ``.part.N`` etc. keys, and the
#: data source provider, which ``format`` already tells).
HIDDEN_PREFIXES = (spark_schema.SCHEMA_PREFIX, spark_schema.PROVIDER)
#: Table properties only catalogd itself writes.
RESERVED_PREFIXES = ("catalogd.dt.", "catalogd.stage.", "catalogd.last-commit", "catalogd.recent-commits")


PYTHON_PREFIX = "python:"
#: Generic (connector) tables, FLIP-30: the marker, and each option under a prefix so
#: the options round-trip exactly and never mix with HMS's or Spark's own parameters.
GENERIC = "catalogd.generic"
GENERIC_OPTION = "catalogd.option."
CONNECTOR = "connector"


def is_generic(properties: dict[str, str]) -> bool:
    return CONNECTOR in properties
_RESOURCE_TYPES = {"jar": hms.ResourceType.JAR, "file": hms.ResourceType.FILE, "archive": hms.ResourceType.ARCHIVE}
_RESOURCE_NAMES = {v: k for k, v in _RESOURCE_TYPES.items()}


@dataclass(frozen=True)
class StorageFormat:
    serde: str
    input_format: str
    output_format: str
    serde_params: tuple[tuple[str, str], ...] = ()
    #: Spark data source provider for formats Hive 2.3 cannot read natively.
    spark_provider: str | None = None


STORAGE_FORMATS: dict[TableFormat, StorageFormat] = {
    TableFormat.PARQUET: StorageFormat(
        "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
        "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
    ),
    TableFormat.ORC: StorageFormat(
        "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
        "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
    ),
    TableFormat.AVRO: StorageFormat(
        "org.apache.hadoop.hive.serde2.avro.AvroSerDe",
        "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat",
        "org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat",
    ),
    TableFormat.TEXTFILE: StorageFormat(
        LAZY_SIMPLE_SERDE, TEXT_INPUT, TEXT_OUTPUT, (("serialization.format", "1"),)
    ),
    # CSV and JSON: Spark reads them as data source tables (quoting, JSON
    # parsing); the storage descriptor stays readable by Hive and Trino.
    TableFormat.CSV: StorageFormat(
        LAZY_SIMPLE_SERDE,
        TEXT_INPUT,
        TEXT_OUTPUT,
        (("field.delim", ","), ("serialization.format", ",")),
        spark_provider="csv",
    ),
    TableFormat.JSON: StorageFormat(
        "org.apache.hive.hcatalog.data.JsonSerDe", TEXT_INPUT, TEXT_OUTPUT, spark_provider="json"
    ),
}
_PROVIDER_FORMATS = {
    "parquet": TableFormat.PARQUET,
    "orc": TableFormat.ORC,
    "avro": TableFormat.AVRO,
    "com.databricks.spark.avro": TableFormat.AVRO,
    "csv": TableFormat.CSV,
    "json": TableFormat.JSON,
    "text": TableFormat.TEXTFILE,
}


def _format_of(tbl: hms.Table) -> TableFormat | None:
    provider = (tbl.parameters or {}).get(spark_schema.PROVIDER, "").lower()
    if provider in _PROVIDER_FORMATS:
        return _PROVIDER_FORMATS[provider]
    sd = tbl.sd
    serde = (sd.serdeInfo.serializationLib if sd and sd.serdeInfo else None) or ""
    for fmt, storage in STORAGE_FORMATS.items():
        if storage.spark_provider is None and serde == storage.serde:
            if fmt is TableFormat.TEXTFILE and sd and sd.inputFormat != TEXT_INPUT:
                continue
            return fmt
    if serde == "org.apache.hadoop.hive.serde2.OpenCSVSerde":
        return TableFormat.CSV
    if serde.endswith("JsonSerDe"):
        return TableFormat.JSON
    return None


def _statistics(params: dict[str, str] | None) -> Statistics:
    """The basic statistics HMS keeps in parameters; -1 or nothing means unknown."""

    def number(key: str) -> int | None:
        # Hive's own key, else the one Spark's ANALYZE TABLE writes.
        for name in (key, f"spark.sql.statistics.{key}"):
            try:
                value = int((params or {}).get(name, ""))
            except ValueError:
                continue
            if value >= 0:
                return value
        return None

    return Statistics(row_count=number("numRows"), total_size=number("totalSize"), file_count=number("numFiles"))


def _columns(schemas: list[hms.FieldSchema] | None) -> list[Column]:
    return [Column(f.name, f.type, f.comment or None) for f in schemas or []]


def _field_schemas(columns: list[Column]) -> list[hms.FieldSchema]:
    return [hms.FieldSchema(name=c.name.lower(), type=parse_type(c.type), comment=c.comment) for c in columns]


class HiveCatalog(BaseCatalog):
    """A catalog whose objects live in a Hive Metastore.

    Args:
        name: the catalog's name.
        uris: remote metastore addresses; empty when ``embedded`` is given.
        embedded: a metastore this catalog starts and stops itself.
        warehouse: the warehouse URI (from config, or asked from HMS on open).
    """

    def __init__(
        self,
        name: str,
        uris: list[tuple[str, int]] | None = None,
        embedded: EmbeddedMetastore | None = None,
        warehouse: str | None = None,
        username: str | None = None,
        connect_timeout: float = 5.0,
        socket_timeout: float = 60.0,
        default_database: str = "default",
        lease: float = 60.0,
        retention: float = 30.0,
        committer: str | None = None,
    ) -> None:
        super().__init__(name)
        if not uris and embedded is None:
            raise InvalidArgumentError(f"catalog {name}: give metastore URIs or an embedded metastore")
        self._uris = list(uris or [])
        self._embedded = embedded
        self._warehouse = warehouse
        self._username = username
        self._connect_timeout = connect_timeout
        self._socket_timeout = socket_timeout
        self.default_database = default_database
        self._client: MetastoreClient | None = None
        self.stager = HiveStager(self, lease=lease, retention=retention, committer=committer)

    @classmethod
    def from_config(cls, conf: CatalogConfig, config: Config) -> HiveCatalog:
        hive_conf = {
            k: v
            for k, v in conf.connection.items()
            if k not in ("hive.metastore.uris", "hive.metastore.username")
            and not k.startswith("hive.metastore.connect")
            and k != "hive.metastore.client.socket.timeout"
        }
        embedded = None
        uris: list[tuple[str, int]] = []
        if conf.is_embedded:
            embedded = EmbeddedMetastore(
                conf.name, config.server.data_dir, conf.metastore_port, conf.warehouse, hive_conf
            )
        else:
            uris = parse_uris(conf.uris)
        return cls(
            conf.name,
            uris=uris,
            embedded=embedded,
            warehouse=conf.warehouse or (embedded.warehouse if embedded else None),
            username=conf.connection.get("hive.metastore.username"),
            connect_timeout=conf.connect_timeout.total_seconds(),
            socket_timeout=conf.socket_timeout.total_seconds(),
            default_database=conf.default_database,
            lease=config.staging.lease.total_seconds(),
            retention=config.staging.replaced_data_retention.total_seconds(),
            # One daemon per data dir (it is locked): a restart is the same committer.
            committer=f"{socket.gethostname()}:{config.server.data_dir}",
        )

    # ------------------------------------------------------------ lifecycle

    def open(self, timeout: float = 60.0) -> None:
        if self._embedded is not None:
            self._embedded.start()
            self._uris = parse_uris(self._embedded.uri)
        self._client = MetastoreClient(self._uris, self._connect_timeout, self._socket_timeout, self._username)
        # The port may open before HMS serves requests; wait for a real answer.
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.ping()
                break
            except MetastoreUnavailableError:
                if self._embedded is None or time.monotonic() > deadline:
                    self.close()
                    raise
                time.sleep(0.3)
        if self._warehouse is None:
            with self._translate("get warehouse dir"):
                self._warehouse = self._call("get_config_value", "hive.metastore.warehouse.dir", "") or None
        if self.default_database != "default":
            with self._translate(f"database {self.default_database}"):
                self._call("get_database", self.default_database)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._embedded is not None:
            self._embedded.stop()

    def info(self) -> CatalogInfo:
        metastore = self._client.uri_string if self._client else ",".join(f"thrift://{h}:{p}" for h, p in self._uris)
        return CatalogInfo(
            name=self.name,
            type="hive",
            default_database=self.default_database,
            metastore=metastore or None,
            warehouse=self._warehouse,
        )

    @property
    def embedded(self) -> EmbeddedMetastore | None:
        return self._embedded

    def ping(self) -> None:
        with self._translate("ping"):
            self._call("get_all_databases")

    # ------------------------------------------------------------ plumbing

    def _call(self, method: str, *args: object, idempotent: bool = True) -> object:
        if self._client is None:
            raise MetastoreUnavailableError(f"catalog {self.name} is not open")
        return self._client.call(method, *args, idempotent=idempotent)

    @contextmanager
    def _translate(
        self,
        what: str,
        not_found: type[NotFoundError] = NotFoundError,
        exists: type[AlreadyExistsError] = AlreadyExistsError,
    ) -> Iterator[None]:
        """Turn HMS exceptions into catalogd errors that name ``what``."""
        try:
            yield
        except CatalogError:
            raise
        except hms.NoSuchObjectException as e:
            raise not_found(f"{what} does not exist ({e.message})") from e
        except hms.AlreadyExistsException as e:
            raise exists(f"{what} already exists") from e
        except (hms.InvalidObjectException, hms.InvalidInputException, hms.InvalidPartitionException) as e:
            raise InvalidArgumentError(f"{what}: {e.message}") from e
        except hms.InvalidOperationException as e:
            if "not empty" in (e.message or "").lower():
                raise DatabaseNotEmptyError(f"{what} is not empty; drop it with cascade") from e
            raise InvalidArgumentError(f"{what}: {e.message}") from e
        except hms.MetaException as e:
            message = e.message or ""
            lower = message.lower()
            if "permission" in lower or "authoriz" in lower or "privilege" in lower:
                raise PermissionDeniedError(f"{what}: {message}") from e
            if "can not drop default database" in lower:
                raise InvalidArgumentError(f"{what}: the default database cannot be dropped") from e
            if "does not exist" in lower or "doesn't exist" in lower:
                raise not_found(f"{what} does not exist ({message})") from e
            raise MetastoreUnavailableError(f"{what}: metastore error: {message}") from e
        except TApplicationException as e:
            if e.type == TApplicationException.UNKNOWN_METHOD:
                raise UnsupportedError(f"{what}: this metastore does not support the call ({e.message})") from e
            raise MetastoreUnavailableError(f"{what}: metastore failed: {e.message}") from e

    def _raw_table(self, database: str, name: str) -> hms.Table:
        with self._translate(f"table {self.name}.{database}.{name}", TableNotFoundError):
            return self._call("get_table", database, name)

    # ------------------------------------------------------------ databases

    def list_databases(self) -> list[str]:
        with self._translate("list databases"):
            return sorted(self._call("get_all_databases"))

    def get_database(self, name: str) -> Database:
        with self._translate(f"database {self.name}.{name}", DatabaseNotFoundError):
            db = self._call("get_database", name)
        return Database(
            name=db.name,
            catalog=self.name,
            comment=db.description or None,
            location=db.locationUri,
            properties=dict(db.parameters or {}),
            owner=db.ownerName,
        )

    def create_database(self, database: Database, ignore_if_exists: bool = False) -> None:
        what = f"database {self.name}.{database.name}"
        db = hms.Database(
            name=database.name,
            description=database.comment,
            locationUri=database.location,
            parameters=dict(database.properties),
            ownerName=self._username,
            ownerType=hms.PrincipalType.USER if self._username else None,
        )
        try:
            with self._translate(what, exists=DatabaseAlreadyExistsError):
                self._call("create_database", db, idempotent=False)
        except DatabaseAlreadyExistsError:
            if not ignore_if_exists:
                raise

    def alter_database(self, name: str, update: DatabaseUpdate) -> None:
        what = f"database {self.name}.{name}"
        with self._translate(what, DatabaseNotFoundError):
            db = self._call("get_database", name)
            if update.comment is not None and update.comment != (db.description or ""):
                # HMS 2.3 (the embedded one) ignores a new description without a
                # word: change it alone first, and refuse when it did not take.
                db.description = update.comment
                self._call("alter_database", name, db, idempotent=False)
                db = self._call("get_database", name)
                if (db.description or "") != update.comment:
                    raise UnsupportedError(
                        f"{what}: this metastore cannot change a database's comment (Hive Metastore 2.3 "
                        "keeps the one given at creation); nothing was changed"
                    )
            params = dict(db.parameters or {})
            params.update(update.set_properties)
            for key in update.unset_properties:
                params.pop(key, None)
            db.parameters = params
            self._call("alter_database", name, db)

    def rename_database(self, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        try:
            self.get_database(name)
        except DatabaseNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        raise UnsupportedError(
            f"database {self.name}.{name}: a Hive Metastore cannot rename a database (create {new_name}, "
            "then rename or re-create its tables)"
        )

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        what = f"database {self.name}.{name}"
        try:
            with self._translate(what, DatabaseNotFoundError):
                # HMS 2.3 answers a missing database here with a NullPointerException.
                self._call("get_database", name)
                if not cascade and self._call("get_all_tables", name):
                    raise DatabaseNotEmptyError(f"{what} is not empty; drop it with cascade")
                self._call("drop_database", name, True, cascade, idempotent=False)
        except DatabaseNotFoundError:
            if not ignore_if_not_exists:
                raise

    # ------------------------------------------------------------ tables

    def list_tables(self, database: str) -> list[str]:
        what = f"database {self.name}.{database}"
        with self._translate(what, DatabaseNotFoundError):
            names = {n for n in self._call("get_all_tables", database) if not is_stage_table(n)}
            if not names:
                # HMS answers an unknown database with an empty list too: only
                # then is the extra round trip needed to tell the two apart.
                self._call("get_database", database)
                return []
            views = set(self._call("get_tables_by_type", database, "*", VIRTUAL_VIEW))
        return sorted(names - views)

    def get_table(self, database: str, name: str) -> Table:
        return self._to_table(self._raw_table(database, name))

    def _to_table(self, tbl: hms.Table) -> Table:
        params = dict(tbl.parameters or {})
        columns, partition_keys = _columns(tbl.sd.cols if tbl.sd else None), _columns(tbl.partitionKeys)
        from_spark = spark_schema.columns_from_properties(params) if spark_schema.PROVIDER in params else None
        if from_spark is not None:
            # A data source table: Spark's own schema is the true one (the storage
            # descriptor may hold a placeholder like `col array<string>`).
            columns, partition_keys = from_spark
        location = tbl.sd.location if tbl.sd else None
        if not location and tbl.sd and tbl.sd.serdeInfo and tbl.sd.serdeInfo.parameters:
            location = tbl.sd.serdeInfo.parameters.get("path")
        kind = {EXTERNAL_TABLE: TableKind.EXTERNAL, VIRTUAL_VIEW: TableKind.VIEW}.get(
            tbl.tableType or "", TableKind.MANAGED
        )
        if params.get(GENERIC) == "true":
            options = {k[len(GENERIC_OPTION):]: v for k, v in params.items() if k.startswith(GENERIC_OPTION)}
            return Table(
                name=tbl.tableName, database=tbl.dbName, catalog=self.name, columns=_columns(tbl.sd.cols),
                partition_keys=_columns(tbl.partitionKeys), format=None, location=None, kind=kind,
                comment=params.get("comment"), properties=options, owner=tbl.owner, created=tbl.createTime,
            )
        comment = params.pop("comment", None)
        params.pop("EXTERNAL", None)
        visible = {k: v for k, v in params.items() if not k.startswith(HIDDEN_PREFIXES)}
        return Table(
            name=tbl.tableName,
            database=tbl.dbName,
            catalog=self.name,
            columns=columns,
            partition_keys=partition_keys,
            format=None if kind is TableKind.VIEW else _format_of(tbl),
            location=location,
            kind=kind,
            comment=comment,
            properties=visible,
            owner=tbl.owner,
            created=tbl.createTime,
            statistics=_statistics(tbl.parameters),
            view_text=tbl.viewOriginalText if kind is TableKind.VIEW else None,
            view_expanded_text=tbl.viewExpandedText if kind is TableKind.VIEW else None,
        )

    def _to_hms_generic(self, table: Table) -> hms.Table:
        """A connector table: options kept under a prefix; marked so that neither Spark (an
        unknown data source) nor Hive (an unknown storage handler) reads it as Hive files."""
        connector = table.properties[CONNECTOR]
        marker = f"catalogd.generic.{connector}"
        params = {GENERIC: "true", spark_schema.PROVIDER: marker, "storage_handler": marker,
                  **{GENERIC_OPTION + k: v for k, v in table.properties.items()}}
        if table.comment:
            params["comment"] = table.comment
        tbl = self._to_hms(Table(**{**table.__dict__, "properties": {}, "comment": None, "location": None,
                                    "format": TableFormat.TEXTFILE, "kind": TableKind.MANAGED}))
        tbl.parameters = params
        return tbl

    def _to_hms(self, table: Table) -> hms.Table:
        if is_generic(table.properties) and table.format is None:
            return self._to_hms_generic(table)
        fmt = table.format or TableFormat.PARQUET
        storage = STORAGE_FORMATS[fmt]
        params = dict(table.properties)
        if table.comment:
            params["comment"] = table.comment
        if table.kind is TableKind.EXTERNAL:
            params["EXTERNAL"] = "TRUE"
        serde_params = dict(storage.serde_params)
        if storage.spark_provider:
            params[spark_schema.PROVIDER] = storage.spark_provider
            params.update(spark_schema.schema_properties(table.columns, table.partition_keys))
            if table.location:
                serde_params["path"] = table.location
        sd = hms.StorageDescriptor(
            cols=_field_schemas(table.columns),
            location=table.location,
            inputFormat=storage.input_format,
            outputFormat=storage.output_format,
            compressed=False,
            numBuckets=-1,
            serdeInfo=hms.SerDeInfo(name=None, serializationLib=storage.serde, parameters=serde_params),
            bucketCols=[],
            sortCols=[],
            parameters={},
        )
        return hms.Table(
            tableName=table.name,
            dbName=table.database,
            owner=self._username or table.owner,
            createTime=int(time.time()),
            lastAccessTime=0,
            retention=0,
            sd=sd,
            partitionKeys=_field_schemas(table.partition_keys),
            parameters=params,
            tableType=EXTERNAL_TABLE if table.kind is TableKind.EXTERNAL else MANAGED_TABLE,
        )

    def create_table(self, table: Table, ignore_if_exists: bool = False) -> Table:
        what = f"table {self.name}.{table.database}.{table.name}"
        self.check_new_table(table)
        if table.kind is TableKind.VIEW:
            raise InvalidArgumentError(f"{what}: create views with create_view")
        if is_generic(table.properties):
            if not table.properties[CONNECTOR].strip():
                raise InvalidArgumentError(f"{what}: the connector option is empty")
            if table.location or table.kind is TableKind.EXTERNAL:
                raise InvalidArgumentError(f"{what}: a connector table has no location (its connector has the data)")
            table.format = None
        elif table.kind is TableKind.EXTERNAL and not table.location:
            raise InvalidArgumentError(f"{what}: an external table needs a location")
        with self._translate(f"database {self.name}.{table.database}", DatabaseNotFoundError):
            self._call("get_database", table.database)
        try:
            return self._create(table)
        except TableAlreadyExistsError:
            if not ignore_if_exists:
                raise
        return self.get_table(table.database, table.name)

    def _create(self, table: Table) -> Table:
        """Create a checked table in HMS (staging tables too)."""
        what = f"table {self.name}.{table.database}.{table.name}"
        tbl = self._to_hms(table)
        with self._translate(what, TableNotFoundError, TableAlreadyExistsError):
            self._call("create_table", tbl, idempotent=False)
        stored = self._raw_table(table.database, table.name)
        if table.format is not None and STORAGE_FORMATS[table.format].spark_provider and not table.location:
            # Spark finds a data source table's files through the `path` serde
            # parameter; HMS chose the location only now.
            stored.sd.serdeInfo.parameters = {**(stored.sd.serdeInfo.parameters or {}), "path": stored.sd.location}
            with self._translate(what, TableNotFoundError):
                self._call("alter_table", table.database, table.name, stored, idempotent=False)
        return self._to_table(stored)

    def alter_table(self, database: str, name: str, update: TableUpdate) -> Table:
        what = f"table {self.name}.{database}.{name}"
        reserved = sorted(k for k in [*update.set_properties, *update.unset_properties]
                          if k.startswith(RESERVED_PREFIXES))
        if reserved:
            raise InvalidArgumentError(f"{what}: properties {reserved} are catalogd's own (a dynamic table's "
                                       "definition and state, or a commit's marks): change them through catalogd")
        # A commit onto this table reads it and writes it back whole: never interleave with one.
        with self.stager.target_lock(database, name):
            return self._alter_table(database, name, update, what)

    def _alter_table(self, database: str, name: str, update: TableUpdate, what: str) -> Table:
        tbl = self._raw_table(database, name)
        if tbl.tableType == VIRTUAL_VIEW:
            raise InvalidArgumentError(f"{what} is a view; alter it with alter_view")
        current = self._to_table(tbl)
        existing = {c.name for c in [*current.columns, *current.partition_keys]}
        params = dict(tbl.parameters or {})
        if update.add_columns:
            added = []
            for col in update.add_columns:
                if col.name.lower() in existing:
                    raise InvalidArgumentError(f"{what}: column {col.name!r} already exists")
                existing.add(col.name.lower())
                added.append(Column(col.name.lower(), parse_type(col.type), col.comment))
            tbl.sd.cols = [*(tbl.sd.cols or []), *_field_schemas(added)]
            if spark_schema.PROVIDER in params and spark_schema.has_schema(params):
                params = {k: v for k, v in params.items() if not spark_schema.is_schema_key(k)}
                params.update(spark_schema.schema_properties([*current.columns, *added], current.partition_keys))
        if update.comment is not None:
            params["comment"] = update.comment
        prefix = GENERIC_OPTION if params.get(GENERIC) == "true" else ""
        if prefix and CONNECTOR in update.unset_properties:
            raise InvalidArgumentError(f"{what}: a connector table keeps its connector option")
        params.update({prefix + k: v for k, v in update.set_properties.items()})
        for key in update.unset_properties:
            params.pop(prefix + key, None)
        tbl.parameters = params
        # CASCADE: partitions get the new columns too, as Hive's ALTER ... CASCADE does.
        context = hms.EnvironmentContext({"CASCADE": "true"} if update.add_columns and tbl.partitionKeys else {})
        with self._translate(what, TableNotFoundError):
            self._call("alter_table_with_environment_context", database, name, tbl, context, idempotent=False)
        return self.get_table(database, name)

    def rename_table(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        what = f"table {self.name}.{database}.{name}"
        try:
            tbl = self._raw_table(database, name)
        except TableNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        if is_stage_table(new_name) or is_stage_table(name):
            raise InvalidArgumentError(f"{what}: staging tables cannot be renamed, nor tables renamed to one")
        if self.table_exists(database, new_name):
            raise TableAlreadyExistsError(f"table {self.name}.{database}.{new_name} already exists")
        tbl.tableName = new_name
        with self._translate(what, TableNotFoundError, TableAlreadyExistsError):
            self._call("alter_table", database, name, tbl, idempotent=False)
            serde = tbl.sd.serdeInfo if tbl.sd else None
            if serde and serde.parameters and "path" in serde.parameters and tbl.tableType == MANAGED_TABLE:
                # HMS moved the files of the managed table; Spark's `path` must follow.
                moved = self._call("get_table", database, new_name)
                if moved.sd.serdeInfo.parameters.get("path") != moved.sd.location:
                    moved.sd.serdeInfo.parameters["path"] = moved.sd.location
                    self._call("alter_table", database, new_name, moved, idempotent=False)

    def drop_table(self, database: str, name: str, ignore_if_not_exists: bool = False, purge: bool = False) -> None:
        what = f"table {self.name}.{database}.{name}"
        try:
            with self._translate(what, TableNotFoundError):
                context = hms.EnvironmentContext({"ifPurge": "TRUE"} if purge else {})
                self._call("drop_table_with_environment_context", database, name, True, context, idempotent=False)
        except TableNotFoundError:
            if not ignore_if_not_exists:
                raise
            return
        self.stager.purge_retired_for(database, name)

    # ------------------------------------------------------------ table parameters

    def update_table_parameters(self, database: str, name: str, set: dict[str, str],
                                remove_prefixes: tuple[str, ...] = ()) -> dict[str, str]:
        what = f"table {self.name}.{database}.{name}"
        with self.stager.target_lock(database, name):
            tbl = self._raw_table(database, name)
            params = {k: v for k, v in (tbl.parameters or {}).items()
                      if not (remove_prefixes and k.startswith(remove_prefixes))}
            params.update(set)
            tbl.parameters = params
            with self._translate(what, TableNotFoundError):
                self._call("alter_table", database, name, tbl, idempotent=False)
            return params

    def tables_with_parameter(self, key: str) -> list[tuple[str, str, dict[str, str]]]:
        found = []
        with self._translate(f"catalog {self.name}"):
            databases = self._call("get_all_databases")
        for database in databases:
            try:
                with self._translate(f"database {self.name}.{database}", DatabaseNotFoundError):
                    names = [n for n in self._call("get_all_tables", database) if not is_stage_table(n)]
                    tables = self._call("get_table_objects_by_name", database, names) if names else []
            except DatabaseNotFoundError:
                continue  # dropped while we looked
            found += [(database, t.tableName, dict(t.parameters)) for t in tables if key in (t.parameters or {})]
        return found

    # ------------------------------------------------------------ functions
    # HMS knows JVM functions only: a Python one is kept as class "python:module:function"
    # (Spark never loads it; catalogd.spark.register_functions does). Scala classes are JVM
    # classes, stored and reported as java.

    def _to_hms_function(self, function: Function) -> hms.Function:
        cls = function.class_name.strip()
        if function.language is FunctionLanguage.PYTHON:
            cls = PYTHON_PREFIX + cls
        return hms.Function(
            functionName=function.name, dbName=function.database, className=cls,
            ownerName=self._username or function.owner, ownerType=hms.PrincipalType.USER,
            createTime=int(time.time()), functionType=hms.FunctionType.JAVA,
            resourceUris=[hms.ResourceUri(resourceType=_RESOURCE_TYPES[r.type], uri=r.uri)
                          for r in function.resources],
        )

    def _to_function(self, fn: hms.Function) -> Function:
        from catalogd.model import Resource

        cls = fn.className or ""
        language = FunctionLanguage.JAVA
        if cls.startswith(PYTHON_PREFIX):
            cls, language = cls[len(PYTHON_PREFIX):], FunctionLanguage.PYTHON
        return Function(
            name=fn.functionName, database=fn.dbName, catalog=self.name, class_name=cls, language=language,
            resources=[Resource(_RESOURCE_NAMES.get(r.resourceType, "file"), r.uri) for r in fn.resourceUris or []],
            owner=fn.ownerName, created=fn.createTime,
        )

    def list_functions(self, database: str) -> list[str]:
        with self._translate(f"database {self.name}.{database}", DatabaseNotFoundError):
            self._call("get_database", database)
            return sorted(self._call("get_functions", database, "*"))

    def get_function(self, database: str, name: str) -> Function:
        what = f"function {self.name}.{database}.{name}"
        with self._translate(what, FunctionNotFoundError):
            return self._to_function(self._call("get_function", database, name))

    def create_function(self, function: Function, ignore_if_exists: bool = False) -> Function:
        self.check_function(function)
        what = f"function {self.name}.{function.database}.{function.name}"
        with self._translate(f"database {self.name}.{function.database}", DatabaseNotFoundError):
            self._call("get_database", function.database)
        try:
            with self._translate(what, FunctionNotFoundError, FunctionAlreadyExistsError):
                self._call("create_function", self._to_hms_function(function), idempotent=False)
        except FunctionAlreadyExistsError:
            if not ignore_if_exists:
                raise
        return self.get_function(function.database, function.name)

    def alter_function(self, database: str, name: str, function: Function) -> Function:
        self.check_function(function)
        current = self.get_function(database, name)
        function.name, function.database = name, database
        new = self._to_hms_function(function)
        new.createTime = current.created
        what = f"function {self.name}.{database}.{name}"
        with self._translate(what, FunctionNotFoundError, FunctionAlreadyExistsError):
            if function.resources != current.resources:
                # HMS 2.3's alter_function keeps the old resource URIs: replace the function.
                self._call("drop_function", database, name, idempotent=False)
                self._call("create_function", new, idempotent=False)
            else:
                self._call("alter_function", database, name, new, idempotent=False)
        return self.get_function(database, name)

    def rename_function(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        try:
            current = self.get_function(database, name)
        except FunctionNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        try:
            self.get_function(database, new_name)
            raise FunctionAlreadyExistsError(f"function {self.name}.{database}.{new_name} already exists")
        except FunctionNotFoundError:
            pass
        new = self._to_hms_function(current)
        new.functionName, new.createTime = new_name, current.created
        with self._translate(f"function {self.name}.{database}.{name}", FunctionNotFoundError,
                             FunctionAlreadyExistsError):
            self._call("alter_function", database, name, new, idempotent=False)

    def drop_function(self, database: str, name: str, ignore_if_not_exists: bool = False) -> None:
        try:
            with self._translate(f"function {self.name}.{database}.{name}", FunctionNotFoundError):
                self._call("drop_function", database, name, idempotent=False)
        except FunctionNotFoundError:
            if not ignore_if_not_exists:
                raise

    # ------------------------------------------------------------ views

    def list_views(self, database: str) -> list[str]:
        with self._translate(f"database {self.name}.{database}", DatabaseNotFoundError):
            names = self._call("get_tables_by_type", database, "*", VIRTUAL_VIEW)
            if not names:
                self._call("get_database", database)
        return sorted(names)

    def _view_sd(self, columns: list[Column]) -> hms.StorageDescriptor:
        # What Hive itself stores for a view: the columns, no location, SequenceFile placeholders.
        return hms.StorageDescriptor(
            cols=_field_schemas(columns), location=None,
            inputFormat="org.apache.hadoop.mapred.SequenceFileInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
            compressed=False, numBuckets=-1,
            serdeInfo=hms.SerDeInfo(name=None, serializationLib=LAZY_SIMPLE_SERDE, parameters={}),
            bucketCols=[], sortCols=[], parameters={},
        )

    def create_view(self, view: Table, ignore_if_exists: bool = False) -> Table:
        self.check_new_view(view)
        what = f"view {self.name}.{view.database}.{view.name}"
        with self._translate(f"database {self.name}.{view.database}", DatabaseNotFoundError):
            self._call("get_database", view.database)
        params = dict(view.properties)
        if view.comment:
            params["comment"] = view.comment
        tbl = hms.Table(
            tableName=view.name, dbName=view.database, owner=self._username or view.owner,
            createTime=int(time.time()), lastAccessTime=0, retention=0, sd=self._view_sd(view.columns),
            partitionKeys=[], parameters=params, viewOriginalText=view.view_text,
            viewExpandedText=view.view_expanded_text, tableType=VIRTUAL_VIEW,
        )
        try:
            with self._translate(what, ViewNotFoundError, ViewAlreadyExistsError):
                self._call("create_table", tbl, idempotent=False)
        except ViewAlreadyExistsError:
            existing = self._raw_table(view.database, view.name)
            if existing.tableType != VIRTUAL_VIEW:
                raise ViewAlreadyExistsError(
                    f"{self.name}.{view.database}.{view.name} already exists and is a table, not a view"
                ) from None
            if not ignore_if_exists:
                raise
        return self.get_view(view.database, view.name)

    def alter_view(self, database: str, name: str, update: ViewUpdate) -> Table:
        what = f"view {self.name}.{database}.{name}"
        self.get_view(database, name)
        tbl = self._raw_table(database, name)
        if update.expanded_text is not None and update.columns is not None and update.query is not None:
            tbl.viewOriginalText = update.query
            tbl.viewExpandedText = update.expanded_text
            tbl.sd.cols = _field_schemas(update.columns)
        params = dict(tbl.parameters or {})
        if update.comment is not None:
            params["comment"] = update.comment
        params.update(update.set_properties)
        for key in update.unset_properties:
            params.pop(key, None)
        tbl.parameters = params
        with self._translate(what, ViewNotFoundError):
            self._call("alter_table", database, name, tbl, idempotent=False)
        return self.get_view(database, name)

    # ------------------------------------------------------------ partitions

    def _partitioned(self, database: str, table: str) -> hms.Table:
        tbl = self._raw_table(database, table)
        if not tbl.partitionKeys:
            raise InvalidArgumentError(f"table {self.name}.{database}.{table} is not partitioned")
        return tbl

    def _values(self, tbl: hms.Table, spec: dict[str, str]) -> list[str]:
        """The spec's values in partition-key order; it must name every key, and nothing else."""
        keys = [k.name.lower() for k in tbl.partitionKeys]
        given = {k.lower(): v for k, v in spec.items()}
        if sorted(given) != sorted(keys):
            raise InvalidArgumentError(
                f"table {self.name}.{tbl.dbName}.{tbl.tableName}: a partition spec names every partition key "
                f"{keys}, got {sorted(given)}"
            )
        values = [str(given[k]) for k in keys]
        for key, value in zip(keys, values, strict=True):
            if value == "" or "/" in value:
                raise InvalidArgumentError(f"partition value {key}={value!r}: empty or containing '/'")
        return values

    def _to_partition(self, tbl: hms.Table, part: hms.Partition) -> Partition:
        return Partition(
            values=list(part.values),
            keys=[k.name for k in tbl.partitionKeys],
            location=part.sd.location if part.sd else None,
            properties={k: v for k, v in (part.parameters or {}).items() if not k.startswith(HIDDEN_PREFIXES)},
            created=part.createTime,
            statistics=_statistics(part.parameters),
        )

    def list_partitions(self, database: str, table: str, filter: str | None = None) -> list[Partition]:
        tbl = self._partitioned(database, table)
        what = f"table {self.name}.{database}.{table}"
        with self._translate(what, TableNotFoundError):
            if filter and filter.strip():
                try:
                    parts = self._call("get_partitions_by_filter", database, table, filter.strip(), -1)
                except hms.MetaException as e:
                    raise InvalidArgumentError(f"{what}: bad partition filter {filter!r}: {e.message}") from e
            else:
                parts = self._call("get_partitions", database, table, -1)
        return sorted((self._to_partition(tbl, p) for p in parts), key=lambda p: p.values)

    def get_partition(self, database: str, table: str, spec: dict[str, str]) -> Partition:
        tbl = self._partitioned(database, table)
        values = self._values(tbl, spec)
        name = "/".join(f"{k.name}={v}" for k, v in zip(tbl.partitionKeys, values, strict=True))
        with self._translate(f"partition {name} of table {self.name}.{database}.{table}", PartitionNotFoundError):
            return self._to_partition(tbl, self._call("get_partition", database, table, values))

    def add_partition(self, database: str, table: str, spec: dict[str, str], location: str | None = None,
                      ignore_if_exists: bool = False) -> Partition:
        tbl = self._partitioned(database, table)
        values = self._values(tbl, spec)
        sd = copy.deepcopy(tbl.sd)
        sd.location = location
        part = hms.Partition(values=values, dbName=database, tableName=table, createTime=int(time.time()),
                             lastAccessTime=0, sd=sd, parameters={})
        name = "/".join(f"{k.name}={v}" for k, v in zip(tbl.partitionKeys, values, strict=True))
        what = f"partition {name} of table {self.name}.{database}.{table}"
        try:
            with self._translate(what, PartitionNotFoundError, PartitionAlreadyExistsError):
                self._call("add_partition", part, idempotent=False)
        except PartitionAlreadyExistsError:
            if not ignore_if_exists:
                raise
        return self.get_partition(database, table, spec)

    def drop_partition(self, database: str, table: str, spec: dict[str, str], ignore_if_not_exists: bool = False,
                       purge: bool = False) -> None:
        tbl = self._partitioned(database, table)
        values = self._values(tbl, spec)
        name = "/".join(f"{k.name}={v}" for k, v in zip(tbl.partitionKeys, values, strict=True))
        what = f"partition {name} of table {self.name}.{database}.{table}"
        try:
            with self._translate(what, PartitionNotFoundError):
                context = hms.EnvironmentContext({"ifPurge": "TRUE"} if purge else {})
                self._call("drop_partition_with_environment_context", database, table, values, True, context,
                           idempotent=False)
        except PartitionNotFoundError:
            if not ignore_if_not_exists:
                raise

    # ------------------------------------------------------------ stages

    def begin_stage(self, request: StageRequest) -> Stage:
        return self.stager.begin(request)

    def get_stage(self, database: str, key: str) -> Stage:
        return self.stager.get(database, key)

    def list_stages(self) -> list[Stage]:
        return self.stager.list()

    def heartbeat_stage(self, database: str, key: str, lease: float | None = None) -> Stage:
        return self.stager.heartbeat(database, key, lease)

    def commit_stage(self, database: str, key: str) -> Stage:
        return self.stager.commit(database, key)

    def abort_stage(self, database: str, key: str, writer_stopped: bool = False) -> Stage:
        reason = "aborted by its writer" if writer_stopped else "aborted on request"
        return self.stager.abort(database, key, reason, tombstone=not writer_stopped)

    def janitor_pass(self, startup: bool = False) -> int:
        return self.stager.janitor_pass(startup)
