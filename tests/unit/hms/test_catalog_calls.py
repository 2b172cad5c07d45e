"""HMS 3's catalog calls: catalogd's catalogs listed and described, never made or changed.

(Through the router, on the overlay IDL: ``test_catalog_names.py::test_the_catalog_calls_through_the_router``.)
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from catalogd.hive_idl import ttypes as hms
from catalogd.hms.catalog_calls import REFUSED, answer
from catalogd.hms.refused import Refused
from catalogd.model import CatalogInfo


class _Catalog:
    def __init__(self, name: str, kind: str, warehouse: str | None = None) -> None:
        self._info = CatalogInfo(name=name, type=kind, warehouse=warehouse)

    def info(self) -> CatalogInfo:
        return self._info


def _answer(method: str, args: Any, readable: Any = lambda name: True) -> Any:
    catalogs = {"main": _Catalog("main", "hive", "file:/wh"), "scratch": _Catalog("scratch", "memory"),
                "pg": _Catalog("pg", "jdbc")}
    return answer(method, args, catalogs, "main", readable,  # type: ignore[arg-type]
                  lambda c: c.info().warehouse or (f"file:/data/{c.info().name}"
                                                   if c.info().type == "memory" else None))


def test_get_catalogs_and_get_catalog() -> None:
    assert _answer("get_catalogs", None).names == ["main", "pg", "scratch"]
    assert _answer("get_catalogs", None, lambda name: name != "pg").names == ["main", "scratch"]
    hive = _answer("get_catalog", SimpleNamespace(catName=SimpleNamespace(name="hive"))).catalog
    assert (hive.name, hive.locationUri) == ("hive", "file:/wh")
    assert "default catalog 'main' (hive)" in hive.description
    assert "pg, scratch under their prefixes" in hive.description
    scratch = _answer("get_catalog", SimpleNamespace(catName=SimpleNamespace(name="Scratch"))).catalog
    assert (scratch.name, scratch.locationUri) == ("Scratch", "file:/data/scratch")
    assert "'scratch' (memory)" in scratch.description
    assert _answer("get_catalog", SimpleNamespace(catName=SimpleNamespace(name="pg"))).catalog.locationUri is None
    for unknown in ("x", "", "../"):
        with pytest.raises(Refused) as e:
            _answer("get_catalog", SimpleNamespace(catName=SimpleNamespace(name=unknown)))
        assert isinstance(e.value.exc, hms.NoSuchObjectException) and f"no catalog {unknown!r}" in e.value.exc.message
    with pytest.raises(Refused):
        _answer("get_catalog", SimpleNamespace(catName=SimpleNamespace(name="pg")), lambda name: name != "pg")


@pytest.mark.parametrize("method", sorted(REFUSED))
def test_catalogs_are_not_made_through_the_hms_api(method: str) -> None:
    with pytest.raises(Refused) as e:
        _answer(method, SimpleNamespace())
    assert isinstance(e.value.exc, hms.MetaException)
    assert "catalogs are configured in catalogd's YAML" in e.value.exc.message
