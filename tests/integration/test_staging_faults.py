"""The staging protocol under failures: lapsed leases, a Spark driver killed with SIGKILL, a
daemon killed at every step of a commit and started again, replaced data kept for its retention.

Every test runs an extra daemon whose ``main`` catalog is a *remote* hive catalog on the
session daemon's embedded metastore: killing the extra daemon leaves the metastore up, and
the session's SparkSession writes into the extra daemon's staging tables by name. The
session daemon's janitor sees the same stages (two daemons on one HMS); the assertions
poll with a deadline (``polling.wait_until``) and accept whichever daemon acts first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.errors import ConflictError, ServerUnavailableError, StageNotFoundError
from catalogd.model import Stage, StageState

from .helpers import (
    SESSION_STAGE_SECRET,
    Daemon,
    answer_within,
    clean_env,
    local_path,
    log_text,
    metastore_key_file,
    process_alive,
    rows,
    short,
    tail,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

#: How long a test waits for something that should happen "soon" (janitor passes, a purge, a
#: cancelled job); generous, so a busy machine passes too.
DEADLINE = 60.0
#: The session daemon's stage key too: both daemons act on each other's stages.
STAGING = {"lease": "3s", "janitor-interval": "1s", "replaced-data-retention": "0s", "secret": SESSION_STAGE_SECRET}


# ---------------------------------------------------------------- helpers


def db_dir(client: CatalogClient, db: str) -> Path:
    return local_path(client.get_database(db).location)


def entries(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir()) if path.exists() else []


def data_files(root: Path) -> set[Path]:
    """Every data file under ``root`` (hidden directories included)."""
    if not root.exists():
        return set()
    return {p for p in root.rglob("*") if p.is_file() and p.name.startswith("part-")}


def rows_or_none(spark: Any, client: CatalogClient, name: str) -> list[tuple[Any, ...]] | None:
    """The table's rows, sorted; None when there is no such table."""
    return rows(spark, name) if client.table_exists(name) else None


def read_files(spark: Any, name: str) -> set[Path]:
    """The files a reader of the table actually reads."""
    from pyspark.sql.functions import input_file_name

    spark.catalog.refreshTable(short(name))
    return {local_path(r[0]) for r in spark.table(short(name)).select(input_file_name()).distinct().collect()}


def write(spark: Any, stage: Stage, data: list[tuple], schema: str) -> None:
    spark.createDataFrame(data, schema).write.insertInto(stage.spark_table, overwrite=True)


def stages_for(client: CatalogClient, db: str, target: str | None = None) -> list[Stage]:
    database = db.split(".", 1)[1]
    return [s for s in client.list_stages("main")
            if s.database == database and (target is None or s.target == target)]


def settled(problems: Callable[[], list[str]]) -> Callable[[], bool]:
    """A ``wait_until`` probe from one that lists what is still wrong: true once the list is
    empty; until then it raises the list, so a timeout says what was left."""

    def probe() -> bool:
        left = problems()
        if left:
            raise AssertionError(left)
        return True

    return probe


@pytest.fixture
def remote(client: CatalogClient, daemon: Daemon, daemon_factory: Callable[..., Daemon]) -> Callable[..., Daemon]:
    """``remote(staging={...}, env={...})``: an extra daemon on the session daemon's metastore;
    ``remote(same_as=d)``: ``d`` started again (same config and data dir: the same committer)."""
    uri = client.get_catalog("main").metastore

    def start(name: str = "faulty", staging: dict[str, str] | None = None, env: dict[str, str] | None = None,
              same_as: Daemon | None = None) -> Daemon:
        if same_as is not None:
            return daemon_factory(name=name, same_as=same_as, env=env)
        return daemon_factory(
            name=name,
            catalogs=[{"name": "main", "type": "hive", "connection": {"hive.metastore.uris": uri},
                       "metastore-key-file": str(metastore_key_file(daemon.data_dir))}],
            extra={"staging": {**STAGING, **(staging or {})}},
            env=env,
        )

    return start


# ---------------------------------------------------------------- 1. a lease lapses

