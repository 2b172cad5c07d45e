#!/usr/bin/env python3
"""A daemon's restart as a Spark session sees it: how long the HMS endpoint refuses, how long
until it answers, and where the start's time goes.

One daemon per code tree (``--trees``, default: this checkout), each with its own data dir and
fixed free ports, serving one embedded hive catalog and one memory catalog (otherwise the
packaged defaults). Each round restarts every daemon in turn (SIGTERM, wait for the exit, start
``catalogd serve`` again on the same config), so trees compared share the machine's noise. Per
restart:

* ``stop_s``: SIGTERM until the process has exited;
* ``refused_s``: how long a client probing the HMS port every 50 ms was refused (from the first
  refusal after the SIGTERM to the last one);
* ``bound_s``: from the new process's start until the port takes connections;
* ``answered_s``: from the new process's start until an HMS call (``get_all_databases``, on one
  connection made as soon as the port takes it) is answered;
* ``ready_s``: from the new process's start until ``/readyz`` answers 200;
* ``restart_s``: ``stop_s + answered_s``, the restart's time to ready;
* ``phases``: from the daemon's log: ``to_first_log_s`` (interpreter, imports, config),
  ``metastore_s`` (the embedded metastore's start, from "starting" to "is up"),
  ``after_metastore_s`` (the rest, to the ready line).

    .venv/bin/python benchmarks/restart.py [--restarts 3] [--trees DIR ...] [--output FILE]

e.g. ``--trees /path/to/main-checkout .`` compares main with this branch: each daemon runs
``python -m catalogd.cli serve`` with ``PYTHONPATH`` set to its tree. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import json
import logging
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from catalogd.hive_idl import ThriftHiveMetastore

START_TIMEOUT = 600.0
STOP_TIMEOUT = 120.0
HERE = Path(__file__).resolve().parent.parent


def _die_with_parent() -> None:
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def _log_time(line: str) -> float | None:
    """The epoch seconds of a daemon log line (its timestamp is local time)."""
    try:
        stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        return None
    return stamp.timestamp()


class Daemon:
    def __init__(self, workdir: Path, tree: Path, index: int) -> None:
        self.tree = tree
        self.dir = workdir / f"daemon-{index}"
        self.dir.mkdir(parents=True)
        self.hms_port, self.http_port = _free_port(), _free_port()
        self.config_path = self.dir / "catalogd.yaml"
        self.config_path.write_text(
            "server:\n  host: 127.0.0.1\n"
            f"  port: {_free_port()}\n  http-port: {self.http_port}\n  hms-port: {self.hms_port}\n"
            f"  data-dir: {json.dumps(str(self.dir / 'data'))}\n"
            "catalogs:\n  - name: main\n    type: hive\n    default: true\n"
            "    connection:\n      hive.metastore.uris: embedded\n"
            "  - name: scratch\n    type: memory\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.dir / "catalogd.log"
        self.started_at = 0.0

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(self.tree)}
        self.started_at = time.time()
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "catalogd.cli", "serve", "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.dir,
                preexec_fn=_die_with_parent,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/readyz", timeout=5) as reply:
                return reply.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"catalogd exited:\n{self.log_path.read_text()[-3000:]}")
            if self.ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"catalogd not ready within {START_TIMEOUT:.0f}s")

    def stop(self) -> float:
        assert self.proc is not None
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return time.monotonic() - t0

    def phases(self) -> dict[str, float | None]:
        first = starting = up = ready = None
        for line in self.log_path.read_text(errors="replace").splitlines():
            at = _log_time(line)
            if at is None:
                continue
            first = first if first is not None else at
            if "starting embedded metastore" in line and starting is None:
                starting = at
            elif "embedded metastore for catalog" in line and "is up" in line and up is None:
                up = at
            elif " ready: thrift " in line:
                ready = at

        def span(a: float | None, b: float | None) -> float | None:
            return round(b - a, 2) if a is not None and b is not None else None

        return {"to_first_log_s": span(self.started_at, first), "metastore_s": span(starting, up),
                "after_metastore_s": span(up, ready)}


class RefusalProbe:
    """Connects to a port every 50 ms from ``start`` on; remembers the first and last refusal, and
    stops at the first connection taken after one (the connections it would go on making, each
    closed unanswered, would fill the new daemon's queue of connections it has not accepted yet)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.first: float | None = None
        self.last: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    if self.first is not None:
                        return
            except ConnectionRefusedError:
                now = time.monotonic()
                self.first = self.first if self.first is not None else now
                self.last = now
            except OSError:
                pass
            time.sleep(0.05)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return round(self.last - self.first, 2) if self.first is not None and self.last is not None else 0.0


def _hms_answer(port: int, started: float) -> float:
    """Seconds from ``started`` (epoch) until a get_all_databases on a connection made as soon as
    the port takes it is answered."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        sock = TSocket.TSocket("127.0.0.1", port)
        sock.setTimeout(START_TIMEOUT * 1000)
        transport = TTransport.TBufferedTransport(sock)
        try:
            transport.open()
        except TTransport.TTransportException:
            time.sleep(0.05)
            continue
        try:
            ThriftHiveMetastore.Client(TBinaryProtocol(transport)).get_all_databases()
            return time.time() - started
        except (TTransport.TTransportException, OSError):
            time.sleep(0.05)  # reset: a daemon that failed to start, or one still closing
        finally:
            transport.close()
    raise RuntimeError("the HMS endpoint did not answer")


def restart_once(daemon: Daemon) -> dict[str, Any]:
    probe = RefusalProbe(daemon.hms_port)
    probe.start()
    stop_s = daemon.stop()
    daemon.start()
    bound: list[float] = []

    def watch_bind() -> None:
        while daemon.alive() and not _accepts(daemon.hms_port):
            time.sleep(0.02)
        bound.append(time.time() - daemon.started_at)

    watcher = threading.Thread(target=watch_bind, daemon=True)
    watcher.start()
    answered_s = _hms_answer(daemon.hms_port, daemon.started_at)
    daemon.wait_ready()
    ready_s = time.time() - daemon.started_at
    watcher.join(5)
    refused_s = probe.stop()
    return {"stop_s": round(stop_s, 2), "refused_s": refused_s,
            "bound_s": round(bound[0], 2) if bound else None, "answered_s": round(answered_s, 2),
            "ready_s": round(ready_s, 2), "restart_s": round(stop_s + answered_s, 2), "phases": daemon.phases()}


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ["stop_s", "refused_s", "bound_s", "answered_s", "ready_s", "restart_s"]
    out: dict[str, Any] = {}
    for key in keys:
        values = [r[key] for r in runs if r[key] is not None]
        if values:
            out[key] = {"median": round(statistics.median(values), 2), "min": min(values), "max": max(values)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--trees", nargs="+", type=Path, default=[HERE])
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    # thrift logs every refused connect of the probes as an error.
    logging.getLogger("thrift").setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory(prefix="catalogd-restart-") as tmp:
        daemons = [Daemon(Path(tmp), tree.resolve(), i) for i, tree in enumerate(args.trees)]
        runs: dict[str, list[dict[str, Any]]] = {str(d.tree): [] for d in daemons}
        try:
            for daemon in daemons:
                daemon.start()
                daemon.wait_ready()
            for _ in range(args.restarts):
                for daemon in daemons:
                    runs[str(daemon.tree)].append(restart_once(daemon))
        finally:
            for daemon in daemons:
                if daemon.alive():
                    daemon.stop()
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_at_end": load},
        "restarts": args.restarts,
        "trees": {tree: {"summary": _summary(r), "runs": r} for tree, r in runs.items()},
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
