"""Table API through a real daemon, against both backends (``main`` hive, ``scratch`` memory)."""

from __future__ import annotations

import pytest

from catalogd.errors import (
    CatalogNotFoundError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    NotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from catalogd.model import Column, TableFormat, TableKind

from .helpers import local_path

pytestmark = pytest.mark.integration

FORMATS = ["parquet", "orc", "avro", "csv", "json", "textfile"]
SCHEMA = "id bigint COMMENT 'the key', amount decimal(10,2) COMMENT 'in EUR', name string"
COLUMNS = [Column("id", "bigint", "the key"), Column("amount", "decimal(10,2)", "in EUR"), Column("name", "string")]


def user_properties(table):
    """Properties without the ones HMS adds by itself."""
    return {k: v for k, v in table.properties.items() if k != "transient_lastDdlTime"}


def test_create_with_columns_comments_and_partition_keys(client, catalog, db):
    created = client.create_table(
        f"{db}.orders",
        "id bigint COMMENT 'order id', Amount DECIMAL(12,2), tags array<string>, attrs map<string,int>",
        partitioned_by="ds string COMMENT 'day', country string",
    )
    got = client.get_table(f"{db}.orders")
    assert got == created
    assert (got.catalog, got.database, got.name) == (catalog, db.split(".")[1], "orders")
    assert got.kind is TableKind.MANAGED
    assert got.columns == [
        Column("id", "bigint", "order id"),
        Column("amount", "decimal(12,2)"),
        Column("tags", "array<string>"),
        Column("attrs", "map<string,int>"),
    ]
    assert got.partition_keys == [Column("ds", "string", "day"), Column("country", "string")]
    assert got.format is TableFormat.PARQUET
    assert got.location and got.location.rstrip("/").endswith("/orders")
    assert client.list_tables(db) == ["orders"]
    assert client.table_exists(f"{db}.orders")


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_round_trips(client, db, fmt):
    name = f"{db}.t_{fmt}"
    client.create_table(
        name, SCHEMA, partitioned_by="ds string", format=fmt, comment=f"a {fmt} table",
        properties={"owner.team": "data", "quality": "gold"},
    )
    got = client.get_table(name)
    assert got.format is TableFormat(fmt)
    assert got.columns == COLUMNS
    assert got.partition_keys == [Column("ds", "string")]
    assert got.comment == f"a {fmt} table"
    assert user_properties(got) == {"owner.team": "data", "quality": "gold"}
    assert got.kind is TableKind.MANAGED
    assert got.location
    assert client.list_tables(db) == [f"t_{fmt}"]


def test_external_table_needs_location(client, db):
    with pytest.raises(InvalidArgumentError, match="location"):
        client.create_table(f"{db}.ext", "id int", external=True)
    assert client.list_tables(db) == []


def test_external_table_with_location_keeps_its_files(client, catalog, db, tmp_path):
    location = tmp_path / "ext-data"
    if catalog == "main":
        # Inside the warehouse: a location outside the catalog's allowed-locations is refused.
        location = local_path(client.get_database(db).location) / "ext-data"
    location.mkdir(parents=True)
    (location / "part-0.csv").write_text("1,a\n")
    created = client.create_table(f"{db}.ext", "id int, v string", format="csv", location=location.as_uri(),
                                  external=True)
    got = client.get_table(f"{db}.ext")
    assert got == created
    assert got.kind is TableKind.EXTERNAL
    assert local_path(got.location) == location
    assert "EXTERNAL" not in got.properties

    client.drop_table(f"{db}.ext", purge=True)
    assert not client.table_exists(f"{db}.ext")
    assert (location / "part-0.csv").read_text() == "1,a\n", "dropping an external table must keep its files"


def test_create_if_not_exists_both_ways(client, db):
    original = client.create_table(f"{db}.t", "id bigint", comment="first", properties={"a": "1"})
    with pytest.raises(TableAlreadyExistsError):
        client.create_table(f"{db}.t", "other string")
    again = client.create_table(f"{db}.t", "other string", format="orc", comment="second", if_not_exists=True)
    assert again.columns == original.columns == [Column("id", "bigint")]
    after = client.get_table(f"{db}.t")
    assert after.columns == [Column("id", "bigint")]
    assert after.format is TableFormat.PARQUET
    assert after.comment == "first"
    assert user_properties(after) == {"a": "1"}


def test_create_in_missing_database(client, catalog):
    with pytest.raises(DatabaseNotFoundError):
        client.create_table(f"{catalog}.no_such_db_x.t", "id int")


def test_alter_properties_comment_and_add_columns(client, db):
    client.create_table(f"{db}.t", "id bigint", partitioned_by="ds string", properties={"keep": "1", "gone": "2"})
    altered = client.alter_table(f"{db}.t", comment="now with notes", set_properties={"new": "3", "keep": "one"},
                                 unset_properties=["gone"], add_columns="note string COMMENT 'free text', n int")
    got = client.get_table(f"{db}.t")
    assert got == altered
    assert got.comment == "now with notes"
    assert user_properties(got) == {"keep": "one", "new": "3"}
    assert got.columns == [Column("id", "bigint"), Column("note", "string", "free text"), Column("n", "int")]
    assert got.partition_keys == [Column("ds", "string")]


@pytest.mark.parametrize("existing", ["ID", "ds"])
def test_adding_an_existing_column_changes_nothing(client, db, existing):
    client.create_table(f"{db}.t", "id bigint", partitioned_by="ds string", properties={"a": "1"})
    before = client.get_table(f"{db}.t")
    with pytest.raises(InvalidArgumentError, match="already exists"):
        client.alter_table(f"{db}.t", set_properties={"b": "2"}, add_columns=f"fresh int, {existing} string")
    after = client.get_table(f"{db}.t")
    assert after.columns == before.columns
    assert after.partition_keys == before.partition_keys
    assert user_properties(after) == {"a": "1"}


def test_alter_missing_table(client, db):
    with pytest.raises(TableNotFoundError):
        client.alter_table(f"{db}.nope", set_properties={"a": "1"})


def test_rename(client, db):
    client.create_table(f"{db}.old", "id bigint COMMENT 'k'", partitioned_by="ds string", properties={"a": "1"})
    client.rename_table(f"{db}.old", "new")
    assert client.list_tables(db) == ["new"]
    with pytest.raises(TableNotFoundError):
        client.get_table(f"{db}.old")
    got = client.get_table(f"{db}.new")
    assert got.name == "new"
    assert got.columns == [Column("id", "bigint", "k")]
    assert got.partition_keys == [Column("ds", "string")]
    assert user_properties(got) == {"a": "1"}
    # The new name may repeat the catalog and database.
    client.rename_table(f"{db}.new", f"{db}.newer")
    assert client.list_tables(db) == ["newer"]


def test_rename_onto_existing_table_fails(client, db):
    client.create_table(f"{db}.a", "id bigint")
    client.create_table(f"{db}.b", "name string")
    with pytest.raises(TableAlreadyExistsError):
        client.rename_table(f"{db}.a", "b")
    assert client.list_tables(db) == ["a", "b"]
    assert client.get_table(f"{db}.a").columns == [Column("id", "bigint")]
    assert client.get_table(f"{db}.b").columns == [Column("name", "string")]


def test_rename_missing_source(client, db):
    with pytest.raises(TableNotFoundError):
        client.rename_table(f"{db}.ghost", "spirit")
    client.rename_table(f"{db}.ghost", "spirit", if_exists=True)  # no error
    assert client.list_tables(db) == []


def test_rename_across_databases_is_refused(client, db):
    client.create_table(f"{db}.a", "id bigint")
    with pytest.raises(InvalidArgumentError):
        client.rename_table(f"{db}.a", f"{db.split('.')[0]}.other_db.a")
    assert client.list_tables(db) == ["a"]


def test_drop_if_exists_both_ways(client, db):
    with pytest.raises(TableNotFoundError):
        client.drop_table(f"{db}.ghost")
    client.drop_table(f"{db}.ghost", if_exists=True)  # no error
    client.create_table(f"{db}.t", "id bigint")
    client.drop_table(f"{db}.t")
    assert client.list_tables(db) == []
    assert not client.table_exists(f"{db}.t")


def test_drop_with_purge_removes_managed_files(client, main_db):
    table = client.create_table(f"{main_db}.t", "id bigint", partitioned_by="ds string")
    directory = local_path(table.location)
    assert directory.is_dir(), "HMS creates a managed table's directory"
    (directory / "ds=1").mkdir()
    (directory / "ds=1" / "part-0.parquet").write_bytes(b"not really parquet")
    client.drop_table(f"{main_db}.t", purge=True)
    assert not directory.exists(), f"{directory} should be gone with the managed table"


def test_managed_rename_moves_files(client, main_db):
    table = client.create_table(f"{main_db}.before", "id bigint")
    old_dir = local_path(table.location)
    (old_dir / "part-0").write_text("x")
    client.rename_table(f"{main_db}.before", "after")
    moved = client.get_table(f"{main_db}.after")
    assert moved.location.rstrip("/").endswith("/after")
    assert (local_path(moved.location) / "part-0").read_text() == "x"
    assert not old_dir.exists()


def test_missing_objects_give_typed_not_found(client, catalog, db):
    with pytest.raises(TableNotFoundError) as table_missing:
        client.get_table(f"{db}.nope")
    with pytest.raises(DatabaseNotFoundError, match=f"database {catalog}.no_such_db_x does not exist"):
        client.get_table(f"{catalog}.no_such_db_x.nope")  # its database is what is missing
    with pytest.raises(DatabaseNotFoundError) as db_missing:
        client.get_database(f"{catalog}.no_such_db_x")
    with pytest.raises(DatabaseNotFoundError):
        client.list_tables(f"{catalog}.no_such_db_x")
    with pytest.raises(CatalogNotFoundError) as catalog_missing:
        client.get_catalog("no_such_catalog")
    with pytest.raises(CatalogNotFoundError):
        client.get_table("no_such_catalog.db.t")
    for info in (table_missing, db_missing, catalog_missing):
        assert isinstance(info.value, NotFoundError)
        assert info.value.kind == "not-found"
    assert not client.table_exists(f"{db}.nope")
    assert not client.database_exists(f"{catalog}.no_such_db_x")
