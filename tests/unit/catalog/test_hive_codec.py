"""The HMS codec (catalogd.catalog.hive_codec): model objects to HMS Thrift types and back, no metastore."""

from __future__ import annotations

import pytest

from catalogd.catalog import hive_codec as codec
from catalogd.catalog import spark_schema
from catalogd.hive_idl import ttypes as hms
from catalogd.model import (
    Column,
    Database,
    Function,
    FunctionLanguage,
    Resource,
    Statistics,
    Table,
    TableFormat,
    TableKind,
)

COLUMNS = [Column("id", "bigint", "key"), Column("tags", "array<string>")]


def stored(tbl: hms.Table, location: str = "file:/w/db.db/t") -> hms.Table:
    """What HMS gives back: the location it chose filled in."""
    tbl.sd.location = tbl.sd.location or location
    return tbl


@pytest.mark.parametrize("fmt", list(TableFormat))
def test_every_format_round_trips(fmt: TableFormat) -> None:
    table = Table(name="t", database="db", columns=COLUMNS, partition_keys=[Column("ds", "string")], format=fmt,
                  comment="c", properties={"k": "v"})
    tbl = codec.to_hms_table(table, username="etl")
    assert tbl.tableType == codec.MANAGED_TABLE and tbl.owner == "etl"
    assert tbl.sd.serdeInfo.serializationLib == codec.STORAGE_FORMATS[fmt].serde
    back = codec.to_table("main", stored(tbl))
    assert (back.format, back.columns, back.partition_keys) == (fmt, COLUMNS, [Column("ds", "string")])
    assert (back.comment, back.properties, back.kind, back.catalog) == ("c", {"k": "v"}, TableKind.MANAGED, "main")
    # Spark's own parameters stay out of the properties (the format tells the provider).
    assert not any(k.startswith(codec.HIDDEN_PREFIXES) for k in back.properties)


def test_data_source_formats_need_spark_path() -> None:
    csv = Table(name="t", database="db", columns=COLUMNS, format=TableFormat.CSV)
    assert codec.needs_spark_path(csv)
    assert not codec.needs_spark_path(Table(name="t", database="db", columns=COLUMNS, format=TableFormat.PARQUET))
    assert not codec.needs_spark_path(Table(name="t", database="db", columns=COLUMNS, format=TableFormat.CSV,
                                            location="file:/x"))
    tbl = codec.to_hms_table(csv, None)
    assert tbl.parameters[spark_schema.PROVIDER] == "csv" and codec.spark_path(tbl) is None
    codec.set_spark_path(tbl, "file:/w/db.db/t")
    assert codec.spark_path(tbl) == "file:/w/db.db/t"
    assert tbl.sd.serdeInfo.parameters["field.delim"] == ","


def test_external_tables() -> None:
    table = Table(name="t", database="db", columns=COLUMNS, kind=TableKind.EXTERNAL, location="file:/data/t")
    tbl = codec.to_hms_table(table, None)
    assert tbl.tableType == codec.EXTERNAL_TABLE and tbl.parameters["EXTERNAL"] == "TRUE"
    back = codec.to_table("main", tbl)
    assert (back.kind, back.location, back.properties) == (TableKind.EXTERNAL, "file:/data/t", {})


def test_generic_tables_keep_their_options_apart() -> None:
    options = {"connector": "kafka", "topic": "orders", "spark.sql.sources.provider": "mine"}
    table = Table(name="t", database="db", columns=COLUMNS, format=None, properties=options, comment="c")
    tbl = codec.to_hms_table(table, None)
    assert tbl.parameters[codec.GENERIC] == "true"
    assert tbl.parameters[spark_schema.PROVIDER] == "catalogd.generic.kafka"
    back = codec.to_table("main", tbl)
    assert (back.properties, back.format, back.location, back.comment) == (options, None, None, "c")


