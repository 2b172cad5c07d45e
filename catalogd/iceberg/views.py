"""Iceberg views on the REST door, kept in the metastore as Iceberg's own ``HiveCatalog`` keeps them.

Iceberg Java's ``HiveCatalog`` (``HiveViewOperations``, 1.7+) stores a view as an HMS table of
type ``VIRTUAL_VIEW`` whose parameters carry ``table_type=ICEBERG-VIEW``, ``metadata_location``
(and ``previous_metadata_location`` after a replace), ``uuid``, ``current-schema`` and the
view's properties; ``viewOriginalText``/``viewExpandedText`` hold the SQL of the current
version (its ``hive`` dialect, else the first); the storage descriptor has the schema's
columns, the view's location and the plain ``FileInputFormat``/``LazySimpleSerDe``. Its
metadata lives in ``<location>/metadata/<NNNNN>-<uuid>.gz.metadata.json`` (``NNNNN`` one more
than the current file's); a new view's location is ``<database location>/<view>``. A create
and a replace hold the exclusive HMS lock on the view, read the pointer again under it and
move it only if it is still the one the change was based on. This module does the same
through the REST door's loopback (so grants, read-only catalogs and the audit log apply), so
Iceberg's Java ``HiveCatalog`` on catalogd's HMS endpoint and the REST door see the same views.

``ViewMetadataBuilder`` applies a ``CommitViewRequest``'s updates as Iceberg's
``ViewMetadata.Builder`` does (pyiceberg has the view model but no update application).
"""

from __future__ import annotations

import getpass
import gzip
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from hive_metastore.ttypes import (
    AlreadyExistsException,
    EnvironmentContext,
    NoSuchObjectException,
    Table,
    UnlockRequest,
)
from pydantic import Field, TypeAdapter
from pyiceberg.catalog.hive import DO_NOT_UPDATE_STATS, DO_NOT_UPDATE_STATS_DEFAULT, _construct_hive_storage_descriptor
from pyiceberg.catalog.rest import CreateViewRequest
from pyiceberg.exceptions import CommitFailedException, NoSuchNamespaceError, NoSuchTableError
from pyiceberg.io import load_file_io
from pyiceberg.schema import Schema
from pyiceberg.table.update import (
    AddSchemaUpdate,
    AssignUUIDUpdate,
    RemovePropertiesUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    UpgradeFormatVersionUpdate,
)
from pyiceberg.typedef import IcebergBaseModel
from pyiceberg.view.metadata import SQLViewRepresentation, ViewHistoryEntry, ViewMetadata, ViewVersion

from catalogd.auth.model import Principal
from catalogd.catalog.hive_codec import ICEBERG_VIEW, VIRTUAL_VIEW, is_iceberg_view
from catalogd.errors import InvalidArgumentError, PermissionDeniedError
from catalogd.iceberg.door import IcebergDoor, Loaded, _body, _identifier, namespace_of
from catalogd.iceberg.door import Request as DoorRequest
from catalogd.iceberg.errors import IcebergError
from catalogd.iceberg.tables import METADATA_LOCATION, TABLE_TYPE, WarehouseCatalog, inside
from catalogd.iceberg.transactions import lock_table

logger = logging.getLogger(__name__)

__all__ = ["ICEBERG_VIEW", "IcebergViews", "ViewMetadataBuilder", "add_view_routes", "apply_view_updates",
           "check_view_requirements", "hms_view_parameters", "is_iceberg_view", "metadata_file_name", "view_sql"]

PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
#: Iceberg's ``TableProperties.UUID`` and ``CURRENT_SCHEMA``, as ``HMSTablePropertyHelper`` sets them.
UUID_PROPERTY = "uuid"
CURRENT_SCHEMA = "current-schema"
#: ``HiveOperationsBase.HIVE_TABLE_PROPERTY_MAX_SIZE_DEFAULT``: a longer schema is not put in the parameters.
MAX_PARAMETER_SIZE = 32672
#: ``HiveCatalog.HMS_TABLE_OWNER``: the owner of the HMS object, not copied into its parameters.
HMS_TABLE_OWNER = "hive.metastore.table.owner"
#: ``ViewProperties``.
VERSION_HISTORY_SIZE = "version.history.num-entries"
VERSION_HISTORY_SIZE_DEFAULT = 10
METADATA_COMPRESSION = "write.metadata.compression-codec"
WRITE_METADATA_LOCATION = "write.metadata.path"
REPLACE_DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"
#: ``set-current-view-version`` / ``schema-id`` -1: the one added last in this change.
LAST_ADDED = -1
_FORMAT_VERSION = 1


# ------------------------------------------------------------ the spec's request shapes


class AddViewVersionUpdate(IcebergBaseModel):
    action: Literal["add-view-version"] = Field(default="add-view-version")
    view_version: ViewVersion = Field(alias="view-version")


class SetCurrentViewVersionUpdate(IcebergBaseModel):
    action: Literal["set-current-view-version"] = Field(default="set-current-view-version")
    view_version_id: int = Field(alias="view-version-id")


class AssertViewUUID(IcebergBaseModel):
    type: Literal["assert-view-uuid"] = Field(default="assert-view-uuid")
    uuid: str


