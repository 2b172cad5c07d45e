"""MemoryMetastore driven as the router drives it: real ``_args`` objects in, HMS values or exceptions out."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from catalogd.catalog.memory import MemoryCatalog
from catalogd.hive_idl import ThriftHiveMetastore as T
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.memory import MemoryMetastore
from catalogd.model import Column, Table, TableFormat, TableKind, TableUpdate

PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"


class Store:
    """A MemoryMetastore and a ``call`` taking keyword arguments of the method's ``_args``."""

    def __init__(self, tmp_path: Path) -> None:
        self.data_dir = tmp_path / "data"
        self.warehouse = self.data_dir / "scratch-warehouse" / "scratch"
        self.catalog = MemoryCatalog("scratch")
        self.ms = MemoryMetastore(self.catalog, self.warehouse)

    def __call__(self, method: str, **kwargs: Any) -> Any:
        args = getattr(T, f"{method}_args")(**kwargs)
        return self.ms.call(method, args)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path)
    s("create_database", database=hms.Database(name="db", description="d", parameters={"a": "1"}))
    return s


def sd(location: str | None = None, cols: list[tuple[str, str]] | None = None,
       serde_params: dict[str, str] | None = None) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(n, t, None) for n, t in (cols or [("id", "bigint"), ("v", "string")])],
        location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
        compressed=False, numBuckets=-1,
        serdeInfo=hms.SerDeInfo(name=None, serializationLib=PARQUET_SERDE,
                                parameters=serde_params or {"serialization.format": "1"}),
        bucketCols=[], sortCols=[], parameters={},
    )


def table(name: str, location: str | None = None, parts: list[tuple[str, str]] | None = None,
          table_type: str = "MANAGED_TABLE", params: dict[str, str] | None = None) -> hms.Table:
    p = dict(params or {})
    if table_type == "EXTERNAL_TABLE":
        p["EXTERNAL"] = "TRUE"
    return hms.Table(tableName=name, dbName="db", owner="spark", createTime=1700000000, lastAccessTime=0,
                     retention=0, sd=sd(location), partitionKeys=[hms.FieldSchema(n, t, None) for n, t in parts or []],
                     parameters=p, tableType=table_type)


def partition(tbl: str, values: list[str], location: str | None = None) -> hms.Partition:
    return hms.Partition(values=values, dbName="db", tableName=tbl, createTime=0, lastAccessTime=0,
                         sd=sd(location), parameters={"numFiles": "1"})


def victim(tmp_path: Path) -> Path:
    d = tmp_path / "victim"
    d.mkdir(parents=True, exist_ok=True)
    (d / "precious.txt").write_text("keep me")
    return d


def survives(d: Path) -> bool:
    return (d / "precious.txt").read_text() == "keep me"


# ---------------------------------------------------------------- databases


def test_database_lives_in_the_warehouse_and_the_catalog_sees_it(store: Store) -> None:
    db = store("get_database", name="db")
    assert db.locationUri == f"file://{store.warehouse}/db.db"
    assert db.description == "d" and db.parameters == {"a": "1"}
    assert (store.warehouse / "db.db").is_dir()
    assert store.catalog.get_database("db").properties == {"a": "1"}
    assert store("get_all_databases") == ["db", "default"]
    assert store("get_databases", pattern="d*|x") == ["db", "default"]
    assert store("get_databases", pattern="DB") == ["db"]


def test_database_errors(store: Store) -> None:
    with pytest.raises(hms.AlreadyExistsException):
        store("create_database", database=hms.Database(name="db"))
    with pytest.raises(hms.NoSuchObjectException):
        store("get_database", name="nope")
    store("create_table", tbl=table("t"))
    with pytest.raises(hms.InvalidOperationException):
        store("drop_database", name="db", deleteData=True, cascade=False)
    assert store("get_all_tables", db_name="db") == ["t"]


def test_alter_database_reaches_the_catalog(store: Store) -> None:
    db = store("get_database", name="db")
    db.parameters = {"b": "2"}
    store("alter_database", dbname="db", db=db)
    assert store.catalog.get_database("db").properties == {"b": "2"}
    assert store("get_database", name="db").parameters == {"b": "2"}


def test_unsupported_method_is_a_meta_exception(store: Store) -> None:
    with pytest.raises(hms.MetaException, match="catalogd: get_partitions_by_expr is not supported on memory "
                                                 "catalog scratch"):
        store.ms.call("get_partitions_by_expr", T.get_partitions_by_expr_args())


# ---------------------------------------------------------------- tables


