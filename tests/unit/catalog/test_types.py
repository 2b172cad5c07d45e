"""Tests for catalogd.hive_types: Hive type strings and schema strings."""

from __future__ import annotations

import pytest

from catalogd.errors import InvalidArgumentError
from catalogd.hive_types import (
    MAX_CHAR_LENGTH,
    MAX_DECIMAL_PRECISION,
    MAX_VARCHAR_LENGTH,
    PRIMITIVES,
    SYNONYMS,
    format_schema,
    parse_schema,
    parse_type,
)
from catalogd.model import Column

# --------------------------------------------------------------------------- parse_type


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_primitives_are_kept(name: str) -> None:
    assert parse_type(name) == name
    assert parse_type(name.upper()) == name
    assert parse_type(f"  {name.capitalize()}  ") == name


@pytest.mark.parametrize(("synonym", "hive"), sorted(SYNONYMS.items()))
def test_synonyms_are_normalized(synonym: str, hive: str) -> None:
    expected = "decimal(10,0)" if hive == "decimal" else hive
    assert parse_type(synonym) == expected
    assert parse_type(synonym.upper()) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("decimal", "decimal(10,0)"),
        ("DECIMAL", "decimal(10,0)"),
        ("decimal(5)", "decimal(5,0)"),
        ("decimal(10,2)", "decimal(10,2)"),
        ("decimal( 10 , 2 )", "decimal(10,2)"),
        ("numeric(12,4)", "decimal(12,4)"),
        ("dec(3,3)", "decimal(3,3)"),
        (f"decimal({MAX_DECIMAL_PRECISION},{MAX_DECIMAL_PRECISION})", "decimal(38,38)"),
        ("decimal(1)", "decimal(1,0)"),
        ("varchar(20)", "varchar(20)"),
        ("VARCHAR (20)", "varchar(20)"),
        (f"varchar({MAX_VARCHAR_LENGTH})", f"varchar({MAX_VARCHAR_LENGTH})"),
        ("char(1)", "char(1)"),
        (f"char({MAX_CHAR_LENGTH})", f"char({MAX_CHAR_LENGTH})"),
        ("double precision", "double"),
        ("DOUBLE   PRECISION", "double"),
        ("array<int>", "array<int>"),
        ("ARRAY< INTEGER >", "array<int>"),
        ("array<array<long>>", "array<array<bigint>>"),
        ("map<string,int>", "map<string,int>"),
        ("map < STRING , array<decimal(5,1)> >", "map<string,array<decimal(5,1)>>"),
        ("map<int,map<string,bool>>", "map<int,map<string,boolean>>"),
        ("struct<a:int>", "struct<a:int>"),
        ("struct<A:int, B : String>", "struct<a:int,b:string>"),
        ("struct<`weird name`:int>", "struct<weird name:int>"),
        ("struct<a:decimal(10,2),b:map<string,array<struct<c:short,d:varchar(3)>>>>",
         "struct<a:decimal(10,2),b:map<string,array<struct<c:smallint,d:varchar(3)>>>>"),
        ("array<struct<x:double precision,y:real>>", "array<struct<x:double,y:float>>"),
        ("uniontype<int,string>", "uniontype<int,string>"),
        ("UNIONTYPE<long, array<byte>>", "uniontype<bigint,array<tinyint>>"),
        ("\tarray<\nint\n>\t", "array<int>"),
    ],
)
def test_parse_type_normalizes(text: str, expected: str) -> None:
    assert parse_type(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "decimal(10,2)",
        "array<map<string,struct<a:int,b:array<double>>>>",
        "struct<a:varchar(5),b:char(2),c:date,d:timestamp,e:binary>",
        "uniontype<int,struct<x:string>>",
    ],
)
def test_parse_type_is_idempotent(text: str) -> None:
    once = parse_type(text)
    assert parse_type(once) == once


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty column type"),
        ("   ", "empty column type"),
        ("strng", "unknown type 'strng'"),
        ("varchar2(10)", "unknown type"),
        ("int int", "unexpected 'int'"),
        ("int)", "unexpected ')'"),
        ("decimal(0)", f"precision must be 1..{MAX_DECIMAL_PRECISION}"),
        (f"decimal({MAX_DECIMAL_PRECISION + 1})", f"precision must be 1..{MAX_DECIMAL_PRECISION}"),
        ("decimal(5,6)", "scale must not exceed its precision"),
        ("decimal(10,-1)", "expected a number, got '-'"),
        ("decimal(a)", "expected a number, got 'a'"),
        ("decimal(10", "unexpected end, expected ')'"),
        ("decimal(10,2", "unexpected end, expected ')'"),
        ("decimal(10,2,3)", "expected ')', got ','"),
        ("varchar", "varchar needs a length, e.g. varchar(20)"),
        ("char", "char needs a length"),
        ("varchar(0)", f"varchar length must be 1..{MAX_VARCHAR_LENGTH}"),
        (f"varchar({MAX_VARCHAR_LENGTH + 1})", "varchar length must be"),
        (f"char({MAX_CHAR_LENGTH + 1})", f"char length must be 1..{MAX_CHAR_LENGTH}"),
        ("varchar(x)", "expected a number"),
        ("array", "unexpected end, expected '<'"),
        ("array<>", "unknown type '>'"),
        ("array<int", "unexpected end, expected '>'"),
        ("array<int,string>", "expected '>', got ','"),
        ("array(int)", "expected '<', got '('"),
        ("map<string>", "expected ',', got '>'"),
        ("map<string,int", "unexpected end, expected '>'"),
        ("map<string,int,int>", "expected '>', got ','"),
        ("struct<>", "bad struct field name '>'"),
        ("struct<a int>", "expected ':', got 'int'"),
        ("struct<a:int,>", "bad struct field name '>'"),
        ("struct<1a:int>", "bad struct field name '1'"),
        ("struct<a:int", "unexpected end"),
        ("struct<a:strin>", "unknown type 'strin'"),
        ("uniontype<>", "unknown type '>'"),
        ("array<array<int>", "unexpected end, expected '>'"),
        ("int<int>", "unexpected '<'"),
        ("<int>", "unknown type '<'"),
        ("map<string,int>>", "unexpected '>'"),
    ],
)
def test_parse_type_rejects(text: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_type(text)
    assert message in str(info.value)


def test_parse_type_error_names_the_whole_type() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_type("  map<string,strnig>  ")
    assert str(info.value).startswith("invalid type 'map<string,strnig>': ")


# --------------------------------------------------------------------------- parse_schema


def test_parse_schema_simple() -> None:
    assert parse_schema("id bigint, name string") == [Column("id", "bigint"), Column("name", "string")]


def test_parse_schema_normalizes_names_and_types() -> None:
    assert parse_schema("ID Long,  `Order Date`  DATE ,Amount NUMERIC(10,2)") == [
        Column("id", "bigint"),
        Column("order date", "date"),
        Column("amount", "decimal(10,2)"),
    ]


def test_parse_schema_nested_types_with_commas() -> None:
    cols = parse_schema(
        "m map<string, decimal(10,2)>, s struct<a:int, b:map<int,string>>, "
        "d decimal(5, 1), x array<struct<p:int,q:int>>"
    )
    assert cols == [
        Column("m", "map<string,decimal(10,2)>"),
        Column("s", "struct<a:int,b:map<int,string>>"),
        Column("d", "decimal(5,1)"),
        Column("x", "array<struct<p:int,q:int>>"),
    ]


@pytest.mark.parametrize(
    ("text", "comment"),
    [
        ("amount decimal(10,2) COMMENT 'in EUR'", "in EUR"),
        ("amount decimal(10,2) comment 'net, after tax, in EUR'", "net, after tax, in EUR"),
        ('amount decimal(10,2) Comment "it\'s the amount"', "it's the amount"),
        ("amount decimal(10,2) COMMENT 'say \"hi\", then go'", 'say "hi", then go'),
        ("amount decimal(10,2) COMMENT 'map<a,b> (x, y)'", "map<a,b> (x, y)"),
        ("amount decimal(10,2) COMMENT ''", ""),
        ("amount decimal(10,2) COMMENT 'multi\nline'", "multi\nline"),
    ],
)
def test_parse_schema_comments(text: str, comment: str) -> None:
    (col,) = parse_schema(text)
    assert col == Column("amount", "decimal(10,2)", comment)


def test_parse_schema_comments_with_commas_do_not_split_columns() -> None:
    cols = parse_schema("id bigint COMMENT 'key, unique', tags array<string> COMMENT \"a, b, c\", n int")
    assert cols == [
        Column("id", "bigint", "key, unique"),
        Column("tags", "array<string>", "a, b, c"),
        Column("n", "int", None),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty schema"),
        ("   ", "empty schema"),
        ("id bigint,", "empty column"),
        (",id bigint", "empty column"),
        ("id bigint,, name string", "empty column"),
        ("id", "cannot read column 'id'"),
        ("id bigint, name", "cannot read column 'name'"),
        ("1id bigint", "cannot read column"),
        ("id bigint, ID string", "duplicate column 'id'"),
        ("`a` int, a string", "duplicate column 'a'"),
        ("id bigintt", "unknown type 'bigintt'"),
        ("id decimal(50,2)", "precision must be"),
        ("id bigint COMMENT 'unterminated", "unbalanced quote"),
        ("m map<string,int", "unexpected end"),
    ],
)
def test_parse_schema_rejects(text: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_schema(text)
    assert message in str(info.value)


def test_format_schema_round_trips() -> None:
    text = "id bigint, m map<string,decimal(10,2)>, s struct<a:int,b:array<string>>"
    cols = parse_schema(text)
    assert format_schema(cols) == text
    assert parse_schema(format_schema(cols)) == cols
