"""Partitions and statistics on a real HMS, through the client and the CLI, with Spark writing."""

from __future__ import annotations

import json

import pytest

from catalogd.errors import (
    InvalidArgumentError,
    PartitionAlreadyExistsError,
    PartitionNotFoundError,
    PermissionDeniedError,
    TableNotFoundError,
    UnsupportedError,
)

from .helpers import local_path

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def events(client, main_db, spark):
    """A table partitioned by (ds, hr) with Spark-written rows in three partitions."""
    name = f"{main_db}.events"
    client.create_table(name, "id bigint, payload string", partitioned_by="ds string, hr string")
    spark.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
    rows = [(1, "a", "2024-03-01", "00"), (2, "b", "2024-03-01", "01"), (3, "c", "2024-03-02", "00")]
    spark.createDataFrame(rows, "id bigint, payload string, ds string, hr string").write.insertInto(
        name.split(".", 1)[1])
    return name


def test_list_filter_get(client, events):
    parts = client.list_partitions(events)
    assert [p.name for p in parts] == ["ds=2024-03-01/hr=00", "ds=2024-03-01/hr=01", "ds=2024-03-02/hr=00"]
    assert parts[0].spec == {"ds": "2024-03-01", "hr": "00"}
    assert all(local_path(p.location).is_dir() for p in parts)
    assert parts[0].statistics.file_count and parts[0].statistics.total_size
    assert [p.name for p in client.list_partitions(events, "ds >= '2024-03-02'")] == ["ds=2024-03-02/hr=00"]
    assert [p.name for p in client.list_partitions(events, "ds = \"2024-03-01\" AND hr = '01'")] == [
        "ds=2024-03-01/hr=01"]
    assert client.list_partitions(events, "ds > '2025'") == []
    got = client.get_partition(events, "ds=2024-03-02/hr=00")
    assert got.location == parts[2].location
    assert client.get_partition(events, {"HR": "00", "ds": "2024-03-01"}).name == "ds=2024-03-01/hr=00"


def test_add_and_drop_with_flags(client, events, spark):
    added = client.add_partition(events, {"ds": "2024-03-03", "hr": "00"})
    assert added.location.endswith("/events/ds=2024-03-03/hr=00")
    with pytest.raises(PartitionAlreadyExistsError):
        client.add_partition(events, "ds=2024-03-03/hr=00")
    assert client.add_partition(events, "ds=2024-03-03/hr=00", if_not_exists=True).name == added.name
    elsewhere = local_path(client.get_database(events.rsplit(".", 1)[0]).location) / "outside"
    custom = client.add_partition(events, "ds=2024-03-04/hr=00", location=f"file:{elsewhere}")
    assert local_path(custom.location) == elsewhere and elsewhere.is_dir()
    short = events.split(".", 1)[1]
    assert spark.sql(f"SHOW PARTITIONS {short}").count() == 5

    files = local_path(client.get_partition(events, "ds=2024-03-01/hr=00").location)
    client.drop_partition(events, "ds=2024-03-01/hr=00")
    assert not files.exists()
    with pytest.raises(PartitionNotFoundError):
        client.drop_partition(events, "ds=2024-03-01/hr=00")
    client.drop_partition(events, "ds=2024-03-01/hr=00", if_exists=True)
    with pytest.raises(PartitionNotFoundError):
        client.get_partition(events, "ds=2024-03-01/hr=00")
    spark.catalog.refreshTable(short)
    assert sorted(r.id for r in spark.table(short).collect()) == [2, 3]


