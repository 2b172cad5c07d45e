"""The Spark side of a dynamic table refresh: the script ``spark-submit`` runs.

    spark-submit --master local[2] catalogd/dynamic/job.py SPEC.json

SPEC (written by the daemon's runner) says what to refresh:

- ``mode`` ``batch``: one refresh. The query's result replaces the table (REPLACE)
  or, with ``partition``, only that partition (OVERWRITE_PARTITIONS), through a
  catalogd stage: readers see the old data or the new, never a mix, and a failed
  run leaves the old data.
- ``mode`` ``continuous``: a Structured Streaming query whose trigger fires every
  ``trigger_seconds``; each micro-batch looks at the source tables' files and, when
  they changed since the last refresh, refreshes the table as above. The stream's
  checkpoint (and the fingerprint of the files last refreshed from) lives in
  ``checkpoint``, so a restarted job carries on where it stopped.

The job reports through two small JSON files: ``status_file`` (phase, application
id, progress; rewritten as it goes) and ``result_file`` (written once at the end).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from catalogd.spark_common import SessionState


class Reporter(Protocol):
    """Where a refresh reports its phase and progress (a status file here; the run's record
    when the daemon runs the refresh itself through the connect engine)."""

    def update(self, **values: Any) -> None: ...


def _write_json(path: str, payload: dict[str, Any]) -> None:
    """Replace the file in one rename: the daemon never reads half a file."""
    tmp = f"{path}.tmp"
    Path(tmp).write_text(json.dumps(payload))
    os.replace(tmp, path)


class StatusFile:
    """A job's status file (``status_file``): phase and progress, rewritten as it goes."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.path = spec["status_file"]
        self.status: dict[str, Any] = {"pid": os.getpid(), "phase": "starting", "started": time.time()}
        self.update()

    def update(self, **values: Any) -> None:
        self.status.update(values)
        self.status["updated"] = time.time()
        _write_json(self.path, self.status)


def _session(spec: dict[str, Any]) -> Any:
    from pyspark.sql import SparkSession

    return SparkSession.builder.appName(spec.get("app_name", "catalogd refresh")).enableHiveSupport().getOrCreate()


def _source_partitions(files: list[str]) -> list[str]:
    """``key=value`` directory names the files sit in (the source partitions read)."""
    found = set()
    for path in files:
        parts = [p for p in path.split("/")[:-1] if "=" in p]
        if parts:
            found.add("/".join(parts[-3:]))
    return sorted(found)


def refresh(spark: Any, client: Any, spec: dict[str, Any], partition: dict[str, str] | None,
            reporter: Reporter, before_stage: Any = None) -> dict[str, Any]:
    """One refresh through a stage; returns rows written and what was read.

    Args:
        before_stage: called (and its error raised) before the stage begins (the query is
            analysed meanwhile, beside it: ``write_result``).
    """
    from catalogd.model import StagePurpose

    result = write_result(spark, client, spec, spec["query"],
                          StagePurpose.OVERWRITE_PARTITIONS if partition else StagePurpose.REPLACE, reporter,
                          partition=partition, before_stage=before_stage)
    if partition and result["rows"] == 0:
        # Nothing for this partition now: an overwrite with no rows writes no
        # partition, so the stale one is dropped to match the query.
        client.drop_partition(spec["table"], partition, if_exists=True)
    return result


