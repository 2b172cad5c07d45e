"""Tests for catalogd.catalog.spark_schema: Hive types <-> Spark's JSON schema in table properties."""

from __future__ import annotations

import json

import pytest

from catalogd.catalog.spark_schema import (
    MAX_PART_LENGTH,
    SCHEMA_PREFIX,
    columns_from_properties,
    hive_to_spark,
    schema_properties,
    spark_to_hive,
)
from catalogd.errors import InvalidArgumentError
from catalogd.hive_types import parse_type
from catalogd.model import Column

#: Hive types in their normal spelling; each must survive hive -> spark -> hive unchanged.
ROUND_TRIP_TYPES = [
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "float",
    "double",
    "boolean",
    "string",
    "binary",
    "date",
    "timestamp",
    "decimal(10,0)",
    "decimal(38,18)",
    "decimal(1,1)",
    "varchar(1)",
    "varchar(65535)",
    "char(10)",
    "array<int>",
    "array<array<string>>",
    "array<decimal(10,2)>",
    "map<string,int>",
    "map<int,array<bigint>>",
    "map<string,map<string,double>>",
    "struct<a:int>",
    "struct<a:int,b:string,c:decimal(5,2)>",
    "struct<a:struct<b:struct<c:array<map<string,date>>>>>",
    "array<struct<sku:string,qty:int,price:decimal(10,2)>>",
    "map<string,struct<x:varchar(3),y:char(2),z:timestamp>>",
]

#: Spellings that normalize first (synonyms, spaces, case); the round trip gives the normal form.
NORMALIZING_TYPES = [
    ("INTEGER", "int"),
    ("long", "bigint"),
    ("short", "smallint"),
    ("byte", "tinyint"),
    ("bool", "boolean"),
    ("real", "float"),
    ("double precision", "double"),
    ("decimal", "decimal(10,0)"),
    ("numeric(12, 3)", "decimal(12,3)"),
    ("ARRAY< Map<STRING, Long> >", "array<map<string,bigint>>"),
    ("struct<A:INT, B:array<short>>", "struct<a:int,b:array<smallint>>"),
]


@pytest.mark.parametrize("hive_type", ROUND_TRIP_TYPES)
def test_round_trip_keeps_normal_types(hive_type: str) -> None:
    spark = hive_to_spark(hive_type)
    # What Spark keeps in HMS is JSON: the round trip must survive serialization too.
    assert spark_to_hive(json.loads(json.dumps(spark))) == hive_type


@pytest.mark.parametrize(("text", "normal"), NORMALIZING_TYPES)
def test_round_trip_gives_the_normal_form(text: str, normal: str) -> None:
    assert spark_to_hive(hive_to_spark(text)) == normal == parse_type(text)


def test_round_trip_of_every_type_together() -> None:
    """All the types as one struct: nesting them all at once must not lose anything either."""
    fields = ",".join(f"f{i}:{t}" for i, t in enumerate(ROUND_TRIP_TYPES))
    struct = f"struct<{fields}>"
    assert spark_to_hive(hive_to_spark(struct)) == struct


@pytest.mark.parametrize(
    ("hive_type", "spark"),
    [
        ("int", "integer"),
        ("bigint", "long"),
        ("tinyint", "byte"),
        ("smallint", "short"),
        ("decimal(10,2)", "decimal(10,2)"),
        ("array<string>", {"type": "array", "elementType": "string", "containsNull": True}),
        (
            "map<string,int>",
            {"type": "map", "keyType": "string", "valueType": "integer", "valueContainsNull": True},
        ),
        (
            "struct<a:int>",
            {"type": "struct", "fields": [{"name": "a", "type": "integer", "nullable": True, "metadata": {}}]},
        ),
    ],
)
def test_hive_to_spark_matches_sparks_json(hive_type: str, spark: object) -> None:
    assert hive_to_spark(hive_type) == spark


@pytest.mark.parametrize(
    ("spark", "hive"),
    [
        ("timestamp_ntz", "timestamp"),
        ("void", "string"),
        ("decimal", "decimal(10,0)"),
        ("interval day to second", "string"),
        ({"type": "udt", "class": "x.Point", "sqlType": {"type": "array", "elementType": "double",
                                                          "containsNull": False}}, "array<double>"),
    ],
)
def test_spark_only_types_map_to_the_nearest_hive_type(spark: object, hive: str) -> None:
    assert spark_to_hive(spark) == hive


