"""Views on both backends, and Spark interop both ways on the hive one."""

from __future__ import annotations

import decimal
import json

import pytest

from catalogd.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    PermissionDeniedError,
    ViewAlreadyExistsError,
    ViewNotFoundError,
)

pytestmark = [pytest.mark.integration]
D = decimal.Decimal


@pytest.fixture
def orders(client, db):
    client.create_table(f"{db}.orders", "id bigint, amount decimal(10,2), customer string", partitioned_by="ds string")
    client.create_table(f"{db}.customers", "customer string, country string")
    return db


def test_create_list_describe_alter_rename_drop(client, orders):
    db = orders
    view = client.create_view(f"{db}.big", "SELECT * FROM orders WHERE amount > 10", comment="big ones",
                              properties={"team": "sales"})
    assert [(c.name, c.type) for c in view.columns] == [
        ("id", "bigint"), ("amount", "decimal(10,2)"), ("customer", "string"), ("ds", "string")]
    assert view.view_text == "SELECT * FROM orders WHERE amount > 10"
    assert "*" not in view.view_expanded_text and f"`{db.split('.')[1]}`.`orders`" in view.view_expanded_text
    assert view.comment == "big ones" and view.properties.get("team") == "sales"
    assert client.list_views(db) == ["big"]
    assert client.list_tables(db) == ["customers", "orders"]
    assert client.get_view(f"{db}.big").view_expanded_text == view.view_expanded_text

    with pytest.raises(ViewAlreadyExistsError):
        client.create_view(f"{db}.big", "SELECT 1 AS x")
    assert client.create_view(f"{db}.big", "SELECT nonsense FROM nowhere", if_not_exists=True).view_text == (
        view.view_text)
    with pytest.raises(ViewAlreadyExistsError, match="is a table"):
        client.create_view(f"{db}.orders", "SELECT 1 AS x", if_not_exists=True)

    altered = client.alter_view(f"{db}.big", query="SELECT o.id, c.country FROM orders o JOIN customers c "
                                                   "ON o.customer = c.customer", comment="joined",
                                set_properties={"x": "1"}, unset_properties=["team"])
    assert [c.name for c in altered.columns] == ["id", "country"]
    assert altered.comment == "joined" and altered.properties.get("x") == "1" and "team" not in altered.properties

    client.rename_view(f"{db}.big", "joined")
    assert client.list_views(db) == ["joined"]
    with pytest.raises(ViewNotFoundError):
        client.rename_view(f"{db}.big", "other")
    client.rename_view(f"{db}.big", "other", if_exists=True)
    with pytest.raises(ViewNotFoundError, match="is a table"):
        client.drop_view(f"{db}.orders")
    client.drop_view(f"{db}.joined")
    with pytest.raises(ViewNotFoundError):
        client.drop_view(f"{db}.joined")
    client.drop_view(f"{db}.joined", if_exists=True)
    assert client.list_views(db) == []
    assert client.list_tables(db) == ["customers", "orders"]


def test_bad_views_change_nothing(client, orders):
    db = orders
    for query, message in [
        ("SELECT nope FROM orders", "could not be resolved"),
        ("SELECT * FROM missing", "does not exist"),
        ("DELETE FROM orders", "one SELECT"),
        ("SELECT id, id FROM orders", "two columns"),
    ]:
        with pytest.raises(InvalidArgumentError, match=message):
            client.create_view(f"{db}.v", query)
    client.create_view(f"{db}.v", "SELECT id FROM orders")
    with pytest.raises(InvalidArgumentError):
        client.alter_view(f"{db}.v", query="SELECT gone FROM orders")
    assert client.get_view(f"{db}.v").view_text == "SELECT id FROM orders"
    assert client.list_views(db) == ["v"]
    with pytest.raises(DatabaseNotFoundError):
        client.list_views(f"{db}_missing")
    with pytest.raises(ViewNotFoundError):
        client.get_view(f"{db}.orders")


def test_read_only_catalog_refuses_views(client, main_db):
    client.create_table(f"{main_db}.t", "id bigint")
    with pytest.raises(PermissionDeniedError):
        client.create_view(f"ro.{main_db[5:]}.v", "SELECT id FROM t")
    assert client.list_views(f"ro.{main_db[5:]}") == []


@pytest.mark.spark
def test_spark_reads_a_view_created_through_catalogd(client, main_db, spark):
    short = main_db.split(".", 1)[1]
    client.create_table(f"{main_db}.orders", "id bigint, amount decimal(10,2), customer string")
    spark.createDataFrame([(1, D("5.00"), "ada"), (2, D("20.50"), "bob"), (3, D("30.25"), "ada")],
                          "id bigint, amount decimal(10,2), customer string").write.insertInto(f"{short}.orders")
    client.create_view(f"{main_db}.totals", "WITH big AS (SELECT * FROM orders WHERE amount > 10) "
                                            "SELECT customer, sum(amount) AS total, count(*) AS n FROM big "
                                            "GROUP BY customer")
    got = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {short}.totals").collect())
    assert got == [("ada", D("30.25"), 1), ("bob", D("20.50"), 1)]
    assert [f.name for f in spark.table(f"{short}.totals").schema.fields] == ["customer", "total", "n"]


@pytest.mark.spark
def test_a_view_created_by_spark_is_listed_and_described(client, main_db, spark):
    short = main_db.split(".", 1)[1]
    client.create_table(f"{main_db}.orders", "id bigint, customer string")
    spark.sql(f"CREATE VIEW {short}.ada_orders COMMENT 'from spark' AS "
              f"SELECT id FROM {short}.orders WHERE customer = 'ada'")
    assert client.list_views(main_db) == ["ada_orders"]
    assert client.list_tables(main_db) == ["orders"]
    view = client.get_view(f"{main_db}.ada_orders")
    assert [(c.name, c.type) for c in view.columns] == [("id", "bigint")]
    assert "customer = 'ada'" in view.view_text
    assert view.comment == "from spark"


def test_cli_views(client, orders, run_cli):
    db = orders
    made = run_cli("--json", "view", "create", f"{db}.v", "--query", "SELECT id, amount FROM orders",
                   "--comment", "c")
    assert made.code == 0, made.stderr
    data = json.loads(made.stdout)
    assert set(data) == {"catalog", "database", "name", "columns", "query", "expanded_query", "comment",
                         "properties", "owner", "created"}
    assert [c["name"] for c in data["columns"]] == ["id", "amount"]
    assert json.loads(run_cli("--json", "view", "list", db).stdout) == ["v"]
    assert run_cli("view", "describe", f"{db}.v").code == 0
    bad = run_cli("view", "create", f"{db}.w", "--query", "SELECT nope FROM orders")
    assert bad.code == 1 and bad.stderr.startswith("error: invalid-argument: ")
    nothing = run_cli("view", "alter", f"{db}.v")
    assert nothing.code == 2 and nothing.stderr.startswith("error: usage: ")
    assert run_cli("view", "alter", f"{db}.v", "--comment", "new").code == 0
    assert run_cli("view", "rename", f"{db}.v", "w").code == 0
    assert run_cli("view", "drop", f"{db}.w").code == 0
    missing = run_cli("view", "drop", f"{db}.w")
    assert missing.code == 1 and missing.stderr.startswith("error: not-found: ")
    assert run_cli("view", "drop", f"{db}.w", "--if-exists").code == 0
