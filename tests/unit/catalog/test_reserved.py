"""Tests for catalogd.catalog.reserved and the manager's doors that use it: no client writes
catalogd's own properties or the jdbc properties marker, on create or alter, of any object."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from catalogd.catalog.jdbc_comments import PROPERTIES_MARKER, decode_comment
from catalogd.catalog.reserved import check_client_metadata, reserved_keys
from catalogd.errors import InvalidArgumentError
from catalogd.manager import CatalogManager
from catalogd.model import Column, Database, DatabaseUpdate, StagePurpose, StageRequest, Table, TableUpdate, ViewUpdate
from catalogd.names import NamespacePath, ObjectPath

FORGED = PROPERTIES_MARKER + '{"catalogd.dt.freshness":"1 s"}'


def test_reserved_keys_in_any_case() -> None:
    assert reserved_keys(["team", "catalogd.dt.query.0", "CATALOGD.dt.freshness", "catalogd_x"]) == \
        ["CATALOGD.dt.freshness", "catalogd.dt.query.0"]


def test_the_marker_is_refused_however_its_line_ends() -> None:
    # What the jdbc catalog would have believed: the forged text decodes to catalogd properties.
    assert decode_comment("hello" + FORGED)[1] == {"catalogd.dt.freshness": "1 s"}
    for comment in ("hello" + FORGED, "x\r\n-- catalogd properties: {}", "-- CATALOGD PROPERTIES: {}"):
        with pytest.raises(InvalidArgumentError, match="may not contain"):
            check_client_metadata("table t", (), [comment])
    check_client_metadata("table t", ["team"], ["-- a comment", None, "catalogd properties"])


@pytest.fixture
def manager(memory_manager: Callable[[str], CatalogManager]) -> CatalogManager:
    m = memory_manager("  - name: main\n    type: memory\n    default: true\n")
    m.create_database(Database(name="sales", catalog="main"))
    m.create_table(Table(name="t", database="sales", catalog="main", columns=[Column("a", "int")]))
    m.create_view(Table(name="v", database="sales", catalog="main", view_text="SELECT a FROM t"))
    return m


def test_every_door_of_the_manager_refuses_reserved_keys_and_the_marker(manager: CatalogManager) -> None:
    table, view, db = ObjectPath("main", "sales", "t"), ObjectPath("main", "sales", "v"), NamespacePath("main", "sales")
    attempts: list[Callable[[], object]] = [
        lambda: manager.create_table(Table(name="u", database="sales", catalog="main", columns=[Column("a", "int")],
                                           comment="x" + FORGED)),
        lambda: manager.create_table(Table(name="u", database="sales", catalog="main", columns=[Column("a", "int")],
                                           properties={"Catalogd.dt.freshness": "1 s"})),
        lambda: manager.alter_table(table, TableUpdate(set_properties={"catalogd.dt.freshness": "1 s"})),
        lambda: manager.alter_table(table, TableUpdate(unset_properties=["catalogd.last-commit"])),
        lambda: manager.alter_table(table, TableUpdate(comment=FORGED)),
        lambda: manager.create_view(Table(name="w", database="sales", catalog="main", view_text="SELECT a FROM t",
                                          properties={"catalogd.made": "true"})),
        lambda: manager.alter_view(view, ViewUpdate(comment=FORGED)),
        lambda: manager.alter_view(view, ViewUpdate(set_properties={"catalogd.x": "1"})),
        lambda: manager.create_database(Database(name="d2", catalog="main", comment=FORGED)),
        lambda: manager.create_database(Database(name="d2", catalog="main", properties={"catalogd.x": "1"})),
        lambda: manager.alter_database(db, DatabaseUpdate(set_properties={"catalogd.x": "1"})),
        lambda: manager.alter_database(db, DatabaseUpdate(comment=FORGED)),
        lambda: manager.begin_stage(StageRequest(catalog="main", database="sales", target="n",
                                                 purpose=StagePurpose.CREATE, columns=[Column("a", "int")],
                                                 comment=FORGED)),
    ]
    for attempt in attempts:
        with pytest.raises(InvalidArgumentError):
            attempt()
    # Nothing changed.
    assert manager.list_tables(db) == ["t"] and manager.list_views(db) == ["v"]
    assert manager.get_table(table).properties == {} and manager.get_table(table).comment is None
    assert "d2" not in manager.list_databases("main")
