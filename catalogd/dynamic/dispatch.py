"""Runs a dynamic-table statement (CREATE [OR ALTER], ALTER, DROP, SHOW CREATE) through the table operations."""

from __future__ import annotations

from catalogd.dynamic.freshness import parse_freshness
from catalogd.dynamic.statements import (
    AlterAction,
    CreateDynamicTable,
    DropDynamicTable,
    ShowCreateDynamicTable,
    parse_statement,
    show_create,
)
from catalogd.dynamic.tables import TableOperations
from catalogd.errors import InvalidArgumentError
from catalogd.model import (
    Column,
    DynamicTable,
    DynamicTableChange,
    DynamicTableSpec,
    RefreshMode,
    RefreshState,
    StatementResult,
)
from catalogd.names import ObjectPath, parse_object


def execute(ops: TableOperations, statement: str) -> StatementResult:
    """Parse and run one statement; what it did, for the caller to show.

    Raises:
        UnsupportedError: not a dynamic-table statement.
        InvalidArgumentError: a syntax error (with what was expected), or bad values.
    """
    parsed = parse_statement(statement)
    path = parse_object(parsed.name)
    if isinstance(parsed, ShowCreateDynamicTable):
        dt = ops.get(path)
        return StatementResult("show-create", show_create(dt, parsed.kind), dt)
    if isinstance(parsed, CreateDynamicTable):
        catalog, database, name = ops.resolve(path)
        exists = catalog.table_exists(database, name)
        if exists and parsed.or_alter:
            return _alter_query(ops, ObjectPath(catalog.name, database, name), parsed.query, parsed)
        dt = ops.create(DynamicTableSpec(
            catalog=catalog.name, database=database, name=name, query=parsed.query,
            freshness=str(parsed.freshness) if parsed.freshness else "", refresh_mode=parsed.mode,
            partitioned_by=list(parsed.partitioned_by), options=dict(parsed.options), comment=parsed.comment),
            ignore_if_exists=parsed.if_not_exists)
        if exists:
            return StatementResult("exists", f"{dt.full_name} exists already; nothing changed", dt)
        return StatementResult("created", f"created dynamic table {dt.full_name} "
                               f"(freshness {dt.freshness}, {dt.refresh_mode.value} refresh)", dt)
    if isinstance(parsed, DropDynamicTable):
        catalog, database, name = ops.resolve(path)
        full = f"{catalog.name}.{database}.{name}"
        if parsed.if_exists and not catalog.table_exists(database, name):
            return StatementResult("not-found", f"{full} does not exist; nothing dropped")
        ops.drop(path, parsed.if_exists)
        return StatementResult("dropped", f"dropped dynamic table {full}")
    action = parsed.action
    if action is AlterAction.SET_QUERY:
        return _alter_query(ops, path, parsed.query or "")
    if action is AlterAction.REFRESH:
        job = ops.refresh([parsed.name], partition=dict(parsed.partition or {}) or None)
        return StatementResult("refreshing", f"refresh job {job.id} started", job=job)
    if action in (AlterAction.SUSPEND, AlterAction.RESUME):
        dt = ops.alter(path, DynamicTableChange(action=action.value))
        kind = "suspended" if action is AlterAction.SUSPEND else "resumed"
        return StatementResult(kind, f"{dt.full_name} is {dt.state.value}", dt)
    change = DynamicTableChange(freshness=str(parsed.freshness) if parsed.freshness else None,
                                refresh_mode=parsed.mode)
    dt = ops.alter(path, change)
    return StatementResult("altered", f"{dt.full_name}: freshness {dt.freshness}, "
                           f"{dt.refresh_mode.value} refresh, {dt.state.value}", dt)


def _alter_query(ops: TableOperations, path: ObjectPath, query: str,
                 create: CreateDynamicTable | None = None) -> StatementResult:
    """ALTER ... AS, or CREATE OR ALTER of a table that exists (its other clauses checked first)."""
    if create is not None:
        _check_same_definition(ops.get(path), create)
    dt, added = ops.set_query(path, query)
    how = ("from its next refresh" if dt.refresh_mode is RefreshMode.FULL
           else "once resumed" if dt.state is RefreshState.SUSPENDED else "by a new streaming job")
    return StatementResult("altered", f"{dt.full_name}: new query, used {how}; "
                           f"{_columns_added(added)}", dt)


def _columns_added(added: list[Column]) -> str:
    if not added:
        return "the columns are unchanged"
    return "columns added: " + ", ".join(f"{c.name} {c.type}" for c in added)


def _check_same_definition(dt: DynamicTable, create: CreateDynamicTable) -> None:
    """CREATE OR ALTER changes only the query of a table that exists: any other clause given
    must say what the table has (a changed one is refused, so that nothing is silently ignored)."""
    differ = []
    if create.freshness is not None and create.freshness.seconds != parse_freshness(dt.freshness).seconds:
        differ.append(f"FRESHNESS {create.freshness} (the table has {dt.freshness}; "
                      "ALTER DYNAMIC TABLE ... SET FRESHNESS changes it)")
    if create.mode is not None and create.mode is not dt.refresh_mode:
        differ.append(f"REFRESH_MODE {create.mode.value} (the table refreshes {dt.refresh_mode.value}; "
                      "ALTER DYNAMIC TABLE ... SET REFRESH_MODE changes it)")
    keys = [k.name for k in dt.partition_keys]
    if create.partitioned_by and create.partitioned_by != keys:
        differ.append(f"PARTITIONED BY {create.partitioned_by} (the table's partition keys are "
                      f"{keys or '(none)'}; they cannot change)")
    if create.options and create.options != dt.options:
        differ.append("WITH options other than the table's (they cannot change)")
    if create.comment is not None and create.comment != (dt.comment or ""):
        differ.append("a COMMENT other than the table's")
    if differ:
        raise InvalidArgumentError(f"{dt.full_name} exists: CREATE OR ALTER changes only its query, and this "
                                   f"statement also gives {'; '.join(differ)}; nothing changed")
