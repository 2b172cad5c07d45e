"""Tests for catalogd.spark.conf.session_builder: the catalog plugin's settings by default, the HMS
endpoint's alone with ``plugin=False`` (as before the plugin), on a stand-in client (no Spark starts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catalogd.model import CatalogInfo, ClusterStatus
from catalogd.spark import catalogs
from catalogd.spark.conf import session_builder

ENDPOINT = "thrift://cat:9083"
DRIVER = "/usr/share/java/postgresql.jar"
JAR = "/opt/catalogd/jars/catalogd-spark.jar"


class _Client:
    address = "cat:9190"

    def __init__(self) -> None:
        self.infos = [CatalogInfo("main", "hive", default=True, hms_endpoint=ENDPOINT, warehouse="file:///wh"),
                      CatalogInfo("pg", "jdbc", metastore="jdbc:postgresql://db/x", hms_endpoint=ENDPOINT,
                                  jdbc_driver_jar=DRIVER)]
        self.closed = False

    def get_catalog(self, name: str | None) -> CatalogInfo:
        return next(c for c in self.infos if c.name == (name or "main"))

    def list_catalogs(self) -> list[CatalogInfo]:
        return self.infos

    def cluster_status(self) -> ClusterStatus:
        return ClusterStatus(clustered=False)

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def _jar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalogs, "plugin_jar", lambda: Path(JAR))
    monkeypatch.delenv("CATALOGD_TLS_CA", raising=False)


def _options(builder: Any) -> dict[str, str]:
    return {k: str(v) for k, v in builder._options.items()}


def test_the_plugin_is_configured_by_default() -> None:
    client = _Client()
    options = _options(session_builder("main", client))  # type: ignore[arg-type]
    assert options["spark.sql.catalog.main"] == "catalogd.spark.CatalogdCatalog"
    assert options["spark.sql.catalog.pg"] == "catalogd.spark.CatalogdCatalog"
    assert options["spark.sql.defaultCatalog"] == "main"
    assert options["spark.jars"] == f"{JAR},{DRIVER}"
    assert options["spark.hadoop.hive.metastore.uris"] == ENDPOINT
    assert options["spark.sql.catalogImplementation"] == "hive"
    assert not client.closed  # the caller's client stays open


def test_without_the_plugin_it_is_the_endpoint_with_the_jdbc_drivers() -> None:
    options = _options(session_builder("main", _Client(), plugin=False))  # type: ignore[arg-type]
    assert not any(k.startswith(("spark.sql.catalog.", "spark.sql.defaultCatalog", "spark.sql.extensions"))
                   for k in options)
    assert options["spark.jars"] == DRIVER
    assert options["spark.hadoop.hive.metastore.uris"] == ENDPOINT
    assert options["spark.sql.warehouse.dir"] == "file:///wh"


def test_a_ca_in_the_environment_turns_on_the_plugin_s_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATALOGD_TLS_CA", "/etc/ca.pem")
    options = _options(session_builder("main", _Client()))  # type: ignore[arg-type]
    assert (options["spark.sql.catalog.main.tls"], options["spark.sql.catalog.main.truststore"]) == (
        "true", "/etc/ca.pem")
