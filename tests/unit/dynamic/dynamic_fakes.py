"""Stand-ins for the dynamic-table service's unit tests: a clock, job processes, a runner,
and the HMS-facing parts (records, job factory, catalogs). No Spark, no metastore."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from catalogd.auth.model import Authority
from catalogd.dynamic.freshness import parse_freshness
from catalogd.dynamic.jobspec import JobFactory
from catalogd.dynamic.registry import Entry, Stream
from catalogd.model import RefreshMode, RefreshRun, RefreshState


class FakeClock:
    """Epoch seconds that move only when a test says so."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FakeProc:
    """A job process: running until ``exit`` (or a stop) gives it a return code."""

    _next_pid = 40000

    def __init__(self) -> None:
        FakeProc._next_pid += 1
        self.pid = FakeProc._next_pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def exit(self, code: int = 1) -> None:
        self.returncode = code


class FakeRunner:
    """Launches FakeProcs; ``json`` answers ``read_json`` by path; ``on_stop`` sees each stop."""

    def __init__(self) -> None:
        self.launched: list[tuple[FakeProc, dict[str, Any], Path]] = []
        self.stopped: list[FakeProc] = []
        self.json: dict[Path, dict[str, Any]] = {}
        self.on_stop: Any = None
        #: The environment each launch added (a job's token), in launch order.
        self.envs: list[dict[str, str]] = []
        self.lock = threading.Lock()

    def spark_submit_path(self) -> Path:
        return Path("/fake/spark-submit")

    def launch(self, master: str, conf: dict[str, str], spec: dict[str, Any], work_dir: Path,
               env: dict[str, str] | None = None) -> FakeProc:
        proc = FakeProc()
        with self.lock:
            self.launched.append((proc, spec, work_dir))
            self.envs.append(dict(env or {}))
        return proc

    def stop(self, proc: FakeProc, grace: float) -> None:
        self.stop_all([proc], grace)

    def stop_all(self, procs: Iterable[FakeProc], grace: float) -> None:
        for proc in procs:
            if self.on_stop is not None:
                self.on_stop(proc)
            if proc.returncode is None:
                proc.returncode = -15
            with self.lock:
                self.stopped.append(proc)

    def read_json(self, path: Path) -> dict[str, Any]:
        return dict(self.json.get(path, {}))

    def log_tail(self, work_dir: Path, lines: int = 5) -> str:
        return "(log)"


class FakeRecords:
    """Keeps what would go to HMS: copies of each recorded run, and handler writes."""

    def __init__(self) -> None:
        self.recorded: list[RefreshRun] = []
        self.handlers = 0
        self.updates: list[dict[str, str]] = []

    def record(self, entry: Entry, run: RefreshRun, extra: dict[str, str] | None = None) -> None:
        self.recorded.append(RefreshRun(**run.__dict__))
        if extra:
            self.updates.append(dict(extra))

    def set_handler(self, entry: Entry, detail: dict[str, Any] | None = None) -> None:
        self.handlers += 1

    def update(self, entry: Entry, set: dict[str, str], remove: tuple[str, ...] = ()) -> dict[str, str]:
        self.updates.append(dict(set))
        return dict(set)


class FakeJobs:
    """The job factory's files and tokens (the real token methods, with ``authority``), no metastore."""

    def __init__(self, root: Path, authority: Authority | None = None) -> None:
        self.root = root
        self.authority = authority

    mint_token = JobFactory.mint_token
    revoke_token = JobFactory.revoke_token
    job_env = staticmethod(JobFactory.job_env)

    def spark_conf(self, catalog: object, extra: dict[str, str] | None = None) -> dict[str, str]:
        return dict(extra or {})

    def run_conf(self, entry: Entry, extra: dict[str, str] | None = None) -> dict[str, str]:
        return dict(extra or {})

    def catalog_env(self, entry: Entry) -> dict[str, str]:
        return {}

    def catalog_password(self, entry: Entry) -> str | None:
        return None

    def table_dir(self, entry: Entry) -> Path:
        return self.root / entry.catalog / entry.database / entry.name

    def checkpoint(self, entry: Entry) -> Path:
        return self.table_dir(entry) / "checkpoint"

    def runs_dir(self) -> Path:
        return self.root / "runs"

    def spec(self, entry: Entry, work_dir: Path, mode: str, partition: dict[str, str] | None = None,
             run_id: str | None = None) -> dict[str, Any]:
        return {"mode": mode, "table": entry.full_name, "partition": partition, "trigger_seconds": 5}


class FakeManager:
    def catalog(self, name: str | None = None) -> object:
        return SimpleNamespace(name=name)


def config(max_concurrent: int = 2, grace: float = 1.0, max_queued: int = 100) -> Any:
    """The parts of a Config the service reads."""
    return SimpleNamespace(
        server=SimpleNamespace(shutdown_grace=datetime.timedelta(seconds=grace)),
        spark=SimpleNamespace(master="local[1]", conf={}),
        dynamic_tables=SimpleNamespace(refresh_timeout=datetime.timedelta(hours=2), time_zone="UTC",
                                       max_concurrent_refreshes=max_concurrent, history_size=50,
                                       max_queued_refreshes_per_table=max_queued),
    )


def entry(name: str = "t", freshness: str = "10 seconds", mode: RefreshMode = RefreshMode.CONTINUOUS,
          state: RefreshState = RefreshState.RUNNING) -> Entry:
    made = Entry("main", "db", name, parse_freshness(freshness), mode, state)
    if mode is RefreshMode.CONTINUOUS:
        made.stream = Stream()
    return made
