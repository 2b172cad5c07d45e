"""The staging protocol on a real HMS, with real Spark writing into the staging tables."""

from __future__ import annotations

import time

import pytest
from polling import wait_until

from catalogd.errors import (
    ConflictError,
    InvalidArgumentError,
    PermissionDeniedError,
    StageNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.model import StagePurpose, StageState

from .helpers import local_path, raw_thrift, rows, short

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def stage_dirs(client, db: str) -> list[str]:
    location = local_path(client.get_database(db).location)
    return sorted(p.name for p in location.iterdir() if "stage" in p.name)


def write(spark, stage, data: list[tuple], schema: str) -> None:
    spark.createDataFrame(data, schema).write.insertInto(stage.spark_table, overwrite=True)


def test_create_commit_publishes_the_table_in_one_step(spark, client, main_db):
    target = f"{main_db}.orders"
    stage = client.begin_stage(target, "id bigint, name string", purpose="create", owner="tester")
    assert stage.state is StageState.OPEN
    assert stage.id.startswith(f"{main_db}.") and stage.target == "orders"
    assert stage.owner == "tester" and stage.lease_deadline > stage.created
    # Hidden from the catalog API, visible to Spark by name.
    assert client.list_tables(main_db) == []
    assert not client.table_exists(target)
    assert [s.id for s in client.list_stages("main") if s.database == main_db.split(".")[1]] == [stage.id]
    write(spark, stage, [(1, "a"), (2, "b")], "id bigint, name string")
    assert not client.table_exists(target)

    done = client.commit_stage(stage.id)
    assert done.state is StageState.COMMITTED
    assert client.list_tables(main_db) == ["orders"]
    assert rows(spark, target) == [(1, "a"), (2, "b")]
    table = client.get_table(target)
    assert not any(k.startswith("catalogd.stage.") for k in table.properties)
    assert table.properties["catalogd.last-commit"] == stage.id
    assert local_path(table.location).name == "orders"
    assert stage_dirs(client, main_db) == []
    # Idempotent: committing again (a retry) answers COMMITTED; aborting is refused.
    assert client.commit_stage(stage.id).state is StageState.COMMITTED
    assert client.get_stage(stage.id).state is StageState.COMMITTED
    with pytest.raises(ConflictError):
        client.abort_stage(stage.id)


def test_retried_commit_after_a_lost_reply_reports_success(spark, client, main_db, daemon):
    target = f"{main_db}.t"
    stage = client.begin_stage(target, "id bigint")
    write(spark, stage, [(7,)], "id bigint")
    with raw_thrift(daemon.address) as raw:
        raw.send_commitStage(stage.id)  # the reply is never read: the connection closes
    # The daemon finishes the commit although nobody reads its reply.
    wait_until(lambda: client.table_exists(target), 60, what=f"the unanswered commit to publish {target}")
    # A fresh daemon-side lookup (the stage table is gone; the target carries the id).
    assert client.commit_stage(stage.id).state is StageState.COMMITTED
    assert rows(spark, target) == [(7,)]


def test_abort_drops_the_staging_table_and_its_files(spark, client, main_db):
    stage = client.begin_stage(f"{main_db}.t", "id bigint")
    write(spark, stage, [(1,)], "id bigint")
    assert stage_dirs(client, main_db) == [stage.staging_table]
    assert client.abort_stage(stage.id, writer_stopped=True).state is StageState.ABORTED
    assert stage_dirs(client, main_db) == []
    assert not client.table_exists(f"{main_db}.t")
    assert client.abort_stage(stage.id).state is StageState.ABORTED  # idempotent
    with pytest.raises(StageNotFoundError):
        client.commit_stage(stage.id)
    # The daemon that aborted it remembers why.
    assert client.get_stage(stage.id).state is StageState.ABORTED


def test_create_on_an_existing_target(client, main_db):
    client.create_table(f"{main_db}.t", "id bigint")
    with pytest.raises(TableAlreadyExistsError):
        client.begin_stage(f"{main_db}.t", "id bigint", purpose="create")
    quiet = client.begin_stage(f"{main_db}.t", "id bigint", purpose="create_if_not_exists")
    assert quiet.state is StageState.ABORTED and "exists" in quiet.message
    assert [s for s in client.list_stages("main") if s.database == main_db[5:]] == []


@pytest.mark.parametrize("purpose", ["create", "create_if_not_exists"])
def test_target_created_while_the_stage_is_open(spark, client, main_db, purpose):
    stage = client.begin_stage(f"{main_db}.t", "id bigint", purpose=purpose)
    write(spark, stage, [(1,)], "id bigint")
    client.create_table(f"{main_db}.t", "id bigint, other string")
    if purpose == "create":
        with pytest.raises(TableAlreadyExistsError):
            client.commit_stage(stage.id)
    else:
        assert client.commit_stage(stage.id).state is StageState.ABORTED
    assert [c.name for c in client.get_table(f"{main_db}.t").columns] == ["id", "other"]
    assert stage_dirs(client, main_db) == []


def test_a_replace_whose_target_was_dropped_meanwhile_aborts_and_creates_nothing(spark, client, main_db):
    # A refresh that finishes after its (dynamic) table was dropped must not bring the table back.
    target = f"{main_db}.t"
    client.create_table(target, "id bigint")
    stage = client.begin_stage(target, "id bigint", purpose="replace")
    write(spark, stage, [(1,)], "id bigint")
    client.drop_table(target)
    with pytest.raises(TableNotFoundError, match="dropped meanwhile"):
        client.commit_stage(stage.id)
    assert not client.table_exists(target)
    assert client.get_stage(stage.id).state is StageState.ABORTED
    # A REPLACE begun with no table there creates it, as before.
    fresh = client.begin_stage(target, "id bigint", purpose="replace")
    write(spark, fresh, [(2,)], "id bigint")
    assert client.commit_stage(fresh.id).state is StageState.COMMITTED
    assert rows(spark, target) == [(2,)]
    # Dropped and created again meanwhile (another table of the same name): not the one the
    # stage was begun for, so its rows do not replace the new table's.
    again = client.begin_stage(target, "id bigint", purpose="replace")
    write(spark, again, [(3,)], "id bigint")
    client.drop_table(target)
    time.sleep(1.1)  # HMS keeps a table's createTime in seconds
    client.create_table(target, "id bigint, label string")
    with pytest.raises(ConflictError, match="dropped and created again"):
        client.commit_stage(again.id)
    assert client.get_stage(again.id).state is StageState.ABORTED
    assert [c.name for c in client.get_table(target).columns] == ["id", "label"]
    assert rows(spark, target) == []


def test_replace_swaps_data_and_definition(spark, client, main_db):
    target = f"{main_db}.t"
    client.create_table(target, "id bigint", properties={"old": "1"})
    spark.createDataFrame([(1,), (2,)], "id bigint").write.insertInto(short(target))
    old_location = client.get_table(target).location

    stage = client.begin_stage(target, "id bigint, label string", purpose="replace", properties={"new": "2"})
    write(spark, stage, [(3, "c")], "id bigint, label string")
    assert rows(spark, target) == [(1,), (2,)]  # nothing visible before the commit
    done = client.commit_stage(stage.id)
    assert done.state is StageState.COMMITTED
    table = client.get_table(target)
    assert [c.name for c in table.columns] == ["id", "label"]
    assert table.properties.get("new") == "2" and "old" not in table.properties
    assert rows(spark, target) == [(3, "c")]
    # The replaced files stay for queries already running (replaced-data-retention) ...
    assert local_path(old_location).exists()
    retiring = [s for s in client.list_stages("main") if s.id == stage.id]
    assert retiring and retiring[0].state is StageState.COMMITTED
    assert client.commit_stage(stage.id).state is StageState.COMMITTED


def test_overwrite_partitions_replaces_only_the_written_partitions(spark, client, main_db):
    target = f"{main_db}.p"
    client.create_table(target, "id bigint", partitioned_by="ds string")
    spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id bigint, ds string").write.insertInto(short(target))
    stage = client.begin_stage(target, purpose="overwrite_partitions")
    assert [c.name for c in stage.columns] == ["id"] and [c.name for c in stage.partition_keys] == ["ds"]
    spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
    write(spark, stage, [(20, "b"), (40, "d")], "id bigint, ds string")
    client.commit_stage(stage.id)
    assert rows(spark, target) == [(1, "a"), (3, "c"), (20, "b"), (40, "d")]
    parts = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {short(target)}").collect())
    assert parts == ["ds=a", "ds=b", "ds=c", "ds=d"]
    # New partitions live under the target's own directory.
    table_dir = local_path(client.get_table(target).location)
    assert any(p.name.startswith(".catalogd-stage-") for p in table_dir.iterdir())


def test_overwrite_partitions_rejects_a_different_schema(client, main_db):
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    with pytest.raises(InvalidArgumentError, match="do not match"):
        client.begin_stage(f"{main_db}.p", "id string", "ds string", purpose="overwrite_partitions")
    client.create_table(f"{main_db}.flat", "id bigint")
    with pytest.raises(InvalidArgumentError, match="not partitioned"):
        client.begin_stage(f"{main_db}.flat", purpose="overwrite_partitions")
    with pytest.raises(TableNotFoundError):
        client.begin_stage(f"{main_db}.missing", purpose="overwrite_partitions")
    assert [s for s in client.list_stages("main") if s.database == main_db[5:]] == []


def test_replace_with_new_partition_keys_takes_the_weaker_path(spark, client, main_db):
    target = f"{main_db}.t"
    client.create_table(target, "id bigint, ds string")
    spark.createDataFrame([(1, "a")], "id bigint, ds string").write.insertInto(short(target))
    stage = client.begin_stage(target, "id bigint", partitioned_by="ds string", purpose="replace")
    write(spark, stage, [(2, "b"), (3, "c")], "id bigint, ds string")
    client.commit_stage(stage.id)
    table = client.get_table(target)
    assert [k.name for k in table.partition_keys] == ["ds"]
    assert rows(spark, target) == [(2, "b"), (3, "c")]


def test_bad_requests_change_nothing(client, main_db):
    before = client.list_stages("main")
    with pytest.raises(InvalidArgumentError):
        client.begin_stage(f"{main_db}.t", "id nosuchtype")
    with pytest.raises(InvalidArgumentError):
        client.begin_stage(f"{main_db}.__catalogd_stage_0123456789abcdef", "id bigint")
    with pytest.raises(InvalidArgumentError, match="are catalogd's own"):
        client.begin_stage(f"{main_db}.t", "id bigint", properties={"catalogd.stage.id": "x"})
    with pytest.raises(InvalidArgumentError):
        client.begin_stage(f"{main_db}.t", "id bigint, id string")
    with pytest.raises(InvalidArgumentError):
        client.commit_stage("not-a-stage-id")
    with pytest.raises(InvalidArgumentError):
        client.commit_stage(f"{main_db}.xyz")
    with pytest.raises(PermissionDeniedError):
        client.begin_stage(f"ro.{main_db[5:]}.t", "id bigint")
    client.create_database("scratch.s", if_not_exists=True)
    with pytest.raises(UnsupportedError):
        client.begin_stage("scratch.s.t", "id bigint")
    with pytest.raises(InvalidArgumentError):
        client.create_table(f"{main_db}.__catalogd_stage_x", "id bigint")
    assert client.list_stages("main") == before
    assert client.list_tables(main_db) == []


def test_heartbeat_extends_the_lease(client, main_db):
    stage = client.begin_stage(f"{main_db}.t", "id bigint", lease=5)
    later = client.heartbeat_stage(stage.id, lease=120)
    assert later.lease_deadline >= stage.lease_deadline + 100_000
    client.abort_stage(stage.id, writer_stopped=True)
    with pytest.raises(StageNotFoundError):
        client.heartbeat_stage(stage.id)


def test_lapsed_lease_refuses_commit(spark, client, main_db):
    stage = client.begin_stage(f"{main_db}.t", "id bigint", lease=1)
    write(spark, stage, [(1,)], "id bigint")
    wait_until(lambda: time.time() * 1000 > stage.lease_deadline + 100, 30, what="the 1s lease to lapse")
    with pytest.raises(ConflictError, match="lease lapsed"):
        client.commit_stage(stage.id)
    assert not client.table_exists(f"{main_db}.t")
    # The writer gives up, as staged_table does: nothing is left.
    assert client.abort_stage(stage.id, writer_stopped=True).state is StageState.ABORTED
    assert stage_dirs(client, main_db) == []


def test_stage_purposes_parse():
    assert StagePurpose.parse("overwrite-partitions") is StagePurpose.OVERWRITE_PARTITIONS
    with pytest.raises(InvalidArgumentError):
        StagePurpose.parse("merge")


def test_cli_stage_list_describe_abort(spark, client, main_db, run_cli):
    import json

    stage = client.begin_stage(f"{main_db}.t", "id bigint", owner="cli-test")
    listed = run_cli("--json", "stage", "list", "main")
    assert listed.code == 0, listed.stderr
    mine = [s for s in json.loads(listed.stdout) if s["id"] == stage.id]
    assert len(mine) == 1
    assert set(mine[0]) >= {"id", "target", "purpose", "state", "owner", "created", "lease_deadline",
                            "staging_table"}
    assert mine[0]["target"] == f"{main_db}.t" and mine[0]["state"] == "OPEN" and mine[0]["owner"] == "cli-test"
    assert mine[0]["staging_table"] == f"{main_db[5:]}.{stage.staging_table}"
    assert mine[0]["created"].endswith("Z") and mine[0]["lease_deadline"] > mine[0]["created"]
    text = run_cli("stage", "list", "main")
    assert text.code == 0 and stage.id in text.stdout
    described = run_cli("--json", "stage", "describe", stage.id)
    assert described.code == 0 and json.loads(described.stdout)["purpose"] == "CREATE"

    # An operator's abort: the writer may still run, so a tombstone keeps the files a lease.
    aborted = run_cli("stage", "abort", stage.id)
    assert aborted.code == 0, aborted.stderr
    assert stage.id in aborted.stdout
    tomb = json.loads(run_cli("--json", "stage", "describe", stage.id).stdout)
    assert tomb["state"] == "ABORTED" and "deleted after" in tomb["message"]
    with pytest.raises(ConflictError):
        client.heartbeat_stage(stage.id)
    with pytest.raises(ConflictError):
        client.commit_stage(stage.id)
    now = run_cli("stage", "abort", stage.id, "--writer-stopped")
    assert now.code == 0, now.stderr
    assert stage_dirs(client, main_db) == []
    bad = run_cli("stage", "abort", "nonsense")
    assert bad.code == 1 and bad.stderr.startswith("error: invalid-argument: ")
    assert len(bad.stderr.strip().splitlines()) == 1
    missing = run_cli("stage", "list", "nosuchcatalog")
    assert missing.code == 1 and missing.stderr.startswith("error: not-found: ")
    memory = run_cli("stage", "list", "scratch")
    assert memory.code == 1 and memory.stderr.startswith("error: unsupported: ")


def test_dropping_a_replaced_table_deletes_the_kept_data_at_once(spark, client, main_db):
    target = f"{main_db}.t"
    client.create_table(target, "id bigint")
    spark.createDataFrame([(1,)], "id bigint").write.insertInto(short(target))
    old_dir = local_path(client.get_table(target).location)
    stage = client.begin_stage(target, "id bigint", purpose="replace")
    write(spark, stage, [(2,)], "id bigint")
    client.commit_stage(stage.id)
    assert old_dir.exists()  # kept for readers (replaced-data-retention)
    client.drop_table(target)
    assert not old_dir.exists()
    assert [s for s in client.list_stages("main") if s.database == main_db[5:]] == []
    # A new table of the same name starts empty in that directory, and stays so.
    client.create_table(target, "id bigint")
    assert rows(spark, target) == []


def test_cli_stage_begin_heartbeat_commit(spark, client, main_db, run_cli):
    import json

    begun = run_cli("--json", "stage", "begin", f"{main_db}.t", "--schema", "id bigint", "--partitioned-by",
                    "ds string", "--lease", "2 min", "--property", "team=data")
    assert begun.code == 0, begun.stderr
    stage = json.loads(begun.stdout)
    assert stage["state"] == "OPEN" and stage["purpose"] == "CREATE"
    spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
    spark.createDataFrame([(1, "a")], "id bigint, ds string").write.insertInto(stage["staging_table"])
    beat = run_cli("--json", "stage", "heartbeat", stage["id"], "--lease", "5 min")
    assert beat.code == 0 and json.loads(beat.stdout)["lease_deadline"] > stage["lease_deadline"]
    done = run_cli("stage", "commit", stage["id"])
    assert done.code == 0, done.stderr
    assert "committed" in done.stdout
    assert client.get_table(f"{main_db}.t").properties["team"] == "data"
    assert rows(spark, f"{main_db}.t") == [(1, "a")]
    again = run_cli("--json", "stage", "commit", stage["id"])
    assert again.code == 0 and json.loads(again.stdout)["state"] == "COMMITTED"
    bad = run_cli("stage", "begin", f"{main_db}.u", "--schema", "id bigint", "--lease", "soon")
    assert bad.code == 2 and bad.stderr.startswith("error: usage: --lease")
    exists = run_cli("stage", "begin", f"{main_db}.t", "--schema", "id bigint")
    assert exists.code == 1 and exists.stderr.startswith("error: already-exists: ")