ViewUpdate = Annotated[
    AssignUUIDUpdate | UpgradeFormatVersionUpdate | AddSchemaUpdate | SetLocationUpdate | SetPropertiesUpdate
    | RemovePropertiesUpdate | AddViewVersionUpdate | SetCurrentViewVersionUpdate,
    Field(discriminator="action"),
]
_UPDATES: TypeAdapter[list[ViewUpdate]] = TypeAdapter(list[ViewUpdate])
_REQUIREMENTS: TypeAdapter[list[AssertViewUUID]] = TypeAdapter(list[AssertViewUUID])


def parse_updates(raw: Any) -> list[ViewUpdate]:
    """A ``CommitViewRequest``'s ``updates`` (a ``ValidationError``, answered 400, for anything else)."""
    return _UPDATES.validate_python(raw or [])


def parse_requirements(raw: Any) -> list[AssertViewUUID]:
    return _REQUIREMENTS.validate_python(raw or [])


# ------------------------------------------------------------ update application


def _same_version(one: ViewVersion, two: ViewVersion) -> bool:
    """Iceberg's ``sameViewVersion``: alike but for the id, the timestamp and the operation."""
    return (one.summary == two.summary and one.representations == two.representations
            and one.default_catalog == two.default_catalog
            and list(one.default_namespace) == list(two.default_namespace) and one.schema_id == two.schema_id)


def _dialects(version: ViewVersion) -> set[str]:
    return {r.root.dialect.lower() for r in version.representations if isinstance(r.root, SQLViewRepresentation)}


def _illegal(message: str) -> IcebergError:
    """A 400 Iceberg's clients raise as ``IllegalArgumentException`` (the type names it): what
    Iceberg's own ``ViewMetadata.Builder`` raises, in its words."""
    return IcebergError(400, "IllegalArgumentException", message)


def _invalid(message: str) -> IcebergError:
    """A 400 ``ValidationException`` (Iceberg's ``ValidationException.check`` in the builder)."""
    return IcebergError(400, "ValidationException", message)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


