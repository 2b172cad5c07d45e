"""PostgreSQL types <-> catalogd's, and properties kept in PostgreSQL comments."""

from __future__ import annotations

import pytest

from catalogd.catalog.jdbc_comments import decode_comment, encode_comment
from catalogd.catalog.jdbc_dialect import PostgresDialect, dialect_for
from catalogd.errors import InvalidArgumentError

PG = PostgresDialect()


@pytest.mark.parametrize(("catalogd_type", "pg_type", "back"), [
    ("boolean", "boolean", "boolean"),
    ("tinyint", "smallint", "smallint"),  # widened: PostgreSQL has no 1-byte integer
    ("smallint", "smallint", "smallint"),
    ("int", "integer", "int"),
    ("bigint", "bigint", "bigint"),
    ("float", "real", "float"),
    ("double", "double precision", "double"),
    ("decimal(10,2)", "numeric(10,2)", "decimal(10,2)"),
    ("string", "text", "string"),
    ("varchar(20)", "character varying(20)", "varchar(20)"),
    ("char(3)", "character(3)", "char(3)"),
    ("binary", "bytea", "binary"),
    ("date", "date", "date"),
    ("timestamp", "timestamp without time zone", "timestamp"),
    ("array<int>", "integer[]", "array<int>"),
    ("array<string>", "text[]", "array<string>"),
])
def test_types_both_ways(catalogd_type: str, pg_type: str, back: str) -> None:
    assert PG.to_db_type(catalogd_type, "c") == pg_type
    assert PG.from_db_type(pg_type) == back


@pytest.mark.parametrize("pg_type", ["json", "jsonb", "uuid", "interval", "inet", "time without time zone"])
def test_other_postgresql_types_read_as_strings(pg_type: str) -> None:
    assert PG.from_db_type(pg_type) == "string"


def test_unbounded_numeric_and_timestamptz() -> None:
    assert PG.from_db_type("numeric") == "decimal(38,18)"
    assert PG.from_db_type("timestamp with time zone") == "timestamp"


@pytest.mark.parametrize("catalogd_type", ["map<string,int>", "struct<a:int>", "array<array<int>>"])
def test_types_postgresql_cannot_hold_are_refused_with_the_column(catalogd_type: str) -> None:
    with pytest.raises(InvalidArgumentError, match="column 'c'"):
        PG.to_db_type(catalogd_type, "c")


def test_only_known_dialects() -> None:
    assert dialect_for("postgresql").name == "postgresql"
    with pytest.raises(InvalidArgumentError, match="unsupported JDBC dialect 'mysql'"):
        dialect_for("mysql")


def test_properties_travel_in_the_comment() -> None:
    assert encode_comment("plain", {}) == "plain"
    assert decode_comment("plain") == ("plain", {})
    text = encode_comment("orders\nof 2024", {"owner": "sales", "k": "v"})
    assert decode_comment(text) == ("orders\nof 2024", {"k": "v", "owner": "sales"})
    assert decode_comment(encode_comment(None, {"a": "1"})) == (None, {"a": "1"})
    assert decode_comment(None) == (None, {})
