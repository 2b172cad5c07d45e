"""Hive type strings <-> Spark's JSON schema, as Spark keeps it in HMS table properties.

Spark stores data source tables (``USING csv|json|...``) with their schema in
``spark.sql.sources.schema.*`` parameters; catalogd reads that schema back for
tables Spark created and writes it for csv/json tables so Spark reads them as
data source tables.
"""

from __future__ import annotations

import json
import re
from typing import Any

from catalogd.errors import InvalidArgumentError
from catalogd.hive_types import parse_type, split_top_level
from catalogd.model import Column

SCHEMA_PREFIX = "spark.sql.sources.schema"
PROVIDER = "spark.sql.sources.provider"
MAX_PART_LENGTH = 4000  # spark.sql.sources.schemaStringLengthThreshold default

_SIMPLE_TO_SPARK = {
    "tinyint": "byte",
    "smallint": "short",
    "int": "integer",
    "bigint": "long",
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp",
}
_SIMPLE_TO_HIVE = {v: k for k, v in _SIMPLE_TO_SPARK.items()} | {"timestamp_ntz": "timestamp", "void": "string"}


def hive_to_spark(hive_type: str) -> Any:
    """``array<int>`` -> ``{"type": "array", "elementType": "integer", "containsNull": true}``."""
    t = parse_type(hive_type)
    if t in _SIMPLE_TO_SPARK:
        return _SIMPLE_TO_SPARK[t]
    if t.startswith(("decimal(", "varchar(", "char(")):
        return t
    inner = t[t.index("<") + 1 : -1]
    if t.startswith("array<"):
        return {"type": "array", "elementType": hive_to_spark(inner), "containsNull": True}
    if t.startswith("map<"):
        key, value = split_top_level(inner)
        return {"type": "map", "keyType": hive_to_spark(key), "valueType": hive_to_spark(value),
                "valueContainsNull": True}
    if t.startswith("struct<"):
        fields = []
        for part in split_top_level(inner):
            name, _, ftype = part.partition(":")
            fields.append({"name": name, "type": hive_to_spark(ftype), "nullable": True, "metadata": {}})
        return {"type": "struct", "fields": fields}
    raise InvalidArgumentError(f"type {hive_type!r} has no Spark equivalent")


def spark_to_hive(spark_type: Any) -> str:
    if isinstance(spark_type, str):
        if spark_type in _SIMPLE_TO_HIVE:
            return _SIMPLE_TO_HIVE[spark_type]
        if re.fullmatch(r"(decimal|varchar|char)\(\d+(,\d+)?\)", spark_type):
            return spark_type
        if spark_type == "decimal":
            return "decimal(10,0)"
        if spark_type.startswith("interval"):
            return "string"
        raise InvalidArgumentError(f"Spark type {spark_type!r} has no Hive equivalent")
    kind = spark_type.get("type")
    if kind == "array":
        return f"array<{spark_to_hive(spark_type['elementType'])}>"
    if kind == "map":
        return f"map<{spark_to_hive(spark_type['keyType'])},{spark_to_hive(spark_type['valueType'])}>"
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{spark_to_hive(f['type'])}" for f in spark_type["fields"]) + ">"
    if kind == "udt":
        return spark_to_hive(spark_type["sqlType"])
    raise InvalidArgumentError(f"Spark type {spark_type!r} has no Hive equivalent")


def schema_properties(columns: list[Column], partition_keys: list[Column]) -> dict[str, str]:
    """The ``spark.sql.sources.schema.*`` parameters for a table (partition columns last, as Spark has them)."""
    fields = []
    for col in [*columns, *partition_keys]:
        metadata = {"comment": col.comment} if col.comment else {}
        fields.append({"name": col.name, "type": hive_to_spark(col.type), "nullable": True, "metadata": metadata})
    text = json.dumps({"type": "struct", "fields": fields}, separators=(",", ":"))
    chunks = [text[i : i + MAX_PART_LENGTH] for i in range(0, len(text), MAX_PART_LENGTH)] or [""]
    props = {f"{SCHEMA_PREFIX}.numParts": str(len(chunks))}
    props.update({f"{SCHEMA_PREFIX}.part.{i}": chunk for i, chunk in enumerate(chunks)})
    if partition_keys:
        props[f"{SCHEMA_PREFIX}.numPartCols"] = str(len(partition_keys))
        props.update({f"{SCHEMA_PREFIX}.partCol.{i}": c.name for i, c in enumerate(partition_keys)})
    return props


def has_schema(params: dict[str, str]) -> bool:
    """Whether the parameters hold a Spark schema (in one parameter or in parts)."""
    return SCHEMA_PREFIX in params or f"{SCHEMA_PREFIX}.numParts" in params


def is_schema_key(key: str) -> bool:
    """``spark.sql.sources.schema`` itself or one of its ``.numParts``/``.part.N``/``.partCol.N`` keys."""
    return key == SCHEMA_PREFIX or key.startswith(SCHEMA_PREFIX + ".")


def columns_from_properties(params: dict[str, str]) -> tuple[list[Column], list[Column]] | None:
    """Read the schema Spark stored; None when the table has none (or it is unreadable)."""
    try:
        if SCHEMA_PREFIX in params:  # Spark 3.4+ keeps a short schema in one parameter
            text = params[SCHEMA_PREFIX]
        else:
            num = int(params[f"{SCHEMA_PREFIX}.numParts"])
            text = "".join(params[f"{SCHEMA_PREFIX}.part.{i}"] for i in range(num))
        schema = json.loads(text)
        part_names = [
            params[f"{SCHEMA_PREFIX}.partCol.{i}"].lower()
            for i in range(int(params.get(f"{SCHEMA_PREFIX}.numPartCols", "0")))
        ]
        columns, partition_keys = [], []
        by_name = {}
        for field in schema["fields"]:
            comment = (field.get("metadata") or {}).get("comment")
            col = Column(field["name"].lower(), spark_to_hive(field["type"]), comment)
            by_name[col.name] = col
            if col.name not in part_names:
                columns.append(col)
        partition_keys = [by_name[n] for n in part_names if n in by_name]
        return columns, partition_keys
    except (KeyError, ValueError, TypeError, AttributeError, InvalidArgumentError):
        return None
