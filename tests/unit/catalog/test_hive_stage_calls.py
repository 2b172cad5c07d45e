"""What a stage's begin and commit ask of the metastore, and the housekeeping a commit leaves for later.

On the in-memory HMS (fake_hms.py) behind a counting proxy: the calls are counted by thread, so
the caller's critical path and the housekeeping worker are told apart.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest
from fake_hms import FakeHms

from catalogd.catalog.hive import HiveCatalog
from catalogd.catalog.hive_client import HiveSession
from catalogd.catalog.hive_staging import HiveStager
from catalogd.errors import MetastoreUnavailableError
from catalogd.hive_idl import ttypes as hms
from catalogd.model import Column, Database, StagePurpose, StageRequest, StageState, Table

SECRET = b"unit-test-stage-secret"
#: What a metastore listing of stages costs; never on a commit's critical path.
LISTINGS = {"get_tables", "get_table_objects_by_name", "get_all_tables", "get_all_databases"}


class Counting:
    """The fake, every call recorded as (thread name, method)."""

    def __init__(self, fake: FakeHms) -> None:
        self._fake = fake
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._fake, name)
        if name.startswith("_") or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls.append((threading.current_thread().name, name))
            return attr(*args, **kwargs)

        return call

    def mine(self, since: int) -> list[str]:
        """The methods this thread called since ``since``."""
        me = threading.current_thread().name
        return [m for t, m in self.calls[since:] if t == me]


def _catalog(fake: FakeHms, retention: float) -> tuple[HiveCatalog, HiveStager, Counting]:
    stagers: list[HiveStager] = []

    def stager(session: HiveSession) -> HiveStager:
        stagers.append(HiveStager(session, lease=60, retention=retention, committer="test", secret=SECRET,
                                  max_retired=2))
        return stagers[0]

    counting = Counting(fake)
    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)], stages=stager)
    cat.session.attach(counting)  # type: ignore[arg-type]
    cat.create_database(Database("sales"))
    cat.create_table(Table(name="daily", database="sales", columns=[Column("id", "bigint")],
                           partition_keys=[Column("ds", "string")]))
    daily = fake.get_table("sales", "daily")
    for ds in ("d1", "d2", "d3"):
        _add_partition(fake, daily, ds)
    return cat, stagers[0], counting


def _add_partition(fake: FakeHms, tbl: hms.Table, ds: str) -> None:
    sd = copy.deepcopy(tbl.sd)
    sd.location = f"{tbl.sd.location}/ds={ds}"
    fake.add_partition(hms.Partition(values=[ds], dbName=tbl.dbName, tableName=tbl.tableName, createTime=1,
                                     lastAccessTime=0, sd=sd, parameters={}))


def _overwrite(cat: HiveCatalog, fake: FakeHms, counting: Counting) -> tuple[list[str], list[str], str]:
    """Begin an OVERWRITE_PARTITIONS stage, stage ds=d2, commit: (begin's calls, commit's calls, stage key)."""
    mark = len(counting.calls)
    stage = cat.begin_stage(StageRequest(catalog="main", database="sales", target="daily",
                                         purpose=StagePurpose.OVERWRITE_PARTITIONS))
    begin = counting.mine(mark)
    assert stage.staging_table
    _add_partition(fake, fake.get_table("sales", stage.staging_table), "d2")
    key = stage.id.rsplit(".", 1)[1]
    mark = len(counting.calls)
    assert cat.commit_stage("sales", key).state is StageState.COMMITTED
    return begin, counting.mine(mark), key


def _other_stages(cat: HiveCatalog, count: int) -> None:
    cat.create_table(Table(name="other", database="sales", columns=[Column("id", "bigint")]))
    for _ in range(count):
        cat.begin_stage(StageRequest(catalog="main", database="sales", target="other", purpose=StagePurpose.REPLACE,
                                     columns=[Column("id", "bigint")]))


@pytest.mark.parametrize("others", [0, 20])
def test_a_partition_overwrite_reads_each_thing_once_and_lists_no_stages(fake: FakeHms, others: int) -> None:
    cat, stager, counting = _catalog(fake, retention=600)
    _other_stages(cat, others)
    for _ in range(4):  # past max_retired: the trim has work to do
        begin, commit, _ = _overwrite(cat, fake, counting)
        assert stager.flush(timeout=30)
        # The target read, the staging table created (signed in the same call) and read back.
        assert sorted(begin) == ["create_table", "get_table", "get_table"]
        # Staging table and target read, both listed, the stage marked, partitions switched, the
        # target tagged, the stage retired: the same whatever else the database holds.
        assert sorted(commit) == sorted(["get_table", "get_table", "get_partitions", "get_partitions", "alter_table",
                                         "alter_partitions", "alter_table", "alter_table"])
    # The trim ran on the worker: two replaced versions kept (max_retired), the others purged.
    retiring = [s for s in cat.list_stages() if s.target == "daily"]
    assert len(retiring) == 2 and all(s.state is StageState.COMMITTED for s in retiring)
    assert {m for t, m in counting.calls if t.startswith("stage-housekeeping")} & LISTINGS


def test_with_no_retention_the_replaced_data_goes_right_after_the_commit(fake: FakeHms) -> None:
    cat, stager, counting = _catalog(fake, retention=0)
    old = fake.get_partition("sales", "daily", ["d2"]).sd.location
    _, commit, key = _overwrite(cat, fake, counting)
    assert not set(commit) & {"drop_table", "drop_table_with_environment_context"}
    assert stager.flush(timeout=30)
    assert ("sales", f"__catalogd_stage_{key}") not in fake.tables
    assert old in fake.deleted  # the replaced partition's files went with the staging table
    # A retried commit still answers COMMITTED (the target's tag).
    assert cat.commit_stage("sales", key).state is StageState.COMMITTED


def test_a_failed_purge_is_left_to_the_janitor_and_the_worker_goes_on(fake: FakeHms,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cat, stager, counting = _catalog(fake, retention=0)
    purge: Callable[[str, str], None] = stager._purge
    failures = [1]

    def flaky(database: str, key: str) -> None:
        if failures:
            failures.pop()
            raise MetastoreUnavailableError("metastore down")
        purge(database, key)

    monkeypatch.setattr(stager, "_purge", flaky)
    _, _, first = _overwrite(cat, fake, counting)
    assert stager.flush(timeout=30)
    assert ("sales", f"__catalogd_stage_{first}") in fake.tables  # still RETIRING, due at once
    _, _, second = _overwrite(cat, fake, counting)
    assert stager.flush(timeout=30)
    assert ("sales", f"__catalogd_stage_{second}") not in fake.tables
    assert stager.janitor_pass() == 1
    assert ("sales", f"__catalogd_stage_{first}") not in fake.tables


def test_closing_the_catalog_stops_the_worker(fake: FakeHms) -> None:
    cat, stager, counting = _catalog(fake, retention=0)
    _overwrite(cat, fake, counting)
    cat.close()
    assert stager.flush(timeout=30)
    worker = stager._worker
    assert worker is not None
    worker.join(timeout=30)
    assert not worker.is_alive()


def test_a_create_stage_reads_its_database_once(fake: FakeHms) -> None:
    cat, _, counting = _catalog(fake, retention=600)
    mark = len(counting.calls)
    stage = cat.begin_stage(StageRequest(catalog="main", database="sales", target="new", purpose=StagePurpose.CREATE,
                                         columns=[Column("id", "bigint")]))
    # Target missing: its database read (once, also for the directory); signed once HMS chose the directory.
    assert counting.mine(mark) == ["get_table", "get_database", "create_table", "get_table", "alter_table"]
    assert stage.location == f"{fake.get_database('sales').locationUri}/{stage.staging_table}"
    mark = len(counting.calls)
    assert cat.commit_stage("sales", stage.id.rsplit(".", 1)[1]).state is StageState.COMMITTED
    assert counting.mine(mark) == ["get_table", "alter_table"]
