"""The Spark side of an incremental CONTINUOUS table (``catalogd.dynamic.incremental``
decides which ones): what each trigger does, on either engine.

Each trigger lists its sources' files (names, sizes, modification times: Spark's
``binaryFile`` source, which reads no content) and compares them with the files
already taken in, kept in ``<checkpoint>/incremental.json``:

- files only added: the query runs over views of the new files alone and its rows are
  appended to the table through an APPEND stage (readers see all of a trigger's rows
  or none). This is what Spark's file stream source does for a stateless query in
  append mode, without a streaming query per table: the connect engine runs it in a
  session of the shared server, with no Python worker of its own.
- a file gone or changed (the source was rewritten: INSERT OVERWRITE, a REPLACE), the
  table written by another than its triggers (``dt refresh``: its last commit is not
  theirs), or no state yet: the query runs over all the current files and REPLACEs the
  table.

An aggregation (``catalogd.dynamic.aggregation``) is merged instead of appended: the
trigger aggregates the new files, merges that into the per-group state in
``<checkpoint>/state/<version>`` (a new version per trigger, the last committed one
kept), and replaces the table with the query's rows from the new state.

Exactly once: the trigger records the stage and the files it covers (``pending``)
after writing and before committing. A trigger after a crash commits that stage again
(a commit of a committed stage answers COMMITTED; one found still open or half
committed is finished) and takes its files in, or drops the record if the stage was
aborted: the same files are then read again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from functools import reduce
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from catalogd.dynamic.aggregation import STATE_VIEW

#: Views an aggregation's merge reads: the state before the trigger, and the partial aggregate.
_BEFORE = "catalogd_state_before"
_PARTIAL = "catalogd_partial"
#: How many committed triggers the status file lists (the supervisor records each as a run).
_KEPT = 20

#: ``{source name: {file uri: [size, modification time ms, partition values]}}``
Listing = dict[str, dict[str, list[Any]]]
#: The table parameter naming the stage that last committed into it (``hive_codec.LAST_COMMIT``).
LAST_COMMIT = "catalogd.last-commit"
#: Where an aggregation's state versions live, under the checkpoint.
_STATE = "state"
#: Hive's directory name for a NULL partition value.
_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, path)


def _ddl(columns: list[list[str]]) -> str:
    return ", ".join(f"`{name}` {type_}" for name, type_ in columns)


def _local(uri: str) -> str:
    """A file URI's path, however it is spelled (``file:/a``, ``file:///a``, ``/a``)."""
    return urlsplit(uri).path.rstrip("/")


def _binary_files(spark: Any, directories: list[str]) -> list[Any]:
    """(path, length, modificationTime) of every data file under ``directories`` (``_``/``.``
    names skipped, as Spark does); a directory not there (yet) holds none."""
    if not directories:
        return []
    try:
        # One task reads every file's status: with a task per few files, a listing's cost would
        # grow with the source (task scheduling), which a trigger should not.
        return list(spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(directories)
                    .select("path", "length", "modificationTime").coalesce(1).collect())
    except Exception as e:
        if "PATH_NOT_FOUND" not in str(e) and "does not exist" not in str(e):
            raise
    if len(directories) == 1:
        return []
    return [row for directory in directories for row in _binary_files(spark, [directory])]


def list_files(spark: Any, source: dict[str, Any], partitions: list[Any] | None = None) -> dict[str, list[Any]]:
    """A source's data files: ``{uri: [size, modification time ms, partition]}``.

    Args:
        partitions: a partitioned source's partitions (from the metastore: a stage adds
            them where it wrote them, not necessarily under the table's location); the
            partition of a file is its values (``["2024-03-01"]``), ``[]`` for an unpartitioned source.
    """
    if partitions is None:
        directories: dict[str, list[str]] = {source["location"]: []}
    else:
        directories = {p.location: list(p.values) for p in partitions if p.location}
    # Spark names a file by its full URI (``file:/a/b``); a location may be spelled otherwise.
    by_path = {_local(d): values for d, values in directories.items()}
    found: dict[str, list[Any]] = {}
    for path, length, modified in _binary_files(spark, sorted(directories)):
        local = _local(str(path))
        # The partition whose directory holds the file (the longest such directory).
        holder = max((d for d in by_path if local.startswith(d + "/")), key=len, default=None)
        if holder is None:
            continue
        found[str(path)] = [int(length), int(modified.timestamp() * 1000) if modified is not None else 0,
                            by_path[holder]]
    return found


def _literal(value: str | None, type_: str) -> str:
    if value is None or value == _DEFAULT_PARTITION:
        return f"CAST(NULL AS {type_})"
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"CAST('{escaped}' AS {type_})"