#: The lapsing stage's last lease, seconds: longer than a busy machine needs to list its stages once.
LAPSE = 5

def test_a_stage_whose_lease_lapses_is_aborted_with_its_files(spark, client, main_db, remote):
    extra = remote(name="lapse")
    target = f"{main_db}.t"
    # A warm session (Hive client, codegen): the write below takes well under the lease.
    spark.catalog.listTables(short(main_db))
    spark.createDataFrame([(0, "warm")], "id bigint, name string").collect()
    with CatalogClient(extra.address, timeout=60) as own:
        # A lease the write fits in on a busy machine; then, written, one last heartbeat asks for a
        # short one (LAPSE), so the test waits out LAPSE and its tombstone, not the write's lease.
        stage = own.begin_stage(target, "id bigint, name string", lease=20)
        staging_dir = local_path(stage.location)
        write(spark, stage, [(1, "a"), (2, "b"), (3, "c")], "id bigint, name string")
        try:
            stage = own.heartbeat_stage(stage.id, lease=LAPSE)
        except ConflictError:
            pytest.fail("the write outlasted the lease: the test proves nothing (a slow machine?)")
        assert stage.state is StageState.OPEN
        # Written and still open: nobody may touch a stage before its lease runs out.
        open_stages = [(s.id, s.state) for s in stages_for(own, main_db, "t")]
        if time.time() * 1000 >= stage.lease_deadline:
            pytest.fail("listing the stages outlasted the lease: the test proves nothing (a slow machine?)")
        assert open_stages == [(stage.id, StageState.OPEN)]
        assert data_files(staging_dir), "the job wrote no files"

        def probe() -> list[str]:
            problems = [f"stage {s.id} {s.state.name}" for s in stages_for(own, main_db)]
            problems += [f"left on disk: {e}" for e in entries(db_dir(client, main_db))]
            return problems

        # Never heartbeat again: the lease ends, a janitor (the extra's, every 1s) aborts the stage.
        # The lease, then the tombstone that catches late files (two leases), then a janitor pass.
        limit = LAPSE + 2 * LAPSE + DEADLINE
        wait_until(settled(probe), limit, what="the lapsed stage is aborted and its files deleted", every=0.25)
        assert time.time() * 1000 >= stage.lease_deadline + 2 * LAPSE * 1000, "deleted before its tombstone ran out"
        assert not staging_dir.exists()
        assert not client.table_exists(target) and client.list_tables(main_db) == []
        with pytest.raises(StageNotFoundError):
            own.commit_stage(stage.id)
        with pytest.raises(StageNotFoundError):
            own.heartbeat_stage(stage.id)
    assert not spark.catalog.tableExists(stage.spark_table)


# ---------------------------------------------------------------- 2. a Spark driver killed mid-write

#: A fresh Spark driver (its own JVM) starting and writing its first files, on a busy machine.
DRIVER_DEADLINE = 180.0

DRIVER = textwrap.dedent("""
    import sys
    import time

    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

    from catalogd.client import CatalogClient
    from catalogd.spark import atomic_ctas, insert_into, spark_conf_for

    address, target, local_dir, mode = sys.argv[1:5]
    client = CatalogClient(address, timeout=60)
    builder = (
        SparkSession.builder.master("local[1]").appName("doomed-driver").enableHiveSupport()
        .config("spark.ui.enabled", "false")
        .config("spark.local.dir", local_dir)
        .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={local_dir}")
        .config("spark.driver.memory", "512m")
        .config("spark.sql.shuffle.partitions", "1")
    )
    for key, value in spark_conf_for(client.get_catalog("main")).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")


    @udf("bigint")
    def slow(x):
        time.sleep(0.01)
        return x


    df = spark.range(0, 100000, 1, 1).select(slow("id").alias("id"))
    print("writing", flush=True)
    if mode == "append":
        insert_into(spark, target, df, client=client)
    else:
        atomic_ctas(spark, target, df, client=client)
    print("committed: the test did not kill me in time", flush=True)
""")


