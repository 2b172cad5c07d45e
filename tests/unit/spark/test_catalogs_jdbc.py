"""``plugin_conf`` with a jdbc catalog (catalogd/spark/catalogs.py): the driver jar on
``spark.jars`` beside the plugin's, every catalog a plugin catalog, and no password anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogd.errors import UnsupportedError
from catalogd.model import CatalogInfo
from catalogd.spark import catalogs

PASSWORD = "s3cr3t-never-printed"


class _Client:
    address = "127.0.0.1:9190"

    def cluster_status(self) -> None:
        raise UnsupportedError("not clustered")


def _infos() -> list[CatalogInfo]:
    main = CatalogInfo(name="main", type="hive", default=True, hms_endpoint="thrift://127.0.0.1:9083")
    pg = CatalogInfo(name="pg", type="jdbc", default_database="public",
                     metastore="jdbc:postgresql://db.example:5432/analytics", jdbc_user="etl",
                     jdbc_driver_jar="/usr/share/java/postgresql.jar")
    return [main, pg]


def test_a_jdbc_catalog_is_a_plugin_catalog_with_its_driver_and_no_password(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalogs, "plugin_jar", lambda: Path("/opt/catalogd-spark.jar"))
    monkeypatch.setenv("CATALOGD_JDBC_PASSWORD_PG", PASSWORD)
    infos = _infos()
    settings = catalogs.plugin_conf(_Client(), infos[1], infos)  # type: ignore[arg-type]

    assert settings["spark.jars"].split(",") == ["/opt/catalogd-spark.jar", "/usr/share/java/postgresql.jar"]
    assert settings["spark.sql.catalog.pg"] == "catalogd.spark.CatalogdCatalog"
    assert settings["spark.sql.catalog.pg.address"] == "127.0.0.1:9190"
    assert settings["spark.sql.defaultCatalog"] == "pg"
    # The session catalog stays on the HMS endpoint of the default (hive) catalog.
    assert settings["spark.hadoop.hive.metastore.uris"] == "thrift://127.0.0.1:9083"
    # The plugin reads the password in the driver (env variable or file): no setting carries it.
    assert not [k for k, v in settings.items() if PASSWORD in v or "password" in k.lower()]
