"""The HMS codec: catalogd model objects <-> Hive Metastore Thrift types, with no I/O.

Table types, storage formats, the parameters HMS, Spark and catalogd keep on a
table, and how each model object is written to and read from HMS are defined
here once; the hive catalog and its stager both encode and decode through this.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from catalogd.catalog import spark_schema
from catalogd.catalog.base import DYNAMIC_TABLE_PREFIX
from catalogd.hive_idl import ttypes as hms
from catalogd.hive_types import parse_type
from catalogd.model import (
    Column,
    Database,
    Function,
    FunctionLanguage,
    Partition,
    Resource,
    Statistics,
    Table,
    TableFormat,
    TableKind,
)

# ---------------------------------------------------------------------------- table types

MANAGED_TABLE = "MANAGED_TABLE"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
VIRTUAL_VIEW = "VIRTUAL_VIEW"
_KINDS = {EXTERNAL_TABLE: TableKind.EXTERNAL, VIRTUAL_VIEW: TableKind.VIEW}
#: ``table_type`` of an Iceberg view as Iceberg's ``HiveCatalog`` stores it (``VIRTUAL_VIEW``).
ICEBERG_VIEW = "ICEBERG-VIEW"


def is_iceberg_view(tbl: Any) -> bool:
    """An Iceberg view (Iceberg's ``HiveOperationsBase.isValidIcebergView``): unlike a Hive or
    Spark view it has a directory, its location, where its metadata files lie."""
    return str(getattr(tbl, "tableType", "") or "").upper() == VIRTUAL_VIEW \
        and str((getattr(tbl, "parameters", None) or {}).get("table_type", "")).upper() == ICEBERG_VIEW


def has_no_directory(tbl: Any) -> bool:
    """A view other than an Iceberg view: no directory of its own to claim or keep clear."""
    return getattr(tbl, "tableType", None) == VIRTUAL_VIEW and not is_iceberg_view(tbl)

# ---------------------------------------------------------------------------- parameters

#: Parameters HMS or Spark keep for themselves; hidden from ``properties``
#: (``spark.sql.sources.schema`` itself and its ``.part.N`` etc. keys, and the
#: data source provider, which ``format`` already tells).
HIDDEN_PREFIXES = (spark_schema.SCHEMA_PREFIX, spark_schema.PROVIDER)
#: A dynamic table's definition and state (written by catalogd.dynamic).
DYNAMIC_PREFIX = DYNAMIC_TABLE_PREFIX
#: The parameter every dynamic table has (``catalogd.dynamic.store.FRESHNESS``): the location
#: index notes the tables that carry it, so that a restart finds them without reading every table.
DYNAMIC_FRESHNESS = DYNAMIC_PREFIX + "freshness"
#: A stage's own facts, on its staging table (written by the stager).
STAGE_PREFIX = "catalogd.stage."
#: On a committed target: the id of the stage that wrote it ...
LAST_COMMIT = "catalogd.last-commit"
#: ... and the last few, ``id=PURPOSE`` comma-separated, newest first.
RECENT_COMMITS = "catalogd.recent-commits"
#: Table properties only catalogd itself writes.
RESERVED_PREFIXES = (DYNAMIC_PREFIX, STAGE_PREFIX, LAST_COMMIT, RECENT_COMMITS)

#: Generic (connector) tables, FLIP-30: the marker, and each option under a prefix so
#: the options round-trip exactly and never mix with HMS's or Spark's own parameters.
GENERIC = "catalogd.generic"
GENERIC_OPTION = "catalogd.option."
CONNECTOR = "connector"

#: A Python function is kept as class ``python:module:function`` (HMS knows JVM functions only).
PYTHON_PREFIX = "python:"


def is_generic(properties: dict[str, str]) -> bool:
    return CONNECTOR in properties


# ---------------------------------------------------------------------------- storage formats

LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"
TEXT_INPUT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"


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


def format_of(tbl: hms.Table) -> TableFormat | None:
    """The storage format of an HMS table: Spark's provider first, else the serde."""
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


def needs_spark_path(table: Table) -> bool:
    """Whether Spark finds this new table's files only through a ``path`` serde parameter
    that must name the location HMS chooses when it creates the table."""
    return table.format is not None and bool(STORAGE_FORMATS[table.format].spark_provider) and not table.location


def spark_path(tbl: hms.Table) -> str | None:
    """The ``path`` serde parameter Spark reads a data source table from, if it has one."""
    serde = tbl.sd.serdeInfo if tbl.sd else None
    if serde and serde.parameters and "path" in serde.parameters:
        return str(serde.parameters["path"])
    return None


def set_spark_path(tbl: hms.Table, location: str) -> None:
    serde = tbl.sd.serdeInfo
    serde.parameters = {**(serde.parameters or {}), "path": location}


# ---------------------------------------------------------------------------- columns, statistics


def statistics(params: dict[str, str] | None) -> Statistics:
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


def columns(schemas: list[hms.FieldSchema] | None) -> list[Column]:
    return [Column(f.name, f.type, f.comment or None) for f in schemas or []]


def field_schemas(cols: list[Column]) -> list[hms.FieldSchema]:
    return [hms.FieldSchema(name=c.name.lower(), type=parse_type(c.type), comment=c.comment) for c in cols]


def same_columns(a: list[hms.FieldSchema] | None, b: list[hms.FieldSchema] | None) -> bool:
    return [(f.name.lower(), f.type.lower()) for f in a or []] == [(f.name.lower(), f.type.lower()) for f in b or []]


def partition_name(keys: list[hms.FieldSchema], values: list[str]) -> str:
    """``ds=2024-01-01/h=3``: HMS's name of the partition with these values."""
    return "/".join(f"{k.name}={v}" for k, v in zip(keys, values, strict=True))


def purge_context(purge: bool) -> hms.EnvironmentContext:
    """The context of a drop: with ``purge`` the files skip the trash."""
    return hms.EnvironmentContext({"ifPurge": "TRUE"} if purge else {})


def cascade_context(cascade: bool) -> hms.EnvironmentContext:
    """The context of an alter_table: with ``cascade`` the partitions get the new columns too."""
    return hms.EnvironmentContext({"CASCADE": "true"} if cascade else {})


# ---------------------------------------------------------------------------- databases


def to_database(catalog: str, db: hms.Database) -> Database:
    return Database(
        name=db.name,
        catalog=catalog,
        comment=db.description or None,
        location=db.locationUri,
        properties=dict(db.parameters or {}),
        owner=db.ownerName,
    )


def to_hms_database(database: Database, username: str | None) -> hms.Database:
    return hms.Database(
        name=database.name,
        description=database.comment,
        locationUri=database.location,
        parameters=dict(database.properties),
        ownerName=username,
        ownerType=hms.PrincipalType.USER if username else None,
    )


# ---------------------------------------------------------------------------- tables and views


def to_table(catalog: str, tbl: hms.Table) -> Table:
    """A table or view of the catalog named ``catalog`` as HMS stores it."""
    params = dict(tbl.parameters or {})
    cols, partition_keys = columns(tbl.sd.cols if tbl.sd else None), columns(tbl.partitionKeys)
    from_spark = spark_schema.columns_from_properties(params) if spark_schema.PROVIDER in params else None
    if from_spark is not None:
        # A data source table: Spark's own schema is the true one (the storage
        # descriptor may hold a placeholder like `col array<string>`).
        cols, partition_keys = from_spark
    location = tbl.sd.location if tbl.sd else None
    if not location and tbl.sd and tbl.sd.serdeInfo and tbl.sd.serdeInfo.parameters:
        location = tbl.sd.serdeInfo.parameters.get("path")
    kind = _KINDS.get(tbl.tableType or "", TableKind.MANAGED)
    if params.get(GENERIC) == "true":
        options = {k[len(GENERIC_OPTION):]: v for k, v in params.items() if k.startswith(GENERIC_OPTION)}
        return Table(
            name=tbl.tableName, database=tbl.dbName, catalog=catalog, columns=columns(tbl.sd.cols),
            partition_keys=columns(tbl.partitionKeys), format=None, location=None, kind=kind,
            comment=params.get("comment"), properties=options, owner=tbl.owner, created=tbl.createTime,
        )
    comment = params.pop("comment", None)
    params.pop("EXTERNAL", None)
    visible = {k: v for k, v in params.items() if not k.startswith(HIDDEN_PREFIXES)}
    return Table(
        name=tbl.tableName,
        database=tbl.dbName,
        catalog=catalog,
        columns=cols,
        partition_keys=partition_keys,
        format=None if kind is TableKind.VIEW else format_of(tbl),
        location=location,
        kind=kind,
        comment=comment,
        properties=visible,
        owner=tbl.owner,
        created=tbl.createTime,
        statistics=statistics(tbl.parameters),
        view_text=tbl.viewOriginalText if kind is TableKind.VIEW else None,
        view_expanded_text=tbl.viewExpandedText if kind is TableKind.VIEW else None,
    )


def _to_hms_generic(table: Table, username: str | None) -> hms.Table:
    """A connector table: options kept under a prefix; marked so that neither Spark (an
    unknown data source) nor Hive (an unknown storage handler) reads it as Hive files."""
    connector = table.properties[CONNECTOR]
    marker = f"catalogd.generic.{connector}"
    params = {GENERIC: "true", spark_schema.PROVIDER: marker, "storage_handler": marker,
              **{GENERIC_OPTION + k: v for k, v in table.properties.items()}}
    if table.comment:
        params["comment"] = table.comment
    tbl = to_hms_table(Table(**{**table.__dict__, "properties": {}, "comment": None, "location": None,
                                "format": TableFormat.TEXTFILE, "kind": TableKind.MANAGED}), username)
    tbl.parameters = params
    return tbl


def to_hms_table(table: Table, username: str | None) -> hms.Table:
    """A managed, external or generic table as HMS stores it (views: ``to_hms_view``)."""
    if is_generic(table.properties) and table.format is None:
        return _to_hms_generic(table, username)
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
        cols=field_schemas(table.columns),
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
        owner=username or table.owner,
        createTime=int(time.time()),
        lastAccessTime=0,
        retention=0,
        sd=sd,
        partitionKeys=field_schemas(table.partition_keys),
        parameters=params,
        tableType=EXTERNAL_TABLE if table.kind is TableKind.EXTERNAL else MANAGED_TABLE,
    )


