"""Live reload: SIGHUP and `catalogd config reload` switch catalogs while a client loop runs."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest
import yaml
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.errors import CatalogNotFoundError, PermissionDeniedError

from .helpers import metastore_key_file

pytestmark = [pytest.mark.integration]


def rewrite(path, change) -> None:
    config = yaml.safe_load(path.read_text())
    change(config)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def names(client: CatalogClient) -> list[str]:
    return [c.name for c in client.list_catalogs()]


def rejections(daemon) -> int:
    """How many times the daemon's log says a SIGHUP reload was rejected."""
    return daemon.log_path.read_text(errors="replace").count("reload rejected")


def test_reload_adds_changes_removes_catalogs_without_failing_requests(client, daemon, daemon_factory, run_cli):
    uri = client.get_catalog("main").metastore
    extra = daemon_factory(name="reload", catalogs=[
        {"name": "main", "type": "hive", "default": True, "connection": {"hive.metastore.uris": uri},
         "metastore-key-file": str(metastore_key_file(daemon.data_dir))},
        {"name": "scratch", "type": "memory"},
    ])
    with CatalogClient(extra.address, timeout=60) as c:
        c.create_database("scratch.keep")
        failures: list[str] = []
        calls = {"n": 0}
        stop = threading.Event()

        def loop() -> None:
            with CatalogClient(extra.address, timeout=60) as own:
                while not stop.is_set():
                    try:
                        own.list_databases("main")
                        own.get_catalog("main")
                        calls["n"] += 1
                    except Exception as e:  # every failure counts
                        failures.append(f"{type(e).__name__}: {e}")

        threads = [threading.Thread(target=loop) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            # The loops are at work before the first reload (each call counts once it answered).
            wait_until(lambda: calls["n"] > 0 or failures, 60, what="the client loops' first calls")
            # 1. add a catalog, make main read-only (a flag: the open catalog stays), via SIGHUP
            def add(config):
                config["catalogs"][0]["read-only"] = True
                config["catalogs"].append({"name": "other", "type": "memory", "default-database": "work"})
            rewrite(extra.config_path, add)
            os.kill(extra.pid, signal.SIGHUP)
            wait_until(lambda: "other" in names(c), 60, what="the SIGHUP reload to add catalog other")
            assert c.get_catalog("main").read_only is True
            assert c.list_databases("other") == ["work"]
            with pytest.raises(PermissionDeniedError):
                c.create_database("main.nope")
            assert c.list_databases("scratch") == ["default", "keep"]  # untouched memory catalog kept its data

            # 2. an invalid file: rejected with config check's messages, nothing changes
            good = extra.config_path.read_text()
            extra.config_path.write_text(good.replace("type: memory", "type: hdfs", 1))
            bad = run_cli("config", "reload", server=extra.address)
            assert bad.code == 2, bad
            assert "type: expected 'hive', 'memory' or 'jdbc', got 'hdfs'" in bad.stderr
            check = run_cli("config", "check", str(extra.config_path))
            assert check.stderr == bad.stderr
            rejected_before = rejections(extra)
            os.kill(extra.pid, signal.SIGHUP)  # the same through SIGHUP: logged, nothing changes
            wait_until(lambda: rejections(extra) > rejected_before, 60, what="the SIGHUP reload to be rejected")
            assert names(c) == ["main", "other", "scratch"]
            assert "reload rejected" in extra.log_path.read_text()

            # 3. remove a catalog and change another's backend (memory default database) via the CLI
            extra.config_path.write_text(good)

            def shrink(config):
                config["catalogs"] = [cat for cat in config["catalogs"] if cat["name"] != "other"]
                config["catalogs"][1]["default-database"] = "fresh"
                config["staging"] = {"lease": "5s"}
            rewrite(extra.config_path, shrink)
            done = run_cli("--json", "config", "reload", server=extra.address)
            assert done.code == 0, done.stderr
            result = json.loads(done.stdout)
            assert result["removed"] == ["other"] and result["changed"] == ["scratch"]
            assert result["restart_needed"] == ["staging"]
            assert names(c) == ["main", "scratch"]
            assert c.list_databases("scratch") == ["fresh"]
            with pytest.raises(CatalogNotFoundError):
                c.list_databases("other")
            wait_until(lambda: calls["n"] > 10, 60, what="the client loops to make their calls")
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert failures == [], failures[:5]
        assert calls["n"] > 10
