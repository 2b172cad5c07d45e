"""The read-only catalog ``ro`` (a hive catalog on main's metastore): reads work, every write is refused."""

from __future__ import annotations

import pytest

from catalogd.errors import PermissionDeniedError
from catalogd.model import Column

pytestmark = pytest.mark.integration


@pytest.fixture
def ro_db(client, main_db):
    """A database with one table, made through ``main``, seen through ``ro`` (returns ``ro.<db>``)."""
    client.alter_database(main_db, set_properties={"p": "1"})
    client.create_table(f"{main_db}.t", "id bigint COMMENT 'k'", partitioned_by="ds string", properties={"a": "1"})
    return "ro." + main_db.split(".")[1]


def state(client, main_db):
    return (
        client.list_databases("main"),
        client.get_database(main_db),
        client.list_tables(main_db),
        client.get_table(f"{main_db}.t"),
    )


def test_reads_work(client, main_db, ro_db):
    info = client.get_catalog("ro")
    assert (info.type, info.read_only, info.default) == ("hive", True, False)
    assert client.get_catalog("main").read_only is False
    name = ro_db.split(".")[1]
    assert name in client.list_databases("ro")
    assert client.database_exists(ro_db)
    assert client.get_database(ro_db).properties == {"p": "1"}
    assert client.list_tables(ro_db) == ["t"]
    assert client.table_exists(f"{ro_db}.t")
    table = client.get_table(f"{ro_db}.t")
    assert table.catalog == "ro"
    assert table.columns == [Column("id", "bigint", "k")]
    assert table.partition_keys == [Column("ds", "string")]
    assert table.location == client.get_table(f"{main_db}.t").location


WRITES = {
    "create_database": lambda c, db: c.create_database("ro.brand_new_db"),
    "create_database_if_not_exists": lambda c, db: c.create_database(db, if_not_exists=True),
    "alter_database": lambda c, db: c.alter_database(db, set_properties={"p": "2"}),
    "drop_database": lambda c, db: c.drop_database(db, cascade=True),
    "drop_database_if_exists": lambda c, db: c.drop_database("ro.not_there", if_exists=True),
    "create_table": lambda c, db: c.create_table(f"{db}.new_t", "id int"),
    "alter_table_properties": lambda c, db: c.alter_table(f"{db}.t", set_properties={"a": "2"}),
    "alter_table_comment": lambda c, db: c.alter_table(f"{db}.t", comment="changed"),
    "alter_table_add_columns": lambda c, db: c.alter_table(f"{db}.t", add_columns="extra string"),
    "rename_table": lambda c, db: c.rename_table(f"{db}.t", "renamed"),
    "drop_table": lambda c, db: c.drop_table(f"{db}.t", purge=True),
    "drop_table_if_exists": lambda c, db: c.drop_table(f"{db}.not_there", if_exists=True),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_is_refused(client, main_db, ro_db, write):
    before = state(client, main_db)
    with pytest.raises(PermissionDeniedError, match="read-only"):
        WRITES[write](client, ro_db)
    assert state(client, main_db) == before


def test_cli_write_is_refused(run_cli, client, main_db, ro_db):
    before = state(client, main_db)
    code, out, err = run_cli("db", "drop", ro_db, "--cascade")
    assert (code, out) == (1, "")
    assert err.startswith("error: permission-denied: ")
    assert state(client, main_db) == before