def session_pids(sid: int) -> list[int]:
    """Live processes of session ``sid`` (the driver, its JVM, PySpark's workers)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and process_alive(int(entry.name)):
            pids.append(int(entry.name))
    return pids


def kill_session(proc: subprocess.Popen[bytes], timeout: float = DEADLINE) -> None:
    """SIGKILL every process of the session ``proc`` leads (it was started with a new session)."""

    def killed() -> list[str]:
        for pid in session_pids(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1)
        return [f"process {pid} of the killed driver survives" for pid in session_pids(proc.pid)]

    wait_until(settled(killed), timeout, what="every process of the killed driver to end", every=0.1)


@pytest.mark.parametrize("mode", ["ctas", "append"])
def test_a_spark_driver_killed_mid_write_leaves_nothing(spark, client, main_db, remote, tmp_path, mode):
    extra = remote(name="driver", staging={"lease": "4s"})
    target = f"{main_db}.doomed"
    old_rows: list[tuple] = []
    old_files: set[Path] = set()
    if mode == "append":
        # An INSERT INTO an existing table: its stage lives inside the table's directory.
        client.create_table(target, "id bigint")
        old_rows = [(-1,), (-2,)]
        spark.createDataFrame(old_rows, "id bigint").write.insertInto(short(target))
        old_files = data_files(local_path(client.get_table(target).location))
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    (tmp_path / "driver-local").mkdir()
    driver_log = tmp_path / "driver.log"
    with open(driver_log, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(script), extra.address, target, str(tmp_path / "driver-local"), mode],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
            env=clean_env(), start_new_session=True,
        )
    try:
        with CatalogClient(extra.address, timeout=60) as own:

            def driver_exited() -> bool:
                return proc.poll() is not None

            def driver_running() -> None:
                assert proc.poll() is None, f"the driver exited with {proc.returncode}:\n{tail(driver_log)}"

            # A driver that exits ends each wait at once; the check after it says why.
            found = wait_until(lambda: driver_exited() or stages_for(own, main_db, "doomed"), DRIVER_DEADLINE,
                               what=f"the driver to open a stage (its log: {driver_log})")
            driver_running()
            assert isinstance(found, list)
            stage = found[0]
            assert stage.state is StageState.OPEN
            staging_dir = local_path(stage.location)
            # Wait for the job's first files: the kill lands in the middle of the write.
            wait_until(lambda: driver_exited() or data_files(staging_dir), DRIVER_DEADLINE,
                       what=f"the job's first files (driver log: {driver_log})")
            driver_running()
            # Still alive (its heartbeats keep the 4s lease going) right before the kill.
            assert [s.state for s in stages_for(own, main_db, "doomed")] == [StageState.OPEN]
            killed_at = time.monotonic()
            kill_session(proc)
            assert proc.returncode == -signal.SIGKILL
            assert "committed" not in driver_log.read_text(errors="replace")

            def probe() -> list[str]:
                problems = [f"stage {s.id} {s.state.name}" for s in stages_for(own, main_db)]
                if mode == "append":
                    table_dir = local_path(client.get_table(target).location)
                    problems += [f"left on disk: {e}" for e in entries(db_dir(client, main_db)) if e != "doomed"]
                    problems += [f"left in the table: {p}" for p in data_files(table_dir) - old_files]
                    problems += [f"left in the table: {e}" for e in entries(table_dir) if "stage" in e]
                    return problems
                problems += [f"left on disk: {e}" for e in entries(db_dir(client, main_db))]
                if client.table_exists(target):
                    problems.append(f"{target} exists")
                return problems

            # Within a deadline from the kill: the lease (4s), then soon.
            wait_until(settled(probe), 4 + DEADLINE - (time.monotonic() - killed_at),
                       what="the killed driver's stage is aborted and its files deleted", every=0.25)
            assert not staging_dir.exists()
            if mode == "append":
                assert rows(spark, target) == sorted(old_rows) and client.list_tables(main_db) == ["doomed"]
            else:
                assert client.list_tables(main_db) == []
            with pytest.raises(StageNotFoundError):
                own.commit_stage(stage.id)
    finally:
        if proc.poll() is None or session_pids(proc.pid):
            kill_session(proc)


# ---------------------------------------------------------------- 3. the daemon killed during a commit

@dataclass
class Scenario:
    target: str
    stage: Stage
    old: list[tuple] | None
    new: list[tuple]
    old_location: Path | None = None
    #: OVERWRITE_PARTITIONS: the files of the partitions the stage does not write.
    untouched: frozenset[Path] = frozenset()


def prepare(kind: str, spark: Any, client: CatalogClient, own: CatalogClient, db: str) -> Scenario:
    """A target (with old data, unless CREATE) and a stage of ``own``'s filled with new data."""
    if kind == "create":
        target = f"{db}.t"
        stage = own.begin_stage(target, "id bigint, name string", purpose="create", lease=120)
        new = [(1, "n1"), (2, "n2"), (3, "n3")]
        write(spark, stage, new, "id bigint, name string")
        return Scenario(target, stage, None, new)
    if kind == "replace":
        target = f"{db}.t"
        client.create_table(target, "id bigint, name string", properties={"generation": "old"})
        old = [(10, "o1"), (11, "o2")]
        spark.createDataFrame(old, "id bigint, name string").write.insertInto(short(target))
        stage = own.begin_stage(target, "id bigint, name string", purpose="replace", lease=120,
                                properties={"generation": "new"})
        new = [(1, "n1"), (2, "n2"), (3, "n3")]
        write(spark, stage, new, "id bigint, name string")
        return Scenario(target, stage, old, new, local_path(client.get_table(target).location))
    if kind == "replace-keys":
        target = f"{db}.t"
        client.create_table(target, "id bigint, ds string")
        old = [(10, "a"), (11, "b")]
        spark.createDataFrame(old, "id bigint, ds string").write.insertInto(short(target))
        stage = own.begin_stage(target, "id bigint", partitioned_by="ds string", purpose="replace", lease=120)
        new = [(1, "b"), (2, "c"), (3, "d")]
        write(spark, stage, new, "id bigint, ds string")
        return Scenario(target, stage, old, new, local_path(client.get_table(target).location))
    assert kind == "overwrite"
    target = f"{db}.p"
    client.create_table(target, "id bigint", partitioned_by="ds string")
    old = [(1, "a"), (2, "b"), (3, "b"), (4, "c")]
    spark.createDataFrame(old, "id bigint, ds string").write.insertInto(short(target))
    table_dir = local_path(client.get_table(target).location)
    untouched = frozenset(data_files(table_dir / "ds=a") | data_files(table_dir / "ds=c"))
    assert len(untouched) >= 2
    stage = own.begin_stage(target, purpose="overwrite_partitions", lease=120)
    write(spark, stage, [(20, "b"), (21, "b"), (40, "d")], "id bigint, ds string")
    new = sorted([(1, "a"), (4, "c"), (20, "b"), (21, "b"), (40, "d")])
    return Scenario(target, stage, old, new, table_dir / "ds=b", untouched)


