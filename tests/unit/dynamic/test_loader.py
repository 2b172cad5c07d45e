from __future__ import annotations

import datetime
import threading
from types import SimpleNamespace
from typing import Any

from catalogd.dynamic.loader import Loader


class FakeCatalog:
    def __init__(self, read_only: bool) -> None:
        self.read_only = read_only
        self.asked: list[str] = []
        self.watched: list[str] = []

    def info(self) -> Any:
        return SimpleNamespace(read_only=self.read_only)

    def tables_with_parameter(self, key: str) -> list[Any]:
        self.asked.append(key)
        return []

    def watch_parameter(self, key: str, found: Any) -> None:
        self.watched.append(key)


def test_a_read_only_catalog_s_dynamic_tables_are_not_driven() -> None:
    # Its refreshes could not write: the daemon or catalog that writes the tables drives them.
    catalogs = {"main": FakeCatalog(read_only=False), "ro": FakeCatalog(read_only=True)}
    manager = SimpleNamespace(catalogs=lambda: dict(catalogs))
    config = SimpleNamespace(dynamic_tables=SimpleNamespace(enabled=True))
    loader = Loader(manager, config, None, None, None, None, threading.Event(),  # type: ignore[arg-type]
                    lambda: datetime.datetime.now(datetime.UTC))
    loader.sync()
    assert catalogs["main"].asked and catalogs["main"].watched
    assert catalogs["ro"].asked == [] and catalogs["ro"].watched == []


class FakeRegistry:
    def __init__(self) -> None:
        self.names: set[str] = set()

    def get(self, full: str) -> Any:
        return full if full in self.names else None


def _adopting_loader(leading: list[bool], enabled: bool = True) -> tuple[Loader, FakeRegistry, list[str]]:
    registry = FakeRegistry()
    catalogs = {"main": FakeCatalog(read_only=False)}
    manager = SimpleNamespace(catalogs=lambda: dict(catalogs))
    config = SimpleNamespace(dynamic_tables=SimpleNamespace(enabled=enabled))
    loader = Loader(manager, config, registry, None, None, None, threading.Event(),  # type: ignore[arg-type]
                    lambda: datetime.datetime.now(datetime.UTC), leading=lambda: leading[0])
    restored: list[str] = []

    def restore(catalog: str, database: str, name: str, params: dict[str, str], now: float) -> None:
        restored.append(f"{catalog}.{database}.{name}")
        registry.names.add(f"{catalog}.{database}.{name}")

    loader.restore = restore  # type: ignore[method-assign]
    return loader, registry, restored


def test_a_table_made_through_another_member_before_the_takeover_is_adopted_on_demand() -> None:
    # The new leader's load had passed when the table was made through the old one: a refresh or
    # change asked of the new leader drives it from then on instead of refusing it.
    leading = [True]
    loader, _registry, restored = _adopting_loader(leading)
    assert not loader.adopt("main", "db", "t", {})  # the catalog is not loaded yet: the load will find it
    loader.sync()
    assert loader.adopt("main", "db", "t", {}) and restored == ["main.db.t"]
    leading[0] = False
    assert not loader.adopt("main", "db", "u", {}) and restored == ["main.db.t"]


def test_a_follower_or_a_daemon_without_dynamic_tables_adopts_nothing() -> None:
    loader, _registry, restored = _adopting_loader([True], enabled=False)
    loader.sync()
    assert not loader.adopt("main", "db", "t", {}) and restored == []
