"""Iceberg's REST Compatibility Kit (RCK, Iceberg 1.11.0) against catalogd's ``/iceberg`` door.

The whole suite (157 tests: Iceberg's ``CatalogTests`` and ``ViewCatalogTests`` through a
``RESTCatalog``) runs once per warehouse of the session daemon: ``main`` (hive, the tables in its
embedded metastore) and ``scratch`` (memory). A first, short run of three of its tests against
Iceberg's own reference server checks the harness (classpath, configuration, report reading), so
that a failure against catalogd is catalogd's.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from catalogd.client import CatalogClient

from .engines.iceberg_rest import reference_server
from .helpers import Daemon
from .iceberg_rck import run_rck

pytestmark = pytest.mark.integration

#: The namespaces the RCK makes (RCKUtils.TEST_NAMESPACES); it refuses to start if one exists.
RCK_NAMESPACES = ("ns", "newdb", "ns1", "ns2", "other_ns")

#: Tests of one class only: the other class's set-up would find the namespaces these leave.
#: The RCK's own switches, as client properties. A hive catalog (HMS) has no implicit namespaces:
#: a table's namespace is created first, as Iceberg's own HiveCatalog tests do.
RCK_PROPERTIES = {"rck.requires-namespace-create": "true"}

HARNESS_TESTS = [
    "method:org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests#testBasicCreateTable",
    "method:org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests#testUpdateTableSchema",
    "method:org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests#testRenameTable",
]


def _drop_rck_namespaces(client: CatalogClient, catalog: str) -> None:
    # What the RCK's last tests leave behind must not reach the session's other tests.
    for name in RCK_NAMESPACES:
        with contextlib.suppress(Exception):
            client.drop_database(f"{catalog}.{name}", if_exists=True, cascade=True, drop_foreign=True)


def test_rck_harness_on_the_reference_server(tmp_path: Path) -> None:
    with reference_server(tmp_path / "server") as server:
        result = run_rck(server.uri, str(server.warehouse), tmp_path / "rck", select=HARNESS_TESTS)
    print(result.summary())
    assert not result.failed, result.report()
    assert len(result.passed) == len(HARNESS_TESTS), result.report()


@pytest.mark.parametrize("warehouse", ["main", "scratch"])
def test_rck_against_catalogd(daemon: Daemon, client: CatalogClient, tmp_path: Path, warehouse: str) -> None:
    uri = f"{daemon.http}/iceberg"
    _drop_rck_namespaces(client, warehouse)
    try:
        result = run_rck(uri, warehouse, tmp_path, properties=RCK_PROPERTIES)
    finally:
        _drop_rck_namespaces(client, warehouse)
    print(result.summary())
    assert not result.failed, result.report()
    assert len(result.passed) >= 100, result.report()
