"""What a hive catalog lets a location be and what it lets the metastore delete (on tests/unit/catalog/fake_hms.py).

The fake records the directories HMS would delete (``FakeHms.deleted``); the same cases
run against a real metastore, with real directories, in tests/integration/test_locations.py.
"""

from __future__ import annotations

import copy
import threading

import pytest
from fake_hms import WAREHOUSE, FakeHms

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.hive import HiveCatalog
from catalogd.catalog.memory import MemoryCatalog
from catalogd.config import parse_config
from catalogd.errors import (
    ConfigError,
    InvalidArgumentError,
    PermissionDeniedError,
    TableAlreadyExistsError,
)
from catalogd.manager import CatalogManager
from catalogd.model import Column, Database, Table, TableKind, TableUpdate

SALES = f"{WAREHOUSE}/sales.db"


@pytest.fixture
def catalog(fake: FakeHms) -> HiveCatalog:
    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    cat.session.attach(fake)  # type: ignore[arg-type]
    cat.create_database(Database("sales"))
    return cat


def table(name: str = "t", **kwargs: object) -> Table:
    kwargs.setdefault("columns", [Column("id", "bigint")])
    return Table(name=name, database="sales", **kwargs)  # type: ignore[arg-type]


def behind_our_back(fake: FakeHms, name: str, location: str, external: bool = False) -> None:
    """A table made directly in the metastore (as any HMS client can), not through catalogd."""
    tbl = codec.to_hms_table(table(name, location=location), None)
    if external:
        tbl.parameters["EXTERNAL"] = "TRUE"
    fake.create_table(tbl)


# ---------------------------------------------------------------- where objects may live


@pytest.mark.parametrize("location", [
    "file:/victim", "file:/warehouse/../victim", f"{SALES}/data/../../../victim", "file:/warehousex/t",
    "file:/warehouse", "hdfs://nn/warehouse/t",
])
def test_a_table_outside_the_warehouse_is_denied_and_not_created(catalog: HiveCatalog, fake: FakeHms,
                                                                  location: str) -> None:
    with pytest.raises(PermissionDeniedError, match="allowed"):
        catalog.create_table(table(location=location, kind=TableKind.EXTERNAL))
    assert ("sales", "t") not in fake.tables


def test_databases_and_partitions_are_confined_too(catalog: HiveCatalog, fake: FakeHms) -> None:
    with pytest.raises(PermissionDeniedError):
        catalog.create_database(Database("x", location="file:/victim"))
    assert "x" not in fake.databases
    catalog.create_table(table(partition_keys=[Column("ds", "string")]))
    with pytest.raises(PermissionDeniedError):
        catalog.add_partition("sales", "t", {"ds": "1"}, location="file:/victim")
    assert not fake.get_partitions("sales", "t")
    # Inside the warehouse, beside the table: fine; inside another table's directory: not.
    catalog.add_partition("sales", "t", {"ds": "2"}, location=f"{SALES}/elsewhere")
    catalog.create_table(table("u"))
    with pytest.raises(PermissionDeniedError, match=r"inside the directory of table sales\.u"):
        catalog.add_partition("sales", "t", {"ds": "3"}, location=f"{SALES}/u/ds=3")


def test_allowed_locations_replace_the_warehouse(fake: FakeHms) -> None:
    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)], allowed_locations=["file:/lake/", f"{WAREHOUSE}"])
    cat.session.attach(fake)  # type: ignore[arg-type]
    cat.create_database(Database("sales"))
    made = cat.create_table(table("ext", location="file:///lake//raw/../events/", kind=TableKind.EXTERNAL))
    assert made.location == "file:/lake/events"  # what was checked is what HMS got
    with pytest.raises(PermissionDeniedError):
        cat.create_table(table("x", location="file:/lakehouse/x", kind=TableKind.EXTERNAL))


def test_a_bad_allowed_location_stops_the_catalog(fake: FakeHms) -> None:
    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)], allowed_locations=["lake"])
    cat.session.attach(fake)  # type: ignore[arg-type]
    cat.session.open = lambda timeout=60.0: None  # type: ignore[method-assign]
    with pytest.raises(ConfigError, match="allowed-locations"):
        cat.open()


