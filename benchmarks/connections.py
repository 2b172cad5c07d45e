#!/usr/bin/env python3
"""Whether idle and slow Thrift connections starve a real catalogd: a new client's latency and the daemon's RSS.

One run starts a real ``catalogd serve`` daemon (free ports, a temporary data dir; one
memory catalog, or with ``--hive`` an embedded-metastore catalog), then:

1. measures a new client's call (connect, ``listDatabases``, close) with nothing else open,
   and the daemon's RSS when idle;
2. opens ``--idle`` connections that never send a byte and ``--slow`` connections that each
   announce a frame of ``server.max-frame-size`` and trickle it at ``--slow-rate`` bytes per
   second (the daemon cuts them at ``server.frame-timeout`` or ``server.max-buffered-bytes``;
   a cut one reconnects at once, so ``--slow`` of them are always sending);
3. after ``--settle`` seconds, measures the same new-client call ``--samples`` times spread
   over ``--duration`` seconds (long enough for the slow frames to reach the byte cap and the
   frame deadline, be cut and come back), sampling the daemon's RSS all along.

Goal (issue 11): p99 under load < 1 s, RSS under load within 200 MiB of idle.

    .venv/bin/python benchmarks/connections.py [--idle 1000] [--slow 50] [--samples 600] [--duration 60]
        [--max-connections N] [--hive] [--output FILE]

Without ``--max-connections`` the daemon runs with the default (1000): with 1,050 connections
offered, the ones idle the longest are closed to make room, which the JSON reports as
``idle_closed_by_server``. Prints one JSON document (also to FILE). The daemon is stopped at
the end, also when something fails.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import resource
import select
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from catalog_ops import CATALOG, Daemon, percentile, report

from catalogd.client import CatalogClient

MAX_FRAME_SIZE = 16 * 1024 * 1024
GOAL_P99_S = 1.0
GOAL_RSS_MIB = 200.0


class ConnectionsDaemon(Daemon):
    """The benchmark's daemon: a memory catalog (or an embedded metastore), optional connection cap."""

    def __init__(self, workdir: Path, hive: bool, max_connections: int | None) -> None:
        super().__init__(workdir)
        self.hive = hive
        self.max_connections = max_connections

    def config(self) -> str:
        text = super().config()
        if self.max_connections is not None:
            text = text.replace("  log-level: warning\n",
                                f"  log-level: warning\n  max-connections: {self.max_connections}\n")
        if not self.hive:
            text = text.split("catalogs:\n")[0] + f"catalogs:\n  - name: {CATALOG}\n    type: memory\n"
        return text


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def raise_fd_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        if new < wanted:
            raise RuntimeError(f"the open file limit ({hard}) is below the {wanted} this benchmark needs")


def new_client_call(address: str) -> float:
    """Seconds for a new client to connect, call ``listDatabases`` and close."""
    start = time.perf_counter()
    client = CatalogClient(address, timeout=30)
    try:
        client.list_databases(CATALOG)
    finally:
        client.close()
    return time.perf_counter() - start


