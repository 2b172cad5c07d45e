"""The Catalog contract (catalogd.catalog.base), checked on the memory catalog."""

from __future__ import annotations

import re

import pytest

from catalogd.catalog.memory import MemoryCatalog
from catalogd.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from catalogd.model import Column, Database, DatabaseUpdate, Table, TableFormat, TableKind, TableUpdate


@pytest.fixture
def catalog() -> MemoryCatalog:
    cat = MemoryCatalog("scratch")
    cat.open()
    return cat


def table(name: str = "orders", database: str = "sales", **kwargs: object) -> Table:
    kwargs.setdefault("columns", [Column("id", "bigint"), Column("amount", "decimal(10,2)", "EUR")])
    return Table(name=name, database=database, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def sales(catalog: MemoryCatalog) -> MemoryCatalog:
    catalog.create_database(Database("sales", comment="sales data", properties={"team": "s"}))
    return catalog


# --------------------------------------------------------------------------- catalog


def test_info_and_ping(catalog: MemoryCatalog) -> None:
    info = catalog.info()
    assert (info.name, info.type) == ("scratch", "memory")
    catalog.ping()


def test_a_new_catalog_has_its_default_database() -> None:
    assert MemoryCatalog("c").list_databases() == ["default"]
    assert MemoryCatalog("c", default_database="base").list_databases() == ["base"]


# --------------------------------------------------------------------------- databases


def test_create_get_list_databases(catalog: MemoryCatalog) -> None:
    catalog.create_database(Database("sales", comment="c", location="file:/data/sales", properties={"a": "1"}))
    catalog.create_database(Database("hr"))
    assert catalog.list_databases() == ["default", "hr", "sales"]
    db = catalog.get_database("sales")
    assert (db.name, db.catalog, db.comment, db.location, db.properties) == (
        "sales", "scratch", "c", "file:/data/sales", {"a": "1"}
    )
    assert catalog.get_database("hr").location  # a location is always filled in
    assert catalog.database_exists("hr")
    assert not catalog.database_exists("nope")


def test_create_existing_database(sales: MemoryCatalog) -> None:
    with pytest.raises(DatabaseAlreadyExistsError, match=re.escape("scratch.sales already exists")):
        sales.create_database(Database("sales", comment="other"))
    sales.create_database(Database("sales", comment="other"), ignore_if_exists=True)
    assert sales.get_database("sales").comment == "sales data"  # the first one stays


def test_get_missing_database(catalog: MemoryCatalog) -> None:
    with pytest.raises(DatabaseNotFoundError, match=re.escape("scratch.nope does not exist")):
        catalog.get_database("nope")


def test_alter_database(sales: MemoryCatalog) -> None:
    sales.alter_database("sales", DatabaseUpdate(comment="new", set_properties={"b": "2"}, unset_properties=["team"]))
    db = sales.get_database("sales")
    assert (db.comment, db.properties) == ("new", {"b": "2"})
    sales.alter_database("sales", DatabaseUpdate(unset_properties=["not-there"]))  # unsetting a missing key is fine
    assert sales.get_database("sales").comment == "new"  # None leaves the comment alone
    with pytest.raises(DatabaseNotFoundError):
        sales.alter_database("nope", DatabaseUpdate(comment="x"))


def test_drop_database(sales: MemoryCatalog) -> None:
    sales.drop_database("sales")
    assert not sales.database_exists("sales")
    with pytest.raises(DatabaseNotFoundError):
        sales.drop_database("sales")
    sales.drop_database("sales", ignore_if_not_exists=True)


def test_drop_non_empty_database(sales: MemoryCatalog) -> None:
    sales.create_table(table())
    with pytest.raises(DatabaseNotEmptyError, match="not empty"):
        sales.drop_database("sales")
    with pytest.raises(DatabaseNotEmptyError):
        sales.drop_database("sales", ignore_if_not_exists=True)  # the flag is about existence only
    assert sales.table_exists("sales", "orders")
    sales.drop_database("sales", cascade=True)
    assert not sales.database_exists("sales")
    # A database created again under the same name starts empty.
    sales.create_database(Database("sales"))
    assert sales.list_tables("sales") == []


def test_databases_are_copied_in_and_out(catalog: MemoryCatalog) -> None:
    given = Database("sales", properties={"a": "1"})
    catalog.create_database(given)
    given.properties["b"] = "2"
    given.comment = "changed"
    got = catalog.get_database("sales")
    assert got.properties == {"a": "1"} and got.comment is None
    got.properties["c"] = "3"
    assert catalog.get_database("sales").properties == {"a": "1"}
    assert given.catalog == ""  # the caller's object is not filled in either


# --------------------------------------------------------------------------- tables


def test_create_and_get_table(sales: MemoryCatalog) -> None:
    created = sales.create_table(
        table(columns=[Column("ID", "LONG", "key"), Column("Tags", "array< string >")],
              partition_keys=[Column("Day", "date")], format=TableFormat.ORC, comment="c", properties={"p": "1"})
    )
    assert created.columns == [Column("id", "bigint", "key"), Column("tags", "array<string>")]
    assert created.partition_keys == [Column("day", "date")]
    assert created.catalog == "scratch"
    assert created.location and created.location.endswith("orders")
    assert created.created is not None
    assert sales.get_table("sales", "orders") == created
    assert sales.table_exists("sales", "orders")
    assert not sales.table_exists("sales", "nope")
    assert not sales.table_exists("nope", "orders")


def test_create_table_keeps_a_given_location(sales: MemoryCatalog) -> None:
    created = sales.create_table(table(location="s3a://b/x", kind=TableKind.EXTERNAL))
    assert (created.location, created.kind) == ("s3a://b/x", TableKind.EXTERNAL)


def test_create_existing_table(sales: MemoryCatalog) -> None:
    first = sales.create_table(table(comment="first"))
    with pytest.raises(TableAlreadyExistsError, match=re.escape("scratch.sales.orders already exists")):
        sales.create_table(table(comment="second"))
    assert sales.create_table(table(comment="second"), ignore_if_exists=True) == first


def test_create_table_in_missing_database(catalog: MemoryCatalog) -> None:
    with pytest.raises(DatabaseNotFoundError):
        catalog.create_table(table(database="nope"))


@pytest.mark.parametrize(
    ("columns", "partition_keys", "message"),
    [
        ([], [], "needs at least one column"),
        ([Column("a", "int"), Column("A", "string")], [], "duplicate column"),
        ([Column("a", "int")], [Column("a", "date")], "duplicate column"),
        ([Column("a", "strng")], [], "unknown type"),
        ([Column("a", "int")], [Column("p", "decimal(99)")], "precision"),
    ],
)
def test_create_table_validates(
    sales: MemoryCatalog, columns: list[Column], partition_keys: list[Column], message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        sales.create_table(table(columns=columns, partition_keys=partition_keys))
    assert not sales.table_exists("sales", "orders")


def test_get_missing_table(sales: MemoryCatalog) -> None:
    with pytest.raises(TableNotFoundError, match=re.escape("scratch.sales.nope does not exist")):
        sales.get_table("sales", "nope")
    with pytest.raises(TableNotFoundError):
        sales.get_table("no_db", "orders")  # a missing database means a missing table


def test_list_tables_is_sorted_and_leaves_views_out(sales: MemoryCatalog) -> None:
    for name in ("b", "c", "a"):
        sales.create_table(table(name))
    sales.create_table(table("v", kind=TableKind.VIEW))
    assert sales.list_tables("sales") == ["a", "b", "c"]
    assert sales.list_tables("default") == []
    with pytest.raises(DatabaseNotFoundError):
        sales.list_tables("nope")


def test_alter_table(sales: MemoryCatalog) -> None:
    sales.create_table(table(properties={"keep": "1", "drop": "2"}))
    after = sales.alter_table(
        "sales", "orders",
        TableUpdate(comment="now", set_properties={"new": "3"}, unset_properties=["drop"],
                    add_columns=[Column("Note", "varchar(10)", "free text")]),
    )
    assert after.comment == "now"
    assert after.properties == {"keep": "1", "new": "3"}
    assert after.columns[-1] == Column("note", "varchar(10)", "free text")
    assert sales.get_table("sales", "orders") == after


@pytest.mark.parametrize(
    "add",
    [
        [Column("ID", "int")],
        [Column("x", "int"), Column("X", "string")],
        [Column("x", "int"), Column("y", "nope")],
        [Column("day", "date")],  # clashes with a partition column
    ],
)
def test_alter_table_is_all_or_nothing(sales: MemoryCatalog, add: list[Column]) -> None:
    before = sales.create_table(table(partition_keys=[Column("day", "date")]))
    with pytest.raises(InvalidArgumentError):
        sales.alter_table("sales", "orders", TableUpdate(comment="changed", add_columns=add))
    assert sales.get_table("sales", "orders") == before


def test_alter_missing_table(sales: MemoryCatalog) -> None:
    with pytest.raises(TableNotFoundError):
        sales.alter_table("sales", "nope", TableUpdate(comment="x"))
    with pytest.raises(TableNotFoundError):
        sales.alter_table("no_db", "orders", TableUpdate(comment="x"))


def test_rename_table(sales: MemoryCatalog) -> None:
    created = sales.create_table(table())
    sales.rename_table("sales", "orders", "orders_v2")
    assert sales.list_tables("sales") == ["orders_v2"]
    renamed = sales.get_table("sales", "orders_v2")
    assert renamed.name == "orders_v2"
    assert renamed.columns == created.columns
    with pytest.raises(TableNotFoundError):
        sales.get_table("sales", "orders")


def test_rename_onto_an_existing_table(sales: MemoryCatalog) -> None:
    sales.create_table(table("a", comment="a"))
    sales.create_table(table("b", comment="b"))
    with pytest.raises(TableAlreadyExistsError, match=re.escape("scratch.sales.b already exists")):
        sales.rename_table("sales", "a", "b")
    assert sales.get_table("sales", "a").comment == "a"
    assert sales.get_table("sales", "b").comment == "b"


def test_rename_missing_table(sales: MemoryCatalog) -> None:
    with pytest.raises(TableNotFoundError):
        sales.rename_table("sales", "nope", "other")
    sales.rename_table("sales", "nope", "other", ignore_if_not_exists=True)
    with pytest.raises(TableNotFoundError):
        sales.rename_table("no_db", "nope", "other")
    sales.rename_table("no_db", "nope", "other", ignore_if_not_exists=True)
    assert sales.list_tables("sales") == []


def test_drop_table(sales: MemoryCatalog) -> None:
    sales.create_table(table())
    sales.drop_table("sales", "orders", purge=True)
    assert not sales.table_exists("sales", "orders")
    with pytest.raises(TableNotFoundError):
        sales.drop_table("sales", "orders")
    sales.drop_table("sales", "orders", ignore_if_not_exists=True)
    with pytest.raises(TableNotFoundError):
        sales.drop_table("no_db", "orders")
    sales.drop_table("no_db", "orders", ignore_if_not_exists=True)


def test_tables_are_copied_in_and_out(sales: MemoryCatalog) -> None:
    given = table(properties={"a": "1"})
    created = sales.create_table(given)
    given.properties["b"] = "2"
    given.columns.append(Column("late", "int"))
    created.properties["c"] = "3"
    created.columns.clear()
    got = sales.get_table("sales", "orders")
    assert got.properties == {"a": "1"}
    assert [c.name for c in got.columns] == ["id", "amount"]
    got.properties["d"] = "4"
    got.partition_keys.append(Column("p", "int"))
    after = sales.alter_table("sales", "orders", TableUpdate())
    after.columns.append(Column("z", "int"))
    again = sales.get_table("sales", "orders")
    assert again.properties == {"a": "1"}
    assert again.partition_keys == []
    assert [c.name for c in again.columns] == ["id", "amount"]
    assert given.catalog == ""  # the definition handed in is not filled in


def test_tables_of_different_databases_are_separate(sales: MemoryCatalog) -> None:
    sales.create_database(Database("hr"))
    sales.create_table(table("t", "sales", comment="sales"))
    sales.create_table(table("t", "hr", comment="hr"))
    assert sales.get_table("sales", "t").comment == "sales"
    assert sales.get_table("hr", "t").comment == "hr"
    sales.drop_table("hr", "t")
    assert sales.table_exists("sales", "t")


def test_allowed_locations_confine_a_given_location() -> None:
    from catalogd.errors import PermissionDeniedError

    catalog = MemoryCatalog("scratch", allowed_locations=["s3a://lake/"])
    catalog.create_database(Database("sales"))
    made = catalog.create_table(table(location="s3a://lake/x", kind=TableKind.EXTERNAL))
    assert made.location == "s3a://lake/x"
    with pytest.raises(PermissionDeniedError, match="outside the catalog's allowed locations"):
        catalog.create_table(table(name="y", location="s3a://other/y", kind=TableKind.EXTERNAL))
    assert catalog.create_table(table(name="z")).location  # its made-up place: no files, allowed
    assert not catalog.table_exists("sales", "y")