FAULTS = [
    ("create", "commit.before-rename"),
    ("create", "commit.after-rename"),
    ("replace", "commit.marked"),
    ("replace", "commit.switched"),
    ("replace", "commit.partitions"),
    ("replace", "commit.retired"),
    ("replace-keys", "commit.dropped"),
    ("overwrite", "commit.marked"),
    ("overwrite", "commit.switched"),
    ("overwrite", "commit.partitions"),
    ("overwrite", "commit.retired"),
]
#: Points after which the target already shows the new data.
SWITCHED = {"commit.after-rename", "commit.switched", "commit.partitions", "commit.retired"}
#: Points at which the stage is left COMMITTING: the restarted daemon must finish it before it serves.
INTERRUPTED = {"commit.marked", "commit.dropped", "commit.switched", "commit.partitions"}


@pytest.mark.parametrize(("kind", "point"), FAULTS, ids=[f"{k}-{p.split('.', 1)[1]}" for k, p in FAULTS])
def test_a_daemon_killed_during_a_commit_finishes_it_when_restarted(spark, client, main_db, remote, kind,
                                                                    point):
    first = remote(name="faulty", env={"CATALOGD_FAULT_POINTS": point})
    with CatalogClient(first.address, timeout=60) as own:
        case = prepare(kind, spark, client, own, main_db)
        stage = case.stage
        key = stage.id.rsplit(".", 1)[1]
        with pytest.raises(ServerUnavailableError):
            own.commit_stage(stage.id)
    assert first.proc.wait(30) == -signal.SIGKILL
    assert f"fault point {point} reached" in log_text(first), first.log()

    # The daemon is down: a reader sees the old data or the new data, whole (the weaker
    # path of a partition-key change shows no table for the moment, as documented).
    expected_now = case.new if point in SWITCHED else None if point == "commit.dropped" else case.old
    assert rows_or_none(spark, client, case.target) == expected_now

    again = remote(name="restarted", same_as=first)
    with CatalogClient(again.address, timeout=60) as own:
        if point == "commit.before-rename":
            # Nothing was done: the stage is still open, the commit can simply be retried.
            assert own.get_stage(stage.id).state is StageState.OPEN
            assert not client.table_exists(case.target)
            assert own.commit_stage(stage.id).state is StageState.COMMITTED
        else:
            # Ready means recovered: nothing of this stage is left OPEN or COMMITTING.
            assert [s.state for s in stages_for(own, main_db, stage.target)
                    if s.state is not StageState.COMMITTED] == []
            assert own.get_stage(stage.id).state is StageState.COMMITTED
        if point in INTERRUPTED:
            assert "finishing a commit that was interrupted" in log_text(again), again.log()
        # Retries of the commit that died with the first daemon report success, every time.
        assert own.commit_stage(stage.id).state is StageState.COMMITTED
        assert own.commit_stage(stage.id).state is StageState.COMMITTED

        assert rows_or_none(spark, client, case.target) == case.new  # the new data, once (row counts exact)
        table = client.get_table(case.target)
        assert table.properties.get("catalogd.last-commit") == stage.id
        assert not any(k.startswith("catalogd.stage.") for k in table.properties)
        if kind == "replace":
            assert table.properties.get("generation") == "new"
        if kind == "replace-keys":
            assert [k.name for k in table.partition_keys] == ["ds"]

        database = db_dir(client, main_db)

        def probe() -> list[str]:
            problems = [f"stage {s.id} {s.state.name}" for s in stages_for(own, main_db)]
            location = local_path(client.get_table(case.target).location)
            if kind == "overwrite":
                if entries(database) != [location.name]:
                    problems.append(f"database dir holds {entries(database)}")
                if case.old_location is not None and case.old_location.exists():
                    problems.append(f"the replaced partition dir {case.old_location} is still there")
                wanted = ["ds=a", "ds=c", f".catalogd-stage-{key}"]
                dirs = sorted(p.name for p in location.iterdir() if p.is_dir())
                if dirs != sorted(wanted):
                    problems.append(f"table dir holds {dirs}, not {sorted(wanted)}")
            else:
                if entries(database) != [location.name]:
                    problems.append(f"database dir holds {entries(database)}, not just {location.name}")
                if case.old_location is not None and case.old_location.exists():
                    problems.append(f"the replaced table dir {case.old_location} is still there")
            stray = data_files(database) - read_files(spark, case.target)
            if stray:
                problems.append(f"files no reader reads: {sorted(str(p) for p in stray)}")
            return problems

        wait_until(settled(probe), DEADLINE, what="the commit is finished and the replaced data deleted", every=0.25)
        assert rows_or_none(spark, client, case.target) == case.new
        if kind == "overwrite":
            assert case.untouched <= data_files(local_path(table.location) / "ds=a") | data_files(
                local_path(table.location) / "ds=c"
            ), "the partitions the stage did not write were touched"
        assert own.commit_stage(stage.id).state is StageState.COMMITTED
        with pytest.raises(ConflictError):
            own.abort_stage(stage.id)


