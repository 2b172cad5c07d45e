"""The numbers the REST API and the console share: freshness reasons, the lag rebuilt from runs, leases."""

from __future__ import annotations

from catalogd.model import DynamicTable, RefreshRun, RefreshState, RunStatus, Stage, StagePurpose, StageState
from catalogd.server.overview import lag_points, lease_left, open_stages, target_seconds, why_not_fresh


def _run(started: float, ended: float | None, status: RunStatus = RunStatus.SUCCEEDED) -> RefreshRun:
    return RefreshRun(id=f"r{started}", table="main.db.t", trigger="schedule", status=status, started=started,
                      ended=ended)


def _dt(**fields: object) -> DynamicTable:
    return DynamicTable(catalog="main", database="db", name="t", query="SELECT 1", freshness="1 minute",
                        **fields)  # type: ignore[arg-type]


def test_the_lag_is_a_sawtooth_that_drops_at_each_successful_end() -> None:
    runs = [_run(100, 110), _run(160, 170), _run(200, 205, RunStatus.FAILED), _run(220, 240)]
    assert lag_points(runs, now=300) == [(110, 10), (170, 70), (170, 10), (240, 80), (240, 20), (300, 80)]


def test_no_success_no_lag() -> None:
    assert lag_points([_run(1, 2, RunStatus.FAILED), _run(3, None, RunStatus.RUNNING)], now=10) == []


def test_why_not_fresh_names_each_reason() -> None:
    assert target_seconds(_dt()) == 60
    assert why_not_fresh(_dt(within_target=True, freshness_lag=5.0)) is None
    assert why_not_fresh(_dt(within_target=False, freshness_lag=None)) == "never refreshed"
    failed = _run(1, 2, RunStatus.FAILED)
    failed.error = "AnalysisException: boom\nat line 2"
    reason = why_not_fresh(_dt(within_target=False, freshness_lag=600.0, state=RefreshState.SUSPENDED,
                               last_refresh=failed))
    assert reason == "suspended; last run failed: AnalysisException: boom; lag 10m00s is over the target 60s"


def test_leases_and_open_stages() -> None:
    def stage(i: int, state: StageState) -> Stage:
        return Stage(id=f"main.db.s{i}", catalog="main", database="db", target="t", purpose=StagePurpose.CREATE,
                     state=state, created=i, lease_deadline=50_000)

    assert lease_left(stage(1, StageState.OPEN), now=20.0) == 30.0
    live = open_stages([stage(3, StageState.OPEN), stage(1, StageState.COMMITTED), stage(2, StageState.COMMITTING)])
    assert [s.id for s in live] == ["main.db.s2", "main.db.s3"]
