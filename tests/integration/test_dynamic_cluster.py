"""A dynamic table's refresh on a real Spark standalone cluster (issue 23 item 4): a master
and two workers from pyspark's own jars, and a daemon whose ``spark.master`` is that
cluster, with either engine. The run's Spark application (a ``spark-submit`` job's, or the
Connect server's) is one the master lists, and it had an executor on each worker.

The table is created through the session daemon (its Spark analyzer is warm; the
cluster's daemon needs none: ``warm-analyzer: false``), with a one-day freshness and
``initialize = on_schedule``, so neither daemon refreshes it on its own during the test;
the cluster's daemon, started afterwards on the same metastore, loads it and runs the
refresh asked of it. The session daemon drops it at the end (the cluster's daemon is
stopped with the test).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.model import RunStatus

from .conftest import source_database
from .helpers import SESSION_STAGE_SECRET, Daemon, free_port, metastore_key_file, spark_rows, start_daemon, write_config
from .spark_cluster import SparkCluster, running_spark_cluster

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 400.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[SparkCluster]:
    with running_spark_cluster(workers=2) as running:
        yield running


@pytest.fixture
def source(sc: CatalogClient, spark: Any, unique_name: Callable[[str], str]) -> Iterator[str]:
    with source_database(sc, spark, unique_name("dtc"), 20) as name:
        yield name


def cluster_daemon(root: Path, metastore: str, key_file: Path, cluster: SparkCluster, engine: str) -> Daemon:
    config = write_config(
        root / "catalogd.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
        catalogs=[{"name": "main", "type": "hive", "default": True,
                   "connection": {"hive.metastore.uris": metastore}, "metastore-key-file": str(key_file)}],
        # The session daemon's stage key: it signed the table's definition (a daemon runs only
        # definitions signed with its deployment's key).
        extra={"dynamic-tables": {"warm-analyzer": False}, "staging": {"secret": SESSION_STAGE_SECRET},
               # The same settings run it on YARN (master: yarn) or Kubernetes (k8s://...):
               # spark.conf passes through to spark-submit.
               "spark": {"master": cluster.master, "engine": engine,
                         "conf": {"spark.executor.memory": "512m", "spark.executor.cores": "1",
                                  "spark.driver.memory": "512m", "spark.sql.shuffle.partitions": "2"}}},
    )
    return start_daemon(config, root / "data", root / "catalogd.log")


@pytest.mark.parametrize("engine", ["submit", "connect"])
def test_a_refresh_runs_on_a_standalone_cluster_of_two_workers(
        sc: CatalogClient, spark: Any, source: str, cluster: SparkCluster, tmp_path: Path, engine: str,
        daemon: Daemon) -> None:
    """submit: the run is an application of the cluster; connect: the Connect server is one,
    and the run one of its sessions."""
    client, name = sc, f"main.{source}.totals"
    created = client.sql(f"""CREATE DYNAMIC TABLE {name} WITH ('initialize' = 'on_schedule')
        FRESHNESS = INTERVAL '1' DAY AS SELECT id % 4 AS k, count(*) AS n, sum(amount) AS total FROM src GROUP BY 1""")
    assert created.kind == "created", created.message
    metastore = client.get_catalog("main").metastore or ""
    session = daemon
    daemon = cluster_daemon(tmp_path, metastore, metastore_key_file(session.data_dir), cluster, engine)
    try:
        with CatalogClient(daemon.address, timeout=120.0) as dc:
            # It loads the table at start, in the background: until then a refresh is refused.
            job = wait_until(lambda: dc.refresh_dynamic_tables(name), 120.0, f"{name} driven by the cluster's daemon")
            assert job.cluster_info.get("master") == cluster.master, job.cluster_info
            done = dc.wait_refresh_job(job.id, timeout=JOB_TIMEOUT, poll=0.25)
            assert done.status is RunStatus.SUCCEEDED, f"{done}\n{daemon.log()[-3000:]}\n{cluster.log()}"
            (run,) = done.runs
        assert spark_rows(spark, f"{source}.totals") == [(k, 5, sum(i * 1.5 for i in range(k, 20, 4)))
                                                         for k in range(4)]
        # The master ran the run's application, and each worker had an executor of it.
        master = cluster.json()
        apps = {a["id"]: a for a in master["completedapps"] + master["activeapps"]}
        assert run.application_id in apps, (run.application_id, list(apps))
        expected = f"catalogd batch refresh of {name}" if engine == "submit" else "catalogd Spark Connect server"
        assert apps[run.application_id]["name"].startswith(expected), apps[run.application_id]
        for worker in master["workers"]:
            seen = cluster.json(worker["webuiaddress"])
            executors = seen["executors"] + seen["finishedexecutors"]
            assert any(e["appid"] == run.application_id for e in executors), (worker["id"], executors)
    finally:
        assert daemon.stop() == 0, daemon.log()[-3000:]
