#!/usr/bin/env python3
"""Soak: many clients mixing reads and DDL while the embedded metastore is killed and frozen.

One run starts a real ``catalogd serve`` daemon with two catalogs: ``main`` on an
embedded Hive Metastore and ``scratch`` in memory. ``--clients`` threads (32), each
with its own connection, loop for ``--seconds``: get and list (reads), create and drop
tables in their own database, and create and drop extra databases (DDL), three calls in
four on ``main`` and one on ``scratch``. Meanwhile a fault thread takes turns to
SIGSTOP the metastore JVM for ``--stop-seconds`` then SIGCONT it and to SIGKILL it,
``--fault-interval`` seconds apart, and after each fault waits until a call to ``main``
that started after it (SIGSTOP: after the SIGCONT) succeeds within ``--slow`` seconds
(or ``--recovery-timeout`` passes: then it says "not recovered within N s" but keeps
waiting: a late recovery is recorded and the faults go on; without one, no further
faults are injected, since there is nothing left to kill).

A probe thread on a 33rd connection asks ``main`` every 0.2 s: it shows whether a new
client is served while the 32 hold their connections (``probe`` in the JSON).

Each client keeps a ledger of what it created and dropped successfully. A DDL call that
failed may or may not have been applied (the metastore died after applying it), so its
name is set aside as uncertain and looked up at the end instead (reported as
``failed_ddl_outcomes``: how many failed calls were applied anyway). After a failure a
client pauses ``--error-pause`` seconds. At the end the ledger
is compared with what the catalog lists: a table or database the ledger has but the
catalog does not is *lost*; one listed twice is *duplicated*; one the ledger dropped but
the catalog still lists is *resurrected*; one the catalog lists that no client ever
created is *unknown*. All must be 0. A hive table in the ledger whose directory is gone
counts as *missing_directories*. If the metastore never came back, the daemon is
restarted for that check (the memory catalog is checked before, as a restart empties it).

A call is *bad* when it fails with anything but the not-found / already-exists a
ledger check can mean, or when it takes over ``--slow`` seconds; an unavailability
window runs from a bad call's start to the end of the first good call to the same
catalog that started after it; overlapping windows merge. The JSON reports operations,
errors by kind, the longest unavailability per catalog, each fault with its recovery time
and the calls that fell into it, and the ledger check.

    .venv/bin/python benchmarks/soak.py [--seconds 180] [--clients 32] [--fault-interval 20]
        [--stop-seconds 10] [--recovery-timeout 60] [--seed 1] [--no-faults] [--output FILE]
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import dataclasses
import json
import os
import platform
import random
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

# The sibling benchmark (benchmarks/ is on sys.path when this file is run as a script).
from catalog_ops import Daemon, percentile, report

from catalogd.client import CatalogClient
from catalogd.errors import AlreadyExistsError, CatalogError, NotFoundError
from catalogd.model import Column

HIVE = "main"
MEMORY = "scratch"
PREFIX = "soak_"
PROBE_DB = f"{PREFIX}probe"
METASTORE_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
COLUMNS = [Column("id", "bigint"), Column("name", "string"), Column("ds", "string")]
#: Errors a ledger check can mean (the object is, or is not, there): not unavailability.
LOGICAL_KINDS = {"not-found", "already-exists"}
READS = {"get_table", "get_database", "list_tables"}


class SoakDaemon(Daemon):
    """``Daemon`` with a memory catalog beside the embedded hive one."""

    def config(self) -> str:
        base = super().config().replace("    type: hive\n", "    type: hive\n    default: true\n")
        return base + f"  - name: {MEMORY}\n    type: memory\n"


# ---------------------------------------------------------------- the metastore process


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def _matches(pid: int) -> bool:
    try:
        return METASTORE_CLASS.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def metastore_pid(daemon_pid: int) -> int | None:
    """The live embedded metastore JVM that descends from the daemon (a restart brings a new one).

    The JVM forks helpers (Hadoop runs shell commands for group lookups) that carry its
    command line until they exec: a match whose parent matches too is such a helper.
    """
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not _matches(int(entry.name)):
            continue
        pid = int(entry.name)
        stat = _stat(pid)
        if stat is None or stat[0] == "Z" or _matches(stat[1]):
            continue
        ancestor, hops = stat[1], 0
        while ancestor > 1 and hops < 10:
            if ancestor == daemon_pid:
                return pid
            parent = _stat(ancestor)
            if parent is None:
                break
            ancestor, hops = parent[1], hops + 1
    return None


def is_zombie(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] == "Z"


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


# ---------------------------------------------------------------- clients


@dataclass
class Call:
    catalog: str
    op: str
    start: float
    end: float
    kind: str | None  # None: it succeeded

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass
class Ledger:
    """What one client knows it made and unmade; uncertain: a DDL call that failed."""

    tables: set[str] = field(default_factory=set)
    dropped_tables: set[str] = field(default_factory=set)
    databases: set[str] = field(default_factory=set)
    dropped_databases: set[str] = field(default_factory=set)
    #: name -> the operation that failed (create_table, drop_table, create_database, drop_database).
    uncertain: dict[str, str] = field(default_factory=dict)
    #: Ledger and catalog disagreeing during the run (a listing or a read).
    anomalies: list[str] = field(default_factory=list)


def kind_of(e: BaseException) -> str:
    if isinstance(e, CatalogError):
        if e.kind == "server-unavailable" and ("timeout" in str(e) or "timed out" in str(e)):
            return "client-timeout"
        return e.kind
    return type(e).__name__


class Worker(threading.Thread):
    def __init__(self, n: int, address: str, client_timeout: float, seed: int, stop: threading.Event,
                 started: float, error_pause: float) -> None:
        super().__init__(name=f"soak-client-{n}", daemon=True)
        self.n = n
        self.client = CatalogClient(address, timeout=client_timeout)
        self.rnd = random.Random(seed * 1000 + n)
        self.stop = stop
        self.started = started
        self.calls: list[Call] = []
        self.ledgers = {HIVE: Ledger(), MEMORY: Ledger()}
        self.counter = 0
        self.crash: str | None = None
        self.error_pause = error_pause

    def own_db(self, catalog: str) -> str:
        return f"{catalog}.{PREFIX}c{self.n:02d}"

    def setup(self) -> None:
        for catalog in (HIVE, MEMORY):
            self.client.create_database(self.own_db(catalog), comment="catalogd soak")
            self.ledgers[catalog].databases.add(self.own_db(catalog))

    def timed(self, catalog: str, op: str, fn: Any) -> tuple[Any, BaseException | None]:
        start = time.monotonic()
        try:
            result = fn()
        except (CatalogError, OSError) as e:
            kind = kind_of(e)
            self.calls.append(Call(catalog, op, start - self.started, time.monotonic() - self.started, kind))
            if kind not in LOGICAL_KINDS and op in READS:
                self.stop.wait(self.error_pause)
            return None, e
        self.calls.append(Call(catalog, op, start - self.started, time.monotonic() - self.started, None))
        return result, None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.step()
        except Exception as e:  # a bug of the soak itself: report it, do not hide it in a thread
            self.crash = f"{type(e).__name__}: {e}"
        finally:
            self.client.close()

    def step(self) -> None:
        catalog = HIVE if self.rnd.random() < 0.75 else MEMORY
        ledger = self.ledgers[catalog]
        db = self.own_db(catalog)
        mine = sorted(t for t in ledger.tables if t.startswith(db + "."))
        extra = sorted(d for d in ledger.databases if d != db)
        roll = self.rnd.random()
        c = self.client
        if roll < 0.35:
            if mine:
                name = self.rnd.choice(mine)
                _, e = self.timed(catalog, "get_table", lambda: c.get_table(name))
                if isinstance(e, NotFoundError):
                    ledger.anomalies.append(f"get_table: {name} created but not found")
            else:
                self.timed(catalog, "get_database", lambda: c.get_database(db))
        elif roll < 0.55:
            listed, e = self.timed(catalog, "list_tables", lambda: c.list_tables(db))
            if e is None:
                expected = {t.rsplit(".", 1)[1] for t in mine}
                unsure = {t.rsplit(".", 1)[1] for t in ledger.uncertain if t.startswith(db + ".")}
                got = set(listed)
                if len(got) != len(listed) or expected - got or got - expected - unsure:
                    ledger.anomalies.append(f"list_tables {db}: missing {sorted(expected - got)}, "
                                            f"unexpected {sorted(got - expected - unsure)}, {len(listed)} rows")
        elif roll < 0.80:
            self.counter += 1
            name = f"{db}.t{self.counter:05d}"
            _, e = self.timed(catalog, "create_table", lambda: c.create_table(name, COLUMNS))
            self._settle(ledger, ledger.tables, "create_table", name, e, AlreadyExistsError)
        elif roll < 0.95:
            if not mine:
                return
            name = self.rnd.choice(mine)
            ledger.tables.discard(name)
            _, e = self.timed(catalog, "drop_table", lambda: c.drop_table(name))
            self._settle(ledger, ledger.dropped_tables, "drop_table", name, e, NotFoundError)
        elif extra and roll < 0.975:
            name = self.rnd.choice(extra)
            ledger.databases.discard(name)
            _, e = self.timed(catalog, "drop_database", lambda: c.drop_database(name))
            self._settle(ledger, ledger.dropped_databases, "drop_database", name, e, NotFoundError)
        else:
            self.counter += 1
            name = f"{db}_d{self.counter:05d}"
            _, e = self.timed(catalog, "create_database", lambda: c.create_database(name))
            self._settle(ledger, ledger.databases, "create_database", name, e, AlreadyExistsError)

    def _settle(self, ledger: Ledger, done: set[str], op: str, name: str, e: BaseException | None,
                contradiction: type[CatalogError]) -> None:
        if e is None:
            done.add(name)
            return
        if isinstance(e, contradiction):
            # A fresh name already there, or a name this client made missing.
            ledger.anomalies.append(f"{op} {name}: {type(e).__name__}: {e}")
        ledger.uncertain[name] = op
        if kind_of(e) not in LOGICAL_KINDS:
            # A client backs off a little after a failure, as real ones do; without it the
            # clients spin on a dead metastore and the counts measure only the spinning.
            self.stop.wait(self.error_pause)


# ---------------------------------------------------------------- faults


class Probe(threading.Thread):
    """A 33rd connection asking main every 0.2 s: is a new client served while the clients hold theirs?"""

    def __init__(self, address: str, timeout: float, stop: threading.Event, started: float) -> None:
        super().__init__(name="soak-probe", daemon=True)
        self.client = CatalogClient(address, timeout=timeout)
        self.stop = stop
        self.started = started
        self.calls: list[Call] = []

    def run(self) -> None:
        try:
            while not self.stop.wait(0.2):
                start = time.monotonic()
                kind = None
                try:
                    self.client.get_database(f"{HIVE}.{PROBE_DB}")
                except CatalogError as e:
                    kind = kind_of(e)
                self.calls.append(Call(HIVE, "probe", start - self.started, time.monotonic() - self.started, kind))
        finally:
            self.client.close()


class Faults(threading.Thread):
    """SIGKILL and SIGSTOP/SIGCONT of the metastore in turn; after each, probe until main answers."""

    def __init__(self, daemon: Daemon, address: str, args: argparse.Namespace, stop: threading.Event,
                 started: float, workers: list[Worker], probe: Probe) -> None:
        super().__init__(name="soak-faults", daemon=True)
        self.daemon_pid = daemon.process.pid if daemon.process else 0
        self.probe = probe
        self.workers = workers
        self.args = args
        self.stop = stop
        self.started = started
        self.events: list[dict[str, Any]] = []
        self.gone = False  # the metastore died and did not come back
        self.stopped_pid: int | None = None
        self.crash: str | None = None

    def now(self) -> float:
        return time.monotonic() - self.started

    def run(self) -> None:
        try:
            if self.stop.wait(self.args.fault_interval / 2):
                return
            # A stop first: without a supervisor a kill ends the faults (nothing left to stop).
            kinds = ["sigstop", "sigkill"]
            n = 0
            while not self.stop.is_set() and not self.gone:
                kind = kinds[n % 2]
                n += 1
                if kind == "sigkill":
                    self.kill()
                else:
                    self.freeze()
                if self.stop.wait(self.args.fault_interval):
                    return
        except Exception as e:  # a bug of the soak itself
            self.crash = f"{type(e).__name__}: {e}"
        finally:
            self.thaw()

    def kill(self) -> None:
        pid = metastore_pid(self.daemon_pid)
        if pid is None:
            self.events.append({"fault": "sigkill", "at_s": round(self.now(), 2), "note": "no metastore process"})
            return
        os.kill(pid, signal.SIGKILL)
        at = self.now()
        event: dict[str, Any] = {"fault": "sigkill", "at_s": round(at, 2), "pid": pid}
        self.events.append(event)
        recovered = self.wait_recovered(at, event)
        # The daemon should have reaped its child by now (a zombie means nobody waits for it).
        event["zombie_left"] = is_zombie(pid)
        event["new_pid"] = metastore_pid(self.daemon_pid)
        if not recovered:
            self.gone = True

    def freeze(self) -> None:
        pid = metastore_pid(self.daemon_pid)
        if pid is None:
            self.events.append({"fault": "sigstop", "at_s": round(self.now(), 2), "note": "no metastore process"})
            return
        os.kill(pid, signal.SIGSTOP)
        self.stopped_pid = pid
        at = self.now()
        event: dict[str, Any] = {"fault": "sigstop", "at_s": round(at, 2), "pid": pid,
                                 "stopped_s": self.args.stop_seconds}
        self.events.append(event)
        self.stop.wait(self.args.stop_seconds)
        self.thaw()
        event["cont_at_s"] = round(self.now(), 2)
        self.wait_recovered(self.now(), event)

    def thaw(self) -> None:
        if self.stopped_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.stopped_pid, signal.SIGCONT)
            self.stopped_pid = None

    def answers(self, since: float) -> bool:
        """A call to main started at or after ``since`` succeeded within --slow: a client's or the probe's."""
        for worker in [*self.workers, self.probe]:
            for call in reversed(worker.calls[-50:]):
                if call.start < since:
                    break
                if call.catalog == HIVE and call.kind is None and call.seconds <= self.args.slow:
                    return True
        return False

    def wait_recovered(self, since: float, event: dict[str, Any]) -> bool:
        """Probe main until a call succeeds; the recovery time counts from ``since``.

        Past ``--recovery-timeout`` the fault counts as not recovered, but the probing goes
        on until the soak ends: a late recovery is recorded (``recovered_late_s``) and the
        faults go on; without one, no more faults are injected.
        """
        deadline = since + self.args.recovery_timeout
        while self.now() < deadline:
            if self.answers(since):
                event["recovered"] = True
                event["recovery_s"] = round(self.now() - since, 2)
                event["recovered_at_s"] = round(self.now(), 2)
                return True
            time.sleep(0.2)
        event["recovered"] = False
        event["recovery_s"] = None
        event["recovered_at_s"] = None
        event["note"] = f"not recovered within {self.args.recovery_timeout:.0f} s"
        while not self.stop.wait(0.2):
            if self.answers(since):
                event["recovered_late_s"] = round(self.now() - since, 2)
                return True
        return False


# ---------------------------------------------------------------- analysis


def is_bad(call: Call, slow: float) -> bool:
    return (call.kind is not None and call.kind not in LOGICAL_KINDS) or call.seconds > slow


def unavailability(calls: list[Call], slow: float, end: float) -> dict[str, Any]:
    """Merged windows from a bad call's start to the end of the first good call started after it."""
    good = sorted((c for c in calls if not is_bad(c, slow)), key=lambda c: c.start)
    starts = [c.start for c in good]
    # The earliest end among good calls starting at or after each index.
    earliest_end = [0.0] * len(good)
    best = float("inf")
    for i in range(len(good) - 1, -1, -1):
        best = min(best, good[i].end)
        earliest_end[i] = best
    windows: list[tuple[float, float]] = []
    unrecovered = False
    for bad in sorted((c for c in calls if is_bad(c, slow)), key=lambda c: c.start):
        i = bisect.bisect_left(starts, bad.start)
        if i < len(good):
            windows.append((bad.start, earliest_end[i]))
        else:
            windows.append((bad.start, end))
            unrecovered = True
    merged: list[list[float]] = []
    for start, stop in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    longest = max((b - a for a, b in merged), default=0.0)
    return {"longest_s": round(longest, 2), "windows": len(merged),
            "total_s": round(sum(b - a for a, b in merged), 2), "still_unavailable_at_end": unrecovered}


