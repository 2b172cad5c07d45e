"""Spark's analyzer, kept warm in a helper process: validates a dynamic table's query
and derives its schema without running it.

The daemon side (``Analyzer``) starts ``python -m catalogd.dynamic.analyzer`` once per
catalog, on first use, and talks to it in JSON lines. The helper keeps one local
SparkSession on the catalog's metastore, so a check costs milliseconds, not the
seconds a JVM takes to start. A helper that dies is started again on the next call.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO, Any

from catalogd.errors import InternalError, InvalidArgumentError
from catalogd.model import Column

logger = logging.getLogger(__name__)

_START_TIMEOUT = 180.0


class Analyzer:
    """The daemon's handle on one helper process.

    Args:
        spark_conf: the session's settings (metastore URI, warehouse, ``spark.conf``).
    """

    def __init__(self, spark_conf: dict[str, str]) -> None:
        self.spark_conf = dict(spark_conf)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        args = [sys.executable, "-m", "catalogd.dynamic.analyzer"]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        logger.info("starting the Spark analyzer helper")
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env=env, start_new_session=True)
        assert proc.stdin is not None
        # The settings go through the pipe: the command line is visible to every user.
        proc.stdin.write(json.dumps(self.spark_conf) + "\n")
        proc.stdin.flush()
        ready = self._read(proc, _START_TIMEOUT)
        if not ready.get("ready"):
            proc.kill()
            raise InternalError(f"the Spark analyzer helper did not start: {ready.get('error', 'no answer')}")
        return proc

    @staticmethod
    def _read(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
        assert proc.stdout is not None
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        if not result or not result[0]:
            return {}
        return json.loads(result[0])

    def analyze(self, query: str, timeout: float = 120.0) -> list[Column]:
        """The columns ``query`` produces (Spark types).

        Raises:
            InvalidArgumentError: Spark cannot parse or analyse the query.
            InternalError: the helper failed.
        """
        with self._lock:
            for attempt in (1, 2):
                if self._proc is None or self._proc.poll() is not None:
                    self._proc = self._start()
                assert self._proc.stdin is not None
                try:
                    self._proc.stdin.write(json.dumps({"query": query}) + "\n")
                    self._proc.stdin.flush()
                    answer = self._read(self._proc, timeout)
                except (BrokenPipeError, OSError):
                    answer = {}
                if answer:
                    break
                self.close_locked()
                if attempt == 2:
                    raise InternalError("the Spark analyzer helper stopped answering")
        if "error" in answer:
            raise InvalidArgumentError(f"Spark cannot analyse the query: {answer['error']}")
        return [Column(c["name"], c["type"], c.get("comment")) for c in answer["columns"]]

    def close_locked(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self.close_locked()


class Analyzers:
    """One ``Analyzer`` per catalog, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_catalog: dict[str, Analyzer] = {}

    def get(self, catalog: str, spark_conf: Callable[[], dict[str, str]]) -> Analyzer:
        """The catalog's analyzer; a new one gets ``spark_conf()``."""
        with self._lock:
            analyzer = self._by_catalog.get(catalog)
            if analyzer is None:
                analyzer = self._by_catalog[catalog] = Analyzer(spark_conf())
            return analyzer

    def release(self, catalog: str) -> None:
        """Close a catalog's analyzer (the catalog was removed or replaced)."""
        with self._lock:
            analyzer = self._by_catalog.pop(catalog, None)
        if analyzer is not None:
            analyzer.close()

    def close(self) -> None:
        with self._lock:
            analyzers = list(self._by_catalog.values())
        for analyzer in analyzers:
            analyzer.close()


# ---------------------------------------------------------------- the helper process

def _serve(conf: dict[str, str], out: IO[str]) -> None:
    from pyspark.sql import SparkSession

    from catalogd.spark.atomic import hive_columns

    builder = SparkSession.builder.master("local[1]").appName("catalogd analyzer").enableHiveSupport()
    for key, value in {"spark.ui.enabled": "false", **conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            # Tables may have changed since the last query (re-created, new columns): the
            # session's cached relations would give their old schema.
            spark._jsparkSession.sessionState().catalog().invalidateAllCachedTables()
            schema = spark.sql(request["query"]).schema
            answer: dict[str, Any] = {"columns": [{"name": c.name, "type": c.type, "comment": c.comment}
                                                  for c in hive_columns(schema)]}
        except Exception as e:  # every analysis error goes back to the daemon
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            answer = {"error": first[:2000]}
        out.write(json.dumps(answer) + "\n")
        out.flush()


def main(argv: list[str]) -> int:
    conf = json.loads(sys.stdin.readline() or "{}")
    # The protocol gets its own descriptor: anything else that writes to stdout
    # (the JVM, py4j, Spark's Python side) goes to stderr instead.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        _serve(conf, out)
    except Exception as e:
        out.write(json.dumps({"ready": False, "error": str(e).splitlines()[0] if str(e) else repr(e)}) + "\n")
        out.flush()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
