"""``DELETE .../tables/{table}?purgeRequested=true``: drop an Iceberg table and delete its files.

Deleting files is the most dangerous thing catalogd does, and an Iceberg table's metadata may
name any file (a registered table, a hand-written manifest). A purge deletes only:

* files the table's metadata reaches (its metadata files, manifest lists, manifests, data and
  delete files, statistics files),
* that lie strictly inside the table's own location,
* when that location is the table's alone: inside the catalog's allowed locations and clear of
  every other object's directory (the check a create makes; a location shared with another
  object, or outside what catalogd owns, refuses the purge before anything is dropped).

Anything else the metadata names is left where it is (and counted in the log line).
"""

from __future__ import annotations

import logging
from typing import Any

from pyiceberg.io import load_file_io
from pyiceberg.manifest import ManifestFile

from catalogd.errors import PermissionDeniedError
from catalogd.iceberg.tables import TableMetadataReader, WarehouseCatalog, inside

logger = logging.getLogger(__name__)

__all__ = ["purge_table", "reachable_files"]


def reachable_files(metadata: Any, metadata_location: str, io: Any) -> set[str]:
    """Every file a table's metadata reaches."""
    files = {metadata_location}
    files.update(entry.metadata_file for entry in metadata.metadata_log)
    for stats in list(getattr(metadata, "statistics", []) or []) + list(getattr(metadata, "partition_statistics", [])
                                                                         or []):
        path = getattr(stats, "statistics_path", None)
        if path:
            files.add(path)
    manifests: dict[str, ManifestFile] = {}
    for snapshot in metadata.snapshots:
        files.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(io):
            manifests[manifest.manifest_path] = manifest
    for path, manifest in manifests.items():
        files.add(path)
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
            files.add(entry.data_file.file_path)
    return files


def purge_table(wh: WarehouseCatalog, database: str, table: str, hive_table: Any) -> int:
    """Drop the table, then delete the files of its own that its metadata reaches; the count deleted.

    Raises:
        PermissionDeniedError: the table's location is not its alone to delete (nothing dropped).
    """
    metadata_location, data = wh.metadata_bytes(hive_table)
    metadata = TableMetadataReader.read(data)
    location = metadata.location.rstrip("/")
    what = f"table {database}.{table}"
    try:
        wh.check_location(location, what, (database, table))
    except PermissionDeniedError as e:
        raise PermissionDeniedError(f"purge of {what} refused: its location {location} is not its own to delete "
                                    f"({e.message}); drop it without purgeRequested to keep the files") from None
    io = load_file_io(wh.properties, metadata_location)
    files = reachable_files(metadata, metadata_location, io)
    wh.drop_table((database, table))
    deleted = kept = 0
    for path in sorted(files):
        if not inside(location, path):
            kept += 1
            continue
        try:
            io.delete(path)
            deleted += 1
        except FileNotFoundError:
            pass
        except OSError as e:
            logger.warning("purge of %s: could not delete %s: %s", what, path, e)
    logger.info("purged %s: %d files deleted, %d outside its location kept", what, deleted, kept)
    return deleted
