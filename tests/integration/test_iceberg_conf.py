"""``catalogd iceberg-conf`` against the session daemon: the settings it prints reach the REST door.

The JSON's pyiceberg properties and the text's ``.pyiceberg.yaml`` block each load a table made
through the other door (pyiceberg's ``HiveCatalog`` on catalogd's HMS endpoint).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.utils.config import Config

from tests.integration.helpers import Daemon

from .conftest import CliResult

pytestmark = pytest.mark.integration


def test_the_printed_settings_load_a_table(daemon: Daemon, run_cli: Callable[..., CliResult], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    done = run_cli("--json", "iceberg-conf", "main")
    assert done.code == 0, done.stderr
    settings = json.loads(done.stdout)
    assert settings["uri"] == f"{daemon.http}/iceberg" and settings["warehouse"] == "main"
    assert settings["auth"] is False and "token" not in settings["pyiceberg"]
    assert settings["spark"]["spark.sql.catalog.main.uri"] == settings["uri"]

    # A table made through the HMS endpoint, as Iceberg's own HiveCatalog makes it.
    ns = f"conf_{uuid.uuid4().hex[:8]}"
    hive = HiveCatalog("hms", uri=daemon.hms_uri)
    hive.create_namespace(ns)
    try:
        made = hive.create_table(f"{ns}.t", pa.schema([("id", pa.int64())]))
        made.append(pa.table({"id": [1, 2, 3]}))

        rest = load_catalog("main", **settings["pyiceberg"])
        loaded = rest.load_table(f"{ns}.t")
        assert loaded.metadata_location == hive.load_table(f"{ns}.t").metadata_location
        assert sorted(loaded.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]

        # The text form's YAML block, as ~/.pyiceberg.yaml.
        text = run_cli("iceberg-conf", "main", "--name", "lake")
        assert text.code == 0, text.stderr
        block = text.stdout.split("# pyiceberg:", 1)[1].split("\n", 1)[1].split("\n\n", 1)[0]
        (tmp_path / ".pyiceberg.yaml").write_text(block + "\n")
        monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path))
        conf = Config().get_catalog_config("lake")
        assert conf is not None
        from_yaml = load_catalog("lake", **conf)
        assert from_yaml.load_table(f"{ns}.t").metadata_location == loaded.metadata_location
    finally:
        for ident in hive.list_tables(ns):
            hive.drop_table(ident)
        hive.drop_namespace(ns)


def test_an_unknown_catalog_is_not_found(run_cli: Callable[..., CliResult]) -> None:
    done = run_cli("iceberg-conf", "no_such_catalog")
    assert done.code == 1
    assert done.stderr.startswith("error: not-found: ")
