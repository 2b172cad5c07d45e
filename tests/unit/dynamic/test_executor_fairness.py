"""The batch-run executor under bursts: one table's 200 queued partitions do not delay another table's
refresh (tables take turns), a table's requested runs are bounded (a typed error with Retry-After), and
50 concurrent requests of one partition are one run and one jobId; none makes a metastore call."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from dynamic_fakes import FakeJobs, FakeManager, FakeRecords, FakeRunner, config, entry
from polling import wait_until

from catalogd.dynamic.executor import RunExecutor
from catalogd.dynamic.registry import Entry, Registry
from catalogd.dynamic.runs import RunIndex
from catalogd.errors import RefreshQueueFullError
from catalogd.model import RefreshMode, RunStatus


class _NoMetastore(FakeManager):
    def catalog(self, name: str | None = None) -> object:
        raise AssertionError("a refresh request asked the metastore")


def _table(name: str) -> Entry:
    made = entry(name, "1 day", RefreshMode.FULL)
    made.partition_keys = ["day"]  # known (as after the first partition refresh): no metastore call
    return made


class Rig:
    def __init__(self, tmp_path: Path, *entries: Entry, max_queued: int = 1000) -> None:
        self.runner = FakeRunner()
        self.registry = Registry()
        self.runs = RunIndex("local[1]")
        for e in entries:
            self.registry.put(e)
        self.executor = RunExecutor(_NoMetastore(), config(1, max_queued=max_queued), self.registry,  # type: ignore[arg-type]
                                    self.runs, FakeRecords(), FakeJobs(tmp_path), threading.Event(),  # type: ignore[arg-type]
                                    table_gone=lambda e: None, runner=self.runner)

    def launched_tables(self, n: int) -> list[str]:
        """The tables of the first ``n`` launches, in order; every job is let finish at once."""
        wait_until(lambda: len(self.runner.launched) >= n, 30.0, f"{n} launches")
        return [self.runs.table_of(work_dir.name) or "?" for _, _, work_dir in self.runner.launched[:n]]

    def finish_all(self, upto: int) -> None:
        for count in range(1, upto + 1):
            wait_until(lambda count=count: len(self.runner.launched) >= count, 30.0, f"launch {count}")
            proc, _, work_dir = self.runner.launched[count - 1]
            self.runner.json[work_dir / "result.json"] = {"ok": True, "rows": 1}
            proc.exit(0)


def test_one_table_s_200_queued_partitions_do_not_delay_another_table_s_refresh(tmp_path: Path) -> None:
    a, b = _table("a"), _table("b")
    rig = Rig(tmp_path, a, b)
    for day in range(200):
        rig.executor.submit([a], trigger="api", partition={"day": f"2026-01-{day:03d}"})
    other = rig.executor.submit([b], trigger="api")
    assert rig.executor.waiting() == 200  # a's first is running (one worker)
    rig.finish_all(3)
    # a's first run, then turns: a's second, b's. In one FIFO, b came 201st.
    assert "main.db.b" in rig.launched_tables(3)
    wait_until(lambda: rig.runs.get_job(other.id).status is RunStatus.SUCCEEDED, 30.0, "b's refresh")
    rig.executor.stop_table("main.db.a")
    rig.executor.shutdown()


def test_a_table_s_requested_runs_are_bounded_and_a_joining_request_is_never_refused(tmp_path: Path) -> None:
    a, b = _table("a"), _table("b")
    a.last_duration = 7.5
    rig = Rig(tmp_path, a, b, max_queued=3)
    first = rig.executor.submit([a], trigger="api", partition={"day": "d0"})
    wait_until(lambda: rig.runs.get_job(first.id).status is RunStatus.RUNNING, 30.0, "the first run")
    jobs = [rig.executor.submit([a], trigger="api", partition={"day": f"d{n}"}) for n in (1, 2, 3)]
    with pytest.raises(RefreshQueueFullError) as refused:
        rig.executor.submit([a], trigger="manual", partition={"day": "d4"})
    assert refused.value.retry_after == 7.5 and "max-queued-refreshes-per-table" in refused.value.message
    assert rig.executor.queue_stats() == {"waiting": 3, "refused": 1}
    # A request for a partition already waiting (or running) joins it: same run, same jobId.
    again = rig.executor.submit([a], trigger="api", partition={"day": "d2"})
    assert again.id == jobs[1].id and again.runs[0].id == jobs[1].runs[0].id
    assert rig.executor.submit([a], trigger="api", partition={"day": "d0"}).id == first.id
    # Another table has its own line; the daemon's own runs are never refused.
    rig.executor.submit([b], trigger="api")
    rig.executor.submit([a], trigger="schedule", partition={"day": "d9"})
    # A refused request left nothing behind.
    assert not [r for r in rig.runs.live("main.db.a").values() if r.partition == {"day": "d4"}]
    rig.executor.stop_table("main.db.a")
    rig.executor.stop_table("main.db.b")
    rig.executor.shutdown()


def test_fifty_concurrent_requests_of_one_partition_are_one_run_and_one_job(tmp_path: Path) -> None:
    a = _table("a")
    rig = Rig(tmp_path, a, max_queued=2)
    answers: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(50)

    def request() -> None:
        try:
            start.wait(30)
            answers.append(rig.executor.submit([a], trigger="api", partition={"day": "d1"}).id)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=request) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and len(answers) == 50
    assert len(set(answers)) == 1  # one jobId for all
    assert len(rig.runs.live("main.db.a")) == 1  # one run
    rig.executor.stop_table("main.db.a")
    rig.executor.shutdown()


def test_a_request_joining_one_run_of_a_two_table_job_gets_a_job_of_its_own(tmp_path: Path) -> None:
    a, b = _table("a"), _table("b")
    rig = Rig(tmp_path, a, b)
    both = rig.executor.submit([a, b], trigger="api")
    alone = rig.executor.submit([a], trigger="api")
    assert alone.id != both.id and [r.id for r in alone.runs] == [both.runs[0].id]
    rig.executor.stop_table("main.db.a")
    rig.executor.stop_table("main.db.b")
    rig.executor.shutdown()