#: Where an APPEND commit dies -> the rows a reader sees while the daemon is down.
APPEND_FAULTS = {
    "commit.marked": "old",  # the plan is stored, nothing moved
    "commit.moved": "moved",  # the files are in the existing partition, the new partition is not added
    "commit.partitions": "new",  # the new partition is added, the stage not yet dropped
}


@pytest.mark.parametrize("point", list(APPEND_FAULTS), ids=[p.split(".", 1)[1] for p in APPEND_FAULTS])
def test_a_daemon_killed_during_an_append_finishes_it_when_restarted(spark, client, main_db, remote, point):
    first = remote(name="faulty", env={"CATALOGD_FAULT_POINTS": point})
    target = f"{main_db}.p"
    client.create_table(target, "id bigint", partitioned_by="ds string")
    old = [(1, "a"), (2, "b")]
    spark.createDataFrame(old, "id bigint, ds string").write.insertInto(short(target))
    table_dir = local_path(client.get_table(target).location)
    old_files = data_files(table_dir)
    moved = sorted([*old, (20, "b")])
    new = sorted([*old, (20, "b"), (40, "d")])
    with CatalogClient(first.address, timeout=60) as own:
        stage = own.begin_stage(target, purpose="append", lease=120)
        write(spark, stage, [(20, "b"), (40, "d")], "id bigint, ds string")
        with pytest.raises(ServerUnavailableError):
            own.commit_stage(stage.id)
    assert first.proc.wait(30) == -signal.SIGKILL
    # The documented window: existing partitions receive their files before new partitions are added.
    assert rows(spark, target) == {"old": sorted(old), "moved": moved, "new": new}[APPEND_FAULTS[point]]

    again = remote(name="restarted", same_as=first)
    with CatalogClient(again.address, timeout=60) as own:
        assert own.get_stage(stage.id).state is StageState.COMMITTED
        assert "finishing a commit that was interrupted" in log_text(again), again.log()
        assert own.commit_stage(stage.id).state is StageState.COMMITTED
        assert rows(spark, target) == new  # every row once
        assert client.get_table(target).properties.get("catalogd.last-commit") == stage.id

        def probe() -> list[str]:
            problems = [f"stage {s.id} {s.state.name}" for s in stages_for(own, main_db)]
            stray = data_files(table_dir) - read_files(spark, target)
            if stray:
                problems.append(f"files no reader reads: {sorted(str(p) for p in stray)}")
            return problems

        wait_until(settled(probe), DEADLINE, what="the append is finished and its stage gone", every=0.25)
        assert old_files <= data_files(table_dir), "an old file was lost"


