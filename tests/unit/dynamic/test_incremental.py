from __future__ import annotations

import pytest

from catalogd.dynamic import store
from catalogd.dynamic.incremental import Plan, plan, query_obstacle
from catalogd.model import Column, Table, TableFormat, TableKind
from catalogd.views import expand_view

COLUMNS = [Column("id", "bigint"), Column("kind", "string"), Column("ds", "string")]


def _table(name: str, **kw: object) -> Table:
    database, table = name.split(".")
    fields: dict[str, object] = {"location": f"file:/data/{database}/{table}", **kw}
    return Table(table, database, columns=list(COLUMNS), **fields)  # type: ignore[arg-type]


def _qualified(query: str) -> tuple[str, list[str]]:
    expanded = expand_view(query, "db", "main", lambda d, t: list(COLUMNS), "dynamic table")
    return expanded.qualified, expanded.tables


def _plan(query: str) -> Plan:
    """How a CONTINUOUS table ``db.dt`` with ``query`` over plain parquet sources refreshes."""
    qualified, tables = _qualified(query)
    return plan(qualified, _table("db.dt"), {t: _table(t) for t in tables})


@pytest.mark.parametrize("query", [
    "SELECT id, kind FROM ev WHERE id > 3",
    "SELECT id, upper(kind) AS k, cast(ds AS date) AS day FROM ev e WHERE e.kind IN ('a', 'b')",
    "SELECT * FROM ev UNION ALL SELECT * FROM other.ev2",
])
def test_selections_projections_and_union_all_are_incremental(query: str) -> None:
    _, tables = _qualified(query)
    found = _plan(query)
    assert found.incremental and found.refresh == "incremental", found.why
    # The trigger's query reads views of the new files, under the aliases the columns use.
    assert "`db`." not in found.query and "`catalogd_source_0` AS" in found.query
    assert [s.name for s in found.sources] == sorted(tables)
    spec = found.to_spec()
    assert spec["sources"][0]["location"].startswith("file:/data/") and spec["sources"][0]["format"] == "parquet"


@pytest.mark.parametrize(("query", "why"), [
    ("SELECT id FROM ev UNION ALL SELECT count(*) AS id FROM other.ev2", "aggregates inside a UNION"),
    ("SELECT * FROM ev UNION SELECT * FROM other.ev2", "UNION removes duplicates"),
    ("SELECT a.id FROM ev a JOIN other.ev2 b ON a.id = b.id", "join"),
    ("SELECT id FROM ev WHERE id IN (SELECT id FROM other.ev2)", "subquery"),
    ("SELECT id, row_number() OVER (ORDER BY id) AS r FROM ev", "window"),
    ("SELECT id FROM ev ORDER BY id LIMIT 3", "ORDER BY"),
    ("SELECT id, current_timestamp() AS at FROM ev", "current_timestamp"),
    ("SELECT id, rand() AS r FROM ev", "rand"),
    ("WITH x AS (SELECT id FROM ev) SELECT id FROM x", "WITH"),
])
def test_what_needs_all_the_rows_is_recomputed_and_says_why(query: str, why: str) -> None:
    qualified, _ = _qualified(query)
    found = _plan(query)
    assert not found.incremental and found.refresh == "recompute"
    assert why in found.why
    assert query_obstacle(qualified) == found.why


@pytest.mark.parametrize("query", [
    "SELECT kind, count(*) AS n, avg(id) AS mean FROM ev GROUP BY kind HAVING count(*) > 1",
    "SELECT count(*) AS n FROM ev e WHERE e.id > 3",
    "SELECT DISTINCT kind FROM ev",
])
def test_aggregations_of_one_table_merge_into_their_state(query: str) -> None:
    found = _plan(query)
    assert found.incremental and found.aggregate is not None, found.why
    assert "merges that into the per-group state" in found.why
    spec = found.to_spec()
    # The partial aggregate reads the source's view (of the new files), the final the state.
    assert "`catalogd_source_0`" in spec["aggregate"]["partial"] and "`db`." not in spec["aggregate"]["partial"]
    assert spec["aggregate"]["final"].count("`catalogd_state`") == 1


@pytest.mark.parametrize(("query", "why"), [
    ("SELECT kind, count(DISTINCT id) AS n FROM ev GROUP BY kind", "needs every value seen"),
    ("SELECT a.kind, count(*) AS n FROM ev a JOIN other.ev2 b ON a.id = b.id GROUP BY a.kind", "a join"),
    ("SELECT kind, count(*) AS n FROM ev WHERE rand() > 0.5 GROUP BY kind", "rand"),
])
def test_aggregations_that_cannot_be_merged_are_recomputed_and_say_why(query: str, why: str) -> None:
    found = _plan(query)
    assert not found.incremental and why in found.why, found.why


def test_an_aggregation_over_a_text_source_is_recomputed() -> None:
    qualified, _ = _qualified("SELECT kind, count(*) AS n FROM ev GROUP BY kind")
    found = plan(qualified, _table("db.dt"), {"db.ev": _table("db.ev", format=TableFormat.TEXTFILE)})
    assert not found.incremental and "stored as textfile" in found.why


@pytest.mark.parametrize(("source", "why"), [
    (_table("db.ev", format=TableFormat.TEXTFILE), "stored as textfile"),
    (_table("db.ev", kind=TableKind.VIEW), "is a view"),
    (_table("db.ev", properties={store.FRESHNESS: "1 h"}), "is a dynamic table"),
    (_table("db.ev", location=None), "no file location"),
])
def test_sources_that_are_not_append_only_files_are_recomputed(source: Table, why: str) -> None:
    qualified, _ = _qualified("SELECT id FROM ev")
    found = plan(qualified, _table("db.dt"), {"db.ev": source})
    assert not found.incremental and why in found.why


def test_a_table_off_the_local_file_system_is_recomputed() -> None:
    qualified, _ = _qualified("SELECT id FROM ev")
    found = plan(qualified, _table("db.dt", location="hdfs://nn/warehouse/dt"), {"db.ev": _table("db.ev")})
    assert not found.incremental and "local file system" in found.why
