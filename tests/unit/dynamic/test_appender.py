from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from catalogd.dynamic import appender
from catalogd.errors import StageNotFoundError
from catalogd.model import StagePurpose, StageState


class FakeFrame:
    def createOrReplaceTempView(self, name: str) -> None:
        pass


class FakeSpark:
    def __init__(self) -> None:
        self.catalog = SimpleNamespace(dropTempView=lambda name: True)

    def sql(self, query: str) -> FakeFrame:
        return FakeFrame()


class FakeClient:
    def __init__(self) -> None:
        self.last_commit: str | None = None
        self.committed: list[str] = []
        self.known: dict[str, StageState] = {}

    def get_table(self, name: str) -> Any:
        return SimpleNamespace(properties={"catalogd.last-commit": self.last_commit} if self.last_commit else {})

    def list_partitions(self, name: str) -> list[Any]:
        return []

    def commit_stage(self, stage_id: str) -> Any:
        if stage_id not in self.known:
            raise StageNotFoundError(f"{stage_id} is not open")
        self.committed.append(stage_id)
        return SimpleNamespace(state=StageState.COMMITTED)


class Reporter:
    def __init__(self) -> None:
        self.status: dict[str, Any] = {}

    def update(self, **values: Any) -> None:
        self.status.update(values)


@pytest.fixture
def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """An incremental table over one source whose files the test sets; each write records
    the purpose and the files read, and commits unless told to crash before."""
    files: dict[str, list[Any]] = {}
    writes: list[tuple[StagePurpose, list[str]]] = []
    client = FakeClient()
    crash = {"before_commit": False}
    read: list[str] = []

    def read_files(spark: Any, source: dict[str, Any], got: dict[str, list[Any]]) -> FakeFrame:
        read[:] = sorted(got)
        return FakeFrame()

    def write_result(spark: Any, client_: Any, spec: dict[str, Any], df: Any, purpose: StagePurpose,
                     reporter: Any, on_staged: Any = None, partition: Any = None) -> dict[str, Any]:
        stage = f"main.db.s{len(writes)}"
        on_staged(stage)
        if crash["before_commit"]:
            client.known[stage] = StageState.OPEN
            raise RuntimeError("killed before the commit")
        writes.append((purpose, list(read)))
        client.last_commit = stage
        return {"rows": len(read), "input_files": len(read), "stage_id": stage}

    monkeypatch.setattr(appender, "list_files", lambda spark, source, partitions=None: dict(files))
    monkeypatch.setattr(appender.Incremental, "_read", staticmethod(read_files))
    spec = {"table": "main.db.dt", "checkpoint": str(tmp_path / "checkpoint"),
            "incremental": {"query": "SELECT ...", "sources": [
                {"name": "db.src", "view": "v0", "location": "file:/src", "format": "parquet",
                 "columns": [["id", "bigint"]], "partition_keys": []}]}}

    def trigger(batch: int) -> None:
        appender.Incremental(spec, Reporter(), write_result).trigger(FakeSpark(), client, batch)

    return SimpleNamespace(files=files, writes=writes, client=client, crash=crash, trigger=trigger)


def test_the_first_trigger_recomputes_then_only_new_files_are_appended(harness: Any) -> None:
    harness.files.update({"f1": [10, 1, []], "f2": [10, 1, []]})
    harness.trigger(0)
    harness.trigger(1)  # nothing new: nothing written
    harness.files["f3"] = [5, 2, []]
    harness.trigger(2)
    assert harness.writes == [(StagePurpose.REPLACE, ["f1", "f2"]), (StagePurpose.APPEND, ["f3"])]


def test_a_rewritten_source_or_an_outside_write_recomputes(harness: Any) -> None:
    harness.files.update({"f1": [10, 1, []]})
    harness.trigger(0)
    harness.files["f1"] = [12, 3, []]  # rewritten in place
    harness.trigger(1)
    harness.client.last_commit = "main.db.someone-else"  # dt refresh
    harness.files["f2"] = [1, 4, []]
    harness.trigger(2)
    assert [w[0] for w in harness.writes] == [StagePurpose.REPLACE] * 3


def _crash_before_the_second_commit(harness: Any) -> None:
    """A first trigger commits f1; the second, with f2 new, dies before its stage's commit."""
    harness.files.update({"f1": [10, 1, []]})
    harness.trigger(0)
    harness.files["f2"] = [5, 2, []]
    harness.crash["before_commit"] = True
    with pytest.raises(RuntimeError):
        harness.trigger(1)
    harness.crash["before_commit"] = False


def test_a_stage_left_by_a_crash_is_committed_once_and_its_files_are_not_read_again(harness: Any) -> None:
    _crash_before_the_second_commit(harness)
    harness.client.last_commit = "main.db.s1"  # what its commit on recovery leaves
    harness.trigger(2)
    assert harness.client.committed == ["main.db.s1"]
    assert harness.writes == [(StagePurpose.REPLACE, ["f1"])]  # f2 not read again


def test_a_stage_aborted_after_a_crash_leaves_its_files_to_read_again(harness: Any) -> None:
    _crash_before_the_second_commit(harness)
    harness.client.known.clear()  # the janitor aborted it
    harness.trigger(2)
    assert harness.writes == [(StagePurpose.REPLACE, ["f1"]), (StagePurpose.APPEND, ["f2"])]


class ListingSpark:
    """``spark.read.format("binaryFile")...collect()`` over files the test names."""

    def __init__(self, files: list[tuple[str, int]]) -> None:
        self.files = files
        self.loaded: list[str] = []
        self.read = self

    def format(self, name: str) -> ListingSpark:
        return self

    def option(self, key: str, value: str) -> ListingSpark:
        return self

    def load(self, directories: list[str]) -> ListingSpark:
        self.loaded = list(directories)
        return self

    def select(self, *columns: str) -> ListingSpark:
        return self

    def coalesce(self, partitions: int) -> ListingSpark:
        return self

    def collect(self) -> list[tuple[str, int, Any]]:
        import datetime

        at = datetime.datetime.fromtimestamp(1700000000, datetime.UTC)
        return [(path, size, at) for path, size in self.files]


def test_a_partitioned_sources_files_are_listed_per_partition_location_wherever_it_is() -> None:
    spark = ListingSpark([("file:/wh/db.db/ev/ds=1/part-0.parquet", 10),
                          ("file:/wh/db.db/__catalogd_stage_x/ds=2/part-0.parquet", 20)])
    partitions = [SimpleNamespace(location="file:///wh/db.db/ev/ds=1", values=["1"]),
                  SimpleNamespace(location="file:/wh/db.db/__catalogd_stage_x/ds=2", values=["2"])]
    found = appender.list_files(spark, {"location": "file:/wh/db.db/ev"}, partitions)
    assert spark.loaded == sorted(p.location for p in partitions)  # as the metastore spells them
    assert found == {"file:/wh/db.db/ev/ds=1/part-0.parquet": [10, 1700000000000, ["1"]],
                     "file:/wh/db.db/__catalogd_stage_x/ds=2/part-0.parquet": [20, 1700000000000, ["2"]]}
