"""Generic (connector) tables, FLIP-30: options round-trip exactly; Spark does not read them as Hive files."""

from __future__ import annotations

import pytest

from catalogd.errors import InvalidArgumentError

pytestmark = [pytest.mark.integration]

OPTIONS = {
    "connector": "kafka",
    "topic": "orders",
    "properties.bootstrap.servers": "k1:9092,k2:9092",
    "format": "json",
    "scan.startup.mode": "earliest-offset",
    "json.fail-on-missing-field": "false",
    "weird key with spaces": "value with = and , and 'quotes'",
    "comment": "an option, not the table comment",
}


def test_options_round_trip_exactly(client, db):
    made = client.create_table(f"{db}.events", "id bigint, payload string", comment="from kafka",
                               properties=OPTIONS)
    assert made.properties == OPTIONS
    assert made.format is None and made.location is None and made.comment == "from kafka"
    got = client.get_table(f"{db}.events")
    assert got.properties == OPTIONS and [c.name for c in got.columns] == ["id", "payload"]
    assert "events" in client.list_tables(db)
    altered = client.alter_table(f"{db}.events", set_properties={"topic": "orders-v2"},
                                 unset_properties=["scan.startup.mode"])
    expected = {**OPTIONS, "topic": "orders-v2"}
    del expected["scan.startup.mode"]
    assert altered.properties == expected
    with pytest.raises(InvalidArgumentError, match="connector"):
        client.alter_table(f"{db}.events", unset_properties=["connector"])
    with pytest.raises(InvalidArgumentError, match="no location"):
        client.create_table(f"{db}.bad", "id bigint", location="file:/tmp/x", properties={"connector": "jdbc"})
    client.drop_table(f"{db}.events")
    assert client.list_tables(db) == []


@pytest.mark.spark
def test_spark_sees_a_connector_table_not_a_hive_one(client, main_db, spark):
    client.create_table(f"{main_db}.jdbc_orders", "id bigint", properties={"connector": "jdbc", "url": "jdbc:x"})
    short = main_db.split(".", 1)[1]
    assert "jdbc_orders" in [t.name for t in spark.catalog.listTables(short)]
    with pytest.raises(Exception, match=r"(?i)catalogd\.generic\.jdbc"):
        spark.table(f"{short}.jdbc_orders").collect()
