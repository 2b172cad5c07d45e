"""``catalogd serve`` refuses at once, with exit 2 and a config error, what it cannot serve: a port in use
(before any metastore starts) and a configuration path that is not a small regular file."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from .helpers import CATALOGD, clean_env, embedded_catalog, free_port, metastore_pids, write_config

pytestmark = pytest.mark.integration

#: Far more than the checks take, far less than starting a metastore (which would come first if they did not).
QUICK = 30


def _serve(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CATALOGD), "serve", "--config", str(config)], capture_output=True, text=True,
                          timeout=QUICK, env=clean_env())


@pytest.mark.parametrize("key", ["port", "http-port", "metastore-port"])
def test_a_port_in_use_exits_2_before_the_metastore_starts(tmp_path: Path, key: str) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    ports = {"port": free_port(), "http-port": free_port(), "metastore-port": free_port(), key: port}
    data_dir = tmp_path / "data"
    config = write_config(tmp_path / "c.yaml", port=ports["port"], http_port=ports["http-port"], data_dir=data_dir,
                          catalogs=[embedded_catalog("main", metastore_port=ports["metastore-port"])])
    try:
        done = _serve(config)
    finally:
        taken.close()
    assert done.returncode == 2, done.stderr
    error = done.stderr.splitlines()[-1]  # after the log lines of the (empty) shutdown
    assert error.startswith("error: config: "), done.stderr
    assert f"{key}: port {port} on 127.0.0.1 is already in use" in error
    assert metastore_pids(data_dir) == []
    assert not (data_dir / "catalogs").exists(), "no metastore was started"


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.yaml"
    os.mkfifo(path)
    return path


def _huge(tmp_path: Path) -> Path:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.truncate(50 * 1024 * 1024)
    return path


@pytest.mark.parametrize(("make", "message"), [
    (_fifo, "named pipe (FIFO), not a regular file"),
    (lambda tmp_path: Path("/dev/zero"), "character device, not a regular file"),
    (_huge, "a configuration file may have at most 1048576"),
])
def test_a_config_that_is_not_a_small_regular_file_exits_2(tmp_path: Path, make, message: str) -> None:
    done = _serve(make(tmp_path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: config: ") and message in done.stderr, done.stderr


def test_a_config_directory_exits_2(tmp_path: Path) -> None:
    done = _serve(tmp_path)
    assert done.returncode == 2, done.stderr
    assert "directory" in done.stderr


_MEMORY = "catalogs:\n  - name: main\n    type: memory\n"


@pytest.mark.parametrize(("text", "line_start"), [
    (_MEMORY + "spark:\n  conf: " + "[" * 50_000 + "]" * 50_000 + "\n", "spark.conf[0]: line 5: nested more than 32"),
    ("server:\n  data-dir: /dev/null\n" + _MEMORY, "server.data-dir: '/dev/null' is not a directory"),
    ("cache:\n  ttl: 3650 days\n" + _MEMORY, "cache.ttl: must be at most 1 day, got 3650 days"),
    ("catalogs:\n  - name: \u212aat\n    type: memory\n", "catalogs[0].name: invalid catalog name"),
], ids=["deep", "dev-null", "ttl", "kelvin"])
def test_a_hostile_config_exits_2_with_one_line_naming_the_key(tmp_path: Path, text: str, line_start: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(text, encoding="utf-8")
    done = _serve(config)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr  # one line, no traceback
    assert done.stderr.startswith(f"error: config: {config}: {line_start}"), done.stderr
    check = subprocess.run([str(CATALOGD), "config", "check", str(config)], capture_output=True, text=True,
                           timeout=QUICK, env=clean_env())
    assert check.returncode == 2 and check.stderr.startswith(f"{config}: {line_start}"), check.stderr
    assert len(check.stderr.splitlines()) == 1, check.stderr
