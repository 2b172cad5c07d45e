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
