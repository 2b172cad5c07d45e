"""Whether a dynamic table may take a new query: FLIP-492's schema rules for
``ALTER DYNAMIC TABLE t AS <query>`` (and ``CREATE OR ALTER`` of a table that exists).

The table keeps its data, so its columns keep their meaning: every existing column
stays, under its name, with its type and (among the data columns) at its position; the
query may add columns after the last one. Hive columns are all nullable, so an added
column reads as NULL in the files written before (Flink's rule that new columns be
nullable holds by construction). Partition keys stay the same columns with the same
types; the query may list them anywhere, as at CREATE.
"""

from __future__ import annotations

from catalogd.errors import InvalidArgumentError
from catalogd.hive_types import parse_type
from catalogd.model import Column

__all__ = ["added_columns"]


def _type(column: Column) -> str:
    try:
        return parse_type(column.type)
    except InvalidArgumentError:
        return column.type.strip().lower()


def added_columns(table: str, columns: list[Column], partition_keys: list[Column],
                  new_columns: list[Column]) -> list[Column]:
    """The data columns a new query adds to the table (none: the schema stays as it is).

    Args:
        table: the table's name, for the messages.
        columns: the table's data columns, in order.
        partition_keys: the table's partition keys.
        new_columns: what the new query produces (Spark's analysis), in order.

    Raises:
        InvalidArgumentError: the new query drops, renames, moves or retypes a column, or
            produces one name twice; the message names each such column.
    """
    names = [c.name.lower() for c in new_columns]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InvalidArgumentError(f"{table}: the new query produces column(s) {twice} more than once")
    by_name = {c.name.lower(): c for c in new_columns}
    keys = {k.name.lower() for k in partition_keys}
    problems: list[str] = []
    for key in partition_keys:
        found = by_name.get(key.name.lower())
        if found is None:
            problems.append(f"partition column {key.name} is not in the new query")
        elif _type(found) != _type(key):
            problems.append(f"partition column {key.name} would change type from {_type(key)} to {_type(found)}")
    data = [c for c in new_columns if c.name.lower() not in keys]
    data_names = [c.name.lower() for c in data]
    for position, old in enumerate(columns):
        name = old.name.lower()
        if name not in by_name:
            problems.append(f"column {old.name} is not in the new query (a column cannot be dropped or renamed)")
            continue
        new = by_name[name]
        if name in keys:  # pragma: no cover - a data column is never a partition key
            continue
        if data_names.index(name) != position:
            problems.append(f"column {old.name} would move from position {position + 1} to "
                            f"{data_names.index(name) + 1} (existing columns keep their order; new ones go last)")
        elif _type(new) != _type(old):
            problems.append(f"column {old.name} would change type from {_type(old)} to {_type(new)}")
    if problems:
        raise InvalidArgumentError(f"{table}: the new query does not keep the table's schema (FLIP-492: existing "
                                   f"columns keep their names, types and order; new columns are appended): "
                                   + "; ".join(problems))
    return [Column(c.name.lower(), c.type, c.comment) for c in data[len(columns):]]
