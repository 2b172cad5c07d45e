"""How an aggregation splits into a partial aggregate of new files, a merge into its state,
and a final projection: the incremental refresh of an aggregating CONTINUOUS table.

Spark Structured Streaming maintains an aggregation with a stateful plan: each trigger
aggregates the new rows and merges them into per-group buffers kept in a state store
(update or complete output mode). catalogd does the same with a table instead of a sink:

- the **partial** query aggregates the new files alone, per group: a buffer per aggregate
  (``count`` and ``count_if`` counts, ``sum``, ``min``, ``max``; ``avg`` as a sum and a
  count), each grouping expression as a key ``__k<i>``;
- the **merge** adds those buffers to the state (parquet files in the table's checkpoint
  directory, one row per group): counts and sums are summed, ``min``/``max`` taken again;
- the **final** query computes the query's own columns from the merged state (``avg`` as
  sum / count, ``HAVING`` as a filter) and the table is replaced with them.

A trigger reads the new files and the state (one row per group), never the whole source.
Aggregates whose result cannot be merged from partial results (``count(DISTINCT ...)``,
which needs every value seen, as Spark's streaming aggregation also refuses; ``first``,
``percentile``, ``collect_list``, ...) and grouping sets are not split: those queries are
recomputed. This module only rewrites SQL (sqlglot); ``catalogd.dynamic.appender`` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The view a trigger gives the merged state (the final query reads it).
STATE_VIEW = "catalogd_state"
#: Aggregates merged from partial results, by sqlglot class name: how their buffers merge.
_MERGES = {"Count": "sum", "CountIf": "sum", "Sum": "sum", "Min": "min", "Max": "max", "Avg": "avg"}
MERGED = "count, count_if, sum, avg, min and max"


@dataclass(frozen=True)
class Average:
    """An ``avg`` of the query: computed from two buffers; ``probe`` (the partial's own
    ``avg``) gives its result type, which Spark derives from the argument's."""

    name: str
    sum: str
    count: str
    probe: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "sum": self.sum, "count": self.count, "probe": self.probe}


@dataclass(frozen=True)
class Split:
    """An aggregation's three queries (see the module's doc); ``partial`` reads the source
    views of ``catalogd.dynamic.incremental.plan``, ``final`` reads ``STATE_VIEW``."""

    partial: str
    final: str
    keys: list[str]
    buffers: dict[str, str]
    averages: list[Average] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"partial": self.partial, "final": self.final, "keys": list(self.keys),
                "buffers": dict(self.buffers), "averages": [a.to_json() for a in self.averages]}


def is_aggregation(tree: Any) -> bool:
    """Whether a parsed query aggregates (GROUP BY, HAVING, an aggregate, SELECT DISTINCT)
    in its top SELECT."""
    from sqlglot import exp

    if not isinstance(tree, exp.Select):
        return False
    if tree.args.get("group") or tree.args.get("having") or tree.args.get("distinct"):
        return True
    return any(_outside_window(node) for node in tree.find_all(exp.AggFunc))


def _outside_window(node: Any) -> bool:
    from sqlglot import exp

    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Window):
            return False
        parent = parent.parent
    return True


def split(query: str, obstacle: Any) -> Split | str:
    """Split an aggregating query (qualified, its tables already views), or say why not.

    Args:
        query: one SELECT over one table with GROUP BY, HAVING, aggregates or DISTINCT.
        obstacle: ``incremental.query_obstacle``, applied to the query's row-by-row part
            (its source, WHERE, grouping expressions and aggregates' arguments).
    """
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(query, read="spark")
    if not isinstance(tree, exp.Select):
        return ("the query aggregates over a UNION: catalogd merges the aggregation of one SELECT "
                "over one table")
    source = tree.args.get("from_")
    if tree.args.get("joins") or source is None or not isinstance(source.this, exp.Table):
        return "the query aggregates a join or a subquery: catalogd merges the aggregation of one table"
    for clause, what in (("order", "an ORDER BY"), ("limit", "a LIMIT"), ("offset", "an OFFSET"),
                         ("laterals", "a LATERAL VIEW"), ("qualify", "a QUALIFY"), ("windows", "a WINDOW")):
        if tree.args.get(clause):
            return f"the query has {what}, which needs all the rows, old and new"
    items = list(tree.expressions)
    if any(isinstance(i, exp.Star) or (isinstance(i, exp.Column) and isinstance(i.this, exp.Star))
           for i in items):
        return "the query selects * in an aggregation"
    group = tree.args.get("group")
    aggregates = [n for i in [*items, tree.args.get("having")] if i is not None
                  for n in i.find_all(exp.AggFunc) if _outside_window(n)]
    if tree.args.get("distinct"):
        if group is not None or aggregates:
            return "the query has SELECT DISTINCT with an aggregation"
        keys = [_unalias(i).copy() for i in items]
    else:
        found = _keys(group, items)
        if isinstance(found, str):
            return found
        keys = found
    for node in aggregates:
        why = _merge_obstacle(node, aggregates)
        if why is not None:
            return why
    # The row-by-row part must be maintainable by appending, like a stateless query's. Its
    # constant first item keeps the check when there is nothing else to select (a bare
    # ``count(*)``): the WHERE (a subquery, ``rand()``, ``current_date()``) is checked always.
    for expression in [*keys, *(a for n in aggregates for a in _arguments(n))]:
        if isinstance(_unalias(expression), exp.Null):
            return ("the query groups by or aggregates a bare NULL, whose type (void) its state's parquet "
                    "files cannot store")
    shadow = exp.select(exp.Literal.number(1), *[k.copy() for k in keys],
                        *[a.copy() for n in aggregates for a in _arguments(n)])
    shadow.set("from_", source.copy())
    if tree.args.get("where") is not None:
        shadow.set("where", tree.args["where"].copy())
    row_why = obstacle(shadow.sql(dialect="spark"))
    if row_why is not None:
        return str(row_why)
    for node in [*items, tree.args.get("having")]:
        why = _expression_obstacle(node) if node is not None else None
        if why is not None:
            return why
    return _build(tree, keys, aggregates)