def write_result(spark: Any, client: Any, spec: dict[str, Any], df: Any, purpose: Any, reporter: Reporter,
                 on_staged: Any = None, partition: dict[str, str] | None = None,
                 laps: Laps | None = None, before_stage: Any = None) -> dict[str, Any]:
    """Write a query's result into the table through a stage of ``purpose`` (REPLACE,
    OVERWRITE_PARTITIONS of ``partition``, APPEND); returns rows written and what was read.

    The query (``df``: a DataFrame, or SQL text sent to ``spark``) is analysed on a thread of
    its own while the stage begins: a round trip to a Connect server (or a plan in a classic
    session) and the daemon's begin overlap instead of adding up. The stage begins only after
    ``before_stage``; an analysis that fails aborts the stage begun meanwhile (the error
    raised is the analysis's), so a bad query still leaves nothing behind.

    Args:
        on_staged: called with the stage's id once its rows are written, before the commit.
        laps: where the steps' times go (``timings`` in the result).
        before_stage: called (and its error raised) before the stage begins.
    """
    from catalogd.model import StagePurpose
    from catalogd.spark_common import count_staged, staged_table, write_staged

    laps = laps or Laps()
    table = client.get_table(spec["table"])
    laps.lap("table_s")
    keys = [k.name for k in table.partition_keys]
    reporter.update(phase="planning")
    plan = _Plan(spark, df, [c.name for c in table.columns] + keys, partition)
    replacing = purpose is not StagePurpose.APPEND
    props = {k: v for k, v in table.properties.items() if not k.startswith("catalogd.")} if replacing else None
    started = time.time()
    try:
        if before_stage is not None:
            before_stage()
        laps.lap("before_stage_s")
        reporter.update(phase="writing")
        with staged_table(spec["table"], table.columns + table.partition_keys, partition_by=keys,
                          format=table.format, mode=purpose, properties=props,
                          comment=table.comment if replacing else None, client=client, spark=spark) as staged:
            laps.lap("stage_begin_s")
            # Inside the stage's block: an analysis error aborts the stage (writer stopped).
            df, listing, state = plan.result()
            laps.lap("plan_wait_s")
            written = write_staged(spark, df, staged, count=True, state=state)
            laps.lap("write_s")
            # A Connect write counts its rows itself; a classic session's are counted after (a second job).
            rows = written if written is not None else count_staged(spark, staged)
            laps.lap("count_s")
            files = listing.files()  # before the commit: a listing that failed fails the run, nothing committed
            laps.lap("input_files_wait_s")
            if on_staged is not None:
                on_staged(staged.stage_id)
            reporter.update(phase="committing", rows=rows, input_files=len(files))
            laps.lap()
        laps.lap("commit_s")
    except BaseException as e:
        # When both failed (a metastore that went away, say), the query's error is the one a
        # user can act on, as when the analysis came first.
        failed = plan.error()
        if failed is not None and failed is not e:
            raise failed from e
        raise
    return {"rows": rows, "input_files": len(files), "source_partitions": _source_partitions(files),
            "write_seconds": time.time() - started, "timings": {**plan.laps.seconds, **laps.seconds},
            "stage_id": staged.result.id if staged.result is not None else None}


def _functions(spark: Any) -> Any:
    """pyspark's column functions for ``spark``'s kind of session."""
    from catalogd.spark_common import is_connect

    if is_connect(spark):
        # pyspark's shared functions pick the Connect ones only in a process started for Connect
        # (SPARK_CONNECT_MODE_ENABLED); the daemon that runs this is not one.
        from pyspark.sql.connect import functions as connect_functions

        return connect_functions
    from pyspark.sql import functions

    return functions


def _query_frame(spark: Any, query: str) -> Any:
    """The DataFrame of SQL text ``query`` (a SELECT), analysed when its columns are asked.

    On a Connect session, built here: ``spark.sql`` would send it to the server to be
    analysed (a command would run there) and hand back the same SQL, which the columns'
    request analyses again; one round trip fewer, and the analysis error (a source dropped
    since) comes from that request instead.
    """
    from catalogd.spark_common import is_connect

    if not is_connect(spark):
        return spark.sql(query)
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.plan import SQL

    return DataFrame(SQL(query), spark)


class _Plan:
    """The query analysed and its columns put in the table's order, on a thread of its own
    (beside the stage's begin), then its input files listed (``_Listing``) and what the write
    asks the session first (``SessionState``: its current catalog, a query of its own on a
    Connect server, and its dynamic-partition mode; nothing in the run changes them before
    its write).

    Timings (``laps``): ``sql_s`` (the query's DataFrame: no request on Connect, analysed in
    a classic session), ``columns_s`` (the query analysed for its columns on Connect),
    ``input_files_s`` (the listing, or its start on Connect) and ``session_state_s``: beside
    the critical path; ``plan_wait_s`` in ``write_result`` is what the write waited for them.
    """

    def __init__(self, spark: Any, query: Any, names: list[str], partition: dict[str, str] | None) -> None:
        self.laps = Laps()
        self._spark = spark
        self._query = query
        self._names = names
        self._partition = partition or {}
        self._df: Any = None
        self._listing: _Listing | None = None
        self._state: SessionState | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="catalogd-plan", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from catalogd.spark_common import session_state

        try:
            self._df, self._listing = self._plan()
            self._state = session_state(self._spark)
            self.laps.lap("session_state_s")
        except BaseException as e:  # raised to the caller by result()
            self._error = e

    def _plan(self) -> tuple[Any, _Listing]:
        from catalogd.spark_common import is_connect

        spark = self._spark
        F = _functions(spark)
        df = _query_frame(spark, self._query) if isinstance(self._query, str) else self._query
        self.laps.lap("sql_s")
        lowered = {c.lower(): c for c in df.columns}
        df = df.select(*[F.col(f"`{lowered[n]}`").alias(n) for n in self._names])
        for key, value in self._partition.items():
            # A filter on the result: Spark pushes it down to the sources' partitions.
            df = df.where(F.col(key) == F.lit(value))
        self.laps.lap("columns_s")
        # A Connect session lists the files the query reads while the rows are written (the
        # server plans it beside the write); a classic session here, beside the stage's begin.
        listing = _Listing(df, background=is_connect(spark))
        self.laps.lap("input_files_s")
        return df, listing

    def result(self) -> tuple[Any, _Listing, SessionState]:
        """The query's DataFrame (its columns the table's), its listing and the session's state;
        raises the analysis's error."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._listing is not None and self._state is not None
        return self._df, self._listing, self._state

    def error(self) -> BaseException | None:
        """What the analysis raised (None: it worked), once it has ended."""
        self._thread.join()
        return self._error


class _Listing:
    """``df.inputFiles()``, called now or on a thread of its own (``background``)."""

    def __init__(self, df: Any, background: bool) -> None:
        self._df = df
        self._files: list[str] = []
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._list, name="catalogd-input-files", daemon=True)
            self._thread.start()
        else:
            self._list()

    def _list(self) -> None:
        try:
            self._files = list(self._df.inputFiles())
        except BaseException as e:  # raised to the caller by files()
            self._error = e

    def files(self) -> list[str]:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._files


class Laps:
    """Where a run's time went: seconds per step, each from the end of the one before."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, name: str | None = None) -> None:
        """End a step (``name`` None: time not counted in any step)."""
        now = time.monotonic()
        if name is not None:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._last, 4)
        self._last = now