def latency(calls: list[Call]) -> dict[str, float]:
    ms = sorted(c.seconds * 1000 for c in calls)
    if not ms:
        return {}
    return {"p50_ms": round(percentile(ms, 0.5), 2), "p99_ms": round(percentile(ms, 0.99), 2),
            "max_ms": round(ms[-1], 2)}


def calls_in(calls: list[Call], catalog: str, start: float, stop: float, slow: float) -> dict[str, Any]:
    """What happened to the calls to ``catalog`` in flight at ``start`` or started up to ``stop``.

    (All clients may be blocked in calls started just before a SIGSTOP: those count.)
    """
    inside = [c for c in calls if c.catalog == catalog and c.end >= start and c.start <= stop]
    failed = [c for c in inside if c.kind is not None and c.kind not in LOGICAL_KINDS]
    return {
        "calls": len(inside),
        "ok": sum(1 for c in inside if c.kind is None and c.seconds <= slow),
        "ok_slow": sum(1 for c in inside if c.kind is None and c.seconds > slow),
        "failed_within_1s": sum(1 for c in failed if c.seconds <= 1.0),
        "failed_slowly": sum(1 for c in failed if c.seconds > 1.0),
        "errors": dict(Counter(c.kind for c in failed)),
        "max_latency_s": round(max((c.seconds for c in inside), default=0.0), 2),
    }


