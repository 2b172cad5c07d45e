"""View texts and Spark's view properties mapped between a prefixed catalog's backing names and the endpoint's names.

A view of a non-default catalog is stored in that catalog's backing metastore
with the backing database names (``db.t``); through the endpoint the same
database is ``<prefix>db``. So that Spark (or any engine) resolves the view in
its own catalog, ``viewOriginalText`` / ``viewExpandedText`` and Spark's view
properties are rewritten on the way out (``view_to_client``) and back on the
way in (``view_to_backing``).

The text is parsed with sqlglot (Spark dialect) only to find where table
references are; the new names are spliced into the original text at those
positions, so quoting, case, spacing, comments, functions, literals, CTE names,
aliases and column references stay byte for byte as they were. A text sqlglot
cannot parse is left as it was, with a warning. Parsing goes through a
``view_parse.ViewParser``: each text is parsed once per mapping (kept in a
bounded cache) within a time and a depth bound. A read never fails here (a text
that hit a bound is returned as stored, logged); a create or alter of a view
that names another catalog's database, holds several statements or hits a
bound is refused (``ViewTextRefused``).
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable
from typing import Any

from catalogd.hms import view_parse
from catalogd.hms.view_parse import Request, Rewritten, ViewParser

log = logging.getLogger(__name__)

VIEW_TYPES = frozenset({"VIRTUAL_VIEW", "MATERIALIZED_VIEW"})

#: Spark's session catalog: ``spark_catalog.db.t`` names a metastore table.
SESSION_CATALOG = "spark_catalog"

# Spark's view properties (CatalogTable / HiveClientImpl). The current catalog and
# namespace when the view was made: Spark resolves the view's unqualified names there.
NUM_PARTS = "view.catalogAndNamespace.numParts"
PART = "view.catalogAndNamespace.part.{}"
#: Spark 2.x's property for the same thing.
DEFAULT_DATABASE = "view.default.database"
#: Temporary objects a view refers to: never in a metastore database, so never mapped.
TEMP_NAME_PROPERTIES = (
    "view.referredTempViewNames",
    "view.referredTempFunctionsNames",
    "view.referredTempVariablesNames",
)

#: Databases that are no metastore database (Spark's global temporary views).
_NOT_METASTORE = frozenset({"global_temp"})

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

#: Spark's ANSI reserved words: quoted when they become a name, whatever the session's ANSI settings.
_RESERVED = frozenset(
    """all and any as authorization both case cast check collate column constraint create cross
    current_date current_time current_timestamp current_user distinct else end escape except false
    fetch filter for foreign from full grant group having in inner intersect into is join lateral
    leading left minus natural not null offset on only or order outer overlaps primary references
    right select session_user some table then time to trailing true union unique unknown user using
    when where with""".split()  # noqa: SIM905 (a word list reads better as text)
)

#: Maps a database name as written; ``None``: leave this reference as it is.
MapDb = Callable[[str], "str | None"]


def _iceberg_view(table: Any) -> bool:
    """An Iceberg view's SQL is resolved by the engine in the view's own default catalog and
    namespace (its metadata file says which), never in metastore names: Iceberg's ``HiveCatalog``
    stores it as it is, and so must the endpoint, both ways."""
    return str((getattr(table, "parameters", None) or {}).get("table_type", "")).upper() == "ICEBERG-VIEW"


def view_to_client(table: Any, prefix: str, parser: ViewParser | None = None) -> None:
    """Rewrite, in place, a view of a prefixed catalog from its backing names to the endpoint's.

    Call it on the table as the backing metastore holds it (``dbName`` still the
    backing name; ``methods.rename_result``'s ``on_table`` hook runs before the
    rename). ``db.t`` -> ``<prefix>db.t``, ``spark_catalog.db.t`` ->
    ``spark_catalog.<prefix>db.t``, unqualified ``t`` -> ``<prefix><ns>.t`` where
    ``ns`` is the database Spark resolves it in (the view's creation namespace
    from its properties, else the view's own database). Not a view: nothing.
    """
    if not prefix or getattr(table, "tableType", None) not in VIEW_TYPES or _iceberg_view(table):
        return

    namespace = _namespace(table.parameters) or table.dbName
    default = _to_client(prefix, namespace) if namespace else None
    params = table.parameters or {}
    # Made while another Spark catalog was current: its one- and two-part names are that
    # catalog's; only ``spark_catalog.db.t`` names the metastore.
    session_only = _session_only(params)
    parse = (parser or default_parser()).rewrite

    def rewrite(text: str) -> Rewritten:
        return parse(Request(text, "client", prefix, None if session_only else default, session_only))

    _rewrite_table(table, rewrite, _client_mapper(prefix))


def view_to_backing(table: Any, prefix: str, parser: ViewParser | None = None) -> None:
    """The inverse of ``view_to_client``, for a view created or altered through the endpoint.

    ``<prefix>db`` -> ``db`` wherever a table reference or Spark's namespace
    property names it (prefix matched case-insensitively); unqualified names stay
    unqualified. Raises ``ViewTextRefused`` for a text the catalog's metastore
    cannot hold as meant: one naming a database without the prefix (another
    catalog's: stored as written it would read this catalog's database of that
    name), one holding more than one statement, or one whose parse hit a bound
    (time, depth). A text sqlglot cannot parse is stored as it is (logged).
    """
    if not prefix or getattr(table, "tableType", None) not in VIEW_TYPES or _iceberg_view(table):
        return
    session_only = _session_only(table.parameters or {})
    parse = (parser or default_parser()).rewrite
    where = f"{table.dbName}.{table.tableName}"

    def rewrite(text: str) -> Rewritten:
        result = parse(Request(text, "backing", prefix, None, session_only))
        refusal = _refusal(result, where, prefix)
        if refusal is not None:
            raise ViewTextRefused(refusal)
        return result

    _rewrite_table(table, rewrite, functools.partial(_strip, prefix))


def _refusal(result: Rewritten, where: str, prefix: str) -> str | None:
    if result.refused:
        return f"the text of view {where} cannot be checked: {result.refused}"
    if result.statements > 1:
        return (f"the text of view {where} holds {result.statements} statements; a view is one query "
                f"(its names would be rewritten in every statement)")
    if result.unmapped:
        names = ", ".join(result.unmapped)
        return (f"the text of view {where} names database {names}, not one of this catalog's "
                f"({prefix}*): a view can read only its own catalog's databases (stored, the name would "
                f"be read back as {prefix}{result.unmapped[0]}, another database)")
    return None


def _session_only(params: dict[str, str]) -> bool:
    # Made while another Spark catalog was current: its one- and two-part names are that
    # catalog's; only ``spark_catalog.db.t`` names the metastore.
    return NUM_PARTS in params and params.get(PART.format(0), "").lower() != SESSION_CATALOG


def foreign_references(table: Any, prefix: str) -> list[str]:
    """The databases a client-side view text names that lack ``prefix``: another catalog's.

    A prefixed catalog's backing metastore cannot hold a view that reads another
    catalog, so the router can refuse such a create/alter instead of storing a
    view that would read the wrong tables. Empty for a text sqlglot cannot parse.
    """
    if getattr(table, "tableType", None) not in VIEW_TYPES:
        return []
    found: list[str] = []
    session_only = _session_only(table.parameters or {})
    for text in (table.viewOriginalText, table.viewExpandedText):
        if text:
            result = default_parser().rewrite(Request(text, "backing", prefix, None, session_only))
            found.extend(db for db in result.unmapped if db not in found)
    return found


def _to_client(prefix: str, db: str) -> str | None:
    return None if db.lower() in _NOT_METASTORE else prefix + db


def _client_mapper(prefix: str) -> MapDb:
    return functools.partial(_to_client, prefix)


def _strip(prefix: str, db: str) -> str | None:
    if len(db) > len(prefix) and db[: len(prefix)].lower() == prefix.lower():
        return db[len(prefix) :]
    return None


def _namespace(parameters: dict[str, str] | None) -> str | None:
    """The database Spark resolves the view's unqualified names in, from its properties."""
    params = parameters or {}
    if params.get(NUM_PARTS) == "2" and params.get(PART.format(0), "").lower() == SESSION_CATALOG:
        return params.get(PART.format(1)) or None
    return params.get(DEFAULT_DATABASE) or None


#: The parser used when a caller passes none (unit tests, benchmarks); the endpoint has its own.
_default_parser: ViewParser | None = None
_default_lock = threading.Lock()


def default_parser() -> ViewParser:
    """The process's shared ``ViewParser`` with the default bounds."""
    global _default_parser
    with _default_lock:
        if _default_parser is None:
            _default_parser = new_parser()
        return _default_parser


def new_parser(timeout: Callable[[], float] = lambda: 10.0) -> ViewParser:
    """A ``ViewParser`` of this module's rewrites, its parse bounded by ``timeout()`` seconds."""
    return ViewParser(compute, timeout)


class ViewTextRefused(Exception):
    """A view text a create or alter through the endpoint may not store (``message`` says why)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


#: (view, reason) pairs already warned about: a view Spark reads 100 times is logged once.
_warned: set[tuple[str, str]] = set()


def _warn_once(where: str, problem: str) -> None:
    key = (where, problem)
    if key in _warned:
        return
    if len(_warned) > 1024:
        _warned.clear()
    _warned.add(key)
    log.warning("view %s: text not rewritten: %s", where, problem)


def _rewrite_table(table: Any, rewrite: Callable[[str], Rewritten], map_db: MapDb) -> None:
    where = f"{table.dbName}.{table.tableName}"
    done: dict[str, str] = {}
    for attr in ("viewOriginalText", "viewExpandedText"):
        text = getattr(table, attr, None)
        if not text:
            continue
        if text not in done:  # Spark 4 stores the same text twice
            result = rewrite(text)
            if result.problem:
                _warn_once(where, result.problem)
            done[text] = result.text
        setattr(table, attr, done[text])
    params = table.parameters
    if not params:
        return
    if params.get(NUM_PARTS) == "2" and params.get(PART.format(0), "").lower() == SESSION_CATALOG:
        _map_param(params, PART.format(1), map_db)
    _map_param(params, DEFAULT_DATABASE, map_db)


def _map_param(params: dict[str, str], key: str, map_db: MapDb) -> None:
    value = params.get(key)
    if value:
        mapped = map_db(value)
        if mapped is not None:
            params[key] = mapped


def rewrite_text(text: str, map_db: MapDb, default: str | None, *, where: str = "", quiet: bool = False) -> str:
    """Rewrite the database names of every table reference in one Spark SQL text.

    ``map_db`` maps a database name as written (``None``: leave it); an
    unqualified table reference gets ``default.`` in front when ``default`` is
    given. Qualified column references (``db.t.c``) and function calls
    (``db.f(x)``) follow their databases. A text that does not parse is returned
    unchanged (logged at WARNING unless ``quiet``).
    """
    result = _rewrite(text, map_db, default)
    if result.problem and not quiet:
        log.warning("view %s: text not rewritten: %s", where or "?", result.problem)
    return result.text


def compute(request: Request) -> Rewritten:
    """Parse and rewrite one text (no cache, no bounds but the recursion one: ``ViewParser`` adds them).

    Runs in the daemon for short texts and in a worker process for long ones.
    """
    if request.direction == "client":
        map_db: MapDb = _client_mapper(request.prefix)
    else:
        map_db = functools.partial(_strip, request.prefix)
    return _rewrite(request.text, map_db, request.default, request.session_only)


def _rewrite(text: str, map_db: MapDb, default: str | None, session_only: bool = False) -> Rewritten:
    """``session_only``: only names that say ``spark_catalog.`` are the metastore's."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statements = sqlglot.parse(text, read="spark")
    except RecursionError:
        # Nesting the depth scan does not count (NOT NOT NOT ..., long chains): refused at create.
        why = "it nests too deeply for the parser"
        return Rewritten(text, problem=why, refused=why)
    except (SqlglotError, ValueError) as e:
        return Rewritten(text, problem=f"sqlglot cannot parse it: {_first_line(e)}")
    count = sum(1 for statement in statements if statement is not None)
    edits: list[tuple[int, int, str]] = []
    renamed_tables: set[tuple[str, str]] = set()
    unmapped: list[str] = []
    try:
        for statement in statements:
            if statement is None:
                continue
            if isinstance(statement, exp.Command):
                raise _Unparsed("sqlglot parsed it as an opaque command")
            for node in statement.find_all(exp.Table):
                _table_edit(node, map_db, default, edits, renamed_tables, session_only, unmapped)
            for column in statement.find_all(exp.Column):
                _column_edit(column, map_db, renamed_tables, edits, session_only)
            if not session_only:
                for dot in statement.find_all(exp.Dot):
                    _function_edit(dot, map_db, edits, unmapped)
    except _Unparsed as e:
        return Rewritten(text, problem=str(e), statements=count)
    except RecursionError:
        why = "it nests too deeply for the parser"
        return Rewritten(text, problem=why, statements=count, refused=why)
    except Exception as e:  # a sqlglot surprise must not fail the metastore call
        return Rewritten(text, problem=f"sqlglot failed on it: {type(e).__name__}: {_first_line(e)}",
                         statements=count)
    return Rewritten(_splice(text, edits), statements=count, unmapped=tuple(unmapped))


def _note_unmapped(db: str, unmapped: list[str]) -> None:
    """A metastore database name the mapping left alone (global_temp is no metastore database)."""
    if db.lower() not in _NOT_METASTORE and db not in unmapped:
        unmapped.append(db)


class _Unparsed(Exception):
    """A reference whose place in the text sqlglot did not record."""


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _span(node: Any) -> tuple[int, int]:
    meta = getattr(node, "meta", None) or {}
    if "start" not in meta or "end" not in meta:
        raise _Unparsed(f"no position for {node.sql(dialect='spark')!r}")
    return int(meta["start"]), int(meta["end"]) + 1


def _table_edit(
    node: Any,
    map_db: MapDb,
    default: str | None,
    edits: list[tuple[int, int, str]],
    renamed: set[tuple[str, str]],
    session_only: bool,
    unmapped: list[str],
) -> None:
    from sqlglot import exp

    name = node.args.get("this")
    if not isinstance(name, exp.Identifier) or _is_path(name.name):
        return  # a table function (range(10)), a file path (parquet.`/x`), ...
    db = node.args.get("db")
    catalog = node.args.get("catalog")
    if isinstance(catalog, exp.Identifier) and catalog.name.lower() != SESSION_CATALOG:
        return  # another Spark catalog: not the metastore's
    if session_only and catalog is None:
        return
    if isinstance(db, exp.Identifier):
        mapped = map_db(db.name)
        if mapped is not None:
            start, end = _span(db)
            edits.append((start, end, _quote(mapped, db.quoted)))
            renamed.add((db.name.lower(), name.name.lower()))
        else:
            _note_unmapped(db.name, unmapped)
        return
    if default is None or catalog is not None or _is_cte(node, name.name):
        return
    start, _ = _span(name)
    edits.append((start, start, _quote(default, name.quoted) + "."))


def _column_edit(
    column: Any,
    map_db: MapDb,
    renamed: set[tuple[str, str]],
    edits: list[tuple[int, int, str]],
    session_only: bool,
) -> None:
    from sqlglot import exp

    db, table = column.args.get("db"), column.args.get("table")
    if not isinstance(db, exp.Identifier) or not isinstance(table, exp.Identifier):
        return
    # ``a.b.c`` is also a struct field of alias ``a``: only a db.table of a renamed reference is a database.
    if (db.name.lower(), table.name.lower()) not in renamed:
        return
    catalog = column.args.get("catalog")
    if isinstance(catalog, exp.Identifier) and catalog.name.lower() != SESSION_CATALOG:
        return
    if session_only and catalog is None:
        return
    mapped = map_db(db.name)
    if mapped is not None:
        start, end = _span(db)
        edits.append((start, end, _quote(mapped, db.quoted)))


def _function_edit(dot: Any, map_db: MapDb, edits: list[tuple[int, int, str]], unmapped: list[str]) -> None:
    from sqlglot import exp

    db, call = dot.this, dot.expression
    if not isinstance(db, exp.Identifier) or not isinstance(call, exp.Func):
        return
    mapped = map_db(db.name)
    if mapped is not None:
        start, end = _span(db)
        edits.append((start, end, _quote(mapped, db.quoted)))
    else:
        _note_unmapped(db.name, unmapped)


def _is_cte(node: Any, name: str) -> bool:
    """True when an unqualified ``name`` at ``node`` is a CTE visible there (Spark's non-recursive scoping)."""
    from sqlglot import exp

    lower = name.lower()
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, exp.With):
            ctes = parent.expressions
            # Inside CTE k only the CTEs before it are visible (unless recursive).
            at = next((i for i, c in enumerate(ctes) if c is child), None)
            visible = ctes if parent.args.get("recursive") or at is None else ctes[:at]
            if any(c.alias_or_name.lower() == lower for c in visible):
                return True
        else:
            with_ = parent.args.get("with_") or parent.args.get("with")
            if (
                isinstance(with_, exp.With)
                and child is not with_
                and any(c.alias_or_name.lower() == lower for c in with_.expressions)
            ):
                return True
        child, parent = parent, parent.parent
    return False


def _is_path(name: str) -> bool:
    return "/" in name or ":" in name


def _quote(name: str, quoted: bool) -> str:
    if not quoted and _bare_ok(name):
        return name
    return "`" + name.replace("`", "``") + "`"


@functools.lru_cache(maxsize=4096)
def _bare_ok(name: str) -> bool:
    """True when ``name`` unquoted reads back as that database name (not a keyword, no odd characters)."""
    if not _PLAIN.match(name) or name.lower() in _RESERVED:
        return False
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        table = sqlglot.parse_one(f"SELECT 1 FROM {name}.t", read="spark").find(exp.Table)
    except SqlglotError:
        return False
    db = table.args.get("db") if table is not None else None
    return isinstance(db, exp.Identifier) and db.name == name and not db.quoted


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    out: list[str] = []
    pos = 0
    for start, end, new in sorted(set(edits)):
        if start < pos:
            continue  # the same span found twice through two nodes
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


if __name__ == "__main__":
    # A view parser worker process (``view_parse._Worker`` starts it): the rewrites of this module.
    import sys

    view_parse.serve(compute, sys.stdin.buffer, sys.stdout.buffer)
