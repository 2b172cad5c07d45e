"""The embedded metastore under faults, for real: SIGKILL (reaped, restarted, served again by itself), SIGSTOP
(other catalogs and /readyz keep answering), and it is reachable on loopback only."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.errors import MetastoreUnavailableError

from .helpers import embedded_catalog, http_get, metastore_pids, parent_pid, process_alive

pytestmark = pytest.mark.integration

#: The goal is 30s from SIGKILL to serving again; a busy shared machine gets some slack.
RECOVERY = 60.0


def _only_metastore(data_dir: Path) -> int:
    pids = metastore_pids(data_dir)
    assert len(pids) == 1, f"expected one embedded metastore under {data_dir}, found {pids}"
    return pids[0]


def _zombie_or_alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").exists()
    except OSError:
        return False


def _readyz(daemon, timeout: float = 10.0) -> tuple[int, dict]:
    status, body = http_get(f"{daemon.http}/readyz", timeout=timeout)
    return status, json.loads(body)


def test_a_killed_metastore_is_reaped_and_restarted_on_its_port(daemon_factory):
    d = daemon_factory(catalogs=[embedded_catalog("main"), {"name": "scratch", "type": "memory"}], name="sigkill")
    first = _only_metastore(d.data_dir)
    with CatalogClient(d.address, timeout=60) as c:
        c.create_database("main.before_kill", comment="kept")
        uri = c.get_catalog("main").metastore

    os.kill(first, signal.SIGKILL)
    # Reaped by the daemon: no zombie is left in the process table.
    wait_until(lambda: not _zombie_or_alive(first), 10, f"metastore pid {first} to be reaped")
    with CatalogClient(d.address, timeout=60) as c:
        # Meanwhile a call is refused by the daemon itself, with the reason, not after a connect timeout.
        error = wait_until(lambda: _refusal(c), 10, "a call to be refused while the metastore restarts")
        assert "is being restarted" in str(error)
        assert c.list_databases("scratch") == ["default"]
        status, body = _readyz(d)
        assert status == 503 and "being restarted" in body["catalogs"]["main"], body

        wait_until(lambda: "before_kill" in c.list_databases("main"), RECOVERY, "main to serve again by itself")
        assert c.get_database("main.before_kill").comment == "kept"
        assert c.get_catalog("main").metastore == uri, "the restarted metastore keeps its port"
    second = _only_metastore(d.data_dir)
    assert second != first and parent_pid(second) == d.pid
    assert wait_until(lambda: _readyz(d)[0] == 200, 10, "/readyz to be ready again")
    assert "serves again (restart 1)" in d.log(200)
    assert d.stop() == 0
    assert metastore_pids(d.data_dir) == []


def _refusal(c: CatalogClient) -> MetastoreUnavailableError | None:
    try:
        c.list_databases("main")
    except MetastoreUnavailableError as e:
        return e if "being restarted" in str(e) else None
    return None


def test_a_hung_metastore_blocks_neither_other_catalogs_nor_readyz(daemon_factory):
    cap = 3
    d = daemon_factory(
        catalogs=[
            embedded_catalog("main", **{"max-concurrent-calls": cap,
                                        "connection": {"hive.metastore.uris": "embedded",
                                                       "hive.metastore.client.socket.timeout": "30s"}}),
            {"name": "scratch", "type": "memory"},
        ],
        name="sigstop",
    )
    hms = _only_metastore(d.data_dir)
    hung: list[threading.Thread] = []
    outcomes: list[BaseException | None] = []

    def hung_call() -> None:
        try:
            with CatalogClient(d.address, timeout=120) as c:
                c.list_databases("main")
            outcomes.append(None)
        except BaseException as e:
            outcomes.append(e)

    os.kill(hms, signal.SIGSTOP)
    try:
        for _ in range(cap):
            thread = threading.Thread(target=hung_call, daemon=True)
            thread.start()
            hung.append(thread)
        # Only the daemon's fast path refuses with this message: no call waits for the hung metastore.
        wait_until(lambda: _refused_for_load(d.address), 45, "calls beyond the cap to be refused")
        with CatalogClient(d.address, timeout=10) as c:
            # Deadlines that a 30s hang would miss, on a busy machine too.
            c.create_database("scratch.still_served")
            assert "still_served" in c.list_databases("scratch")
        status, body = _readyz(d, timeout=10)
        assert status == 503 and body["catalogs"]["scratch"] == "ok", body
        assert "no answer" in body["catalogs"]["main"], body
    finally:
        os.kill(hms, signal.SIGCONT)
    for thread in hung:
        thread.join(60)
    assert len(outcomes) == cap
    with CatalogClient(d.address, timeout=60) as c:
        wait_until(lambda: c.list_databases("main"), 30, "main to answer after SIGCONT")
    wait_until(lambda: _readyz(d)[0] == 200, 30, "/readyz to be ready after SIGCONT")
    assert _only_metastore(d.data_dir) == hms, "a stopped metastore is not restarted"


def _refused_for_load(address: str) -> bool:
    """A call to main is refused for load (one that times out instead only adds to the load)."""
    with CatalogClient(address, timeout=5) as c:
        try:
            c.list_databases("main")
        except MetastoreUnavailableError as e:
            return "too many calls in flight" in str(e)
    return False


def _non_loopback_addresses() -> list[str]:
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [a for a in out.split() if ":" not in a and not a.startswith("127.")]


def _connects(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=3):
            return True
    except OSError:
        return False


def test_the_embedded_metastore_listens_on_loopback_only(daemon, client):
    port = int(client.get_catalog("main").metastore.rsplit(":", 1)[1])
    assert _connects("127.0.0.1", port)
    addresses = _non_loopback_addresses()
    if not addresses:
        pytest.skip("this machine has no non-loopback IPv4 address to try")
    for address in addresses:
        assert not _connects(address, port), f"the embedded metastore answers on {address}:{port}"
    # Nor does the JVM keep anything else open (py4j's gateway is shut once the metastore serves).
    pid = _only_metastore(daemon.data_dir)
    listening = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, timeout=10).stdout
    mine = [line for line in listening.splitlines() if f"pid={pid}," in line]
    assert len(mine) == 1 and f"127.0.0.1:{port}" in mine[0], mine


def test_secret_files_are_private(daemon):
    conf = daemon.data_dir / "catalogs" / "main" / "conf"
    assert conf.stat().st_mode & 0o777 == 0o700
    assert (conf / "hive-site.xml").stat().st_mode & 0o777 == 0o600
    assert process_alive(_only_metastore(daemon.data_dir))