#: The surviving daemon's lease: longer than a busy machine needs to look at the interrupted
#: commit (a Spark read) before anybody may take it over.
TAKEOVER_LEASE = 12


def test_another_daemon_finishes_an_interrupted_commit_once_it_is_a_lease_old(spark, client, main_db, remote):
    """The crashed daemon never comes back: a second daemon (another committer) on the same
    metastore leaves the COMMITTING stage alone for a lease, then rolls it forward."""
    other = remote(name="other", staging={"lease": f"{TAKEOVER_LEASE}s"})
    first = remote(name="crashed", env={"CATALOGD_FAULT_POINTS": "commit.marked"})
    with CatalogClient(first.address, timeout=60) as own:
        case = prepare("replace", spark, client, own, main_db)
        started = time.time()
        with pytest.raises(ServerUnavailableError):
            own.commit_stage(case.stage.id)
    assert first.proc.wait(30) == -signal.SIGKILL
    with CatalogClient(other.address, timeout=60) as own:
        # Not yet a lease old: nobody may take the commit over; readers see the old data. A fixed
        # wait on purpose: it gives the other daemon's janitor (every 1s) the chance to act too early.
        time.sleep(1.0)
        assert rows_or_none(spark, client, case.target) == case.old
        assert [s.state for s in stages_for(own, main_db, "t")] == [StageState.COMMITTING]

        def probe() -> list[str]:
            problems = [f"stage {s.id} {s.state.name}" for s in stages_for(own, main_db)]
            if case.old_location is not None and case.old_location.exists():
                problems.append(f"{case.old_location} is still there")
            return problems

        wait_until(settled(probe), TAKEOVER_LEASE + DEADLINE, what="the other daemon finishes the commit", every=0.25)
        assert time.time() - started >= TAKEOVER_LEASE, "taken over before the commit was a lease old"
        assert "finishing a commit that was interrupted" in log_text(other), other.log()
        assert rows_or_none(spark, client, case.target) == case.new
        assert client.get_table(case.target).properties.get("catalogd.last-commit") == case.stage.id
        assert own.commit_stage(case.stage.id).state is StageState.COMMITTED
        database = db_dir(client, main_db)
        assert entries(database) == [local_path(client.get_table(case.target).location).name]
        assert data_files(database) == read_files(spark, case.target)


