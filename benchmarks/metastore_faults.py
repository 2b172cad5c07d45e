#!/usr/bin/env python3
"""How a hive catalog on an embedded metastore rides through metastore faults: SIGKILL and SIGSTOP.

One run opens a hive catalog on its own embedded metastore (a temporary data dir) and a
memory catalog in one ``CatalogManager``, then:

* SIGKILL: kills the metastore JVM and measures how long calls take to be refused while it is
  down (p50/p99/max), and the time from the kill until the catalog serves again by itself;
* SIGSTOP: stops the JVM for ``--stop-seconds`` and measures how long a readiness check
  (``CatalogManager.ping``, what ``/readyz`` answers from) and memory catalog calls take meanwhile.

    .venv/bin/python benchmarks/metastore_faults.py [--kills 3] [--stop-seconds 10] [--output FILE]

Prints one JSON document (and writes it to FILE when --output is given).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from catalogd.config import parse_config
from catalogd.errors import MetastoreUnavailableError
from catalogd.manager import CatalogManager


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {"n": len(values), "p50_ms": round(statistics.median(values) * 1000, 2),
            "p99_ms": round(_percentile(values, 0.99) * 1000, 2), "max_ms": round(max(values) * 1000, 2)}


def _kill_once(manager: CatalogManager) -> dict[str, object]:
    catalog = manager.catalog("main")
    embedded = catalog.embedded  # type: ignore[attr-defined]
    pid = embedded.pid
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    refused: list[float] = []
    while True:
        start = time.monotonic()
        try:
            catalog.list_databases()
            break
        except MetastoreUnavailableError:
            refused.append(time.monotonic() - start)
        time.sleep(0.05)
    recovered = time.monotonic() - killed
    reaped = not Path(f"/proc/{pid}").exists()
    return {"recovery_s": round(recovered, 2), "refused_calls": _summary(refused), "old_pid_reaped": reaped,
            "new_pid": embedded.pid}


def _stop_once(manager: CatalogManager, seconds: float) -> dict[str, object]:
    embedded = manager.catalog("main").embedded  # type: ignore[attr-defined]
    memory = manager.catalog("scratch")
    os.kill(embedded.pid, signal.SIGSTOP)
    ping: list[float] = []
    memory_calls: list[float] = []
    answers: dict[str, str | None] = {}
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            start = time.monotonic()
            answers = manager.ping()
            ping.append(time.monotonic() - start)
            start = time.monotonic()
            memory.list_databases()
            memory_calls.append(time.monotonic() - start)
    finally:
        os.kill(embedded.pid, signal.SIGCONT)
    return {"readiness_check": _summary(ping), "memory_catalog_call": _summary(memory_calls),
            "main_while_stopped": answers.get("main")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--stop-seconds", type=float, default=10.0)
    parser.add_argument("--output")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="catalogd-faults-") as tmp:
        config = parse_config(
            f"server: {{data-dir: {tmp}}}\n"
            "catalogs:\n"
            "  - {name: main, type: hive, default: true, connection: {hive.metastore.uris: embedded}}\n"
            "  - {name: scratch, type: memory}\n"
        )
        manager = CatalogManager(config)
        started = time.monotonic()
        manager.open()
        result: dict[str, object] = {
            "benchmark": "metastore_faults",
            "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
            "first_start_s": round(time.monotonic() - started, 2),
        }
        try:
            result["sigkill"] = [_kill_once(manager) for _ in range(args.kills)]
            result["sigstop"] = _stop_once(manager, args.stop_seconds)
        finally:
            manager.close()
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
