"""One REST warehouse (one catalogd catalog) as pyiceberg's ``HiveCatalog`` over the loopback client.

Iceberg tables in catalogd are the HMS tables Iceberg's own ``HiveCatalog`` makes (``table_type
= ICEBERG``, ``metadata_location``, ``previous_metadata_location``), so the code that makes them
is pyiceberg's: create, register, commit (an exclusive HMS lock on the table, the pointer read
again under it, requirements checked and updates applied by ``pyiceberg.table.update``, the new
metadata file written, ``alter_table``, unlock), drop, rename, namespaces. What this subclass
adds is catalogd's:

* database names spelled for the catalog (``db`` for the default catalog, ``@cat#db`` for any
  other: the router's native door), and listings kept to the warehouse's own databases;
* every metadata file catalogd writes lies inside its table's location, and a location a
  create, register or commit gives a table is checked against the catalog's rules (inside
  ``allowed-locations``, clear of every other object's directory) **before** anything is
  written there; the metastore write then claims it for good through the router;
* the owner of a new table is the REST caller, not the daemon's OS user;
* loads read the metadata file once per ``metadata_location`` (``MetadataFiles``: a metadata
  file is never rewritten, so its bytes can be kept).
"""

from __future__ import annotations

import gzip
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pyiceberg.catalog import LOCATION, WAREHOUSE_LOCATION
from pyiceberg.catalog.hive import (
    HIVE2_COMPATIBLE,
    HiveCatalog,
    _construct_hive_storage_descriptor,
    _construct_parameters,
)
from pyiceberg.exceptions import NoSuchIcebergTableError, NoSuchTableError
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.table.metadata import TableMetadata

from catalogd.errors import InvalidArgumentError
from catalogd.iceberg.loopback import LoopbackClient

logger = logging.getLogger(__name__)

__all__ = ["ICEBERG", "MetadataFiles", "WarehouseCatalog", "inside"]

ICEBERG = "iceberg"
TABLE_TYPE = "table_type"
METADATA_LOCATION = "metadata_location"
#: Checks a location a table is given: (location, what, own table (db, name) or None); raises a
#: catalogd error when the catalog's rules refuse it.
LocationCheck = Callable[[str, str, "tuple[str, str] | None"], None]


def inside(outer: str, inner: str) -> bool:
    """Whether ``inner`` lies strictly inside directory ``outer`` (``file:/x`` and ``file:///x``
    are one place)."""
    def norm(uri: str) -> str:
        if uri.startswith("file:///"):
            uri = "file:/" + uri[len("file:///"):]
        return uri.rstrip("/")

    a, b = norm(outer), norm(inner)
    return b.startswith(a + "/") and ".." not in b[len(a):].split("/")


class MetadataFiles:
    """The bytes of metadata files read lately, by location (bounded by their total size).

    A metadata file is written once and never changed (each commit writes a new one), so its
    location names its content for good.
    """

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self._files: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def put(self, location: str, data: bytes) -> None:
        """Hold the bytes of a metadata file catalogd just wrote (the next load needs no read)."""
        if len(data) > self.max_bytes // 8:
            return
        with self._lock:
            if location not in self._files:
                self._files[location] = data
                self._size += len(data)
                while self._size > self.max_bytes and self._files:
                    _, dropped = self._files.popitem(last=False)
                    self._size -= len(dropped)

    def read(self, location: str, io: FileIO | Callable[[], FileIO]) -> bytes:
        """The file's bytes (JSON, ungzipped); ``io``: the FileIO to read it with, or what makes
        one (called only when the file is not held)."""
        with self._lock:
            held = self._files.get(location)
            if held is not None:
                self._files.move_to_end(location)
                return held
        if callable(io):
            io = io()
        with io.new_input(location).open() as f:
            data: bytes = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        self.put(location, data)
        return data