# ---------------------------------------------------------------- 4. retention of replaced data

@pytest.mark.parametrize("retention", [0, 3])
def test_replaced_data_is_kept_for_its_retention(spark, client, main_db, remote, retention):
    extra = remote(name="retention", staging={"replaced-data-retention": f"{retention}s"})
    target = f"{main_db}.t"
    client.create_table(target, "id bigint")
    spark.createDataFrame([(1,), (2,)], "id bigint").write.insertInto(short(target))
    old_location = local_path(client.get_table(target).location)
    old_files = data_files(old_location)
    assert old_files
    with CatalogClient(extra.address, timeout=60) as own:
        stage = own.begin_stage(target, "id bigint", purpose="replace", lease=60)
        write(spark, stage, [(3,), (4,), (5,)], "id bigint")
        started = time.time()
        assert own.commit_stage(stage.id).state is StageState.COMMITTED
        kept, retiring = data_files(old_location), stages_for(own, main_db)
        assert rows_or_none(spark, client, target) == [(3,), (4,), (5,)]
        if retention == 0:
            # Deleted right after the commit, by the daemon's housekeeping worker (off the commit's path).
            wait_until(lambda: not old_location.exists() and not stages_for(own, main_db), DEADLINE, every=0.1,
                       what="the replaced data to be deleted right after the commit")
        else:
            assert kept == old_files
            assert [(s.id, s.state) for s in retiring] == [(stage.id, StageState.COMMITTED)]
            assert "deleted after" in (retiring[0].message or "")

            def probe() -> list[str]:
                return [f"{old_location} exists"] if old_location.exists() else []

            wait_until(settled(probe), retention + DEADLINE, every=0.25,
                       what="the replaced data is deleted once its retention is over")
            gone = time.time()
            assert gone - started >= retention - 0.05, f"deleted {gone - started:.2f}s after the commit"
            assert not stages_for(own, main_db)
        database = db_dir(client, main_db)
        assert entries(database) == [local_path(client.get_table(target).location).name]
        assert data_files(database) == read_files(spark, target)
        assert rows_or_none(spark, client, target) == [(3,), (4,), (5,)]
        assert own.get_stage(stage.id).state is StageState.COMMITTED


# ---------------------------------------------------------------- 6. a writer that outlives its lease

def test_files_written_after_the_lease_lapsed_are_deleted_too(spark, client, main_db, remote):
    """The janitor aborts a lapsed stage while its (unheartbeating) writer is still at work: the
    stage stays as an ABORTED tombstone for a lease, so the files the writer adds late go too."""
    from pyspark.sql.functions import udf

    extra = remote(name="late")
    target = f"{main_db}.t"

    @udf("bigint")
    def slow(x):
        time.sleep(0.03)
        return x

    spark.range(0, 2, 1, 1).select(slow("id")).collect()  # a warm Python worker: a predictable write
    with CatalogClient(extra.address, timeout=60) as own:
        stage = own.begin_stage(target, "id bigint", lease=5)
        staging_dir = local_path(stage.location)
        # ~7.5s of writing, no heartbeats: the lease lapses in the middle; the tombstone lasts
        # two leases from then, longer than the rest of the write.
        spark.range(0, 250, 1, 1).select(slow("id").alias("id")).write.insertInto(stage.spark_table, overwrite=True)
        ended = time.time()
        assert ended * 1000 > stage.lease_deadline, "the write ended before the lease: nothing tested"
        with pytest.raises((ConflictError, StageNotFoundError), match="lease lapsed"):
            own.commit_stage(stage.id)
        print(f"write ended {ended * 1000 - stage.lease_deadline:.0f} ms after the lease")

        def probe() -> list[str]:
            left = [f"stage {s.id} {s.state.name}" for s in stages_for(own, main_db)]
            return left + [str(p) for p in data_files(staging_dir)]

        wait_until(settled(probe), DEADLINE, what="the tombstone and the late files are gone", every=0.25)
    assert not client.table_exists(target)
    assert entries(db_dir(client, main_db)) == []