def _fingerprint(spark: Any, sources: list[str]) -> str:
    """The source tables' files with their sizes and modification times: a file rewritten
    under the same name (an outside tool, Hive's ``000000_0`` after an INSERT OVERWRITE)
    changes it too. One listing per directory, not one call per file; an input that is a
    directory (a Hive table Spark reads through its serde) is listed whole."""
    jvm = spark.sparkContext._jvm
    hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
    digest = hashlib.sha256()
    for name in sorted(sources):
        spark.catalog.refreshTable(name)
        files = sorted(spark.table(name).inputFiles())
        inputs: dict[str, tuple[Any, set[str]]] = {}
        for uri in files:
            digest.update(uri.encode() + b"\n")
            # From the URI, so that escaped characters (a space in a partition value) stay as they are.
            path = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(uri))
            parent = path.getParent()
            inputs.setdefault(parent.toString(), (parent, set()))[1].add(path.getName())
        for key in sorted(inputs):
            parent, names = inputs[key]
            try:
                fs = parent.getFileSystem(hadoop_conf)
                for status in fs.listStatus(parent):
                    entry = status.getPath().getName()
                    if entry.startswith(("_", ".")):
                        continue
                    if status.isFile():
                        digest.update(f"{key}/{entry} {status.getLen()} {status.getModificationTime()}\n".encode())
                    elif entry in names:
                        files_in = fs.listFiles(status.getPath(), True)
                        while files_in.hasNext():
                            inner = files_in.next()
                            digest.update(f"{inner.getPath().toString()} {inner.getLen()} "
                                          f"{inner.getModificationTime()}\n".encode())
            except Exception as e:  # gone since the listing: the next trigger sees the new set
                digest.update(f"? {key} {type(e).__name__}\n".encode())
        digest.update(b"--\n")
    return digest.hexdigest()


def _fingerprint_connect(spark: Any, sources: list[str]) -> str:
    """``_fingerprint`` for a Spark Connect session (no JVM at hand): the files' sizes and
    modification times come from Spark's ``binaryFile`` source, which lists them without
    reading their content."""
    digest = hashlib.sha256()
    for name in sorted(sources):
        spark.catalog.refreshTable(name)
        files = sorted(spark.table(name).inputFiles())
        for uri in files:
            digest.update(uri.encode() + b"\n")
        if files:
            try:
                listed = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(files)
                          .select("path", "length", "modificationTime").collect())
                for row in sorted(listed, key=lambda r: r[0]):
                    digest.update(f"{row[0]} {row[1]} {row[2]}\n".encode())
            except Exception as e:  # gone since the listing: the next trigger sees the new set
                digest.update(f"? {name} {type(e).__name__}\n".encode())
        digest.update(b"--\n")
    return digest.hexdigest()