def test_a_table_on_another_tables_directory_is_denied(catalog: HiveCatalog, fake: FakeHms) -> None:
    a = catalog.create_table(table("a"))
    for location in (a.location, f"{a.location}/", f"{a.location}/sub", SALES):
        with pytest.raises(PermissionDeniedError, match="cannot be used"):
            catalog.create_table(table("b", location=location))
    # Nor by default: a table whose default directory is already someone's.
    behind_our_back(fake, "c", f"{SALES}/d")
    catalog.session.locations.reconcile()  # what a background pass does
    with pytest.raises(PermissionDeniedError, match=r"table sales\.c"):
        catalog.create_table(table("d"))
    assert sorted(n for d, n in fake.tables if d == "sales") == ["a", "c"]


def test_an_existing_table_is_still_already_exists(catalog: HiveCatalog) -> None:
    catalog.create_table(table("a"))
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table(table("a"))
    assert catalog.create_table(table("a"), ignore_if_exists=True).name == "a"


# ---------------------------------------------------------------- what drops delete


def test_dropping_a_table_outside_the_roots_deletes_nothing(catalog: HiveCatalog, fake: FakeHms) -> None:
    behind_our_back(fake, "v", "file:/victim")
    catalog.drop_table("sales", "v")
    assert ("sales", "v") not in fake.tables
    assert fake.deleted == []


def test_dropping_a_table_deletes_its_own_directory(catalog: HiveCatalog, fake: FakeHms) -> None:
    made = catalog.create_table(table("a"))
    catalog.drop_table("sales", "a")
    assert fake.deleted == [made.location]


def test_a_shared_directory_is_never_deleted(catalog: HiveCatalog, fake: FakeHms) -> None:
    a = catalog.create_table(table("a"))
    behind_our_back(fake, "b", a.location or "")
    behind_our_back(fake, "c", f"{a.location}/inner")
    catalog.drop_table("sales", "b")
    catalog.drop_table("sales", "c")  # inside a's directory
    catalog.drop_table("sales", "a")
    assert fake.deleted == [a.location]  # only the last one out deletes it


def test_an_external_table_made_managed_behind_our_back_keeps_outside_files(catalog: HiveCatalog,
                                                                             fake: FakeHms) -> None:
    behind_our_back(fake, "e", "file:/victim", external=True)
    tbl = fake.get_table("sales", "e")
    tbl.parameters["EXTERNAL"] = "FALSE"
    tbl.tableType = codec.MANAGED_TABLE
    fake.alter_table("sales", "e", tbl)
    catalog.drop_table("sales", "e", purge=True)
    assert fake.deleted == []


def test_partitions_outside_the_roots_are_dropped_without_their_files(catalog: HiveCatalog,
                                                                       fake: FakeHms) -> None:
    t = catalog.create_table(table(partition_keys=[Column("ds", "string")]))
    catalog.add_partition("sales", "t", {"ds": "in"})
    catalog.add_partition("sales", "t", {"ds": "beside"}, location=f"{SALES}/beside")
    part = copy.deepcopy(fake.get_partition("sales", "t", ["in"]))
    part.values, part.sd.location = ["out"], "file:/victim"
    fake.add_partition(part)  # behind our back
    catalog.drop_partition("sales", "t", {"ds": "out"}, purge=True)
    assert fake.deleted == []
    catalog.drop_partition("sales", "t", {"ds": "in"})
    assert fake.deleted == [f"{t.location}/ds=in"]
    fake.add_partition(part)
    catalog.drop_table("sales", "t")
    assert fake.deleted[1:] == [t.location, f"{SALES}/beside"]
    assert "file:/victim" not in fake.deleted


def test_a_custom_partition_whose_parent_hms_would_remove_keeps_its_files(catalog: HiveCatalog,
                                                                          fake: FakeHms) -> None:
    catalog.create_table(table(partition_keys=[Column("ds", "string"), Column("hr", "string")]))
    catalog.add_partition("sales", "t", {"ds": "1", "hr": "0"}, location=f"{SALES}/custom")
    # HMS would also remove <sales.db> if it were empty: the partition goes, its files stay.
    catalog.drop_partition("sales", "t", {"ds": "1", "hr": "0"})
    assert fake.deleted == []


def test_a_cascading_database_drop_judges_each_table(catalog: HiveCatalog, fake: FakeHms) -> None:
    own = catalog.create_table(table("own"))
    behind_our_back(fake, "out", "file:/victim")
    catalog.drop_database("sales", cascade=True)
    assert "sales" not in fake.databases
    assert fake.deleted == [own.location, SALES]


def test_a_database_directory_holding_another_databases_table_stays(catalog: HiveCatalog, fake: FakeHms) -> None:
    catalog.create_database(Database("hr"))
    catalog.create_table(Table(name="staff", database="hr", columns=[Column("id", "int")], location=f"{SALES}/staff"))
    catalog.drop_database("sales", cascade=True)
    assert fake.deleted == []
    assert ("hr", "staff") in fake.tables