def test_a_lost_stage_cancels_the_spark_job_writing_it(spark, client, main_db, remote):
    """A job writing a stage runs in a job group that the heartbeat cancels when the stage is lost
    (``staged_table`` given the session, as ``atomic_ctas`` runs its write)."""
    import re

    from catalogd.spark_common import staged_table

    extra = remote(name="cancel")
    target = f"{main_db}.t"
    with CatalogClient(extra.address, timeout=60) as own:
        stop = threading.Event()
        aborted: list[str] = []

        def abort_soon() -> None:
            try:
                with CatalogClient(extra.address, timeout=60) as operator:  # own's heartbeats never wait for it
                    found = wait_until(lambda: stop.is_set() or stages_for(operator, main_db, "t"), DEADLINE,
                                       what="the job's stage to abort")
                    if not isinstance(found, list):
                        return
                    # Once the job writing it runs (aborted sooner, the write would fail to find its table).
                    tracker = spark.sparkContext.statusTracker()
                    group = f"catalogd-stage-{found[0].id}"
                    wait_until(lambda: stop.is_set() or bool(
                        set(tracker.getJobIdsForGroup(group)) & set(tracker.getActiveJobsIds())), DEADLINE,
                        what="the job writing the stage to run", every=0.1)
                    if not stop.is_set():
                        operator.abort_stage(found[0].id)  # somebody else aborts it (`stage abort`)
                        aborted.append(found[0].id)
            except BaseException as e:  # shown by the assertion below
                aborted.append(f"the aborter failed: {e!r}")

        aborter = threading.Thread(target=abort_soon)
        aborter.start()

        def endless_ctas() -> None:
            # atomic_ctas itself would refuse: the session is on the session daemon's endpoint, not
            # on this daemon's metastore. The session writes the stage by name, as the tests above do.
            # A lease of 6 s (a heartbeat every 2 s): a busy machine's analysis of the write does not outlast it.
            with staged_table(target, "id bigint", client=own, spark=spark, lease=6) as staged:
                spark.sql("SELECT id FROM range(0, 100000000, 1, 2) WHERE reflect('java.lang.Thread', 'sleep', "
                          "cast(1 as bigint)) IS NULL OR id >= 0").write.insertInto(staged.stage.spark_table,
                                                                                    overwrite=True)

        try:
            # Cancelled within a couple of heartbeats, not after
            # 1e8 rows (answer_within fails the test then, with no exception pytest.raises takes).
            with pytest.raises(Exception) as raised:  # a Spark error (Py4J): its text is checked below
                answer_within(DEADLINE, endless_ctas)
        finally:
            stop.set()
            aborter.join()
        assert len(aborted) == 1 and not aborted[0].startswith("the aborter failed"), \
            (aborted, str(raised.value)[:2000])
        # The job failed because its own job group, the lost stage's, was cancelled.
        group = f"catalogd-stage-{aborted[0]}"
        assert re.search(f"cancelled part of cancelled job group {re.escape(group)}", str(raised.value)), \
            str(raised.value)[:2000]
        tracker = spark.sparkContext.statusTracker()
        jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup(group)]
        assert jobs and all(job is not None and job.status != "RUNNING" for job in jobs), jobs
        stage = own.list_stages("main")
        assert [s.state for s in stage if s.id == aborted[0]] in ([], [StageState.ABORTED]), stage
    assert not client.table_exists(target)
    wait_until(settled(lambda: entries(db_dir(client, main_db))), DEADLINE, what="no files left", every=0.25)
