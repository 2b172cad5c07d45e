"""One leader for background work among the members of a cluster (docs/operations.md, "High
availability"): two members in front of one remote metastore elect through a lease kept there;
another member takes over within 10 s of the leader's SIGKILL or SIGSTOP; a stopped leader that
comes back does nothing before it knows it lost; a lapsed stage is aborted once, by the leader.

One metastore serves the module: an embedded one in a daemon outside the cluster (its janitor
idle), which the two members reach as a remote HMS, as two daemons in front of a production
metastore would.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.errors import StageNotFoundError
from catalogd.model import StageState

from .helpers import (
    CATALOGD,
    SESSION_STAGE_SECRET,
    Daemon,
    clean_env,
    embedded_catalog,
    free_port,
    hms_connection,
    http_get,
    log_text,
    metastore_key_file,
    start_daemon,
    write_config,
)

pytestmark = pytest.mark.integration

#: The issue's goal: another member leads within 10 s of the leader's death.
TAKEOVER = 10.0
#: Small Spark jobs (the refresh test's one job shares 2 cores with everything else).
SPARK = {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "512m"}}
JOB_TIMEOUT = 240.0


@dataclass
class Cluster:
    holder: Daemon
    members: list[Daemon]
    #: Every process started, to stop at the end.
    started: list[Daemon]

    def restart(self, index: int) -> Daemon:
        old = self.members[index]
        self.members[index] = start_daemon(old.config_path, old.data_dir, old.log_path)
        self.started.append(self.members[index])
        return self.members[index]


def _leading(daemon: Daemon) -> bool | None:
    """The member's ``catalogd_leader`` gauge (None: it does not answer)."""
    try:
        status, body = http_get(f"{daemon.http}/metrics", timeout=2.0)
    except OSError:
        return None
    found = re.search(r"^catalogd_leader (\S+)$", body, re.MULTILINE) if status == 200 else None
    return None if found is None else float(found.group(1)) == 1.0


def _one_leader(cluster: Cluster, timeout: float = 60.0) -> tuple[Daemon, Daemon]:
    """(leader, follower) once exactly one of the two members leads."""

    def one() -> tuple[Daemon, Daemon] | None:
        states = [_leading(m) for m in cluster.members]
        if states.count(True) == 1 and states.count(False) == 1:
            leader = cluster.members[states.index(True)]
            return leader, cluster.members[1 - states.index(True)]
        return None

    found = wait_until(one, timeout, what="exactly one member to lead", every=0.25)
    assert found is not None
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("leader")
    staging = {"secret": SESSION_STAGE_SECRET}
    holder_config = write_config(
        root / "holder.yaml", port=free_port(), http_port=free_port(), data_dir=root / "holder",
        catalogs=[embedded_catalog("main")],
        extra={"staging": {**staging, "janitor-interval": "1h"}, "dynamic-tables": {"enabled": False}})
    holder = start_daemon(holder_config, root / "holder", root / "holder.log")
    started = [holder]
    try:
        with CatalogClient(holder.address, timeout=60) as client:
            uri = client.get_catalog("main").metastore
        remote = [{"name": "main", "type": "hive", "default": True, "connection": {"hive.metastore.uris": uri},
                   "metastore-key-file": str(metastore_key_file(root / "holder"))}]
        ports: list[dict[str, Any]] = [
            {"host": "127.0.0.1", "port": free_port(), "hms-port": free_port(), "http-port": free_port()}
            for _ in range(2)]
        members = []
        for index, member in enumerate(ports):
            own: dict[str, Any] = {k: member[k] for k in ("port", "hms-port", "http-port")}
            config = write_config(
                root / f"m{index}.yaml", port=member["port"], http_port=member["http-port"],
                data_dir=root / f"m{index}", catalogs=remote,
                extra={"server": own, "cluster": {"members": ports},
                       "staging": {**staging, "janitor-interval": "1s"},
                       "dynamic-tables": {"warm-analyzer": False}, "spark": SPARK})
            members.append(start_daemon(config, root / f"m{index}", root / f"m{index}.log"))
            started.append(members[-1])
        yield Cluster(holder, members, started)
    finally:
        for daemon in started:
            if daemon.proc.poll() is None:
                _continue(daemon)
                daemon.stop()