class _Continuous:
    """What every trigger of a continuous table does: refresh when the sources' files changed."""

    def __init__(self, spec: dict[str, Any], reporter: Reporter) -> None:
        self.spec = spec
        self.reporter = reporter
        checkpoint = Path(spec["checkpoint"])
        checkpoint.mkdir(parents=True, exist_ok=True)
        self.marker = checkpoint / "refreshed-from.json"
        self.counters = {"batches": 0, "refreshes": 0}

    def batch(self, spark: Any, client: Any, batch_id: int, fingerprint: str) -> None:
        seen_at = time.time()
        last = json.loads(self.marker.read_text())["fingerprint"] if self.marker.exists() else None
        self.counters["batches"] += 1
        if fingerprint != last:
            self.reporter.update(phase="refreshing", batch_id=batch_id)
            result = refresh(spark, client, self.spec, None, self.reporter)
            _write_json(str(self.marker), {"fingerprint": fingerprint, "at": seen_at})
            self.counters["refreshes"] += 1
            self.reporter.update(last_refresh=seen_at, last_rows=result["rows"],
                                 last_input_files=result["input_files"])
        self.reporter.update(phase="waiting", fresh_as_of=seen_at, batch_id=batch_id, refresh_way="recompute",
                             **self.counters)

    def trigger(self, spark: Any, client: Any, batch_id: int) -> None:
        """One trigger: refresh when the sources' files changed."""
        from catalogd.spark_common import is_connect

        fingerprint = (_fingerprint_connect if is_connect(spark) else _fingerprint)(spark, self.spec["sources"])
        self.batch(spark, client, batch_id, fingerprint)


class ContinuousState(Protocol):
    """What a continuous table's triggers share: ``_Continuous`` (recompute when the files
    changed) or ``appender.Incremental`` (read the new files, append)."""

    def trigger(self, spark: Any, client: Any, batch_id: int) -> None: ...


def _ticks(spark: Any, spec: dict[str, Any], on_batch: Any) -> Any:
    """The streaming query whose trigger drives a continuous table: a rate source's ticks,
    checkpointed in the table's own directory."""
    ticks = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    return (ticks.writeStream.queryName(spec.get("app_name", "catalogd continuous"))
            .trigger(processingTime=f"{spec['trigger_seconds']} seconds")
            .option("checkpointLocation", str(Path(spec["checkpoint"]) / "stream"))
            .foreachBatch(on_batch).start())


def continuous(spark: Any, client: Any, spec: dict[str, Any], reporter: StatusFile) -> None:
    state = continuous_state(spec, reporter)

    def on_batch(batch: Any, batch_id: int) -> None:
        state.trigger(spark, client, batch_id)

    query = _ticks(spark, spec, on_batch)
    reporter.update(phase="streaming")
    query.awaitTermination()


def connect_trigger(spark: Any, client: Any, state: ContinuousState, batch_id: int) -> None:
    """One trigger of a continuous table driven through a Spark Connect session."""
    state.trigger(spark, client, batch_id)


def continuous_state(spec: dict[str, Any], reporter: Reporter) -> ContinuousState:
    """What a continuous table's triggers share: the files taken in (incremental, when the
    spec says so: ``catalogd.dynamic.incremental``) or the marker of those last refreshed from."""
    if spec.get("incremental"):
        from catalogd.dynamic.appender import Incremental

        return Incremental(spec, reporter, write_result)
    return _Continuous(spec, reporter)


def _tls_context(tls: dict[str, Any] | None) -> Any:
    if not tls:
        return None
    from catalogd.tls import client_context

    return client_context(tls["server_cert"], tls.get("cert"), tls.get("key"), pinned=True)


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text())
    reporter = StatusFile(spec)
    result: dict[str, Any] = {"ok": False}
    spark = None
    try:
        from catalogd.client import CatalogClient

        spark = _session(spec)
        reporter.update(phase="running", application_id=spark.sparkContext.applicationId)
        result["application_id"] = spark.sparkContext.applicationId
        client = CatalogClient(spec["daemon"], tls_context=_tls_context(spec.get("tls")))
        try:
            if spec["mode"] == "continuous":
                continuous(spark, client, spec, reporter)
            else:
                result.update(refresh(spark, client, spec, spec.get("partition"), reporter))
        finally:
            client.close()
        result["ok"] = True
    except BaseException as e:  # every failure is reported to the daemon
        result["error"] = _describe(e)
        traceback.print_exc()
    finally:
        result["ended"] = time.time()
        _write_json(spec["result_file"], result)
        reporter.update(phase="done" if result["ok"] else "failed")
        if spark is not None:
            spark.stop()
    return 0 if result["ok"] else 1


def _describe(e: BaseException) -> str:
    """One readable line: Spark's AnalysisException carries a long plan after the message."""
    text = str(e).strip() or type(e).__name__
    first = text.splitlines()[0] if text else type(e).__name__
    kind = getattr(e, "kind", None) or type(e).__name__
    return f"{kind}: {first}"[:1000]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