def check_catalog(client: CatalogClient, catalog: str, workers: list[Worker],
                  check_dirs: bool) -> dict[str, Any]:
    """Ledger against listing for one catalog (after the faults, with the catalog answering)."""
    mine = [w.ledgers[catalog] for w in workers]
    expected_dbs = set().union(*(led.databases for led in mine))
    dropped_dbs = set().union(*(led.dropped_databases for led in mine))
    uncertain = {name: op for led in mine for name, op in led.uncertain.items()}
    unsure_dbs = {name for name, op in uncertain.items() if op.endswith("_database")}
    expected_tables = set().union(*(led.tables for led in mine))
    dropped_tables = set().union(*(led.dropped_tables for led in mine))
    unsure_tables = {name for name, op in uncertain.items() if op.endswith("_table")}

    listed_dbs = [f"{catalog}.{d}" for d in client.list_databases(catalog) if d.startswith(PREFIX)]
    listed_dbs = [d for d in listed_dbs if d != f"{catalog}.{PROBE_DB}"]
    listed_tables: list[str] = []
    for db in sorted(set(listed_dbs)):
        listed_tables += [f"{db}.{t}" for t in client.list_tables(db)]
    # A DDL call that failed: whatever the catalog says now is its outcome.
    listed = set(listed_dbs) | set(listed_tables)
    outcomes: dict[str, dict[str, int]] = {}
    for name, op in uncertain.items():
        counts = outcomes.setdefault(op, {"failed_calls": 0, "applied_anyway": 0})
        counts["failed_calls"] += 1
        counts["applied_anyway"] += (name in listed) == op.startswith("create")
    result: dict[str, Any] = {
        "databases": len(set(listed_dbs)),
        "tables": len(set(listed_tables)),
        "lost": sorted((expected_dbs - set(listed_dbs)) | (expected_tables - set(listed_tables))),
        "duplicated": sorted(n for n, k in Counter(listed_dbs + listed_tables).items() if k > 1),
        "resurrected": sorted((dropped_dbs & set(listed_dbs)) | (dropped_tables & set(listed_tables))),
        "unknown": sorted((set(listed_dbs) - expected_dbs - dropped_dbs - unsure_dbs)
                          | (set(listed_tables) - expected_tables - dropped_tables - unsure_tables)),
        "failed_ddl_outcomes": dict(sorted(outcomes.items())),
        "anomalies_during_run": [a for led in mine for a in led.anomalies][:20],
        "anomalies_during_run_count": sum(len(led.anomalies) for led in mine),
    }
    if check_dirs:
        missing = []
        for name in sorted(expected_tables & set(listed_tables)):
            location = client.get_table(name).location or ""
            parsed = urlparse(location)
            if parsed.scheme in ("file", "") and not Path(parsed.path).is_dir():
                missing.append(name)
        result["missing_directories"] = missing
    return result


