from __future__ import annotations

import pytest

from catalogd.dynamic.aggregation import STATE_VIEW, Split, is_aggregation, split
from catalogd.dynamic.incremental import query_obstacle


def _split(query: str) -> Split:
    found = split(query, query_obstacle)
    assert isinstance(found, Split), found
    return found


def test_each_aggregate_gets_buffers_the_merge_adds_or_compares() -> None:
    found = _split("SELECT e.kind, count(*) AS n, sum(amount) AS total, avg(amount) AS mean, min(id) AS low, "
                   "max(id) AS high, count_if(id > 3) AS big FROM src AS e WHERE e.id > 3 GROUP BY e.kind "
                   "HAVING count(*) > 1")
    assert found.keys == ["__k0"]
    assert found.buffers == {"__b0": "sum", "__b1": "sum", "__b2": "sum", "__b3": "sum", "__b4": "min",
                             "__b5": "max", "__b6": "sum"}
    # avg is a sum and a count; its probe (the partial's own avg) gives the result's type.
    assert [a.to_json() for a in found.averages] == [
        {"name": "__a0", "sum": "__b2", "count": "__b3", "probe": "__p0"}]
    assert found.partial == (
        "SELECT `e`.`kind` AS `__k0`, COUNT(*) AS `__b0`, SUM(`amount`) AS `__b1`, SUM(`amount`) AS `__b2`, "
        "COUNT(`amount`) AS `__b3`, AVG(`amount`) AS `__p0`, MIN(`id`) AS `__b4`, MAX(`id`) AS `__b5`, "
        "COUNT_IF(`id` > 3) AS `__b6` FROM `src` AS `e` WHERE `e`.`id` > 3 GROUP BY `e`.`kind`")
    assert found.final == (
        f"SELECT `__k0` AS `kind`, `__b0` AS `n`, `__b1` AS `total`, `__a0` AS `mean`, `__b4` AS `low`, "
        f"`__b5` AS `high`, `__b6` AS `big` FROM `{STATE_VIEW}` WHERE `__b0` > 1")


def test_keys_are_found_by_ordinal_alias_or_all_and_matched_however_qualified() -> None:
    by_ordinal = _split("SELECT upper(kind) AS k, count(*) AS n FROM src GROUP BY 1")
    by_alias = _split("SELECT upper(kind) AS k, count(*) AS n FROM src GROUP BY k HAVING n > 2")
    by_all = _split("SELECT upper(kind) AS k, count(*) AS n FROM src GROUP BY ALL")
    assert by_ordinal.partial == by_alias.partial == by_all.partial == (
        "SELECT UPPER(`kind`) AS `__k0`, COUNT(*) AS `__b0` FROM `src` GROUP BY UPPER(`kind`)")
    assert by_alias.final.endswith("WHERE `__b0` > 2")
    # A key written e.KIND in the select list and kind in GROUP BY is the same column.
    mixed = _split("SELECT e.KIND, length(e.kind) AS l, count(*) FROM src e GROUP BY kind")
    assert mixed.final.startswith("SELECT `__k0` AS `KIND`, LENGTH(`__k0`) AS `l`")


def test_a_global_aggregate_has_no_keys_and_filters_carry_into_the_buffers() -> None:
    found = _split("SELECT count(*) AS n, avg(id) FILTER (WHERE kind = 'a') AS mean FROM src")
    assert found.keys == [] and "GROUP BY" not in found.partial
    assert "SUM(`id`) FILTER(WHERE `kind` = 'a') AS `__b1`" in found.partial
    assert "COUNT(`id`) FILTER(WHERE `kind` = 'a') AS `__b2`" in found.partial


def test_select_distinct_is_a_grouping() -> None:
    found = _split("SELECT DISTINCT kind, id % 2 AS odd FROM src")
    assert found.keys == ["__k0", "__k1"] and found.buffers == {}
    assert found.final == f"SELECT `__k0` AS `kind`, `__k1` AS `odd` FROM `{STATE_VIEW}`"


def test_expressions_over_keys_and_aggregates_are_computed_from_the_state() -> None:
    found = _split("SELECT kind, sum(amount) / count(*) * 2 AS r, count(*) + 1 AS m FROM src GROUP BY kind")
    assert found.buffers == {"__b0": "sum", "__b1": "sum"}  # count(*) once, though written twice
    assert "`__b0` / `__b1` * 2 AS `r`" in found.final
    assert "`__b1` + 1 AS `m`" in found.final


