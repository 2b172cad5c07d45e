"""The REST door's own checks before a write: roles (denials audited), read-only catalogs, and
only Iceberg tables are dropped, renamed or committed to."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyiceberg.exceptions import NoSuchIcebergTableError

from catalogd.auth.model import Principal, Role
from catalogd.errors import PermissionDeniedError
from catalogd.iceberg.door import IcebergDoor, Request


class FakeAccess:
    enabled = True

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def require(self, principal: Principal, catalog: str | None, needed: Role, operation: str,
                job_write: bool = False) -> None:
        if principal.name == "reader" and needed > Role.READER:
            raise PermissionDeniedError(f"reader needs role writer on catalog {catalog} for {operation}")

    def record(self, **entry: Any) -> None:
        self.records.append(entry)


def door(tmp_path: Path, access: FakeAccess | None = None) -> IcebergDoor:
    confs = {"main": SimpleNamespace(read_only=False), "ro": SimpleNamespace(read_only=True)}
    manager = SimpleNamespace(config=SimpleNamespace(catalog=confs.get), default_catalog="main")
    return IcebergDoor(manager, SimpleNamespace(), tmp_path / "scratch", access)  # type: ignore[arg-type]


def test_a_denied_write_is_audited_with_surface_iceberg(tmp_path: Path) -> None:
    access = FakeAccess()
    d = door(tmp_path, access)
    d.require(Request(Principal("reader"), "127.0.0.1:5", "main"), write=False)
    with pytest.raises(PermissionDeniedError, match="reader needs role writer"):
        d.require(Request(Principal("reader"), "127.0.0.1:5", "main"), write=True)
    assert access.records == [{"principal": "reader", "surface": "iceberg", "client": "127.0.0.1:5",
                               "operation": "iceberg write", "object": "main", "outcome": "denied",
                               "detail": "reader needs role writer on catalog main for iceberg write"}]


def test_a_read_only_catalog_refuses_writes_before_anything_is_written(tmp_path: Path) -> None:
    d = door(tmp_path)  # no auth: everyone may do everything, except what the catalog refuses
    d.require(Request(Principal("anonymous"), "p", "ro"), write=False)
    d.require(Request(Principal("anonymous"), "p", "main"), write=True)
    with pytest.raises(PermissionDeniedError, match="catalog 'ro' is read-only"):
        d.require(Request(Principal("anonymous"), "p", "ro"), write=True)


class FakeWarehouse:
    def __init__(self, parameters: dict[str, str]) -> None:
        self.table = SimpleNamespace(parameters=parameters)

    def hive_table(self, database: str, table: str) -> Any:
        return self.table


@pytest.mark.parametrize("parameters", [{}, {"table_type": "hive"}, {"catalogd.stage.id": "x"}])
def test_only_iceberg_tables_are_written(tmp_path: Path, parameters: dict[str, str]) -> None:
    with pytest.raises(NoSuchIcebergTableError):
        door(tmp_path)._iceberg_table(FakeWarehouse(parameters), "db", "t")  # type: ignore[arg-type]
    iceberg = FakeWarehouse({"table_type": "ICEBERG"})
    assert door(tmp_path)._iceberg_table(iceberg, "db", "t") is iceberg.table  # type: ignore[arg-type]