# ---------------------------------------------------------------- run


def wait_answering(client: CatalogClient, catalog: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.list_databases(catalog)
            return True
        except CatalogError:
            time.sleep(0.5)
    return False


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="catalogd-soak-") as tmp:
        daemon = SoakDaemon(Path(tmp))
        workers: list[Worker] = []
        faults: Faults | None = None
        stop = threading.Event()
        try:
            daemon.start()
            address = f"127.0.0.1:{daemon.port}"
            daemon_pid = daemon.process.pid if daemon.process else 0
            rss_start = rss_mib(daemon_pid)
            with CatalogClient(address, timeout=60) as admin:
                admin.create_database(f"{HIVE}.{PROBE_DB}")
            started = time.monotonic()
            workers = [Worker(n, address, args.client_timeout, args.seed, stop, started, args.error_pause)
                       for n in range(args.clients)]
            for w in workers:
                w.setup()
            started = time.monotonic()
            for w in workers:
                w.started = started
                w.start()
            probe = Probe(address, args.client_timeout, stop, started)
            probe.start()
            if not args.no_faults:
                faults = Faults(daemon, address, args, stop, started, workers, probe)
                faults.start()
            rss_peak = rss_start or 0.0
            while time.monotonic() - started < args.seconds:
                time.sleep(1.0)
                rss_peak = max(rss_peak, rss_mib(daemon_pid) or 0.0)
            stop.set()
            for w in workers:
                w.join(args.client_timeout + 10)
            probe.join(2 * args.client_timeout + 10)
            if faults is not None:
                faults.join(args.recovery_timeout + args.stop_seconds + 10)
            end = time.monotonic() - started
            calls = [c for w in workers for c in w.calls]
            if args.calls_output:
                with open(args.calls_output, "w") as f:
                    for w in workers:
                        for c in w.calls:
                            f.write(json.dumps({"client": w.n, **dataclasses.asdict(c)}) + "\n")

            # The ledger check needs the catalogs answering; memory first (a restart empties it).
            restarted = False
            checks: dict[str, Any] = {}
            with CatalogClient(address, timeout=60) as admin:
                checks[MEMORY] = check_catalog(admin, MEMORY, workers, check_dirs=False)
                hive_back = wait_answering(admin, HIVE, args.recovery_timeout)
                if hive_back:
                    checks[HIVE] = check_catalog(admin, HIVE, workers, check_dirs=True)
            if not hive_back:
                daemon.stop()
                daemon.http_port = 0
                (daemon.data_dir / "catalogd.json").unlink(missing_ok=True)
                daemon.start()
                restarted = True
                with CatalogClient(f"127.0.0.1:{daemon.port}", timeout=60) as admin:
                    checks[HIVE] = check_catalog(admin, HIVE, workers, check_dirs=True)

            events = faults.events if faults is not None else []
            for event in events:
                if "recovered_at_s" not in event:
                    continue
                if event["recovered_at_s"] is not None:
                    window_end = event["recovered_at_s"]
                elif "recovered_late_s" in event:
                    window_end = event.get("cont_at_s", event["at_s"]) + event["recovered_late_s"]
                else:
                    window_end = end
                event["calls_to_main"] = calls_in(calls, HIVE, event["at_s"], window_end, args.slow)
                event["calls_to_scratch"] = calls_in(calls, MEMORY, event["at_s"], window_end, args.slow)

            per_catalog: dict[str, Any] = {}
            for catalog in (HIVE, MEMORY):
                mine = [c for c in calls if c.catalog == catalog]
                per_catalog[catalog] = {
                    "operations": len(mine),
                    "ok": sum(1 for c in mine if c.kind is None),
                    "by_operation": dict(sorted(Counter(c.op for c in mine).items())),
                    "errors_by_kind": dict(sorted(Counter(c.kind for c in mine if c.kind).items())),
                    "slow_calls": sum(1 for c in mine if c.seconds > args.slow),
                    "latency": latency(mine),
                    "unavailability": unavailability(mine, args.slow, end),
                }
            kills = [e for e in events if e["fault"] == "sigkill" and "recovered" in e]
            stops = [e for e in events if e["fault"] == "sigstop" and "recovered" in e]
            problems = {k: sum(len(checks[c][k]) for c in checks)
                        for k in ("lost", "duplicated", "resurrected", "unknown")}
            problems["missing_directories"] = len(checks.get(HIVE, {}).get("missing_directories", []))
            crashes = [w.crash for w in workers if w.crash] + ([faults.crash] if faults and faults.crash else [])
            return {
                "benchmark": "soak",
                "seconds": round(end, 1),
                "clients": args.clients,
                "seed": args.seed,
                "faults_injected": not args.no_faults,
                "operations": len(calls),
                "operations_per_s": round(len(calls) / end, 1) if end else None,
                "errors_by_kind": dict(sorted(Counter(c.kind for c in calls if c.kind).items())),
                "catalogs": per_catalog,
                "longest_unavailability_s": {c: per_catalog[c]["unavailability"]["longest_s"] for c in per_catalog},
                "faults": events,
                "probe": {
                    "what": "a 33rd connection calling get_database on main every 0.2 s",
                    "calls": len(probe.calls),
                    "ok": sum(1 for c in probe.calls if c.kind is None),
                    "errors_by_kind": dict(sorted(Counter(c.kind for c in probe.calls if c.kind).items())),
                    "latency": latency(probe.calls),
                },
                "recovery_s": {
                    "after_sigkill": [e["recovery_s"] for e in kills],
                    "after_sigcont": [e["recovery_s"] for e in stops],
                    "not_recovered": [f"{e['fault']} at {e['at_s']} s: {e['note']}" for e in events
                                      if e.get("recovered") is False],
                },
                "ledger": checks,
                "objects_lost_or_duplicated": problems,
                "ledger_ok": not any(problems.values()),
                "daemon_restarted_for_check": restarted,
                "daemon_rss_mib": {"start": rss_start, "peak": rss_peak},
                "soak_errors": crashes,
                "slow_threshold_s": args.slow,
                "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                            "platform": platform.platform()},
            }
        finally:
            stop.set()
            if faults is not None:
                faults.thaw()
            pid = metastore_pid(daemon.process.pid) if daemon.process else None
            if pid is not None:  # never leave a frozen metastore behind the daemon's stop
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
            daemon.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=180.0, help="how long the clients run (default 180)")
    parser.add_argument("--clients", type=int, default=32, help="client threads, one connection each")
    parser.add_argument("--fault-interval", type=float, default=20.0,
                        help="seconds between one fault's recovery and the next fault")
    parser.add_argument("--stop-seconds", type=float, default=10.0, help="how long SIGSTOP freezes the metastore")
    parser.add_argument("--recovery-timeout", type=float, default=60.0,
                        help="give up waiting for main to answer after a fault after this long")
    parser.add_argument("--client-timeout", type=float, default=30.0, help="socket timeout of each client")
    parser.add_argument("--slow", type=float, default=5.0,
                        help="a call slower than this counts as unavailable (default 5 s)")
    parser.add_argument("--error-pause", type=float, default=0.1,
                        help="a client's pause after a failed call (default 0.1 s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-faults", action="store_true", help="a baseline: the same load, no faults")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON result to this file")
    parser.add_argument("--calls-output", type=Path, default=None,
                        help="write every call (client, catalog, op, start, end, error kind) as JSON lines")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.clients < 1 or args.stop_seconds <= 0 or args.recovery_timeout <= 0:
        parser.error("--seconds, --clients, --stop-seconds and --recovery-timeout must be positive")
    return report(lambda: run(args), args.output)


if __name__ == "__main__":
    sys.exit(main())