def _unalias(node: Any) -> Any:
    from sqlglot import exp

    return node.this if isinstance(node, exp.Alias) else node


def _keys(group: Any, items: list[Any]) -> list[Any] | str:
    """The grouping expressions, GROUP BY ordinals and select aliases resolved."""
    from sqlglot import exp

    if group is None:
        return []
    if group.args.get("all"):
        return [_unalias(i).copy() for i in items if not any(_outside_window(a) for a in i.find_all(exp.AggFunc))]
    for key in ("grouping_sets", "cube", "rollup", "totals"):
        if group.args.get(key):
            return "the query groups by GROUPING SETS, ROLLUP or CUBE"
    aliases = {i.alias.lower(): i.this for i in items if isinstance(i, exp.Alias)}
    keys = []
    for expression in group.expressions:
        if isinstance(expression, (exp.GroupingSets, exp.Cube, exp.Rollup)):
            return "the query groups by GROUPING SETS, ROLLUP or CUBE"
        if isinstance(expression, exp.Literal) and not expression.is_string:
            index = int(expression.this)
            if not 1 <= index <= len(items):
                return f"GROUP BY {index} names no column of the select list"
            expression = _unalias(items[index - 1])
        elif (isinstance(expression, exp.Column) and not expression.table
              and expression.name.lower() in aliases):
            # Spark resolves a GROUP BY name against the source's columns first; a name that is
            # only a select alias stands for that item (the analyzer accepted the query).
            expression = aliases[expression.name.lower()]
        keys.append(expression.copy())
    return keys


def _arguments(node: Any) -> list[Any]:
    """An aggregate's inputs: its arguments and, under ``FILTER (WHERE ...)``, the filter."""
    from sqlglot import exp

    found = [a for a in node.iter_expressions() if not isinstance(a, exp.Star)]
    if isinstance(node.parent, exp.Filter):
        found.append(node.parent.expression.this)
    return found


def _merge_obstacle(node: Any, aggregates: list[Any]) -> str | None:
    """Why an aggregate's result cannot be merged from partial results; None if it can."""
    from sqlglot import exp

    name = node.name.lower() if isinstance(node, exp.Anonymous) else node.sql_name().lower()
    if type(node).__name__ not in _MERGES:
        return (f"the query's aggregate {name}() is not merged from partial results (catalogd merges "
                f"{MERGED})")
    if any(isinstance(a, exp.Distinct) for a in node.iter_expressions()):
        return (f"the query's {name}(DISTINCT ...) needs every value seen, old and new (Spark's streaming "
                "aggregation refuses distinct aggregates too)")
    if any(other is not node and any(n is node for n in other.find_all(exp.AggFunc)) for other in aggregates):
        return "the query nests an aggregate in another"
    return None


def _expression_obstacle(node: Any) -> str | None:
    """What in a select item or HAVING cannot be computed from the state: a window or a
    subquery. (A volatile function there is evaluated again for every group at every
    trigger, as a recompute would.)"""
    from sqlglot import exp

    for inner in node.walk():
        if isinstance(inner, exp.Window):
            return "the query has a window function, which reads other rows than the new ones"
        if isinstance(inner, (exp.Subquery, exp.Exists, exp.Select)) and inner is not node:
            return "the query has a subquery, which reads its table whole"
    return None


def _qualifiers(source: Any) -> set[tuple[str, ...]]:
    """The ways a column may name the one source table: its alias, its name, ``db.name``."""
    names: set[tuple[str, ...]] = {(source.name.lower(),), (source.alias_or_name.lower(),)}
    if source.db:
        names.add((source.db.lower(), source.name.lower()))
    return names


