"""Tests for catalogd.spark.catalogs: the Spark settings of the catalog plugin (``catalogd spark-conf``,
``session_builder``), on a stand-in client: every catalog a Spark catalog, catalogd's address
(every member of a cluster), TLS, jdbc drivers, the default catalog, and never a secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catalogd.errors import PermissionDeniedError
from catalogd.model import CatalogInfo, ClusterStatus, MemberStatus
from catalogd.spark import catalogs
from catalogd.spark.plugin import CATALOG_CLASS, EXTENSIONS_CLASS

TOKEN = "tok-very-secret-0123456789"
PASSWORD = "pg-password-0123456789"
ENDPOINT = "thrift://cat:9083"
JAR = "/opt/catalogd/jars/catalogd-spark.jar"


def _infos() -> list[CatalogInfo]:
    return [
        CatalogInfo("main", "hive", default=True, metastore="thrift://hms:9083", warehouse="file:///wh",
                    hms_endpoint=ENDPOINT),
        CatalogInfo("scratch", "memory", hms_endpoint=ENDPOINT, hms_prefix="scratch__"),
        CatalogInfo("pg", "jdbc", metastore="jdbc:postgresql://db:5432/shop", hms_endpoint=ENDPOINT,
                    jdbc_user="catalogd", jdbc_driver_jar="/usr/share/java/postgresql.jar"),
        CatalogInfo("pg2", "jdbc", metastore="jdbc:postgresql://db:5432/other", hms_endpoint=ENDPOINT,
                    jdbc_driver_jar="/usr/share/java/postgresql.jar"),
        # Names Spark keeps for itself stay on the HMS endpoint.
        CatalogInfo("spark_catalog", "hive", metastore="thrift://hms2:9083", hms_endpoint=ENDPOINT,
                    hms_prefix="spark_catalog__"),
        CatalogInfo("System", "memory", hms_endpoint=ENDPOINT, hms_prefix="system__"),
    ]


class _Client:
    """The calls plugin_conf makes, recorded; it holds a token, as an authenticated client does."""

    def __init__(self, infos: list[CatalogInfo], status: ClusterStatus | Exception | None = None,
                 address: str = "cat:9190") -> None:
        self.infos = infos
        self.status = status if status is not None else ClusterStatus(clustered=False)
        self.address = address
        self.token = TOKEN
        self.calls: list[str] = []

    def list_catalogs(self) -> list[CatalogInfo]:
        self.calls.append("list_catalogs")
        return self.infos

    def cluster_status(self) -> ClusterStatus:
        self.calls.append("cluster_status")
        if isinstance(self.status, Exception):
            raise self.status
        return self.status


@pytest.fixture(autouse=True)
def _jar(monkeypatch: pytest.MonkeyPatch) -> None:
    # The jar's build is test_plugin's; here only its place matters.
    monkeypatch.setattr(catalogs, "plugin_jar", lambda: Path(JAR))
    monkeypatch.setenv("CATALOGD_TOKEN", TOKEN)
    monkeypatch.setenv("CATALOGD_PG_PASSWORD", PASSWORD)


def _conf(client: _Client, name: str = "main", **kwargs: Any) -> dict[str, str]:
    info = next(c for c in client.infos if c.name == name)
    return catalogs.plugin_conf(client, info, **kwargs)  # type: ignore[arg-type]


def test_every_catalog_is_a_spark_catalog_but_the_names_spark_reserves() -> None:
    conf = _conf(_Client(_infos()))
    registered = {k.rsplit(".", 1)[1] for k, v in conf.items()
                  if k.startswith("spark.sql.catalog.") and k.count(".") == 3 and v == CATALOG_CLASS}
    assert registered == {"main", "scratch", "pg", "pg2"}
    assert not any(k.startswith(("spark.sql.catalog.spark_catalog", "spark.sql.catalog.System")) for k in conf)
    for name in registered:
        assert conf[f"spark.sql.catalog.{name}.address"] == "cat:9190"
    assert conf["spark.sql.extensions"] == EXTENSIONS_CLASS
    assert conf["spark.sql.defaultCatalog"] == "main"


def test_the_session_catalog_is_the_hms_endpoint_whatever_the_default() -> None:
    """The plugin writes its stages through spark_catalog: the endpoint, with the daemon's default
    catalog's warehouse, also for a session whose default is a memory catalog."""
    client = _Client(_infos())
    for name in ("main", "scratch", "pg"):
        conf = _conf(client, name)
        assert conf["spark.sql.catalogImplementation"] == "hive"
        assert conf["spark.hadoop.hive.metastore.uris"] == ENDPOINT
        assert conf["spark.sql.warehouse.dir"] == "file:///wh"
        assert conf["spark.sql.defaultCatalog"] == name


