"""The batch-run executor with a fake runner: a bounded pool, joined requests, runs stopped
with their table, and a shutdown that cuts runs off (FAILED, never left PENDING)."""

from __future__ import annotations

import threading
from pathlib import Path

from dynamic_fakes import FakeJobs, FakeManager, FakeProc, FakeRecords, FakeRunner, config, entry
from polling import wait_until

from catalogd.dynamic.executor import RunExecutor
from catalogd.dynamic.registry import Entry, Registry
from catalogd.dynamic.runs import RunIndex
from catalogd.model import RefreshMode, RunStatus


class Rig:
    def __init__(self, tmp_path: Path, *entries: Entry, max_concurrent: int = 1) -> None:
        self.runner = FakeRunner()
        self.records = FakeRecords()
        self.registry = Registry()
        self.runs = RunIndex("local[1]")
        self.stopping = threading.Event()
        self.gone: list[Entry] = []
        for e in entries:
            self.registry.put(e)
        self.executor = RunExecutor(FakeManager(), config(max_concurrent), self.registry, self.runs,  # type: ignore[arg-type]
                                    self.records, FakeJobs(tmp_path), self.stopping,  # type: ignore[arg-type]
                                    table_gone=self.gone.append, runner=self.runner)

    def launched(self, n: int) -> list[FakeProc]:
        return wait_until(lambda: len(self.runner.launched) >= n and [p for p, _, _ in self.runner.launched],
                          30.0, f"{n} job(s) launched")

    def finish(self, proc: FakeProc, tmp_path: Path, ok: bool = True) -> None:
        work_dir = next(w for p, _, w in self.runner.launched if p is proc)
        self.runner.json[work_dir / "result.json"] = {"ok": True, "rows": 3} if ok else {"error": "bad"}
        proc.exit(0 if ok else 1)

    def status(self, job_id: str) -> RunStatus:
        return self.executor.runs.get_job(job_id).status


def _full(name: str) -> Entry:
    return entry(name, "1 day", RefreshMode.FULL)


def test_runs_beyond_the_pool_wait_pending_and_a_same_request_joins(tmp_path: Path) -> None:
    a, b = _full("a"), _full("b")
    rig = Rig(tmp_path, a, b, max_concurrent=1)
    first = rig.executor.submit([a], trigger="manual")
    second = rig.executor.submit([b], trigger="manual")
    joined = rig.executor.submit([a], trigger="api")
    assert joined.runs[0].id == first.runs[0].id
    procs = rig.launched(1)
    wait_until(lambda: rig.status(first.id) is RunStatus.RUNNING, 30.0, "the first run to run")
    assert rig.status(second.id) is RunStatus.PENDING  # one slot
    rig.finish(procs[0], tmp_path)
    wait_until(lambda: rig.status(first.id) is RunStatus.SUCCEEDED, 30.0, "the first run to succeed")
    procs = rig.launched(2)
    rig.finish(procs[1], tmp_path, ok=False)
    wait_until(lambda: rig.status(second.id) is RunStatus.FAILED, 30.0, "the second run to fail")
    assert rig.executor.runs.get_job(second.id).error == "main.db.b: bad"

    def finished() -> list[tuple[str, RunStatus]]:
        return sorted((r.table, r.status) for r in rig.records.recorded if r.status.finished)

    # The run's history is written just after its status changes (another thread): waited for.
    wanted = [("main.db.a", RunStatus.SUCCEEDED), ("main.db.b", RunStatus.FAILED)]
    wait_until(lambda: finished() == wanted, 30.0, "both runs recorded")
    # A run that ended is not joined: a new request starts anew.
    again = rig.executor.submit([a], trigger="manual")
    assert again.runs[0].id != first.runs[0].id
    rig.finish(rig.launched(3)[2], tmp_path)
    rig.executor.shutdown()


