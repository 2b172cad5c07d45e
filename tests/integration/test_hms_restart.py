"""An open Spark session keeps working across a daemon restart: the HMS endpoint's address is
stable (``server.hms-port``) while the embedded metastore behind it gets a new port."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from catalogd.client import CatalogClient
from catalogd.spark.conf import spark_conf_for

from .helpers import clean_env

pytestmark = pytest.mark.integration

#: A Spark application of its own (a second JVM: the test session's SparkSession is another
#: daemon's), reading SQL statements from stdin and answering each with one JSON line.
CHILD = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.master("local[1]").appName("restart-child").enableHiveSupport()
    for key, value in json.loads(sys.argv[1]).items():
        builder = builder.config(key, value)
    spark = builder.config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            rows = [list(r) for r in spark.sql(line.strip()).collect()]
            print(json.dumps({"rows": rows}), flush=True)
        except Exception as e:
            print(json.dumps({"error": str(e)[:2000]}), flush=True)
""")


class _Child:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc

    def answer(self) -> dict[str, object]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"the Spark child exited with {self.proc.poll()}")
            if line.startswith("{"):
                return json.loads(line)  # type: ignore[no-any-return]

    def sql(self, statement: str) -> dict[str, object]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(statement + "\n")
        self.proc.stdin.flush()
        return self.answer()


def test_an_open_spark_session_survives_a_daemon_restart(daemon_factory, tmp_path: Path):
    first = daemon_factory(name="restart")
    with CatalogClient(first.address) as c:
        c.create_database("main.r")
        c.create_table("main.r.t", "id int")
        conf = spark_conf_for(c.get_catalog("main"))
        metastore_before = c.get_catalog("main").metastore
    assert conf["spark.hadoop.hive.metastore.uris"] == first.hms_uri
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.Popen([sys.executable, str(script), json.dumps(conf)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=clean_env())
    child = _Child(proc)
    try:
        assert child.answer() == {"ready": True}
        assert child.sql("INSERT INTO r.t VALUES (1)") == {"rows": []}
        assert child.sql("SELECT count(*) FROM r.t") == {"rows": [[1]]}
        assert first.stop() == 0
        second = daemon_factory(name="restart", same_as=first)
        with CatalogClient(second.address) as c:
            assert c.get_catalog("main").metastore != metastore_before, "the embedded metastore moved"
            assert c.get_catalog("main").hms_endpoint == first.hms_uri
        # The same Spark session, untouched: its metastore client reconnects to the same address.
        assert child.sql("INSERT INTO r.t VALUES (2)") == {"rows": []}
        assert child.sql("SELECT id FROM r.t ORDER BY id") == {"rows": [[1], [2]]}
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
