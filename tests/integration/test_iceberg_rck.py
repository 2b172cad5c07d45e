"""Iceberg's REST Compatibility Kit (RCK, Iceberg 1.11.0) against catalogd's ``/iceberg`` door.

The whole suite (157 tests: Iceberg's ``CatalogTests`` and ``ViewCatalogTests`` through a
``RESTCatalog``) runs once per warehouse: ``main`` (hive, its tables in an embedded metastore) and
``scratch`` (memory). A first, short run of three of its tests against Iceberg's own reference
server checks the harness (classpath, configuration, report reading), so that a failure against
catalogd is catalogd's.

The RCK gets a daemon of its own, not the session's: it refuses to start while any of its
namespaces (``ns``, ``newdb``, ...) exists, drops them before each test, and creates some tables at
locations it hard-codes (``file:/tmp/<namespace>/<table>``, ``CatalogTests.baseTableLocation``) and
some views in its JVM's temporary folders (``@TempDir``), which that daemon's ``allowed-locations``
admit besides the warehouse. Nothing else is relaxed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from catalogd.client import CatalogClient

from .engines.iceberg_rest import reference_server
from .helpers import Daemon, embedded_catalog, free_port, start_daemon, write_config
from .iceberg_rck import run_rck

pytestmark = pytest.mark.integration

#: The namespaces the RCK makes (RCKUtils.TEST_NAMESPACES).
RCK_NAMESPACES = ("ns", "newdb", "ns1", "ns2", "other_ns")
#: Where the RCK asks for explicit table locations: file:/tmp/ns/tbl, file:/tmp/newdb/newtable.
RCK_LOCATIONS = ("file:///tmp/ns", "file:///tmp/newdb")

#: The RCK's own switches, as client properties. A hive catalog (HMS) has no implicit namespaces:
#: a table's namespace is created first, as Iceberg's own HiveCatalog tests do.
RCK_PROPERTIES = {"rck.requires-namespace-create": "true"}

#: RCK tests that fail against catalogd for a reason outside it, with the reason. The test asserts
#: that exactly these fail: one that starts passing is to be taken off the list.
KNOWN_FAILURES = {
    # pyiceberg 0.12 (which applies every commit) writes no format-version 3 metadata: the door
    # answers 406 UnsupportedOperationException "Writing V3 is not yet supported".
    "RESTCompatibilityKitCatalogTests.createTableTransaction(int)[3]": "format v3: pyiceberg cannot write it",
    "RESTCompatibilityKitCatalogTests.testCreateTableWithDefaultColumnValue()": "format v3: pyiceberg cannot write it",
}

#: Tests of one class only: the other class's set-up would find the namespaces these leave.
HARNESS_TESTS = [
    "method:org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests#testBasicCreateTable",
    "method:org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests#testUpdateTableSchema",
    "method:org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests#testRenameTable",
]


class RckDaemon(NamedTuple):
    daemon: Daemon
    #: The RCK JVM's java.io.tmpdir: its tests' @TempDir folders, some asked for as view locations.
    tmpdir: Path


@pytest.fixture(scope="module")
def rck_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RckDaemon]:
    root = tmp_path_factory.mktemp("rck-catalogd")
    data_dir = root / "data"
    tmpdir = root / "rck-tmp"
    allowed = [*RCK_LOCATIONS, tmpdir.as_uri()]
    warehouse = (data_dir / "catalogs" / "main" / "warehouse").as_uri()
    config = write_config(root / "catalogd.yaml", port=free_port(), http_port=free_port(), data_dir=data_dir,
                          catalogs=[embedded_catalog("main", **{"allowed-locations": [warehouse, *allowed]}),
                                    {"name": "scratch", "type": "memory", "allowed-locations": allowed}])
    daemon = start_daemon(config, data_dir, root / "catalogd.log")
    yield RckDaemon(daemon, tmpdir)
    code = daemon.stop()
    assert code == 0, f"the RCK's daemon exited with {code}; log:\n{daemon.log()}"


def _drop_rck_namespaces(daemon: Daemon, catalog: str) -> None:
    # A run cut short leaves its namespaces, which the next run's set-up would refuse.
    with CatalogClient(daemon.address, timeout=60.0) as client:
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
def test_rck_against_catalogd(rck_daemon: RckDaemon, tmp_path: Path, warehouse: str) -> None:
    daemon = rck_daemon.daemon
    _drop_rck_namespaces(daemon, warehouse)
    result = run_rck(f"{daemon.http}/iceberg", warehouse, tmp_path, properties=RCK_PROPERTIES,
                     tmpdir=rck_daemon.tmpdir)
    failed = {f.name for f in result.failed}
    print(f"{result.summary()}; known failures: {len(failed & KNOWN_FAILURES.keys())}")
    assert failed <= KNOWN_FAILURES.keys(), result.report()
    assert failed == KNOWN_FAILURES.keys(), f"passing now, take off KNOWN_FAILURES: {KNOWN_FAILURES.keys() - failed}"
    assert len(result.passed) >= 100, result.report()