class ViewMetadataBuilder:
    """Iceberg's ``ViewMetadata.Builder``: a view's metadata changed by updates, as the spec says.

    Version and schema ids are reused for a version or schema the view has already, a new one
    takes the highest id + 1; ``-1`` means the one added last; old versions beyond
    ``version.history.num-entries`` (10) are expired, never the current one or those added now;
    a replace may not lose a dialect unless ``replace.drop-dialect.allowed``.

    Raises (every method): ``IcebergError`` 400 for an update the metadata cannot take.
    """

    def __init__(self, base: ViewMetadata | None = None) -> None:
        self.versions: list[ViewVersion] = list(base.versions) if base else []
        self.schemas: list[Schema] = list(base.schemas) if base else []
        self.history: list[ViewHistoryEntry] = list(base.version_log) if base else []
        self.properties: dict[str, str] = dict(base.properties) if base else {}
        self.format_version = base.format_version if base else _FORMAT_VERSION
        self.current_version_id: int | None = base.current_version_id if base else None
        self.location: str | None = base.location if base else None
        self.uuid: str | None = base.view_uuid if base else None
        #: The updates that changed something (none: nothing to commit).
        self.changes: list[str] = []
        self._added_versions: set[int] = set()
        self._last_added_version: int | None = None
        self._last_added_schema: int | None = None
        self._history_entry: ViewHistoryEntry | None = None
        self._previous = _current_version(base) if base else None

    # -------------------------------------------------------- the updates

    def apply(self, update: ViewUpdate) -> None:
        if isinstance(update, AssignUUIDUpdate):
            self.assign_uuid(str(update.uuid))
        elif isinstance(update, UpgradeFormatVersionUpdate):
            self.upgrade_format_version(update.format_version)
        elif isinstance(update, AddSchemaUpdate):
            self.add_schema(update.schema_)
        elif isinstance(update, SetLocationUpdate):
            self.set_location(update.location)
        elif isinstance(update, SetPropertiesUpdate):
            self.set_properties(update.updates)
        elif isinstance(update, RemovePropertiesUpdate):
            self.remove_properties(update.removals)
        elif isinstance(update, AddViewVersionUpdate):
            self.add_version(update.view_version)
        else:
            self.set_current_version_id(update.view_version_id)

    def assign_uuid(self, new: str) -> None:
        if self.uuid is not None and new != self.uuid:
            raise _illegal("Cannot reassign uuid")
        if new != self.uuid:
            self.uuid = new
            self.changes.append("assign-uuid")

    def upgrade_format_version(self, version: int) -> None:
        if version < self.format_version:
            raise _illegal(f"Cannot downgrade v{self.format_version} view to v{version}")
        if version > _FORMAT_VERSION:
            raise _illegal(f"Unsupported format version: {version}")

    def set_location(self, location: str) -> None:
        if not location:
            raise _illegal("Invalid location: null")
        location = location.rstrip("/")
        if location != self.location:
            self.location = location
            self.changes.append("set-location")

    def set_properties(self, updates: dict[str, str]) -> None:
        if updates:
            self.properties.update(updates)
            self.changes.append("set-properties")

    def remove_properties(self, removals: list[str]) -> None:
        if removals:
            for key in removals:
                self.properties.pop(key, None)
            self.changes.append("remove-properties")

    def add_schema(self, schema: Schema) -> int:
        new_id = 0
        for known in self.schemas:
            if known == schema:  # pyiceberg's Schema.__eq__ ignores the id, as Iceberg's sameSchema
                return known.schema_id
            new_id = max(new_id, known.schema_id + 1)
        if schema.schema_id != new_id:
            schema = schema.model_copy(update={"schema_id": new_id})
        self.schemas.append(schema)
        self._last_added_schema = new_id
        self.changes.append("add-schema")
        return new_id

    def add_version(self, version: ViewVersion) -> int:
        # As Iceberg: a version alike an existing one is that one (compared before -1 is resolved).
        new_id = version.version_id
        for known in self.versions:
            if _same_version(known, version):
                new_id = known.version_id
                break
            if known.version_id >= new_id:
                new_id = known.version_id + 1
        if new_id != version.version_id:
            version = version.model_copy(update={"version_id": new_id})
        if any(v.version_id == new_id for v in self.versions):
            self._last_added_version = new_id if new_id in self._added_versions else None
            return new_id
        if version.schema_id == LAST_ADDED:
            if self._last_added_schema is None:
                raise _invalid("Cannot set last added schema: no schema has been added")
            version = version.model_copy(update={"schema_id": self._last_added_schema})
        if not any(s.schema_id == version.schema_id for s in self.schemas):
            raise _illegal(f"Cannot add version with unknown schema: {version.schema_id}")
        seen: set[str] = set()
        for dialect in (r.root.dialect.lower() for r in version.representations):
            if dialect in seen:
                raise _illegal(f"Invalid view version: Cannot add multiple queries for dialect {dialect}")
            seen.add(dialect)
        self.versions.append(version)
        self._added_versions.add(new_id)
        self._last_added_version = new_id
        self.changes.append("add-view-version")
        return new_id

    def set_current_version_id(self, version_id: int) -> None:
        if version_id == LAST_ADDED:
            if self._last_added_version is None:
                raise _invalid("Cannot set last version id: no current version id has been set")
            version_id = self._last_added_version
        if version_id == self.current_version_id:
            return
        version = next((v for v in self.versions if v.version_id == version_id), None)
        if version is None:
            raise _illegal(f"Cannot set current version to unknown version: {version_id}")
        self.current_version_id = version_id
        self.changes.append("set-current-view-version")
        # A version added by this change became current when it was made; an older one now.
        stamp = version.timestamp_ms if version_id in self._added_versions else int(time.time() * 1000)
        self._history_entry = ViewHistoryEntry.model_validate({"timestamp-ms": stamp, "version-id": version_id})

    def set_current_version(self, version: ViewVersion, schema: Schema) -> None:
        """A create's version and schema (the version takes the schema's id)."""
        schema_id = self.add_schema(schema)
        self.set_current_version_id(self.add_version(version.model_copy(update={"schema_id": schema_id})))

    # -------------------------------------------------------- the result

    def build(self) -> ViewMetadata:
        if not self.location:
            raise _illegal("Invalid location: null")
        if not self.versions or self.current_version_id is None:
            raise _illegal("Invalid view: no versions were added")
        history = list(self.history)
        if self._history_entry is not None:
            history.append(self._history_entry)
        by_id = {v.version_id: v for v in self.versions}
        current = by_id[self.current_version_id]
        if self._previous is not None and not _truthy(self.properties.get(REPLACE_DROP_DIALECT_ALLOWED)):
            lost = _dialects(self._previous) - _dialects(current)
            if lost:
                raise IcebergError(400, "IllegalStateException",
                                   f"Cannot replace view due to loss of view dialects ({REPLACE_DROP_DIALECT_ALLOWED}"
                                   f"=false):\nPrevious dialects: {sorted(_dialects(self._previous))}\n"
                                   f"New dialects: {sorted(_dialects(current))}")
        try:
            size = int(self.properties.get(VERSION_HISTORY_SIZE, VERSION_HISTORY_SIZE_DEFAULT))
        except ValueError:
            raise _illegal(f"{VERSION_HISTORY_SIZE} must be an integer") from None
        if size <= 0:
            raise _illegal(f"{VERSION_HISTORY_SIZE} must be positive but was {size}")
        keep = max(len(self._added_versions | {current.version_id}), size)
        versions = self.versions
        if len(versions) > keep:
            versions = _expire(by_id, keep, current)
            history = _retained_history(history, {v.version_id for v in versions})
        return ViewMetadata.model_validate({
            "view-uuid": self.uuid or str(uuid.uuid4()), "format-version": self.format_version,
            "location": self.location, "schemas": self.schemas, "current-version-id": current.version_id,
            "versions": versions, "version-log": history, "properties": self.properties,
        })


def _current_version(metadata: ViewMetadata) -> ViewVersion:
    for version in metadata.versions:
        if version.version_id == metadata.current_version_id:
            return version
    raise InvalidArgumentError(f"view metadata names current version {metadata.current_version_id}, "
                               "which it does not have")


