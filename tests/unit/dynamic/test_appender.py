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

    return SimpleNamespace(files=files, writes=writes, client=client, crash=crash, trigger=trigger, spec=spec,
                           read=read)


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


@pytest.fixture
def merging(harness: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The harness with an aggregating table: each trigger's merge is recorded as (the state
    version it merged into, the version it wrote, the files it read) and writes that version."""
    harness.spec["incremental"]["aggregate"] = {"partial": "...", "final": "...", "keys": [], "buffers": {},
                                                "averages": []}
    merges: list[tuple[int | None, int, list[str]]] = []

    def merge(self: Any, spark: Any, aggregate: Any, before: int | None, version: int) -> tuple[Any, list[str]]:
        (self.states / str(version)).mkdir(parents=True, exist_ok=True)
        merges.append((before, version, list(harness.read)))
        return FakeFrame(), list(harness.read)

    monkeypatch.setattr(appender.Incremental, "_merge", merge)
    harness.merges = merges
    harness.states = Path(harness.spec["checkpoint"]) / "state"
    return harness


def test_an_aggregation_merges_new_files_into_its_last_state_and_keeps_only_the_new_one(merging: Any) -> None:
    merging.files.update({"f1": [10, 1, []], "f2": [10, 1, []]})
    merging.trigger(0)
    merging.states.joinpath("notes").mkdir()  # not a state version: left alone
    merging.files["f3"] = [5, 2, []]
    merging.trigger(1)
    merging.trigger(2)  # nothing new: nothing merged
    merging.files["f4"] = [5, 3, []]
    merging.trigger(3)
    assert merging.merges == [(None, 1, ["f1", "f2"]), (1, 2, ["f3"]), (2, 3, ["f4"])]
    # Every write replaces the table with the query's rows from the new state.
    assert [w[0] for w in merging.writes] == [StagePurpose.REPLACE] * 3
    assert sorted(p.name for p in merging.states.iterdir()) == ["3", "notes"]


def test_a_merge_left_by_a_crash_keeps_its_state_once_committed_or_is_redone(merging: Any) -> None:
    _crash_before_the_second_commit(merging)
    merging.client.last_commit = "main.db.s1"
    merging.trigger(2)  # its stage committed on recovery: state 2 is the table's
    merging.files["f3"] = [5, 3, []]
    merging.trigger(3)
    assert merging.merges == [(None, 1, ["f1"]), (1, 2, ["f2"]), (2, 3, ["f3"])]


def test_a_merge_aborted_after_a_crash_is_redone_from_the_state_before(merging: Any) -> None:
    _crash_before_the_second_commit(merging)
    merging.client.known.clear()
    merging.trigger(2)
    assert merging.merges == [(None, 1, ["f1"]), (1, 2, ["f2"]), (1, 2, ["f2"])]


def test_a_state_gone_is_made_again_from_every_file(merging: Any) -> None:
    import shutil

    merging.files.update({"f1": [10, 1, []]})
    merging.trigger(0)
    shutil.rmtree(merging.states / "1")
    merging.files["f2"] = [5, 2, []]
    merging.trigger(1)
    assert merging.merges == [(None, 1, ["f1"]), (None, 2, ["f1", "f2"])]


def test_a_state_of_another_split_of_the_same_query_is_not_merged_into(merging: Any) -> None:
    merging.files.update({"f1": [10, 1, []]})
    merging.trigger(0)
    merging.files["f2"] = [5, 2, []]
    merging.trigger(1)
    # The same query split otherwise (another catalogd, a source column's new type): the state's
    # layout is not the partial's any more, so the next trigger starts over from every file.
    merging.spec["incremental"]["aggregate"]["buffers"] = {"__b0": "sum"}
    merging.files["f3"] = [5, 3, []]
    merging.trigger(2)
    merging.files["f4"] = [5, 4, []]
    merging.trigger(3)
    assert merging.merges == [(None, 1, ["f1"]), (1, 2, ["f2"]), (None, 1, ["f1", "f2", "f3"]), (1, 2, ["f4"])]
    assert sorted(p.name for p in merging.states.iterdir()) == ["2"]


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
