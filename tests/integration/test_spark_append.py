"""Atomic appends (INSERT INTO through a stage) with real local Spark jobs on the session daemon's metastore."""

from __future__ import annotations

import pytest
from polling import wait_until

from catalogd import spark as cspark
from catalogd.model import StagePurpose, StageState

from .helpers import local_path, rows, short
from .test_spark_atomic import leftovers, open_stages

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def data_files(client, name: str) -> set[str]:
    """The target's visible data files, relative to its directory (stage directories are hidden)."""
    root = local_path(client.get_table(name).location)
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(root).parts)}


def stage_dirs(client, name: str) -> list[str]:
    root = local_path(client.get_table(name).location)
    return [p.name for p in root.iterdir() if p.name.startswith(".catalogd-stage-")]


def cleaned_up(client, main_db: str, target: str) -> None:
    """Wait until the committed appends' staging tables and directories are gone: the daemon drops
    them right after the commit, on its housekeeping worker (off the commit's path)."""
    wait_until(lambda: stage_dirs(client, target) == [] and leftovers(client, main_db) == [], 60,
               what="the committed appends' staging tables and directories to be dropped")


def test_append_to_an_unpartitioned_table(spark, client, main_db):
    target = f"{main_db}.events"
    cspark.atomic_ctas(spark, target, "SELECT id, 'old' AS tag FROM range(3)", client=client)
    before = data_files(client, target)
    stage = cspark.insert_into(spark, target, "SELECT id + 10, 'new' FROM range(2)", client=client)
    assert stage.state is StageState.COMMITTED and stage.purpose is StagePurpose.APPEND
    assert rows(spark, target) == [(0, "old"), (1, "old"), (2, "old"), (10, "new"), (11, "new")]
    after = data_files(client, target)
    # The old files are untouched; the new ones sit beside them, named after the stage.
    assert before < after and all(f.startswith(stage.id.rsplit(".", 1)[1] + "-") for f in after - before)
    # A retried commit (its reply lost) answers COMMITTED and appends nothing twice.
    assert client.commit_stage(stage.id).state is StageState.COMMITTED
    cspark.sql(spark, f"INSERT INTO {short(target)} SELECT 20, 'sql'", client=client)
    assert len(rows(spark, target)) == 6 and (20, "sql") in rows(spark, target)
    cleaned_up(client, main_db, target)
    assert client.get_table(target).properties.get("catalogd.last-commit") is not None


def test_append_to_new_and_existing_partitions(spark, client, main_db):
    target = f"{main_db}.daily"
    cspark.atomic_ctas(spark, target, "SELECT id, CAST(id % 2 AS STRING) AS ds FROM range(4)",
                       partition_by=["ds"], format="orc", client=client)
    before = data_files(client, target)
    db = short(main_db)
    # Partition ds=1 exists, ds=7 is new; a dynamic-partition INSERT INTO through sql().
    stage = cspark.sql(spark, f"INSERT INTO TABLE {db}.daily PARTITION (ds) "
                              "SELECT id + 100, IF(id = 0, '1', '7') FROM range(2)", client=client)
    assert stage.state is StageState.COMMITTED and stage.purpose is StagePurpose.APPEND
    assert rows(spark, target) == [(0, "0"), (1, "1"), (2, "0"), (3, "1"), (100, "1"), (101, "7")]
    assert before <= data_files(client, target)
    parts = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {db}.daily").collect())
    assert parts == ["ds=0", "ds=1", "ds=7"]
    # A static partition, existing again: appended, never overwriting the files of the last append.
    cspark.insert_into(spark, target, "SELECT 200", partition={"ds": "1"}, client=client)
    assert [r for r in rows(spark, target) if r[1] == "1"] == [(1, "1"), (3, "1"), (100, "1"), (200, "1")]
    assert client.commit_stage(stage.id).state is StageState.COMMITTED
    assert len(rows(spark, target)) == 7
    assert open_stages(client, main_db) == []
    wait_until(lambda: leftovers(client, main_db) == [], 60, what="the appends' staging tables to be dropped")


def test_a_failed_append_leaves_the_target_as_it_was(spark, client, main_db):
    from pyspark.sql.functions import udf

    @udf("bigint")
    def explode_at_700(x):
        if x == 700:
            raise ValueError("boom at 700")
        return x

    spark.udf.register("explode_at_700", explode_at_700)
    target = f"{main_db}.kept"
    cspark.atomic_ctas(spark, target, "SELECT id, CAST(id % 2 AS STRING) AS ds FROM range(4)",
                       partition_by=["ds"], client=client)
    before, expected = data_files(client, target), rows(spark, target)
    # Several tasks: some write their files into the stage before the failing one raises.
    df = spark.range(0, 1000, 1, 4).selectExpr("explode_at_700(id) AS id", "CAST(id % 3 AS STRING) AS ds")
    with pytest.raises(Exception, match="boom at 700"):
        cspark.insert_into(spark, target, df, client=client)
    assert rows(spark, target) == expected and data_files(client, target) == before
    cleaned_up(client, main_db, target)
    assert sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {short(target)}").collect()) == ["ds=0", "ds=1"]


def test_an_aborted_append_stage_leaves_nothing(spark, client, main_db):
    target = f"{main_db}.manual"
    cspark.atomic_ctas(spark, target, "SELECT 1 AS id", client=client)
    with pytest.raises(RuntimeError, match="changed my mind"), \
            cspark.staged_table(target, mode="append", client=client, spark=spark) as staged:
        assert staged.stage.purpose is StagePurpose.APPEND
        spark.createDataFrame([(2,)], "id bigint").write.insertInto(staged.name)
        raise RuntimeError("changed my mind")
    assert staged.result.state is StageState.ABORTED
    assert rows(spark, target) == [(1,)] and stage_dirs(client, target) == []


@pytest.mark.parametrize("fmt", ["csv", "textfile"])
def test_append_in_other_formats(spark, client, main_db, fmt):
    # csv is a Spark data source table (read where its `path` says), textfile a Hive serde table.
    target = f"{main_db}.in_{fmt}"
    cspark.atomic_ctas(spark, target, "SELECT id, 'old' AS tag FROM range(2)", format=fmt, client=client)
    cspark.insert_into(spark, target, "SELECT 5, 'new'", client=client)
    assert rows(spark, target) == [(0, "old"), (1, "old"), (5, "new")]
    cleaned_up(client, main_db, target)
