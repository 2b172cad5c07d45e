"""Several daemons of one deployment (``cluster.members``): clients and the CLI move to the next
member when one is SIGKILLed, ``spark-conf`` lists every member's HMS endpoint (and API, for the
catalog plugin), and members that share a metastore must share the stage key."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from catalogd.client import CatalogClient

from .helpers import CATALOGD, Daemon, clean_env, embedded_catalog, free_port, log_text, metastore_key_file

pytestmark = pytest.mark.integration

KEY = "cluster-test-stage-secret-0123456789"
OTHER_KEY = "another-deployment-secret-0123456789"


def _members(n: int) -> list[dict[str, Any]]:
    return [{"host": "127.0.0.1", "port": free_port(), "hms-port": free_port(), "http-port": free_port()}
            for _ in range(n)]


def _own(member: dict[str, Any]) -> dict[str, Any]:
    return {"port": member["port"], "http-port": member["http-port"], "hms-port": member["hms-port"]}


def _member(factory: Callable[..., Daemon], name: str, members: list[dict[str, Any]], index: int,
            catalogs: list[dict[str, Any]], secret: str = KEY, wait: bool = True) -> Daemon:
    return factory(name=name, catalogs=catalogs, wait=wait,
                   extra={"server": _own(members[index]), "cluster": {"members": members},
                          "staging": {"secret": secret}})


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CATALOGD), *args], capture_output=True, text=True, timeout=60, env=clean_env())


def test_clients_and_the_cli_move_to_the_next_member(daemon_factory: Callable[..., Daemon]) -> None:
    members = _members(2)
    memory = [{"name": "main", "type": "memory"}]
    first = _member(daemon_factory, "first", members, 0, memory)
    second = _member(daemon_factory, "second", members, 1, memory)
    both = f"{first.address},{second.address}"

    # spark-conf names every member's HMS endpoint, in order, whichever member answers.
    done = _cli("--server", second.address, "spark-conf", "main")
    assert done.returncode == 0, done.stderr
    uris = f"thrift://127.0.0.1:{members[0]['hms-port']},thrift://127.0.0.1:{members[1]['hms-port']}"
    assert f"spark.hadoop.hive.metastore.uris={uris}" in done.stdout.splitlines()
    # And the catalog plugin reaches catalogd's API at every member, in order.
    assert f"spark.sql.catalog.main.address={first.address},{second.address}" in done.stdout.splitlines()

    with CatalogClient(both, timeout=30) as client:
        assert client.ping().startswith("catalogd ")
        assert client.port == members[0]["port"]
        client.create_database("main.on_first")
        first.proc.kill()
        first.proc.wait(30)
        # The next idempotent call goes through the second member (memory catalogs are per daemon).
        assert [c.name for c in client.list_catalogs()] == ["main"]
        assert client.port == members[1]["port"]
        assert not client.database_exists("main.on_first")
        client.create_database("main.on_second")  # writes go to the member in use
        assert client.database_exists("main.on_second")

    done = _cli("--server", both, "catalog", "list")
    assert done.returncode == 0, done.stderr
    assert "main" in done.stdout
    env_done = subprocess.run([str(CATALOGD), "--json", "db", "list", "main"], capture_output=True, text=True,
                              timeout=60, env={**clean_env(), "CATALOGD_SERVER": both})
    assert env_done.returncode == 0, env_done.stderr
    assert "on_second" in env_done.stdout


def test_members_on_one_metastore_must_share_the_stage_key(daemon_factory: Callable[..., Daemon]) -> None:
    # Ports of their own for the stranger (2) and the member with the same key (1): both start at once.
    members = _members(3)
    first = _member(daemon_factory, "keyed", members, 0, [embedded_catalog("main")])
    with CatalogClient(first.address, timeout=60) as client:
        uri = client.get_catalog("main").metastore
    assert uri
    remote = [{"name": "main", "type": "hive", "default": True, "connection": {"hive.metastore.uris": uri},
               "metastore-key-file": str(metastore_key_file(first.data_dir))}]

    stranger = _member(daemon_factory, "stranger", members, 2, remote, secret=OTHER_KEY, wait=False)
    same = _member(daemon_factory, "same", members, 1, remote, wait=False)
    assert stranger.proc.wait(180) == 2, log_text(stranger)
    errors = [line for line in log_text(stranger).splitlines() if line.startswith("error:")]
    assert len(errors) == 1, log_text(stranger)
    assert errors[0].startswith("error: config: ") and "staging.secret" in errors[0]
    assert OTHER_KEY not in log_text(stranger) and KEY not in log_text(stranger)

    same.wait_ready()
    with CatalogClient(f"{first.address},{same.address}", timeout=60) as client:
        assert client.get_catalog("main").name == "main"
    assert KEY not in log_text(first) and KEY not in log_text(same)


def test_a_daemon_outside_any_cluster_is_unchanged(daemon_factory: Callable[..., Daemon]) -> None:
    """Without ``cluster``: spark-conf prints the one endpoint, as before."""
    solo = daemon_factory(name="solo", catalogs=[{"name": "main", "type": "memory"}])
    done = _cli("--server", solo.address, "spark-conf", "main")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("spark.hadoop.hive.metastore.uris=")]
    assert len(lines) == 1 and "," not in lines[0]
    assert f"spark.sql.catalog.main.address={solo.address}" in done.stdout.splitlines()