def test_table_round_trips_exactly_and_is_not_shared(store: Store) -> None:
    spark_params = {"spark.sql.sources.provider": "parquet", "spark.sql.sources.schema":
                    '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
                    '{"name":"v","type":"string","nullable":true,"metadata":{}}]}', "x": "y"}
    given = table("t", params=spark_params)
    given.sd.serdeInfo.parameters = {"path": "whatever", "serialization.format": "1"}
    store("create_table_with_environment_context", tbl=given, environment_context=hms.EnvironmentContext({}))
    given.parameters["x"] = "changed"  # the caller's object is not what is stored
    got = store("get_table", dbname="db", tbl_name="t")
    expected = copy.deepcopy(given)
    expected.parameters["x"] = "y"
    expected.sd.location = f"file://{store.warehouse}/db.db/t"
    assert got == expected
    got.parameters["x"] = "mutated"
    assert store("get_table", dbname="db", tbl_name="t").parameters["x"] == "y"
    assert (store.warehouse / "db.db" / "t").is_dir()
    # The catalogd API sees it.
    model = store.catalog.get_table("db", "t")
    assert model.format is TableFormat.PARQUET and model.properties == {"x": "y"}
    assert [c.name for c in model.columns] == ["id", "v"]
    assert store("get_table_req", req=hms.GetTableRequest(dbName="db", tblName="t")).table == expected
    assert store("get_table_objects_by_name", dbname="db", tbl_names=["t", "nope"]) == [expected]
    req = hms.GetTablesRequest(dbName="db", tblNames=["t"])
    assert store("get_table_objects_by_name_req", req=req).tables == [expected]


def test_listing_and_meta(store: Store) -> None:
    store("create_table", tbl=table("t1"))
    store("create_table", tbl=table("ext", location="file:///nowhere/ext", table_type="EXTERNAL_TABLE"))
    view = hms.Table(tableName="v1", dbName="db", owner="spark", createTime=1, lastAccessTime=0, retention=0,
                     sd=sd(cols=[("id", "bigint")]), partitionKeys=[], parameters={},
                     viewOriginalText="SELECT id FROM t1", viewExpandedText="SELECT `t1`.`id` FROM `db`.`t1`",
                     tableType="VIRTUAL_VIEW")
    store("create_table", tbl=view)
    assert store("get_all_tables", db_name="db") == ["ext", "t1", "v1"]
    assert store("get_tables", db_name="db", pattern="t*|v*") == ["t1", "v1"]
    assert store("get_tables_by_type", db_name="db", pattern="*", tableType="VIRTUAL_VIEW") == ["v1"]
    metas = store("get_table_meta", db_patterns="db", tbl_patterns="*", tbl_types=["EXTERNAL_TABLE"])
    assert metas == [hms.TableMeta(dbName="db", tableName="ext", tableType="EXTERNAL_TABLE", comments=None)]
    assert store.catalog.get_view("db", "v1").view_text == "SELECT id FROM t1"
    assert store("get_table", dbname="db", tbl_name="v1").viewExpandedText == view.viewExpandedText


def test_table_errors(store: Store) -> None:
    store("create_table", tbl=table("t"))
    with pytest.raises(hms.AlreadyExistsException):
        store("create_table", tbl=table("t"))
    with pytest.raises(hms.NoSuchObjectException):
        store("get_table", dbname="db", tbl_name="nope")
    with pytest.raises(hms.NoSuchObjectException):
        store("create_table", tbl=hms.Table(tableName="t", dbName="nodb", sd=sd()))
    with pytest.raises(hms.NoSuchObjectException):
        store("drop_table", dbname="db", name="nope", deleteData=True)


def test_alter_table_adds_columns_and_properties_in_the_catalog(store: Store) -> None:
    store("create_table", tbl=table("t"))
    tbl = store("get_table", dbname="db", tbl_name="t")
    tbl.sd.cols.append(hms.FieldSchema("extra", "int", None))
    tbl.parameters["owner_note"] = "n"
    store("alter_table_with_environment_context", dbname="db", tbl_name="t", new_tbl=tbl,
          environment_context=hms.EnvironmentContext({}))
    assert store("get_table", dbname="db", tbl_name="t") == tbl
    model = store.catalog.get_table("db", "t")
    assert [c.name for c in model.columns] == ["id", "v", "extra"] and model.properties["owner_note"] == "n"


