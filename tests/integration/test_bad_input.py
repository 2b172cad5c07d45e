"""Bad input gives the typed error and changes nothing, on both backends.

Each case is tried through the Python client (which checks names and types
before sending) and, where the client would refuse to send it, as a raw Thrift
request, so the daemon's own checks are proven too.
"""

from __future__ import annotations

import pytest

from catalogd import wire
from catalogd.errors import (
    CatalogNotFoundError,
    DatabaseAlreadyExistsError,
    InvalidArgumentError,
    TableAlreadyExistsError,
)
from catalogd.gen.catalogd_thrift import ttypes as t
from catalogd.model import Column

from .helpers import raw_thrift

pytestmark = pytest.mark.integration


@pytest.fixture
def snapshot(client, db):
    """Everything a bad request could have touched: catalogs, databases, the db's tables."""
    client.create_table(f"{db}.keep", "id bigint", properties={"a": "1"})

    def take():
        return (
            [c.name for c in client.list_catalogs()],
            {c: client.list_databases(c) for c in ("main", "scratch")},
            client.list_tables(db),
            client.get_table(f"{db}.keep").columns,
            client.get_table(f"{db}.keep").properties.get("a"),
        )

    return take


def raw_error(daemon, call):
    """The catalogd error a raw Thrift request ends with (fails the test if it succeeds)."""
    with raw_thrift(daemon.address) as c:
        try:
            call(c)
        except wire.THRIFT_ERRORS as e:
            return wire.error_from_thrift(e)
    raise AssertionError("the daemon accepted the request")


@pytest.mark.parametrize("bad", ["a..b", "1-bad", "db.", "`unclosed", "x" * 200])
def test_bad_database_names(client, daemon, catalog, db, snapshot, bad):
    before = snapshot()
    with pytest.raises(InvalidArgumentError):
        client.create_database(f"{catalog}.{bad}")
    with pytest.raises(InvalidArgumentError):
        client.create_table(f"{catalog}.{bad}.t", "id int")
    err = raw_error(daemon, lambda c: c.createDatabase(t.Database(name=bad, catalog=catalog), False))
    assert isinstance(err, InvalidArgumentError)
    assert snapshot() == before


@pytest.mark.parametrize("bad", ["a..b", "1-bad", "has space"])
def test_bad_table_names(client, daemon, db, snapshot, bad):
    before = snapshot()
    with pytest.raises(InvalidArgumentError):
        client.create_table(f"{db}.{bad}", "id int")
    with pytest.raises(InvalidArgumentError):
        client.rename_table(f"{db}.keep", bad)
    catalog, database = db.split(".")
    table = t.Table(name=bad, database=database, catalog=catalog, columns=[t.Column(name="id", type="int")],
                    partitionKeys=[], format="parquet", kind=t.TableKind.MANAGED, properties={})
    assert isinstance(raw_error(daemon, lambda c: c.createTable(table, False)), InvalidArgumentError)
    path = t.ObjectPath(catalog=catalog, database=database, name="keep")
    assert isinstance(raw_error(daemon, lambda c: c.renameTable(path, bad, False)), InvalidArgumentError)
    assert snapshot() == before


def test_unknown_catalog(client, db, snapshot):
    before = snapshot()
    with pytest.raises(CatalogNotFoundError):
        client.create_database("no_such_catalog.d")
    with pytest.raises(CatalogNotFoundError):
        client.create_table("no_such_catalog.d.t", "id int")
    with pytest.raises(CatalogNotFoundError):
        client.list_databases("no_such_catalog")
    with pytest.raises(CatalogNotFoundError):
        client.drop_database("no_such_catalog.d", if_exists=True)
    assert snapshot() == before


@pytest.mark.parametrize("bad_type", ["intx", "decimal(50,2)", "varchar", "array<>", "map<string>", "struct<a int>"])
def test_bad_column_type(client, db, snapshot, bad_type):
    before = snapshot()
    with pytest.raises(InvalidArgumentError):
        client.create_table(f"{db}.t", f"id {bad_type}")
    with pytest.raises(InvalidArgumentError):  # sent as is: the daemon checks too
        client.create_table(f"{db}.t", [Column("id", bad_type)])
    with pytest.raises(InvalidArgumentError):
        client.create_table(f"{db}.t", [Column("id", "int")], partitioned_by=[Column("ds", bad_type)])
    with pytest.raises(InvalidArgumentError):
        client.alter_table(f"{db}.keep", set_properties={"a": "2"}, add_columns=[Column("n", bad_type)])
    assert snapshot() == before


def test_duplicate_columns(client, db, snapshot):
    before = snapshot()
    with pytest.raises(InvalidArgumentError, match="duplicate"):
        client.create_table(f"{db}.t", "id int, ID string")
    with pytest.raises(InvalidArgumentError, match="duplicate"):
        client.create_table(f"{db}.t", [Column("id", "int"), Column("Id", "string")])
    with pytest.raises(InvalidArgumentError, match="duplicate"):
        client.create_table(f"{db}.t", "id int, ds string", partitioned_by="ds string")
    with pytest.raises(InvalidArgumentError):
        client.create_table(f"{db}.t", [])
    assert snapshot() == before


def test_duplicate_creates(client, db, snapshot):
    before = snapshot()
    with pytest.raises(DatabaseAlreadyExistsError):
        client.create_database(db, comment="again")
    with pytest.raises(TableAlreadyExistsError):
        client.create_table(f"{db}.keep", "other string", properties={"a": "2"})
    assert snapshot() == before
