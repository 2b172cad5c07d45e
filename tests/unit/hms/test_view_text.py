"""View texts and Spark's view properties mapped between a prefixed catalog's backing names and the endpoint's.

The texts and properties below are what PySpark 4 stored in a Hive 2.3 metastore
for ``CREATE VIEW`` statements (captured with a local SparkSession on an embedded
metastore; the session's current database was ``sales``, then ``other``).
"""

from __future__ import annotations

import copy
import logging

import pytest
import sqlglot

from catalogd.hive_idl import ttypes
from catalogd.hms.view_text import foreign_references, rewrite_text, view_to_backing, view_to_client

P = "p__"


def spark_params(namespace: str) -> dict[str, str]:
    """The properties Spark 4 stores with a view (current catalog ``spark_catalog``, database ``namespace``)."""
    return {
        "view.query.out.col.0": "id",
        "view.query.out.numCols": "1",
        "view.catalogAndNamespace.numParts": "2",
        "view.catalogAndNamespace.part.0": "spark_catalog",
        "view.catalogAndNamespace.part.1": namespace,
        "view.referredTempViewNames": "[]",
        "view.referredTempFunctionsNames": "[]",
        "view.referredTempVariablesNames": "[]",
        "view.sqlConfig.spark.sql.ansi.enabled": "true",
        "view.sqlConfig.spark.sql.session.timeZone": "Etc/UTC",
        "view.schemaMode": "COMPENSATION",
        "spark.sql.create.version": "4.3.0",
        "spark.sql.sources.schema": '{"type":"struct","fields":[{"name":"id","type":"integer"}]}',
        "transient_lastDdlTime": "1795466889",
    }


def view(db: str, name: str, text: str, namespace: str | None, expanded: str | None = None) -> ttypes.Table:
    return ttypes.Table(
        dbName=db,
        tableName=name,
        tableType="VIRTUAL_VIEW",
        viewOriginalText=text,
        viewExpandedText=text if expanded is None else expanded,
        parameters=spark_params(namespace) if namespace else {},
    )


# (view's db, name, text Spark stored, Spark's current database at creation, the text through the endpoint)
SPARK_VIEWS = [
    (
        "sales",
        "v_join",
        "SELECT o.id, c.name FROM orders o JOIN other.custs c ON o.cust = c.id",
        "sales",
        "SELECT o.id, c.name FROM p__sales.orders o JOIN p__other.custs c ON o.cust = c.id",
    ),
    (
        "other",
        "v_cte",
        "WITH big AS (SELECT * FROM Sales.Orders WHERE amount > 10) "
        "SELECT big.id, (SELECT count(*) FROM `other`.`custs`) AS n FROM big",
        "sales",
        "WITH big AS (SELECT * FROM p__Sales.Orders WHERE amount > 10) "
        "SELECT big.id, (SELECT count(*) FROM `p__other`.`custs`) AS n FROM big",
    ),
    (
        "sales",
        "v_cat",
        "SELECT * FROM spark_catalog.sales.orders",
        "sales",
        "SELECT * FROM spark_catalog.p__sales.orders",
    ),
    (
        "sales",
        "v_bt",
        "SELECT `id`, upper(cust) AS U, 'orders.x' AS lit FROM `orders` t",
        "sales",
        "SELECT `id`, upper(cust) AS U, 'orders.x' AS lit FROM `p__sales`.`orders` t",
    ),
    (
        "sales",
        "v_sub",
        "SELECT t.cust, sum(t.amount) AS total  -- per customer\n"
        "FROM (SELECT * FROM sales.orders WHERE amount > 0) t\nGROUP BY t.cust",
        "other",
        "SELECT t.cust, sum(t.amount) AS total  -- per customer\n"
        "FROM (SELECT * FROM p__sales.orders WHERE amount > 0) t\nGROUP BY t.cust",
    ),
    (
        "sales",
        "v_win",
        "SELECT id, rank() OVER (PARTITION BY cust ORDER BY amount DESC) AS r, o.addr.city FROM Sales.ORDERS o",
        "other",
        "SELECT id, rank() OVER (PARTITION BY cust ORDER BY amount DESC) AS r, o.addr.city FROM p__Sales.ORDERS o",
    ),
    (
        "sales",
        "v_lat",
        "SELECT id, tag FROM spark_catalog.sales.orders LATERAL VIEW explode(tags) x AS tag",
        "other",
        "SELECT id, tag FROM spark_catalog.p__sales.orders LATERAL VIEW explode(tags) x AS tag",
    ),
    (
        "other",
        "v_union",
        "SELECT id FROM custs UNION ALL SELECT cast(id AS STRING) FROM sales.orders "
        "WHERE cust IN (SELECT id FROM `custs`)",
        "other",
        "SELECT id FROM p__other.custs UNION ALL SELECT cast(id AS STRING) FROM p__sales.orders "
        "WHERE cust IN (SELECT id FROM `p__other`.`custs`)",
    ),
    (
        "sales",
        "v_cols",
        "SELECT sales.orders.id, orders.amount FROM sales.orders",
        "other",
        "SELECT p__sales.orders.id, orders.amount FROM p__sales.orders",
    ),
]