def test_analyze_statistics_in_parameters_reach_the_catalog(store: Store) -> None:
    store("create_table", tbl=table("t"))
    tbl = store("get_table", dbname="db", tbl_name="t")
    tbl.parameters.update({"spark.sql.statistics.numRows": "3", "spark.sql.statistics.totalSize": "99"})
    store("alter_table", dbname="db", tbl_name="t", new_tbl=tbl)
    stats = store.catalog.get_table("db", "t").statistics
    assert (stats.row_count, stats.total_size) == (3, 99)


def test_rename_moves_a_managed_tables_directory(store: Store) -> None:
    store("create_table", tbl=table("t", parts=[("ds", "string")]))
    store("add_partition", new_part=partition("t", ["a"]))
    (store.warehouse / "db.db" / "t" / "ds=a" / "f").write_text("x")
    tbl = store("get_table", dbname="db", tbl_name="t")
    tbl.tableName = "u"
    store("alter_table", dbname="db", tbl_name="t", new_tbl=tbl)
    assert store("get_all_tables", db_name="db") == ["u"]
    assert store.catalog.list_tables("db") == ["u"]
    moved = store("get_table", dbname="db", tbl_name="u")
    assert moved.sd.location == f"file://{store.warehouse}/db.db/u"
    assert (store.warehouse / "db.db" / "u" / "ds=a" / "f").read_text() == "x"
    assert not (store.warehouse / "db.db" / "t").exists()
    part = store("get_partition", db_name="db", tbl_name="u", part_vals=["a"])
    assert part.sd.location == f"file://{store.warehouse}/db.db/u/ds=a" and part.tableName == "u"


def test_table_made_through_the_api_is_answered_from_the_codec(store: Store) -> None:
    store.catalog.create_table(Table(name="api", database="db", columns=[Column("id", "bigint")],
                                     format=TableFormat.ORC, kind=TableKind.MANAGED))
    tbl = store("get_table", dbname="db", tbl_name="api")
    assert tbl.sd.serdeInfo.serializationLib == "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
    assert tbl.sd.location == f"file://{store.warehouse}/db.db/api"
    assert (store.warehouse / "db.db" / "api").is_dir()
    assert "api" in store("get_all_tables", db_name="db")


def test_api_changes_reach_the_stored_hms_object(store: Store) -> None:
    store("create_table", tbl=table("t", params={"spark.sql.sources.provider": "parquet"}))
    store.catalog.alter_table("db", "t", TableUpdate(set_properties={"k": "v"}))
    got = store("get_table", dbname="db", tbl_name="t")
    assert got.parameters["k"] == "v" and got.parameters["spark.sql.sources.provider"] == "parquet"


def test_table_dropped_through_the_api_is_gone_with_its_files(store: Store) -> None:
    store("create_table", tbl=table("t", parts=[("ds", "string")]))
    store("add_partition", new_part=partition("t", ["a"]))
    assert (store.warehouse / "db.db" / "t" / "ds=a").is_dir()
    store.catalog.drop_table("db", "t")
    with pytest.raises(hms.NoSuchObjectException):
        store("get_table", dbname="db", tbl_name="t")
    assert not (store.warehouse / "db.db" / "t").exists()
    store("create_table", tbl=table("t", parts=[("ds", "string")]))
    assert store("get_partitions", db_name="db", tbl_name="t", max_parts=-1) == []


def test_drop_table_deletes_managed_files_only_with_delete_data(store: Store) -> None:
    store("create_table", tbl=table("keep"))
    store("drop_table", dbname="db", name="keep", deleteData=False)
    assert (store.warehouse / "db.db" / "keep").is_dir()
    store("create_table", tbl=table("t"))
    (store.warehouse / "db.db" / "t" / "f").write_text("x")
    store("drop_table_with_environment_context", dbname="db", name="t", deleteData=True,
          environment_context=hms.EnvironmentContext({}))
    assert not (store.warehouse / "db.db" / "t").exists()
    assert "t" not in store.catalog.list_tables("db")


# ---------------------------------------------------------------- partitions


@pytest.fixture
def parted(store: Store) -> Store:
    store("create_table", tbl=table("p", parts=[("ds", "string"), ("hr", "int")]))
    store("add_partitions", new_parts=[partition("p", [ds, str(hr)]) for ds in ("2024-01-01", "2024-01-02")
                                       for hr in (1, 3, 12)])
    return store


def names(parts: list[hms.Partition]) -> list[list[str]]:
    return [p.values for p in parts]


