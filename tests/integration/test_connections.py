"""Idle, slow and greedy Thrift connections against a real daemon (issue 11, item 4): nobody is locked out.

The finding on the old server: 32 idle TCP connections locked every other client out, a frame
sent all but its last byte held its slot forever. Here the sockets are real and stay open,
trickle bytes or stall, while a new client calls the daemon.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from catalogd.client import CatalogClient

from .helpers import Daemon, closed_by_server, free_port, start_daemon, write_config

pytestmark = pytest.mark.integration

#: A generous deadline for a call that should answer at once (the machine is shared and slow).
DEADLINE = 30.0


def connect(daemon: Daemon) -> socket.socket:
    host, port = daemon.address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=DEADLINE)


@contextlib.contextmanager
def trickling(sockets: list[socket.socket], every: float = 0.2) -> Iterator[None]:
    """Each socket announces a 16 MiB frame and sends it a byte at a time while the block runs."""
    for sock in sockets:
        sock.sendall(struct.pack("!i", 16 * 1024 * 1024 - 1) + b"\x80\x01")
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            for sock in sockets:
                with contextlib.suppress(OSError):
                    sock.send(b"\x00")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def new_log(daemon: Daemon, offset: int) -> str:
    return daemon.log_path.read_bytes()[offset:].decode(errors="replace")


def test_idle_and_slow_connections_do_not_lock_out_a_new_client(daemon: Daemon) -> None:
    offset = daemon.log_path.stat().st_size
    with contextlib.ExitStack() as stack:
        # Ten times the old server's 32 connection slots, plus frames that never finish.
        for _ in range(320):
            stack.enter_context(connect(daemon))
        slow = [stack.enter_context(connect(daemon)) for _ in range(20)]
        stack.enter_context(trickling(slow))
        for _ in range(5):
            with CatalogClient(daemon.address, timeout=DEADLINE) as fresh:
                assert "main" in [c.name for c in fresh.list_catalogs()]
                assert "default" in fresh.list_databases("main")
    assert "Traceback" not in new_log(daemon, offset)


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[Daemon]:
    """A memory-catalog daemon of its own with tight connection limits, set through the config file."""
    data_dir = tmp_path / "limited-data"
    port, http_port = free_port(), free_port()
    limits = {"idle-timeout": "2s", "frame-timeout": "3s", "max-connections": 4}
    server = {"host": "127.0.0.1", "port": port, "http-port": http_port, "hms-port": free_port(),
              "data-dir": str(data_dir), **limits}
    config = write_config(tmp_path / "limited.yaml", port=port, http_port=http_port, data_dir=data_dir,
                          catalogs=[{"name": "scratch", "type": "memory", "default": True}],
                          extra={"server": server})
    proc = start_daemon(config, data_dir, tmp_path / "limited.log")
    yield proc
    code = proc.stop()
    assert code == 0, f"the daemon exited with {code}; log:\n{proc.log()}"


def test_the_connection_limits_come_from_the_config(limited: Daemon) -> None:
    with connect(limited) as idle:
        assert closed_by_server(idle)  # server.idle-timeout
    with connect(limited) as slow, trickling([slow], every=0.1):
        assert closed_by_server(slow)  # server.frame-timeout: bytes keep arriving, the frame never ends
    with contextlib.ExitStack() as stack:
        idle_ones = [stack.enter_context(connect(limited)) for _ in range(4)]  # server.max-connections
        with CatalogClient(limited.address, timeout=DEADLINE) as fresh:
            assert fresh.list_databases("scratch") is not None
        # Room was made by closing the connection idle the longest.
        assert closed_by_server(idle_ones[0])
    assert "Traceback" not in limited.log(400)