@pytest.mark.parametrize(("db", "name", "text", "namespace", "client"), SPARK_VIEWS, ids=[v[1] for v in SPARK_VIEWS])
def test_spark_views_map_to_the_endpoint_and_back(db, name, text, namespace, client):
    backing = view(db, name, text, namespace)
    table = copy.deepcopy(backing)
    view_to_client(table, P)
    assert table.viewOriginalText == client
    assert table.viewExpandedText == client
    assert table.parameters["view.catalogAndNamespace.part.1"] == P + namespace
    assert table.parameters["view.catalogAndNamespace.part.0"] == "spark_catalog"
    # Everything else is as Spark stored it.
    unchanged = {k: v for k, v in table.parameters.items() if k != "view.catalogAndNamespace.part.1"}
    assert unchanged == {k: v for k, v in backing.parameters.items() if k != "view.catalogAndNamespace.part.1"}
    assert table.dbName == db  # the router renames the table's own database
    assert sqlglot.parse_one(client, read="spark") is not None
    assert foreign_references(table, P) == []

    view_to_backing(table, P)
    assert table.parameters == backing.parameters
    # Unqualified names came back qualified with their (backing) database: the same tables.
    assert sqlglot.parse_one(table.viewOriginalText, read="spark") is not None
    assert table.viewOriginalText == client.replace(P, "")


def test_unqualified_names_resolve_in_the_creation_namespace_not_the_views_database():
    # ``USE other; CREATE VIEW sales.v AS SELECT * FROM custs``: custs is other.custs.
    table = view("sales", "v", "SELECT * FROM custs", "other")
    view_to_client(table, P)
    assert table.viewOriginalText == "SELECT * FROM p__other.custs"


def test_without_spark_properties_unqualified_names_are_the_views_database():
    # A view Hive (or an older client) made: no catalogAndNamespace properties.
    table = view("sales", "v", "SELECT * FROM orders", None, expanded="SELECT `orders`.`id` FROM `sales`.`orders`")
    view_to_client(table, P)
    assert table.viewOriginalText == "SELECT * FROM p__sales.orders"
    assert table.viewExpandedText == "SELECT `orders`.`id` FROM `p__sales`.`orders`"


def test_spark2_default_database_property_is_mapped():
    table = view("sales", "v", "SELECT * FROM orders", None)
    table.parameters = {"view.default.database": "other"}
    view_to_client(table, P)
    assert table.parameters == {"view.default.database": "p__other"}
    assert table.viewOriginalText == "SELECT * FROM p__other.orders"
    view_to_backing(table, P)
    assert table.parameters == {"view.default.database": "other"}


def test_catalogd_expanded_text_keeps_its_quoting():
    expanded = "SELECT CAST(`t`.`id` AS BIGINT) AS `id` FROM `sales`.`orders` AS `t` WHERE `t`.`cust` = 'a.b'"
    table = view("sales", "v", "SELECT id FROM sales.orders t WHERE cust = 'a.b'", "sales", expanded=expanded)
    view_to_client(table, P)
    assert table.viewExpandedText == expanded.replace("`sales`", "`p__sales`")
    assert table.viewOriginalText == "SELECT id FROM p__sales.orders t WHERE cust = 'a.b'"


def test_cte_names_subquery_aliases_columns_functions_and_literals_are_untouched():
    text = (
        "WITH recent AS (SELECT * FROM orders WHERE ds > '2024'), "
        "orders AS (SELECT * FROM orders) "  # a CTE shadowing the table: inside it, the table
        "SELECT r.id, lower(r.cust), db2.my_udf(r.id), r.addr.city, 'sales.orders' AS s, `recent`.id "
        "FROM recent r JOIN orders o ON r.id = o.id JOIN (SELECT 1 AS one) sub ON true, range(3) "
        "/* from sales.orders */"
    )
    out = rewrite_text(text, lambda d: P + d, "p__sales")
    assert out == (
        "WITH recent AS (SELECT * FROM p__sales.orders WHERE ds > '2024'), "
        "orders AS (SELECT * FROM p__sales.orders) "
        "SELECT r.id, lower(r.cust), p__db2.my_udf(r.id), r.addr.city, 'sales.orders' AS s, `recent`.id "
        "FROM recent r JOIN orders o ON r.id = o.id JOIN (SELECT 1 AS one) sub ON true, range(3) "
        "/* from sales.orders */"
    )


def test_names_that_are_not_metastore_databases_are_untouched():
    text = "SELECT * FROM global_temp.g, other_cat.db.t, parquet.`/data/x`, spark_catalog.db.t"
    table = view("sales", "v", text, "sales")
    view_to_client(table, P)
    assert table.viewOriginalText == (
        "SELECT * FROM global_temp.g, other_cat.db.t, parquet.`/data/x`, spark_catalog.p__db.t"
    )