def view_sd(cols: list[Column]) -> hms.StorageDescriptor:
    # What Hive itself stores for a view: the columns, no location, SequenceFile placeholders.
    return hms.StorageDescriptor(
        cols=field_schemas(cols), location=None,
        inputFormat="org.apache.hadoop.mapred.SequenceFileInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
        compressed=False, numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name=None, serializationLib=LAZY_SIMPLE_SERDE, parameters={}),
        bucketCols=[], sortCols=[], parameters={},
    )


def to_hms_view(view: Table, username: str | None) -> hms.Table:
    """A view as Hive stores it: VIRTUAL_VIEW with its original and expanded text (Spark reads both)."""
    params = dict(view.properties)
    if view.comment:
        params["comment"] = view.comment
    return hms.Table(
        tableName=view.name, dbName=view.database, owner=username or view.owner,
        createTime=int(time.time()), lastAccessTime=0, retention=0, sd=view_sd(view.columns),
        partitionKeys=[], parameters=params, viewOriginalText=view.view_text,
        viewExpandedText=view.view_expanded_text, tableType=VIRTUAL_VIEW,
    )


# ---------------------------------------------------------------------------- partitions


def to_partition(tbl: hms.Table, part: hms.Partition) -> Partition:
    return Partition(
        values=list(part.values),
        keys=[k.name for k in tbl.partitionKeys],
        location=part.sd.location if part.sd else None,
        properties={k: v for k, v in (part.parameters or {}).items() if not k.startswith(HIDDEN_PREFIXES)},
        created=part.createTime,
        statistics=statistics(part.parameters),
    )


