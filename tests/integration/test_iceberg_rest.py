"""The Iceberg REST catalog on the session daemon, through pyiceberg's ``RestCatalog``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

from tests.integration.helpers import Daemon

pytestmark = pytest.mark.integration


def rest(daemon: Daemon, warehouse: str = "main", **props: str) -> RestCatalog:
    return RestCatalog("rest", uri=f"{daemon.http}/iceberg", warehouse=warehouse, **props)


@pytest.fixture
def namespace(daemon: Daemon) -> Iterator[str]:
    name = f"ice_{uuid.uuid4().hex[:8]}"
    catalog = rest(daemon)
    catalog.create_namespace(name)
    yield name
    for ident in catalog.list_tables(name):
        catalog.drop_table(ident)
    catalog.drop_namespace(name)


def test_create_append_read(daemon: Daemon, namespace: str) -> None:
    catalog = rest(daemon)
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = catalog.create_table(f"{namespace}.t", schema)
    table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}))
    table.append(pa.table({"id": [3], "name": ["c"]}))
    again = rest(daemon).load_table(f"{namespace}.t")
    assert sorted(again.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert len(again.metadata.snapshots) == 2
    assert (namespace, "t") in catalog.list_tables(namespace)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(f"{namespace}.missing")
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("no_such_ns_x")
