"""A stand-in for ``catalogd.client.CatalogClient`` that answers every CLI call with fixed model objects.

It records each call, so a test sees both what a command asked the daemon and what it printed.
Names containing ``missing`` fail with not-found; ``fail_on`` makes one method raise a given error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from catalogd.errors import CatalogError, NotFoundError
from catalogd.model import (
    CatalogInfo,
    ClusterStatus,
    Column,
    Database,
    DynamicTable,
    Function,
    FunctionLanguage,
    MemberStatus,
    Partition,
    RefreshJob,
    RefreshMode,
    RefreshRun,
    RefreshState,
    ReloadResult,
    Resource,
    RunStatus,
    Stage,
    StagePurpose,
    StageState,
    StatementResult,
    Statistics,
    Table,
    TableFormat,
    TableKind,
)

#: The daemon's Iceberg REST catalog, as catalog infos carry it.
ICEBERG_URI = "http://127.0.0.1:9191/iceberg"

CATALOGS = [
    CatalogInfo("main", "hive", default=True, metastore="thrift://127.0.0.1:9083", warehouse="file:///wh",
                iceberg_uri=ICEBERG_URI),
    CatalogInfo("ro", "hive", read_only=True, metastore="thrift://127.0.0.1:9084", atomic_writes=False,
                iceberg_uri=ICEBERG_URI),
    CatalogInfo("scratch", "memory", default_database="tmp", atomic_writes=False, iceberg_uri=ICEBERG_URI),
]

DATABASE = Database("sales", "main", comment="Sales data", location="file:///wh/sales.db",
                    properties={"tier": "gold", "team": "data"}, owner="etl")
BARE_DATABASE = Database("bare", "scratch")

ORDERS = Table(
    "orders", "sales", "main",
    columns=[Column("id", "bigint", "order id"), Column("amount", "decimal(10,2)")],
    partition_keys=[Column("ds", "string")],
    format=TableFormat.ORC, location="file:///wh/sales.db/orders", comment="orders by day",
    properties={"sla": "1h", "owner.team": "data"}, owner="etl", created=1700000000,
    statistics=Statistics(row_count=1234567, total_size=2048, file_count=None),
)
RAW = Table("raw", "sales", "main", columns=[Column("line", "string")], format=None, kind=TableKind.EXTERNAL)

VIEW = Table(
    "recent", "sales", "main", columns=[Column("id", "bigint"), Column("amount", "decimal(10,2)", "EUR")],
    format=None, kind=TableKind.VIEW, comment="last week", properties={"k": "v"}, owner="etl", created=1700000100,
    view_text="SELECT id, amount FROM orders",
    view_expanded_text="SELECT `orders`.`id`, `orders`.`amount` FROM `main`.`sales`.`orders`",
)

#: A dynamic table as ``table describe`` sees it: a managed table with catalogd's parameters.
DAILY_TABLE = Table(
    "daily", "sales", "main", columns=[Column("n", "bigint")], partition_keys=[Column("ds", "string")],
    format=TableFormat.PARQUET, location="file:///wh/sales.db/daily", comment="daily counts", owner="etl",
    created=1709300000,
    properties={"partition.fields.ds.date-formatter": "yyyy-MM-dd", "catalogd.dt.freshness": "1 DAY",
                "catalogd.dt.query.0": "SELECT ds, count(*) AS n FROM orders GROUP BY ds",
                "catalogd.dt.history.0": '[{"id": "r1", "status": "SUCCEEDED"}]', "catalogd.last-commit": "st2"},
)

FUNCTION = Function("to_eur", "sales", "main", class_name="com.example.ToEur", language=FunctionLanguage.SCALA,
                    resources=[Resource("jar", "file:///udfs/eur.jar"), Resource("file", "file:///udfs/rates.csv")],
                    owner="etl", created=1700000200)
BARE_FUNCTION = Function("clean", "sales", "main", class_name="udfs:clean", language=FunctionLanguage.PYTHON)

PARTITIONS = [
    Partition(["2024-03-01", "01"], ["ds", "hr"], location="file:///wh/sales.db/orders/ds=2024-03-01/hr=01",
              properties={"numRows": "10"}, created=1700000300, statistics=Statistics(10, 512, 1)),
    Partition(["2024-03-02", "00"], ["ds", "hr"], location=None),
]

OPEN_STAGE = Stage("st1", "main", "sales", "orders", StagePurpose.CREATE, StageState.OPEN, owner="me@host:1",
                   created=1700000000123, lease_deadline=1700000300456, staging_table="__catalogd_stage_ab12")
COMMITTED_STAGE = Stage("st2", "main", "sales", "orders", StagePurpose.REPLACE, StageState.COMMITTED,
                        owner="me@host:1", created=1700000000000, message="replaced main.sales.orders")
QUIET_COMMIT = Stage("st3", "main", "sales", "orders", StagePurpose.CREATE, StageState.COMMITTED)
ABORTED_STAGE = Stage("st4", "main", "sales", "orders", StagePurpose.CREATE_IF_NOT_EXISTS, StageState.ABORTED,
                      message="the target exists already")

RUN_OK = RefreshRun("r1", "main.sales.daily", "schedule", RunStatus.SUCCEEDED, schedule_time="2024-03-02 00:00:00",
                    partition={"ds": "2024-03-01"}, submitted=1709337600.0, started=1709337601.5,
                    ended=1709337612.75, rows=42, application_id="local-1", input_files=3,
                    source_partitions=["ds=2024-03-01"], phase=None, fired=1709337600.0)
RUN_FAILED = RefreshRun("r2", "main.sales.daily", "manual", RunStatus.FAILED, started=1709337700.0,
                        ended=1709337705.0, error="AnalysisException: no such column x")
RUN_PENDING = RefreshRun("r3", "main.sales.daily", "manual", RunStatus.PENDING)
RUN_WRITING = RefreshRun("r4", "main.sales.daily", "manual", RunStatus.RUNNING, partition={"ds": "2024-03-01"},
                         started=1709337800.0, phase="writing")
RUN_WRITTEN = RefreshRun("r4", "main.sales.daily", "manual", RunStatus.SUCCEEDED, partition={"ds": "2024-03-01"},
                         started=1709337800.0, ended=1709337810.0, rows=7)

DAILY = DynamicTable(
    "main", "sales", "daily", query="SELECT ds, count(*) AS n FROM orders GROUP BY ds", freshness="1 DAY",
    expanded_query="SELECT `ds`, count(*) AS `n` FROM `main`.`sales`.`orders` GROUP BY `ds`",
    refresh_mode=RefreshMode.FULL, state=RefreshState.RUNNING,
    job_detail={"schedule": "0 0 0 * * ?", "next": "2024-03-03 00:00:00"},
    columns=[Column("n", "bigint")], partition_keys=[Column("ds", "string")],
    options={"partition.fields.ds.date-formatter": "yyyy-MM-dd"}, comment="daily counts", schedule="0 0 0 * * ?",
    created=1709300000, last_refresh=RUN_OK, freshness_lag=3600.25, within_target=True,
)
LIVE = DynamicTable(
    "main", "sales", "live", query="SELECT * FROM orders", freshness="30 SECOND", declared_mode=RefreshMode.CONTINUOUS,
    refresh_mode=RefreshMode.CONTINUOUS, state=RefreshState.SUSPENDED, columns=[Column("id", "bigint")],
)
LATE = DynamicTable("main", "sales", "late", query="SELECT 1 AS x", freshness="1 HOUR", last_refresh=RUN_FAILED,
                    freshness_lag=7300.0, within_target=False)
#: The README's example after its refresh of 2024-03-02: the data is as of that schedule time.
OLD = DynamicTable(
    "main", "sales", "old", query="SELECT ds, count(*) AS n FROM orders GROUP BY ds", freshness="1 DAY",
    refresh_mode=RefreshMode.FULL, state=RefreshState.RUNNING, columns=[Column("n", "bigint")],
    partition_keys=[Column("ds", "string")], schedule="0 0 0 * * ? *", created=1709300000, last_refresh=RUN_OK,
    freshness_lag=86109129.9, within_target=False, data_time=1709337600.0, data_time_run=RUN_OK,
)

JOB_OK = RefreshJob("job-1", RunStatus.SUCCEEDED, runs=[RUN_OK], cluster_info={"master": "local[2]"})
JOB_FAILED = RefreshJob("job-2", RunStatus.FAILED, runs=[RUN_FAILED], error="1 of 1 runs failed")
JOB_RUNNING = RefreshJob("job-3", RunStatus.RUNNING, runs=[RUN_PENDING])

RELOADED = ReloadResult(added=["extra"], removed=[], changed=["main", "ro"], unchanged=["scratch"],
                        restart_needed=["server.port"], source="/etc/catalogd.yaml")
RELOADED_QUIETLY = ReloadResult(unchanged=["main"], source="/etc/catalogd.yaml")
CLUSTER = ClusterStatus(
    clustered=True, leader="cat-b:9190", leader_since=1700000000.5, epoch=3, lease_age=0.25, lease=3.0,
    lease_store="thrift://metastore:9083", leading=True,
    members=[MemberStatus("cat-a:9190", "thrift://cat-a:9083", "cat-a:9191", up=False,
                          problem="lost connection to catalogd at cat-a:9190: refused"),
             MemberStatus("cat-b:9190", "thrift://cat-b:9083", "cat-b:9191", up=True, leader=True, answering=True)])


def _by_name(name: str, choices: dict[str, Any]) -> Any:
    if "missing" in name:
        raise NotFoundError(f"{name} does not exist")
    for key, value in choices.items():
        if name.endswith(key):
            return value
    return next(iter(choices.values()))


class FakeClient:
    """Answers like a daemon holding the objects above; ``calls`` lists what was asked."""

    def __init__(self, fail_on: dict[str, CatalogError] | None = None) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.fail_on = dict(fail_on or {})
        #: As CatalogClient's: the principal the daemon named for the token (None: no token, or auth off).
        self.principal: str | None = None

    def __getattr__(self, method: str) -> Callable[..., Any]:
        answer = getattr(self, f"_{method}", None)
        if answer is None:
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((method, args, kwargs))
            if method in self.fail_on:
                raise self.fail_on[method]
            if args and isinstance(args[0], str) and "missing" in args[0]:
                raise NotFoundError(f"{args[0]} does not exist")
            return answer(*args, **kwargs)

        return call

    # ------------------------------------------------------------ answers

    def _list_catalogs(self) -> list[CatalogInfo]:
        return CATALOGS

    def _get_catalog(self, name: str | None = None) -> CatalogInfo:
        return _by_name(name or "main", {c.name: c for c in CATALOGS})

    def _list_databases(self, catalog: str | None = None) -> list[str]:
        return ["default", "sales"]

    def _get_database(self, name: str) -> Database:
        return _by_name(name, {"sales": DATABASE, "bare": BARE_DATABASE})

    _create_database = _alter_database = lambda self, name, *a, **k: self._get_database(name)

    def _nothing(self, *args: Any, **kwargs: Any) -> None:
        return None

    _rename_database = _drop_database = _rename_table = _drop_table = _nothing
    _rename_function = _drop_function = _rename_view = _drop_view = _drop_partition = _drop_dynamic_table = _nothing

    def _list_tables(self, database: str) -> list[str]:
        return ["orders", "raw"]

    def _get_table(self, name: str) -> Table:
        return _by_name(name, {"orders": ORDERS, "raw": RAW, "daily": DAILY_TABLE, "recent": VIEW})

    _create_table = _alter_table = lambda self, name, *a, **k: self._get_table(name)

    def _list_functions(self, database: str) -> list[str]:
        return ["clean", "to_eur"]

    def _get_function(self, name: str) -> Function:
        return _by_name(name, {"to_eur": FUNCTION, "clean": BARE_FUNCTION})

    _create_function = _alter_function = lambda self, name, *a, **k: self._get_function(name)

    def _list_views(self, database: str) -> list[str]:
        return []

    def _get_view(self, name: str) -> Table:
        return VIEW

    _create_view = _alter_view = lambda self, name, *a, **k: VIEW

    def _list_partitions(self, table: str, filter: str | None = None) -> list[Partition]:
        return PARTITIONS

    def _get_partition(self, table: str, spec: dict[str, str]) -> Partition:
        return PARTITIONS[0]

    def _add_partition(self, table: str, spec: dict[str, str], *args: Any) -> Partition:
        return PARTITIONS[1]

    def _list_stages(self, catalog: str | None = None) -> list[Stage]:
        return [OPEN_STAGE, COMMITTED_STAGE]

    def _get_stage(self, stage_id: str) -> Stage:
        return _by_name(stage_id, {s.id: s for s in (OPEN_STAGE, COMMITTED_STAGE, QUIET_COMMIT, ABORTED_STAGE)})

    def _begin_stage(self, target: str, *args: Any, **kwargs: Any) -> Stage:
        return OPEN_STAGE

    def _heartbeat_stage(self, stage_id: str, lease: float | None = None) -> Stage:
        return OPEN_STAGE

    def _commit_stage(self, stage_id: str) -> Stage:
        return self._get_stage(stage_id)

    def _abort_stage(self, stage_id: str, writer_stopped: bool = False) -> Stage:
        return ABORTED_STAGE

    def _reload_config(self) -> ReloadResult:
        return RELOADED

    def _cluster_status(self) -> ClusterStatus:
        return CLUSTER

    def _sql(self, statement: str) -> StatementResult:
        if statement.startswith("CREATE"):
            return StatementResult("create", "created dynamic table main.sales.daily", table=DAILY)
        if "REFRESH" in statement:
            return StatementResult("refresh", "refresh job job-1 started", job=JOB_OK)
        return StatementResult("drop", "dropped dynamic table main.sales.daily")

    def _get_dynamic_table(self, name: str) -> DynamicTable:
        return _by_name(name, {"daily": DAILY, "live": LIVE, "late": LATE, "old": OLD})

    _create_dynamic_table = _alter_dynamic_table = lambda self, name, *a, **k: self._get_dynamic_table(name)
    _suspend_dynamic_table = _resume_dynamic_table = _get_dynamic_table

    def _list_dynamic_tables(self, catalog: str | None = None, database: str | None = None) -> list[DynamicTable]:
        return [DAILY, LIVE, LATE, OLD]

    def _refresh_dynamic_tables(self, tables: Any, *args: Any, **kwargs: Any) -> RefreshJob:
        return JOB_FAILED if "late" in str(tables) else JOB_RUNNING

    def _get_refresh_job(self, job_id: str) -> RefreshJob:
        return {"job-1": JOB_OK, "job-2": JOB_FAILED}.get(job_id, JOB_RUNNING)

    def _wait_refresh_job(self, job_id: str, timeout: float | None = None,
                          progress: Callable[[RefreshJob], None] | None = None) -> RefreshJob:
        if job_id == JOB_FAILED.id:
            steps = [JOB_FAILED]
        else:
            steps = [JOB_RUNNING, RefreshJob(job_id, RunStatus.RUNNING, runs=[RUN_WRITING]),
                     RefreshJob(job_id, RunStatus.RUNNING, runs=[RUN_WRITING]),
                     RefreshJob(job_id, RunStatus.SUCCEEDED, runs=[RUN_WRITTEN])]
        for step in steps:
            if progress is not None:
                progress(step)
        return steps[-1]

    def _dynamic_table_history(self, name: str, limit: int = 20) -> list[RefreshRun]:
        return [RUN_FAILED, RUN_OK]
