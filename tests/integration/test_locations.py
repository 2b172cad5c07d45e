"""Locations are confined and catalogd deletes only what it owns: each way the issue found to make
a drop delete a directory outside the catalog, against a real daemon and a real metastore.

Every victim is a directory the test creates under its own ``tmp_path``; the session
daemon's ``main`` catalog keeps its default ``allowed-locations`` (its warehouse), which
``tmp_path`` is outside of. Objects "made behind catalogd's back" are written straight
into the embedded metastore's port, as any HMS client can.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from polling import wait_until

from catalogd.catalog import hive_codec as codec
from catalogd.client import CatalogClient
from catalogd.errors import (
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from catalogd.hive_idl import ttypes as hms_types
from catalogd.metastore.client import MetastoreClient
from catalogd.model import Column, Table, TableKind

from .helpers import embedded_catalog, local_path

pytestmark = pytest.mark.integration


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A directory outside every allowed location, with a file that must survive."""
    path = tmp_path / "victim"
    path.mkdir()
    (path / "precious.txt").write_text("keep me")
    return path


def intact(victim: Path) -> bool:
    return (victim / "precious.txt").read_text() == "keep me"


def hms_table(hms: MetastoreClient, db: str, name: str, location: str, external: bool = False,
              partitioned: bool = False) -> None:
    table = Table(name=name, database=db, columns=[Column("id", "bigint")], location=location,
                  partition_keys=[Column("ds", "string")] if partitioned else [],
                  kind=TableKind.EXTERNAL if external else TableKind.MANAGED)
    hms.call("create_table", codec.to_hms_table(table, None), idempotent=False)


# ---------------------------------------------------------------- a location anywhere


def test_table_create_with_an_outside_location_is_denied(run_cli, client, main_db, victim):
    code, out, err = run_cli("table", "create", f"{main_db}.t", "--schema", "id int", "--location", victim.as_uri())
    assert (code, out) == (1, "")
    assert "permission-denied" in err and "allowed locations" in err
    assert not client.table_exists(f"{main_db}.t")
    code, _, err = run_cli("table", "drop", f"{main_db}.t")
    assert code == 1 and "not-found" in err
    assert intact(victim)


def test_dropping_a_table_made_outside_deletes_nothing(client, main_db, victim, hms):
    db = main_db.split(".")[1]
    hms_table(hms, db, "t", victim.as_uri())
    client.drop_table(f"{main_db}.t", purge=True)
    assert not client.table_exists(f"{main_db}.t")
    assert intact(victim)


def test_database_drop_with_cascade_deletes_nothing_outside(client, unique_name, victim, hms, tmp_path):
    name = f"main.{unique_name('db')}"
    with pytest.raises(PermissionDeniedError):
        client.create_database(name, location=victim.as_uri())
    assert not client.database_exists(name)
    client.create_database(name)
    try:
        own = local_path(client.create_table(f"{name}.own", "id bigint").location)
        hms_table(hms, name.split(".")[1], "outside", victim.as_uri())
        client.drop_database(name, cascade=True)
        assert not client.database_exists(name)
        assert intact(victim)
        assert not own.exists(), "the database's own table directory goes with it"
    finally:
        client.drop_database(name, if_exists=True, cascade=True)


def test_partition_drop_with_purge_deletes_nothing_outside(client, main_db, victim, hms):
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    with pytest.raises(PermissionDeniedError):
        client.add_partition(f"{main_db}.p", "ds=1", location=victim.as_uri())
    assert client.list_partitions(f"{main_db}.p") == []
    # The same partition, added straight into the metastore.
    tbl = hms.call("get_table", main_db.split(".")[1], "p")
    part = hms_types.Partition(values=["1"], dbName=tbl.dbName, tableName="p", sd=tbl.sd, parameters={})
    part.sd.location = victim.as_uri()
    hms.call("add_partition", part, idempotent=False)
    # Written behind catalogd's back: it shows once the cached listing expires (cache.ttl, 1 s).
    wait_until(lambda: [p.name for p in client.list_partitions(f"{main_db}.p")] == ["ds=1"], 30,
               "the partition added directly to show")
    client.drop_partition(f"{main_db}.p", "ds=1", purge=True)
    assert client.list_partitions(f"{main_db}.p") == []
    assert intact(victim)


