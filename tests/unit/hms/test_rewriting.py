"""The endpoint's rewriting on its own: prefixed names both ways, stages out of listings, Spark's made-up location."""

from __future__ import annotations

from catalogd.hive_idl import ThriftHiveMetastore as T
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.federation import Federation
from catalogd.hms.rewriting import Rewriting, hide_stages, spark_default_location

STAGE = "__catalogd_stage_orders_1"


def rewriting() -> Rewriting:
    federation = Federation({"main": "", "lake": "lake__"}, "main")
    return Rewriting(lambda: federation)


def test_a_prefixed_catalogs_names_are_mapped_both_ways() -> None:
    r = rewriting()
    assert (r.prefix("main"), r.prefix("lake")) == ("", "lake__")
    assert (r.place("lake__Sales"), r.place("sales")) == ("sales", "sales")
    args = T.get_table_args(dbname="lake__sales", tbl_name="orders")
    r.to_backing("get_table", args, "lake")
    assert args.dbname == "sales"
    result = T.get_table_result(success=hms.Table(dbName="sales", tableName="orders"))
    r.to_client("get_table", result, "lake")
    assert result.success.dbName == "lake__sales"


def test_an_unprefixed_catalogs_names_are_left_alone() -> None:
    r = rewriting()
    args = T.get_table_args(dbname="sales", tbl_name="orders")
    r.to_backing("get_table", args, "main")
    result = T.get_table_result(success=hms.Table(dbName="sales", tableName="orders"))
    r.to_client("get_table", result, "main")
    assert (args.dbname, result.success.dbName) == ("sales", "sales")


def test_listings_leave_stages_out() -> None:
    names = T.get_all_tables_result(success=["orders", STAGE])
    hide_stages(names)
    assert names.success == ["orders"]
    tables = T.get_table_objects_by_name_req_result(success=hms.GetTablesResult(tables=[
        hms.Table(tableName="orders"), hms.Table(tableName=STAGE)]))
    hide_stages(tables)
    assert [t.tableName for t in tables.success.tables] == ["orders"]


def test_only_the_location_spark_makes_up_is_taken_out() -> None:
    made_up = hms.Database(name="Sales", locationUri="file:/tmp/spark-warehouse/sales.db/")
    chosen = hms.Database(name="sales", locationUri="s3://bucket/elsewhere")
    spark_default_location(made_up)
    spark_default_location(chosen)
    assert made_up.locationUri is None and chosen.locationUri == "s3://bucket/elsewhere"
