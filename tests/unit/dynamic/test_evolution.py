"""Tests for catalogd.dynamic.evolution: FLIP-492's schema rules for a dynamic table's new query."""

from __future__ import annotations

import pytest

from catalogd.dynamic.evolution import added_columns
from catalogd.errors import InvalidArgumentError
from catalogd.model import Column

COLUMNS = [Column("user_id", "bigint"), Column("event_count", "bigint"), Column("total", "decimal(20,2)")]
KEYS = [Column("ds", "string")]


def cols(*spec: str) -> list[Column]:
    return [Column(*part.split(" ", 1)) for part in spec]


def refused(new: list[Column], columns: list[Column] = COLUMNS, keys: list[Column] = KEYS) -> str:
    with pytest.raises(InvalidArgumentError) as err:
        added_columns("c.d.t", columns, keys, new)
    return str(err.value)


def test_same_schema_adds_nothing() -> None:
    assert added_columns("c.d.t", COLUMNS, KEYS, [*COLUMNS, *KEYS]) == []


def test_new_columns_are_appended() -> None:
    new = cols("user_id bigint", "ds string", "event_count bigint", "total decimal(20,2)", "avg_amount double",
               "Label string")
    assert added_columns("c.d.t", COLUMNS, KEYS, new) == cols("avg_amount double", "label string")


def test_types_compare_in_their_normal_spelling() -> None:
    new = cols("USER_ID BIGINT", "event_count BIGINT", "total DECIMAL(20, 2)", "ds STRING")
    assert added_columns("c.d.t", COLUMNS, KEYS, new) == []


def test_a_changed_type_is_refused() -> None:
    message = refused(cols("user_id string", "event_count bigint", "total decimal(20,2)", "ds string"))
    assert "column user_id would change type from bigint to string" in message
    assert message.startswith("c.d.t: the new query does not keep the table's schema (FLIP-492")


def test_a_dropped_column_is_refused() -> None:
    message = refused(cols("user_id bigint", "total decimal(20,2)", "ds string"))
    assert "column event_count is not in the new query (a column cannot be dropped or renamed)" in message


def test_a_renamed_column_is_refused() -> None:
    message = refused(cols("user_id bigint", "events bigint", "total decimal(20,2)", "ds string"))
    assert "column event_count is not in the new query" in message


def test_a_moved_column_is_refused() -> None:
    message = refused(cols("event_count bigint", "user_id bigint", "total decimal(20,2)", "ds string"))
    assert "column user_id would move from position 1 to 2" in message
    assert "column event_count would move from position 2 to 1" in message


def test_a_new_column_before_an_old_one_is_refused() -> None:
    message = refused(cols("user_id bigint", "new double", "event_count bigint", "total decimal(20,2)", "ds string"))
    assert "column event_count would move from position 2 to 3" in message


def test_partition_keys_stay() -> None:
    assert "partition column ds is not in the new query" in refused([*COLUMNS])
    assert "partition column ds would change type from string to date" in refused([*COLUMNS, Column("ds", "date")])


def test_every_problem_is_named() -> None:
    message = refused(cols("user_id int", "ds date"))
    for part in ("user_id would change type", "event_count is not in", "total is not in", "ds would change type"):
        assert part in message


def test_a_name_twice_is_refused() -> None:
    assert "produces column(s) ['user_id'] more than once" in refused([*COLUMNS, Column("USER_ID", "bigint"),
                                                                          *KEYS])


def test_unpartitioned_table() -> None:
    assert added_columns("c.d.t", COLUMNS, [], [*COLUMNS, Column("x", "int")]) == [Column("x", "int")]
    assert "is not in the new query" in refused(COLUMNS[:2], keys=[])