def test_partitions_get_locations_and_directories(parted: Store) -> None:
    part = parted("get_partition", db_name="db", tbl_name="p", part_vals=["2024-01-01", "3"])
    assert part.sd.location == f"file://{parted.warehouse}/db.db/p/ds=2024-01-01/hr=3"
    assert (parted.warehouse / "db.db" / "p" / "ds=2024-01-01" / "hr=3").is_dir()
    assert parted("get_partition_by_name", db_name="db", tbl_name="p", part_name="ds=2024-01-01/hr=3") == part
    assert len(parted("get_partition_names", db_name="db", tbl_name="p", max_parts=-1)) == 6
    assert parted("get_partition_names", db_name="db", tbl_name="p", max_parts=2) == [
        "ds=2024-01-01/hr=1", "ds=2024-01-01/hr=12"]
    assert names(parted("get_partitions_ps_with_auth", db_name="db", tbl_name="p", part_vals=["2024-01-02"],
                        max_parts=-1, user_name="u", group_names=[])) == [
        ["2024-01-02", "1"], ["2024-01-02", "12"], ["2024-01-02", "3"]]
    assert parted("get_partition_names_ps", db_name="db", tbl_name="p", part_vals=["", "3"], max_parts=-1) == [
        "ds=2024-01-01/hr=3", "ds=2024-01-02/hr=3"]
    got = parted("get_partitions_by_names", db_name="db", tbl_name="p", names=["ds=2024-01-02/hr=1", "ds=x/hr=1"])
    assert names(got) == [["2024-01-02", "1"]]


def test_partition_errors(parted: Store) -> None:
    with pytest.raises(hms.AlreadyExistsException):
        parted("add_partition", new_part=partition("p", ["2024-01-01", "1"]))
    with pytest.raises(hms.MetaException):
        parted("add_partition", new_part=partition("p", ["only-one"]))
    with pytest.raises(hms.NoSuchObjectException):
        parted("get_partition", db_name="db", tbl_name="p", part_vals=["x", "1"])
    # add_partitions is all or nothing
    with pytest.raises(hms.AlreadyExistsException):
        parted("add_partitions", new_parts=[partition("p", ["new", "1"]), partition("p", ["2024-01-01", "1"])])
    with pytest.raises(hms.NoSuchObjectException):
        parted("get_partition", db_name="db", tbl_name="p", part_vals=["new", "1"])


def test_add_partitions_req_if_not_exists_and_alter(parted: Store) -> None:
    req = hms.AddPartitionsRequest(dbName="db", tblName="p", parts=[partition("p", ["2024-01-01", "1"]),
                                                                    partition("p", ["2024-01-03", "1"])],
                                   ifNotExists=True, needResult=True)
    result = parted("add_partitions_req", request=req)
    assert names(result.partitions) == [["2024-01-03", "1"]]
    part = parted("get_partition", db_name="db", tbl_name="p", part_vals=["2024-01-03", "1"])
    part.parameters = {"numRows": "7", "spark.sql.statistics.numRows": "7"}
    parted("alter_partitions", db_name="db", tbl_name="p", new_parts=[part])
    assert parted("get_partition", db_name="db", tbl_name="p", part_vals=["2024-01-03", "1"]) == part
    with pytest.raises(hms.InvalidOperationException):
        parted("alter_partition", db_name="db", tbl_name="p", new_part=partition("p", ["zz", "1"]))


def test_drop_partition_deletes_its_directory(parted: Store) -> None:
    d = parted.warehouse / "db.db" / "p" / "ds=2024-01-01" / "hr=1"
    (d / "f").write_text("x")
    assert parted("drop_partition_with_environment_context", db_name="db", tbl_name="p",
                  part_vals=["2024-01-01", "1"], deleteData=True, environment_context=hms.EnvironmentContext({}))
    assert not d.exists()
    parted("drop_partition_by_name", db_name="db", tbl_name="p", part_name="ds=2024-01-01/hr=3", deleteData=False)
    assert (parted.warehouse / "db.db" / "p" / "ds=2024-01-01" / "hr=3").is_dir()
    assert len(parted("get_partitions", db_name="db", tbl_name="p", max_parts=-1)) == 4
    with pytest.raises(hms.NoSuchObjectException):
        parted("drop_partition", db_name="db", tbl_name="p", part_vals=["2024-01-01", "1"], deleteData=True)