def test_a_reserved_name_is_never_the_default_catalog() -> None:
    conf = _conf(_Client(_infos()), "spark_catalog")
    assert "spark.sql.defaultCatalog" not in conf
    assert conf["spark.sql.catalog.main"] == CATALOG_CLASS


def test_the_address_is_every_member_of_a_cluster() -> None:
    members = [MemberStatus("cat-a:9190", "thrift://cat-a:9083", "cat-a:9191", up=False),
               MemberStatus("cat-b:9190", "thrift://cat-b:9083", "cat-b:9191", up=True, answering=True)]
    client = _Client(_infos(), ClusterStatus(clustered=True, members=members), address="cat-b:9190")
    conf = _conf(client)
    # Every member, the one down too: the plugin fails over as the Python client does.
    assert conf["spark.sql.catalog.main.address"] == "cat-a:9190,cat-b:9190"
    assert conf["spark.sql.catalog.pg.address"] == "cat-a:9190,cat-b:9190"


def test_a_daemon_that_does_not_tell_its_cluster_is_reached_at_the_client_s_address() -> None:
    client = _Client(_infos(), PermissionDeniedError("reader may not see the cluster"), address="cat:9999")
    assert _conf(client)["spark.sql.catalog.main.address"] == "cat:9999"


def test_tls_options_when_a_ca_is_given() -> None:
    client = _Client(_infos())
    plain = _conf(client)
    assert not any(k.endswith((".tls", ".truststore")) for k in plain)
    conf = _conf(client, ca="/etc/catalogd/ca.pem")
    for name in ("main", "scratch", "pg", "pg2"):
        assert conf[f"spark.sql.catalog.{name}.tls"] == "true"
        assert conf[f"spark.sql.catalog.{name}.truststore"] == "/etc/catalogd/ca.pem"


def test_the_plugin_and_each_jdbc_driver_are_on_the_classpath_once() -> None:
    conf = _conf(_Client(_infos()))
    assert conf["spark.jars"].split(",") == [JAR, "/usr/share/java/postgresql.jar"]
    without = _conf(_Client([c for c in _infos() if c.type != "jdbc"]))
    assert without["spark.jars"] == JAR


def test_no_token_and_no_password_is_ever_in_the_settings() -> None:
    infos = _infos()
    infos[0] = CatalogInfo("main", "hive", default=True, metastore="thrift://hms:9083", hms_endpoint=ENDPOINT,
                           hms_tls=True, hms_truststore="/etc/ts.jks", hms_truststore_password_env="TS_PASSWORD")
    client = _Client(infos)
    for name in ("main", "scratch", "pg"):
        conf = _conf(client, name, ca="/etc/ca.pem")
        text = "\n".join(f"{k}={v}" for k, v in conf.items())
        assert TOKEN not in text and PASSWORD not in text
        assert not any("token" in k.lower() or ("password" in k.lower() and "${env." not in v) for k, v in conf.items())
        # The truststore's password is named by its variable, never given.
        assert conf["spark.hadoop.hive.metastore.truststore.password"] == "${env.TS_PASSWORD}"


def test_the_catalogs_given_are_not_asked_again() -> None:
    client = _Client(_infos())
    infos = _infos()[:2]
    conf = catalogs.plugin_conf(client, infos[1], infos)  # type: ignore[arg-type]
    assert client.calls == ["cluster_status"]
    assert "spark.sql.catalog.pg" not in conf and conf["spark.sql.defaultCatalog"] == "scratch"
