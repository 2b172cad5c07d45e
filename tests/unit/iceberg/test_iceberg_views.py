"""Iceberg view metadata: a create's metadata, the CommitViewRequest's updates applied as Iceberg's
``ViewMetadata.Builder`` applies them, requirements, file names and the HMS parameters."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from pyiceberg.catalog.rest import CreateViewRequest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.view.metadata import ViewMetadata

from catalogd.errors import InvalidArgumentError
from catalogd.iceberg.errors import IcebergError
from catalogd.iceberg.views import (
    apply_view_updates,
    check_view_requirements,
    hms_view_parameters,
    is_iceberg_view,
    metadata_file_name,
    new_view_metadata,
    parse_requirements,
    parse_updates,
    view_sql,
)

SCHEMA = {"type": "struct", "schema-id": 7, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
WIDER = {"type": "struct", "schema-id": 3, "fields": [{"id": 1, "name": "id", "type": "long", "required": False},
                                                       {"id": 2, "name": "x", "type": "string", "required": False}]}


def version(sql: str, schema_id: int = 0, version_id: int = 1, dialect: str = "spark", ts: int = 1000,
            **more: Any) -> dict[str, Any]:
    return {"version-id": version_id, "schema-id": schema_id, "timestamp-ms": ts, "summary": {"engine": "test"},
            "representations": [{"type": "sql", "sql": sql, "dialect": dialect}], "default-namespace": ["db"],
            **more}


def created(properties: dict[str, str] | None = None) -> ViewMetadata:
    request = CreateViewRequest.model_validate({"name": "v", "location": None, "schema": SCHEMA,
                                                "view-version": version("select 1", schema_id=99, version_id=5),
                                                "properties": properties or {}})
    return new_view_metadata(request, "file:/w/db/v/")


def replace(base: ViewMetadata, sql: str, schema: dict[str, Any] | None = None,
            dialect: str = "spark") -> tuple[ViewMetadata, bool]:
    updates: list[dict[str, Any]] = []
    if schema is not None:
        updates.append({"action": "add-schema", "schema": schema})
    updates.append({"action": "add-view-version",
                    "view-version": version(sql, schema_id=-1 if schema is not None else 0, version_id=2,
                                            dialect=dialect, ts=2000)})
    updates.append({"action": "set-current-view-version", "view-version-id": -1})
    return apply_view_updates(base, parse_updates(updates))


def test_create_is_version_one_on_schema_zero() -> None:
    metadata = created({"comment": "c"})
    assert metadata.format_version == 1
    assert metadata.location == "file:/w/db/v"
    assert metadata.current_version_id == 1
    assert [v.version_id for v in metadata.versions] == [1]
    assert metadata.versions[0].schema_id == 0
    assert [s.schema_id for s in metadata.schemas] == [0]
    assert [(e.version_id, e.timestamp_ms) for e in metadata.version_log] == [(1, 1000)]
    assert metadata.properties == {"comment": "c"}
    assert len(metadata.view_uuid) == 36


def test_replace_adds_a_version_and_makes_it_current() -> None:
    base = created()
    metadata, changed = replace(base, "select 2", WIDER)
    assert changed
    assert metadata.current_version_id == 2
    assert [s.schema_id for s in metadata.schemas] == [0, 1]  # a new schema takes the highest id + 1
    current = next(v for v in metadata.versions if v.version_id == 2)
    assert current.schema_id == 1
    assert current.representations[0].root.sql == "select 2"
    assert [e.version_id for e in metadata.version_log] == [1, 2]
    assert metadata.view_uuid == base.view_uuid


def test_same_version_again_is_reused_and_changes_nothing() -> None:
    base = created()
    same = {"action": "add-view-version", "view-version": version("select 1", schema_id=0, version_id=9, ts=5)}
    metadata, changed = apply_view_updates(base, parse_updates([same]))
    assert not changed and metadata is base
    # An existing schema is reused by content, whatever id it was sent with.
    _, changed = apply_view_updates(base, parse_updates([{"action": "add-schema", "schema": SCHEMA}]))
    assert not changed


def test_going_back_to_an_old_version_logs_it() -> None:
    v2, _ = replace(created(), "select 2")
    back, changed = apply_view_updates(v2, parse_updates([{"action": "set-current-view-version",
                                                           "view-version-id": 1}]))
    assert changed and back.current_version_id == 1
    assert [e.version_id for e in back.version_log] == [1, 2, 1]


def test_old_versions_expire_beyond_the_history_size() -> None:
    metadata = created({"version.history.num-entries": "2"})
    for i in range(2, 6):
        metadata, _ = replace(metadata, f"select {i}")
    assert metadata.current_version_id == 5
    assert sorted(v.version_id for v in metadata.versions) == [4, 5]
    assert [e.version_id for e in metadata.version_log] == [4, 5]


def test_properties_location_uuid_format() -> None:
    base = created({"a": "1", "b": "2"})
    metadata, changed = apply_view_updates(base, parse_updates([
        {"action": "set-properties", "updates": {"c": "3"}},
        {"action": "remove-properties", "removals": ["a"]},
        {"action": "set-location", "location": "file:/w/db/v2"},
        {"action": "assign-uuid", "uuid": base.view_uuid},
        {"action": "upgrade-format-version", "format-version": 1},
    ]))
    assert changed
    assert metadata.properties == {"b": "2", "c": "3"}
    assert metadata.location == "file:/w/db/v2"
    with pytest.raises(IcebergError, match="Cannot reassign uuid"):
        apply_view_updates(base, parse_updates([{"action": "assign-uuid",
                                                 "uuid": "00000000-0000-0000-0000-000000000001"}]))
    with pytest.raises(IcebergError, match="Unsupported format version: 2"):
        apply_view_updates(base, parse_updates([{"action": "upgrade-format-version", "format-version": 2}]))


def test_bad_updates_are_refused() -> None:
    base = created()
    with pytest.raises(IcebergError, match="unknown version: 42"):
        apply_view_updates(base, parse_updates([{"action": "set-current-view-version", "view-version-id": 42}]))
    with pytest.raises(IcebergError, match="no current version id has been set"):
        apply_view_updates(base, parse_updates([{"action": "set-current-view-version", "view-version-id": -1}]))
    with pytest.raises(IcebergError, match="unknown schema: 8"):
        apply_view_updates(base, parse_updates([{"action": "add-view-version",
                                                 "view-version": version("select 3", schema_id=8)}]))
    with pytest.raises(IcebergError, match="no schema has been added"):
        apply_view_updates(base, parse_updates([{"action": "add-view-version",
                                                 "view-version": version("select 3", schema_id=-1)}]))
    two = version("select 3")
    two["representations"].append({"type": "sql", "sql": "select 4", "dialect": "SPARK"})
    with pytest.raises(IcebergError, match="Cannot add multiple queries for dialect spark"):
        apply_view_updates(base, parse_updates([{"action": "add-view-version", "view-version": two}]))
    with pytest.raises(ValidationError):
        parse_updates([{"action": "add-snapshot", "snapshot": {}}])  # a table's update is no view's


def test_a_replace_may_not_lose_a_dialect() -> None:
    base = created()
    with pytest.raises(IcebergError, match="loss of view dialects"):
        replace(base, "select 2", dialect="trino")
    allowed, _ = apply_view_updates(base, parse_updates([{"action": "set-properties",
                                                          "updates": {"replace.drop-dialect.allowed": "true"}}]))
    metadata, _ = replace(allowed, "select 2", dialect="trino")
    assert view_sql(metadata) == "select 2"


def test_requirement_view_uuid() -> None:
    base = created()
    check_view_requirements(base, parse_requirements([{"type": "assert-view-uuid", "uuid": base.view_uuid}]))
    with pytest.raises(CommitFailedException):
        check_view_requirements(base, parse_requirements([{"type": "assert-view-uuid", "uuid": "other"}]))


def test_metadata_file_names() -> None:
    base = created()
    first = metadata_file_name(base, None)
    assert first.startswith("file:/w/db/v/metadata/00000-") and first.endswith(".gz.metadata.json")
    assert metadata_file_name(base, first).startswith("file:/w/db/v/metadata/00001-")
    plain, _ = apply_view_updates(base, parse_updates([{"action": "set-properties", "updates": {
        "write.metadata.compression-codec": "none"}}]))
    assert metadata_file_name(plain, "s3://x/12-abc.metadata.json").rsplit("/", 1)[1].startswith("00013-")
    assert metadata_file_name(plain, None).endswith(".metadata.json")
    assert not metadata_file_name(plain, None).endswith(".gz.metadata.json")
    assert metadata_file_name(base, None) != metadata_file_name(base, None)  # a new uuid each time
    outside, _ = apply_view_updates(base, parse_updates([{"action": "set-properties", "updates": {
        "write.metadata.path": "file:/elsewhere"}}]))
    with pytest.raises(InvalidArgumentError, match="outside the view's location"):
        metadata_file_name(outside, None)


def test_hms_parameters_as_iceberg_hive_catalog_sets_them() -> None:
    base = created({"comment": "c", "hive.metastore.table.owner": "alice"})
    params = hms_view_parameters({"transient_lastDdlTime": "1", "gone": "x"}, base, "file:/m/00001.json",
                                 "file:/m/00000.json", {"gone"})
    assert params["table_type"] == "ICEBERG-VIEW"
    assert params["metadata_location"] == "file:/m/00001.json"
    assert params["previous_metadata_location"] == "file:/m/00000.json"
    assert params["uuid"] == base.view_uuid
    assert params["comment"] == "c" and params["transient_lastDdlTime"] == "1"
    assert "gone" not in params and "hive.metastore.table.owner" not in params
    assert '"name":"id"' in params["current-schema"]


def test_is_iceberg_view() -> None:
    class T:
        def __init__(self, kind: str, params: dict[str, str]) -> None:
            self.tableType, self.parameters = kind, params

    assert is_iceberg_view(T("VIRTUAL_VIEW", {"table_type": "ICEBERG-VIEW"}))
    assert is_iceberg_view(T("VIRTUAL_VIEW", {"table_type": "iceberg-view"}))
    assert not is_iceberg_view(T("VIRTUAL_VIEW", {}))  # a Hive or Spark view
    assert not is_iceberg_view(T("EXTERNAL_TABLE", {"table_type": "ICEBERG"}))
