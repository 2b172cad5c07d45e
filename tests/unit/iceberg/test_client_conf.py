"""``catalogd.iceberg.client_conf``: each client's settings for the REST door, and never a token."""

from __future__ import annotations

import pytest

from catalogd.errors import InvalidArgumentError, UnsupportedError
from catalogd.iceberg.client_conf import TOKEN_PLACEHOLDER, client_settings
from catalogd.model import CatalogInfo

URI = "http://127.0.0.1:9191/iceberg"
MAIN = CatalogInfo("main", "hive", default=True, iceberg_uri=URI)


def test_every_client_gets_the_uri_and_the_catalog_as_warehouse() -> None:
    s = client_settings(MAIN, auth=False)
    assert (s.uri, s.warehouse, s.name) == (URI, "main", "main")
    assert s.pyiceberg == {"type": "rest", "uri": URI, "warehouse": "main"}
    assert s.spark["spark.sql.catalog.main"] == "org.apache.iceberg.spark.SparkCatalog"
    assert s.spark["spark.sql.catalog.main.type"] == "rest"
    assert s.spark["spark.sql.catalog.main.uri"] == URI
    assert s.spark["spark.sql.catalog.main.warehouse"] == "main"
    assert s.spark["spark.sql.catalog.main.cache-enabled"] == "false"
    assert s.trino == {"connector.name": "iceberg", "iceberg.catalog.type": "rest",
                       "iceberg.rest-catalog.uri": URI, "iceberg.rest-catalog.warehouse": "main"}
    assert s.duckdb[-1] == f"ATTACH 'main' AS main (TYPE iceberg, ENDPOINT '{URI}', AUTHORIZATION_TYPE 'none');"
    assert s.flink == (f"CREATE CATALOG main WITH ('type'='iceberg', 'catalog-type'='rest', 'uri'='{URI}', "
                       "'warehouse'='main');")
    assert not any("token" in key for key in [*s.pyiceberg, *s.spark, *s.trino])
    assert s.pyiceberg_yaml == f'catalog:\n  main:\n    type: rest\n    uri: "{URI}"\n    warehouse: main'


def test_with_auth_a_placeholder_or_a_variable_stands_for_the_token() -> None:
    s = client_settings(MAIN, auth=True, name="lake", token_env="LAKE_TOKEN")
    assert s.pyiceberg["token"] == TOKEN_PLACEHOLDER
    assert s.spark["spark.sql.catalog.lake.token"] == TOKEN_PLACEHOLDER
    assert s.spark["spark.sql.catalog.lake.warehouse"] == "main"  # the client's name, catalogd's warehouse
    assert s.trino["iceberg.rest-catalog.security"] == "OAUTH2"
    assert s.trino["iceberg.rest-catalog.oauth2.token"] == "${ENV:LAKE_TOKEN}"
    assert f"TOKEN '{TOKEN_PLACEHOLDER}'" in s.duckdb[-2] and s.duckdb[-1].endswith("SECRET lake_token);")
    assert f"'token'='{TOKEN_PLACEHOLDER}'" in s.flink
    assert any("PYICEBERG_CATALOG__LAKE__TOKEN" in note for note in s.notes)


def test_https_gives_pyiceberg_the_ca_bundle() -> None:
    info = CatalogInfo("scratch", "memory", iceberg_uri="https://cat.example:9191/iceberg")
    s = client_settings(info, auth=False, ca="/etc/catalogd/ca.pem")
    assert s.pyiceberg["ssl"] == {"cabundle": "/etc/catalogd/ca.pem"}
    assert "    ssl:\n      cabundle: /etc/catalogd/ca.pem" in s.pyiceberg_yaml
    assert any("truststore" in note for note in s.notes)
    # A plain daemon: the CA has nothing to verify.
    assert client_settings(MAIN, auth=False, ca="/etc/catalogd/ca.pem").ca is None


def test_a_daemon_without_the_rest_door_is_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="does not serve the Iceberg REST catalog"):
        client_settings(CatalogInfo("main", "hive"), auth=False)


@pytest.mark.parametrize("name", ["9lives", "a-b", "a.b", "x'y"])
def test_a_client_name_no_client_takes_unquoted_is_refused(name: str) -> None:
    with pytest.raises(InvalidArgumentError):
        client_settings(MAIN, auth=False, name=name)


def test_quotes_in_values_are_escaped_for_sql() -> None:
    info = CatalogInfo("main", "hive", iceberg_uri="http://h:1/iceberg?x='y'")
    s = client_settings(info, auth=False)
    assert "ENDPOINT 'http://h:1/iceberg?x=''y'''" in s.duckdb[-1]
    assert "'uri'='http://h:1/iceberg?x=''y'''" in s.flink
