"""A memory catalog keeps each object once: the catalog API and the HMS endpoint read and write one store."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from catalogd.catalog.memory import MemoryCatalog
from catalogd.hive_idl import ThriftHiveMetastore as T
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.memory import MemoryMetastore
from catalogd.model import Column, Database, DatabaseUpdate, Function, Table


def call(ms: MemoryMetastore, method: str, **kwargs: object) -> Any:
    return ms.call(method, getattr(T, f"{method}_args")(**kwargs))


def spark_table(name: str, database: str = "db") -> hms.Table:
    sd = hms.StorageDescriptor(cols=[hms.FieldSchema("id", "bigint", None)], location=None,
                               serdeInfo=hms.SerDeInfo(parameters={}), parameters={})
    return hms.Table(tableName=name, dbName=database, sd=sd, parameters={}, tableType="MANAGED_TABLE",
                     partitionKeys=[hms.FieldSchema("ds", "string", None)])


def test_partitions_follow_a_rename_through_the_api(tmp_path: Path) -> None:
    catalog = MemoryCatalog("scratch")
    ms = MemoryMetastore(catalog, tmp_path / "data" / "scratch-warehouse" / "scratch")
    catalog.create_database(Database("db"))
    call(ms, "create_table", tbl=spark_table("t"))
    call(ms, "append_partition", db_name="db", tbl_name="t", part_vals=["a"])
    catalog.rename_table("db", "t", "u")
    parts = call(ms, "get_partitions", db_name="db", tbl_name="u", max_parts=-1)
    assert [(p.values, p.tableName) for p in parts] == [(["a"], "u")]


def test_rename_database_through_the_api_takes_everything_along(tmp_path: Path) -> None:
    catalog = MemoryCatalog("scratch")
    ms = MemoryMetastore(catalog, tmp_path / "data" / "scratch-warehouse" / "scratch")
    catalog.create_database(Database("db"))
    call(ms, "create_table", tbl=spark_table("t"))
    call(ms, "append_partition", db_name="db", tbl_name="t", part_vals=["a"])
    catalog.create_function(Function("f", "db", class_name="com.example.F"))
    catalog.rename_database("db", "db2")
    assert catalog.list_tables("db2") == ["t"] and catalog.list_functions("db2") == ["f"]
    tbl = call(ms, "get_table", dbname="db2", tbl_name="t")
    assert tbl.dbName == "db2"
    assert len(call(ms, "get_partitions", db_name="db2", tbl_name="t", max_parts=-1)) == 1
    assert call(ms, "get_function", dbName="db2", funcName="f").dbName == "db2"


def test_api_and_endpoint_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    catalog = MemoryCatalog("scratch")
    ms = MemoryMetastore(catalog, tmp_path / "data" / "scratch-warehouse" / "scratch")
    catalog.create_database(Database("db"))
    errors: list[BaseException] = []

    def api(i: int) -> None:
        try:
            for j in range(20):
                catalog.create_table(Table(f"a{i}_{j}", "db", columns=[Column("id", "bigint")]))
                catalog.alter_database("db", DatabaseUpdate(set_properties={f"a{i}": str(j)}))
        except BaseException as e:  # reported below
            errors.append(e)

    def endpoint(i: int) -> None:
        try:
            for j in range(20):
                call(ms, "create_table", tbl=spark_table(f"s{i}_{j}"))
                call(ms, "append_partition", db_name="db", tbl_name=f"s{i}_{j}", part_vals=["x"])
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=f, args=(i,)) for i in range(4) for f in (api, endpoint)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    names = call(ms, "get_all_tables", db_name="db")
    assert len(names) == 160 and len(catalog.list_tables("db")) == 160
    assert catalog.get_database("db").properties == {f"a{i}": "19" for i in range(4)}

