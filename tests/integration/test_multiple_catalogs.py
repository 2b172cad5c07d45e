"""Several catalogs from one YAML file: two embedded metastores, a remote one, a memory one."""

from __future__ import annotations

import json
from urllib.parse import urlparse

import pytest

from catalogd.client import CatalogClient
from catalogd.errors import DatabaseNotFoundError, PermissionDeniedError
from catalogd.spark.conf import spark_conf_for

from .helpers import embedded_catalog, metastore_key_file

pytestmark = [pytest.mark.integration]


def test_two_embedded_a_remote_and_a_memory_catalog(client, daemon, daemon_factory, run_cli):
    remote_uri = client.get_catalog("main").metastore
    extra = daemon_factory(name="multi", catalogs=[
        embedded_catalog("sales", **{"default-database": "default"}),
        {**embedded_catalog("hr"), "default": False},
        {"name": "shared", "type": "hive", "read-only": True, "connection": {"hive.metastore.uris": remote_uri},
         "metastore-key-file": str(metastore_key_file(daemon.data_dir))},
        {"name": "tmp", "type": "memory", "default-database": "work"},
    ])
    with CatalogClient(extra.address, timeout=60) as c:
        infos = {i.name: i for i in c.list_catalogs()}
        assert sorted(infos) == ["hr", "sales", "shared", "tmp"]
        assert infos["sales"].default and not infos["hr"].default
        assert infos["sales"].metastore != infos["hr"].metastore
        assert infos["shared"].read_only and infos["shared"].metastore == remote_uri
        assert infos["tmp"].default_database == "work" and infos["tmp"].metastore is None
        # Independent metastores and warehouses.
        c.create_database("sales.orders_db")
        assert "orders_db" in c.list_databases("sales")
        assert "orders_db" not in c.list_databases("hr")
        with pytest.raises(DatabaseNotFoundError):
            c.get_database("hr.orders_db")
        # Short names resolve in the default catalog and the catalog's default database.
        c.create_table("orders_db.t", "id bigint")
        assert c.table_exists("sales.orders_db.t")
        c.create_table("tmp.work.x", "id bigint")
        assert c.list_tables("tmp.work") == ["x"]
        # Spark settings point at catalogd's one HMS endpoint, which serves every catalog
        # (hr's databases as hr__<db>); each catalog keeps its own warehouse.
        sales, hr = spark_conf_for(infos["sales"]), spark_conf_for(infos["hr"])
        assert sales["spark.hadoop.hive.metastore.uris"] == hr["spark.hadoop.hive.metastore.uris"]
        assert sales["spark.hadoop.hive.metastore.uris"] == infos["sales"].hms_endpoint
        assert (infos["sales"].hms_prefix, infos["hr"].hms_prefix, infos["tmp"].hms_prefix) == ("", "hr__", "tmp__")
        assert sales["spark.sql.warehouse.dir"] != hr["spark.sql.warehouse.dir"]
        with pytest.raises(PermissionDeniedError):
            c.create_database("shared.nope")
        # Through the HMS endpoint: hr's databases are hr__<db>. A database created with the
        # location Spark makes up (the session's warehouse/<name>.db) lands in hr's own warehouse.
        from hmsclient import hmsclient

        from catalogd.hive_idl import ttypes

        with hmsclient.HMSClient(host="127.0.0.1", port=extra.hms_address[1]) as hms:
            made_up = f"{infos['sales'].warehouse.rstrip('/')}/hr__by_spark.db"
            hms.create_database(ttypes.Database(name="hr__by_spark", locationUri=made_up, parameters={}))
            assert hms.get_database("hr__by_spark").name == "hr__by_spark"
            assert "hr__by_spark" in hms.get_all_databases() and "orders_db" in hms.get_all_databases()
        created = urlparse(c.get_database("hr.by_spark").location).path
        assert created == urlparse(infos["hr"].warehouse).path.rstrip("/") + "/by_spark.db"
        assert not c.database_exists("sales.hr__by_spark")
    listed = run_cli("--json", "catalog", "list", server=extra.address)
    assert listed.code == 0 and json.loads(listed.stdout) == ["hr", "sales", "shared", "tmp"]
    text = run_cli("catalog", "list", server=extra.address)
    assert text.code == 0 and all(word in text.stdout for word in ("read-only", "metastore", remote_uri))
    hr = json.loads(run_cli("--json", "catalog", "describe", "hr", server=extra.address).stdout)
    assert set(hr) >= {"name", "type", "default", "read_only", "metastore", "default_database"}
    conf = run_cli("spark-conf", "hr", server=extra.address)
    assert conf.code == 0 and f"spark.hadoop.hive.metastore.uris={infos['hr'].hms_endpoint}" in conf.stdout