def _expire(by_id: dict[int, ViewVersion], keep: int, current: ViewVersion) -> list[ViewVersion]:
    """The newest ``keep`` versions by id, the current one always among them."""
    retained = [current]
    for version_id in sorted(by_id, reverse=True)[:keep]:
        if len(retained) == keep:
            break
        if version_id != current.version_id:
            retained.append(by_id[version_id])
    return retained


def _retained_history(history: list[ViewHistoryEntry], ids: set[int]) -> list[ViewHistoryEntry]:
    """The version log after an expiry: cleared past any entry of a version no longer kept."""
    retained: list[ViewHistoryEntry] = []
    for entry in history:
        if entry.version_id in ids:
            retained.append(entry)
        else:
            retained.clear()
    return retained


def apply_view_updates(base: ViewMetadata, updates: list[ViewUpdate]) -> tuple[ViewMetadata, bool]:
    """(the view's metadata after ``updates``, whether they changed anything)."""
    builder = ViewMetadataBuilder(base)
    for update in updates:
        builder.apply(update)
    if not builder.changes:
        return base, False
    return builder.build(), True


def check_view_requirements(base: ViewMetadata, requirements: list[AssertViewUUID]) -> None:
    """Raises ``CommitFailedException`` (409) for a requirement the view no longer meets."""
    for requirement in requirements:
        if requirement.uuid != base.view_uuid:
            raise CommitFailedException(f"requirement failed: the view's uuid is {base.view_uuid}, "
                                        f"not {requirement.uuid}")


def new_view_metadata(create: CreateViewRequest, location: str) -> ViewMetadata:
    """A new view's metadata, as Iceberg's ``BaseViewBuilder.create``: its version 1, the given
    schema as schema 0."""
    builder = ViewMetadataBuilder()
    builder.set_properties(dict(create.properties))
    builder.set_location(location)
    if not create.view_version.representations:
        raise _illegal("Cannot create view without specifying a query")
    builder.set_current_version(create.view_version.model_copy(update={"version_id": 1}), create.view_schema)
    return builder.build()


# ------------------------------------------------------------ files and HMS objects


def _file_version(metadata_location: str | None) -> int:
    """The ``NNNNN`` of ``<NNNNN>-<uuid>...metadata.json`` (-1: none, or not a name of this form)."""
    if not metadata_location:
        return -1
    name = metadata_location.rsplit("/", 1)[-1]
    head, dash, _ = name.partition("-")
    try:
        return int(head) if dash else -1
    except ValueError:
        return -1


def metadata_file_name(metadata: ViewMetadata, previous: str | None) -> str:
    """Where the next metadata file of a view goes: ``<location>/metadata/<NNNNN>-<uuid><ext>``, as
    Iceberg's ``BaseViewOperations`` names it (``.gz.metadata.json``: gzip unless the view's
    ``write.metadata.compression-codec`` is ``none``); never outside the view's location."""
    codec = metadata.properties.get(METADATA_COMPRESSION, "gzip").strip().lower()
    if codec not in ("gzip", "none"):
        raise InvalidArgumentError(f"{METADATA_COMPRESSION}={codec}: gzip or none")
    extension = ".gz.metadata.json" if codec == "gzip" else ".metadata.json"
    location = metadata.location.rstrip("/")
    folder = (metadata.properties.get(WRITE_METADATA_LOCATION) or f"{location}/metadata").rstrip("/")
    path = f"{folder}/{_file_version(previous) + 1:05d}-{uuid.uuid4()}{extension}"
    if not inside(location, path):
        raise InvalidArgumentError(f"metadata file {path} would lie outside the view's location {location}: "
                                   f"catalogd writes a view's metadata inside its location "
                                   f"(leave {WRITE_METADATA_LOCATION} unset)")
    return path


def view_sql(metadata: ViewMetadata) -> str | None:
    """The text Iceberg's ``HiveViewOperations`` puts in ``viewOriginalText``/``viewExpandedText``:
    the current version's ``hive`` SQL, else its first SQL."""
    closest = None
    for representation in _current_version(metadata).representations:
        sql = representation.root
        if sql.dialect.lower() == "hive":
            return sql.sql
        if closest is None:
            closest = sql.sql
    return closest


def hms_view_parameters(existing: dict[str, str] | None, metadata: ViewMetadata, metadata_location: str,
                        previous: str | None, removed: set[str]) -> dict[str, str]:
    """The HMS parameters of a view, as ``HMSTablePropertyHelper.updateHmsTableForIcebergView`` sets them."""
    parameters = dict(existing or {})
    for key, value in metadata.properties.items():
        if key.lower() != HMS_TABLE_OWNER:
            parameters[key] = value
    parameters[UUID_PROPERTY] = metadata.view_uuid
    for key in removed:
        parameters.pop(key, None)
    parameters[TABLE_TYPE] = ICEBERG_VIEW
    parameters[METADATA_LOCATION] = metadata_location
    if previous:
        parameters[PREVIOUS_METADATA_LOCATION] = previous
    parameters.pop(CURRENT_SCHEMA, None)
    schema = _current_schema(metadata).model_dump_json()
    if len(schema) <= MAX_PARAMETER_SIZE:
        parameters[CURRENT_SCHEMA] = schema
    return parameters


