"""An open Spark session keeps working across a daemon restart: the HMS endpoint's address is
stable (``server.hms-port``) while the embedded metastore behind it gets a new port, and a
query made while the daemon is down is answered once it is back (the client settings
``spark-conf --hms-only`` prints retry while the port refuses; the new daemon binds the port first and
holds the calls until it is ready)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from catalogd.client import CatalogClient
from catalogd.spark.conf import spark_conf_for

from .helpers import SparkChild

pytestmark = pytest.mark.integration

# Two daemon starts and a Spark application: 530 s on a 2-core machine loaded by other jobs.
@pytest.mark.timeout(1200)
def test_an_open_spark_session_survives_a_daemon_restart(daemon_factory, tmp_path: Path):
    """Unmodified Spark configured by exactly what ``catalogd spark-conf --hms-only`` prints."""
    first = daemon_factory(name="restart")
    with CatalogClient(first.address) as c:
        c.create_database("main.r")
        c.create_table("main.r.t", "id int")
        conf = spark_conf_for(c.get_catalog("main"))
        metastore_before = c.get_catalog("main").metastore
    assert conf["spark.hadoop.hive.metastore.uris"] == first.hms_uri
    child = SparkChild.start(tmp_path / "child.py", conf)
    proc = child.proc
    try:
        assert child.answer() == {"ready": True}
        assert child.sql("INSERT INTO r.t VALUES (1)") == {"rows": []}
        assert child.sql("SELECT count(*) FROM r.t") == {"rows": [[1]]}
        assert first.stop() == 0  # SIGTERM, and gone: the endpoint's port refuses now
        # A statement made while no daemon runs, then the restart (same config, ports, data dir):
        # with Hive's default client settings it failed 3 s later, "Could not connect to meta
        # store using any of the URIs provided".
        assert proc.stdin is not None
        proc.stdin.write("INSERT INTO r.t VALUES (2)\n")
        proc.stdin.flush()
        second = daemon_factory(name="restart", same_as=first, wait=False)
        # The same Spark session, untouched: its metastore client reconnects to the same address.
        assert child.answer() == {"rows": []}
        second.wait_ready()
        with CatalogClient(second.address) as c:
            assert c.get_catalog("main").metastore != metastore_before, "the embedded metastore moved"
            assert c.get_catalog("main").hms_endpoint == first.hms_uri
        assert child.sql("SELECT id FROM r.t ORDER BY id") == {"rows": [[1], [2]]}
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
