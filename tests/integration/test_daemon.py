"""Daemon behaviour: HTTP endpoints, the data-dir lock, config errors, shutdown and crash recovery."""

from __future__ import annotations

import json
import re
import signal
import subprocess

import pytest

from catalogd.client import CatalogClient

from .helpers import (
    CATALOGD,
    STOP_TIMEOUT,
    clean_env,
    free_port,
    http_get,
    metastore_pids,
    parent_pid,
    process_alive,
    tail,
    wait_gone,
    write_config,
)

pytestmark = pytest.mark.integration


# ---------------------------------------------------------------- HTTP

def test_healthz(daemon):
    status, body = http_get(f"{daemon.http}/healthz")
    assert status == 200
    assert json.loads(body)["status"] == "ok"


def test_readyz_lists_catalogs(daemon):
    status, body = http_get(f"{daemon.http}/readyz")
    assert status == 200
    payload = json.loads(body)
    assert payload["status"] == "ready"
    assert payload["catalogs"] == {"main": "ok", "scratch": "ok", "ro": "ok"}


def test_unknown_path_is_404(daemon):
    status, _ = http_get(f"{daemon.http}/nope")
    assert status == 404


def _counter(metrics: str, rpc: str, outcome: str) -> float:
    pattern = (
        r'^catalogd_rpc_requests_total\{(?=[^}]*rpc="' + rpc + r'")(?=[^}]*outcome="' + outcome + r'")[^}]*\}'
        r"\s+([0-9.e+]+)$"
    )
    match = re.search(pattern, metrics, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_metrics_count_and_time_rpcs(daemon, client):
    client.list_databases("scratch")
    status, before = http_get(f"{daemon.http}/metrics")
    assert status == 200
    assert re.search(r'^catalogd_rpc_requests_total\{[^}]*rpc="listDatabases"[^}]*\} ', before, re.MULTILINE)
    assert re.search(r'^catalogd_rpc_duration_seconds_bucket\{[^}]*rpc="listDatabases"[^}]*\} ', before,
                     re.MULTILINE)
    assert re.search(r'^catalogd_rpc_duration_seconds_count\{[^}]*rpc="listDatabases"[^}]*\} ', before,
                     re.MULTILINE)

    ok_before = _counter(before, "listDatabases", "ok")
    missing_before = _counter(before, "getDatabase", "not-found")
    client.list_databases("scratch")
    client.list_databases("main")
    with pytest.raises(Exception, match="does not exist"):
        client.get_database("scratch.no_such_db_for_metrics")
    _, after = http_get(f"{daemon.http}/metrics")
    assert _counter(after, "listDatabases", "ok") == ok_before + 2
    assert _counter(after, "getDatabase", "not-found") == missing_before + 1


# ---------------------------------------------------------------- start-up refusals

def test_second_daemon_on_same_data_dir_is_refused(daemon, client, tmp_path):
    config = write_config(tmp_path / "second.yaml", port=free_port(), http_port=free_port(),
                          data_dir=daemon.data_dir, catalogs=[{"name": "scratch", "type": "memory"}])
    try:
        done = subprocess.run([str(CATALOGD), "serve", "--config", str(config)], capture_output=True, text=True,
                              timeout=60, env=clean_env())
    except subprocess.TimeoutExpired:
        pytest.fail("a second daemon started on a data dir in use")
    assert done.returncode != 0
    assert re.search(r"data dir .* is in use", done.stderr), done.stderr
    assert str(daemon.data_dir) in done.stderr
    # The first daemon goes on serving, its state file untouched.
    assert daemon.proc.poll() is None
    assert http_get(f"{daemon.http}/readyz")[0] == 200
    assert "main" in [c.name for c in client.list_catalogs()]
    assert client.list_databases("main")
    state = json.loads((daemon.data_dir / "catalogd.json").read_text())
    assert state["pid"] == daemon.pid


def test_serve_with_unknown_config_key_exits_2(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text(
        f"server:\n  port: {free_port()}\n  data-dir: {tmp_path / 'data'}\n  colour: blue\n"
        "catalogs:\n  - name: scratch\n    type: memory\n"
    )
    done = subprocess.run([str(CATALOGD), "serve", "--config", str(config)], capture_output=True, text=True,
                          timeout=60, env=clean_env())
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: config: ")
    assert str(config) in done.stderr and "colour" in done.stderr
    assert not (tmp_path / "data").exists(), "nothing is started for a bad config"


# ---------------------------------------------------------------- shutdown and crash

def _one_metastore(d) -> int:
    pids = metastore_pids(d.data_dir)
    assert len(pids) == 1, f"expected one embedded metastore under {d.data_dir}, found {pids}"
    assert parent_pid(pids[0]) == d.pid, "the metastore is the daemon's child"
    return pids[0]


def test_sigterm_stops_daemon_and_metastore(daemon_factory):
    d = daemon_factory(name="sigterm")
    hms = _one_metastore(d)
    with CatalogClient(d.address) as c:
        c.create_database("main.before_sigterm")

    d.proc.send_signal(signal.SIGTERM)
    code = d.proc.wait(STOP_TIMEOUT)  # the deadline for a prompt stop (TimeoutExpired past it)
    log = tail(d.log_path, 60)
    assert code == 0, log
    assert not process_alive(hms), f"metastore pid {hms} outlived the daemon"
    assert metastore_pids(d.data_dir) == []
    assert "received SIGTERM" in log and "stopped" in log
    assert not (d.data_dir / "catalogd.json").exists()


def test_sigkill_takes_metastore_down_and_restart_keeps_data(daemon_factory):
    first = daemon_factory(name="crash")
    hms = _one_metastore(first)
    with CatalogClient(first.address) as c:
        c.create_database("main.survivor", comment="made before the crash", properties={"k": "v"})
        c.create_table("main.survivor.t", "id bigint COMMENT 'k'", partitioned_by="ds string")

    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    assert wait_gone(hms, 60), f"metastore pid {hms} outlived a SIGKILLed daemon (no PDEATHSIG?)"

    # Same config, so the same ports and data dir: nothing may be left holding them.
    second = daemon_factory(same_as=first)
    assert second.address == first.address
    _one_metastore(second)
    with CatalogClient(second.address) as c:
        db = c.get_database("main.survivor")
        assert (db.comment, db.properties) == ("made before the crash", {"k": "v"})
        table = c.get_table("main.survivor.t")
        assert [col.name for col in table.columns] == ["id"]
        assert [col.name for col in table.partition_keys] == ["ds"]
    assert second.stop() == 0
    assert metastore_pids(second.data_dir) == []


def test_sigint_also_stops_cleanly(daemon_factory):
    d = daemon_factory(catalogs=[{"name": "scratch", "type": "memory"}], name="sigint")
    d.proc.send_signal(signal.SIGINT)
    assert d.proc.wait(STOP_TIMEOUT) == 0, tail(d.log_path)
