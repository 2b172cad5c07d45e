"""The hive catalog's metastore client behind the metadata cache (Trino's ``CachingHiveMetastore``).

``CachingHiveClient`` has ``HiveClient``'s interface and wraps the session's ``HiveClient``;
it inherits the typed calls and changes only ``_read`` and ``_write``, which they all go through:

* reads of the metastore's databases, tables and partitions are answered from the daemon's
  ``MetadataCache`` when it has them, and stored there on a miss;
* every write invalidates what it touched, in ``finally`` (also after a failure: the write
  may have happened before its answer was lost), and tells the session's listener;
* ``fresh()`` is the same client with reads that always go to the metastore, for code that
  decides what to write, delete or commit on what it reads (writes still invalidate).

The HMS endpoint uses the same object for the calls it relays as bytes: ``lookup`` serves a
cached read as the bytes of its answer, ``writing`` invalidates around a relayed write.

One key scheme for every reader: an entry is filed under its scope (catalog, database,
table) and keyed by ``(form, method, encoded args)``. The value is an encoded ``*_result``
struct, the body of a reply, so the endpoint sends a hit as it is and the catalog decodes
its own copy (bytes, never shared objects). ``form`` says how the bytes were made, so no
reader is handed bytes of another making: ``RAW`` the metastore's own reply as relayed,
``DECODED`` re-encoded from catalogd's IDL (the typed reads: fields the IDL does not know
are gone, so the endpoint never sends these), and the endpoint's rewritten answers (names
mapped, stages hidden) under a form naming the rewriting.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAcceleratedFactory
from thrift.TSerialization import deserialize, serialize

from catalogd.catalog.hive_api import HiveClient
from catalogd.catalog.hms_cache import MetadataCache, Scope
from catalogd.hive_idl import ThriftHiveMetastore

__all__ = ["DECODED", "FUNCTION_WRITES", "RAW", "CachingHiveClient", "Lookup", "WriteListener", "call_key",
           "written_keys"]

#: Encodes and decodes cached answers (the C extension: a 2,000-partition list in milliseconds).
_PROTOCOL = TBinaryProtocolAcceleratedFactory()

#: Forms of cached bytes (see the module docstring).
RAW = ""
DECODED = "idl"

#: Told of every write: (method, the (database, table) entries it may have changed).
WriteListener = Callable[[str, list[tuple[str, str]]], None]

#: The typed reads answered from the cache, and how many of their leading args name their
#: scope (0: the catalog's database list; 1: a database's entries; 2: a table's). The others
#: (functions, config values, batch table reads) always go to the metastore.
_CACHED_READS: dict[str, int] = {
    "get_all_databases": 0, "get_database": 1, "get_all_tables": 1, "get_tables_by_type": 1,
    "get_table": 2, "get_partitions": 2, "get_partitions_by_filter": 2, "get_partition": 2,
}

#: Writes to a database's functions: they change the database's entries (the HMS endpoint
#: files function reads there).
FUNCTION_WRITES = frozenset({"create_function", "alter_function", "drop_function"})


def call_key(method: str, args: bytes, form: str = RAW) -> tuple[str, str, bytes]:
    """The cache key of a metastore read: how its answer was made (``form``), the method,
    and its args as encoded on the wire."""
    return (form, method, args)


def written_keys(method: str, args: tuple[Any, ...]) -> list[tuple[str, str]]:
    """The (database, table) entries a metastore write may change; table "" is the database itself.

    A rename (``alter_table*`` with a new name or database) changes both the old and the new name.
    """
    if method in FUNCTION_WRITES:
        return [(args[0].dbName if method == "create_function" else str(args[0]), "")]
    if method in ("create_database", "alter_database", "drop_database"):
        name = args[0].name if method == "create_database" else args[0]
        return [(str(name), "")]
    if method == "create_table":
        return [(args[0].dbName, args[0].tableName.lower())]
    if method in ("alter_table", "alter_table_with_environment_context"):
        return [(args[0], str(args[1]).lower()), (args[2].dbName, args[2].tableName.lower())]
    if method in ("drop_table", "drop_table_with_environment_context", "alter_partitions", "drop_partition",
                  "drop_partition_with_environment_context"):
        return [(args[0], str(args[1]).lower())]
    if method == "add_partition":
        return [(args[0].dbName, args[0].tableName.lower())]
    if method == "add_partitions":
        return [(p.dbName, p.tableName.lower()) for p in args[0]]
    return []


@dataclass
class Lookup:
    """One read through the cache: the stored answer (``body``), or on a miss the means to
    store the answer fetched now (``keep``), refused if a write invalidated it meanwhile."""

    body: bytes | None
    cache: MetadataCache | None = None
    scope: Scope = ("", "", "")
    key: Hashable = None
    token: int = 0

    def keep(self, body: bytes) -> None:
        """Store the answer fetched after this lookup missed (nothing when the cache is off)."""
        if self.cache is not None and self.cache.enabled:
            self.cache.put(self.scope, self.key, body, self.token)


class CachingHiveClient(HiveClient):
    """``HiveClient`` behind the metadata cache (see the module docstring).

    Args:
        api: the session's client (or a fake one in unit tests).
        catalog: the catalog's name (the first part of every scope).
        cache: the daemon's metadata cache; None: none (reads go through, writes still tell ``on_write``).
        on_write: the session's own bookkeeping of writes (the directories it has seen).
        cached_reads: False: the fresh view (see ``fresh``).
    """

    def __init__(self, api: HiveClient, catalog: str, cache: MetadataCache | None,
                 on_write: WriteListener | None = None, cached_reads: bool = True) -> None:
        # No super().__init__: every call goes to ``api``, never to a pool of this object's own.
        self._api = api
        self.catalog = catalog
        self.cache = cache
        self._on_write = on_write
        self._cached_reads = cached_reads and cache is not None
        self._fresh = self if not self._cached_reads else None

    @property
    def enabled(self) -> bool:
        """Whether reads are stored (a cache with ``ttl`` 0 is off)."""
        return self._cached_reads and self.cache is not None and self.cache.enabled

    def fresh(self) -> CachingHiveClient:
        """This client with every read asked of the metastore (for reads that decide writes)."""
        if self._fresh is None:
            self._fresh = CachingHiveClient(self._api, self.catalog, self.cache, self._on_write, cached_reads=False)
        return self._fresh

    def close(self) -> None:
        self._api.close()

    # ------------------------------------------------------------ the cache, for every reader

    def lookup(self, scope: Scope, method: str, args: bytes, form: str = RAW) -> Lookup:
        """Look a read up (``scope`` names this catalog); on a miss the ``Lookup`` stores what
        the caller then fetches. The fresh view always misses and stores nothing."""
        cache = self.cache
        if not self._cached_reads or cache is None:
            return Lookup(None)
        key = call_key(method, args, form)
        body = cache.get(scope, key)  # off (ttl 0): a miss, counted
        if body is not None:
            return Lookup(body)
        return Lookup(None, cache, scope, key, cache.token(scope))

    @contextmanager
    def writing(self, method: str, keys: list[tuple[str, str]]) -> Iterator[None]:
        """Around a write that may change ``keys`` ((database, table); none: anything in the
        catalog): invalidate them when it ends, however it ends."""
        try:
            yield
        finally:
            self.invalidate(method, keys)

    def invalidate(self, method: str, keys: list[tuple[str, str]]) -> None:
        """Forget what a write may have changed, before its caller learns it is done: the
        next read (this client's or any other's) must not be served the old answer."""
        cache = self.cache
        if cache is not None:
            for database, table in keys:
                # A write naming no database (a struct without dbName): all of the catalog.
                cache.invalidate(self.catalog, str(database or ""), str(table or "") if database else "")
            if not keys:
                cache.invalidate(self.catalog)  # a write this module does not know: all of the catalog
        if self._on_write is not None:
            self._on_write(method, keys)

    def _read(self, method: str, *args: Any) -> Any:
        """A typed read: through the cache when it is one of ``_CACHED_READS``."""
        depth = _CACHED_READS.get(method)
        if depth is None or not self._cached_reads:
            return getattr(self._api, method)(*args)
        names = [str(a) for a in args[:depth]] + ["", ""]
        scope = (self.catalog, names[0], names[1])
        found = self.lookup(scope, method, serialize(getattr(ThriftHiveMetastore, f"{method}_args")(*args),
                                                     _PROTOCOL), DECODED)
        result_type = getattr(ThriftHiveMetastore, f"{method}_result")
        if found.body is not None:
            return deserialize(result_type(), found.body, _PROTOCOL).success
        value = getattr(self._api, method)(*args)
        if found.cache is not None and found.cache.enabled:
            found.keep(serialize(result_type(success=value), _PROTOCOL))
        return value

    def _write(self, method: str, *args: Any, **kwargs: Any) -> Any:
        with self.writing(method, written_keys(method, args)):
            return getattr(self._api, method)(*args, **kwargs)