def latencies(address: str, samples: int, every: float = 0.0) -> tuple[dict[str, float], int]:
    """``samples`` new-client calls, one every ``every`` seconds (back to back when 0)."""
    times: list[float] = []
    errors = 0
    next_at = time.monotonic()
    for _ in range(samples):
        next_at += every
        try:
            times.append(new_client_call(address))
        except Exception as e:  # counted and reported: the benchmark measures whether calls fail
            errors += 1
            print(f"call failed: {e}", file=sys.stderr)
        time.sleep(max(0.0, next_at - time.monotonic()))
    ms = sorted(t * 1000 for t in times)
    return {
        "p50_ms": round(percentile(ms, 0.50), 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "max_ms": round(ms[-1], 3) if ms else float("nan"),
        "samples": len(ms),
    }, errors


def open_idle(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sockets.append(socket.create_connection(("127.0.0.1", port), timeout=30))
    return sockets


def closed_by_server(sock: socket.socket) -> bool:
    poller = select.poll()  # descriptors past 1024: not select.select
    poller.register(sock, select.POLLIN)
    if not poller.poll(0):
        return False
    try:
        return sock.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


class SlowSenders:
    """``count`` connections that keep a maximum-size frame arriving at ``rate`` bytes per second each."""

    TICK = 0.1

    def __init__(self, port: int, count: int, rate: int) -> None:
        self.port = port
        self.chunk = max(1, int(rate * self.TICK))
        self.sockets = [self._connect() for _ in range(count)]
        self.reconnects = 0
        self.bytes_sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-senders", daemon=True)
        self._thread.start()

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        sock.setblocking(False)
        sock.send(struct.pack("!i", MAX_FRAME_SIZE) + b"\x80\x01\x00\x01")
        return sock

    def _run(self) -> None:
        payload = b"\x00" * self.chunk
        while not self._stop.wait(self.TICK):
            for i, sock in enumerate(self.sockets):
                try:
                    self.bytes_sent += sock.send(payload)
                except BlockingIOError:
                    pass  # the daemon is not reading from it right now (its socket buffer is full)
                except OSError:  # cut by the daemon (frame deadline or byte cap): come back at once
                    sock.close()
                    with contextlib.suppress(OSError):
                        self.sockets[i] = self._connect()
                        self.reconnects += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock in self.sockets:
            sock.close()


def log_summary(path: Path) -> dict[str, Any]:
    """How many warning lines and tracebacks the daemon logged (bad clients should cause no traceback)."""
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    warnings = [line for line in lines if " WARNING " in line]
    return {"warning_lines": len(warnings), "tracebacks": sum("Traceback" in line for line in lines),
            "first_warnings": warnings[:3]}


class RssSampler:
    def __init__(self, pid: int, every: float = 0.25) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._every = every
        self._thread = threading.Thread(target=self._run, name="rss", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            with contextlib.suppress(OSError, RuntimeError):
                self.peak = max(self.peak, rss_mib(self.pid))

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


def run(args: argparse.Namespace) -> dict[str, Any]:
    raise_fd_limit(args.idle + args.slow + 512)
    with tempfile.TemporaryDirectory(prefix="catalogd-bench-conn-") as tmp:
        daemon = ConnectionsDaemon(Path(tmp), args.hive, args.max_connections)
        idle: list[socket.socket] = []
        slow: SlowSenders | None = None
        sampler: RssSampler | None = None
        try:
            daemon.start()
            assert daemon.process is not None
            pid = daemon.process.pid
            address = f"127.0.0.1:{daemon.port}"
            latencies(address, 30)  # warm-up: imports, first connections, the metastore's caches
            baseline, baseline_errors = latencies(address, args.samples)
            rss_idle = rss_mib(pid)

            idle = open_idle(daemon.port, args.idle)
            slow = SlowSenders(daemon.port, args.slow, args.slow_rate)
            sampler = RssSampler(pid)
            time.sleep(args.settle)  # every connection accepted, the slow frames started
            # Spread over --duration: the slow frames grow to the byte cap, pass the frame deadline,
            # are cut and come back while the calls are measured.
            loaded, loaded_errors = latencies(address, args.samples, args.duration / args.samples)
            rss_loaded = rss_mib(pid)
            sampler.close()
            idle_closed = sum(closed_by_server(sock) for sock in idle)
            result = {
                "benchmark": "connections",
                "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                "daemon": {"catalog": "hive (embedded metastore)" if args.hive else "memory",
                           "max_connections": args.max_connections or 1000},
                "load": {"idle_connections": args.idle, "slow_connections": args.slow,
                         "slow_rate_bytes_per_s": args.slow_rate, "settle_s": args.settle,
                         "measured_over_s": args.duration,
                         "slow_reconnects_after_cut": slow.reconnects,
                         "slow_bytes_sent": slow.bytes_sent,
                         "idle_closed_by_server": idle_closed},
                "new_client_call": {"no_load": baseline, "under_load": loaded,
                                    "errors_no_load": baseline_errors, "errors_under_load": loaded_errors},
                "daemon_rss_mib": {"idle": round(rss_idle, 1), "under_load_end": round(rss_loaded, 1),
                                   "under_load_peak": round(sampler.peak, 1),
                                   "peak_over_idle": round(sampler.peak - rss_idle, 1)},
                "daemon_log": log_summary(daemon.log_path),
                "goals": {
                    "p99_under_1s": loaded["p99_ms"] < GOAL_P99_S * 1000 and loaded_errors == 0,
                    "rss_within_200mib_of_idle": sampler.peak - rss_idle < GOAL_RSS_MIB,
                },
            }
            return result
        finally:
            if sampler is not None:
                sampler.close()
            if slow is not None:
                slow.close()
            for sock in idle:
                sock.close()
            daemon.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=int, default=1000, help="connections that never send (default 1000)")
    parser.add_argument("--slow", type=int, default=50, help="connections trickling a frame (default 50)")
    parser.add_argument("--slow-rate", type=int, default=64 * 1024,
                        help="bytes per second each slow connection sends (default 65536)")
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds of load before measuring (default 5)")
    parser.add_argument("--duration", type=float, default=60.0,
                        help="seconds over which the calls under load are spread (default 60)")
    parser.add_argument("--samples", type=int, default=600, help="new-client calls measured each time (default 600)")
    parser.add_argument("--max-connections", type=int, default=None,
                        help="server.max-connections for the daemon (default: the daemon's default, 1000)")
    parser.add_argument("--hive", action="store_true", help="an embedded-metastore catalog instead of memory")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()
    return report(lambda: run(args), args.output)


if __name__ == "__main__":
    sys.exit(main())