# ---------------------------------------------------------------------------- functions
# A Python function is kept as class "python:module:function" (Spark never loads it;
# catalogd.spark.register_functions does). Scala classes are JVM classes, stored and
# reported as java.

_RESOURCE_TYPES = {"jar": hms.ResourceType.JAR, "file": hms.ResourceType.FILE, "archive": hms.ResourceType.ARCHIVE}
_RESOURCE_NAMES = {v: k for k, v in _RESOURCE_TYPES.items()}


def to_hms_function(function: Function, username: str | None) -> hms.Function:
    cls = function.class_name.strip()
    if function.language is FunctionLanguage.PYTHON:
        cls = PYTHON_PREFIX + cls
    return hms.Function(
        functionName=function.name, dbName=function.database, className=cls,
        ownerName=username or function.owner, ownerType=hms.PrincipalType.USER,
        createTime=int(time.time()), functionType=hms.FunctionType.JAVA,
        resourceUris=[hms.ResourceUri(resourceType=_RESOURCE_TYPES[r.type], uri=r.uri)
                      for r in function.resources],
    )


def to_function(catalog: str, fn: hms.Function) -> Function:
    cls = fn.className or ""
    language = FunctionLanguage.JAVA
    if cls.startswith(PYTHON_PREFIX):
        cls, language = cls[len(PYTHON_PREFIX):], FunctionLanguage.PYTHON
    return Function(
        name=fn.functionName, database=fn.dbName, catalog=catalog, class_name=cls, language=language,
        resources=[Resource(_RESOURCE_NAMES.get(r.resourceType, "file"), r.uri) for r in fn.resourceUris or []],
        owner=fn.ownerName, created=fn.createTime,
    )
