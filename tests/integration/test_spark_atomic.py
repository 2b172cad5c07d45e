"""catalogd.spark's atomic writes, with real local Spark jobs on the session daemon's metastore."""

from __future__ import annotations

import threading

import pytest
from polling import wait_until

from catalogd import spark as cspark
from catalogd.errors import InvalidArgumentError, TableAlreadyExistsError
from catalogd.model import StageState

from .helpers import local_path, rows, short

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def open_stages(client, db: str) -> list[str]:
    """Stages of a database that are not committed (committed REPLACEs keep a retiring stage for a while)."""
    database = db.split(".", 1)[1]
    return [s.id for s in client.list_stages("main") if s.database == database and s.state is not StageState.COMMITTED]


def leftovers(client, db: str) -> list[str]:
    """Staging tables (any state) and staging directories left in a database."""
    database = db.split(".", 1)[1]
    stages = [s.staging_table for s in client.list_stages("main") if s.database == database]
    location = local_path(client.get_database(db).location)
    dirs = [p.name for p in location.iterdir() if "stage" in p.name] if location.exists() else []
    return stages + dirs


def test_atomic_ctas_from_a_query(spark, client, main_db):
    target = f"{main_db}.squares"
    stage = cspark.atomic_ctas(spark, target, "SELECT id, id * id AS sq FROM range(5)", client=client)
    assert stage.state is StageState.COMMITTED
    assert rows(spark, target) == [(i, i * i) for i in range(5)]
    assert [c.type for c in client.get_table(target).columns] == ["bigint", "bigint"]
    with pytest.raises(TableAlreadyExistsError):
        cspark.atomic_ctas(spark, target, "SELECT 1 AS id, 2 AS sq", client=client)
    skipped = cspark.atomic_ctas(spark, target, "SELECT 1 AS id, 2 AS sq", mode="create_if_not_exists",
                                 client=client)
    assert skipped.state is StageState.ABORTED
    replaced = cspark.atomic_ctas(spark, target, "SELECT 'x' AS name", mode="replace", client=client)
    assert replaced.state is StageState.COMMITTED
    assert rows(spark, target) == [("x",)]
    assert open_stages(client, main_db) == []


def test_atomic_ctas_with_dynamic_partitions(spark, client, main_db):
    target = f"{main_db}.by_day"
    df = spark.createDataFrame(
        [("2024-03-01", 1, 1.5), ("2024-03-01", 2, 2.5), ("2024-03-02", 3, 3.5)], "ds string, id int, amount double"
    )
    cspark.atomic_ctas(spark, target, df, partition_by=["ds"], format="orc", client=client)
    table = client.get_table(target)
    assert [c.name for c in table.columns] == ["id", "amount"]
    assert [k.name for k in table.partition_keys] == ["ds"]
    assert table.format.value == "orc"
    assert rows(spark, target) == [(1, 1.5, "2024-03-01"), (2, 2.5, "2024-03-01"), (3, 3.5, "2024-03-02")]
    parts = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {short(target)}").collect())
    assert parts == ["ds=2024-03-01", "ds=2024-03-02"]


def test_a_job_that_fails_half_way_leaves_nothing(spark, client, main_db):
    from pyspark.sql.functions import udf

    @udf("bigint")
    def explode_at_7000(x):
        if x == 7000:
            raise ValueError("boom at 7000")
        return x

    spark.udf.register("explode_at_7000", explode_at_7000)
    target = f"{main_db}.doomed"
    # Several tasks: some finish and write files before the failing one raises.
    df = spark.range(0, 10000, 1, 4).selectExpr("explode_at_7000(id) AS id")
    with pytest.raises(Exception, match="boom at 7000"):
        cspark.atomic_ctas(spark, target, df, client=client)
    assert not client.table_exists(target)
    assert leftovers(client, main_db) == []
    assert client.list_tables(main_db) == []