def test_dot_dot_out_of_the_warehouse_is_denied(client, main_db, victim):
    db_dir = client.get_database(main_db).location
    depth = len(local_path(db_dir).parts) - 1  # up to `/`, then down to the victim
    for location in (f"{db_dir}/data/../{'../' * depth}{str(victim).lstrip('/')}",
                     f"{db_dir}/data/..//../../x", f"{db_dir}/..", f"{victim.as_uri()}/"):
        with pytest.raises(PermissionDeniedError):
            client.create_table(f"{main_db}.t", "id bigint", location=location)
        assert not client.table_exists(f"{main_db}.t")
    assert intact(victim)


def test_a_symlink_out_of_the_warehouse_is_denied(client, main_db, victim):
    db_dir = local_path(client.get_database(main_db).location)
    os.symlink(victim, db_dir / "link")
    with pytest.raises(PermissionDeniedError, match="outside"):
        client.create_table(f"{main_db}.t", "id bigint", location=f"file:{db_dir}/link/data")
    assert not (victim / "data").exists()
    assert intact(victim)


def test_an_external_table_switched_to_managed_keeps_outside_files(client, main_db, victim, hms):
    with pytest.raises(PermissionDeniedError):
        client.create_table(f"{main_db}.e", "id bigint", location=victim.as_uri(), external=True)
    hms_table(hms, main_db.split(".")[1], "e", victim.as_uri(), external=True)
    client.alter_table(f"{main_db}.e", set_properties={"EXTERNAL": "FALSE"})
    assert client.get_table(f"{main_db}.e").kind is TableKind.MANAGED  # HMS made it managed
    client.drop_table(f"{main_db}.e", purge=True)
    assert not client.table_exists(f"{main_db}.e")
    assert intact(victim)


@pytest.mark.spark
def test_table_b_on_table_a_directory(client, main_db, hms, spark):
    a = client.create_table(f"{main_db}.a", "id bigint")
    spark.range(3).write.insertInto(f"{main_db.split('.')[1]}.a")
    a_dir = local_path(a.location)
    a_files = sorted(p.name for p in a_dir.iterdir())
    assert a_files
    for location in (a.location, f"{a.location}/", f"{a.location}/inner"):
        with pytest.raises(PermissionDeniedError, match="cannot be used"):
            client.create_table(f"{main_db}.b", "id bigint", location=location)
    assert not client.table_exists(f"{main_db}.b")
    # B made on A's directory behind our back: dropping B leaves A's data to A.
    hms_table(hms, main_db.split(".")[1], "b", a.location)
    client.drop_table(f"{main_db}.b", purge=True)
    assert sorted(p.name for p in a_dir.iterdir()) == a_files
    spark.catalog.refreshTable(f"{main_db.split('.')[1]}.a")
    assert spark.table(f"{main_db.split('.')[1]}.a").count() == 3
    # And A, the last one using it, deletes it.
    client.drop_table(f"{main_db}.a")
    assert not a_dir.exists()


def test_a_stage_inside_an_outside_table_is_denied(client, main_db, victim, hms):
    db = main_db.split(".")[1]
    hms_table(hms, db, "t", victim.as_uri(), partitioned=True)
    with pytest.raises(PermissionDeniedError, match="allowed locations"):
        client.begin_stage(f"{main_db}.t", purpose="OVERWRITE_PARTITIONS")
    assert all((s.database, s.target) != (db, "t") for s in client.list_stages("main"))
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]
    client.drop_table(f"{main_db}.t")
    assert intact(victim)


# ---------------------------------------------------------------- explicit allowed-locations


