"""The REST door's metadata-file rules and cache."""

from __future__ import annotations

import gzip
from pathlib import Path

from pyiceberg.io.pyarrow import PyArrowFileIO

from catalogd.iceberg.tables import MetadataFiles, inside


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
