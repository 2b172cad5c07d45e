"""How a dynamic table is kept in HMS parameters, and its Thrift round trip."""

from __future__ import annotations

import json

from catalogd import wire
from catalogd.dynamic import store
from catalogd.model import (
    Column,
    DynamicTable,
    DynamicTableChange,
    DynamicTableSpec,
    RefreshJob,
    RefreshMode,
    RefreshRun,
    RefreshState,
    RunStatus,
    StatementResult,
)


def _dt() -> DynamicTable:
    return DynamicTable(
        catalog="main", database="sales", name="daily", query="SELECT ds, count(*) AS n FROM orders GROUP BY ds",
        freshness="1 DAY", expanded_query="SELECT `orders`.`ds` AS `ds` ..." + "x" * 7000,
        declared_mode=None, refresh_mode=RefreshMode.FULL, state=RefreshState.RUNNING,
        job_detail={"schedule": "0 0 0 * * ? *"}, columns=[Column("n", "bigint")],
        partition_keys=[Column("ds", "string")], options={"partition.fields.ds.date-formatter": "yyyy-MM-dd"},
    )


def _run(n: int, status: RunStatus = RunStatus.SUCCEEDED) -> RefreshRun:
    return RefreshRun(id=f"run{n}", table="main.sales.daily", trigger="api", status=status,
                      schedule_time="2024-03-02 00:00:00+00:00", partition={"ds": "2024-03-01"},
                      submitted=100.0 + n, started=101.0 + n, ended=130.0 + n, rows=3, application_id="local-1",
                      input_files=2, source_partitions=["ds=2024-03-01"], fired=99.5 + n)


def test_long_values_are_split_and_joined() -> None:
    text = "abc" * 2500
    parts = store.chunks("k", text)
    assert len(parts) == 3 and all(len(v) <= 3000 for v in parts.values())
    assert store.unchunk(parts, "k") == text
    assert store.unchunk({}, "k") is None
    assert store.chunks("k", "") == {"k.0": ""}


def test_definition_round_trips() -> None:
    dt = _dt()
    params = store.definition_params(dt, ["sales.orders"], created=1700000000.5)
    assert store.is_dynamic(params)
    assert all(len(v) <= 3000 for v in params.values())
    back = store.decode("main", "sales", "daily", params, dt.columns, dt.partition_keys)
    assert (back.query, back.expanded_query, back.freshness) == (dt.query, dt.expanded_query, dt.freshness)
    assert back.declared_mode is None and back.refresh_mode is RefreshMode.FULL
    assert back.state is RefreshState.RUNNING and back.job_detail == dt.job_detail
    assert back.options == dt.options
    assert store.sources(params) == ["sales.orders"]
    assert store.history(params) == []
    declared = store.decode("main", "sales", "daily",
                            {**params, store.DECLARED_MODE: "CONTINUOUS",
                             **store.handler_params(RefreshMode.CONTINUOUS, RefreshState.SUSPENDED, {})})
    assert declared.declared_mode is RefreshMode.CONTINUOUS and declared.state is RefreshState.SUSPENDED


def test_history_round_trips_and_survives_garbage() -> None:
    runs = [_run(2), _run(1, RunStatus.FAILED)]
    params = store.history_params(runs)
    assert store.history(params) == runs
    assert store.history({f"{store.HISTORY}.0": "{not json"}) == []
    assert store.float_param({store.DATA_TIME: "12.5"}, store.DATA_TIME) == 12.5
    assert store.float_param({store.DATA_TIME: "x"}, store.DATA_TIME) is None


def test_wire_round_trips() -> None:
    dt = _dt()
    dt.last_refresh, dt.freshness_lag, dt.within_target, dt.schedule = _run(1), 12.25, True, "0 0 0 * * ? *"
    dt.data_time, dt.data_time_run = 1709337600.0, _run(1)
    assert wire.dynamic_table_from_thrift(wire.dynamic_table_to_thrift(dt)) == dt
    dt.declared_mode = RefreshMode.CONTINUOUS
    assert wire.dynamic_table_from_thrift(wire.dynamic_table_to_thrift(dt)).declared_mode is RefreshMode.CONTINUOUS
    job = RefreshJob(id="j1", status=RunStatus.RUNNING, runs=[_run(1), _run(2, RunStatus.PENDING)],
                     cluster_info={"master": "local[2]"})
    assert wire.refresh_job_from_thrift(wire.refresh_job_to_thrift(job)) == job
    spec = DynamicTableSpec(catalog="main", database="sales", name="daily", query="SELECT 1 AS a",
                            freshness="1 day", refresh_mode=RefreshMode.FULL, partitioned_by=["ds"],
                            options={"k": "v"}, comment="c")
    assert wire.dynamic_spec_from_thrift(wire.dynamic_spec_to_thrift(spec)) == spec
    change = DynamicTableChange(freshness="1 hour", refresh_mode=None, action=None)
    assert wire.dynamic_change_from_thrift(wire.dynamic_change_to_thrift(change)) == change
    result = StatementResult(kind="refreshing", message="m", table=None, job=job)
    assert wire.statement_result_from_thrift(wire.statement_result_to_thrift(result)) == result


def test_run_json_uses_plain_values() -> None:
    data = _run(1).to_json()
    assert data["status"] == "SUCCEEDED"
    assert json.loads(json.dumps(data)) == data
    assert RefreshRun.from_json({**data, "unknown": 1}) == _run(1)


def test_the_run_that_set_the_data_time() -> None:
    """As the executor sets it: a formatter partition's run, its schedule time; another run, its start."""
    from catalogd.dynamic.tables import _run_of_data_time

    partition_run = _run(1)  # schedule time 2024-03-02 00:00:00+00:00
    whole = RefreshRun(id="whole", table="main.sales.daily", trigger="manual", status=RunStatus.SUCCEEDED,
                       started=1709400000.25, ended=1709400010.0)
    failed = RefreshRun(id="failed", table="main.sales.daily", trigger="manual", status=RunStatus.FAILED,
                        started=1709500000.0)
    runs = [failed, whole, partition_run]
    assert _run_of_data_time(runs, 1709337600.0) is partition_run
    assert _run_of_data_time(runs, 1709400000.25) is whole
    assert _run_of_data_time(runs, 1709500000.0) is None  # a failed run sets nothing
    assert _run_of_data_time(runs, None) is None
    stream = RefreshRun(id="s", table="main.sales.daily", trigger="continuous", status=RunStatus.RUNNING,
                        started=1709600000.0)
    assert _run_of_data_time([stream, *runs], 1709600500.0) is stream
