"""The HTTP API's JSON shapes as pydantic models: camelCase on the wire, catalogd.model inside.

The OpenAPI document is generated from these, so the enums come from ``catalogd.model``
and a field added here shows in the document by itself.
"""

from __future__ import annotations

import dataclasses

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from catalogd import model
from catalogd.dynamic.jobconf import REQUEST_SETTINGS
from catalogd.errors import InvalidArgumentError
from catalogd.model import TRIGGERS, RunStatus
from catalogd.server.overview import target_seconds, why_not_fresh

#: The request fields in the order they are checked (the first bad one is reported).
REQUEST_FIELDS = ("tables", "scheduleTime", "configuration", "partition")

_FIELD_PROBLEMS = {
    "tables": '"tables" must be a non-empty list of dynamic table names',
    "scheduleTime": '"scheduleTime" must be a string like "2024-03-02 00:00:00"',
    "configuration": '"configuration" must be an object of strings',
    "partition": '"partition" must be an object of strings',
}


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True)


class RefreshRequest(_Camel):
    """``POST /v3/dynamic-tables/refresh``: which tables, for which time or partition, with which settings."""

    model_config = ConfigDict(extra="forbid", strict=True, title="RefreshRequest",
                              validate_by_name=False, validate_by_alias=True, alias_generator=to_camel)

    tables: list[str] = Field(min_length=1, examples=[["main.sales.daily"]],
                              description="dynamic table names (catalog.database.table)")
    schedule_time: str | None = Field(default=None, examples=["2024-03-02 00:00:00"],
                                      description="dynamic-tables.time-zone unless it has an offset; with "
                                                  "partition.fields.<col>.date-formatter it picks the partition "
                                                  "format(scheduleTime - freshness)")
    configuration: dict[str, str] | None = Field(
        default=None, examples=[{"spark.executor.memory": "4g", "spark.sql.shuffle.partitions": "64"}],
        description="extra Spark settings for the job: resources and SQL tuning only; any other key is a 400 "
                    "naming it. Allowed: " + ", ".join(sorted(REQUEST_SETTINGS)))
    partition: dict[str, str] | None = Field(default=None, examples=[{"ds": "2024-03-01"}],
                                             description="refresh exactly this partition")

    @classmethod
    def parse(cls, body: object) -> RefreshRequest:
        """Validate a decoded JSON body.

        Raises:
            InvalidArgumentError: not an object, a bad field (the first, in REQUEST_FIELDS order) or
                unknown fields.
        """
        if not isinstance(body, dict):
            raise InvalidArgumentError("the body must be a JSON object")
        # An empty or null configuration or partition means none (as it always has).
        body = {k: (None if k in ("configuration", "partition") and not v else v) for k, v in body.items()}
        try:
            return cls.model_validate(body)
        except ValidationError as e:
            errors = e.errors()
        bad = {str(err["loc"][0]) for err in errors if err["loc"] and err["type"] != "extra_forbidden"}
        for name in REQUEST_FIELDS:
            if name in bad:
                raise InvalidArgumentError(_FIELD_PROBLEMS[name]) from None
        unknown = sorted(str(err["loc"][0]) for err in errors if err["type"] == "extra_forbidden")
        raise InvalidArgumentError(f"unknown field(s) {unknown}: use {', '.join(REQUEST_FIELDS)}") from None


class RefreshRun(_Camel):
    """One refresh of one dynamic table (or one lifetime of a continuous job): a ``model.RefreshRun``."""

    id: str
    table: str = Field(examples=["main.sales.daily"])
    trigger: str = Field(json_schema_extra={"enum": list(TRIGGERS)})
    status: RunStatus
    schedule_time: str | None = Field(default=None, examples=["2024-03-02 00:00:00+00:00"])
    partition: dict[str, str] = Field(default_factory=dict, examples=[{"ds": "2024-03-01"}])
    submitted: float | None = Field(default=None, description="seconds since the epoch")
    started: float | None = None
    ended: float | None = None
    error: str | None = None
    rows: int | None = Field(default=None, description="rows written")
    application_id: str | None = Field(default=None, description="the Spark application")
    input_files: int | None = Field(default=None, description="files read after partition pruning")
    source_partitions: list[str] = Field(default_factory=list)
    phase: str | None = Field(default=None, description="starting, planning, writing, committing")
    fired: float | None = Field(default=None, description="the scheduler's fire time")

    @classmethod
    def of(cls, run: model.RefreshRun) -> RefreshRun:
        return cls.model_validate(dataclasses.asdict(run))