def test_bad_partition_requests(client, events, main_db):
    before = [p.name for p in client.list_partitions(events)]
    with pytest.raises(InvalidArgumentError, match="every partition key"):
        client.add_partition(events, "ds=2024-03-09")
    with pytest.raises(InvalidArgumentError, match="every partition key"):
        client.get_partition(events, "ds=x/hr=1/extra=2")
    with pytest.raises(InvalidArgumentError, match="key=value"):
        client.add_partition(events, "ds2024")
    with pytest.raises(InvalidArgumentError, match="bad partition filter"):
        client.list_partitions(events, "ds >>> nonsense (")
    client.create_table(f"{main_db}.flat", "id bigint")
    with pytest.raises(InvalidArgumentError, match="not partitioned"):
        client.list_partitions(f"{main_db}.flat")
    with pytest.raises(TableNotFoundError):
        client.list_partitions(f"{main_db}.missing")
    with pytest.raises(PermissionDeniedError):
        client.add_partition(f"ro.{events.split('.', 1)[1]}", "ds=2024-03-09/hr=00")
    client.create_database("scratch.p", if_not_exists=True)
    client.create_table("scratch.p.t", "id bigint", partitioned_by="ds string", if_not_exists=True)
    with pytest.raises(UnsupportedError):
        client.list_partitions("scratch.p.t")
    assert [p.name for p in client.list_partitions(events)] == before


def test_partitions_made_by_spark_and_statistics(client, main_db, spark):
    db = main_db.split(".", 1)[1]
    spark.sql(f"CREATE TABLE {db}.sp (id INT) PARTITIONED BY (ds STRING) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {db}.sp PARTITION (ds='x') VALUES (1), (2)")
    spark.sql(f"ALTER TABLE {db}.sp ADD PARTITION (ds='y')")
    assert [p.name for p in client.list_partitions(f"{main_db}.sp")] == ["ds=x", "ds=y"]
    spark.sql(f"ANALYZE TABLE {db}.sp PARTITION (ds) COMPUTE STATISTICS")
    assert client.get_partition(f"{main_db}.sp", "ds=x").statistics.row_count == 2

    client.create_table(f"{main_db}.plain", "id bigint")
    assert not client.get_table(f"{main_db}.plain").statistics.row_count
    spark.range(5).write.insertInto(f"{db}.plain")
    spark.sql(f"ANALYZE TABLE {db}.plain COMPUTE STATISTICS")
    stats = client.get_table(f"{main_db}.plain").statistics
    assert stats.row_count == 5 and stats.file_count >= 1 and stats.total_size > 0


def test_cli_partitions(client, events, run_cli):
    listed = run_cli("--json", "table", "partitions", events, "--filter", "hr = '00'")
    assert listed.code == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert [p["name"] for p in data] == ["ds=2024-03-01/hr=00", "ds=2024-03-02/hr=00"]
    assert data[0]["values"] == {"ds": "2024-03-01", "hr": "00"}
    assert set(data[0]) == {"name", "values", "location", "properties", "created", "statistics"}
    assert set(data[0]["statistics"]) == {"row_count", "total_size", "file_count"}
    added = run_cli("--json", "table", "partition", "add", events, "ds=2024-04-01", "hr=05")
    assert added.code == 0, added.stderr
    assert json.loads(added.stdout)["name"] == "ds=2024-04-01/hr=05"
    again = run_cli("table", "partition", "add", events, "ds=2024-04-01", "hr=05")
    assert again.code == 1 and again.stderr.startswith("error: already-exists: ")
    described = run_cli("table", "partition", "describe", events, "ds=2024-04-01/hr=05")
    assert described.code == 0 and "ds=2024-04-01/hr=05" in described.stdout
    dropped = run_cli("table", "partition", "drop", events, "ds=2024-04-01", "hr=05")
    assert dropped.code == 0 and "dropped partition" in dropped.stdout
    missing = run_cli("table", "partition", "drop", events, "ds=2024-04-01", "hr=05")
    assert missing.code == 1 and missing.stderr.startswith("error: not-found: ")
    assert run_cli("table", "partition", "drop", events, "ds=2024-04-01", "hr=05", "--if-exists").code == 0
    bad = run_cli("table", "partitions", events, "--filter", "((")
    assert bad.code == 1 and bad.stderr.startswith("error: invalid-argument: ")
    desc = run_cli("--json", "table", "describe", events)
    assert set(json.loads(desc.stdout)["statistics"]) == {"row_count", "total_size", "file_count"}
    text = run_cli("table", "describe", events)
    assert "statistics" in text.stdout