@pytest.mark.parametrize(("text", "expected"), [
    ('ds = "2024-01-01"', {("2024-01-01", "1"), ("2024-01-01", "3"), ("2024-01-01", "12")}),
    ("ds = '2024-01-02' and hr > 3", {("2024-01-02", "12")}),
    ('(ds = "2024-01-01" or ds = "2024-01-02") and hr > 3', {("2024-01-01", "12"), ("2024-01-02", "12")}),
    ("hr >= 3 AND hr <= 3", {("2024-01-01", "3"), ("2024-01-02", "3")}),
    ('ds <> "2024-01-01" and hr < 3', {("2024-01-02", "1")}),
    ('ds != "2024-01-01" and hr = 1', {("2024-01-02", "1")}),
    ("3 < hr", {("2024-01-01", "12"), ("2024-01-02", "12")}),
    ('ds like "2024-01-0[2]" and hr in (1, 12)', {("2024-01-02", "1"), ("2024-01-02", "12")}),
    ("hr between 2 and 12 and ds = '2024-01-01'", {("2024-01-01", "3"), ("2024-01-01", "12")}),
    ("hr not in (1, 3)", {("2024-01-01", "12"), ("2024-01-02", "12")}),
    ('(ds) in ("2024-01-02") and hr <= 3', {("2024-01-02", "1"), ("2024-01-02", "3")}),
    ("(hr) not in (1, 3) and ds = '2024-01-01'", {("2024-01-01", "12")}),
    ('(ds, hr) in (struct("2024-01-01", 3), struct("2024-01-02", 12))', {("2024-01-01", "3"), ("2024-01-02", "12")}),
    ("", {(d, h) for d in ("2024-01-01", "2024-01-02") for h in ("1", "3", "12")}),
])
def test_partition_filters(parted: Store, text: str, expected: set[tuple[str, str]]) -> None:
    got = parted("get_partitions_by_filter", db_name="db", tbl_name="p", filter=text, max_parts=-1)
    assert {tuple(p.values) for p in got} == expected


def test_integral_compare_is_numeric_string_compare_is_not(store: Store) -> None:
    store("create_table", tbl=table("s", parts=[("k", "string")]))
    for v in ("9", "10"):
        store("add_partition", new_part=hms.Partition(values=[v], dbName="db", tableName="s", sd=None))
    got = store("get_partitions_by_filter", db_name="db", tbl_name="s", filter='k > "5"', max_parts=-1)
    assert [p.values for p in got] == [["9"]]  # "10" < "5" as strings, as HMS compares a string column


@pytest.mark.parametrize("text", ["ds = ", "nokey = 'a'", "ds = 'a' and", "ds ~ 'a'", "(ds = 'a'", "ds = a b"])
def test_bad_filters_are_meta_exceptions(parted: Store, text: str) -> None:
    with pytest.raises(hms.MetaException):
        parted("get_partitions_by_filter", db_name="db", tbl_name="p", filter=text, max_parts=-1)


# ---------------------------------------------------------------- statistics and functions


def test_column_statistics(parted: Store) -> None:
    obj = hms.ColumnStatisticsObj(colName="id", colType="bigint", statsData=hms.ColumnStatisticsData(
        longStats=hms.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=3)))
    desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName="db", tableName="p")
    assert parted("update_table_column_statistics", stats_obj=hms.ColumnStatistics(statsDesc=desc, statsObj=[obj]))
    assert parted("get_table_column_statistics", db_name="db", tbl_name="p", col_name="id").statsObj == [obj]
    req = hms.TableStatsRequest(dbName="db", tblName="p", colNames=["id", "v"])
    assert parted("get_table_statistics_req", request=req).tableStats == [obj]
    pdesc = hms.ColumnStatisticsDesc(isTblLevel=False, dbName="db", tableName="p", partName="ds=2024-01-01/hr=1")
    parted("update_partition_column_statistics", stats_obj=hms.ColumnStatistics(statsDesc=pdesc, statsObj=[obj]))
    preq = hms.PartitionsStatsRequest(dbName="db", tblName="p", colNames=["id"], partNames=["ds=2024-01-01/hr=1"])
    assert parted("get_partitions_statistics_req", request=preq).partStats == {"ds=2024-01-01/hr=1": [obj]}
    assert parted("delete_table_column_statistics", db_name="db", tbl_name="p", col_name="id")
    with pytest.raises(hms.NoSuchObjectException):
        parted("get_table_column_statistics", db_name="db", tbl_name="p", col_name="id")


