"""loadTable in a nested namespace: the spec's NoSuchTableException, which Iceberg's Java client
needs to fall back to a metadata table (Spark's ``db.t.snapshots`` asks for table ``snapshots`` in
namespace ``db.t`` first)."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import MagicMock

import pytest
from pyiceberg.exceptions import NoSuchTableError

from catalogd.auth.model import ANONYMOUS
from catalogd.iceberg.door import IcebergDoor, Request
from catalogd.iceberg.errors import translate


def test_a_table_in_a_nested_namespace_is_no_such_table(tmp_path: Path) -> None:
    door = IcebergDoor(MagicMock(), MagicMock(), tmp_path / "scratch")
    with pytest.raises(NoSuchTableError) as caught:
        door.load_table(Request(ANONYMOUS, "127.0.0.1", "main"), "db\x1ft", "snapshots")
    error = translate(caught.value)
    assert (error.code, error.type) == (404, "NoSuchTableException")
    door.manager.catalogs.assert_not_called()  # answered before any catalog is looked at
    door.router.handle.assert_not_called()  # and before any metastore call