@pytest.mark.parametrize("spark", ["variant", "calendar", {"type": "weird"}, {"notype": 1}])
def test_spark_types_without_hive_equivalent(spark: object) -> None:
    with pytest.raises(InvalidArgumentError, match="no Hive equivalent"):
        spark_to_hive(spark)


@pytest.mark.parametrize("hive_type", ["uniontype<int,string>", "array<uniontype<int,string>>"])
def test_hive_types_without_spark_equivalent(hive_type: str) -> None:
    with pytest.raises(InvalidArgumentError, match="no Spark equivalent"):
        hive_to_spark(hive_type)


def test_hive_to_spark_rejects_invalid_types() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown type"):
        hive_to_spark("strng")


# --------------------------------------------------------------------------- table properties


def wide_columns(count: int, comment_length: int = 0) -> list[Column]:
    types = ROUND_TRIP_TYPES
    return [
        Column(f"column_{i:04d}", types[i % len(types)], ("c" * comment_length + str(i)) if comment_length else None)
        for i in range(count)
    ]


def test_schema_properties_of_a_small_table() -> None:
    columns = [Column("id", "bigint", "the key"), Column("tags", "array<string>")]
    props = schema_properties(columns, [])
    assert props[f"{SCHEMA_PREFIX}.numParts"] == "1"
    schema = json.loads(props[f"{SCHEMA_PREFIX}.part.0"])
    assert schema == {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {"comment": "the key"}},
            {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
             "nullable": True, "metadata": {}},
        ],
    }
    assert f"{SCHEMA_PREFIX}.numPartCols" not in props
    assert columns_from_properties(props) == (columns, [])


