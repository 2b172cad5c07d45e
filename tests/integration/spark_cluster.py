"""A real Spark standalone cluster for the tests: a master and workers started from pyspark's
own jars (``bin/spark-class org.apache.spark.deploy.master.Master`` and ``...worker.Worker``),
each a process group of its own in a temporary directory, on 127.0.0.1 only.

Small, for a busy 2-core machine: 256 MB for each daemon JVM, one core and 512 MB per worker
(an executor needs at least 450 MB). The master's REST submission server is off (its fixed
port 6066 would collide between test runs). ``json()`` is the master's web UI ``/json/``: its
workers and its running and completed applications.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polling import wait_until

from .helpers import clean_env, free_port

#: The master and workers register in a few seconds; a busy 2-core machine may take many more.
START_TIMEOUT = 180.0


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@dataclass
class SparkCluster:
    root: Path
    port: int
    ui_port: int
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def master(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def json(self, url: str | None = None) -> dict[str, Any]:
        """The master's (or, given its web UI address, a worker's) ``/json/``."""
        with urllib.request.urlopen(f"{url or f'http://127.0.0.1:{self.ui_port}'}/json/", timeout=10) as answer:
            loaded: dict[str, Any] = json.loads(answer.read())
            return loaded

    def alive_workers(self) -> list[dict[str, Any]]:
        return [w for w in self.json()["workers"] if w["state"] == "ALIVE"]

    def log(self) -> str:
        logs = sorted(self.root.glob("*.log"))
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in logs)


def _env(root: Path) -> dict[str, str]:
    import pyspark

    conf_dir = root / "conf"
    conf_dir.mkdir(exist_ok=True)
    return {**clean_env(), "SPARK_HOME": str(Path(pyspark.__file__).parent), "SPARK_CONF_DIR": str(conf_dir),
            "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
            # Executors' Python workers: the venv's interpreter (pyspark and catalogd are there).
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON") or sys.executable}


@contextlib.contextmanager
def running_spark_cluster(workers: int = 2) -> Iterator[SparkCluster]:
    """A master and ``workers`` workers (1 core, 512 MB each), stopped (SIGKILL of each
    process group) and removed on exit."""
    root = Path(tempfile.mkdtemp(prefix="catalogd-spark-cluster-"))
    cluster = SparkCluster(root, free_port(), free_port())
    env = _env(root)

    def start(name: str, *args: str) -> None:
        with open(root / f"{name}.log", "wb") as log:
            cluster.procs.append(subprocess.Popen([str(spark_class()), *args], stdout=log, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL, env=env, cwd=root,
                                                  start_new_session=True))

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(cluster.port), "--webui-port", str(cluster.ui_port))
        for n in range(1, workers + 1):
            work_dir = root / f"worker-{n}"
            work_dir.mkdir()
            start(f"worker-{n}", "org.apache.spark.deploy.worker.Worker", cluster.master, "--host", "127.0.0.1",
                  "--cores", "1", "--memory", "512m", "--webui-port", "0", "--work-dir", str(work_dir))
        try:
            wait_until(lambda: len(cluster.alive_workers()) == workers, START_TIMEOUT,
                       f"{workers} workers registered with the master", every=1.0)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{cluster.log()}") from None
        yield cluster
    finally:
        for proc in cluster.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        for proc in cluster.procs:
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)
