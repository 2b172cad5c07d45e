"""The HMS session of one hive catalog: a pooled, typed metastore client whose errors come out as catalogd errors.

``HiveSession.client(what)`` lends the typed client (``hive_api.HiveClient``, behind the
metadata cache: ``caching_client.CachingHiveClient``) for a block and turns every HMS
exception raised in the block into a catalogd error naming ``what``, in pyiceberg's style::

    with session.client(f"table {name}", TableNotFoundError) as c:
        tbl = c.get_table(database, table)

Its reads go to the metastore unless the block asks for ``cached=True`` (user-facing reads);
its writes always invalidate what they touched in the cache.

The session also owns the metastore's lifecycle (an embedded one is supervised:
restarted when it dies, calls failing at once meanwhile), the per-object locks
that the catalog and its stager share, and every decision to delete files: it
creates tables only at allowed locations and drops tables, partitions and
databases so that the metastore deletes a directory only when
``catalogd.catalog.locations`` says catalogd may. HMS Thrift types stop at
the ``catalogd.catalog.hive*`` modules; the pool, retries and failover are in
``catalogd.metastore.client``.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from thrift.Thrift import TApplicationException

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.base import is_stage_table
from catalogd.catalog.caching_client import FUNCTION_WRITES, CachingHiveClient
from catalogd.catalog.hive_api import HiveClient
from catalogd.catalog.hive_location_tracker import LocationTracker
from catalogd.catalog.hms_cache import MetadataCache
from catalogd.catalog.locations import (
    Location,
    Occupant,
    Roots,
    claim_conflict,
    deletion_blocker,
)
from catalogd.errors import (
    AlreadyExistsError,
    CatalogError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    MetastoreUnavailableError,
    NotFoundError,
    PartitionNotFoundError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.hive_idl import ttypes as hms
from catalogd.metastore.access_key import KeySource
from catalogd.metastore.client import MetastoreClient, parse_uris
from catalogd.metastore.embedded import EmbeddedMetastore
from catalogd.metastore.sasl import MetastoreKerberos
from catalogd.metastore.supervisor import MetastoreSupervisor
from catalogd.model import Table

logger = logging.getLogger(__name__)


@contextmanager
def translate(
    what: str,
    not_found: type[NotFoundError] = NotFoundError,
    exists: type[AlreadyExistsError] = AlreadyExistsError,
) -> Iterator[None]:
    """Turn HMS exceptions raised in the block into catalogd errors that name ``what``."""
    try:
        yield
    except CatalogError:
        raise
    except hms.NoSuchObjectException as e:
        # The metastore's own words ("sales.ordres table not found") only repeat ours: the log keeps them.
        logger.debug("%s: metastore says: %s", what, e.message)
        raise not_found(f"{what} does not exist") from e
    except hms.AlreadyExistsException as e:
        raise exists(f"{what} already exists") from e
    except (hms.InvalidObjectException, hms.InvalidInputException, hms.InvalidPartitionException) as e:
        raise InvalidArgumentError(f"{what}: {e.message}") from e
    except hms.InvalidOperationException as e:
        if "not empty" in (e.message or "").lower():
            raise DatabaseNotEmptyError(f"{what} is not empty; drop it with cascade") from e
        raise InvalidArgumentError(f"{what}: {e.message}") from e
    except hms.MetaException as e:
        message = e.message or ""
        lower = message.lower()
        if "permission" in lower or "authoriz" in lower or "privilege" in lower:
            raise PermissionDeniedError(f"{what}: {message}") from e
        if "can not drop default database" in lower:
            raise InvalidArgumentError(f"{what}: the default database cannot be dropped") from e
        if "does not exist" in lower or "doesn't exist" in lower:
            logger.debug("%s: metastore says: %s", what, message)
            raise not_found(f"{what} does not exist") from e
        raise MetastoreUnavailableError(f"{what}: metastore error: {message}") from e
    except TApplicationException as e:
        if e.type == TApplicationException.UNKNOWN_METHOD:
            raise UnsupportedError(f"{what}: this metastore does not support the call ({e.message})") from e
        raise MetastoreUnavailableError(f"{what}: metastore failed: {e.message}") from e


@dataclasses.dataclass(frozen=True)
class TablesRead:
    """Tables of one database read in one call (``HiveSession.read_tables``): by lower-case
    name, and the location index's write number the read came after."""

    number: int
    tables: dict[str, hms.Table]
    #: The partitions of the partitioned managed ones, read with them (a drop judges each).
    partitions: dict[str, list[hms.Partition]] = dataclasses.field(default_factory=dict)