class RefreshJob(_Camel):
    """A refresh request, the runs it started or joined: a ``model.RefreshJob``."""

    job_id: str
    status: RunStatus = Field(description="SUCCEEDED when every run did; FAILED when all ended and one failed")
    error: str | None = None
    cluster_info: dict[str, str] = Field(examples=[{"master": "local[2]", "deployMode": "client"}])
    runs: list[RefreshRun]

    @classmethod
    def of(cls, job: model.RefreshJob) -> RefreshJob:
        return cls(job_id=job.id, status=job.status, error=job.error, cluster_info=job.cluster_info,
                   runs=[RefreshRun.of(r) for r in job.runs])


class ErrorDetail(BaseModel):
    kind: str = Field(examples=["invalid-argument"], description="the catalogd error kind")
    message: str


class Error(BaseModel):
    """Every error answer: ``{"error": {"kind", "message"}}``."""

    error: ErrorDetail

    @classmethod
    def of(cls, kind: str, message: str) -> Error:
        return cls(error=ErrorDetail(kind=kind, message=message))


class Health(BaseModel):
    status: str = Field(examples=["ok"])


class Readiness(BaseModel):
    status: str = Field(examples=["ready"], description='"ready" or "not ready"')
    catalogs: dict[str, str] = Field(description='per catalog "ok" or the problem',
                                     examples=[{"main": "ok"}])


class DynamicTableStatus(_Camel):
    """One dynamic table as an operator first asks about it: fresh or not, and why not."""

    name: str = Field(examples=["main.sales.daily_totals"])
    state: str = Field(examples=["RUNNING"], description="INITIALIZING, RUNNING or SUSPENDED")
    refresh_mode: str = Field(examples=["FULL"])
    freshness: str = Field(examples=["INTERVAL '1' HOUR"], description="the freshness target as written")
    target_seconds: float | None = Field(default=None, description="the target in seconds")
    lag_seconds: float | None = Field(default=None, description="seconds since the data was current; null: never "
                                                                "refreshed")
    within_target: bool | None = None
    reason: str | None = Field(default=None, description="why the table is not within its target")
    schedule: str | None = Field(default=None, description="Quartz cron of a FULL refresh")
    last_refresh: RefreshRun | None = None

    @classmethod
    def of(cls, dt: model.DynamicTable) -> DynamicTableStatus:
        return cls(name=dt.full_name, state=dt.state.value, refresh_mode=dt.refresh_mode.value,
                   freshness=dt.freshness, target_seconds=target_seconds(dt), lag_seconds=dt.freshness_lag,
                   within_target=dt.within_target, reason=why_not_fresh(dt), schedule=dt.schedule,
                   last_refresh=RefreshRun.of(dt.last_refresh) if dt.last_refresh is not None else None)


class DynamicTableList(_Camel):
    tables: list[DynamicTableStatus]


class RunHistory(_Camel):
    """A dynamic table's recorded runs, newest first, and its freshness lag over time rebuilt from them."""

    table: str
    target_seconds: float | None = None
    runs: list[RefreshRun]
    lag: list[tuple[float, float]] = Field(description="[time (seconds since the epoch), lag (seconds)] points")


class StageStatus(_Camel):
    """An open stage: what it will become, whose it is and how long its lease has left."""

    id: str
    target: str = Field(examples=["main.sales.daily_totals"])
    purpose: str
    state: str
    owner: str | None = None
    created: int | None = Field(default=None, description="milliseconds since the epoch")
    lease_left_seconds: float | None = Field(default=None, description="negative: overdue")


class StageList(_Camel):
    stages: list[StageStatus]


class CacheHealth(_Camel):
    enabled: bool = False
    hits: int = 0
    misses: int = 0
    hit_rate: float | None = None
    entries: int = 0
    bytes: int = 0


class ClusterHealth(_Camel):
    members: list[str] = Field(default_factory=list, description="host:port of each configured member")
    leader: str | None = Field(default=None,
                               description="the member that leads, as this member sees the lease (null: none seen yet)")
    leading: bool = Field(default=True, description="whether this member does the background work now")
    epoch: int = Field(default=0, description="the latest leadership term (0: none; a single daemon leads alone)")
    since: float | None = Field(default=None, description="when the latest term was taken, epoch seconds")
    lease_age: float | None = Field(default=None, description="seconds since the leader's heartbeat last changed")


class HealthReport(_Camel):
    """The daemon at a glance: each catalog's metastore, the metadata cache, connections, the cluster."""

    metastores: dict[str, str] = Field(description='per catalog "up" or the problem', examples=[{"main": "up"}])
    cache: CacheHealth
    connections: dict[str, dict[str, int]] = Field(description="per server (thrift, hms) its connection counts")
    cluster: ClusterHealth
