"""``catalogd.spark.session_builder()``'s session (the catalog plugin's, its default catalog a catalogd
catalog, as ``catalogd spark-conf`` configures one) with catalogd's Python helpers in it: they
still write through the session catalog (catalogd's HMS endpoint), and the session keeps its own
current catalog.

The session is a child driver (a SparkContext's jars are fixed at its start: the shared session
has no plugin), so this module costs one Spark start: 23 s (about 100 s on a loaded 2-core machine).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from catalogd.client import CatalogClient
from catalogd.dynamic.runner import with_tmp_dir

from .helpers import Daemon, clean_env

pytestmark = pytest.mark.integration

CHILD = r'''
import json, sys
from catalogd.client import CatalogClient
from catalogd.spark import atomic_ctas, insert_into, insert_overwrite, session_builder, sql

address, db, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
client = CatalogClient(address, timeout=240)
builder = session_builder("main", client).master("local[1]").appName("catalogd-session-builder")
for key, value in {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1", **extra}.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
out = {"default": spark.conf.get("spark.sql.defaultCatalog"), "current": spark.catalog.currentCatalog()}
rows = spark.range(4).selectExpr("id", "cast(id % 2 AS string) AS ds")
out["ctas"] = atomic_ctas(spark, f"main.{db}.t", rows, partition_by=["ds"], client=client).state.value
insert_overwrite(spark, f"main.{db}.t", "SELECT id + 10 FROM range(2)", partition={"ds": "1"}, client=client)
insert_into(spark, f"main.{db}.t", "SELECT 99 AS id, '0' AS ds", client=client)
out["sql"] = sql(spark, f"CREATE TABLE main.{db}.u AS SELECT 7 AS x", client=client).state.value
# A memory catalog writes without a stage where it has no atomic writes: Spark's saveAsTable.
written = atomic_ctas(spark, f"scratch.{db}.v", spark.range(3), client=client)
out["plain"] = written.state.value if written is not None else None
# Read natively, through the plugin's catalogs.
out["rows"] = sorted(r[0] for r in spark.sql(f"SELECT id FROM main.{db}.t").collect())
out["u"] = [r[0] for r in spark.sql(f"SELECT x FROM main.{db}.u").collect()]
out["scratch"] = sorted(r[0] for r in spark.sql(f"SELECT id FROM scratch.{db}.v").collect())
out["after"] = [spark.catalog.currentCatalog(), spark.catalog.currentDatabase()]
spark.stop()
print(json.dumps(out), flush=True)
'''


def test_the_helpers_write_in_a_session_builder_session_with_the_plugin(
        daemon: Daemon, client: CatalogClient, unique_name: Any, tmp_path: Path) -> None:
    db = unique_name("sb")
    client.create_database(f"main.{db}")
    client.create_database(f"scratch.{db}")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    java_tmp = tmp_path / "java-tmp"
    java_tmp.mkdir()
    extra = with_tmp_dir({"spark.local.dir": str(tmp_path / "local")}, java_tmp)
    try:
        done = subprocess.run([sys.executable, str(script), daemon.address, db, json.dumps(extra)],
                              capture_output=True, text=True, timeout=900, env=clean_env())
        assert done.returncode == 0, done.stderr[-4000:]
        out = json.loads(done.stdout.strip().splitlines()[-1])
        assert out["default"] == "main" and out["current"] == "main"
        assert (out["ctas"], out["sql"]) == ("COMMITTED", "COMMITTED")
        assert out["rows"] == [0, 2, 10, 11, 99]
        assert out["u"] == [7] and out["scratch"] == [0, 1, 2]
        assert out["plain"] in (None, "COMMITTED")
        # The helpers wrote with the session catalog current and put the plugin's back.
        assert out["after"] == ["main", "default"]
        assert sorted(client.list_tables(f"main.{db}")) == ["t", "u"]  # and no stage left
    finally:
        client.drop_database(f"main.{db}", cascade=True, if_exists=True)
        client.drop_database(f"scratch.{db}", cascade=True, if_exists=True)
