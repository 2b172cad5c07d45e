"""``metastore-key-file``: a remote hive catalog on another catalogd's embedded metastore sends that metastore's key."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_cases import problems_of

from catalogd.config import parse_config


def _catalog(uris: str, extra: str = "", kind: str = "hive") -> str:
    connection = f"    connection: {{hive.metastore.uris: '{uris}'}}\n" if kind == "hive" else ""
    return f"catalogs:\n  - name: main\n    type: {kind}\n{connection}{extra}"


def test_a_remote_catalog_takes_a_key_file_made_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    config = parse_config(_catalog("thrift://127.0.0.1:9083", "    metastore-key-file: other/metastore.key\n"))
    assert config.default_catalog.metastore_key_file == tmp_path / "other" / "metastore.key"
    # The file need not exist yet: the other daemon writes it when it starts its metastore.
    assert parse_config(_catalog("thrift://h:9083")).default_catalog.metastore_key_file is None


@pytest.mark.parametrize(("text", "kind"), [
    (_catalog("embedded", "    metastore-key-file: /k\n"), "embedded"),
    (_catalog("", "    metastore-key-file: /k\n", kind="memory"), "memory"),
])
def test_an_embedded_or_memory_catalog_takes_none(text: str, kind: str) -> None:
    problems = problems_of(text)
    assert any("metastore-key-file" in p and "remote metastore" in p for p in problems), problems
