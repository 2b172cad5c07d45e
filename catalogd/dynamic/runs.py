"""The refresh runs and jobs of the last hours, in memory: by id, and live over HMS history.

A run is one refresh of one table (a batch run, or the life of a streaming job); a job
is one refresh request, with one run per table. HMS keeps each table's history; this
index keeps the live view (phase, rows so far) and what ``get_job`` answers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from catalogd.dynamic.run_events import RunEvents
from catalogd.errors import NotFoundError
from catalogd.model import RefreshJob, RefreshRun, RunStatus

#: Jobs (and finished runs) kept for ``get_job``.
MAX_JOBS = 1000
#: How the error of a run the daemon's stop (or death) cut off begins; the tests look for it.
CUT_OFF = "the daemon stopped"
STOPPED = f"{CUT_OFF} during the run"

#: What two requests refresh alike: the table and the partition (sorted items).
RunKey = tuple[str, tuple[tuple[str, str], ...]]


def run_key(table: str, partition: dict[str, str]) -> RunKey:
    return table, tuple(sorted(partition.items()))


class RunIndex:
    """Runs by id, jobs by id, and the run going for each (table, partition).

    Args:
        master: the Spark master, for the cluster info of a run looked up as a job.
    """

    def __init__(self, master: str) -> None:
        self.master = master
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, RefreshRun] = OrderedDict()
        self._jobs: OrderedDict[str, RefreshJob] = OrderedDict()
        self._active: dict[RunKey, str] = {}
        #: The job that started each run (a request that only joins it answers that job).
        self._origin: dict[str, str] = {}
        #: Wakes the long polls waiting for runs to end (``ended``).
        self.events = RunEvents()

    def ended(self, run_id: str) -> None:
        """The run's final state (status and end time) is written: wake whoever waits for it."""
        self.events.ended(run_id)

    def add(self, run: RefreshRun) -> None:
        with self._lock:
            self._runs[run.id] = run

    def start(self, key: RunKey, run: RefreshRun) -> RefreshRun:
        """Register a new run as the one going for ``key``, unless another is going: that one."""
        with self._lock:
            joined = self._runs.get(self._active.get(key) or "")
            if joined is not None and not joined.status.finished:
                return joined
            self._runs[run.id] = run
            self._active[key] = run.id
            self._evict()
            return run

    def going(self, key: RunKey) -> RefreshRun | None:
        """The run waiting or going for ``key`` (a request for it would join it), if any."""
        with self._lock:
            run = self._runs.get(self._active.get(key) or "")
            return run if run is not None and not run.status.finished else None

    def job_of(self, run_id: str) -> str | None:
        """The id of the job that started ``run_id`` (None: unknown, or forgotten)."""
        with self._lock:
            job_id = self._origin.get(run_id)
            return job_id if job_id in self._jobs else None

    def release(self, key: RunKey, run_id: str) -> None:
        """``run_id`` is no longer the run going for ``key``."""
        with self._lock:
            if self._active.get(key) == run_id:
                del self._active[key]

    def _evict(self) -> None:
        """Forget the oldest finished runs beyond the limit (never a run still going)."""
        finished = [run_id for run_id, r in self._runs.items() if r.status.finished]
        for run_id in finished[:max(0, len(self._runs) - MAX_JOBS)]:
            del self._runs[run_id]
            self._origin.pop(run_id, None)

    def live(self, table: str) -> dict[str, RefreshRun]:
        """The runs of ``table`` this daemon knows, by id."""
        with self._lock:
            return {r.id: r for r in self._runs.values() if r.table == table}

    def get(self, run_id: str) -> RefreshRun | None:
        with self._lock:
            return self._runs.get(run_id)

    def unfinished_ids(self) -> set[str]:
        with self._lock:
            return {run_id for run_id, r in self._runs.items() if not r.status.finished}

    def table_of(self, run_id: str) -> str | None:
        with self._lock:
            run = self._runs.get(run_id)
            return run.table if run is not None else None

    def add_job(self, job: RefreshJob) -> None:
        with self._lock:
            self._jobs[job.id] = job
            for run in job.runs:
                self._origin.setdefault(run.id, job.id)
            while len(self._jobs) > MAX_JOBS:
                self._jobs.popitem(last=False)

    def get_job(self, job_id: str) -> RefreshJob:
        """A refresh request's status (a copy): SUCCEEDED when all its runs did, FAILED when one failed.

        Raises:
            NotFoundError: no such job (jobs of a previous daemon: see ``history``).
        """
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                # A run id works too (the history shows those).
                run = self._runs.get(job_id)
                if run is None:
                    raise NotFoundError(f"no refresh job {job_id!r} (this daemon keeps the last {MAX_JOBS}; "
                                        "older runs are in `catalogd dt history`)")
                job = RefreshJob(id=run.id, status=run.status, runs=[run], cluster_info={"master": self.master})
            statuses = [r.status for r in job.runs]
            if all(s is RunStatus.SUCCEEDED for s in statuses):
                job.status = RunStatus.SUCCEEDED
            elif all(s.finished for s in statuses):
                job.status = RunStatus.FAILED
                job.error = "; ".join(f"{r.table}: {r.error}" for r in job.runs if r.status is RunStatus.FAILED)
            elif any(s is not RunStatus.PENDING for s in statuses):
                job.status = RunStatus.RUNNING
            else:
                job.status = RunStatus.PENDING
            apps = [r.application_id for r in job.runs if r.application_id]
            if apps:
                job.cluster_info["applicationIds"] = ",".join(apps)
            return RefreshJob(id=job.id, status=job.status, runs=[RefreshRun(**r.__dict__) for r in job.runs],
                              cluster_info=dict(job.cluster_info), error=job.error)