def _current_schema(metadata: ViewMetadata) -> Schema:
    schema_id = _current_version(metadata).schema_id
    for schema in metadata.schemas:
        if schema.schema_id == schema_id:
            return schema
    raise InvalidArgumentError(f"view metadata: the current version's schema {schema_id} is missing")


def _storage_descriptor(metadata: ViewMetadata) -> Any:
    sd = _construct_hive_storage_descriptor(_current_schema(metadata), metadata.location, True)
    sd.serdeInfo.parameters = {}
    return sd


def _new_hms_view(database: str, name: str, owner: str, metadata: ViewMetadata, metadata_location: str) -> Any:
    now = int(time.time())
    sql = view_sql(metadata)
    return Table(tableName=name, dbName=database, owner=owner, createTime=now, lastAccessTime=now,
                 retention=2**31 - 1, sd=_storage_descriptor(metadata), partitionKeys=[],
                 parameters=hms_view_parameters({}, metadata, metadata_location, None, set()),
                 viewOriginalText=sql, viewExpandedText=sql, tableType=VIRTUAL_VIEW)


def _load_result(metadata_location: str, metadata: bytes) -> bytes:
    return (b'{"metadata-location":' + json.dumps(metadata_location).encode() + b',"metadata":' + metadata
            + b',"config":{}}')


# ------------------------------------------------------------ the handlers


def _name(namespace: tuple[str, ...], name: str) -> str:
    return ".".join((*namespace, name))


def _no_view(text: str) -> IcebergError:
    """Iceberg's wording (``View does not exist: ns.v``): clients match on it."""
    return IcebergError(404, "NoSuchViewException", text)


def _exists(ident: str, hive_table: Any, prefix: str = "") -> IcebergError:
    """A create, register or rename onto a name taken by a view or a table (Iceberg's wording)."""
    if is_iceberg_view(hive_table) or str(hive_table.tableType or "").upper() == VIRTUAL_VIEW:
        text = f"{prefix}View already exists" if prefix else f"View already exists: {ident}"
    else:
        text = f"{prefix}Table already exists" if prefix else f"Table with same name already exists: {ident}"
    return IcebergError(409, "AlreadyExistsException", text)


class _Locked:
    """The exclusive HMS lock Iceberg's ``HiveViewOperations`` takes (``MetastoreLock``), held
    while the block runs; the block gets the open client.

    A class, not ``contextlib.contextmanager``: the Thrift exceptions a refused call raises are
    immutable, and a generator-based manager re-raising one sets its ``__traceback__``.
    """

    def __init__(self, wh: WarehouseCatalog, database: str, name: str) -> None:
        self.wh, self.database, self.name = wh, database, name
        self.lockid: int | None = None

    def __enter__(self) -> Any:
        client = self.wh._client.__enter__()
        try:
            self.lockid = lock_table(self.wh, client, self.database, self.name)
        except BaseException:
            self.wh._client.__exit__(None, None, None)
            raise
        self.client = client
        return client

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        try:
            if self.lockid is not None:
                self.client.unlock(UnlockRequest(lockid=self.lockid))
        except Exception:
            if kind is None:
                raise
            # The block's own error is the one to answer (the lock times out with the request).
            logger.warning("Iceberg REST: could not unlock view %s.%s", self.database, self.name, exc_info=True)
        finally:
            self.wh._client.__exit__(None, None, None)


