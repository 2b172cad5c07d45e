"""The order of a refresh's steps (``job.write_result``): the query is analysed beside the
stage's begin, the begin waits for the run's record, and an analysis error aborts the stage
begun meanwhile (nothing written, nothing committed)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from catalogd.model import Column

#: Long enough for a thread on a busy machine; a broken order fails on it, never hangs.
WAIT = 30.0


class _Col:
    def alias(self, name: str) -> _Col:
        return self

    def __eq__(self, other: object) -> bool:  # a condition, as pyspark's columns make one
        return True

    __hash__ = object.__hash__


class _Functions:
    """pyspark's ``col`` and ``lit``, without a session."""

    def col(self, name: str) -> _Col:
        return _Col()

    def lit(self, value: Any) -> _Col:
        return _Col()


class _Frame:
    """A query's DataFrame: its columns, chained calls, its input files."""

    columns = ["DS", "n"]

    def select(self, *cols: Any) -> _Frame:
        return self

    def where(self, condition: Any) -> _Frame:
        return self

    def inputFiles(self) -> list[str]:
        return ["file:/w/src/ds=2024-03-02/part-0.parquet"]


class _Spark:
    """Analyses a query (``sql``) after ``gate`` opens; its error when ``error``."""

    def __init__(self, events: list[str], gate: threading.Event | None = None,
                 error: Exception | None = None) -> None:
        self.events = events
        self.gate = gate
        self.error = error

        self.catalog = SimpleNamespace(currentCatalog=self._current_catalog)
        self.conf = SimpleNamespace(get=self._conf_get)

    def _current_catalog(self) -> str:
        self.events.append("current_catalog")
        return "spark_catalog"

    def _conf_get(self, key: str, default: str | None = None) -> str | None:
        self.events.append(f"conf:{key}")
        return "nonstrict"

    def sql(self, query: str) -> _Frame:
        self.events.append("analysis")
        if self.gate is not None and not self.gate.wait(WAIT):
            raise AssertionError("the stage never began while the query was analysed")
        if self.error is not None:
            raise self.error
        return _Frame()


class _Client:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def get_table(self, name: str) -> Any:
        self.events.append("table")
        return SimpleNamespace(columns=[Column("n", "bigint")], partition_keys=[Column("ds", "string")],
                               properties={}, format=None, comment=None)

    def drop_partition(self, *args: Any, **kwargs: Any) -> None:
        self.events.append("drop_partition")


class _Reporter:
    def update(self, **values: Any) -> None:
        pass


class _Seen:
    """What the refresh did, in order (``events``), and when its stage began (``began``)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.began = threading.Event()


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> _Seen:
    """The stage and the write are fakes that record in ``_Seen``."""
    import catalogd.spark_common as sc
    from catalogd.dynamic import job

    record = _Seen()

    @contextlib.contextmanager
    def staged_table(target: str, *args: Any, **kwargs: Any) -> Iterator[Any]:
        record.events.append("begin")
        staged = SimpleNamespace(stage_id="s1", name="db.__stage", result=None)
        record.began.set()
        try:
            yield staged
        except BaseException:
            record.events.append("abort")
            staged.result = SimpleNamespace(id="s1")
            raise
        record.events.append("commit")
        staged.result = SimpleNamespace(id="s1")

    def write_staged(spark: Any, df: Any, staged: Any, count: bool = False, state: Any = None) -> int:
        # Asked beside the stage's begin: the write need not ask again.
        assert state == sc.SessionState("spark_catalog", "nonstrict"), state
        record.events.append("write")
        return 1

    monkeypatch.setattr(sc, "staged_table", staged_table)
    monkeypatch.setattr(sc, "write_staged", write_staged)
    # As a Connect session (its input files listed beside the write), with columns of our own.
    monkeypatch.setattr(sc, "is_connect", lambda spark: True)
    monkeypatch.setattr(job, "_functions", lambda spark: _Functions())
    monkeypatch.setattr(job, "_query_frame", lambda spark, query: spark.sql(query))
    return record


def _refresh(spark: Any, events: list[str], before_stage: Any = None) -> dict[str, Any]:
    from catalogd.dynamic import job

    spec = {"table": "main.db.daily", "query": "SELECT ds, count(*) AS n FROM main.db.src GROUP BY ds"}
    return job.refresh(spark, _Client(events), spec, {"ds": "2024-03-02"}, _Reporter(), before_stage=before_stage)


def test_the_query_is_analysed_while_the_stage_begins_after_the_run_s_record(seen: _Seen) -> None:
    # The analysis finishes only once the stage has begun: the two overlap, or this fails.
    events = seen.events
    spark = _Spark(events, gate=seen.began)
    result = _refresh(spark, events, before_stage=lambda: events.append("recorded"))
    assert result["rows"] == 1 and result["input_files"] == 1
    assert result["source_partitions"] == ["ds=2024-03-02"]
    assert events.index("recorded") < events.index("begin") < events.index("write") < events.index("commit")
    assert events.index("current_catalog") < events.index("write")
    assert "abort" not in events
    assert {"sql_s", "columns_s", "stage_begin_s", "plan_wait_s", "write_s", "commit_s"} <= set(result["timings"])


def test_an_analysis_error_aborts_the_stage_begun_beside_it(seen: _Seen) -> None:
    events = seen.events
    spark = _Spark(events, gate=seen.began, error=ValueError("[TABLE_OR_VIEW_NOT_FOUND] main.db.src"))
    with pytest.raises(ValueError, match="TABLE_OR_VIEW_NOT_FOUND"):
        _refresh(spark, events, before_stage=lambda: events.append("recorded"))
    assert events.index("recorded") < events.index("begin") < events.index("abort")
    assert "write" not in events and "commit" not in events


def test_a_run_whose_record_fails_begins_no_stage(seen: _Seen) -> None:
    events = seen.events

    def record() -> None:
        raise OSError("the run record could not be written")

    with pytest.raises(OSError, match="run record"):
        _refresh(_Spark(events), events, before_stage=record)
    assert "begin" not in events and "write" not in events


def test_the_query_s_error_wins_over_a_record_error_it_came_with(seen: _Seen) -> None:
    events = seen.events

    def record() -> None:
        raise OSError("the metastore is gone")

    with pytest.raises(ValueError, match="cannot analyse"):
        _refresh(_Spark(events, error=ValueError("cannot analyse")), events, before_stage=record)
    assert "begin" not in events
