"""What a dynamic table's definition must be to be run: checked when it is created, and again
before every run (a restart included), on the definition as stored.

- its query is one SELECT whose every table is a plain ``[catalog.]database.table`` of the
  catalog the table reads, that exists there now: no path-based source (``parquet.`/x```,
  ``text.`file:...```, which Spark reads as files when no such table exists), no table
  function (``read_files(...)``, ``IDENTIFIER(...)``; generators such as ``range`` are fine),
  no function that reaches outside the data (``reflect``/``java_method`` call any Java
  method; ``input_file_name`` and its kin tell file paths); the views it reads are held to
  the same rules, down to their tables;
- its freshness is a freshness catalogd accepts (positive, at most its maximum, and a schedule
  for a FULL table);
- its options are a JSON object of strings, none of them catalogd's own.

Spark's own analysis (``analyzer``) is made at create (a JVM round trip); a run checks the
stored definition with these rules, then its signature (``signing``) proves it is the one
catalogd analysed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from catalogd.dynamic import store
from catalogd.dynamic.freshness import Freshness, cron_expression, parse_freshness
from catalogd.errors import InvalidArgumentError, NotFoundError
from catalogd.model import RefreshMode, Table, TableKind

__all__ = ["DENIED_FUNCTIONS", "check_definition", "check_query", "check_sources"]

#: Functions no dynamic table's query may call (lower case).
DENIED_FUNCTIONS = frozenset({
    "reflect", "java_method", "try_reflect",  # any static Java method: files, the environment
    "read_files",  # a table function reading files by path
    "input_file_name", "input_file_block_start", "input_file_block_length",  # file paths
    "identifier",  # a name computed from a string: not checkable here
})
#: Table functions that only generate rows from their arguments: allowed as sources.
GENERATORS = frozenset({"range", "explode", "explode_outer", "inline", "inline_outer", "posexplode",
                        "posexplode_outer", "stack", "json_tuple"})
#: A name part catalogd can check: what a path, a URI or a quoted oddity is not.
_PLAIN = re.compile(r"[A-Za-z0-9_]+")
#: Views read by views read by the query...: deeper is refused (a cycle, or no real schema).
MAX_VIEW_DEPTH = 8

#: Looks a table up in the catalog the query reads: (database, name) -> Table; NotFoundError: none.
Resolver = Callable[[str, str], Table]


def check_query(query: str, what: str, catalogs: frozenset[str] = frozenset()) -> list[tuple[str | None, str]]:
    """The static rules over ``query``; the (database or None, table) it reads, CTEs left out.

    Args:
        catalogs: catalog names a table may be qualified with (lower case); others are refused.

    Raises:
        InvalidArgumentError: not one query, a source that is not a plain table name of those
            catalogs, or a denied function.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    text = (query or "").strip().rstrip(";").strip()
    if not text:
        raise InvalidArgumentError(f"{what} has no query")
    try:
        parsed = sqlglot.parse(text, read="spark")
    except SqlglotError as e:
        raise InvalidArgumentError(f"cannot parse the query of {what}: {e}") from e
    if len(parsed) != 1 or not isinstance(parsed[0], exp.Query):
        raise InvalidArgumentError(f"the query of {what} must be one SELECT")
    tree = parsed[0]
    for func in tree.find_all(exp.Func):
        name = (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()
        if name in DENIED_FUNCTIONS:
            raise InvalidArgumentError(f"{what} calls {name}(), which a dynamic table may not (it reaches files, "
                                       "paths or Java methods outside the catalog's tables)")
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    read: list[tuple[str | None, str]] = []
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            generator = table.this.name if isinstance(table.this, exp.Anonymous) else ""
            if isinstance(table.this, exp.Func) and (generator or table.this.sql_name()).lower() in GENERATORS:
                continue
            raise InvalidArgumentError(f"{what} reads {table.sql('spark')}: a table function or a computed name; "
                                       "a dynamic table reads only tables of its catalog")
        parts = [p for p in (table.catalog, table.db, table.name) if p]
        if not all(_PLAIN.fullmatch(p) for p in parts):
            raise InvalidArgumentError(f"{what} reads {table.sql('spark')}: a path or a file, not a table; a "
                                       "dynamic table reads only tables of its catalog")
        if table.catalog and table.catalog.lower() not in catalogs:
            raise InvalidArgumentError(f"{what} reads {table.sql('spark')}, a table of another catalog")
        if not table.db and table.name.lower() in ctes:
            continue
        read.append((table.db.lower() or None, table.name.lower()))
    return read


def check_sources(query: str, what: str, database: str, resolve: Resolver, catalogs: frozenset[str] = frozenset(),
                  depth: int = 0) -> list[str]:
    """``check_query``, and every table read exists in the catalog now; the views read are held
    to the same rules, down to their tables. The ``database.table`` names read directly.

    Args:
        database: the database an unqualified name means.

    Raises:
        InvalidArgumentError: a rule is broken, a source does not exist, views nest too deep.
    """
    names: list[str] = []
    for db, name in check_query(query, what, catalogs):
        db = db or database
        try:
            found = resolve(db, name)
        except NotFoundError as e:
            # Spark would read a missing ``format.name`` as a file: never run it.
            raise InvalidArgumentError(f"{what} reads {db}.{name}, which is not a table of its catalog") from e
        if found.kind is TableKind.VIEW:
            if depth >= MAX_VIEW_DEPTH:
                raise InvalidArgumentError(f"{what} reads views nested deeper than {MAX_VIEW_DEPTH}")
            text = found.view_expanded_text or found.view_text or ""
            check_sources(text, f"view {db}.{name} (read by {what})", db, resolve, catalogs, depth + 1)
        names.append(f"{db}.{name}")
    return names


def check_freshness(text: str, mode: RefreshMode, what: str) -> Freshness:
    """The stored freshness, if catalogd accepts it for ``mode``.

    Raises:
        InvalidArgumentError: it is not a freshness, or a FULL table's is not a schedule.
    """
    try:
        freshness = parse_freshness(text)
        if mode is RefreshMode.FULL:
            cron_expression(freshness)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{what}: its freshness is refused: {e.message}") from e
    return freshness


def check_definition(what: str, params: dict[str, str], database: str, resolve: Resolver,
                     catalogs: frozenset[str] = frozenset()) -> None:
    """Every rule over a stored definition (``store`` parameters).

    Args:
        database: the database an unqualified name of the stored query means.
        resolve: looks tables up in the catalog the query reads.

    Raises:
        InvalidArgumentError: which rule it breaks.
    """
    check_sources(store.unchunk(params, store.EXPANDED) or "", what, database, resolve, catalogs)
    dt = store.decode("", "", "", params)
    check_freshness(dt.freshness, dt.refresh_mode, what)
    try:
        options = json.loads(params.get(store.OPTIONS) or "{}")
    except ValueError:
        options = None
    if not isinstance(options, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in options.items()):
        raise InvalidArgumentError(f"{what}: its options are not a JSON object of strings")
    if any(k.lower().startswith("catalogd.") for k in options):
        raise InvalidArgumentError(f"{what}: its options name catalogd's own properties")