def test_functions_round_trip_and_reach_the_catalog(store: Store) -> None:
    fn = hms.Function(functionName="myupper", dbName="db", className="com.example.Upper", ownerName="spark",
                      ownerType=hms.PrincipalType.USER, createTime=5, functionType=hms.FunctionType.JAVA,
                      resourceUris=[hms.ResourceUri(hms.ResourceType.JAR, "file:///tmp/x.jar")])
    store("create_function", func=fn)
    assert store("get_function", dbName="db", funcName="myupper") == fn
    assert store.catalog.get_function("db", "myupper").class_name == "com.example.Upper"
    assert store("get_functions", dbName="db", pattern="my*") == ["myupper"]
    assert store("get_all_functions").functions == [fn]
    with pytest.raises(hms.AlreadyExistsException):
        store("create_function", func=fn)
    store("drop_function", dbName="db", funcName="myupper")
    with pytest.raises(hms.NoSuchObjectException):
        store("get_function", dbName="db", funcName="myupper")
    assert store.catalog.list_functions("db") == []


# ---------------------------------------------------------------- file confinement


def test_external_table_files_are_never_deleted(store: Store, tmp_path: Path) -> None:
    v = victim(tmp_path)
    store("create_table", tbl=table("ext", location=f"file://{v}", table_type="EXTERNAL_TABLE"))
    store("drop_table", dbname="db", name="ext", deleteData=True)
    assert survives(v)


def test_managed_table_located_outside_is_never_deleted(store: Store, tmp_path: Path) -> None:
    v = victim(tmp_path)
    store("create_table", tbl=table("m", location=f"file://{v}", parts=[("k", "string")]))
    store("add_partition", new_part=partition("m", ["a"], location=f"file://{v}"))
    store("drop_partition", db_name="db", tbl_name="m", part_vals=["a"], deleteData=True)
    assert survives(v)
    store("drop_table", dbname="db", name="m", deleteData=True)
    assert survives(v)
    store("create_table", tbl=table("plain", location=str(v)))
    store("drop_table", dbname="db", name="plain", deleteData=True)
    assert survives(v)


def test_dot_dot_location_is_never_deleted(store: Store, tmp_path: Path) -> None:
    v = victim(tmp_path)
    sneaky = f"file://{store.warehouse}/db.db/../../../../victim"
    assert Path(sneaky[len("file://"):]).resolve() == v.resolve()
    store("create_table", tbl=table("dots", location=sneaky))
    store("drop_table", dbname="db", name="dots", deleteData=True)
    assert survives(v)


def test_symlink_in_the_warehouse_pointing_out_is_never_followed(store: Store, tmp_path: Path) -> None:
    v = victim(tmp_path)
    link = store.warehouse / "db.db" / "link"
    link.symlink_to(v, target_is_directory=True)
    store("create_table", tbl=table("sym", location=f"file://{link}", parts=[("k", "string")]))
    store("add_partition", new_part=partition("sym", ["a"], location=f"file://{link}"))
    store("drop_partition", db_name="db", tbl_name="sym", part_vals=["a"], deleteData=True)
    store("drop_table", dbname="db", name="sym", deleteData=True)
    assert survives(v)
    store("create_table", tbl=table("sym2", location=f"file://{link}"))
    store.catalog.drop_table("db", "sym2")  # dropped through the API: forgotten, files checked the same way
    with pytest.raises(hms.NoSuchObjectException):
        store("get_table", dbname="db", tbl_name="sym2")
    assert survives(v)


def test_a_table_at_the_database_directory_does_not_take_it_along(store: Store) -> None:
    store("create_table", tbl=table("a"))
    # Refused (table a's directory is inside it); made all the same, its drop keeps a's.
    with pytest.raises(hms.MetaException, match=r"the directory of table db\.a is"):
        store("create_table", tbl=table("whole", location=f"file://{store.warehouse}/db.db"))
    store.ms.store.put_table(table("whole", location=f"file://{store.warehouse}/db.db"))
    store("drop_table", dbname="db", name="whole", deleteData=True)
    assert (store.warehouse / "db.db" / "a").is_dir()


def test_drop_database_cascade_deletes_managed_files_only(store: Store, tmp_path: Path) -> None:
    v = victim(tmp_path)
    store("create_table", tbl=table("t"))
    store("create_table", tbl=table("ext", location=f"file://{v}", table_type="EXTERNAL_TABLE"))
    outside = victim(tmp_path / "other")
    store("create_table", tbl=table("out", location=f"file://{outside}"))
    store("drop_database", name="db", deleteData=True, cascade=True)
    assert not (store.warehouse / "db.db").exists()
    assert "db" not in store.catalog.list_databases()
    assert survives(v) and survives(outside)


