"""Not-found errors that help (catalogd.not_found via the manager): a missing database named, close names suggested."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from catalogd.errors import (
    DatabaseNotFoundError,
    FunctionNotFoundError,
    TableNotFoundError,
    ViewNotFoundError,
)
from catalogd.manager import CatalogManager
from catalogd.model import Column, Database, Function, Table, TableKind, TableUpdate
from catalogd.names import NamespacePath, ObjectPath
from catalogd.not_found import did_you_mean


@pytest.fixture
def manager(memory_manager: Callable[[str], CatalogManager]) -> CatalogManager:
    mgr = memory_manager(
        """\
  - name: main
    type: memory
    default: true
"""
    )
    mgr.create_database(Database("sales", "main"))
    mgr.create_database(Database("marketing", "main"))
    mgr.create_table(Table("orders", "sales", "main", columns=[Column("id", "bigint")]))
    mgr.create_table(Table("order_lines", "sales", "main", columns=[Column("id", "bigint")]))
    mgr.create_table(Table("customers", "sales", "main", columns=[Column("id", "bigint")]))
    return mgr


def test_did_you_mean_lists_the_closest_names_or_nothing() -> None:
    assert did_you_mean("ordres", ["orders", "customers"], "main.sales.") == "; did you mean main.sales.orders?"
    assert did_you_mean("order", ["orders", "orderz", "zzz"]) == "; did you mean orders or orderz?"
    assert did_you_mean("xyz", ["orders", "customers"]) == ""
    assert did_you_mean("orders", ["orders"]) == ""  # itself is no suggestion


def test_a_typo_in_a_table_name_suggests_the_closest_table(manager: CatalogManager) -> None:
    with pytest.raises(TableNotFoundError) as info:
        manager.get_table(ObjectPath("main", "sales", "ordres"))
    assert str(info.value) == "table main.sales.ordres does not exist; did you mean main.sales.orders?"


@pytest.mark.parametrize("call", [
    lambda m: m.get_table(ObjectPath("main", "sale", "orders")),
    lambda m: m.alter_table(ObjectPath("main", "sale", "orders"), TableUpdate(comment="x")),
    lambda m: m.drop_table(ObjectPath("main", "sale", "orders")),
    lambda m: m.rename_table(ObjectPath("main", "sale", "orders"), "o2"),
    lambda m: m.get_view(ObjectPath("main", "sale", "orders")),
    lambda m: m.get_function(ObjectPath("main", "sale", "orders")),
    lambda m: m.list_tables(NamespacePath("main", "sale")),
    lambda m: m.get_database(NamespacePath("main", "sale")),
    lambda m: m.create_table(Table("orders", "sale", "main", columns=[Column("id", "bigint")])),
])
def test_a_missing_database_is_reported_as_a_missing_database(manager: CatalogManager, call: Any) -> None:
    with pytest.raises(DatabaseNotFoundError) as info:
        call(manager)
    assert str(info.value) == "database main.sale does not exist; did you mean main.sales?"
    assert info.value.kind == "not-found"


def test_no_close_name_leaves_the_message_alone(manager: CatalogManager) -> None:
    with pytest.raises(TableNotFoundError) as info:
        manager.get_table(ObjectPath("main", "sales", "zzzzzz"))
    assert str(info.value) == "table main.sales.zzzzzz does not exist"
    with pytest.raises(DatabaseNotFoundError) as db_info:
        manager.get_table(ObjectPath("main", "qqqqq", "orders"))
    assert str(db_info.value) == "database main.qqqqq does not exist"


def test_views_and_functions_suggest_their_own_kind(manager: CatalogManager) -> None:
    manager.create_view(Table("recent", "sales", "main", kind=TableKind.VIEW, view_text="SELECT id FROM orders"))
    manager.create_function(Function("to_eur", "sales", "main", class_name="com.example.ToEur"))
    with pytest.raises(ViewNotFoundError) as view:
        manager.get_view(ObjectPath("main", "sales", "recnt"))
    assert str(view.value).endswith("; did you mean main.sales.recent?")
    with pytest.raises(FunctionNotFoundError) as function:
        manager.drop_function(ObjectPath("main", "sales", "to_euro"))
    assert str(function.value).endswith("; did you mean main.sales.to_eur?")
    # Not a "does not exist": nothing to suggest.
    with pytest.raises(ViewNotFoundError, match=r"is a table, not a view$"):
        manager.get_view(ObjectPath("main", "sales", "orders"))


def test_if_exists_still_succeeds_on_a_missing_database(manager: CatalogManager) -> None:
    manager.drop_table(ObjectPath("main", "sale", "orders"), ignore_if_not_exists=True)
    manager.drop_view(ObjectPath("main", "sale", "v"), ignore_if_not_exists=True)
    assert not manager.table_exists(ObjectPath("main", "sale", "orders"))