def test_staged_table_commits_on_exit_and_aborts_on_error(spark, client, main_db):
    target = f"{main_db}.manual"
    with cspark.staged_table(target, "id bigint, ds string", partition_by="ds", client=client) as staged:
        assert staged.active and staged.name.startswith(main_db.split(".")[1] + ".__catalogd_stage_")
        spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
        spark.createDataFrame([(1, "a")], "id bigint, ds string").write.insertInto(staged.name)
        assert not client.table_exists(target)
    assert staged.result.state is StageState.COMMITTED
    assert rows(spark, target) == [(1, "a")]

    with (
        pytest.raises(RuntimeError, match="changed my mind"),
        cspark.staged_table(f"{main_db}.other", "id bigint", client=client) as staged,
    ):
        spark.createDataFrame([(1,)], "id bigint").write.insertInto(staged.name)
        raise RuntimeError("changed my mind")
    assert staged.result.state is StageState.ABORTED
    assert not client.table_exists(f"{main_db}.other")
    assert leftovers(client, main_db) == []


def test_heartbeats_keep_a_slow_job_alive(spark, client, main_db):
    import time

    with cspark.staged_table(f"{main_db}.slow", "id bigint", lease=1.5, client=client) as staged:
        # A fixed wait on purpose: it proves the stage does not lapse although it outlives its lease
        # several times (only heartbeats keep it open).
        time.sleep(4)
        spark.createDataFrame([(1,)], "id bigint").write.insertInto(staged.name)
    assert staged.result.state is StageState.COMMITTED


def test_sql_statements(spark, client, main_db):
    db = main_db.split(".", 1)[1]
    spark.sql(f"CREATE TABLE {db}.src (id INT, ds STRING) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {db}.src VALUES (1, 'a'), (2, 'a'), (3, 'b')")

    stage = cspark.sql(spark, f"CREATE TABLE {db}.t1 USING parquet PARTITIONED BY (ds) COMMENT 'made by sql' "
                              f"TBLPROPERTIES ('team'='data') AS SELECT id, ds FROM {db}.src", client=client)
    assert stage.state is StageState.COMMITTED
    t1 = client.get_table(f"{main_db}.t1")
    assert t1.comment == "made by sql" and t1.properties["team"] == "data"
    assert [k.name for k in t1.partition_keys] == ["ds"]
    assert rows(spark, f"{main_db}.t1") == [(1, "a"), (2, "a"), (3, "b")]

    assert cspark.sql(spark, f"CREATE TABLE IF NOT EXISTS {db}.t1 AS SELECT 1 AS x",
                      client=client).state is StageState.ABORTED
    cspark.sql(spark, f"CREATE OR REPLACE TABLE {db}.t2 STORED AS ORC AS SELECT id FROM {db}.src", client=client)
    assert rows(spark, f"{main_db}.t2") == [(1,), (2,), (3,)]
    cspark.sql(spark, f"REPLACE TABLE {db}.t2 AS SELECT id * 10 AS id FROM {db}.src WHERE ds = 'b'", client=client)
    assert rows(spark, f"{main_db}.t2") == [(30,)]

    # INSERT OVERWRITE: a static partition, dynamic partitions, an unpartitioned table.
    cspark.sql(spark, f"INSERT OVERWRITE TABLE {db}.t1 PARTITION (ds='a') SELECT 100", client=client)
    assert rows(spark, f"{main_db}.t1") == [(3, "b"), (100, "a")]
    cspark.sql(spark, f"INSERT OVERWRITE TABLE {db}.t1 PARTITION (ds) SELECT id + 200, 'c' FROM {db}.src "
                      "WHERE id = 1", client=client)
    assert rows(spark, f"{main_db}.t1") == [(3, "b"), (100, "a"), (201, "c")]
    cspark.sql(spark, f"INSERT OVERWRITE {db}.t2 SELECT 7", client=client)
    assert rows(spark, f"{main_db}.t2") == [(7,)]

    # Anything else is Spark's.
    assert cspark.sql(spark, f"SELECT count(*) FROM {db}.src", client=client).first()[0] == 3
    with pytest.raises(InvalidArgumentError):
        cspark.sql(spark, f"INSERT OVERWRITE TABLE {db}.t1 PARTITION (nope='x') SELECT 1", client=client)
    assert open_stages(client, main_db) == []


