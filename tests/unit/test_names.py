"""Tests for catalogd.names: splitting, parsing, quoting and every invalid form."""

from __future__ import annotations

import pytest

from catalogd.errors import InvalidArgumentError
from catalogd.names import (
    MAX_NAME_LENGTH,
    NamespacePath,
    ObjectPath,
    parse_catalog,
    parse_namespace,
    parse_object,
    quote,
    split_name,
)

# --------------------------------------------------------------------------- split_name


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("orders", ["orders"]),
        ("sales.orders", ["sales", "orders"]),
        ("main.sales.orders", ["main", "sales", "orders"]),
        ("Main.Sales.ORDERS", ["main", "sales", "orders"]),
        ("_private", ["_private"]),
        ("t_2024", ["t_2024"]),
        ("2024_sales", ["2024_sales"]),
        ("123", ["123"]),
        ("a.b.c.d", ["a", "b", "c", "d"]),  # split_name itself does not limit the count
        ("`my table`", ["my table"]),
        ("`My-Table`", ["my-table"]),
        ("`a.b`", ["a.b"]),
        ("main.`sales db`.`order lines`", ["main", "sales db", "order lines"]),
        ("`x`.y", ["x", "y"]),
        ("x.`y`", ["x", "y"]),
        ("`ünïcode`", ["ünïcode"]),
        ("`with spaces `", ["with spaces "]),
        ("a" * MAX_NAME_LENGTH, ["a" * MAX_NAME_LENGTH]),
        (f"`{'b' * MAX_NAME_LENGTH}`", ["b" * MAX_NAME_LENGTH]),
    ],
)
def test_split_name_accepts(text: str, parts: list[str]) -> None:
    assert split_name(text) == parts


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty name"),
        ("   ", "empty name"),
        ("a..b", "empty part"),
        ("a.", "ends with '.'"),
        ("a.b.", "ends with '.'"),
        (".a", "empty part"),
        (".", "empty part"),
        ("a b", "invalid part 'a b'"),
        ("a-b", "invalid part 'a-b'"),
        ("sales.or-ders", "invalid part 'or-ders'"),
        ("a$", "invalid part"),
        (" a", "invalid part"),
        ("a ", "invalid part"),
        ("ünïcode", "invalid part"),
        ("a;drop", "invalid part"),
        ("``", "empty part"),
        ("a.``", "empty part"),
        ("`abc", "unbalanced backtick"),
        ("a.`b", "unbalanced backtick"),
        ("`a`b", "expected '.' after a quoted part"),
        ("`a``b`", "expected '.' after a quoted part"),
        ("`a`.", "ends with '.'"),
        ("a" * (MAX_NAME_LENGTH + 1), f"longer than {MAX_NAME_LENGTH}"),
        (f"x.`{'b' * (MAX_NAME_LENGTH + 1)}`", f"longer than {MAX_NAME_LENGTH}"),
    ],
)
def test_split_name_rejects(text: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        split_name(text)
    assert message in str(info.value)


@pytest.mark.parametrize("value", [None, 42, b"abc", ["a"]])
def test_split_name_rejects_non_strings(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match="empty name"):
        split_name(value)  # type: ignore[arg-type]


def test_invalid_part_error_explains_the_fix() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        split_name("my-db.t")
    assert "backticks" in str(info.value)
    assert "'my-db.t'" in str(info.value)


# --------------------------------------------------------------------------- parse_*


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("orders", ObjectPath(None, None, "orders")),
        ("Sales.Orders", ObjectPath(None, "sales", "orders")),
        ("MAIN.sales.orders", ObjectPath("main", "sales", "orders")),
        ("main.`sales-eu`.`Order Lines`", ObjectPath("main", "sales-eu", "order lines")),
    ],
)
def test_parse_object(text: str, expected: ObjectPath) -> None:
    assert parse_object(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sales", NamespacePath(None, "sales")),
        ("Main.SALES", NamespacePath("main", "sales")),
        ("`x y`.`a.b`", NamespacePath("x y", "a.b")),
    ],
)
def test_parse_namespace(text: str, expected: NamespacePath) -> None:
    assert parse_namespace(text) == expected


@pytest.mark.parametrize(("text", "expected"), [("main", "main"), ("MAIN", "main"), ("`My Cat`", "my cat")])
def test_parse_catalog(text: str, expected: str) -> None:
    assert parse_catalog(text) == expected


@pytest.mark.parametrize(
    ("parser", "text", "message"),
    [
        (parse_object, "a.b.c.d", "CATALOG.DATABASE.OBJECT"),
        (parse_object, "a.b.c.d.e", "CATALOG.DATABASE.OBJECT"),
        (parse_namespace, "a.b.c", "CATALOG.DATABASE or DATABASE"),
        (parse_catalog, "a.b", "expected a catalog name"),
        (parse_object, "", "empty name"),
        (parse_namespace, "a..b", "empty part"),
        (parse_catalog, "a.", "ends with '.'"),
        (parse_object, "main.sales.bad name", "invalid part"),
        (parse_namespace, "x" * (MAX_NAME_LENGTH + 1), "longer than"),
    ],
)
def test_parsers_reject(parser: object, text: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parser(text)  # type: ignore[operator]
    assert message in str(info.value)


def test_paths_print_only_the_given_parts() -> None:
    assert str(ObjectPath(None, None, "t")) == "t"
    assert str(ObjectPath(None, "db", "t")) == "db.t"
    assert str(ObjectPath("c", "db", "t")) == "c.db.t"
    assert str(NamespacePath(None, "db")) == "db"
    assert str(NamespacePath("c", "db")) == "c.db"


def test_paths_are_frozen_and_hashable() -> None:
    path = parse_object("c.d.t")
    with pytest.raises(AttributeError):
        path.name = "other"  # type: ignore[misc]
    assert {path, parse_object("C.D.T")} == {path}


# --------------------------------------------------------------------------- quote


@pytest.mark.parametrize(
    ("part", "quoted"),
    [("orders", "orders"), ("t_1", "t_1"), ("my table", "`my table`"), ("a.b", "`a.b`"), ("x-y", "`x-y`")],
)
def test_quote(part: str, quoted: str) -> None:
    assert quote(part) == quoted


@pytest.mark.parametrize(
    "parts", [["main", "sales", "orders"], ["my cat", "a.b", "x-y"], ["c", "db with space", "t"]]
)
def test_quote_round_trips_through_split_name(parts: list[str]) -> None:
    assert split_name(".".join(quote(p) for p in parts)) == parts
