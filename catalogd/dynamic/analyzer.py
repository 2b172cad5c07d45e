"""Spark's analyzer, kept warm in a helper process: validates a dynamic table's query
and derives its schema without running it.

The daemon side (``Analyzer``) starts ``python -m catalogd.dynamic.analyzer`` once per
catalog, on first use or in the background when the daemon starts (``warm``), and talks
to it in JSON lines. The helper keeps one local SparkSession on the catalog's metastore,
so a check costs milliseconds, not the seconds a JVM takes to start. A helper that dies
(or never started) is started again on the next call.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from catalogd.dynamic.connect import ConnectAnalyzer, ConnectEngine
from catalogd.dynamic.lockdown import locked_conf, locked_env
from catalogd.dynamic.runner import with_tmp_dir
from catalogd.errors import InternalError, InvalidArgumentError
from catalogd.model import Column

logger = logging.getLogger(__name__)

_START_TIMEOUT = 180.0
#: The helper's own Spark master: it only analyses, in its own JVM.
HELPER_MASTER = "local[1]"


def _kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the helper and its Spark JVM: it leads its own process group."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # gone already, or not a group leader
        proc.kill()


class Analyzer:
    """The daemon's handle on one helper process.

    Args:
        spark_conf: the session's settings (metastore URI, warehouse, ``spark.conf``).
        name: the catalog, for the log.
        command: the helper's command line (tests start a stand-in).
    """

    def __init__(self, spark_conf: dict[str, str], name: str = "", command: Sequence[str] | None = None) -> None:
        self.spark_conf = dict(spark_conf)
        self.name = name
        self.command = list(command or [sys.executable, "-m", "catalogd.dynamic.analyzer"])
        #: Held for a whole start or request: one conversation with the helper at a time.
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        #: The helper being started (under ``_lock``), so that ``close`` can kill it without
        #: waiting for its start to end.
        self._starting: subprocess.Popen[str] | None = None
        self._closed = False

    def _start(self) -> subprocess.Popen[str]:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
               **locked_env(HELPER_MASTER)}
        logger.info("starting the Spark analyzer helper%s", f" of catalog {self.name}" if self.name else "")
        proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True)
        self._starting = proc
        try:
            if self._closed:  # close() ran before the helper could be seen
                raise InternalError("the Spark analyzer helper was closed while it started")
            assert proc.stdin is not None
            try:
                # The settings go through the pipe: the command line is visible to every user.
                proc.stdin.write(json.dumps(self.spark_conf) + "\n")
                proc.stdin.flush()
            except OSError:
                pass  # it died at once: reported below as no answer
            ready = self._read(proc, _START_TIMEOUT)
            if not ready.get("ready"):
                raise InternalError(f"the Spark analyzer helper did not start: {ready.get('error', 'no answer')}")
        except BaseException:
            _kill(proc)
            proc.wait()
            raise
        finally:
            self._starting = None
        return proc

    def warm(self) -> threading.Thread:
        """Start the helper in a background thread, so that the first query finds it warm.

        A request meanwhile waits for that start instead of starting a second helper. A
        failed start is logged once; the next request starts the helper again.
        """
        thread = threading.Thread(target=self._warm, name=f"analyzer-warm-{self.name}", daemon=True)
        thread.start()
        return thread

    def _warm(self) -> None:
        began = time.monotonic()
        with self._lock:
            if self._closed or (self._proc is not None and self._proc.poll() is None):
                return
            try:
                self._proc = self._start()
            except Exception as e:  # the first create starts it on demand and reports its failure
                if not self._closed:
                    logger.warning("the Spark analyzer helper%s did not start in the background (the first "
                                   "CREATE DYNAMIC TABLE starts it again): %s",
                                   f" of catalog {self.name}" if self.name else "", e)
                return
        logger.info("the Spark analyzer helper%s is ready (%.1f s)",
                    f" of catalog {self.name}" if self.name else "", time.monotonic() - began)

    @staticmethod
    def _read(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
        assert proc.stdout is not None
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        if not result or not result[0]:
            return {}
        loaded: dict[str, Any] = json.loads(result[0])
        return loaded

    def analyze(self, query: str, timeout: float = 120.0) -> list[Column]:
        """The columns ``query`` produces (Spark types).

        Raises:
            InvalidArgumentError: Spark cannot parse or analyse the query.
            InternalError: the helper failed.
        """
        with self._lock:
            if self._closed:
                raise InternalError("the Spark analyzer helper is closed (the daemon is stopping)")
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
                _kill(self._proc)
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """Stop the helper, also one still starting (``warm``); later requests are refused."""
        self._closed = True
        starting = self._starting
        if starting is not None and starting.poll() is None:
            _kill(starting)  # its start then fails at once and lets go of the lock
        with self._lock:
            self.close_locked()


class QueryAnalyzer(Protocol):
    """What checks a dynamic table's query: a helper process (``Analyzer``) or, with the
    connect engine, the Connect server (``connect.ConnectAnalyzer``)."""

    def warm(self) -> threading.Thread: ...

    def analyze(self, query: str, timeout: float = 120.0) -> list[Column]: ...

    def close(self) -> None: ...


class Analyzers:
    """One analyzer per catalog, started on first use (or warmed at start).

    Args:
        engine: the connect engine: its server analyses queries (no helper JVM); None: helpers.
        tmp_dir: where a helper's JVM keeps its temporary files (``<tmp_dir>/<catalog>``, emptied
            when the helper is made); None: the JVM's default (/tmp).
    """

    def __init__(self, engine: ConnectEngine | None = None, tmp_dir: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._by_catalog: dict[str, QueryAnalyzer] = {}
        self.engine = engine
        self.tmp_dir = tmp_dir

    def get(self, catalog: str, spark_conf: Callable[[], dict[str, str]]) -> QueryAnalyzer:
        """The catalog's analyzer; a new one gets ``spark_conf()``."""
        with self._lock:
            analyzer = self._by_catalog.get(catalog)
            if analyzer is None:
                analyzer = self._by_catalog[catalog] = (
                    ConnectAnalyzer(self.engine.server(spark_conf())) if self.engine is not None
                    else Analyzer(self._helper_conf(catalog, spark_conf()), name=catalog))
            return analyzer

    def _helper_conf(self, catalog: str, conf: dict[str, str]) -> dict[str, str]:
        if self.tmp_dir is None:
            return conf
        tmp = self.tmp_dir / catalog
        shutil.rmtree(tmp, ignore_errors=True)  # an earlier helper's, killed before it could clean up
        tmp.mkdir(parents=True, mode=0o700)
        return with_tmp_dir(conf, tmp)

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

def _warm_up(spark: Any) -> None:
    """Pay before "ready" what the first query would: the Hive client's start (about 10 s
    on a busy 2-core machine), the analyzer's first aggregate, a metastore table lookup."""
    try:
        spark.sql("SHOW DATABASES").collect()
        spark.range(1).createOrReplaceTempView("catalogd_warm_up")
        _ = spark.sql("SELECT id, count(*) AS n, sum(id * 1.5) AS s FROM catalogd_warm_up GROUP BY id").schema
        spark.catalog.dropTempView("catalogd_warm_up")
        spark.catalog.tableExists("default.catalogd_warm_up")
    except Exception:  # a metastore problem shows again, and is reported, with the first query
        pass


def _serve(conf: dict[str, str], out: IO[str]) -> None:
    from pyspark.sql import SparkSession

    from catalogd.spark_common import hive_columns

    builder = SparkSession.builder.master(HELPER_MASTER).appName("catalogd analyzer").enableHiveSupport()
    # Its ports on loopback, behind Spark's authentication, as every Spark process of catalogd's.
    for key, value in locked_conf(HELPER_MASTER, {"spark.ui.enabled": "false", **conf}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _warm_up(spark)
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
