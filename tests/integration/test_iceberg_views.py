"""Iceberg views on the REST door: pyiceberg's ``RestCatalog`` (and raw HTTP for what it lacks:
replace, rename), in a hive catalog (``main``) and a memory catalog (``scratch``); the same view
through catalogd's HMS endpoint as the HMS table Iceberg's ``HiveCatalog`` makes; a read-only
catalog refuses."""

from __future__ import annotations

import gzip
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.hive import _HiveClient
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    ForbiddenError,
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ViewAlreadyExistsError,
)
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from pyiceberg.view.metadata import SQLViewRepresentation, ViewMetadata, ViewRepresentation, ViewVersion

from tests.integration.helpers import Daemon

pytestmark = pytest.mark.integration

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def rest(daemon: Daemon, warehouse: str) -> RestCatalog:
    return RestCatalog("rest", uri=f"{daemon.http}/iceberg", warehouse=warehouse)


def version(sql: str, namespace: str) -> ViewVersion:
    return ViewVersion.model_validate({
        "version-id": 1, "schema-id": 0, "summary": {"engine-name": "pytest"},
        "representations": [ViewRepresentation(SQLViewRepresentation(type="sql", sql=sql, dialect="spark"))],
        "default-namespace": [namespace]})


def views_url(daemon: Daemon, warehouse: str, namespace: str, view: str = "") -> str:
    base = f"{daemon.http}/iceberg/v1/{warehouse}/namespaces/{namespace}/views"
    return f"{base}/{view}" if view else base


def replace_body(current: dict[str, Any], sql: str, namespace: str) -> dict[str, Any]:
    """A CommitViewRequest as Iceberg's Java client sends a ``replace``: the new schema, a new
    version on the last added schema made current, and the view's uuid asserted."""
    return {
        "requirements": [{"type": "assert-view-uuid", "uuid": current["view-uuid"]}],
        "updates": [
            {"action": "add-schema", "schema": {"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "type": "long", "required": False},
                {"id": 2, "name": "name", "type": "string", "required": False}]}},
            {"action": "add-view-version", "view-version": {
                "version-id": 2, "schema-id": -1, "timestamp-ms": 1_700_000_000_000, "summary": {},
                "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
                "default-namespace": [namespace]}},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    }


def hms_name(warehouse: str, namespace: str) -> str:
    """The database as catalogd's HMS endpoint names it (the memory catalog natively)."""
    return namespace if warehouse == "main" else f"@{warehouse}#{namespace}"


def namespace_location(daemon: Daemon, warehouse: str, namespace: str) -> str:
    location = rest(daemon, warehouse).load_namespace_properties(namespace)["location"]
    return str(location).rstrip("/")


def read_metadata(location: str) -> ViewMetadata:
    data = Path(urlparse(location).path).read_bytes()
    if location.endswith(".gz.metadata.json"):
        data = gzip.decompress(data)
    return ViewMetadata.model_validate_json(data)


