"""Which CONTINUOUS dynamic tables refresh incrementally, and what their triggers run.

A query Spark Structured Streaming can maintain by appending (selections, projections
and ``UNION ALL`` over append-only file sources: a stateless streaming plan in append
output mode) gives, over the rows of new source files, exactly the rows it adds to its
result. Such a table is refreshed incrementally: each trigger reads only the files added
to its sources since the last trigger, the way Spark's file stream source does, and
appends what the query makes of them to the table through an APPEND stage. Every other
query is recomputed whole when its sources change, as before.

What is decided here, from the stored (qualified) query and the tables it reads:

- the query's shape (``query_obstacle``): anything that makes a row of the result depend
  on more than one source row (aggregates, joins, DISTINCT, UNION without ALL, windows,
  ORDER BY/LIMIT, subqueries) or on the time it is computed (``current_timestamp``,
  ``rand``) needs the whole source, so it is recomputed. Aggregations in particular:
  Spark maintains them with a stateful plan whose output changes rows already written
  (update or complete output mode), which an append to the table cannot express.
- the sources (``plan``): tables (not views, not other dynamic tables, whose refreshes
  rewrite their files), stored as parquet or ORC (files Spark's file source reads with
  the table's schema alone) at a file location. A partitioned source's files are listed
  partition by partition, from the metastore's locations (a stage adds partitions where
  it wrote them, not necessarily under the table's location).
- the table: a location on the local file system (an APPEND stage moves the new files
  into the table's directories, which catalogd does only there).

A source rewritten in place (files gone or changed: an INSERT OVERWRITE, a REPLACE) is
not append-only any more; the trigger that sees it recomputes the whole table and
carries on incrementally from there (``catalogd.dynamic.appender``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalogd.dynamic import aggregation, store
from catalogd.model import Column, Table, TableFormat, TableKind

#: Source formats Spark's file source reads with the table's schema alone (no serde options).
FILE_FORMATS = (TableFormat.PARQUET, TableFormat.ORC)
#: Functions whose value depends on when (or in which task) a row is computed.
_VOLATILE = {"current_timestamp", "current_date", "now", "localtimestamp", "unix_timestamp", "rand", "randn",
             "random", "uuid", "shuffle", "monotonically_increasing_id", "spark_partition_id", "current_timezone"}

_AGGREGATION = ("the query aggregates inside a UNION: catalogd merges an aggregation only when it is the "
                "query's one SELECT over one table")
AGGREGATE_WHY = ("an aggregation ({merged}) of an append-only {formats} source: each trigger aggregates only the "
                 "files added since the last one, merges that into the per-group state kept in the table's "
                 "checkpoint (as Spark's stateful streaming aggregation does) and replaces the table with the "
                 "query's rows from the state through a REPLACE stage (a source rewritten in place is recomputed "
                 "whole once)")
INCREMENTAL_WHY = ("a selection/projection{union} over append-only {formats} sources: each trigger reads only the "
                   "files added since the last one and appends the query's rows from them through an APPEND stage "
                   "(a source rewritten in place is recomputed whole once)")


@dataclass(frozen=True)
class Source:
    """A source table as an incremental trigger reads it: its files under ``location``."""

    name: str
    view: str
    location: str
    format: str
    columns: list[Column]
    partition_keys: list[Column] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "view": self.view, "location": self.location, "format": self.format,
                "columns": [[c.name, c.type] for c in self.columns],
                "partition_keys": [[c.name, c.type] for c in self.partition_keys]}


@dataclass(frozen=True)
class Plan:
    """How a CONTINUOUS table refreshes: incrementally (``query`` reads ``sources``' views) or not."""

    incremental: bool
    why: str
    query: str = ""
    sources: list[Source] = field(default_factory=list)
    #: An aggregation's partial, merge and final queries (``catalogd.dynamic.aggregation``).
    aggregate: aggregation.Split | None = None

    @property
    def refresh(self) -> str:
        return "incremental" if self.incremental else "recompute"

    def to_spec(self) -> dict[str, Any]:
        """What the job's spec carries (``incremental``)."""
        spec: dict[str, Any] = {"query": self.query, "sources": [s.to_json() for s in self.sources]}
        if self.aggregate is not None:
            spec["aggregate"] = self.aggregate.to_json()
        return spec


def recompute(why: str) -> Plan:
    return Plan(False, why)


def query_obstacle(query: str) -> str | None:
    """Why ``query`` (a stored, qualified query) cannot be maintained by appending; None if it can."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(query, read="spark")
    except SqlglotError as e:
        return f"the query does not parse here ({str(e).splitlines()[0][:200]})"
    if tree.find(exp.With) is not None:
        return "a WITH clause (only plain SELECTs and UNION ALL are maintained by appending)"
    for node in tree.walk():
        if isinstance(node, exp.Union):
            if node.args.get("distinct"):
                return "the query's UNION removes duplicates across all the rows, old and new (UNION ALL would append)"
        elif isinstance(node, (exp.Intersect, exp.Except)):
            return f"the query's {node.key.upper()} compares new rows with all the others"
        elif isinstance(node, exp.AggFunc):
            return _AGGREGATION
        elif isinstance(node, exp.Window):
            return "the query has a window function, which reads other rows than the new ones"
        elif isinstance(node, exp.Join):
            return "the query has a join: a new row of one source meets old rows of the other"
        elif isinstance(node, (exp.Subquery, exp.Exists)) or (
                isinstance(node, exp.Select) and node.parent is not None
                and not isinstance(node.parent, exp.Union)):
            return "the query has a subquery, which reads its table whole"
        elif isinstance(node, exp.Select):
            if node.args.get("group") or node.args.get("having"):
                return _AGGREGATION
            for clause, why in (("distinct", "DISTINCT"), ("order", "an ORDER BY"), ("limit", "a LIMIT"),
                                ("offset", "an OFFSET"), ("laterals", "a LATERAL VIEW")):
                if node.args.get(clause):
                    return f"the query has {why}, which needs all the rows, old and new"
            source = node.args.get("from_")
            if source is None or not isinstance(source.this, exp.Table):
                return "the query has a SELECT that reads no table"
        elif isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name in _VOLATILE:
                return f"the query calls {name}(), which is evaluated when a row is computed"
        elif isinstance(node, (exp.Order, exp.Limit)):
            return "the query has an ORDER BY or LIMIT, which needs all the rows"
    return None


def plan(query: str, target: Table, sources: dict[str, Table]) -> Plan:
    """How a CONTINUOUS table with this stored query refreshes.

    Args:
        query: its stored qualified query (tables as ``db``.``t`` AS alias).
        target: the dynamic table itself.
        sources: the tables it reads by ``database.table`` (lower case).
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        aggregates = aggregation.is_aggregation(sqlglot.parse_one(query, read="spark"))
    except SqlglotError:
        aggregates = False  # query_obstacle says why
    if aggregates:
        split = aggregation.split(query, query_obstacle)
        if isinstance(split, str):
            return recompute(split)
    else:
        obstacle = query_obstacle(query)
        if obstacle is not None:
            return recompute(obstacle)
    if not target.location or not target.location.startswith(("file:", "/")):
        return recompute(f"the table's location {target.location} is not on the local file system, where an "
                         "APPEND stage moves new files")
    found: dict[str, Source] = {}
    for name in sorted(sources):
        table = sources[name]
        why = _source_obstacle(name, table)
        if why is not None:
            return recompute(why)
        assert table.location is not None and table.format is not None
        found[name] = Source(name, f"catalogd_source_{len(found)}", table.location, table.format.value,
                             list(table.columns), list(table.partition_keys))
    tree = sqlglot.parse_one(query, read="spark")
    for node in tree.find_all(exp.Table):
        key = f"{node.db}.{node.name}".lower()
        if key not in found:
            return recompute(f"the query reads {key}, which is not among its recorded sources")
        alias = node.alias or node.name
        node.set("catalog", None)
        node.set("db", None)
        node.set("this", exp.to_identifier(found[key].view, quoted=True))
        node.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
    formats = "/".join(sorted({s.format for s in found.values()}))
    rewritten = tree.sql(dialect="spark", identify=True)
    if aggregates:
        split = aggregation.split(rewritten, query_obstacle)
        if isinstance(split, str):  # not expected: the same query, its tables renamed
            return recompute(split)
        merged = ", ".join(sorted({m for m in _aggregate_names(tree)})) or "grouping"
        return Plan(True, AGGREGATE_WHY.format(merged=merged, formats=formats), rewritten,
                    list(found.values()), split)
    union = " (UNION ALL)" if tree.find(exp.Union) is not None else ""
    return Plan(True, INCREMENTAL_WHY.format(union=union, formats=formats), rewritten, list(found.values()))


def _aggregate_names(tree: Any) -> list[str]:
    from sqlglot import exp

    return [n.sql_name().lower() for n in tree.find_all(exp.AggFunc)]


def _source_obstacle(name: str, table: Table) -> str | None:
    if table.kind is TableKind.VIEW:
        return f"the source {name} is a view (its own query would have to be maintained)"
    if store.is_dynamic(table.properties):
        return f"the source {name} is a dynamic table: its refreshes rewrite its files, it is not append-only"
    if table.format not in FILE_FORMATS:
        fmt = table.format.value if table.format is not None else "an unknown format"
        return (f"the source {name} is stored as {fmt}; incremental reads need parquet or orc files "
                "(Spark's file source reads them with the table's schema alone)")
    if not table.location:
        return f"the source {name} has no file location"
    return None


__all__ = ["FILE_FORMATS", "Plan", "Source", "plan", "query_obstacle", "recompute"]