def test_close_removes_the_warehouse_only(tmp_path: Path) -> None:
    s = Store(tmp_path)
    s("create_database", database=hms.Database(name="db"))
    s("create_table", tbl=table("t"))
    sibling = s.data_dir / "keep"
    sibling.mkdir()
    s.ms.close()
    assert not s.warehouse.exists() and sibling.is_dir()
    s.ms.close()  # twice is fine


def test_close_never_removes_a_warehouse_outside_the_data_dir(tmp_path: Path) -> None:
    v = victim(tmp_path)
    ms = MemoryMetastore(MemoryCatalog("scratch"), v, root=tmp_path / "data")
    ms.close()
    assert survives(v)
    # A warehouse path that is a symlink to the victim is not followed either.
    (tmp_path / "data" / "scratch-warehouse").mkdir(parents=True)
    link = tmp_path / "data" / "scratch-warehouse" / "scratch"
    link.symlink_to(v, target_is_directory=True)
    MemoryMetastore(MemoryCatalog("scratch"), link).close()
    assert survives(v)


def test_default_database_is_refused_before_anything_is_dropped(tmp_path: Path) -> None:
    s = Store(tmp_path)
    s("create_table", tbl=hms.Table(tableName="t", dbName="default", sd=sd(), partitionKeys=[], parameters={},
                                    tableType="MANAGED_TABLE"))
    with pytest.raises(hms.MetaException, match="Can not drop default"):
        s("drop_database", name="default", deleteData=True, cascade=True)
    assert s("get_all_tables", db_name="default") == ["t"]


def test_table_replaced_through_the_api_is_answered_as_the_new_one(store: Store) -> None:
    store("create_table", tbl=table("t", parts=[("k", "string")]))
    store("add_partition", new_part=partition("t", ["a"]))
    store.catalog.drop_table("db", "t")
    store.catalog.create_table(Table(name="t", database="db", columns=[Column("x", "int")], format=TableFormat.ORC,
                                     location=f"file://{store.warehouse}/db.db/t2"))
    got = store("get_table", dbname="db", tbl_name="t")
    assert [c.name for c in got.sd.cols] == ["x"] and got.partitionKeys == []
    assert store("get_partitions", db_name="db", tbl_name="t", max_parts=-1) == []


def test_concurrent_partition_adds_all_land(store: Store) -> None:
    import threading

    store("create_table", tbl=table("c", parts=[("k", "string")]))
    errors: list[BaseException] = []

    def add(i: int) -> None:
        try:
            for j in range(25):
                store("add_partition", new_part=partition("c", [f"{i}-{j}"]))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store("get_partition_names", db_name="db", tbl_name="c", max_parts=-1)) == 200


# ---------------------------------------------------------------- another table's directory (issue 19)


def _victim_table(store: Store, name: str = "a", custom: bool = False) -> Path:
    """A managed table with a file that must survive the attacker's drop (at a custom place in the warehouse)."""
    # Custom: where a table named "c" would go by default.
    location = f"file://{store.warehouse}/db.db/c" if custom else None
    store("create_table", tbl=table(name, location))
    path = Path(store("get_table", dbname="db", tbl_name=name).sd.location.removeprefix("file://"))
    path.mkdir(parents=True, exist_ok=True)
    (path / "precious.txt").write_text("keep me")
    return path


@pytest.mark.parametrize("attack", ["created at", "altered to", "partition on", "partition inside",
                                    "renamed onto"])
def test_another_tables_directory_is_refused_and_its_files_kept(store: Store, attack: str) -> None:
    a = _victim_table(store, custom=attack == "renamed onto")
    with pytest.raises(hms.MetaException, match="cannot be used on memory catalog"):
        if attack == "created at":
            store("create_table", tbl=table("b", f"file://{a}"))
        elif attack == "altered to":
            store("create_table", tbl=table("b"))
            altered = store("get_table", dbname="db", tbl_name="b")
            altered.sd.location = f"file://{a}"
            store("alter_table", dbname="db", tbl_name="b", new_tbl=altered)
        elif attack in ("partition on", "partition inside"):
            store("create_table", tbl=table("b", parts=[("ds", "string")]))
            where = f"file://{a}" if attack == "partition on" else f"file://{a}/inside"
            store("add_partition", new_part=partition("b", ["1"], where))
        else:
            store("create_table", tbl=table("b"))
            renamed = store("get_table", dbname="db", tbl_name="b")
            renamed.tableName = "c"
            renamed.sd.location = f"file://{store.warehouse}/db.db/c"  # as Spark sends a rename's new place
            store("alter_table", dbname="db", tbl_name="b", new_tbl=renamed)
    for name in ("b", "c"):
        if name in store("get_all_tables", db_name="db"):
            store("drop_table", dbname="db", name=name, deleteData=True)
    assert (a / "precious.txt").read_text() == "keep me"
    store("drop_table", dbname="db", name="a", deleteData=True)
    assert not a.exists(), "a's own drop still deletes its files"