def test_mixed_case_prefix_is_stripped_case_insensitively():
    table = view("sales", "v", "SELECT * FROM P__Sales.Orders JOIN `p__OTHER`.c", "p__sales")
    view_to_backing(table, P)
    assert table.viewOriginalText == "SELECT * FROM Sales.Orders JOIN `OTHER`.c"
    assert table.parameters["view.catalogAndNamespace.part.1"] == "sales"


def test_a_name_that_becomes_a_keyword_is_quoted():
    table = view("sales", "v", "SELECT * FROM p__order.t, p__my_db.u", "p__order")
    view_to_backing(table, P)
    assert table.viewOriginalText == "SELECT * FROM `order`.t, my_db.u"
    assert table.parameters["view.catalogAndNamespace.part.1"] == "order"


def test_an_odd_prefix_is_quoted():
    table = view("sales", "v", "SELECT * FROM orders", "sales")
    view_to_client(table, "team-a.")
    assert table.viewOriginalText == "SELECT * FROM `team-a.sales`.orders"


def test_foreign_references_name_other_catalogs_databases():
    table = view("p__sales", "v", "SELECT * FROM p__sales.a JOIN default.b JOIN global_temp.g JOIN c", "p__sales")
    assert foreign_references(table, P) == ["default"]


def test_unparseable_text_is_left_as_it_was_with_a_warning(caplog):
    text = "SELECT FROM WHERE ((("
    table = view("sales", "v", text, "sales")
    with caplog.at_level(logging.WARNING, logger="catalogd.hms.view_text"):
        view_to_client(table, P)
    assert table.viewOriginalText == text and table.viewExpandedText == text
    assert "sales.v" in caplog.text and "not rewritten" in caplog.text
    # The properties are still mapped: Spark resolves unqualified names through them.
    assert table.parameters["view.catalogAndNamespace.part.1"] == "p__sales"


def test_tables_that_are_not_views_are_untouched():
    table = ttypes.Table(dbName="sales", tableName="t", tableType="MANAGED_TABLE", parameters=spark_params("sales"))
    before = copy.deepcopy(table)
    view_to_client(table, P)
    view_to_backing(table, P)
    assert table == before


def test_iceberg_views_keep_their_sql():
    # An Iceberg view's SQL is resolved in its own default namespace by the engine: stored as it is.
    table = ttypes.Table(dbName="sales", tableName="v", tableType="VIRTUAL_VIEW",
                         viewOriginalText="SELECT * FROM sales.orders", viewExpandedText="SELECT * FROM sales.orders",
                         parameters={"table_type": "ICEBERG-VIEW", "metadata_location": "file:/w/v/m.json"})
    before = copy.deepcopy(table)
    view_to_client(table, P)
    view_to_backing(table, P)
    assert table == before


def test_empty_prefix_changes_nothing():
    table = view("sales", "v", "SELECT * FROM orders", "sales")
    before = copy.deepcopy(table)
    view_to_client(table, "")
    assert table == before


def test_missing_texts_and_parameters_are_fine():
    table = ttypes.Table(dbName="sales", tableName="v", tableType="VIRTUAL_VIEW")
    view_to_client(table, P)
    view_to_backing(table, P)
    assert table.viewOriginalText is None and table.parameters is None


def test_an_unparseable_view_read_again_and_again_is_logged_once(caplog):
    with caplog.at_level(logging.WARNING, logger="catalogd.hms.view_text"):
        for _ in range(5):
            view_to_client(view("sales", "v_again", "SELECT ) FROM", "sales"), P)
    assert caplog.text.count("sales.v_again") == 1


def test_a_view_read_again_gets_the_same_text():
    texts = set()
    for _ in range(3):
        table = view("sales", "v", "SELECT * FROM orders JOIN other.c", "sales")
        view_to_client(table, P)
        texts.add(table.viewOriginalText)
    assert texts == {"SELECT * FROM p__sales.orders JOIN p__other.c"}
    # Another prefix or namespace is another rewrite.
    table = view("sales", "v", "SELECT * FROM orders JOIN other.c", "x")
    view_to_client(table, "q__")
    assert table.viewOriginalText == "SELECT * FROM q__x.orders JOIN q__other.c"


def test_a_view_made_in_another_spark_catalog_keeps_that_catalogs_names():
    # USE iceberg.sales; CREATE VIEW spark_catalog.sales.v AS ...: only spark_catalog. names are the metastore's.
    table = view("sales", "v", "SELECT sales.c.x, db.f(1) FROM orders JOIN sales.c JOIN spark_catalog.sales.d", "sales")
    table.parameters["view.catalogAndNamespace.part.0"] = "iceberg"
    view_to_client(table, P)
    assert table.viewOriginalText == "SELECT sales.c.x, db.f(1) FROM orders JOIN sales.c JOIN spark_catalog.p__sales.d"
    assert table.parameters["view.catalogAndNamespace.part.1"] == "sales"
