"""View queries: validated against the catalog's schemas and expanded, with sqlglot's Spark dialect.

The expanded text is what FLIP-30/435 ask for and what Hive stores as
``viewExpandedText``: every table reference qualified (``db``.``t``), every
column qualified, ``SELECT *`` replaced by the column list, every identifier
quoted. Spark reads a view from that text and casts each output column to the
stored column type, so the outer SELECT casts to the derived types itself: a
view stays readable even where Spark would type an expression more widely
than sqlglot does (decimal arithmetic, aggregates).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from catalogd.errors import InvalidArgumentError, NotFoundError
from catalogd.hive_types import parse_type
from catalogd.model import Column

#: ``resolve(database, table)`` -> the columns (partition keys last) of a table or view.
Resolver = Callable[[str, str], list[Column]]


@dataclass(frozen=True)
class ExpandedView:
    original: str
    expanded: str
    columns: list[Column]
    #: The query with every table and column qualified and ``*`` expanded (no casts).
    qualified: str = ""
    #: The tables it reads, ``database.table``.
    tables: list[str] = field(default_factory=list)


def _spark_type(node: object, derived: str, base_tables: set[str]) -> str:
    """Widen sqlglot's type where Spark's rules give a wider one (so a cast never loses data).

    ``base_tables``: aliases of the real tables the outer SELECT reads; their plain
    columns have exactly the stored type.
    """
    from sqlglot import exp

    inner = node.this if isinstance(node, exp.Alias) else node
    lower = derived.lower()
    if isinstance(inner, exp.Column) and inner.table.lower() in base_tables:
        return derived
    if lower.startswith("decimal") and not isinstance(inner, (exp.Cast, exp.Literal)):
        # Computed somewhere below (a CTE, a subquery, arithmetic): Spark's precision may be larger.
        scale = int(lower.split(",")[1].rstrip(") ")) if "," in lower else 0
        if isinstance(inner, (exp.Avg, exp.Div)):
            scale = max(scale, 6)
        return f"decimal(38,{scale})"
    if isinstance(inner, exp.Sum) and lower in ("tinyint", "smallint", "int"):
        return "bigint"
    if isinstance(inner, (exp.Avg, exp.Div)) and lower in ("tinyint", "smallint", "int", "bigint", "float"):
        return "double"
    if isinstance(inner, exp.Sum) and lower == "float":
        return "double"
    return derived


def expand_view(query: str, database: str, catalog: str, resolve: Resolver, kind: str = "view") -> ExpandedView:
    """Validate ``query`` and expand it.

    Args:
        query: one SELECT (WITH, UNION, ... allowed), Spark SQL.
        database: the view's database: unqualified table names mean this one.
        catalog: the view's catalog: a three-part name must name it (a view cannot
            read another catalog's metastore).
        resolve: looks up a table's columns; raises NotFoundError for a missing one.
        kind: what the query defines ("view", "dynamic table"), for the messages.

    Raises:
        InvalidArgumentError: not one query, a parse error, a missing table or column.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import OptimizeError, SqlglotError
    from sqlglot.optimizer.annotate_types import annotate_types
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.schema import MappingSchema

    text = (query or "").strip().rstrip(";").strip()
    if not text:
        raise InvalidArgumentError(f"a {kind} needs a query")
    try:
        parsed = sqlglot.parse(text, read="spark")
    except SqlglotError as e:
        raise InvalidArgumentError(f"cannot parse the {kind}'s query: {e}") from e
    if len(parsed) != 1 or not isinstance(parsed[0], exp.Query):
        raise InvalidArgumentError(f"a {kind}'s query must be one SELECT (WITH ..., UNION and VALUES are fine)")
    tree = parsed[0]
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    mapping: dict[str, dict[str, dict[str, str]]] = {}
    for table in tree.find_all(exp.Table):
        if not table.name or (not table.db and table.name.lower() in ctes):
            continue
        if table.catalog and table.catalog.lower() != catalog:
            raise InvalidArgumentError(
                f"the {kind} reads {table.sql('spark')}: a {kind} can only read tables of its own catalog {catalog!r}"
            )
        db = (table.db or database).lower()
        name = table.name.lower()
        if name not in mapping.get(db, {}):
            try:
                read_columns = resolve(db, name)
            except NotFoundError as e:
                raise InvalidArgumentError(f"the {kind} reads {catalog}.{db}.{name}, which does not exist") from e
            mapping.setdefault(db, {})[name] = {c.name.lower(): c.type for c in read_columns}
        # Spark resolves the view inside this catalog's metastore: no catalog part.
        table.set("catalog", None)
        table.set("db", exp.to_identifier(db))
    schema_tables: dict[str, object] = dict(mapping)  # MappingSchema's nested dict is typed loosely
    schema = MappingSchema(schema_tables, dialect="spark")
    try:
        qualified = qualify(tree, schema=schema, dialect="spark", db=database, validate_qualify_columns=True,
                            quote_identifiers=True, identify=True)
        typed = annotate_types(qualified, schema=schema, dialect="spark")
    except (OptimizeError, SqlglotError) as e:
        raise InvalidArgumentError(f"the {kind}'s query does not match the tables it reads: {e}") from e
    base_tables: set[str] = set()
    if isinstance(typed, exp.Select):
        sources = [typed.args["from_"].this] if typed.args.get("from_") else []
        sources += [join.this for join in typed.args.get("joins") or []]
        base_tables = {t.alias_or_name.lower() for t in sources if isinstance(t, exp.Table) and t.db}
    columns: list[Column] = []
    seen: set[str] = set()
    for select in typed.selects:
        name = select.alias_or_name.lower()
        if name in seen:
            raise InvalidArgumentError(f"the {kind} has two columns named {name!r}: give one an alias")
        seen.add(name)
        derived = "string"
        if select.type is not None and not select.type.is_type(exp.DataType.Type.UNKNOWN):
            try:
                derived = parse_type(select.type.sql("spark"))
            except InvalidArgumentError:
                derived = "string"
        columns.append(Column(name, _spark_type(select, derived, base_tables)))
    inner = typed.sql(dialect="spark", identify=True)
    casts = ", ".join(f"CAST(`q`.`{c.name}` AS {c.type}) AS `{c.name}`" for c in columns)
    ctes_after = {cte.alias_or_name.lower() for cte in typed.find_all(exp.CTE)}
    tables = sorted({f"{t.db}.{t.name}".lower() for t in typed.find_all(exp.Table)
                     if t.name and t.db and t.name.lower() not in ctes_after})
    return ExpandedView(original=text, expanded=f"SELECT {casts} FROM ({inner}) AS `q`", columns=columns,
                        qualified=inner, tables=tables)


def catalogs_named(query: str) -> set[str | None]:
    """The catalog parts of the tables ``query`` reads, lower case (None: a table named without
    one); CTE names are not tables. A query that does not parse names none (``expand_view``
    says what is wrong with it)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        parsed = sqlglot.parse((query or "").strip().rstrip(";"), read="spark")
    except SqlglotError:
        return set()
    named: set[str | None] = set()
    for tree in parsed:
        if tree is None:
            continue
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if not table.name or (not table.db and table.name.lower() in ctes):
                continue
            named.add(table.catalog.lower() if table.catalog else None)
    return named