def test_eight_concurrent_ctas_on_one_target(spark, client, main_db):
    from catalogd.client import CatalogClient

    target = f"{main_db}.race"
    outcomes: dict[int, str] = {}

    def job(n: int) -> None:
        with CatalogClient(client.address) as own:
            try:
                cspark.atomic_ctas(spark, target, f"SELECT {n} AS writer, id FROM range(1000)", client=own)
                outcomes[n] = "committed"
            except TableAlreadyExistsError:
                outcomes[n] = "already-exists"
            except Exception as e:  # pragma: no cover - shown in the assertion
                outcomes[n] = f"{type(e).__name__}: {e}"

    threads = [threading.Thread(target=job, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [n for n, o in outcomes.items() if o == "committed"]
    assert len(winners) == 1, outcomes
    assert sorted(outcomes.values()).count("already-exists") == 7, outcomes
    data = spark.table(short(target)).groupBy("writer").count().collect()
    assert [(r["writer"], r["count"]) for r in data] == [(winners[0], 1000)]
    assert leftovers(client, main_db) == []


def test_replace_while_a_reader_counts(spark, client, main_db):
    target = f"{main_db}.flip"
    #: The table's size after each replace (distinct: a count tells which table a reader saw, and a
    #: mixture of two is none of them).
    sizes = [1000]
    cspark.atomic_ctas(spark, target, f"SELECT id FROM range({sizes[0]})", client=client)
    seen: list[tuple[int, int]] = []  # (replaces done when the count began, the count)
    errors: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        session = spark.newSession()  # its own relation cache, like another user's session
        while not stop.is_set():
            done = len(sizes) - 1
            try:
                session.catalog.refreshTable(short(target))
                seen.append((done, session.table(short(target)).count()))
            except Exception as e:
                errors.append(str(e)[:200])

    def counted_since(done: int) -> bool:
        if errors:
            raise AssertionError(errors[:3])
        return any(began >= done for began, _ in seen)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        # The reader is at work before the first replace, however slowly a busy machine starts it.
        wait_until(lambda: counted_since(0), 120, what="the reader's first count")
        for i in range(1, 5):
            cspark.atomic_ctas(spark, target, f"SELECT id FROM range({1000 * (i + 1)})", mode="replace",
                               client=client)
            sizes.append(1000 * (i + 1))
            # The reader counts again after each replace (the next one waits for it).
            wait_until(lambda: counted_since(len(sizes) - 1), 120, what=f"a count after replace {i}")
    finally:
        stop.set()
        thread.join()
    assert errors == [], errors[:3]
    # A count begun after k replaces saw the k-th table, or the next one if that replace ended meanwhile.
    wrong = [(began, count) for began, count in seen if count not in sizes[began:began + 2]]
    assert not wrong, (wrong, sizes)
    # And the reader saw every replace.
    assert {count for _, count in seen} == set(sizes), (seen, sizes)


def test_atomic_writes_off_falls_back_to_spark(spark, client, main_db, daemon_factory, daemon):
    from catalogd.client import CatalogClient

    # The session Spark runs on catalogd's HMS endpoint; this second daemon's catalog uses that
    # endpoint as its metastore (catalogd in front of catalogd), so it is the session's metastore.
    uri = daemon.hms_uri
    plain = daemon_factory(name="plain", catalogs=[{
        "name": "main", "type": "hive", "atomic-writes": False,
        "connection": {"hive.metastore.uris": uri},
    }])
    with CatalogClient(plain.address) as other:
        assert other.get_catalog("main").atomic_writes is False
        result = cspark.atomic_ctas(spark, f"{main_db}.plain", "SELECT 1 AS id", client=other)
    assert result is None
    assert rows(spark, f"{main_db}.plain") == [(1,)]
    assert client.get_catalog("main").atomic_writes is True
