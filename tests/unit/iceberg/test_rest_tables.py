"""The REST door's metadata-file rules and cache."""

from __future__ import annotations

import gzip
from pathlib import Path

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.sorting import SortOrder

from catalogd.iceberg.tables import MetadataFiles, inside, sort_order_ids_as_java


def test_inside_is_strict_and_spelling_blind() -> None:
    assert inside("file:///w/t", "file:/w/t/metadata/1.json")
    assert inside("file:/w/t/", "file:///w/t/m")
    assert not inside("file:///w/t", "file:///w/t")
    assert not inside("file:///w/t", "file:///w/tt/x")
    assert not inside("file:///w/t", "file:///w/t/../victim/x")


def test_metadata_files_are_read_once_and_gunzipped(tmp_path: Path) -> None:
    plain = tmp_path / "a.metadata.json"
    plain.write_bytes(b'{"a": 1}')
    zipped = tmp_path / "b.gz.metadata.json"
    zipped.write_bytes(gzip.compress(b'{"b": 2}'))
    files = MetadataFiles(max_bytes=1 << 20)
    io = PyArrowFileIO()
    assert files.read(plain.as_uri(), io) == b'{"a": 1}'
    plain.write_bytes(b"changed")  # never happens to a metadata file: the cached bytes stand
    assert files.read(plain.as_uri(), io) == b'{"a": 1}'
    assert files.read(zipped.as_uri(), io) == b'{"b": 2}'


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    files = MetadataFiles(max_bytes=800)
    io = PyArrowFileIO()
    for i in range(20):
        path = tmp_path / f"{i}.metadata.json"
        path.write_bytes(b"x" * 100)
        files.read(path.as_uri(), io)
    assert files._size <= 800


def _sorted_table(*orders: SortOrder) -> TableMetadata:
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.schema import Schema
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.types import LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), required=False))
    metadata = new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, orders[0], "file:/tmp/t", {})
    return metadata.model_copy(update={"sort_orders": [*metadata.sort_orders, *orders[1:]]})


def test_an_added_sort_order_takes_the_id_iceberg_s_builder_gives() -> None:
    from pyiceberg.table.sorting import SortDirection, SortField
    from pyiceberg.table.update import AddSortOrderUpdate, SetDefaultSortOrderUpdate
    from pyiceberg.transforms import BucketTransform, IdentityTransform

    bucket = SortOrder(SortField(source_id=1, transform=BucketTransform(16), direction=SortDirection.DESC), order_id=1)
    base = _sorted_table(bucket)
    # A replace transaction begun before another replace added order 1: its own order 1 is new.
    identity = SortOrder(SortField(source_id=1, transform=IdentityTransform()), order_id=1)
    updates = sort_order_ids_as_java(base, (AddSortOrderUpdate(**{"sort-order": identity}),
                                            SetDefaultSortOrderUpdate(**{"sort-order-id": -1})))
    assert [type(u).__name__ for u in updates] == ["AddSortOrderUpdate", "SetDefaultSortOrderUpdate"]
    assert updates[0].sort_order.order_id == 2 and updates[0].sort_order.fields == identity.fields
    assert updates[1].sort_order_id == 2
    # The same fields as an existing order: that order is meant (nothing added).
    again = SortOrder(*bucket.fields, order_id=5)
    assert sort_order_ids_as_java(base, (AddSortOrderUpdate(**{"sort-order": again}),
                                         SetDefaultSortOrderUpdate(**{"sort-order-id": -1}))) == (
        SetDefaultSortOrderUpdate(**{"sort-order-id": 1}),)
    # No base (a create), or no added order: the updates as sent.
    plain = (SetDefaultSortOrderUpdate(**{"sort-order-id": 0}),)
    assert sort_order_ids_as_java(None, plain) is plain
    assert sort_order_ids_as_java(base, plain) is plain


def test_a_held_file_deleted_behind_catalogd_s_back_is_gone(tmp_path: Path) -> None:
    import pytest

    path = tmp_path / "c.metadata.json"
    path.write_bytes(b'{"c": 3}')
    files = MetadataFiles()
    assert files.read(path.as_uri(), PyArrowFileIO()) == b'{"c": 3}'
    path.unlink()
    with pytest.raises(FileNotFoundError):
        files.read(path.as_uri(), PyArrowFileIO())