class IcebergViews:
    """The view operations of the REST door (``CatalogHandlers``' view half) over one daemon's catalogs."""

    def __init__(self, door: IcebergDoor) -> None:
        self.door = door

    # -------------------------------------------------------- helpers

    def _writable(self, request: DoorRequest, operation: str) -> None:
        """Refused before anything is written (the metastore refuses too, but after the file)."""
        self.door.require(request, write=True)
        conf = self.door.manager.config.catalog(request.warehouse)
        if conf is not None and conf.read_only:
            raise PermissionDeniedError(f"catalog {request.warehouse!r} is read-only: {operation} refused")

    @staticmethod
    def _lookup(wh: WarehouseCatalog, database: str, name: str) -> Any | None:
        """The HMS object of that name, view or table (None: none, or no such namespace)."""
        try:
            return wh.hive_table(database, name)
        except NoSuchTableError:
            return None

    @staticmethod
    def _namespace(wh: WarehouseCatalog, namespace: tuple[str, ...], database: str, prefix: str = "") -> None:
        """A 404 ``NoSuchNamespaceException`` unless the namespace exists."""
        try:
            wh.load_namespace_properties(database)
        except NoSuchNamespaceError:
            raise IcebergError(404, "NoSuchNamespaceException",
                               f"{prefix}Namespace does not exist: {'.'.join(namespace)}") from None

    def _view(self, wh: WarehouseCatalog, namespace: tuple[str, ...], database: str, name: str) -> Any:
        """The Iceberg view's HMS object; a 404 ``NoSuchViewException`` for anything else (a
        missing namespace too, as Iceberg's ``HiveCatalog``)."""
        hive_table = self._lookup(wh, database, name)
        if hive_table is None or not is_iceberg_view(hive_table):
            raise _no_view(f"View does not exist: {_name(namespace, name)}")
        return hive_table

    def _read(self, wh: WarehouseCatalog, hive_table: Any) -> tuple[str, bytes]:
        location = (hive_table.parameters or {}).get(METADATA_LOCATION)
        if not location:
            raise _no_view(f"View does not exist: {hive_table.dbName}.{hive_table.tableName} "
                           "(it has no metadata_location)")
        return location, wh.files.read(location, lambda: load_file_io(wh.properties, location))

    @staticmethod
    def _locked(wh: WarehouseCatalog, database: str, name: str) -> _Locked:
        return _Locked(wh, database, name)

    def _write(self, wh: WarehouseCatalog, metadata: ViewMetadata, path: str) -> bytes:
        """Write the metadata file; its JSON (held for the next load once the commit succeeded)."""
        data = metadata.model_dump_json().encode()
        io = load_file_io(wh.properties, path)
        with io.new_output(path).create(overwrite=False) as f:
            f.write(gzip.compress(data) if path.endswith(".gz.metadata.json") else data)
        return data

    def _forget(self, wh: WarehouseCatalog, path: str) -> None:
        """Delete a metadata file this request wrote and did not commit."""
        try:
            load_file_io(wh.properties, path).delete(path)
        except Exception as e:  # the commit's own error is the one to answer
            logger.warning("Iceberg REST: could not delete the uncommitted view metadata file %s: %s", path, e)

    def _create_hms_view(self, wh: WarehouseCatalog, ident: str, database: str, name: str, metadata: ViewMetadata,
                         metadata_location: str, written: bool) -> None:
        """Make the HMS view under its lock, the name checked free again under it (a metadata file
        this request ``written`` is deleted when the create fails)."""
        owner = metadata.properties.get(HMS_TABLE_OWNER) or wh.owner or getpass.getuser()
        with self._locked(wh, database, name) as client:
            try:
                raced = client.get_table(dbname=database, tbl_name=name)
            except NoSuchObjectException:
                raced = None
            if raced is not None:
                if written:
                    self._forget(wh, metadata_location)
                raise _exists(ident, raced)
            try:
                client.create_table(_new_hms_view(database, name, owner, metadata, metadata_location))
            except AlreadyExistsException:
                if written:
                    self._forget(wh, metadata_location)
                raise IcebergError(409, "AlreadyExistsException", f"View already exists: {ident}") from None
            except BaseException:
                if written:
                    self._forget(wh, metadata_location)
                raise

    # -------------------------------------------------------- operations

    def list_views(self, request: DoorRequest, namespace: str) -> dict[str, Any]:
        self.door.require(request, write=False)
        ns = namespace_of(namespace)
        wh = self.door.catalog(request)
        database = wh.db(ns)
        self._namespace(wh, ns, database)  # a missing namespace is a 404, not an empty list
        with wh._client as client:
            names = client.get_all_tables(db_name=database)
            found = client.get_table_objects_by_name(dbname=database, tbl_names=names) if names else []
        views = sorted(t.tableName for t in found if is_iceberg_view(t))
        return {"identifiers": [{"namespace": list(ns), "name": name} for name in views]}

    def load_view(self, request: DoorRequest, namespace: str, view: str) -> Loaded:
        """The view's ``LoadViewResult``, with its metadata location (the ETag's source, as a table's)."""
        self.door.require(request, write=False)
        ns = namespace_of(namespace)
        wh = self.door.catalog(request)
        hive_table = self._view(wh, ns, wh.db(ns), view.lower())
        location, data = self._read(wh, hive_table)
        return Loaded(location, _load_result(location, data))

    def create_view(self, request: DoorRequest, namespace: str, raw: bytes) -> bytes:
        self._writable(request, "create view")
        ns = namespace_of(namespace)
        create = CreateViewRequest.model_validate({"location": None, **_body(raw)})
        name = create.name.lower()
        if not name:
            raise InvalidArgumentError("name: a view needs a name")
        ident = _name(ns, create.name)
        wh = self.door.catalog(request)
        database = wh.db(ns)
        self._namespace(wh, ns, database)
        existing = self._lookup(wh, database, name)
        if existing is not None:
            raise _exists(ident, existing)
        location = (create.location or wh.default_location(database, name)).rstrip("/")
        metadata = new_view_metadata(create, location)
        path = metadata_file_name(metadata, None)
        wh.check_location(location, f"view {ident}", None)
        data = self._write(wh, metadata, path)
        self._create_hms_view(wh, ident, database, name, metadata, path, written=True)
        wh.files.put(path, data)
        return _load_result(path, data)

    def register_view(self, request: DoorRequest, namespace: str, raw: bytes) -> bytes:
        """A view on an existing metadata file (lying inside the view's location, which the
        catalog's rules must admit)."""
        self._writable(request, "register view")
        ns = namespace_of(namespace)
        body = _body(raw)
        given, metadata_location = body.get("name"), body.get("metadata-location")
        if not isinstance(given, str) or not given or not isinstance(metadata_location, str) or not metadata_location:
            raise InvalidArgumentError("a RegisterViewRequest needs its name and metadata-location")
        name, ident = given.lower(), _name(ns, given)
        wh = self.door.catalog(request)
        database = wh.db(ns)
        self._namespace(wh, ns, database)
        existing = self._lookup(wh, database, name)
        if existing is not None:
            raise _exists(ident, existing)
        data = wh.files.read(metadata_location, lambda: load_file_io(wh.properties, metadata_location))
        metadata = ViewMetadata.model_validate_json(data)
        location = metadata.location.rstrip("/")
        if not inside(location, metadata_location):
            raise InvalidArgumentError(f"metadata file {metadata_location} lies outside its view's location {location}")
        wh.check_location(location, f"view {ident}", None)
        self._create_hms_view(wh, ident, database, name, metadata, metadata_location, written=False)
        return _load_result(metadata_location, data)

    def view_exists(self, request: DoorRequest, namespace: str, view: str) -> None:
        self.door.require(request, write=False)
        ns = namespace_of(namespace)
        wh = self.door.catalog(request)
        self._view(wh, ns, wh.db(ns), view.lower())

    def replace_view(self, request: DoorRequest, namespace: str, view: str, raw: bytes) -> bytes:
        """``POST .../views/{view}``: a ``CommitViewRequest`` applied under the view's HMS lock."""
        self._writable(request, "replace view")
        ns = namespace_of(namespace)
        name = view.lower()
        body = _body(raw)
        if body.get("identifier") is not None:
            given_ns, given = _identifier(body["identifier"], "identifier")
            if (given_ns, given.lower()) != (ns, name):
                raise InvalidArgumentError(f"the body's identifier {'.'.join(given_ns)}.{given} is not the path's view")
        if "updates" not in body:
            raise InvalidArgumentError("updates: a CommitViewRequest needs its updates")
        requirements = parse_requirements(body.get("requirements"))
        updates = parse_updates(body.get("updates"))
        wh = self.door.catalog(request)
        database = wh.db(ns)
        self._view(wh, ns, database, name)  # a missing view is a 404 before any lock
        with self._locked(wh, database, name) as client:
            hive_table = self._view(wh, ns, database, name)  # the pointer again, under the lock
            base_location, data = self._read(wh, hive_table)
            base = ViewMetadata.model_validate_json(data)
            check_view_requirements(base, requirements)
            metadata, changed = apply_view_updates(base, updates)
            if not changed:
                return _load_result(base_location, data)
            if metadata.location.rstrip("/") != base.location.rstrip("/"):
                wh.check_location(metadata.location.rstrip("/"), f"view {_name(ns, name)}", (database, name))
            path = metadata_file_name(metadata, base_location)
            written = self._write(wh, metadata, path)
            removed = set(base.properties) - set(metadata.properties)
            hive_table.parameters = hms_view_parameters(hive_table.parameters, metadata, path, base_location, removed)
            hive_table.sd = _storage_descriptor(metadata)
            sql = view_sql(metadata)
            if sql is not None:
                hive_table.viewOriginalText = hive_table.viewExpandedText = sql
            try:
                client.alter_table_with_environment_context(
                    dbname=database, tbl_name=name, new_tbl=hive_table,
                    environment_context=EnvironmentContext(properties={DO_NOT_UPDATE_STATS:
                                                                       DO_NOT_UPDATE_STATS_DEFAULT}))
            except BaseException:
                self._forget(wh, path)
                raise
        wh.files.put(path, written)
        return _load_result(path, written)

    def drop_view(self, request: DoorRequest, namespace: str, view: str) -> None:
        """The HMS view goes; its metadata files stay (catalogd deletes no file it cannot vouch for:
        a view made at the HMS endpoint may have its metadata anywhere)."""
        self._writable(request, "drop view")
        ns = namespace_of(namespace)
        wh = self.door.catalog(request)
        database = wh.db(ns)
        name = view.lower()
        self._view(wh, ns, database, name)
        with wh._client as client:
            client.drop_table(dbname=database, name=name, deleteData=False)

    def rename_view(self, request: DoorRequest, raw: bytes) -> None:
        """As Iceberg's ``HiveCatalog.renameView``: the destination namespace must exist and the
        name be free (of tables and views), then the source must be an Iceberg view."""
        self._writable(request, "rename view")
        body = _body(raw)
        src_ns, src_given = _identifier(body.get("source"), "source")
        dst_ns, dst_given = _identifier(body.get("destination"), "destination")
        prefix = f"Cannot rename {_name(src_ns, src_given)} to {_name(dst_ns, dst_given)}. "
        wh = self.door.catalog(request)
        src_db, dst_db = wh.db(src_ns), wh.db(dst_ns)
        src, dst = src_given.lower(), dst_given.lower()
        self._namespace(wh, dst_ns, dst_db, prefix)
        existing = self._lookup(wh, dst_db, dst)
        if existing is not None:
            raise _exists("", existing, prefix)
        hive_table = self._lookup(wh, src_db, src)
        if hive_table is None or not is_iceberg_view(hive_table):
            raise _no_view(prefix + "View does not exist")
        hive_table.dbName = dst_db
        hive_table.tableName = dst
        if src_db != dst_db and self.door._catalog_object(request.warehouse).relay_target() is None:
            # A memory catalog moves no object between databases (a table's directory would stay
            # behind); a view has no data, so it is made in the new database and dropped from the old.
            self._move_between_databases(wh, src_db, src, hive_table, prefix)
            return
        with wh._client as client:
            client.alter_table_with_environment_context(
                dbname=src_db, tbl_name=src, new_tbl=hive_table,
                environment_context=EnvironmentContext(properties={DO_NOT_UPDATE_STATS: DO_NOT_UPDATE_STATS_DEFAULT}))

    def _move_between_databases(self, wh: WarehouseCatalog, src_db: str, src: str, moved: Any, prefix: str) -> None:
        """Create the view under its new name, then drop the old one, under the old one's HMS lock
        (its pointer read again under it); a failed drop takes the new one back."""
        with self._locked(wh, src_db, src) as client:
            try:
                current = client.get_table(dbname=src_db, tbl_name=src)
            except NoSuchObjectException:
                raise _no_view(prefix + "View does not exist") from None
            moved.parameters = current.parameters  # the pointer as it is now, under the lock
            try:
                client.create_table(moved)
            except AlreadyExistsException:
                raise IcebergError(409, "AlreadyExistsException", prefix + "View already exists") from None
            try:
                client.drop_table(dbname=src_db, name=src, deleteData=False)
            except BaseException:
                client.drop_table(dbname=moved.dbName, name=moved.tableName, deleteData=False)
                raise


