"""Refresh jobs' tokens with a fake runner: minted per run into the job's environment, scoped to
its table, revoked when the run ends (batch) or the streaming job stops; none with auth off."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from dynamic_fakes import FakeClock, FakeJobs, FakeManager, FakeRecords, FakeRunner, config, entry
from polling import wait_until

from catalogd.auth.model import Authority
from catalogd.dynamic.executor import RunExecutor
from catalogd.dynamic.registry import Registry
from catalogd.dynamic.runs import RunIndex
from catalogd.dynamic.supervisor import Supervisor
from catalogd.errors import PermissionDeniedError
from catalogd.model import RefreshMode, RunStatus

TOKENS = {"etl": "writer-token-0123456789"}


def authority(enabled: bool = True) -> Authority:
    return Authority(enabled, dict(TOKENS), set(TOKENS), {})


def revoked(auth: Authority, token: str) -> bool:
    try:
        auth.authenticate(token)
    except PermissionDeniedError:
        return True
    return False


@pytest.mark.parametrize("enabled", [True, False])
def test_a_batch_run_s_job_gets_a_token_for_its_table_revoked_when_the_run_ends(tmp_path: Path,
                                                                              enabled: bool) -> None:
    auth = authority(enabled)
    table = entry("a", "1 day", RefreshMode.FULL)
    registry = Registry()
    registry.put(table)
    runner = FakeRunner()
    executor = RunExecutor(FakeManager(), config(), registry, RunIndex("local[1]"), FakeRecords(),  # type: ignore[arg-type]
                           FakeJobs(tmp_path, auth), threading.Event(), table_gone=lambda e: None,  # type: ignore[arg-type]
                           runner=runner)
    job = executor.submit([table], trigger="manual")
    wait_until(lambda: runner.launched, 30.0, "the job to launch")
    env = runner.envs[0]
    if not enabled:
        assert env == {}
    else:
        token = env["CATALOGD_TOKEN"]
        principal = auth.authenticate(token)
        assert principal.name == "job:main.db.a" and principal.job_scope == ("main", "db", "a")
        _, spec, _ = runner.launched[0]
        assert token not in repr(spec)  # not in spec.json
    proc, _, work_dir = runner.launched[0]
    runner.json[work_dir / "result.json"] = {"ok": True, "rows": 1}
    proc.exit(0)
    wait_until(lambda: executor.runs.get_job(job.id).status is RunStatus.SUCCEEDED, 30.0, "the run to end")
    if enabled:
        assert revoked(auth, env["CATALOGD_TOKEN"])
    executor.shutdown()


def test_a_streaming_job_s_token_is_revoked_when_it_ends_and_a_restart_gets_a_new_one(tmp_path: Path) -> None:
    auth = authority()
    table = entry()
    registry = Registry()
    registry.put(table)
    runner = FakeRunner()
    clock = FakeClock()
    supervisor = Supervisor(FakeManager(), config(), registry, RunIndex("local[1]"), FakeRecords(),  # type: ignore[arg-type]
                            FakeJobs(tmp_path, auth), threading.Event(), table_gone=lambda e: None,  # type: ignore[arg-type]
                            runner=runner, clock=clock, every=0.01)
    supervisor.tick()
    first = runner.envs[0]["CATALOGD_TOKEN"]
    assert auth.authenticate(first).job_scope == ("main", "db", "t")
    runner.launched[0][0].exit(1)
    supervisor.tick()  # sees it ended
    assert revoked(auth, first)
    clock.advance(3600)
    supervisor.tick()  # restarts it
    second = runner.envs[1]["CATALOGD_TOKEN"]
    assert second != first and not revoked(auth, second)
    with table.lock:
        detached = supervisor.detach(table)
    supervisor.finish([detached], "suspended")
    assert revoked(auth, second)
