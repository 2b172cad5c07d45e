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
- a file gone or changed (the source was rewritten: INSERT OVERWRITE, a REPLACE), or
  no state yet: the query runs over all the current files and REPLACEs the table.

Exactly once: the trigger records the stage and the files it covers (``pending``)
after writing and before committing. A trigger after a crash commits that stage again
(a commit of a committed stage answers COMMITTED; one found still open or half
committed is finished) and takes its files in, or drops the record if the stage was
aborted: the same files are then read again.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

#: How many committed triggers the status file lists (the supervisor records each as a run).
_KEPT = 20

#: ``{source name: {file uri: [size, modification time ms]}}``
Listing = dict[str, dict[str, list[int]]]


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, path)


def _ddl(columns: list[list[str]]) -> str:
    return ", ".join(f"`{name}` {type_}" for name, type_ in columns)


def list_files(spark: Any, source: dict[str, Any]) -> dict[str, list[int]]:
    """The data files under a source's location (``_``/``.`` names skipped, as Spark does)."""
    try:
        rows = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(source["location"])
                .select("path", "length", "modificationTime").collect())
    except Exception as e:
        if "PATH_NOT_FOUND" in str(e) or "does not exist" in str(e):
            return {}  # an empty table whose directory is not there yet
        raise
    found: dict[str, list[int]] = {}
    for path, length, modified in rows:
        found[str(path)] = [int(length), int(modified.timestamp() * 1000) if modified is not None else 0]
    return found


class Incremental:
    """What the triggers of one incremental table share: its spec and its state file."""

    def __init__(self, spec: dict[str, Any], reporter: Any) -> None:
        self.spec = spec
        self.plan: dict[str, Any] = spec["incremental"]
        self.reporter = reporter
        checkpoint = Path(spec["checkpoint"])
        checkpoint.mkdir(parents=True, exist_ok=True)
        self.path = checkpoint / "incremental.json"
        self.state: dict[str, Any] = json.loads(self.path.read_text()) if self.path.exists() else {}
        if self.state.get("query") != self.plan["query"]:
            # Another query (the table was altered) starts over: its first trigger recomputes.
            self.state = {}
        self.counters = {"batches": 0, "refreshes": 0, "appends": 0, "recomputes": 0}
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
            self.state["files"] = pending["files"]
        self.state.pop("pending", None)
        self._save()

    def trigger(self, spark: Any, client: Any, batch_id: int) -> None:
        seen_at = time.time()
        self.counters["batches"] += 1
        self._recover(client)
        sources: list[dict[str, Any]] = self.plan["sources"]
        current: Listing = {s["name"]: list_files(spark, s) for s in sources}
        seen: Listing | None = self.state.get("files")
        rewritten = [] if seen is None else sorted(
            name for name, files in seen.items()
            if any(current.get(name, {}).get(path) != meta for path, meta in files.items()))
        if seen is None or rewritten or set(seen) != set(current):
            why = "first trigger" if seen is None else f"rewritten: {', '.join(rewritten) or 'sources changed'}"
            self._run(spark, client, batch_id, seen_at, current, current, replace=True, why=why)
        else:
            new = {name: {p: m for p, m in files.items() if p not in seen[name]} for name, files in current.items()}
            if any(new.values()):
                self._run(spark, client, batch_id, seen_at, new, current, replace=False, why="new files")
        self.reporter.update(phase="waiting", fresh_as_of=seen_at, batch_id=batch_id, refresh_way="incremental",
                             **self.counters)

    def _run(self, spark: Any, client: Any, batch_id: int, started: float, read: Listing, after: Listing,
             replace: bool, why: str) -> None:
        """Run the query over ``read``'s files into the table (REPLACE or APPEND); ``after`` is
        what the table has taken in once it commits."""
        from catalogd.dynamic.job import write_result
        from catalogd.model import StagePurpose

        self.reporter.update(phase="refreshing", batch_id=batch_id)
        views = []
        for source in self.plan["sources"]:
            files = sorted(read.get(source["name"], {}))
            columns = source["columns"] + source["partition_keys"]
            if files:
                df = (spark.read.format(source["format"]).schema(_ddl(columns))
                      .option("basePath", source["location"]).load(files))
            else:
                df = spark.createDataFrame([], _ddl(columns))
            df.createOrReplaceTempView(source["view"])
            views.append(source["view"])
        try:
            query = spark.sql(self.plan["query"])

            def pending(stage_id: str) -> None:
                self.state["pending"] = {"stage": stage_id, "files": after}
                self._save()

            result = write_result(spark, client, self.spec, query,
                                  StagePurpose.REPLACE if replace else StagePurpose.APPEND, self.reporter, pending)
        finally:
            for view in views:
                spark.catalog.dropTempView(view)
        self.state.update({"files": after, "query": self.plan["query"]})
        self.state.pop("pending", None)
        self._save()
        input_files = result["input_files"]
        mode = "recompute" if replace else "append"
        self.counters["refreshes"] += 1
        self.counters["recomputes" if replace else "appends"] += 1
        record = {"batch": batch_id, "mode": mode, "why": why, "started": started, "ended": time.time(),
                  "rows": result["rows"], "input_files": input_files,
                  "new_files": sum(len(f) for f in read.values()),
                  "source_files": sum(len(f) for f in after.values()), "stage_id": result["stage_id"]}
        self.triggers = [*self.triggers, record][-_KEPT:]
        self.reporter.update(last_refresh=started, last_rows=result["rows"], last_input_files=input_files,
                             last_trigger=record, triggers=self.triggers)


__all__ = ["Incremental", "list_files"]