@pytest.mark.parametrize("count", [1, 30, 200, 1000])
def test_long_schemas_are_split_into_parts(count: int) -> None:
    columns = wide_columns(count, comment_length=20)
    props = schema_properties(columns, [])
    num = int(props[f"{SCHEMA_PREFIX}.numParts"])
    parts = [props[f"{SCHEMA_PREFIX}.part.{i}"] for i in range(num)]
    assert all(0 < len(p) <= MAX_PART_LENGTH for p in parts)
    assert all(len(p) == MAX_PART_LENGTH for p in parts[:-1])  # only the last part is short
    assert f"{SCHEMA_PREFIX}.part.{num}" not in props
    text = "".join(parts)
    assert num == -(-len(text) // MAX_PART_LENGTH)
    assert len(json.loads(text)["fields"]) == count
    assert columns_from_properties(props) == (columns, [])


def test_a_schema_of_exactly_one_part_length() -> None:
    """A schema exactly MAX_PART_LENGTH long fits in one part; one character more needs two."""
    base = [Column("a", "int", "x")]
    overhead = len(schema_properties(base, [])[f"{SCHEMA_PREFIX}.part.0"]) - 1
    exact = [Column("a", "int", "x" * (MAX_PART_LENGTH - overhead))]
    props = schema_properties(exact, [])
    assert len(props[f"{SCHEMA_PREFIX}.part.0"]) == MAX_PART_LENGTH
    assert props[f"{SCHEMA_PREFIX}.numParts"] == "1"
    longer = [Column("a", "int", "x" * (MAX_PART_LENGTH - overhead + 1))]
    assert schema_properties(longer, [])[f"{SCHEMA_PREFIX}.numParts"] == "2"
    assert columns_from_properties(schema_properties(longer, [])) == (longer, [])


def test_partition_columns_come_last_and_read_back() -> None:
    columns = wide_columns(300, comment_length=5)
    partition_keys = [Column("dt", "date", "load date"), Column("region", "varchar(8)")]
    props = schema_properties(columns, partition_keys)
    assert int(props[f"{SCHEMA_PREFIX}.numParts"]) > 1
    assert props[f"{SCHEMA_PREFIX}.numPartCols"] == "2"
    assert props[f"{SCHEMA_PREFIX}.partCol.0"] == "dt"
    assert props[f"{SCHEMA_PREFIX}.partCol.1"] == "region"
    text = "".join(props[f"{SCHEMA_PREFIX}.part.{i}"] for i in range(int(props[f"{SCHEMA_PREFIX}.numParts"])))
    assert [f["name"] for f in json.loads(text)["fields"]][-2:] == ["dt", "region"]
    assert columns_from_properties(props) == (columns, partition_keys)


def test_columns_from_properties_as_spark_writes_them() -> None:
    """Mixed-case names and partition columns in the middle, the way Spark may store them."""
    schema = {
        "type": "struct",
        "fields": [
            {"name": "ID", "type": "long", "nullable": True, "metadata": {}},
            {"name": "Day", "type": "date", "nullable": True, "metadata": {"comment": "partition"}},
            {"name": "Payload", "type": {"type": "map", "keyType": "string", "valueType": "binary",
                                          "valueContainsNull": True}, "nullable": True, "metadata": {}},
        ],
    }
    text = json.dumps(schema)
    props = {
        f"{SCHEMA_PREFIX}.numParts": "2",
        f"{SCHEMA_PREFIX}.part.0": text[:50],
        f"{SCHEMA_PREFIX}.part.1": text[50:],
        f"{SCHEMA_PREFIX}.numPartCols": "1",
        f"{SCHEMA_PREFIX}.partCol.0": "DAY",
        "spark.sql.sources.provider": "parquet",
    }
    assert columns_from_properties(props) == (
        [Column("id", "bigint"), Column("payload", "map<string,binary>")],
        [Column("day", "date", "partition")],
    )


GOOD = schema_properties([Column("id", "bigint")], [Column("dt", "date")])


def without(key: str) -> dict[str, str]:
    return {k: v for k, v in GOOD.items() if k != key}


def changed(key: str, value: str) -> dict[str, str]:
    return {**GOOD, key: value}


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"spark.sql.sources.provider": "csv"},
        without(f"{SCHEMA_PREFIX}.numParts"),
        without(f"{SCHEMA_PREFIX}.part.0"),
        without(f"{SCHEMA_PREFIX}.partCol.0"),
        changed(f"{SCHEMA_PREFIX}.numParts", "two"),
        changed(f"{SCHEMA_PREFIX}.numParts", "2"),
        changed(f"{SCHEMA_PREFIX}.numParts", "0"),
        changed(f"{SCHEMA_PREFIX}.numPartCols", "x"),
        changed(f"{SCHEMA_PREFIX}.part.0", "{not json"),
        changed(f"{SCHEMA_PREFIX}.part.0", GOOD[f"{SCHEMA_PREFIX}.part.0"][:-1]),
        changed(f"{SCHEMA_PREFIX}.part.0", "[]"),
        changed(f"{SCHEMA_PREFIX}.part.0", '"a string"'),
        changed(f"{SCHEMA_PREFIX}.part.0", "42"),
        changed(f"{SCHEMA_PREFIX}.part.0", '{"type": "struct"}'),
        changed(f"{SCHEMA_PREFIX}.part.0", '{"type": "struct", "fields": [42]}'),
        changed(f"{SCHEMA_PREFIX}.part.0", '{"type": "struct", "fields": [{"name": "a"}]}'),
        changed(f"{SCHEMA_PREFIX}.part.0", '{"type": "struct", "fields": [{"name": "a", "type": "variant"}]}'),
        changed(f"{SCHEMA_PREFIX}.part.0", '{"type": "struct", "fields": [{"name": 7, "type": "long"}]}'),
        changed(f"{SCHEMA_PREFIX}.part.0", '{"type": "struct", "fields": [{"name": "a", "type": ["long"]}]}'),
        changed(
            f"{SCHEMA_PREFIX}.part.0",
            '{"type": "struct", "fields": [{"name": "a", "type": "long", "metadata": "oops"}]}',
        ),
        changed(f"{SCHEMA_PREFIX}.part.0", '{"type": "struct", "fields": [{"name": "a", "type": {"type": "array"}}]}'),
    ],
)
def test_unreadable_properties_give_none(props: dict[str, str]) -> None:
    assert columns_from_properties(props) is None


def test_the_good_properties_of_the_unreadable_cases_do_read() -> None:
    """The baseline the cases above break: without the breakage the schema reads back."""
    assert columns_from_properties(GOOD) == ([Column("id", "bigint")], [Column("dt", "date")])


def test_a_schema_in_one_parameter_reads_back() -> None:
    """Newer Spark keeps a short schema in ``spark.sql.sources.schema`` itself, not in parts."""
    parts = schema_properties([Column("id", "bigint", "key")], [Column("dt", "date")])
    props = {k: v for k, v in parts.items() if ".part." not in k and not k.endswith(".numParts")}
    props[SCHEMA_PREFIX] = parts[f"{SCHEMA_PREFIX}.part.0"]
    assert columns_from_properties(props) == ([Column("id", "bigint", "key")], [Column("dt", "date")])