def _continue(daemon: Daemon) -> None:
    """A member left stopped by a failed test is continued, so that it can be stopped."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(daemon.pid, signal.SIGCONT)


def _aborts(paths: list[Path], stage_id: str) -> int:
    """How many times the members' logs say the stage was aborted."""
    return sum(text.count(f"stage {stage_id} aborted:") for text in
               (p.read_text(errors="replace") if p.exists() else "" for p in paths))


def test_one_member_leads_and_another_takes_over_within_10s_of_a_sigkill(cluster: Cluster) -> None:
    leader, follower = _one_leader(cluster)
    logs = [m.log_path for m in cluster.members]
    # Stages begun through the follower whose leases lapse while the leadership moves (after the
    # kill: a member killed between its abort and its log line would leave no trace of it).
    with CatalogClient(follower.address, timeout=60) as client:
        client.create_database("main.leader_kill", if_not_exists=True)
        stages = [client.begin_stage(f"main.leader_kill.t{i}", "id bigint", lease=5.0 - i) for i in range(4)]

    killed = time.monotonic()
    leader.proc.kill()
    leader.proc.wait(30)
    wait_until(lambda: _leading(follower) is True, TAKEOVER, what="the follower to lead after the SIGKILL",
               every=0.1)
    took = time.monotonic() - killed
    print(f"takeover after SIGKILL: {took:.2f}s")

    # Every lapsed stage is aborted (its tombstone may be gone already), by exactly one member.
    with CatalogClient(follower.address, timeout=60) as client:
        for stage in stages:
            def aborted(stage_id: str = stage.id) -> bool:
                try:
                    return client.get_stage(stage_id).state is StageState.ABORTED
                except StageNotFoundError:
                    return True

            wait_until(aborted, 60, what=f"stage {stage.id} to be aborted", every=0.5)
    for stage in stages:
        assert _aborts(logs, stage.id) == 1, stage.id

    # `cluster status` through the survivor: the dead member is down, the survivor leads.
    done = subprocess.run([str(CATALOGD), "--server", follower.address, "--json", "cluster", "status"],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["leader"] == follower.address and status["leading"] and status["epoch"] >= 2
    assert {m["address"]: m["up"] for m in status["members"]} == {leader.address: False, follower.address: True}
    assert status["leader_since"] and status["lease_age"] is not None and status["lease_age"] < 30
    text = subprocess.run([str(CATALOGD), "--server", follower.address, "cluster", "status"],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    assert text.returncode == 0 and "DOWN" in text.stdout and "leader since" in text.stdout, text.stdout

    # The killed member comes back as a follower; still one leader.
    index = cluster.members.index(leader)
    back = cluster.restart(index)
    assert _one_leader(cluster)[0] is follower
    assert "took term" not in log_text(back).split("catalogd is ready")[-1]


def test_a_stopped_leader_is_replaced_and_does_nothing_when_it_comes_back(cluster: Cluster) -> None:
    leader, follower = _one_leader(cluster)
    os.kill(leader.pid, signal.SIGSTOP)
    try:
        stopped = time.monotonic()
        wait_until(lambda: _leading(follower) is True, TAKEOVER, what="the follower to lead after the SIGSTOP",
                   every=0.1)
        print(f"takeover after SIGSTOP: {time.monotonic() - stopped:.2f}s")
    finally:
        os.kill(leader.pid, signal.SIGCONT)
    # Back, it acts no more (its fence says so before its next renewal), learns it lost and
    # lets its background work go; one leader stays.
    wait_until(lambda: _leading(leader) is False, 30, what="the stopped leader to step down", every=0.1)
    wait_until(lambda: "no longer leading" in log_text(leader), 30, what="the stopped leader to see the new term")
    assert _one_leader(cluster)[0] is follower



def _rest(daemon: Daemon, method: str, path: str, body: Any = None, timeout: float = 60.0) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(daemon.http + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.spark
def test_a_refresh_asked_of_a_follower_runs_once_on_the_leader(cluster: Cluster) -> None:
    """Dynamic-table calls on a member that does not lead go to the leader: the table is driven
    there, a refresh asked through REST on the follower runs once, and its job reads alike
    through both members. A long poll (``?wait=``) on the follower is the leader's, forwarded."""
    leader, follower = _one_leader(cluster)
    table = "main.leader_dt.totals"
    with CatalogClient(follower.address, timeout=240) as client:
        client.create_database("main.leader_dt", if_not_exists=True)
        client.create_table("main.leader_dt.src", "id bigint", if_not_exists=True)
        client.create_dynamic_table(table, "SELECT count(*) AS n FROM leader_dt.src", "1 day",
                                    refresh_mode="full", options={"initialize": "on_schedule"})
    # The follower forwards the wait with the refresh: it lapses before the Spark job ends.
    status, job = _rest(follower, "POST", "/v3/dynamic-tables/refresh?wait=0.2", {"tables": [table]})
    assert status == 200, job
    assert job["status"] in ("PENDING", "RUNNING") and job["runs"][0]["ended"] is None, job
    job_id = job["jobId"]
    # A waited GET on the follower answers once the leader's run ended.
    status, waited = _rest(follower, "GET", f"/v3/dynamic-tables/refresh/{job_id}?wait={JOB_TIMEOUT:.0f}",
                           timeout=JOB_TIMEOUT + 30)
    assert status == 200, waited
    assert waited["status"] == "SUCCEEDED" and waited["runs"][0]["ended"] is not None, waited

    def finished() -> dict[str, Any] | None:
        answers = [_rest(member, "GET", f"/v3/dynamic-tables/refresh/{job_id}") for member in (leader, follower)]
        assert all(code == 200 for code, _ in answers), answers
        done = [body for _, body in answers if body["status"] in ("SUCCEEDED", "FAILED")]
        return done[0] if len(done) == 2 else None

    done = wait_until(finished, JOB_TIMEOUT, what="the refresh job to finish (read through both members)", every=0.25)
    assert done["status"] == "SUCCEEDED", done
    with CatalogClient(leader.address, timeout=60) as client:
        runs = client.dynamic_table_history(table)
    assert [r.trigger for r in runs] == ["api"], runs

    def logged() -> int:
        line = f"refresh {runs[0].id} of {table}"
        return sum(m.log_path.read_text(errors="replace").count(line) for m in cluster.members)

    # The run's line is logged just after its record (which the history above read): wait for it.
    wait_until(logged, 30.0, what="the run's log line", every=0.2)
    assert logged() == 1
    with CatalogClient(follower.address, timeout=60) as client:
        client.drop_dynamic_table(table)


def test_locks_through_either_member_are_the_remote_metastore_s(cluster: Cluster) -> None:
    """Members in front of a remote metastore relay the lock calls to it: an exclusive lock held
    through one member makes the same request through the other wait, either member checks and
    releases it, and then the waiting lock is granted (both see one set of locks)."""
    from catalogd.hive_idl import ttypes

    a, b = cluster.members
    with CatalogClient(a.address, timeout=60) as client:
        client.create_database("main.remote_locks", if_not_exists=True)
        client.create_table("main.remote_locks.guarded", "id bigint", if_not_exists=True)

    def request(user: str) -> Any:
        component = ttypes.LockComponent(type=ttypes.LockType.EXCLUSIVE, level=ttypes.LockLevel.TABLE,
                                         dbname="remote_locks", tablename="guarded")
        return ttypes.LockRequest(component=[component], txnid=0, user=user, hostname="test-host",
                                  agentInfo="pytest")

    acquired, waiting = ttypes.LockState.ACQUIRED, ttypes.LockState.WAITING
    with hms_connection(a.hms_address, "holder") as via_a, hms_connection(b.hms_address, "waiter") as via_b:
        held = via_a.lock(request("holder"))
        assert held.state == acquired
        wanted = via_b.lock(request("waiter"))
        assert wanted.state == waiting
        # Either member answers for either lock: one set of locks, the remote metastore's.
        assert via_b.check_lock(ttypes.CheckLockRequest(lockid=held.lockid)).state == acquired
        shown = via_a.show_locks(ttypes.ShowLocksRequest(dbname="remote_locks", tablename="guarded"))
        assert {(e.lockid, e.state) for e in shown.locks} == {(held.lockid, acquired), (wanted.lockid, waiting)}
        via_b.unlock(ttypes.UnlockRequest(lockid=held.lockid))
        assert via_a.check_lock(ttypes.CheckLockRequest(lockid=wanted.lockid)).state == acquired
        via_a.unlock(ttypes.UnlockRequest(lockid=wanted.lockid))