class Incremental:
    """What the triggers of one incremental table share: its spec and its state file."""

    def __init__(self, spec: dict[str, Any], reporter: Any, write: Any) -> None:
        """``write``: ``job.write_result`` (a query's rows into the table through a stage)."""
        self.spec = spec
        self.write = write
        self.plan: dict[str, Any] = spec["incremental"]
        self.reporter = reporter
        checkpoint = Path(spec["checkpoint"]).absolute()
        checkpoint.mkdir(parents=True, exist_ok=True)
        self.path = checkpoint / "incremental.json"
        self.states = checkpoint / _STATE
        self.state: dict[str, Any] = json.loads(self.path.read_text()) if self.path.exists() else {}
        # The whole plan, not only the query: the same query split otherwise (another catalogd)
        # or over a source whose columns changed would read a state of another layout.
        self.plan_key = hashlib.sha256(json.dumps(self.plan, sort_keys=True).encode()).hexdigest()
        if self.state.get("query") != self.plan["query"] or self.state.get("plan", self.plan_key) != self.plan_key \
                or (self.plan.get("aggregate") and "plan" not in self.state):
            # Another query or plan (the table was altered) starts over: its first trigger recomputes.
            self.state = {}
        self.counters = {"batches": 0, "refreshes": 0, "appends": 0, "merges": 0, "recomputes": 0}
        self.triggers: list[dict[str, Any]] = []

    def _save(self) -> None:
        _write_json(self.path, self.state)

    def _recover(self, client: Any) -> None:
        """Settle the stage a crashed trigger left (see the module's doc)."""
        from catalogd.errors import CatalogError

        pending = self.state.get("pending")
        if not pending:
            return
        try:
            stage = client.commit_stage(pending["stage"])
            committed = stage.state.value == "COMMITTED"
        except CatalogError:
            committed = False
        if committed:
            self.state["files"], self.state["stage"] = pending["files"], pending["stage"]
            if "version" in pending:
                self.state["version"] = pending["version"]
        self.state.pop("pending", None)
        self._save()

    def trigger(self, spark: Any, client: Any, batch_id: int) -> None:
        seen_at = time.time()
        self.counters["batches"] += 1
        self._recover(client)
        sources: list[dict[str, Any]] = self.plan["sources"]
        catalog = self.spec["table"].split(".", 1)[0]
        current: Listing = {
            s["name"]: list_files(spark, s, client.list_partitions(f"{catalog}.{s['name']}")
                                  if s["partition_keys"] else None)
            for s in sources}
        seen: Listing | None = self.state.get("files")
        rewritten = [] if seen is None else sorted(
            name for name, files in seen.items()
            if any(current.get(name, {}).get(path) != meta for path, meta in files.items()))
        last_commit = client.get_table(self.spec["table"]).properties.get(LAST_COMMIT)
        # Written by another than this table's triggers (``dt refresh``): what it read is unknown.
        outside = bool(self.state.get("stage")) and last_commit is not None and last_commit != self.state["stage"]
        # An aggregation merges into its last state: gone (removed by hand), it is made again.
        lost = bool(self.plan.get("aggregate")) and seen is not None and not self._version_dir(
            self.state.get("version")).is_dir()
        if seen is None or rewritten or outside or lost or set(seen) != set(current):
            why = ("first trigger" if seen is None else "the table was written outside its triggers" if outside
                   else "the aggregation's state is gone" if lost
                   else f"rewritten: {', '.join(rewritten) or 'sources changed'}")
            self._run(spark, client, batch_id, seen_at, current, current, replace=True, why=why)
        else:
            new = {name: {p: m for p, m in files.items() if p not in seen[name]} for name, files in current.items()}
            if any(new.values()):
                self._run(spark, client, batch_id, seen_at, new, current, replace=False, why="new files")
        self.reporter.update(phase="waiting", fresh_as_of=seen_at, batch_id=batch_id, refresh_way="incremental",
                             **self.counters)

    @staticmethod
    def _read(spark: Any, source: dict[str, Any], files: dict[str, list[Any]]) -> Any:
        """A source's rows in ``files``: the file source with the table's data columns, and a
        partitioned source's partition values (from the metastore's partition names) added."""
        data = _ddl(source["columns"])
        keys: list[list[str]] = source["partition_keys"]
        if not files:
            return spark.createDataFrame([], _ddl(source["columns"] + keys))
        if not keys:
            return spark.read.format(source["format"]).schema(data).load(sorted(files))
        by_partition: dict[tuple[str, ...], list[str]] = {}
        for path, meta in files.items():
            by_partition.setdefault(tuple(meta[2]), []).append(path)
        frames = []
        for values, paths in sorted(by_partition.items()):
            columns = [f"`{c}`" for c, _ in source["columns"]] + [
                f"{_literal(value, t)} AS `{k}`" for (k, t), value in zip(keys, values, strict=True)]
            frames.append(spark.read.format(source["format"]).schema(data).load(sorted(paths)).selectExpr(*columns))
        return reduce(lambda a, b: a.unionByName(b), frames)

    def _version_dir(self, version: Any) -> Path:
        return self.states / str(int(version or 0))

    def _merge(self, spark: Any, aggregate: dict[str, Any], before: int | None, version: int) -> tuple[Any, list[str]]:
        """An aggregation's trigger (the source views already over the files to read): the
        partial aggregate merged into state ``before`` (none: it is the state), written as
        state ``version``; returns the final query's rows and the source files read."""
        from pyspark.sql.types import StructType

        names = spark.sql(self.plan["query"]).columns  # the table's columns, as the query names them
        partial = spark.sql(aggregate["partial"])
        fields = partial.schema.fields
        types = {f.name: f.dataType.simpleString() for f in fields}
        kept = StructType([f for f in fields if not f.name.startswith("__p")])
        columns = ", ".join(f"`{f.name}`" for f in kept.fields)
        if before is None:
            merged = spark.sql(f"SELECT {columns} FROM ({aggregate['partial']})")
        else:
            spark.read.schema(kept).parquet(self._version_dir(before).as_uri()).createOrReplaceTempView(_BEFORE)
            partial.createOrReplaceTempView(_PARTIAL)
            keys = [f"`{k}`" for k in aggregate["keys"]]
            # Casts keep a buffer's type: a sum of decimal(p, s) sums would widen at each trigger.
            merges = keys + [f"CAST({how}(`{name}`) AS {types[name]}) AS `{name}`"
                             for name, how in aggregate["buffers"].items()]
            grouped = f" GROUP BY {', '.join(keys)}" if keys else ""
            merged = spark.sql(f"SELECT {', '.join(merges)} FROM (SELECT {columns} FROM `{_BEFORE}` UNION ALL "
                               f"SELECT {columns} FROM `{_PARTIAL}`){grouped}")
        target = self._version_dir(version)
        # As URIs: Spark resolves a path without a scheme against fs.defaultFS (HDFS on a
        # cluster), while the state lives in the checkpoint on this machine's disk.
        merged.write.mode("overwrite").parquet(target.as_uri())
        state = spark.read.schema(kept).parquet(target.as_uri())
        for average in aggregate["averages"]:
            # As Spark's avg: NULL over no values, the sum over the count in the avg's own type.
            total, count = f"`{average['sum']}`", f"`{average['count']}`"
            state = state.selectExpr("*", f"CAST(IF({count} = 0, NULL, {total} / {count}) AS "
                                          f"{types[average['probe']]}) AS `{average['name']}`")
        state.createOrReplaceTempView(STATE_VIEW)
        return spark.sql(aggregate["final"]).toDF(*names), list(partial.inputFiles())

    def _forget_versions(self, keep: int) -> None:
        """Remove the state versions before ``keep`` (each trigger writes a new one): only
        directories named by a number, in this table's own ``state`` directory."""
        import shutil

        if not self.states.is_dir():
            return
        for entry in self.states.iterdir():
            if entry.name.isdigit() and int(entry.name) != keep and entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)

    def _run(self, spark: Any, client: Any, batch_id: int, started: float, read: Listing, after: Listing,
             replace: bool, why: str) -> None:
        """Run the query over ``read``'s files into the table (REPLACE or APPEND); ``after`` is
        what the table has taken in once it commits."""
        from catalogd.model import StagePurpose

        self.reporter.update(phase="refreshing", batch_id=batch_id)
        views = []
        for source in self.plan["sources"]:
            df = self._read(spark, source, read.get(source["name"], {}))
            df.createOrReplaceTempView(source["view"])
            views.append(source["view"])
        aggregate = self.plan.get("aggregate")
        version: int | None = None
        input_files: int | None = None
        try:
            if aggregate:
                version = int(self.state.get("version") or 0) + 1
                query, inputs = self._merge(spark, aggregate, None if replace else self.state.get("version"), version)
                views.extend([STATE_VIEW, _BEFORE, _PARTIAL])
                input_files = len(inputs)
            else:
                query = spark.sql(self.plan["query"])

            def pending(stage_id: str) -> None:
                self.state["pending"] = {"stage": stage_id, "files": after}
                if version is not None:
                    self.state["pending"]["version"] = version
                self._save()

            purpose = StagePurpose.REPLACE if replace or aggregate else StagePurpose.APPEND
            result = self.write(spark, client, self.spec, query, purpose, self.reporter, pending)
        finally:
            for view in views:
                spark.catalog.dropTempView(view)
        self.state.update({"files": after, "query": self.plan["query"], "plan": self.plan_key,
                           "stage": result["stage_id"]})
        if version is not None:
            self.state["version"] = version
        self.state.pop("pending", None)
        self._save()
        if version is not None:
            self._forget_versions(keep=version)
        if input_files is None:
            input_files = result["input_files"]
        mode = "recompute" if replace else "merge" if aggregate else "append"
        self.counters["refreshes"] += 1
        self.counters["recomputes" if replace else "merges" if aggregate else "appends"] += 1
        record = {"batch": batch_id, "mode": mode, "why": why, "started": started, "ended": time.time(),
                  "rows": result["rows"], "input_files": input_files,
                  "new_files": sum(len(f) for f in read.values()),
                  "source_files": sum(len(f) for f in after.values()), "stage_id": result["stage_id"]}
        self.triggers = [*self.triggers, record][-_KEPT:]
        self.reporter.update(last_refresh=started, last_rows=result["rows"], last_input_files=input_files,
                             last_trigger=record, triggers=self.triggers)


__all__ = ["Incremental", "list_files"]
