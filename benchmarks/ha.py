#!/usr/bin/env python3
"""High availability under load: three members on one PostgreSQL-backed metastore, a random one
SIGKILLed (with its embedded metastore) and restarted every ``--kill-every`` seconds.

One run starts a real PostgreSQL server (Debian's ``initdb``/``pg_ctl``, as the tests do) and
three ``catalogd serve`` members of one cluster (``cluster.members``, one ``staging.secret``),
each with its own embedded HMS on the same database, ``cache.ttl`` 60 s (so a read that sees
another member's write within a second saw an invalidation, not an expiry). Then, for
``--duration`` seconds:

* ``--clients`` threads (default 32), each on a ``CatalogClient`` listing every member (rotated,
  so they spread): half read (``get_table``, ``list_tables``; ``--think`` seconds apart), a
  quarter run DDL (create, alter, drop of their own tables), a quarter commit with the Iceberg pattern through the HMS
  endpoint (exclusive table lock, read the pointer parameter, ``alter_table`` to a new pointer
  naming the old one, unlock) on four shared tables -- when the members share locks (probed at
  start: an exclusive lock held through one member must make the same request through another
  wait); otherwise the lock counters are "not available" and those clients read;
* ``--dynamic-tables`` dynamic tables (FULL, ``FRESHNESS 1 MINUTE``) refreshing, on every
  member when the members elect a leader (``catalogd_leader`` in /metrics), else on the first
  member only (as the docs say to run without one);
* a prober: it reads a probe table through member Y (so Y caches it), alters it through X,
  and polls Y every 5 ms until the change shows: the cross-daemon staleness is the time from
  the write's acknowledgement to the start of the first read that sees it;
* the killer: every ``--kill-every`` seconds a random live member (never the last one) is
  SIGKILLed with its metastore JVM, and restarted at once. When leadership exists and the
  leader was killed, the time until another member reports ``catalogd_leader 1`` is a takeover.

At the end: every acknowledged DDL object is checked (created and not dropped: present;
dropped: absent), every acknowledged commit must be on the final pointer chain, refreshes are
counted twice when one table has two scheduled runs for the same schedule time. Last, with the
cluster stopped: ``get_table`` through the HMS endpoint of one daemon (cache off) on PostgreSQL
against one on Derby, ``--compare-calls`` calls each.

    .venv/bin/python benchmarks/ha.py [--duration 300] [--kill-every 20] [--clients 32]
                                      [--dynamic-tables 2] [--compare-calls 2000] [--output FILE]

Prints one JSON document (and writes it to FILE). Everything started is stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import statistics
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests")]

from hmsclient import hmsclient  # noqa: E402
from integration.helpers import (  # noqa: E402
    Daemon,
    embedded_catalog,
    free_port,
    metastore_pids,
    start_daemon,
    write_config,
)
from integration.postgres import PostgresServer, running_postgres  # noqa: E402

from catalogd.client import CatalogClient  # noqa: E402
from catalogd.errors import CatalogError, ServerUnavailableError  # noqa: E402
from catalogd.hive_idl import ttypes  # noqa: E402

SECRET = "ha-benchmark-stage-secret-0123456789"
DB = "ha"
COMMIT_TABLES = 4
POINTER = "metadata_location"
PREVIOUS = "previous_metadata_location"
NA = "not available"
#: The members' server.hms-lock-timeout (the metastores' hive.txn.timeout).
LOCK_TIMEOUT = "20s"


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 1)


def _metrics(http: str) -> str:
    with urllib.request.urlopen(f"{http}/metrics", timeout=5) as response:
        return str(response.read().decode())


def _gauge(text: str, name: str) -> float | None:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


# ---------------------------------------------------------------- the cluster

@dataclass
class Member:
    index: int
    config: Path
    data_dir: Path
    log: Path
    hms_port: int
    daemon: Daemon | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def up(self) -> bool:
        return self.daemon is not None and self.daemon.proc.poll() is None

    def start(self) -> None:
        self.daemon = start_daemon(self.config, self.data_dir, self.log, timeout=600)

    def kill(self) -> None:
        if self.daemon is not None and self.daemon.proc.poll() is None:
            self.daemon.proc.kill()
            self.daemon.proc.wait()
        # The host is gone: its metastore JVM with it.
        for pid in metastore_pids(self.data_dir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()
        self.kill()


class Cluster:
    def __init__(self, root: Path, postgres: PostgresServer, n: int, dynamic_everywhere: bool) -> None:
        database = postgres.create_database("ha")
        url = postgres.url(database, password=True)
        warehouse = (root / "warehouse").as_uri()
        ports = [{"host": "127.0.0.1", "port": free_port(), "hms-port": free_port(), "http-port": free_port()}
                 for _ in range(n)]
        self.members: list[Member] = []
        for i, p in enumerate(ports):
            catalogs = [embedded_catalog("main", metastore_port=free_port(), warehouse=warehouse,
                                         **{"metastore-db": url})]
            dynamic = {"enabled": dynamic_everywhere or i == 0, "warm-analyzer": False}
            # A lock whose holder died with its member (the lock call lost in flight) goes after
            # LOCK_TIMEOUT, not HMS's 5 minutes, so the commit tables are not stalled for long.
            extra = {"server": {"hms-port": p["hms-port"], "hms-lock-timeout": LOCK_TIMEOUT},
                     "cluster": {"members": ports},
                     "staging": {"secret": SECRET}, "cache": {"ttl": "60s"}, "dynamic-tables": dynamic}
            config = write_config(root / f"m{i}.yaml", port=p["port"], http_port=p["http-port"],
                                  data_dir=root / f"m{i}", catalogs=catalogs, extra=extra)
            self.members.append(Member(i, config, root / f"m{i}", root / f"m{i}.log", p["hms-port"]))
        self.addresses = [f"127.0.0.1:{p['port']}" for p in ports]

    def start(self) -> None:
        for member in self.members:  # one at a time: the first creates the schema
            member.start()

    def servers(self, first: int) -> str:
        n = len(self.addresses)
        return ",".join(self.addresses[(first + k) % n] for k in range(n))

    def live(self) -> list[Member]:
        return [m for m in self.members if m.up]

    def leaders(self) -> list[int] | None:
        """Members reporting ``catalogd_leader 1``; None when no member exports the gauge."""
        found, seen = [], False
        for m in self.live():
            assert m.daemon is not None
            try:
                value = _gauge(_metrics(m.daemon.http), "catalogd_leader")
            except OSError:
                continue
            if value is not None:
                seen = True
                if value == 1:
                    found.append(m.index)
        return found if seen else None

    def stop(self) -> None:
        for member in self.members:
            member.stop()


# ---------------------------------------------------------------- HMS endpoint clients that fail over

class Hms:
    """An HMS endpoint connection that moves to the next member on a lost connection (as Hive's does).

    Connecting is always retried over every member (no request was sent yet); a call whose
    connection is lost is retried only with ``retry`` (an idempotent call)."""

    def __init__(self, ports: list[int], first: int) -> None:
        self.ports = ports[first:] + ports[:first]
        self.next = 0
        self.client: Any = None

    def _connect(self) -> Any:
        for attempt in range(len(self.ports) * 3):
            port = self.ports[self.next % len(self.ports)]
            try:
                client = hmsclient.HMSClient(host="127.0.0.1", port=port)
                client.open()
                return client
            except (OSError, ttypes.TException):
                self.next += 1
                if attempt + 1 >= len(self.ports):
                    time.sleep(0.2)
        raise ConnectionError("no member answers")

    def call(self, fn: Callable[[Any], Any], retry: bool = True) -> Any:
        for _ in range(len(self.ports) * 3):
            if self.client is None:
                self.client = self._connect()
            try:
                return fn(self.client)
            except (OSError, EOFError, ttypes.TException) as e:
                if isinstance(e, ttypes.TException) and not _lost(e):
                    raise
                with contextlib.suppress(Exception):
                    self.client.close()
                self.client = None
                self.next += 1
                if not retry:
                    raise
                time.sleep(0.2)
        raise ConnectionError("no member answers")

    def close(self) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close()


def _lost(e: Exception) -> bool:
    from thrift.transport.TTransport import TTransportException
    return isinstance(e, TTransportException)


def _seconds(duration: str) -> float:
    """``20s`` -> 20.0 (the benchmark's own settings only)."""
    return float(duration.removesuffix("s"))


def _lock(hms: Hms, table: str) -> int:
    request = ttypes.LockRequest(component=[ttypes.LockComponent(type=ttypes.LockType.EXCLUSIVE,
                                                                  level=ttypes.LockLevel.TABLE,
                                                                  dbname=DB, tablename=table)],
                                 user="bench", hostname=socket.gethostname())
    return int(hms.call(lambda c: c.lock(request), retry=False).lockid)


def _lock_state(hms: Hms, lockid: int) -> int:
    return int(hms.call(lambda c: c.check_lock(ttypes.CheckLockRequest(lockid=lockid))).state)


class Heartbeats:
    """Heartbeats of a held lock on a connection of its own, as Iceberg's ``HiveCommitLock`` sends them
    (a holder that stops heartbeating loses its lock after the members' ``hive.txn.timeout``)."""

    def __init__(self, ports: list[int], first: int, lockid: int, every: float) -> None:
        self.hms = Hms(ports, first)
        self.lockid = lockid
        self.every = every
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        request = ttypes.HeartbeatRequest(lockid=self.lockid)
        while not self.done.wait(self.every):
            try:
                self.hms.call(lambda c: c.heartbeat(request))
            except Exception:  # a member still starting answers with an error: the next one may not
                with contextlib.suppress(Exception):
                    self.hms.client.close()
                self.hms.client, self.hms.next = None, self.hms.next + 1

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        self.hms.close()


def _unlock(hms: Hms, lockid: int) -> None:
    with contextlib.suppress(Exception):
        hms.call(lambda c: c.unlock(ttypes.UnlockRequest(lockid=lockid)))


def locks_shared(cluster: Cluster) -> tuple[bool, str]:
    """Whether an exclusive lock held through one member makes the same request through another wait."""
    ports = [m.hms_port for m in cluster.members]
    first, second = Hms(ports, 0), Hms(ports, 1)
    try:
        held = _lock(first, "probe")
        try:
            if _lock_state(first, held) != ttypes.LockState.ACQUIRED:
                return False, "the first lock was not granted"
            other = _lock(second, "probe")
            state = _lock_state(second, other)
            _unlock(second, other)
            if state == ttypes.LockState.ACQUIRED:
                return False, "a second member granted the same exclusive lock (locks are per member)"
            return True, "shared"
        finally:
            _unlock(first, held)
    except Exception as e:
        return False, f"lock refused: {type(e).__name__}: {str(e)[:200]}"
    finally:
        first.close()
        second.close()


# ---------------------------------------------------------------- the workload

@dataclass
class Tally:
    ops: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    messages: Counter[str] = field(default_factory=Counter)
    ambiguous: int = 0
    two_holders: int = 0
    lock_timeouts: int = 0
    created: set[str] = field(default_factory=set)
    dropped: set[str] = field(default_factory=set)
    unsure: set[str] = field(default_factory=set)
    commits: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    staleness: list[float] = field(default_factory=list)
    #: Write acknowledged through X until the first read through Y that sees it has answered.
    seen: list[float] = field(default_factory=list)
    stale_timeouts: int = 0
    takeovers: list[float] = field(default_factory=list)
    kills: int = 0
    leader_kills: int = 0
    skipped_kills: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    holders: dict[str, int] = field(default_factory=dict)

    def error(self, kind: str, e: BaseException) -> None:
        """Count an error by kind, and by kind and message (numbers left out), then pause: a
        client that fails backs off instead of spinning."""
        if kind == "read" and "too many calls in flight" in str(e):
            kind = "read-shed"  # the member shedding load (metastore calls at its cap), not a failover
        message = re.sub(r"\d+", "N", f"{type(e).__name__}: {e}")[:120]
        with self.lock:
            self.errors[kind] += 1
            self.messages[f"{kind}: {message}"] += 1
        time.sleep(0.2)

    def op(self, kind: str) -> None:
        with self.lock:
            self.ops[kind] += 1


def reader(cluster: Cluster, tally: Tally, i: int, stop: threading.Event, think: float) -> None:
    rng = random.Random(i)
    with CatalogClient(cluster.servers(i), timeout=60) as client:
        # A pause between reads: unpaced readers (cache hits) would starve this process's other threads.
        while not stop.wait(think):
            try:
                if rng.random() < 0.2:
                    client.list_tables(f"main.{DB}")
                    tally.op("list_tables")
                else:
                    client.get_table(f"main.{DB}.c{rng.randrange(COMMIT_TABLES)}")
                    tally.op("get_table")
            except CatalogError as e:
                tally.error("read", e)


def ddl(cluster: Cluster, tally: Tally, i: int, stop: threading.Event) -> None:
    n = 0
    with CatalogClient(cluster.servers(i), timeout=60) as client:
        while not stop.is_set():
            name = f"main.{DB}.d{i}_{n}"
            n += 1
            try:
                client.create_table(name, "id bigint, v string")
                with tally.lock:
                    tally.created.add(name)
                tally.op("create_table")
                client.alter_table(name, set_properties={"step": "altered"})
                tally.op("alter_table")
                if n % 2 == 0:
                    client.drop_table(name)
                    with tally.lock:
                        tally.dropped.add(name)
                    tally.op("drop_table")
            except ServerUnavailableError as e:
                # Lost in flight on a member that died: it may have happened (not retried by the client).
                with tally.lock:
                    tally.ambiguous += 1
                    tally.unsure.add(name)
                tally.error("ddl-in-flight", e)
            except CatalogError as e:
                with tally.lock:
                    tally.unsure.add(name)
                tally.error("ddl", e)


class _Stopped(Exception):
    """The benchmark ended while a committer waited for its lock."""


def committer(cluster: Cluster, tally: Tally, i: int, stop: threading.Event) -> None:
    rng = random.Random(1000 + i)
    ports = [m.hms_port for m in cluster.members]
    hms = Hms(ports, i % len(ports))
    n = 0
    try:
        while not stop.is_set():
            table = f"c{rng.randrange(COMMIT_TABLES)}"
            new = f"{i}-{n}"
            n += 1
            try:
                lockid = _lock(hms, table)
            except Exception as e:
                tally.error("lock", e)
                continue
            try:
                deadline = time.monotonic() + 60
                while _lock_state(hms, lockid) != ttypes.LockState.ACQUIRED:
                    if stop.is_set():
                        raise _Stopped  # the run ended while it waited: not a wait over 60 s
                    if time.monotonic() > deadline:
                        raise TimeoutError("lock not granted within 60 s")
                    time.sleep(0.05)
                heartbeats = Heartbeats(ports, (i + 1) % len(ports), lockid, _seconds(LOCK_TIMEOUT) / 4)
                with tally.lock:
                    if tally.holders.get(table) is not None:
                        tally.two_holders += 1
                    tally.holders[table] = i
                try:
                    current = hms.call(lambda c, t=table: c.get_table(DB, t))
                    old = (current.parameters or {}).get(POINTER, "")
                    current.parameters = {**(current.parameters or {}), POINTER: new, PREVIOUS: old}
                    hms.call(lambda c, t=table, tbl=current: c.alter_table(DB, t, tbl), retry=False)
                    with tally.lock:
                        tally.commits.setdefault(table, []).append((new, old))
                    tally.op("commit")
                finally:
                    with tally.lock:
                        if tally.holders.get(table) == i:
                            tally.holders[table] = None  # type: ignore[assignment]
                    heartbeats.stop()
            except _Stopped:
                pass
            except TimeoutError as e:
                with tally.lock:
                    tally.lock_timeouts += 1
                tally.error("lock-wait", e)
            except Exception as e:
                tally.error("commit", e)
            finally:
                _unlock(hms, lockid)
    finally:
        hms.close()


def prober(cluster: Cluster, tally: Tally, stop: threading.Event) -> None:
    rng = random.Random(7)
    n = 0
    clients: dict[int, CatalogClient] = {}
    try:
        while not stop.wait(0.5):
            live = cluster.live()
            if len(live) < 2:
                continue
            x, y = rng.sample(live, 2)
            try:
                for m in (x, y):
                    if m.index not in clients:
                        clients[m.index] = CatalogClient(cluster.addresses[m.index], timeout=10)
                cx, cy = clients[x.index], clients[y.index]
                cy.get_table(f"main.{DB}.probe")  # cached by Y now
                n += 1
                cx.alter_table(f"main.{DB}.probe", set_properties={"n": str(n)})
                written = time.monotonic()
                while True:
                    # Stale until the start of the first read that sees the write.
                    asked = time.monotonic()
                    if cy.get_table(f"main.{DB}.probe").properties.get("n") == str(n):
                        tally.staleness.append(asked - written)
                        tally.seen.append(time.monotonic() - written)
                        break
                    if time.monotonic() - written > 10:
                        tally.stale_timeouts += 1
                        break
                    time.sleep(0.005)
            except CatalogError:
                # A member died under the probe: start over with fresh connections.
                for c in clients.values():
                    with contextlib.suppress(Exception):
                        c.close()
                clients.clear()
    finally:
        for c in clients.values():
            with contextlib.suppress(Exception):
                c.close()


def killer(cluster: Cluster, tally: Tally, every: float, stop: threading.Event, leadership: bool) -> None:
    rng = random.Random(11)
    restarts: list[threading.Thread] = []
    while not stop.wait(every):
        live = cluster.live()
        if len(live) < 2:
            with tally.lock:
                tally.skipped_kills += 1
            continue
        victim = rng.choice(live)
        leaders = cluster.leaders() if leadership else None
        was_leader = leaders is not None and victim.index in leaders
        victim.kill()
        killed = time.monotonic()
        with tally.lock:
            tally.kills += 1
            tally.leader_kills += int(was_leader)
        if was_leader:
            def watch(v: int = victim.index, t0: float = killed) -> None:
                while time.monotonic() - t0 < 120:
                    now = cluster.leaders() or []
                    if any(i != v for i in now):
                        with tally.lock:
                            tally.takeovers.append(time.monotonic() - t0)
                        return
                    time.sleep(0.1)
            threading.Thread(target=watch, daemon=True).start()

        def restart(m: Member = victim) -> None:
            with m.lock:
                try:
                    m.start()
                except Exception as e:
                    tally.error("restart", e)
        thread = threading.Thread(target=restart, daemon=True)
        thread.start()
        restarts.append(thread)
    for thread in restarts:
        thread.join(600)


# ---------------------------------------------------------------- checks at the end

def check_objects(cluster: Cluster, tally: Tally) -> dict[str, int]:
    live = cluster.live()
    with CatalogClient(cluster.addresses[live[0].index], timeout=60) as client:
        present = set(f"main.{DB}.{t}" for t in client.list_tables(f"main.{DB}"))
    lost = sum(1 for name in tally.created - tally.dropped - tally.unsure if name not in present)
    resurrected = sum(1 for name in tally.dropped - tally.unsure if name in present)
    return {"objects_lost": lost, "objects_duplicated_or_resurrected": resurrected,
            "objects_checked": len((tally.created | tally.dropped) - tally.unsure)}


def check_commits(cluster: Cluster, tally: Tally) -> dict[str, int]:
    lost = 0
    total = 0
    ports = [m.hms_port for m in cluster.live()]
    hms = Hms(ports, 0)
    try:
        for table, commits in tally.commits.items():
            total += len(commits)
            previous = dict(commits)
            head = (hms.call(lambda c, t=table: c.get_table(DB, t)).parameters or {}).get(POINTER, "")
            chain: set[str] = set()
            while head and head not in chain:
                chain.add(head)
                head = previous.get(head, "")
            lost += sum(1 for new, _ in commits if new not in chain)
    finally:
        hms.close()
    return {"commits_acknowledged": total, "commits_lost": lost}


def check_refreshes(cluster: Cluster, tables: list[str]) -> dict[str, Any]:
    runs: dict[str, dict[str, Any]] = {}
    for member in cluster.live():
        with contextlib.suppress(CatalogError), CatalogClient(cluster.addresses[member.index], timeout=60) as c:
            for table in tables:
                for run in c.dynamic_table_history(table, limit=1000):
                    runs[run.id] = {"table": table, "trigger": run.trigger, "schedule_time": run.schedule_time,
                                    "status": run.status.value, "error": run.error}
    slots = Counter((r["table"], r["schedule_time"]) for r in runs.values()
                    if r["trigger"] == "schedule" and r["schedule_time"])
    return {"refresh_runs": len(runs), "refreshes_run_twice": sum(n - 1 for n in slots.values() if n > 1),
            "refresh_statuses": dict(Counter(r["status"] for r in runs.values())),
            # Why runs failed (numbers masked so that alike errors count together).
            "refresh_errors": dict(Counter(re.sub(r"\d+", "N", r["error"])[:200] for r in runs.values()
                                           if r["error"]))}


# ---------------------------------------------------------------- PostgreSQL vs Derby

def get_table_latency(root: Path, name: str, catalog: dict[str, Any], calls: int) -> dict[str, Any]:
    member = Member(0, write_config(root / f"{name}.yaml", port=free_port(), http_port=free_port(),
                                    data_dir=root / name, catalogs=[catalog],
                                    extra={"cache": {"ttl": "0s"}, "staging": {"secret": SECRET},
                                           "dynamic-tables": {"enabled": False, "warm-analyzer": False}}),
                    root / name, root / f"{name}.log", 0)
    member.start()
    try:
        assert member.daemon is not None
        host, port = member.daemon.hms_address
        client = hmsclient.HMSClient(host=host, port=port)
        client.open()
        try:
            database = f"lat_{name}"
            with contextlib.suppress(Exception):
                client.create_database(ttypes.Database(name=database, parameters={}))
            with CatalogClient(member.daemon.address, timeout=60) as c:
                c.create_table(f"main.{database}.t", "id bigint, v string", if_not_exists=True)
            for _ in range(50):
                client.get_table(database, "t")
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                client.get_table(database, "t")
                times.append(time.perf_counter() - start)
        finally:
            client.close()
        return {"calls": calls, "p50_ms": _ms(statistics.median(times)), "p99_ms": _ms(percentile(times, 0.99))}
    finally:
        member.stop()


# ---------------------------------------------------------------- main

@contextlib.contextmanager
def threads(targets: list[Callable[[], None]]) -> Iterator[None]:
    started = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in started:
        t.start()
    try:
        yield
    finally:
        for t in started:
            t.join(120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=300.0)
    parser.add_argument("--kill-every", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--dynamic-tables", type=int, default=2)
    parser.add_argument("--compare-calls", type=int, default=2000)
    parser.add_argument("--think", type=float, default=0.02, help="seconds between a reader's calls")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()

    import logging
    import tempfile
    # Thrift logs every refused connection of a failing-over client: expected here, not news.
    logging.getLogger("thrift").setLevel(logging.CRITICAL)
    root = Path(tempfile.mkdtemp(prefix="catalogd-ha-"))
    # Leadership is in the code when the server has a leader module (it exports catalogd_leader).
    leadership_code = importlib.util.find_spec("catalogd.server.leader") is not None
    machine = {"cpus": os.cpu_count(), "python": platform.python_version()}
    result: dict[str, Any] = {"benchmark": "ha", "machine": machine,
                              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    tally = Tally()
    with running_postgres() as postgres:
        cluster = Cluster(root, postgres, args.members, dynamic_everywhere=leadership_code)
        try:
            t0 = time.monotonic()
            cluster.start()
            result["cluster_start_s"] = round(time.monotonic() - t0, 1)
            with CatalogClient(cluster.servers(0), timeout=120) as c:
                c.create_database(f"main.{DB}")
                for k in range(COMMIT_TABLES):
                    c.create_table(f"main.{DB}.c{k}", "id bigint")
                c.create_table(f"main.{DB}.probe", "id bigint")
                c.create_table(f"main.{DB}.src", "id bigint, v string")
                dynamic: list[str] = []
                for k in range(args.dynamic_tables):
                    name = f"main.{DB}.dyn{k}"
                    try:
                        c.create_dynamic_table(name, f"SELECT id, v FROM {DB}.src", "1 MINUTE", refresh_mode="FULL")
                        dynamic.append(name)
                    except CatalogError as e:
                        result.setdefault("dynamic_table_errors", []).append(f"{name}: {e}")
            shared, why = locks_shared(cluster)
            leaders = cluster.leaders()
            leadership = leaders is not None
            result["features"] = {"locks_shared": shared, "locks_probe": why,
                                  "leadership": leadership, "leaders_at_start": leaders}
            n = args.clients
            readers = n // 2
            ddls = n // 4
            committers = n - readers - ddls if shared else 0
            readers += (n - readers - ddls) if not shared else 0
            result["clients"] = {"readers": readers, "ddl": ddls, "committers": committers}
            stop = threading.Event()
            work: list[Callable[[], None]] = []
            work += [lambda i=i: reader(cluster, tally, i, stop, args.think) for i in range(readers)]
            work += [lambda i=i: ddl(cluster, tally, i, stop) for i in range(ddls)]
            work += [lambda i=i: committer(cluster, tally, i, stop) for i in range(committers)]
            work += [lambda: prober(cluster, tally, stop)]
            work += [lambda: killer(cluster, tally, args.kill_every, stop, leadership)]
            started = time.monotonic()
            with threads(work):
                time.sleep(args.duration)
                stop.set()
            elapsed = time.monotonic() - started
            # Every member back before the checks.
            for member in cluster.members:
                with member.lock:
                    if not member.up:
                        member.start()
            ops = sum(tally.ops.values())
            result["operations"] = {"total": ops, "per_second": round(ops / elapsed, 1), **dict(tally.ops)}
            result["kills"] = {"kills": tally.kills, "leader_kills": tally.leader_kills,
                               "skipped_one_member_left": tally.skipped_kills}
            result["client_visible_errors_after_failover"] = {
                "idempotent_calls": tally.errors["read"],
                "non_idempotent_lost_in_flight": tally.ambiguous,
                "other_write_errors": tally.errors["ddl"] + tally.errors["commit"] + tally.errors["lock"],
                "reads_shed_under_load": tally.errors["read-shed"],
                "by_kind": dict(tally.errors), "goal": 0,
                "by_message": dict(tally.messages.most_common(12))}
            result.update(check_objects(cluster, tally))
            if shared:
                result.update(check_commits(cluster, tally))
                result["two_holders_of_one_exclusive_lock"] = tally.two_holders
                result["lock_waits_over_60s"] = tally.lock_timeouts
            else:
                result["commits_lost"] = NA
                result["two_holders_of_one_exclusive_lock"] = NA
            refreshes = check_refreshes(cluster, dynamic) if dynamic else {}
            result.update(refreshes)
            if not leadership and dynamic:
                result["refresh_note"] = "no leader election: dynamic tables run on the first member only"
            if leadership:
                result["takeover_s"] = {"n": len(tally.takeovers), "p50": _r(percentile(tally.takeovers, 0.5)),
                                        "p99": _r(percentile(tally.takeovers, 0.99)), "goal_p99": 10.0}
            else:
                result["takeover_s"] = NA
            result["cross_daemon_staleness_ms"] = {
                "n": len(tally.staleness), "p50": _ms(percentile(tally.staleness, 0.5)),
                "p99": _ms(percentile(tally.staleness, 0.99)), "max": _ms(max(tally.staleness, default=None)),
                "over_10s": tally.stale_timeouts, "goal_p99": 1000.0, "cache_ttl_s": 60,
                "definition": "write acknowledged through X until the start of the first read through Y "
                              "that sees it (reads started earlier saw the old value)",
                "first_fresh_answer_ms": {"p50": _ms(percentile(tally.seen, 0.5)),
                                          "p99": _ms(percentile(tally.seen, 0.99))}}
        finally:
            cluster.stop()
        # One daemon each, the cache off: the metastore database's own cost under get_table.
        pg_url = postgres.url(postgres.create_database("lat"), password=True)
        result["single_daemon_get_table"] = {
            "postgresql": get_table_latency(root, "pg", embedded_catalog("main", **{"metastore-db": pg_url}),
                                            args.compare_calls),
            "derby": get_table_latency(root, "derby", embedded_catalog("main"), args.compare_calls),
            "cache": "off (cache.ttl 0s)"}
    shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


if __name__ == "__main__":
    sys.exit(main())