def test_stopping_a_table_stops_its_job_and_its_queued_run_never_starts(tmp_path: Path) -> None:
    a = _full("a")
    rig = Rig(tmp_path, a, max_concurrent=1)
    first = rig.executor.submit([a], trigger="manual")
    proc = rig.launched(1)[0]
    queued = rig.executor.submit([a], trigger="manual", partition=None, schedule_time=None, conf={"x": "1"},
                                 fired=None)
    assert queued.runs[0].id == first.runs[0].id  # same table and partition: joined
    b = _full("b")
    rig.registry.put(b)
    waiting = rig.executor.submit([b], trigger="manual")
    rig.registry.remove(a.full_name)
    rig.registry.remove(b.full_name)
    rig.executor.stop_table("main.db.b")
    assert rig.status(waiting.id) is RunStatus.FAILED
    assert rig.executor.runs.get_job(waiting.id).runs[0].error == "the dynamic table was dropped before the run started"
    rig.executor.stop_table("main.db.a")
    # Stopped by stop_table, and maybe also by the run itself (it sees its table let go).
    assert rig.runner.stopped and all(p is proc for p in rig.runner.stopped)
    assert rig.status(first.id) is RunStatus.FAILED
    assert len(rig.runner.launched) == 1
    # A table let go records nothing more.
    assert all(r.status is RunStatus.RUNNING for r in rig.records.recorded)
    rig.executor.shutdown()


def test_shutdown_cuts_off_the_running_and_the_waiting_runs(tmp_path: Path) -> None:
    a, b = _full("a"), _full("b")
    rig = Rig(tmp_path, a, b, max_concurrent=1)
    running = rig.executor.submit([a], trigger="manual")
    proc = rig.launched(1)[0]
    waiting = rig.executor.submit([b], trigger="manual")
    rig.stopping.set()
    rig.executor.shutdown()
    assert rig.runner.stopped == [proc]
    cut = rig.executor.runs.get_job(running.id).runs[0]
    assert cut.status is RunStatus.FAILED and (cut.error or "").startswith("the daemon stopped during the run")
    never = rig.executor.runs.get_job(waiting.id).runs[0]
    assert (never.status, never.error) == (RunStatus.FAILED, "the daemon stopped before the run started")
    late = rig.executor.submit([a], trigger="manual")
    assert late.status is RunStatus.FAILED
    assert late.runs[0].error == "the daemon stopped before the run started"


def test_a_run_ends_once_its_job_wrote_its_result_and_its_slot_waits_for_the_exit(tmp_path: Path) -> None:
    """A job writes its result, then stops its SparkSession (a second or more): the run is
    SUCCEEDED and recorded meanwhile; the next run waits for the pool's slot until the process
    is gone, and a process that does not go is stopped after the shutdown grace."""
    a, b = _full("a"), _full("b")
    rig = Rig(tmp_path, a, b, max_concurrent=1)
    first = rig.executor.submit([a], trigger="manual")
    second = rig.executor.submit([b], trigger="manual")
    (proc,) = rig.launched(1)
    work_dir = next(w for p, _, w in rig.runner.launched if p is proc)
    rig.runner.json[work_dir / "result.json"] = {"ok": True, "rows": 3}
    rig.runner.json[work_dir / "status.json"] = {"phase": "done"}
    wait_until(lambda: rig.status(first.id) is RunStatus.SUCCEEDED, 30.0, "the run to end before its exit")
    wait_until(lambda: [r.status for r in rig.records.recorded if r.table == "main.db.a"][-1:]
               == [RunStatus.SUCCEEDED], 30.0, "the run recorded")
    assert proc.poll() is None and rig.status(second.id) is RunStatus.PENDING, "the slot is still the exiting job's"
    proc.exit(0)
    (_, nxt) = rig.launched(2)
    rig.finish(nxt, tmp_path)
    wait_until(lambda: rig.status(second.id) is RunStatus.SUCCEEDED, 30.0, "the next run")
    rig.executor.shutdown()


def test_a_job_that_does_not_exit_after_its_result_is_stopped_after_the_grace(tmp_path: Path) -> None:
    a = _full("a")
    rig = Rig(tmp_path, a, max_concurrent=1)
    rig.executor._grace = 0.3  # the shutdown grace: how long an ended run's process may take to exit
    job = rig.executor.submit([a], trigger="manual")
    (proc,) = rig.launched(1)
    work_dir = rig.runner.launched[0][2]
    rig.runner.json[work_dir / "result.json"] = {"ok": True, "rows": 1}
    rig.runner.json[work_dir / "status.json"] = {"phase": "done"}
    wait_until(lambda: proc in rig.runner.stopped, 30.0, "the hung process stopped")
    assert rig.status(job.id) is RunStatus.SUCCEEDED
    rig.executor.shutdown()
