"""Stand-ins for the HTTP app's unit tests (test_http_app.py, test_http_auth.py): a manager that answers
``ping`` and a dynamic-table service that records its calls."""

from __future__ import annotations

from typing import Any

from catalogd.errors import NotFoundError
from catalogd.model import RefreshJob, RefreshRun, RunStatus

RUN = RefreshRun(id="r1", table="main.sales.daily", trigger="api", status=RunStatus.SUCCEEDED,
                 schedule_time="2024-03-02 00:00:00+00:00", partition={"ds": "2024-03-01"}, submitted=1.5,
                 started=2.5, ended=3.5, rows=7, application_id="app-1", input_files=2,
                 source_partitions=["ds=2024-03-01"], phase=None, fired=1.0)


class FakeManager:
    def __init__(self) -> None:
        self.problems: dict[str, str | None] = {"main": None, "scratch": None}

    def ping(self) -> dict[str, str | None]:
        return dict(self.problems)


class FakeDynamic:
    """Records calls; raises ``error`` when set."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.error: Exception | None = None

    def refresh(self, tables: list[str], schedule_time: str | None = None, partition: dict[str, str] | None = None,
                configuration: dict[str, str] | None = None, trigger: str = "manual") -> RefreshJob:
        self.calls.append(("refresh", tables, schedule_time, partition, configuration, trigger))
        if self.error is not None:
            raise self.error
        return RefreshJob(id="job-1", status=RunStatus.PENDING, runs=[RUN], cluster_info={"master": "local[1]"})

    async def wait_job(self, job_id: str, wait: float) -> RefreshJob:
        self.calls.append(("wait_job", job_id, wait))
        return self._job(job_id)

    def get_job(self, job_id: str, wait: float = 0.0) -> RefreshJob:
        self.calls.append(("get_job", job_id))
        return self._job(job_id)

    def _job(self, job_id: str) -> RefreshJob:
        if self.error is not None:
            raise self.error
        if job_id != "job-1":
            raise NotFoundError(f"no refresh job {job_id!r}")
        return RefreshJob(id="job-1", status=RunStatus.FAILED, runs=[RUN], cluster_info={"master": "local[1]"},
                          error="main.sales.daily: boom")