# ------------------------------------------------------------ routes

Handler = Callable[[DoorRequest, bytes], "tuple[int, bytes | None, dict[str, str] | None]"]
#: ``routes.iceberg_router``'s ``serve``: (request, principal, operation, prefix, handler, write) -> response.
Serve = Callable[[Request, Principal, str, "str | None", Handler, bool], Awaitable[Response]]


def add_view_routes(router: APIRouter, door: IcebergDoor, serve: Serve,
                    caller: Callable[[Request], Awaitable[Principal]]) -> None:
    """The view routes of the spec, on the REST door's router (before its catch-all route)."""
    views = IcebergViews(door)
    principal_of = Depends(caller)

    def _json(value: Any) -> bytes:
        return json.dumps(value).encode()

    @router.get("/v1/{prefix}/namespaces/{namespace}/views")
    async def list_views(request: Request, prefix: str, namespace: str,
                         principal: Principal = principal_of) -> Response:
        return await serve(request, principal, "listViews", prefix,
                           lambda r, _: (200, _json(views.list_views(r, namespace)), None), False)

    @router.post("/v1/{prefix}/namespaces/{namespace}/views")
    async def create_view(request: Request, prefix: str, namespace: str,
                          principal: Principal = principal_of) -> Response:
        return await serve(request, principal, "createView", prefix,
                           lambda r, raw: (200, views.create_view(r, namespace, raw), None), True)

    @router.post("/v1/{prefix}/namespaces/{namespace}/register-view")
    async def register_view(request: Request, prefix: str, namespace: str,
                            principal: Principal = principal_of) -> Response:
        return await serve(request, principal, "registerView", prefix,
                           lambda r, raw: (200, views.register_view(r, namespace, raw), None), True)

    @router.get("/v1/{prefix}/namespaces/{namespace}/views/{view}")
    async def load_view(request: Request, prefix: str, namespace: str, view: str,
                        principal: Principal = principal_of) -> Response:
        match = request.headers.get("if-none-match")

        def load(r: DoorRequest, _: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            loaded = views.load_view(r, namespace, view)
            if match is not None and loaded.etag in {m.strip() for m in match.split(",")}:
                return 304, None, {"ETag": loaded.etag}
            return 200, loaded.body, {"ETag": loaded.etag}
        return await serve(request, principal, "loadView", prefix, load, False)

    @router.head("/v1/{prefix}/namespaces/{namespace}/views/{view}")
    async def view_exists(request: Request, prefix: str, namespace: str, view: str,
                          principal: Principal = principal_of) -> Response:
        def exists(r: DoorRequest, _: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            views.view_exists(r, namespace, view)
            return 204, None, None
        response = await serve(request, principal, "viewExists", prefix, exists, False)
        return Response(status_code=response.status_code)

    @router.post("/v1/{prefix}/namespaces/{namespace}/views/{view}")
    async def replace_view(request: Request, prefix: str, namespace: str, view: str,
                           principal: Principal = principal_of) -> Response:
        return await serve(request, principal, "replaceView", prefix,
                           lambda r, raw: (200, views.replace_view(r, namespace, view, raw), None), True)

    @router.delete("/v1/{prefix}/namespaces/{namespace}/views/{view}")
    async def drop_view(request: Request, prefix: str, namespace: str, view: str,
                        principal: Principal = principal_of) -> Response:
        def drop(r: DoorRequest, _: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            views.drop_view(r, namespace, view)
            return 204, None, None
        return await serve(request, principal, "dropView", prefix, drop, True)

    @router.post("/v1/{prefix}/views/rename")
    async def rename_view(request: Request, prefix: str,
                          principal: Principal = principal_of) -> Response:
        def rename(r: DoorRequest, raw: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            views.rename_view(r, raw)
            return 204, None, None
        return await serve(request, principal, "renameView", prefix, rename, True)