# ---------------------------------------------------------------- one operation per name at a time


def test_create_and_drop_of_one_name_never_interleave(catalog: HiveCatalog, fake: FakeHms) -> None:
    inside = threading.Event()
    release = threading.Event()
    real_drop = fake.drop_table_with_environment_context

    def slow_drop(*args: object) -> None:
        inside.set()
        release.wait(10)
        real_drop(*args)  # type: ignore[arg-type]

    catalog.create_table(table("a"))
    fake.drop_table_with_environment_context = slow_drop  # type: ignore[method-assign]
    dropper = threading.Thread(target=catalog.drop_table, args=("sales", "a"))
    dropper.start()
    assert inside.wait(10)
    created: list[Table] = []
    creator = threading.Thread(target=lambda: created.append(catalog.create_table(table("a"))))
    creator.start()
    creator.join(0.5)
    assert creator.is_alive(), "the create ran while the drop of the same name was under way"
    release.set()
    dropper.join(10)
    creator.join(10)
    assert created and ("sales", "a") in fake.tables


# ---------------------------------------------------------------- reserved properties, memory names


def test_reserved_properties_are_refused_at_create_as_at_alter(catalog: HiveCatalog) -> None:
    config = parse_config("catalogs:\n  - {name: mem, type: memory, default: true}\n")
    manager = CatalogManager(config)
    manager.open()
    manager.create_database(Database("sales", catalog="mem"))
    for key in ("catalogd.dt.query", "catalogd.stage.id", "catalogd.last-commit", "Catalogd.Generic"):
        with pytest.raises(InvalidArgumentError, match="catalogd's own"):
            manager.create_table(Table(name="t", database="sales", catalog="mem", columns=[Column("id", "int")],
                                       properties={key: "x"}))
    assert manager.catalog("mem").list_tables("sales") == []
    with pytest.raises(InvalidArgumentError, match="catalogd's own"):
        catalog.alter_table("sales", catalog.create_table(table("a")).name,
                            TableUpdate(set_properties={"catalogd.dt.query": "x"}))


@pytest.mark.parametrize("name", ["..", "a.b", "a/b", "", "a b", "x" * 129, "é"])
def test_memory_catalogs_refuse_names_hive_refuses(name: str) -> None:
    mem = MemoryCatalog("mem")
    with pytest.raises(InvalidArgumentError, match="letters, digits and underscores"):
        mem.create_database(Database(name))
    with pytest.raises(InvalidArgumentError, match="letters, digits and underscores"):
        mem.create_table(Table(name=name, database="default", columns=[Column("id", "int")]))
    mem.create_table(Table(name="ok_1", database="default", columns=[Column("id", "int")]))
    with pytest.raises(InvalidArgumentError, match="letters, digits and underscores"):
        mem.rename_table("default", "ok_1", name)
    assert mem.list_databases() == ["default"] and mem.list_tables("default") == ["ok_1"]


# ---------------------------------------------------------------- what the checks read again


def test_catalogd_writes_are_seen_at_once_changes_behind_its_back_at_the_next_pass(
        catalog: HiveCatalog, fake: FakeHms) -> None:
    catalog.create_table(table("a"))
    catalog.create_table(table("x"))
    # catalogd's own change of a table is seen by the next check...
    catalog.rename_table("sales", "a", "b")
    with pytest.raises(PermissionDeniedError, match=r"table sales\.b"):
        catalog.create_table(table("c", location=f"{SALES}/b"))
    # ... a location changed behind catalogd's back once a background pass has read it.
    fake.tables[("sales", "b")].sd.location = f"{SALES}/moved"
    catalog.create_table(table("d", location=f"{SALES}/moved/inner"))
    catalog.drop_table("sales", "d")
    catalog.session.locations.reconcile()
    with pytest.raises(PermissionDeniedError, match=r"table sales\.b"):
        catalog.create_table(table("d", location=f"{SALES}/moved/inner"))
    behind_our_back(fake, "new", f"{SALES}/n")
    catalog.session.locations.reconcile()
    with pytest.raises(PermissionDeniedError, match=r"table sales\.new"):
        catalog.create_table(table("n"))
    # A table dropped behind catalogd's back frees its directory at the next pass.
    fake.drop_table("sales", "new", False)
    catalog.session.locations.reconcile()
    catalog.create_table(table("n"))
