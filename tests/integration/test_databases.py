"""Database API through a real daemon, against both backends (``main`` hive, ``scratch`` memory)."""

from __future__ import annotations

import pytest

from catalogd.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    UnsupportedError,
)

from .helpers import local_path

pytestmark = pytest.mark.integration


def test_create_and_describe_round_trip(client, catalog, unique_name, tmp_path):
    name = f"{catalog}.{unique_name('db')}"
    location = tmp_path / "custom-location"
    if catalog == "main":
        # Inside the warehouse: a location outside the catalog's allowed-locations is refused.
        location = local_path(client.get_catalog("main").warehouse) / f"custom_{name.split('.')[1]}"
    try:
        created = client.create_database(
            name, comment="sales data", location=location.as_uri(), properties={"team": "data", "tier": "gold"}
        )
        got = client.get_database(name)
        assert created == got
        assert got.catalog == catalog
        assert got.name == name.split(".")[1]
        assert got.comment == "sales data"
        assert local_path(got.location) == location
        assert got.properties == {"team": "data", "tier": "gold"}
        assert got.name in client.list_databases(catalog)
        assert client.database_exists(name)
    finally:
        client.drop_database(name, if_exists=True, cascade=True)


def test_default_location_is_under_the_catalog(client, db):
    got = client.get_database(db)
    assert got.location
    assert got.location.rstrip("/").endswith(got.name + ".db")


def test_create_duplicate_fails_and_if_not_exists_changes_nothing(client, db):
    before = client.get_database(db)
    with pytest.raises(DatabaseAlreadyExistsError):
        client.create_database(db, comment="other")
    again = client.create_database(db, comment="other", properties={"x": "1"}, if_not_exists=True)
    assert again == before
    assert client.get_database(db) == before


def test_alter_properties_set_and_unset(client, db):
    client.alter_database(db, set_properties={"keep": "yes", "gone": "soon"})
    altered = client.alter_database(db, set_properties={"new": "1", "keep": "still"})
    assert altered.properties == {"keep": "still", "gone": "soon", "new": "1"}

    altered = client.alter_database(db, unset_properties=["gone", "never-there"])
    assert altered.properties == {"keep": "still", "new": "1"}
    assert client.get_database(db) == altered


def test_alter_comment_applies_or_is_refused_without_change(client, catalog, db):
    """A new comment takes, or (HMS 2.3 cannot store one) UnsupportedError and nothing changed.

    Never silently ignored: HMS 2.3 drops a new description without an error.
    """
    client.alter_database(db, set_properties={"p": "1"})
    before = client.get_database(db)
    try:
        altered = client.alter_database(db, comment="second", set_properties={"p": "2"})
    except UnsupportedError as e:
        assert catalog == "main", "the memory catalog must support comments"
        assert "comment" in str(e)
        assert client.get_database(db) == before
    else:
        assert altered.comment == "second"
        assert altered.properties == {"p": "2"}
        assert client.get_database(db) == altered
    # Repeating the current comment is no change, so every backend accepts it.
    current = client.get_database(db)
    again = client.alter_database(db, comment=current.comment or "", set_properties={"q": "1"})
    assert again.properties["q"] == "1"


def test_alter_missing_database(client, catalog):
    with pytest.raises(DatabaseNotFoundError):
        client.alter_database(f"{catalog}.no_such_db_x", comment="x")


def test_drop_if_exists_both_ways(client, catalog, unique_name):
    name = f"{catalog}.{unique_name('db')}"
    with pytest.raises(DatabaseNotFoundError):
        client.drop_database(name)
    client.drop_database(name, if_exists=True)  # no error

    client.create_database(name)
    client.drop_database(name)
    assert not client.database_exists(name)
    assert name.split(".")[1] not in client.list_databases(catalog)
    with pytest.raises(DatabaseNotFoundError):
        client.get_database(name)


def test_drop_non_empty_needs_cascade(client, db):
    client.create_table(f"{db}.t", "id bigint")
    with pytest.raises(DatabaseNotEmptyError):
        client.drop_database(db)
    assert client.database_exists(db)
    assert client.list_tables(db) == ["t"]
    assert client.get_table(f"{db}.t").columns[0].name == "id"

    client.drop_database(db, cascade=True)
    assert not client.database_exists(db)
    with pytest.raises(DatabaseNotFoundError):
        client.list_tables(db)


def test_drop_default_is_refused(client, catalog):
    before = client.list_databases(catalog)
    for cascade in (False, True):
        with pytest.raises(InvalidArgumentError, match="default database"):
            client.drop_database(f"{catalog}.default", cascade=cascade)
    assert client.database_exists(f"{catalog}.default")
    assert client.list_databases(catalog) == before


def test_rename_database(client, catalog, unique_name, run_cli):
    from catalogd.errors import DatabaseAlreadyExistsError, DatabaseNotFoundError, UnsupportedError

    name = f"{catalog}.{unique_name('db')}"
    new = unique_name("db")
    client.create_database(name)
    try:
        client.create_table(f"{name}.t", "id bigint")
        if catalog == "main":
            with pytest.raises(UnsupportedError, match="cannot rename a database"):
                client.rename_database(name, new)
            assert client.database_exists(name)
            cli = run_cli("db", "rename", name, new)
            assert cli.code == 1 and cli.stderr.startswith("error: unsupported: ")
        else:
            client.create_database(f"{catalog}.taken")
            with pytest.raises(DatabaseAlreadyExistsError):
                client.rename_database(name, "taken")
            client.rename_database(name, new)
            assert not client.database_exists(name)
            assert client.list_tables(f"{catalog}.{new}") == ["t"]
            assert client.get_table(f"{catalog}.{new}.t").database == new
            client.drop_database(f"{catalog}.taken")
            name = f"{catalog}.{new}"
        with pytest.raises(DatabaseNotFoundError):
            client.rename_database(f"{catalog}.no_such_db", "x")
        client.rename_database(f"{catalog}.no_such_db", "x", if_exists=True)
    finally:
        client.drop_database(name, if_exists=True, cascade=True)


def test_the_metastore_answers_tables_of_a_missing_database_with_no_result(hms, client, unique_name):
    """What catalogd's client relies on to tell a database dropped meanwhile from a metastore fault
    (HMS 2.3: no result at all, "unknown result"); through catalogd it reads as not found."""
    from thrift.Thrift import TApplicationException

    gone = unique_name("gone")
    with pytest.raises(TApplicationException) as raised:
        hms.call("get_table_objects_by_name", gone, ["t"])
    assert raised.value.type == TApplicationException.MISSING_RESULT
    with pytest.raises(DatabaseNotFoundError):
        client.list_tables(f"main.{gone}")
