"""View expansion with sqlglot: qualification, SELECT * expansion, types, and rejected queries."""

from __future__ import annotations

import pytest

from catalogd.errors import InvalidArgumentError, NotFoundError
from catalogd.model import Column
from catalogd.views import expand_view

TABLES = {
    ("sales", "orders"): [Column("id", "bigint"), Column("amount", "decimal(10,2)"), Column("customer", "string"),
                          Column("ds", "string")],
    ("sales", "customers"): [Column("customer", "string"), Column("country", "string"),
                             Column("info", "struct<a:int,b:string>")],
    ("crm", "people"): [Column("name", "string"), Column("age", "int")],
}


def resolve(db: str, table: str) -> list[Column]:
    try:
        return TABLES[(db, table)]
    except KeyError:
        raise NotFoundError(f"{db}.{table}") from None


def expand(query: str):
    return expand_view(query, "sales", "main", resolve)


def names_types(view) -> list[tuple[str, str]]:
    return [(c.name, c.type) for c in view.columns]


def test_select_star_is_expanded_and_qualified():
    view = expand("SELECT * FROM orders")
    assert names_types(view) == [("id", "bigint"), ("amount", "decimal(10,2)"), ("customer", "string"),
                                 ("ds", "string")]
    assert "*" not in view.expanded
    assert "FROM `sales`.`orders` AS `orders`" in view.expanded
    assert "`orders`.`amount` AS `amount`" in view.expanded
    assert view.original == "SELECT * FROM orders"


def test_joins_and_aliases():
    view = expand("select o.id, c.country as land, c.info from main.sales.orders o "
                  "join customers c on o.customer = c.customer")
    assert names_types(view) == [("id", "bigint"), ("land", "string"), ("info", "struct<a:int,b:string>")]
    assert "JOIN `sales`.`customers` AS `c` ON `o`.`customer` = `c`.`customer`" in view.expanded
    assert "`main`" not in view.expanded  # Spark resolves it inside the catalog's own metastore


def test_other_databases_and_star_of_one_side():
    view = expand("SELECT p.*, o.id FROM crm.people p CROSS JOIN orders o")
    assert names_types(view) == [("name", "string"), ("age", "int"), ("id", "bigint")]
    assert "`crm`.`people` AS `p`" in view.expanded


def test_subqueries_and_ctes():
    view = expand("WITH big AS (SELECT id, amount FROM orders WHERE amount > 10) "
                  "SELECT t.n, b.amount * 2 AS doubled FROM (SELECT customer AS n, id FROM orders) t "
                  "JOIN big b ON b.id = t.id")
    assert names_types(view) == [("n", "string"), ("doubled", "decimal(38,2)")]
    assert "WITH `big` AS (SELECT `orders`.`id` AS `id`, `orders`.`amount` AS `amount` FROM `sales`.`orders`" in (
        view.expanded)


def test_aggregates_get_spark_wide_types():
    view = expand("SELECT customer, sum(amount) AS total, count(*) AS n, avg(id) AS mean, sum(cast(id AS int)) s "
                  "FROM orders GROUP BY customer")
    assert names_types(view) == [("customer", "string"), ("total", "decimal(38,2)"), ("n", "bigint"),
                                 ("mean", "double"), ("s", "bigint")]


def test_expanded_text_casts_to_the_stored_types():
    view = expand("SELECT amount FROM orders")
    assert view.expanded.startswith("SELECT CAST(`q`.`amount` AS decimal(10,2)) AS `amount` FROM (SELECT ")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELECT nope FROM orders", "could not be resolved"),
        ("SELECT * FROM missing", "sales.missing, which does not exist"),
        ("SELECT * FROM other.sales.orders", "its own catalog"),
        ("DROP TABLE orders", "must be one SELECT"),
        ("SELECT 1; SELECT 2", "must be one SELECT"),
        ("SELECT id, id FROM orders", "two columns named 'id'"),
        ("", "needs a query"),
        ("SELECT FROM WHERE (", "cannot parse"),
    ],
)
def test_bad_queries_are_rejected(query: str, message: str):
    with pytest.raises(InvalidArgumentError, match=message):
        expand(query)


def test_the_catalogs_a_query_names() -> None:
    from catalogd.views import catalogs_named

    assert catalogs_named("SELECT * FROM src.db.t JOIN src.db.u USING (id)") == {"src"}
    assert catalogs_named("WITH x AS (SELECT 1 AS a) SELECT * FROM x JOIN db.t ON true") == {None}
    assert catalogs_named("SELECT * FROM a.db.t UNION ALL SELECT * FROM b.db.t") == {"a", "b"}
    assert catalogs_named("SELECT FROM WHERE (") == set()