def test_views() -> None:
    view = Table(name="v", database="db", columns=COLUMNS, kind=TableKind.VIEW, format=None,
                 view_text="SELECT 1", view_expanded_text="SELECT 1 AS `1`", properties={"a": "b"})
    tbl = codec.to_hms_view(view, "etl")
    assert tbl.tableType == codec.VIRTUAL_VIEW and tbl.sd.location is None
    back = codec.to_table("main", tbl)
    assert (back.kind, back.format, back.view_text, back.view_expanded_text) == (
        TableKind.VIEW, None, "SELECT 1", "SELECT 1 AS `1`")


def test_format_of_tables_written_by_others() -> None:
    def table(serde: str, input_format: str = codec.TEXT_INPUT, **params: str) -> hms.Table:
        return hms.Table(parameters=params, sd=hms.StorageDescriptor(
            inputFormat=input_format, serdeInfo=hms.SerDeInfo(serializationLib=serde)))

    assert codec.format_of(table("org.apache.hadoop.hive.serde2.OpenCSVSerde")) is TableFormat.CSV
    assert codec.format_of(table("org.openx.data.jsonserde.JsonSerDe")) is TableFormat.JSON
    assert codec.format_of(table(codec.LAZY_SIMPLE_SERDE)) is TableFormat.TEXTFILE
    assert codec.format_of(table(codec.LAZY_SIMPLE_SERDE, "org.apache.hadoop.mapred.SequenceFileInputFormat")) is None
    assert codec.format_of(table("x", **{spark_schema.PROVIDER: "com.databricks.spark.avro"})) is TableFormat.AVRO
    assert codec.format_of(table("unknown")) is None


def test_statistics_from_hive_or_spark_keys() -> None:
    assert codec.statistics({"numRows": "5", "totalSize": "-1", "spark.sql.statistics.totalSize": "7",
                             "numFiles": "x"}) == Statistics(row_count=5, total_size=7, file_count=None)
    assert codec.statistics(None) == Statistics()


def test_databases() -> None:
    db = codec.to_hms_database(Database("sales", comment="c", location="file:/s", properties={"a": "1"}), "etl")
    assert (db.ownerName, db.ownerType) == ("etl", hms.PrincipalType.USER)
    assert codec.to_hms_database(Database("sales"), None).ownerType is None
    back = codec.to_database("main", db)
    assert (back.name, back.catalog, back.comment, back.location, back.properties, back.owner) == (
        "sales", "main", "c", "file:/s", {"a": "1"}, "etl")


@pytest.mark.parametrize("language", [FunctionLanguage.JAVA, FunctionLanguage.PYTHON])
def test_functions_round_trip(language: FunctionLanguage) -> None:
    fn = Function(name="f", database="db", class_name=" com.x.F ", language=language,
                  resources=[Resource("jar", "file:/a.jar"), Resource("archive", "file:/b.zip")], owner="me")
    back = codec.to_function("main", codec.to_hms_function(fn, None))
    assert (back.class_name, back.language, back.resources, back.owner, back.catalog) == (
        "com.x.F", language, fn.resources, "me", "main")


def test_partition_names_and_contexts() -> None:
    keys = [hms.FieldSchema("ds", "string"), hms.FieldSchema("h", "int")]
    assert codec.partition_name(keys, ["2024-01-01", "3"]) == "ds=2024-01-01/h=3"
    assert codec.purge_context(True).properties == {"ifPurge": "TRUE"}
    assert codec.purge_context(False).properties == {}
    assert codec.cascade_context(True).properties == {"CASCADE": "true"}
    assert codec.same_columns([hms.FieldSchema("DS", "STRING")], [hms.FieldSchema("ds", "string")])
    assert not codec.same_columns(keys, keys[:1])


def test_reserved_prefixes_cover_what_catalogd_writes() -> None:
    for key in ("catalogd.dt.query", "catalogd.stage.id", "catalogd.last-commit", "catalogd.recent-commits"):
        assert key.startswith(codec.RESERVED_PREFIXES)
    assert not "catalogd.option.x".startswith(codec.RESERVED_PREFIXES)