def test_allowed_locations_of_a_catalog(daemon_factory, tmp_path, victim):
    lake = tmp_path / "lake"
    warehouse = tmp_path / "warehouse"
    lake.mkdir()
    d = daemon_factory(catalogs=[embedded_catalog("main", **{
        "warehouse": warehouse.as_uri(), "allowed-locations": [f"{lake.as_uri()}/", warehouse.as_uri()]})])
    with CatalogClient(d.address, timeout=60.0) as c:
        c.create_database("main.sales")
        ext = lake / "events"
        ext.mkdir()
        (ext / "part-0.csv").write_text("1\n")
        c.create_table("main.sales.events", "id int", format="csv", location=f"file://{lake}//events/",
                       external=True)
        assert local_path(c.get_table("main.sales.events").location) == ext
        made = c.create_table("main.sales.managed", "id int", location=f"{lake.as_uri()}/managed")
        assert local_path(made.location).is_dir()
        with pytest.raises(PermissionDeniedError, match="allowed locations"):
            c.create_table("main.sales.out", "id int", location=victim.as_uri())
        with pytest.raises(PermissionDeniedError, match="allowed root itself"):
            c.create_database("main.lake", location=lake.as_uri())
        c.drop_table("main.sales.events")
        assert (ext / "part-0.csv").exists(), "an external table's files stay"
        c.drop_table("main.sales.managed")
        assert not (lake / "managed").exists(), "a managed table inside the roots takes its directory along"
        c.drop_database("main.sales", cascade=True)
        assert not (warehouse / "sales.db").exists()
    assert intact(victim) and lake.is_dir() and warehouse.is_dir()


# ---------------------------------------------------------------- one name, one operation


def test_racing_create_and_drop_leave_every_table_its_directory(client, main_db, daemon):
    names = [f"{main_db}.r{i}" for i in range(8)]
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        with CatalogClient(daemon.address, timeout=120.0) as c:
            for round_ in range(12):
                name = names[(seed + round_) % len(names)]
                try:
                    if (seed + round_) % 2:
                        c.create_table(name, "id bigint")
                    else:
                        c.drop_table(name)
                except (TableAlreadyExistsError, TableNotFoundError):
                    pass
                except BaseException as e:
                    errors.append(e)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not [t for t in threads if t.is_alive()], "workers still racing after 300 s"
    assert not errors, errors
    survivors = client.list_tables(main_db)
    missing = [n for n in survivors if not local_path(client.get_table(f"{main_db}.{n}").location).is_dir()]
    assert not missing, f"tables without their directory: {missing} (of {survivors})"


# ---------------------------------------------------------------- bad input


def test_reserved_properties_are_refused_at_create(client, main_db, run_cli):
    for key in ("catalogd.dt.query", "catalogd.dt.freshness", "catalogd.stage.target", "catalogd.last-commit"):
        with pytest.raises(InvalidArgumentError, match="catalogd's own"):
            client.create_table(f"{main_db}.forged", "id bigint", properties={key: "x"})
    assert not client.table_exists(f"{main_db}.forged")
    code, out, _ = run_cli("--json", "dt", "list", main_db)
    assert code == 0 and "forged" not in out


@pytest.mark.parametrize("name", ["..", "a.b", "a/b", "a b"])
def test_memory_catalogs_refuse_bad_names(client, name, unique_name):
    with pytest.raises(InvalidArgumentError):
        client.create_database(f"scratch.`{name}`")
    db = f"scratch.{unique_name('db')}"
    client.create_database(db)
    try:
        with pytest.raises(InvalidArgumentError):
            client.create_table(f"{db}.`{name}`", "id bigint")
        assert client.list_tables(db) == []
        # The same names against hive: refused too (by the metastore).
        with pytest.raises((InvalidArgumentError, NotFoundError)):
            client.create_database(f"main.`{name}`")
    finally:
        client.drop_database(db, cascade=True)
    assert name not in client.list_databases("scratch")
