"""The streaming-job supervisor with a fake clock and a fake runner: start, restart with
backoff, hang restart, and stops made outside the table's lock."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from dynamic_fakes import FakeClock, FakeJobs, FakeManager, FakeProc, FakeRecords, FakeRunner, config, entry
from polling import wait_until

from catalogd.dynamic.registry import Entry, Registry
from catalogd.dynamic.runs import RunIndex
from catalogd.dynamic.supervisor import RestartPolicy, Supervisor
from catalogd.errors import TableNotFoundError
from catalogd.model import RefreshState, RunStatus


class Rig:
    def __init__(self, tmp_path: Path, *entries: Entry, policy: RestartPolicy | None = None) -> None:
        self.clock = FakeClock()
        self.runner = FakeRunner()
        self.records = FakeRecords()
        self.registry = Registry()
        self.runs = RunIndex("local[1]")
        self.gone: list[Entry] = []
        self.stopping = threading.Event()
        for e in entries:
            self.registry.put(e)
        self.supervisor = Supervisor(FakeManager(), config(), self.registry, self.runs, self.records,  # type: ignore[arg-type]
                                     FakeJobs(tmp_path), self.stopping, table_gone=self.gone.append,  # type: ignore[arg-type]
                                     policy=policy, runner=self.runner, clock=self.clock, every=0.01)

    def procs(self) -> list[FakeProc]:
        return [p for p, _, _ in self.runner.launched]

    def status(self, e: Entry, **values: Any) -> None:
        assert e.stream is not None and e.stream.work_dir is not None
        self.runner.json[e.stream.work_dir / "status.json"] = values


def test_a_running_continuous_table_gets_its_job_started_and_recorded(tmp_path: Path) -> None:
    table = entry()
    rig = Rig(tmp_path, table)
    rig.supervisor.tick()
    assert len(rig.procs()) == 1
    _, spec, work_dir = rig.runner.launched[0]
    assert spec["mode"] == "continuous" and work_dir == tmp_path / "main" / "db" / "t" / "job"
    assert table.stream is not None and table.stream.proc is rig.procs()[0]
    run = rig.records.recorded[-1]
    assert (run.trigger, run.status) == ("continuous", RunStatus.RUNNING)
    assert rig.runs.live("main.db.t")[run.id] is table.stream.run
    rig.supervisor.tick()
    assert len(rig.procs()) == 1  # one job, not one per pass


def test_suspended_and_full_tables_get_no_job(tmp_path: Path) -> None:
    from catalogd.model import RefreshMode

    rig = Rig(tmp_path, entry("s", state=RefreshState.SUSPENDED), entry("f", "1 day", RefreshMode.FULL))
    rig.supervisor.tick()
    assert rig.procs() == []


def test_a_failed_job_is_recorded_and_restarted_with_growing_backoff(tmp_path: Path) -> None:
    table = entry()
    rig = Rig(tmp_path, table, policy=RestartPolicy(backoff=(1.0, 5.0, 30.0)))
    rig.supervisor.tick()
    delays = []
    for _ in range(4):
        proc = rig.procs()[-1]
        assert table.stream is not None and table.stream.work_dir is not None
        rig.runner.json[table.stream.work_dir / "result.json"] = {"error": "boom"}
        proc.exit(1)
        rig.supervisor.tick()  # sees it ended
        failed = rig.records.recorded[-1]
        assert (failed.status, failed.error) == (RunStatus.FAILED, "boom")
        waited = 0.0
        while len(rig.procs()) == 1 + len(delays):
            rig.clock.advance(0.5)
            waited += 0.5
            rig.supervisor.tick()
        delays.append(waited)
    assert delays == [1.0, 5.0, 30.0, 30.0]
    assert table.stream.restarts == 4


def test_a_job_that_ran_long_enough_starts_over_from_the_first_delay(tmp_path: Path) -> None:
    table = entry()
    rig = Rig(tmp_path, table, policy=RestartPolicy(backoff=(1.0, 5.0), healthy_after=60.0))
    rig.supervisor.tick()
    rig.procs()[-1].exit(1)
    rig.supervisor.tick()
    rig.clock.advance(1.0)
    rig.supervisor.tick()
    assert len(rig.procs()) == 2
    assert table.stream is not None and table.stream.failures == 1
    rig.clock.advance(61.0)
    rig.status(table, phase="waiting", updated=rig.clock.now)
    rig.supervisor.tick()
    assert table.stream.failures == 0
    rig.procs()[-1].exit(1)
    rig.supervisor.tick()
    assert table.stream.restart_at == rig.clock.now + 1.0


def test_progress_is_taken_from_the_status_file(tmp_path: Path) -> None:
    table = entry()
    rig = Rig(tmp_path, table)
    rig.supervisor.tick()
    rig.status(table, application_id="local-7", phase="waiting", last_rows=12, fresh_as_of=rig.clock.now - 1,
               updated=rig.clock.now)
    rig.supervisor.tick()
    assert table.stream is not None and table.stream.application_id == "local-7"
    assert table.stream.run is not None
    assert (table.stream.run.application_id, table.stream.run.rows) == ("local-7", 12)
    assert table.data_time == rig.clock.now - 1


def test_a_hung_job_is_stopped_outside_the_lock_and_restarted(tmp_path: Path) -> None:
    table = entry(freshness="10 seconds")
    rig = Rig(tmp_path, table, policy=RestartPolicy(stale_after=600.0))
    rig.supervisor.tick()
    rig.status(table, phase="waiting", updated=rig.clock.now)
    rig.clock.advance(599.0)
    rig.supervisor.tick()
    assert rig.runner.stopped == []
    lock_free: list[bool] = []

    def on_stop(proc: FakeProc) -> None:
        # Another thread (an alter, a drop) can take the table's lock while the stop waits.
        def take() -> None:
            got = table.lock.acquire(timeout=5)
            if got:
                table.lock.release()
            lock_free.append(got)

        other = threading.Thread(target=take)
        other.start()
        other.join()

    rig.runner.on_stop = on_stop
    rig.clock.advance(2.0)
    rig.supervisor.tick()
    assert rig.runner.stopped == [rig.procs()[0]] and lock_free == [True]
    rig.supervisor.tick()  # it ended: recorded, restarted after the first delay
    assert rig.records.recorded[-1].status is RunStatus.FAILED
    rig.clock.advance(1.0)
    rig.supervisor.tick()
    assert len(rig.procs()) == 2


def test_a_job_in_a_refresh_gets_the_refresh_timeout_before_it_counts_as_hung() -> None:
    policy = RestartPolicy(stale_after=600.0)
    assert policy.hung_after(5, "waiting", 7200.0) == 600.0
    assert policy.hung_after(300, "waiting", 7200.0) == 3000.0
    assert policy.hung_after(5, "writing", 7200.0) == 7200.0
    assert [policy.delay(n) for n in range(9)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 60.0, 60.0, 60.0]


def test_a_detached_job_is_stopped_by_finish_and_no_new_one_starts_before_it_is_gone(tmp_path: Path) -> None:
    table = entry()
    rig = Rig(tmp_path, table)
    rig.supervisor.tick()
    old = rig.procs()[0]
    with table.lock:
        detached = rig.supervisor.detach(table)
    assert detached is not None and detached.proc is old and table.retiring == [old]
    assert table.stream is not None and table.stream.proc is None
    rig.supervisor.tick()
    assert len(rig.procs()) == 1  # the old job still lives: no second job on one checkpoint
    rig.supervisor.finish([detached, None], "suspended")
    assert rig.runner.stopped == [old] and table.retiring == []
    stopped = rig.records.recorded[-1]
    assert (stopped.status, stopped.error) == (RunStatus.SUCCEEDED, "stopped: suspended")
    rig.supervisor.tick()
    assert len(rig.procs()) == 2


def test_a_table_dropped_outside_catalogd_is_handed_back(tmp_path: Path) -> None:
    table = entry()
    rig = Rig(tmp_path, table)

    def gone(*args: object, **kwargs: object) -> dict[str, str]:
        raise TableNotFoundError("main.db.t")

    rig.records.record = gone  # type: ignore[method-assign]
    rig.supervisor.tick()
    assert rig.gone == [table]


def test_the_loop_supervises_until_stopping(tmp_path: Path) -> None:
    rig = Rig(tmp_path, entry())
    thread = threading.Thread(target=rig.supervisor.run, daemon=True)
    thread.start()
    wait_until(lambda: rig.procs(), 10.0, "the loop to start the job")
    rig.stopping.set()
    thread.join(10.0)
    assert not thread.is_alive()


def test_a_let_go_entry_is_not_supervised(tmp_path: Path) -> None:
    table = entry()
    rig = Rig(tmp_path, table)
    rig.registry.remove(table.full_name)
    rig.supervisor.tick()
    rig.supervisor.supervise(table)
    assert rig.procs() == []


def test_a_definition_that_may_not_run_starts_no_job_and_its_history_says_why(tmp_path: Path) -> None:
    from catalogd.errors import PermissionDeniedError

    table = entry()
    rig = Rig(tmp_path, table)

    def refused(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise PermissionDeniedError("the definition of dynamic table main.db.t was not signed by catalogd")

    rig.supervisor.jobs.spec = refused  # type: ignore[method-assign]
    rig.supervisor.tick()
    assert rig.procs() == []
    run = rig.records.recorded[-1]
    assert (run.trigger, run.status) == ("continuous", RunStatus.FAILED) and "not signed" in (run.error or "")