def _normal(node: Any, qualifiers: set[tuple[str, ...]]) -> str:
    """A node's SQL with the source table's qualifier dropped and names lower-cased (one
    source: a column is the same whether written ``e.kind``, ``kind`` or ``KIND``). Only the
    table's own qualifier goes: ``e.s.a`` and ``e.u.a`` (fields of two struct columns) stay apart."""
    from sqlglot import exp

    def plain(n: Any) -> Any:
        if isinstance(n, exp.Column):
            parts = [p.name.lower() for p in n.parts]
            for qualifier in sorted(qualifiers, key=len, reverse=True):
                if len(parts) > len(qualifier) and tuple(parts[:len(qualifier)]) == qualifier:
                    parts = parts[len(qualifier):]
                    break
            return exp.column(*reversed(parts), quoted=True) if len(parts) <= 4 else exp.Dot.build(
                [exp.to_identifier(p, quoted=True) for p in parts])
        return n

    return str(node.transform(plain).sql(dialect="spark"))


def _build(tree: Any, keys: list[Any], aggregates: list[Any]) -> Split | str:
    from sqlglot import exp

    qualifiers = _qualifiers(tree.args["from_"].this)

    def canonical(node: Any) -> str:
        return _normal(node, qualifiers)

    key_names = {canonical(k): f"__k{i}" for i, k in enumerate(keys)}
    partial_items: list[Any] = [exp.alias_(k.copy(), f"__k{i}", quoted=True) for i, k in enumerate(keys)]
    buffers: dict[str, str] = {}
    averages: list[Average] = []
    replaced: dict[str, Any] = {}  # an aggregate's normal SQL (with its FILTER) -> what the final reads

    def buffer(expression: Any, merge: str) -> str:
        name = f"__b{len(buffers)}"
        buffers[name] = merge
        partial_items.append(exp.alias_(expression, name, quoted=True))
        return name

    for node in aggregates:
        unit = node.parent if isinstance(node.parent, exp.Filter) else node
        normal = canonical(unit)
        if normal in replaced:
            continue
        merge = _MERGES[type(node).__name__]
        if merge != "avg":
            replaced[normal] = exp.column(buffer(unit.copy(), merge), quoted=True)
            continue
        argument = node.this.copy()

        def filtered(aggregate: Any, unit: Any = unit) -> Any:
            if isinstance(unit, exp.Filter):
                return exp.Filter(this=aggregate, expression=unit.expression.copy())
            return aggregate

        total = buffer(filtered(exp.Sum(this=argument.copy())), "sum")
        count = buffer(filtered(exp.Count(this=argument.copy())), "sum")
        probe = f"__p{len(averages)}"
        partial_items.append(exp.alias_(unit.copy(), probe, quoted=True))
        average = Average(f"__a{len(averages)}", total, count, probe)
        averages.append(average)
        replaced[normal] = exp.column(average.name, quoted=True)

    def final(node: Any) -> Any:
        if isinstance(node, (exp.Identifier, exp.Literal)):  # an alias's name, a constant: kept
            return node
        normal = canonical(node)
        if normal in key_names:
            return exp.column(key_names[normal], quoted=True)
        if normal in replaced:
            return replaced[normal].copy()
        return node

    # A bare column keeps its name (the trigger names the columns as the query does anyway).
    final_items = [exp.alias_(item.transform(final), item.name, quoted=True) if isinstance(item, exp.Column)
                   else item.transform(final) for item in tree.expressions]
    aliases = {i.alias.lower(): i.this for i in tree.expressions if isinstance(i, exp.Alias)}

    def alias(node: Any) -> Any:
        # HAVING may name a select item by its alias (Spark resolves it so when it is neither a
        # grouping expression nor a source column under an aggregate).
        if (isinstance(node, exp.Column) and not node.table and canonical(node) not in key_names
                and node.name.lower() in aliases):
            return aliases[node.name.lower()].copy()
        return node

    having = tree.args.get("having")
    condition = having.this.transform(alias).transform(final) if having is not None else None
    ours = {*key_names.values(), *buffers, *(a.name for a in averages)}
    for node in [*final_items, condition]:
        for column in (node.find_all(exp.Column) if node is not None else ()):
            if column.name not in ours:
                return (f"the query's {column.sql(dialect='spark')} is neither grouped by nor aggregated, "
                        "so the state cannot give it")
    partial = exp.select(*partial_items)
    partial.set("from_", tree.args["from_"].copy())
    if tree.args.get("where") is not None:
        partial.set("where", tree.args["where"].copy())
    if keys:
        partial = partial.group_by(*[k.copy() for k in keys])
    final_query = exp.select(*final_items).from_(exp.to_identifier(STATE_VIEW, quoted=True))
    if condition is not None:
        final_query = final_query.where(condition)
    return Split(partial.sql(dialect="spark", identify=True), final_query.sql(dialect="spark", identify=True),
                 [f"__k{i}" for i in range(len(keys))], buffers, averages)


__all__ = ["MERGED", "STATE_VIEW", "Average", "Split", "is_aggregation", "split"]
