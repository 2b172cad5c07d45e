"""Runs a CREATE / ALTER / DROP DYNAMIC TABLE statement through the table operations."""

from __future__ import annotations

from catalogd.dynamic.statements import AlterAction, CreateDynamicTable, DropDynamicTable, parse_statement
from catalogd.dynamic.tables import TableOperations
from catalogd.model import DynamicTableChange, DynamicTableSpec, StatementResult
from catalogd.names import parse_object


def execute(ops: TableOperations, statement: str) -> StatementResult:
    """Parse and run one statement; what it did, for the caller to show.

    Raises:
        UnsupportedError: not a dynamic-table statement.
        InvalidArgumentError: a syntax error (with what was expected), or bad values.
    """
    parsed = parse_statement(statement)
    path = parse_object(parsed.name)
    if isinstance(parsed, CreateDynamicTable):
        catalog, database, name = ops.resolve(path)
        exists = catalog.table_exists(database, name)
        dt = ops.create(DynamicTableSpec(
            catalog=catalog.name, database=database, name=name, query=parsed.query,
            freshness=str(parsed.freshness), refresh_mode=parsed.mode, partitioned_by=list(parsed.partitioned_by),
            options=dict(parsed.options), comment=parsed.comment), ignore_if_exists=parsed.if_not_exists)
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