@pytest.mark.parametrize(("query", "why"), [
    ("SELECT kind, count(DISTINCT id) FROM src GROUP BY kind", "count(DISTINCT ...) needs every value"),
    ("SELECT kind, first(id) FROM src GROUP BY kind", "aggregate first() is not merged"),
    ("SELECT kind, percentile(id, 0.5) FROM src GROUP BY kind", "is not merged from partial results"),
    ("SELECT kind, count(*) FROM src GROUP BY ROLLUP (kind)", "ROLLUP"),
    ("SELECT kind, count(*) FROM src GROUP BY GROUPING SETS ((kind), ())", "GROUPING SETS"),
    ("SELECT kind, count(*) FROM src WHERE rand() > 0.5 GROUP BY kind", "rand()"),
    ("SELECT kind, sum(id * rand()) FROM src GROUP BY kind", "rand()"),
    ("SELECT kind, id, count(*) FROM src GROUP BY kind", "id is neither grouped by nor aggregated"),
    ("SELECT a.kind, count(*) FROM src a JOIN other b ON a.id = b.id GROUP BY a.kind", "a join"),
    ("SELECT kind, count(*) FROM (SELECT * FROM src) GROUP BY kind", "a join or a subquery"),
    ("SELECT kind, count(*) FROM src GROUP BY kind ORDER BY kind", "ORDER BY"),
    ("SELECT kind, count(*) FROM src GROUP BY kind LIMIT 3", "LIMIT"),
    ("SELECT kind, rank() OVER (ORDER BY count(*)) FROM src GROUP BY kind", "window"),
    ("SELECT kind, count(*) FROM src GROUP BY kind HAVING count(*) > (SELECT 1)", "subquery"),
    ("SELECT kind, count(*) FROM src GROUP BY kind UNION ALL SELECT kind, 1 FROM src", "over a UNION"),
    ("SELECT DISTINCT kind, count(*) FROM src GROUP BY kind", "SELECT DISTINCT with an aggregation"),
    ("SELECT *, count(*) FROM src GROUP BY kind", "selects *"),
    # A bare count(*) leaves nothing else to select: the WHERE is checked all the same.
    ("SELECT count(*) FROM src WHERE id IN (SELECT id FROM other)", "subquery"),
    ("SELECT count(*) FROM src WHERE cast(ds AS date) >= current_date() - 7", "current_date()"),
    ("SELECT count(*) AS n FROM src WHERE rand() < 0.1", "rand()"),
    ("SELECT NULL AS k, count(*) FROM src GROUP BY 1", "a bare NULL"),
    ("SELECT kind, min(NULL) FROM src GROUP BY kind", "a bare NULL"),
])
def test_what_cannot_be_merged_says_why(query: str, why: str) -> None:
    found = split(query, query_obstacle)
    assert isinstance(found, str) and why in found, found


def test_is_aggregation() -> None:
    import sqlglot

    def aggregates(query: str) -> bool:
        return is_aggregation(sqlglot.parse_one(query, read="spark"))

    assert aggregates("SELECT count(*) FROM t") and aggregates("SELECT k FROM t GROUP BY k")
    assert aggregates("SELECT DISTINCT k FROM t")
    assert not aggregates("SELECT k, sum(v) OVER (PARTITION BY k) FROM t")
    assert not aggregates("SELECT k FROM t UNION ALL SELECT k FROM u") and not aggregates("SELECT k FROM t")


def test_fields_of_two_struct_columns_with_one_name_stay_apart() -> None:
    found = _split("SELECT t.s.a AS k, max(t.s.b) AS x, max(t.u.b) AS y FROM db.src t GROUP BY t.s.a")
    assert found.buffers == {"__b0": "max", "__b1": "max"}
    assert found.final == f"SELECT `__k0` AS `k`, `__b0` AS `x`, `__b1` AS `y` FROM `{STATE_VIEW}`"
    # The table's own qualifier, however written, is the one dropped.
    same = _split("SELECT db.src.kind, count(*) FROM db.src GROUP BY src.kind")
    assert same.keys == ["__k0"] and same.final.startswith("SELECT `__k0` AS `kind`")