def test_a_drop_keeps_the_files_another_table_uses(store: Store) -> None:
    """Should an object share a directory all the same (the catalog API's own locations), a drop keeps it."""
    a = _victim_table(store)
    store("create_table", tbl=table("b", parts=[("ds", "string")]))
    raw = store.ms.store.table("db", "b")
    assert raw is not None
    raw.sd.location = f"file://{a}"
    store.ms.store.put_table(raw)
    store("drop_table", dbname="db", name="b", deleteData=True)
    assert (a / "precious.txt").read_text() == "keep me"


def test_an_alter_that_keeps_a_location_in_another_spelling_is_not_a_claim(store: Store) -> None:
    """Spark sends back ``file:/x`` for the ``file:///x`` the store holds: not a move onto its partitions."""
    store("create_table", tbl=table("p", parts=[("ds", "string")]))
    store("add_partition", new_part=partition("p", ["1"]))
    tbl = store("get_table", dbname="db", tbl_name="p")
    tbl.sd.location = tbl.sd.location.replace("file:///", "file:/") + "/"
    tbl.parameters["numRows"] = "1"
    store("alter_table", dbname="db", tbl_name="p", new_tbl=tbl)
    part = store("get_partition", db_name="db", tbl_name="p", part_vals=["1"])
    part.sd.location = part.sd.location.replace("file:///", "file:/")
    part.parameters["numRows"] = "1"
    store("alter_partition", db_name="db", tbl_name="p", new_part=part)
    assert store("get_partition", db_name="db", tbl_name="p", part_vals=["1"]).parameters["numRows"] == "1"


# ---------------------------------------------------------------- allowed-locations


def test_allowed_locations_confine_tables_and_partitions_placed_through_the_endpoint(tmp_path: Path) -> None:
    """With ``allowed-locations`` a memory catalog takes a location strictly inside one of them or
    inside its scratch warehouse, nowhere else: Spark would clear a foreign directory on INSERT OVERWRITE."""
    lake = tmp_path / "lake"
    lake.mkdir()
    s = Store(tmp_path)
    s.catalog.allowed_locations = [lake.as_uri()]
    s("create_database", database=hms.Database(name="db", description="d", parameters={}))
    target = victim(tmp_path)
    attempts = [
        ("create_table", {"tbl": table("t", target.as_uri(), table_type="EXTERNAL_TABLE")}),
        ("create_table", {"tbl": table("lake", lake.as_uri())}),  # a root itself
        ("create_table", {"tbl": table("sp", f"{lake.as_uri()}/sp",
                                       params={"spark.sql.sources.provider": "parquet"})}),
    ]
    attempts[2][1]["tbl"].sd.serdeInfo.parameters["path"] = target.as_uri()  # its Spark path elsewhere
    for method, kwargs in attempts:
        with pytest.raises(hms.MetaException, match=r"outside the catalog's allowed locations|allowed root itself"):
            s(method, **kwargs)
    assert s("get_all_tables", db_name="db") == []
    # Inside a root, and the default place in the scratch warehouse: accepted.
    s("create_table", tbl=table("ext", f"{lake.as_uri()}/ext", table_type="EXTERNAL_TABLE"))
    s("create_table", tbl=table("p", parts=[("ds", "string")]))
    with pytest.raises(hms.MetaException, match="outside the catalog's allowed locations"):
        s("add_partition", new_part=partition("p", ["1"], target.as_uri()))
    moved = copy.deepcopy(s("get_table", dbname="db", tbl_name="ext"))
    moved.sd.location = target.as_uri()
    with pytest.raises(hms.MetaException, match="outside the catalog's allowed locations"):
        s("alter_table", dbname="db", tbl_name="ext", new_tbl=moved)
    s("drop_table", dbname="db", name="ext", deleteData=True)
    assert survives(target)


def test_without_allowed_locations_a_memory_table_may_point_anywhere(store: Store, tmp_path: Path) -> None:
    target = victim(tmp_path)
    store("create_table", tbl=table("ext", target.as_uri(), table_type="EXTERNAL_TABLE"))
    store("drop_table", dbname="db", name="ext", deleteData=True)
    assert survives(target)