class HiveSession:
    """One hive catalog's connection to its metastore (see the module docstring).

    Args:
        name: the catalog's name.
        uris: remote metastore addresses; empty when ``embedded`` is given.
        embedded: a metastore this session starts and stops itself.
        username: given to HMS (``set_ugi``) and made the owner of new objects.
        max_concurrent_calls: metastore calls in flight at once; more fail at once with
            metastore-unavailable (a hung metastore holds no more of the daemon's threads).
        allowed_locations: the catalog's ``allowed-locations``; None: its warehouse.
        default_fs: (scheme, authority) of locations given as bare paths (``file`` for an
            embedded metastore); None: bare paths are refused.
        cache: the daemon's metadata cache; every write through this session invalidates
            what it touched there. None: no cache.
        locations_file: where the location index is saved between runs (None: not saved).
        identity: which metastore this is (a saved index of another one is not used).
        kerberos: reach a kerberized metastore (``hive.metastore.sasl.enabled``) this way, for the
            catalog's own calls and the HMS endpoint's relayed ones; None: plain Thrift.
    """

    def __init__(
        self,
        name: str,
        uris: list[tuple[str, int]] | None = None,
        embedded: EmbeddedMetastore | None = None,
        username: str | None = None,
        connect_timeout: float = 5.0,
        socket_timeout: float = 60.0,
        max_concurrent_calls: int | None = None,
        allowed_locations: list[str] | None = None,
        default_fs: tuple[str, str] | None = None,
        cache: MetadataCache | None = None,
        locations_file: Path | None = None,
        identity: str = "",
        kerberos: MetastoreKerberos | None = None,
        key: KeySource | None = None,
    ) -> None:
        if not uris and embedded is None:
            raise InvalidArgumentError(f"catalog {name}: give metastore URIs or an embedded metastore")
        self.name = name
        self.username = username
        self.embedded = embedded
        self._kerberos = kerberos
        # An embedded metastore's own key, else the one configured for a remote one (if any).
        self._key = embedded.key if embedded is not None else key
        self.cache = cache
        self._uris = list(uris or [])
        self._connect_timeout = connect_timeout
        self._socket_timeout = socket_timeout
        self._max_concurrent_calls = max_concurrent_calls
        #: Restarts the embedded metastore when it dies (None for a remote one).
        self.supervisor: MetastoreSupervisor | None = None
        #: The connection pool, once open.
        self.pool: MetastoreClient | None = None
        #: The typed client behind the cache, once open (``attach``: a fake one).
        self.api: CachingHiveClient | None = None
        self._guard = threading.Lock()
        # Reentrant: a drop holds its table's lock while the stager purges that table's retired data.
        self._target_locks: dict[tuple[str, str], threading.RLock] = {}
        self.allowed_locations = allowed_locations
        self.default_fs = default_fs
        #: The warehouse URI, when the catalog knows it (else asked from HMS).
        self.warehouse: str | None = None
        self._roots: Roots | None = None
        #: Held while a location is checked and claimed, and while a drop decides and deletes:
        #: no directory is handed to a new object between a drop's check and its deletion.
        self._files = threading.RLock()
        #: The directories of the catalog's objects, kept current (``hive_location_tracker``).
        self.locations = LocationTracker(name, lambda what: self.client(what), self._location, locations_file,
                                         identity, indexed=(codec.DYNAMIC_FRESHNESS,))

    # ------------------------------------------------------------ lifecycle

    def open(self, timeout: float = 60.0) -> None:
        """Start the embedded metastore (if any), connect, and wait until HMS answers."""
        if self.embedded is not None:
            self.embedded.start()
            self._uris = parse_uris(self.embedded.uri)
        self.pool = MetastoreClient(self._uris, self._connect_timeout, self._socket_timeout, self.username,
                                    max_in_flight=self._max_concurrent_calls, name=f"catalog {self.name}",
                                    kerberos=self._kerberos, key=self._key)
        self.api = CachingHiveClient(HiveClient(self.pool), self.name, self.cache, self._written)
        # The port may open before HMS serves requests; wait for a real answer.
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._ping_pool()
                break
            except MetastoreUnavailableError:
                if self.embedded is None or time.monotonic() > deadline:
                    self.close()
                    raise
                time.sleep(0.3)
        if self.embedded is not None:
            self.supervisor = MetastoreSupervisor(self.embedded, on_restart=self.pool.reset)
            self.supervisor.start()
        self.locations.start()

    def close(self) -> None:
        self.locations.stop()
        if self.api is not None:
            self.api.close()
        if self.supervisor is not None:
            self.supervisor.stop()
        elif self.embedded is not None:
            self.embedded.stop()

    def attach(self, api: HiveClient) -> None:
        """Serve this session's calls with ``api`` (unit tests: a fake client; no metastore is started).

        No background passes over the locations: the first judgment reads them (and
        ``locations.reconcile()`` again)."""
        self.api = CachingHiveClient(api, self.name, self.cache, self._written)

    def cached_calls(self) -> CachingHiveClient:
        """The typed client behind the metadata cache (the HMS endpoint reads and invalidates
        through it, as the catalog does).

        Raises:
            MetastoreUnavailableError: the session is not open.
        """
        if self.api is None:
            raise MetastoreUnavailableError(f"catalog {self.name} is not open")
        return self.api

    def addresses(self) -> list[tuple[str, int]]:
        """The metastore's (host, port) addresses as now known (an embedded one's after it started)."""
        if self.pool is not None:
            return list(self.pool.uris)
        return list(self._uris)

    @property
    def connect_timeout(self) -> float:
        return self._connect_timeout

    @property
    def socket_timeout(self) -> float:
        return self._socket_timeout

    @property
    def max_concurrent_calls(self) -> int | None:
        return self._max_concurrent_calls

    @property
    def kerberos(self) -> MetastoreKerberos | None:
        return self._kerberos

    @property
    def key(self) -> KeySource | None:
        return self._key

    def check_up(self) -> None:
        """Raises MetastoreUnavailableError while the embedded metastore is being restarted."""
        self._check_up()

    @property
    def metastore(self) -> str:
        """The metastore's addresses as ``thrift://h:p,...`` (empty when not known yet)."""
        if self.pool is not None:
            return self.pool.uri_string
        return ",".join(f"thrift://{h}:{p}" for h, p in self._uris)

    def ping(self, timeout: float | None = None) -> None:
        """Check that the metastore answers; with ``timeout``, give up after that many seconds
        (on a connection of its own: a hung metastore never holds a health check longer).

        Raises:
            MetastoreUnavailableError: it does not answer (or is being restarted).
        """
        if timeout is None or self.pool is None:
            self._ping_pool()
            return
        self._check_up()
        try:
            self.pool.probe(timeout)
        except MetastoreUnavailableError as e:
            raise MetastoreUnavailableError(f"catalog {self.name}: {e.message}") from None

    def _ping_pool(self) -> None:
        with self.client("ping") as c:
            c.get_all_databases()

    def _check_up(self) -> None:
        problem = self.supervisor.problem if self.supervisor is not None else None
        if problem is not None:
            raise MetastoreUnavailableError(problem)

    # ------------------------------------------------------------ calls

    @contextmanager
    def client(
        self,
        what: str,
        not_found: type[NotFoundError] = NotFoundError,
        exists: type[AlreadyExistsError] = AlreadyExistsError,
        cached: bool = False,
    ) -> Iterator[HiveClient]:
        """Lend the typed client for a block; HMS exceptions leave it as catalogd errors naming ``what``.

        ``cached``: its reads may be answered from the metadata cache (for reads shown to a
        user); otherwise they go to the metastore (for reads that decide what to write,
        delete or commit). Writes invalidate the cache either way.
        """
        with translate(what, not_found, exists):
            if self.api is None:
                raise MetastoreUnavailableError(f"catalog {self.name} is not open")
            # A metastore being restarted fails the call now, not after a connect timeout.
            self._check_up()
            yield self.api if cached else self.api.fresh()

    @contextmanager
    def target_lock(self, database: str, target: str) -> Iterator[None]:
        """DDL on one table (create, drop, rename, alter, partitions) and the commits and aborts
        of its stages run one at a time in this daemon; ``target`` empty: DDL on the database.

        HMS 2.3 checks that a rename's destination is free and then moves the files
        in separate steps: two renames onto one name at once could both pass the check.
        And it deletes a dropped table's directory after the drop: a table re-created
        under the same name in between would lose its directory.
        """
        with self._guard:
            lock = self._target_locks.setdefault((database, target), threading.RLock())
        with lock:
            yield

    # ------------------------------------------------------------ locations

    def roots(self) -> Roots:
        """The allowed roots: ``allowed-locations``, else the warehouse (asked from HMS when not known).

        Raises:
            InvalidArgumentError: an allowed location is not a location.
        """
        with self._guard:
            if self._roots is not None:
                return self._roots
        warehouse = self.warehouse
        if warehouse is None:
            with self.client("get warehouse dir") as c:
                warehouse = c.get_config_value("hive.metastore.warehouse.dir", "") or None
        if warehouse and warehouse.startswith("/") and self.default_fs is None:
            # A bare path: HMS qualified the default database's location (the warehouse
            # root) with its file system; take that file system from there.
            with self.client("database default") as c:
                qualified = c.get_database("default").locationUri or ""
            if qualified.rstrip("/").endswith(warehouse.rstrip("/")):
                warehouse = qualified
        self.warehouse = warehouse
        uris = self.allowed_locations if self.allowed_locations is not None else [warehouse] if warehouse else []
        roots = Roots(uris, self.default_fs)
        if not roots.roots:
            logger.warning("catalog %s: no allowed locations (no warehouse known): every explicit location is "
                           "refused and drops delete no files", self.name)
        with self._guard:
            self._roots = roots
        return roots

    def _location(self, uri: str | None) -> Location | None:
        """A location as stored in HMS, normalised (None: none, or one catalogd cannot read)."""
        if not uri:
            return None
        try:
            return self.roots().parse(uri)
        except InvalidArgumentError:
            logger.debug("catalog %s: location %r cannot be compared", self.name, uri)
            return None

    def _written(self, method: str, keys: list[tuple[str, str]]) -> None:
        """A write through this catalog's client (or relayed by the HMS endpoint) may have
        changed ``keys`` (it may also have failed): the directories there are read again before
        the next judgment. The client has invalidated the metadata cache already."""
        if method in FUNCTION_WRITES:  # functions have no directories
            return
        self.locations.written(method, keys)

    def occupants(self) -> list[Occupant]:
        """Every directory the catalog's databases, tables and partitions use, as the location
        index knows them (partitions inside their own table's directory left out). Reads no
        more than the objects written since the last judgment; judgments ask
        :meth:`occupants_around` instead."""
        self.locations.current()
        return self.locations.all()

    def occupants_around(self, location: Location) -> list[Occupant]:
        """The objects whose directories are ``location``, lie inside it or contain it: the only
        ones a claim of, or a deletion at, ``location`` depends on. Call with the files lock held.

        Raises:
            MetastoreUnavailableError: the locations are still being read after start (see ``hive_location_tracker``).
        """
        self.locations.current()
        return self.locations.around(location)

    def claim(self, uri: str, what: str, own_table: tuple[str, str] | None = None,
              check_others: bool = True, within: tuple[str, str] | None = None) -> Location:
        """Check a new object's directory: strictly inside an allowed root and (``check_others``)
        clear of every other object's directory. Call with the files lock held.

        Args:
            within: a table whose directory it may lie inside: the target of the stage whose
                partition it is, when the caller has checked catalogd's signature on the stage.

        Raises:
            PermissionDeniedError: it is not.
        """
        location = self.roots().confine(uri, what)
        if check_others:
            occupants = self.occupants_around(location)
            if within is not None:
                occupants = [o for o in occupants
                             if not (o.kind == "table" and (o.database, o.table.lower()) == within)]
            conflict = claim_conflict(location, occupants, own_table)
            if conflict:
                raise PermissionDeniedError(f"{what}: location {location} cannot be used: {conflict}")
        return location

    @contextmanager
    def files(self) -> Iterator[None]:
        """The files lock (see ``_files``)."""
        with self._files:
            yield

    def create_table(self, table: Table, database_location: str | None = None) -> hms.Table:
        """Create a checked table (staging tables too) and return it as HMS stored it.

        Its directory (given, or the default one under its database) must be strictly
        inside an allowed root, and, unless it is a staging table (whose directory
        catalogd chooses), clear of every other object's directory.

        Args:
            database_location: the database's location, when the caller has just read it
                (saves reading it again for the default directory).

        Raises:
            PermissionDeniedError: the directory is not allowed.
        """
        what = f"table {self.name}.{table.database}.{table.name}"
        with self._files:
            if table.location:
                uri = table.location
            elif database_location is not None:
                uri = f"{database_location.rstrip('/')}/{table.name.lower()}"
            else:
                with self.client(f"database {self.name}.{table.database}", DatabaseNotFoundError) as c:
                    db_location = c.get_database(table.database).locationUri or ""
                uri = f"{db_location.rstrip('/')}/{table.name.lower()}"
            location = self.claim(uri, what, check_others=not is_stage_table(table.name))
            if table.location:
                # What was checked is what HMS gets: no spelling left for it to read differently.
                table = dataclasses.replace(table, location=location.uri)
            with self.client(what, TableNotFoundError, TableAlreadyExistsError) as c:
                c.create_table(codec.to_hms_table(table, self.username))
        with self.client(what, TableNotFoundError) as c:
            stored = c.get_table(table.database, table.name)
            if codec.needs_spark_path(table):
                # Spark finds a data source table's files through the `path` serde
                # parameter; HMS chose the location only now.
                codec.set_spark_path(stored, stored.sd.location)
                c.alter_table(table.database, table.name, stored)
        return stored

    # ------------------------------------------------------------ drops

    def _managed(self, tbl: hms.Table) -> bool:
        """Whether HMS deletes this table's files on a drop (a managed table; views have none).

        An external table with ``external.table.purge`` counts too: HMS 3.1+ deletes its files,
        and HMS 4 makes every managed table of a Hive 2.3 client (Spark's) such a table
        (``TRANSLATED_TO_EXTERNAL``); it is judged by the managed tables' rules (HMS 2.3
        ignores the parameter and keeps the files whatever catalogd passes)."""
        params: dict[str, str] = tbl.parameters or {}
        if tbl.tableType == codec.VIRTUAL_VIEW:
            return False
        return params.get("EXTERNAL", "").upper() != "TRUE" or params.get("external.table.purge", "").upper() == "TRUE"

    def _others(self, location: Location, database: str, name: str) -> list[Occupant]:
        """The objects in or around ``location`` but table ``database.name`` (and its partitions)
        and its own stages (whose directories go with it; a stage may sit inside its target)."""
        return [o for o in self.occupants_around(location)
                if (o.kind == "database" or (o.database, o.table) != (database, name))
                and not (o.database == database and o.stage_of == name)]

    def _table_deletion(self, tbl: hms.Table, parts: list[hms.Partition] | None = None,
                        ) -> tuple[bool, list[list[str]], str | None]:
        """Whether the metastore may delete a managed table's files on its drop: (delete, the
        partitions to drop first without their files, why nothing is deleted). ``parts``: its
        partitions as read with it (else read now)."""
        database, name = tbl.dbName, tbl.tableName
        roots = self.roots()
        own = roots.deletable(tbl.sd.location if tbl.sd else None)
        if own is None:
            return False, [], f"its location {tbl.sd.location if tbl.sd else None} is not inside the allowed " \
                              f"locations ({roots})"
        others = self._others(own, database, name)
        exempt = set()
        if is_stage_table(name):
            exempt.add((database, (tbl.parameters or {}).get(codec.STAGE_PREFIX + "target", "")))
        blocker = deletion_blocker(own, others, exempt)
        if blocker:
            # The index may lag a change made behind this daemon's back (another daemon on the same
            # metastore moved the blocking table away): the objects around are read again, once,
            # before files are kept for good (a stage's replaced data would be left forever).
            around = sorted({(o.database, o.table) for o in others if o.kind != "database"})
            if around:
                self.locations.written("recheck", around)
                self.locations.current()
                blocker = deletion_blocker(own, self._others(own, database, name), exempt)
        if blocker:
            return False, [], blocker
        kept: list[list[str]] = []
        if tbl.partitionKeys:
            if parts is None:
                with self.client(f"table {self.name}.{database}.{name}", TableNotFoundError) as c:
                    parts = c.get_partitions(database, name, -1)
            for part in parts:
                loc = roots.deletable(part.sd.location if part.sd else None)
                if loc is not None and own.contains(loc):
                    continue
                if loc is None or deletion_blocker(loc, self._others(loc, database, name), exempt | {(database, name)}):
                    kept.append(list(part.values))
        return True, kept, None

    def truncation_blocker(self, tbl: hms.Table, parts: list[hms.Partition] | None = None) -> str | None:
        """Why the metastore may not empty a table's directories on a truncate (None: it may).

        Judged as a drop of the table (``parts`` None: all of it) or of those partitions would
        judge their files, but all or nothing: a truncate cannot keep some of them. Call with the
        files lock held.
        """
        if not self._managed(tbl):
            return "it is not a managed table (catalogd deletes only the files of what it owns)"
        if parts is None:
            delete, kept, why = self._table_deletion(tbl)
            if not delete:
                return why
            if kept:
                return f"the directories of partitions {kept} are outside the allowed locations or used by another " \
                       "object"
            return None
        for part in parts:
            why = self._partition_deletion(tbl, part)
            if why:
                return f"partition {list(part.values or [])}: {why}"
        return None

    def read_tables(self, database: str, names: list[str]) -> TablesRead:
        """Read ``names`` of ``database`` in one metastore call, for ``drop_table(read=...)``
        (a cascade drops a database's tables a batch at a time, not a read and a drop each).

        A table missing from the answer (gone meanwhile) is read again by its drop. When the
        batch call fails (HMS 2.3 answers it with no result when a table of the batch goes
        meanwhile) the answer is empty: each drop reads its table itself.
        """
        number = self.locations.number()
        try:
            with self.client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
                tables = c.get_table_objects_by_name(database, names)
        except MetastoreUnavailableError as e:
            logger.debug("catalog %s: reading %d tables of %s at once: %s", self.name, len(names), database, e)
            tables = []
        read = TablesRead(number, {t.tableName.lower(): t for t in tables if t is not None and t.tableName})
        for name, tbl in read.tables.items():
            if tbl.partitionKeys and self._managed(tbl):
                try:
                    with self.client(f"table {self.name}.{database}.{name}", TableNotFoundError) as c:
                        read.partitions[name] = c.get_partitions(database, tbl.tableName, -1)
                except TableNotFoundError:
                    pass  # gone meanwhile: its drop reads it again
        return read

    def drop_table(self, database: str, name: str, purge: bool = False, read: TablesRead | None = None) -> None:
        """Drop a table; the metastore deletes its files only where catalogd may delete them.

        A managed table's directory (and its partitions' directories) is deleted when it
        is strictly inside an allowed root, holds no other object's directory and lies in
        no other table's or partition's directory. Otherwise the table is only
        unregistered and its files stay (logged).

        Args:
            read: the table as ``read_tables`` read it; used when no write through catalogd
                has touched it since (else it is read again, as without).

        Raises:
            TableNotFoundError: no such table.
        """
        what = f"table {self.name}.{database}.{name}"
        with self._files:
            tbl = read.tables.get(name.lower()) if read is not None else None
            parts = read.partitions.get(name.lower()) if read is not None else None
            if tbl is None or self.locations.written_since(database, name, read.number if read else 0):
                with self.client(what, TableNotFoundError) as c:
                    tbl = c.get_table(database, name)
                parts = None
            delete, kept, reason = self._table_deletion(tbl, parts) if self._managed(tbl) else (False, [], None)
            with self.client(what, TableNotFoundError) as c:
                for values in kept:
                    c.drop_partition(database, name, values, False)
                # Not beside a background pass's read of its partitions: on Derby the two deadlock.
                with self.locations.dropping(database, name):
                    c.drop_table_with_environment_context(database, name, delete, codec.purge_context(purge))
            self.locations.gone(database, name)  # known gone: no need to read it again
        if reason:
            logger.warning("%s dropped; its files were left in place: %s", what, reason)
        elif kept:
            logger.warning("%s dropped; the files of %d partition(s) outside its directory were left in place "
                           "(outside the allowed locations or used by another object)", what, len(kept))

    def _partition_deletion(self, tbl: hms.Table, part: hms.Partition) -> str | None:
        """Why the metastore may not delete a partition's directory on its drop (None: it may)."""
        roots = self.roots()
        loc = roots.deletable(part.sd.location if part.sd else None)
        if loc is None:
            return f"its location {part.sd.location if part.sd else None} is not inside the allowed " \
                   f"locations ({roots})"
        name = codec.partition_name(tbl.partitionKeys, part.values)
        others = [o for o in self.occupants_around(loc)
                  if not (o.kind == "partition" and (o.database, o.table, o.partition) == (tbl.dbName, tbl.tableName,
                                                                                          name))]
        blocker = deletion_blocker(loc, others, {(tbl.dbName, tbl.tableName)})
        if blocker:
            return blocker
        # HMS also deletes the partition directory's empty parents, one level per partition
        # key but the last: they must be inside the table's directory.
        table_loc = self._location(tbl.sd.location if tbl.sd else None)
        parent = loc
        for _ in range(len(part.values) - 1):
            parent = parent.parent()
            if table_loc is None or not table_loc.strictly_contains(parent):
                return f"the metastore would also remove its empty parent {parent}, outside the table's directory"
        return None

    def drop_partition(self, database: str, table: str, values: list[str], purge: bool = False) -> None:
        """Drop a partition; the metastore deletes its directory only where catalogd may (see ``drop_table``).

        Raises:
            NotFoundError: no such table or partition.
        """
        what = f"table {self.name}.{database}.{table}"
        with self._files:
            with self.client(what, TableNotFoundError) as c:
                tbl = c.get_table(database, table)
            name = codec.partition_name(tbl.partitionKeys, values)
            what = f"partition {name} of {what}"
            with self.client(what, PartitionNotFoundError) as c:
                part = c.get_partition(database, table, values)
            reason = self._partition_deletion(tbl, part) if self._managed(tbl) else None
            # A partition inside its table's directory is not in the location index: its drop changes nothing there.
            table_loc = self._location(tbl.sd.location if tbl.sd else None)
            part_loc = self._location(part.sd.location if part.sd else None)
            inside = table_loc is not None and part_loc is not None and table_loc.contains(part_loc) \
                and self.locations.is_current(database, table)
            with self.client(what, PartitionNotFoundError) as c:
                c.drop_partition_with_environment_context(database, table, values, self._managed(tbl) and not reason,
                                                          codec.purge_context(purge))
            if inside:
                self.locations.unchanged(database, table)
        if reason:
            logger.warning("%s dropped; its files were left in place: %s", what, reason)

    def drop_database(self, name: str) -> None:
        """Drop an empty database (no tables, no functions); the metastore deletes its directory
        only where catalogd may (see ``drop_table``).

        Raises:
            DatabaseNotFoundError: no such database.
            DatabaseNotEmptyError: it holds tables or functions (again).
        """
        what = f"database {self.name}.{name}"
        with self._files:
            with self.client(what, DatabaseNotFoundError) as c:
                db = c.get_database(name)
            roots = self.roots()
            loc = roots.deletable(db.locationUri)
            if loc is None:
                reason: str | None = f"its location {db.locationUri} is not inside the allowed locations ({roots})"
            else:
                others = [o for o in self.occupants_around(loc) if not (o.kind == "database" and o.database == name)]
                reason = deletion_blocker(loc, others)
            with self.client(what, DatabaseNotFoundError) as c:
                c.drop_database(name, reason is None, False)
        if reason:
            logger.warning("%s dropped; its directory was left in place: %s", what, reason)