class WarehouseCatalog(HiveCatalog):
    """pyiceberg's ``HiveCatalog`` for one catalogd catalog, through the loopback (one per request).

    Args:
        name: the catalog (the REST warehouse).
        client: the loopback client (carries the REST caller's connection).
        spell: a REST namespace -> the database name the router takes for this catalog.
        warehouse: where tables of a database without a location go (``<warehouse>/<db>/<table>``).
        check_location: the catalog's rules on a table's new location.
        owner: the REST caller's name (a new table's owner).
        files: the metadata files read lately (shared by every request).
    """

    def __init__(self, name: str, client: LoopbackClient, spell: Callable[[str], str], warehouse: str | None,
                 check_location: LocationCheck, owner: str | None, files: MetadataFiles,
                 lock_name: Callable[[str], str] | None = None) -> None:
        properties = {HIVE2_COMPATIBLE: "true"}
        if warehouse:
            properties[WAREHOUSE_LOCATION] = warehouse
        # Not HiveCatalog.__init__: it opens a socket client from a URI.
        super(HiveCatalog, self).__init__(name, **properties)
        self._client: LoopbackClient = client
        self._lock_check_min_wait_time = 0.05
        self._lock_check_max_wait_time = 1.0
        # pyiceberg waits for a lock with retries; a commit that cannot get the table's lock in
        # about a minute fails with CommitFailedException (the client retries it).
        self._lock_check_retries = 60
        self.spell = spell
        self.lock_name = lock_name or (lambda database: database)
        self.check_location = check_location
        self.owner = owner
        self.files = files
        #: The table a commit or create works on (database as spelled, table), with its location
        #: in the metastore (None: a new table): what ``_write_metadata`` checks against.
        self._writing: tuple[str, str, str | None] | None = None

    @property
    def conn(self) -> Any:
        return self._client.conn

    # ------------------------------------------------------------ names

    def db(self, namespace: tuple[str, ...]) -> str:
        """The database a REST namespace is (one level: HMS databases do not nest)."""
        if len(namespace) != 1 or not namespace[0]:
            raise NoSuchNamespace(namespace)
        return self.spell(namespace[0])

    def _create_lock_request(self, database_name: str, table_name: str) -> Any:
        # The name an HMS 2.3 client locks (``scratch__db``): one lock per table whichever door
        # and spelling a writer comes through (lock names are not translated from ``@cat#db``).
        return super()._create_lock_request(self.lock_name(database_name), table_name)

    # ------------------------------------------------------------ reads

    def hive_table(self, database: str, table: str) -> Any:
        """The HMS table (``NoSuchTableError`` when there is none)."""
        with self._client as open_client:
            return self._get_hive_table(open_client, database, table)

    def metadata_bytes(self, hive_table: Any) -> tuple[str, bytes]:
        """(metadata location, the metadata file's JSON) of an Iceberg HMS table."""
        parameters = hive_table.parameters or {}
        if (parameters.get(TABLE_TYPE) or "").lower() != ICEBERG:
            raise NoSuchIcebergTableError(f"{hive_table.dbName}.{hive_table.tableName} is not an Iceberg table")
        location = parameters.get(METADATA_LOCATION)
        if not location:
            raise NoSuchTableError(f"{hive_table.dbName}.{hive_table.tableName} has no metadata_location")
        return location, self.files.read(location, lambda: load_file_io(self.properties, location))

    # ------------------------------------------------------------ writes

    def _convert_iceberg_into_hive(self, table: Any) -> Any:
        hive_table = super()._convert_iceberg_into_hive(table)
        if self.owner and not (table.properties and "owner" in table.properties):
            hive_table.owner = self.owner
        return hive_table

    def create_table(self, identifier: Any, schema: Any, location: str | None = None, *args: Any,
                     **kwargs: Any) -> Any:
        database, table = self.identifier_to_database_and_table(identifier)
        self._writing = (database, table, None)
        try:
            return super().create_table(identifier, schema, location, *args, **kwargs)
        finally:
            self._writing = None

    def commit_table(self, table: Any, requirements: Any, updates: Any) -> Any:
        database, name = self.identifier_to_database_and_table(table.name())
        self._writing = (database, name, table.metadata.location if table.metadata is not None else None)
        try:
            return super().commit_table(table, requirements, updates)
        finally:
            self._writing = None

    def _get_hive_table(self, open_client: Any, database_name: str, table_name: str) -> Any:
        hive_table = super()._get_hive_table(open_client, database_name, table_name)
        writing = self._writing
        if writing is not None and writing[:2] == (database_name, table_name):
            # Under the commit's lock: the location the metastore has now is the one to compare.
            self._writing = (database_name, table_name, hive_table.sd.location if hive_table.sd else None)
        return hive_table

    def _write_metadata(self, metadata: TableMetadata, io: FileIO, metadata_path: str) -> None:  # type: ignore[override]
        self.check_write(metadata, metadata_path)
        super()._write_metadata(metadata, io, metadata_path)

    def check_write(self, metadata: TableMetadata, metadata_path: str) -> None:
        """Refuse a metadata file outside its table's location, and a table location (new, or
        changed by the commit) that the catalog's rules refuse, before anything is written."""
        location = metadata.location.rstrip("/")
        if not inside(location, metadata_path):
            raise InvalidArgumentError(f"metadata file {metadata_path} would lie outside the table's location "
                                       f"{location}: catalogd writes a table's metadata inside its location "
                                       f"(leave write.metadata.path unset)")
        writing = self._writing
        if writing is None:
            return
        database, table, current = writing
        if current is not None and current.rstrip("/") == location:
            return
        what = f"table {database}.{table}"
        self.check_location(location, what, (database, table) if current is not None else None)

    def register(self, identifier: tuple[str, str], metadata_location: str) -> Any:
        """Register a table on an existing metadata file, its location checked first."""
        database, table = identifier
        io = load_file_io(self.properties, metadata_location)
        metadata = TableMetadataReader.read(self.files.read(metadata_location, io))
        if not inside(metadata.location, metadata_location):
            raise InvalidArgumentError(f"metadata file {metadata_location} lies outside its table's location "
                                       f"{metadata.location}")
        self.check_location(metadata.location.rstrip("/"), f"table {database}.{table}", None)
        return super().register_table(identifier, metadata_location)

    def default_location(self, database: str, table: str) -> str:
        """Where a new table goes without an explicit location: inside its database's directory
        (else the warehouse's ``<db>/<table>``)."""
        props = self.load_namespace_properties(database)
        base = props.get(LOCATION)
        if base:
            return f"{base.rstrip('/')}/{table}"
        return self._get_default_warehouse_location(database, table)


class TableMetadataReader:
    """Parses a metadata file's JSON with pyiceberg's own model."""

    @staticmethod
    def read(data: bytes) -> TableMetadata:
        from pyiceberg.table.metadata import TableMetadataUtil

        return TableMetadataUtil.parse_raw(data.decode())


class NoSuchNamespace(Exception):
    """A REST namespace that cannot be an HMS database (nested, or empty)."""

    def __init__(self, namespace: tuple[str, ...]) -> None:
        super().__init__(f"namespace {'.'.join(namespace) or '(empty)'} does not exist: catalogd's namespaces are "
                         "databases, one level deep")


def sd_for(metadata: TableMetadata, location: str) -> Any:
    """The storage descriptor pyiceberg's ``HiveCatalog`` gives a table of this schema."""
    return _construct_hive_storage_descriptor(metadata.schema(), location, True)


def parameters_for(metadata_location: str, previous: str | None, metadata: TableMetadata) -> dict[str, Any]:
    """The HMS parameters pyiceberg's ``HiveCatalog`` gives a table at ``metadata_location``."""
    return _construct_parameters(metadata_location, previous, metadata.properties)
