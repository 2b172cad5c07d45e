"""Shared by the unit tests (each folder's own conftest.py adds what only its tests need)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from catalogd.config import parse_config
from catalogd.manager import CatalogManager


@pytest.fixture
def memory_manager(tmp_path: Path) -> Iterator[Callable[[str], CatalogManager]]:
    """``memory_manager(catalogs)``: an open CatalogManager on the catalogs that the YAML list
    ``catalogs`` declares (memory ones: no metastore), its data dir in ``tmp_path``; closed after
    the test.
    """
    opened: list[CatalogManager] = []

    def make(catalogs: str) -> CatalogManager:
        config = parse_config(f"server:\n  data-dir: {tmp_path}\ncatalogs:\n{catalogs}", source="test.yaml")
        manager = CatalogManager(config)
        manager.open()
        opened.append(manager)
        return manager

    yield make
    for manager in opened:
        manager.close()