@pytest.fixture(params=["main", "scratch"])
def warehouse(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def namespace(daemon: Daemon, warehouse: str) -> Iterator[str]:
    name = f"icv_{uuid.uuid4().hex[:8]}"
    catalog = rest(daemon, warehouse)
    catalog.create_namespace(name)
    yield name
    for ident in catalog.list_views(name):
        catalog.drop_view(ident)
    for ident in catalog.list_tables(name):
        catalog.drop_table(ident)
    catalog.drop_namespace(name)


def test_view_lifecycle(daemon: Daemon, warehouse: str, namespace: str) -> None:
    """Create, load, list, replace, rename, drop; tables and views kept apart."""
    catalog = rest(daemon, warehouse)
    created = catalog.create_view(f"{namespace}.v", SCHEMA, version("SELECT 1 AS id", namespace))
    assert created.current_version().version_id == 1
    assert catalog.view_exists(f"{namespace}.v")
    assert catalog.list_views(namespace) == [(namespace, "v")]
    loaded = catalog.load_view(f"{namespace}.v")
    assert loaded.metadata.view_uuid == created.metadata.view_uuid
    sql = loaded.sql_for("spark")
    assert sql is not None and sql.sql == "SELECT 1 AS id"
    assert [f.name for f in loaded.schema().fields] == ["id"]

    # Tables and views share names and nothing else.
    catalog.create_table(f"{namespace}.t", pa.schema([("id", pa.int64())]))
    assert catalog.list_tables(namespace) == [(namespace, "t")]
    assert catalog.list_views(namespace) == [(namespace, "v")]
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view(f"{namespace}.t", SCHEMA, version("SELECT 2", namespace))
    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view(f"{namespace}.v", SCHEMA, version("SELECT 2", namespace))
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table(f"{namespace}.v", pa.schema([("id", pa.int64())]))
    with pytest.raises(NoSuchTableError):
        catalog.load_table(f"{namespace}.v")
    with pytest.raises(NoSuchViewError):
        catalog.load_view(f"{namespace}.t")
    assert not catalog.table_exists(f"{namespace}.v")
    assert not catalog.view_exists(f"{namespace}.t")
    with httpx.Client(timeout=60) as http:
        tables = f"{daemon.http}/iceberg/v1/{warehouse}/namespaces/{namespace}/tables"
        dropped = http.delete(f"{tables}/v")  # a table drop does not drop a view
        assert dropped.status_code == 404 and dropped.json()["error"]["type"] == "NoSuchTableException"
        assert http.delete(views_url(daemon, warehouse, namespace, "t")).status_code == 404

        # Replace: the new version becomes current, the old one stays in the history.
        loaded = http.get(views_url(daemon, warehouse, namespace, "v"))
        current, etag = loaded.json(), loaded.headers["etag"]
        unchanged = http.get(views_url(daemon, warehouse, namespace, "v"), headers={"If-None-Match": etag})
        assert (unchanged.status_code, unchanged.content) == (304, b"")
        replaced = http.post(views_url(daemon, warehouse, namespace, "v"),
                             json=replace_body(current["metadata"], "SELECT 1 AS id, 'a' AS name", namespace))
        assert replaced.status_code == 200, replaced.text
        changed = http.get(views_url(daemon, warehouse, namespace, "v"), headers={"If-None-Match": etag})
        assert changed.status_code == 200 and changed.headers["etag"] != etag
        body = replaced.json()
        assert body["metadata"]["current-version-id"] == 2
        assert body["metadata-location"] != current["metadata-location"]
        again = catalog.load_view(f"{namespace}.v")
        assert again.current_version().version_id == 2
        assert [v.version_id for v in again.versions] == [1, 2]
        assert [f.name for f in again.schema().fields] == ["id", "name"]
        stale = replace_body({"view-uuid": str(uuid.uuid4())}, "SELECT 3 AS id", namespace)
        refused = http.post(views_url(daemon, warehouse, namespace, "v"), json=stale)
        assert refused.status_code == 409 and refused.json()["error"]["type"] == "CommitFailedException"

        # Rename, within the namespace: onto a table it is refused.
        rename = f"{daemon.http}/iceberg/v1/{warehouse}/views/rename"
        onto_table = http.post(rename, json={"source": {"namespace": [namespace], "name": "v"},
                                             "destination": {"namespace": [namespace], "name": "t"}})
        assert onto_table.status_code == 409, onto_table.text
        renamed = http.post(rename, json={"source": {"namespace": [namespace], "name": "v"},
                                          "destination": {"namespace": [namespace], "name": "v2"}})
        assert renamed.status_code == 204, renamed.text
        missing = http.post(rename, json={"source": {"namespace": [namespace], "name": "v"},
                                          "destination": {"namespace": [namespace], "name": "v3"}})
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchViewException"
    assert not catalog.view_exists(f"{namespace}.v")
    assert catalog.load_view(f"{namespace}.v2").current_version().version_id == 2

    # Into another namespace and back (a memory catalog too: a view has no directory to move).
    other = f"{namespace}_b"
    catalog.create_namespace(other)
    try:
        with httpx.Client(timeout=60) as http:
            moved = http.post(rename, json={"source": {"namespace": [namespace], "name": "v2"},
                                            "destination": {"namespace": [other], "name": "v"}})
            assert moved.status_code == 204, moved.text
            assert catalog.list_views(other) == [(other, "v")] and not catalog.view_exists(f"{namespace}.v2")
            assert catalog.load_view(f"{other}.v").current_version().version_id == 2
            back = http.post(rename, json={"source": {"namespace": [other], "name": "v"},
                                           "destination": {"namespace": [namespace], "name": "v2"}})
            assert back.status_code == 204, back.text
    finally:
        for ident in catalog.list_views(other):
            catalog.drop_view(ident)
        catalog.drop_namespace(other)

    catalog.drop_view(f"{namespace}.v2")
    assert catalog.list_views(namespace) == []
    with pytest.raises(NoSuchViewError):
        catalog.drop_view(f"{namespace}.v2")
    assert catalog.list_tables(namespace) == [(namespace, "t")]


def test_view_in_the_metastore(daemon: Daemon, warehouse: str, namespace: str) -> None:
    """Through catalogd's HMS endpoint the view is the HMS table Iceberg's ``HiveCatalog`` makes."""
    catalog = rest(daemon, warehouse)
    catalog.create_view(f"{namespace}.v", SCHEMA, version("SELECT 1 AS id", namespace))
    with _HiveClient(daemon.hms_uri) as hms:
        tbl = hms.get_table(hms_name(warehouse, namespace), "v")
    params = tbl.parameters
    assert tbl.tableType == "VIRTUAL_VIEW"
    assert params["table_type"] == "ICEBERG-VIEW"
    first = params["metadata_location"]
    assert first.startswith(tbl.sd.location.rstrip("/") + "/metadata/00000-")
    assert first.endswith(".gz.metadata.json")
    # Its location: inside its database's directory, as a table's.
    database = namespace_location(daemon, warehouse, namespace)
    assert tbl.sd.location.rstrip("/") == f"{database}/v"
    assert tbl.viewOriginalText == tbl.viewExpandedText == "SELECT 1 AS id"
    assert [(c.name, c.type) for c in tbl.sd.cols] == [("id", "bigint")]
    metadata = read_metadata(first)
    assert params["uuid"] == metadata.view_uuid
    assert metadata.current_version_id == 1

    with httpx.Client(timeout=60) as http:
        current = http.get(views_url(daemon, warehouse, namespace, "v")).json()
        assert current["metadata-location"] == first
        replaced = http.post(views_url(daemon, warehouse, namespace, "v"),
                             json=replace_body(current["metadata"], "SELECT 2 AS id, 'b' AS name", namespace))
        assert replaced.status_code == 200, replaced.text
    with _HiveClient(daemon.hms_uri) as hms:
        tbl = hms.get_table(hms_name(warehouse, namespace), "v")
    assert tbl.parameters["previous_metadata_location"] == first
    second = tbl.parameters["metadata_location"]
    assert second.startswith(tbl.sd.location.rstrip("/") + "/metadata/00001-")
    assert tbl.viewOriginalText == "SELECT 2 AS id, 'b' AS name"
    assert [c.name for c in tbl.sd.cols] == ["id", "name"]
    assert read_metadata(second).current_version_id == 2

    # A drop leaves the metadata files: the view can be registered on its last one again.
    catalog.drop_view(f"{namespace}.v")
    with httpx.Client(timeout=60) as http:
        register = f"{daemon.http}/iceberg/v1/{warehouse}/namespaces/{namespace}/register-view"
        registered = http.post(register, json={"name": "v", "metadata-location": second})
        assert registered.status_code == 200, registered.text
        assert registered.json()["metadata-location"] == second
        again = http.post(register, json={"name": "v", "metadata-location": second})
        assert again.status_code == 409 and again.json()["error"]["message"] == f"View already exists: {namespace}.v"
    assert catalog.load_view(f"{namespace}.v").current_version().version_id == 2
    with _HiveClient(daemon.hms_uri) as hms:
        assert hms.get_table(hms_name(warehouse, namespace), "v").parameters["metadata_location"] == second


def test_view_locations(daemon: Daemon, warehouse: str, namespace: str, tmp_path: Path) -> None:
    """A view's location follows the catalog's rules as a table's does, and its directory is kept
    clear of tables: outside ``allowed-locations`` or on another object's directory it is refused
    before any file is written; a table may not take a view's directory."""
    catalog = rest(daemon, warehouse)
    if warehouse == "main":  # a memory catalog without allowed-locations takes any directory
        victim = tmp_path / "victim"
        victim.mkdir()
        with pytest.raises(ForbiddenError):
            catalog.create_view(f"{namespace}.outside", SCHEMA, version("SELECT 1 AS id", namespace),
                                location=victim.as_uri())
        assert list(victim.iterdir()) == []
    table = catalog.create_table(f"{namespace}.t", pa.schema([("id", pa.int64())]))
    with pytest.raises(ForbiddenError):
        catalog.create_view(f"{namespace}.in_table", SCHEMA, version("SELECT 1 AS id", namespace),
                            location=f"{table.location().rstrip('/')}/sub")
    view = catalog.create_view(f"{namespace}.v", SCHEMA, version("SELECT 1 AS id", namespace))
    with pytest.raises(ForbiddenError):
        catalog.create_table(f"{namespace}.on_view", pa.schema([("id", pa.int64())]), location=view.location())
    assert catalog.list_views(namespace) == [(namespace, "v")]
    assert catalog.list_tables(namespace) == [(namespace, "t")]


def test_read_only_catalog_refuses_a_view(daemon: Daemon) -> None:
    """``ro`` (read-only, main's metastore) refuses a create with 403, and writes no file."""
    name = f"icv_{uuid.uuid4().hex[:8]}"
    main = rest(daemon, "main")
    main.create_namespace(name)
    try:
        location = main.load_namespace_properties(name)["location"]
        body = {"name": "v", "schema": SCHEMA.model_dump(by_alias=True),
                "view-version": version("SELECT 1 AS id", name).model_dump(by_alias=True), "properties": {}}
        with httpx.Client(timeout=60) as http:
            refused = http.post(views_url(daemon, "ro", name), json=body)
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"]["type"] == "ForbiddenException"
            assert http.get(views_url(daemon, "ro", name)).json() == {"identifiers": []}
        assert not Path(urlparse(location).path, "v").exists()
        assert main.list_views(name) == []
    finally:
        main.drop_namespace(name)
