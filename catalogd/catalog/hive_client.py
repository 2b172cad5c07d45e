"""The HMS session of one hive catalog: a pooled, typed metastore client whose errors come out as catalogd errors.

``HiveClient`` has one typed method for each HMS call catalogd makes (and says
which of them are safe to retry); ``HiveSession.client(what)`` lends it for a
block and turns every HMS exception raised in the block into a catalogd error
naming ``what``, in pyiceberg's style::

    with session.client(f"table {name}", TableNotFoundError) as c:
        tbl = c.get_table(database, table)

The session also owns the metastore's lifecycle (an embedded one is supervised:
restarted when it dies, calls failing at once meanwhile) and the per-target locks
that the catalog and its stager share. HMS Thrift types stop at the
``catalogd.catalog.hive*`` modules; the pool, retries and failover are in
``catalogd.metastore.client``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, cast

from hmsclient.genthrift.hive_metastore import ttypes as hms
from thrift.Thrift import TApplicationException

from catalogd.catalog import hive_codec as codec
from catalogd.errors import (
    AlreadyExistsError,
    CatalogError,
    DatabaseNotEmptyError,
    InvalidArgumentError,
    MetastoreUnavailableError,
    NotFoundError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.metastore.client import MetastoreClient, parse_uris
from catalogd.metastore.embedded import EmbeddedMetastore
from catalogd.metastore.supervisor import MetastoreSupervisor
from catalogd.model import Table

logger = logging.getLogger(__name__)


class RpcPool(Protocol):
    """What HiveClient needs of ``MetastoreClient``: run one RPC by name."""

    def call(self, method: str, *args: Any, idempotent: bool = True) -> Any: ...

    def close(self) -> None: ...


class HiveClient:
    """The HMS calls catalogd makes, typed; HMS's own exceptions pass through.

    Reads are retried once on a broken connection (on a fresh one, which fails
    over); writes are not, since they may have run before the connection broke.

    Args:
        pool: runs the RPCs (``MetastoreClient``, or a fake in unit tests).
    """

    def __init__(self, pool: RpcPool) -> None:
        self._pool = pool

    def close(self) -> None:
        self._pool.close()

    def _read(self, method: str, *args: Any) -> Any:
        return self._pool.call(method, *args, idempotent=True)

    def _write(self, method: str, *args: Any) -> Any:
        return self._pool.call(method, *args, idempotent=False)

    # ------------------------------------------------------------ metastore

    def get_config_value(self, name: str, default: str) -> str:
        return cast(str, self._read("get_config_value", name, default))

    # ------------------------------------------------------------ databases

    def get_all_databases(self) -> list[str]:
        return list(self._read("get_all_databases"))

    def get_database(self, name: str) -> hms.Database:
        return self._read("get_database", name)

    def create_database(self, database: hms.Database) -> None:
        self._write("create_database", database)

    def alter_database(self, name: str, database: hms.Database, *, retry: bool = False) -> None:
        """``retry``: the caller knows that running it twice does no harm."""
        self._pool.call("alter_database", name, database, idempotent=retry)

    def drop_database(self, name: str, delete_data: bool, cascade: bool) -> None:
        self._write("drop_database", name, delete_data, cascade)

    # ------------------------------------------------------------ tables

    def get_all_tables(self, database: str) -> list[str]:
        return list(self._read("get_all_tables", database))

    def get_tables_by_type(self, database: str, pattern: str, table_type: str) -> list[str]:
        return list(self._read("get_tables_by_type", database, pattern, table_type))

    def get_table(self, database: str, name: str) -> hms.Table:
        return self._read("get_table", database, name)

    def get_table_objects_by_name(self, database: str, names: list[str]) -> list[hms.Table]:
        return list(self._read("get_table_objects_by_name", database, names))

    def create_table(self, table: hms.Table) -> None:
        self._write("create_table", table)

    def alter_table(self, database: str, name: str, table: hms.Table) -> None:
        self._write("alter_table", database, name, table)

    def alter_table_with_environment_context(self, database: str, name: str, table: hms.Table,
                                             context: hms.EnvironmentContext) -> None:
        self._write("alter_table_with_environment_context", database, name, table, context)

    def drop_table(self, database: str, name: str, delete_data: bool) -> None:
        self._write("drop_table", database, name, delete_data)

    def drop_table_with_environment_context(self, database: str, name: str, delete_data: bool,
                                            context: hms.EnvironmentContext) -> None:
        self._write("drop_table_with_environment_context", database, name, delete_data, context)

    # ------------------------------------------------------------ partitions

    def get_partitions(self, database: str, table: str, max_parts: int = -1) -> list[hms.Partition]:
        return list(self._read("get_partitions", database, table, max_parts))

    def get_partitions_by_filter(self, database: str, table: str, filter: str,
                                 max_parts: int = -1) -> list[hms.Partition]:
        """A filter HMS cannot parse is answered with a MetaException."""
        return list(self._read("get_partitions_by_filter", database, table, filter, max_parts))

    def get_partition(self, database: str, table: str, values: list[str]) -> hms.Partition:
        return self._read("get_partition", database, table, values)

    def add_partition(self, partition: hms.Partition) -> None:
        self._write("add_partition", partition)

    def add_partitions(self, partitions: list[hms.Partition]) -> None:
        self._write("add_partitions", partitions)

    def alter_partitions(self, database: str, table: str, partitions: list[hms.Partition]) -> None:
        self._write("alter_partitions", database, table, partitions)

    def drop_partition(self, database: str, table: str, values: list[str], delete_data: bool) -> None:
        self._write("drop_partition", database, table, values, delete_data)

    def drop_partition_with_environment_context(self, database: str, table: str, values: list[str],
                                                delete_data: bool, context: hms.EnvironmentContext) -> None:
        self._write("drop_partition_with_environment_context", database, table, values, delete_data, context)

    # ------------------------------------------------------------ functions

    def get_functions(self, database: str, pattern: str) -> list[str]:
        return list(self._read("get_functions", database, pattern))

    def get_function(self, database: str, name: str) -> hms.Function:
        return self._read("get_function", database, name)

    def create_function(self, function: hms.Function) -> None:
        self._write("create_function", function)

    def alter_function(self, database: str, name: str, function: hms.Function) -> None:
        self._write("alter_function", database, name, function)

    def drop_function(self, database: str, name: str) -> None:
        self._write("drop_function", database, name)


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


class HiveSession:
    """One hive catalog's connection to its metastore (see the module docstring).

    Args:
        name: the catalog's name.
        uris: remote metastore addresses; empty when ``embedded`` is given.
        embedded: a metastore this session starts and stops itself.
        username: given to HMS (``set_ugi``) and made the owner of new objects.
        max_concurrent_calls: metastore calls in flight at once; more fail at once with
            metastore-unavailable (a hung metastore holds no more of the daemon's threads).
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
    ) -> None:
        if not uris and embedded is None:
            raise InvalidArgumentError(f"catalog {name}: give metastore URIs or an embedded metastore")
        self.name = name
        self.username = username
        self.embedded = embedded
        self._uris = list(uris or [])
        self._connect_timeout = connect_timeout
        self._socket_timeout = socket_timeout
        self._max_concurrent_calls = max_concurrent_calls
        #: Restarts the embedded metastore when it dies (None for a remote one).
        self.supervisor: MetastoreSupervisor | None = None
        #: The connection pool, once open.
        self.pool: MetastoreClient | None = None
        self._api: HiveClient | None = None
        self._guard = threading.Lock()
        self._target_locks: dict[tuple[str, str], threading.Lock] = {}

    # ------------------------------------------------------------ lifecycle

    def open(self, timeout: float = 60.0) -> None:
        """Start the embedded metastore (if any), connect, and wait until HMS answers."""
        if self.embedded is not None:
            self.embedded.start()
            self._uris = parse_uris(self.embedded.uri)
        self.pool = MetastoreClient(self._uris, self._connect_timeout, self._socket_timeout, self.username,
                                    max_in_flight=self._max_concurrent_calls, name=f"catalog {self.name}")
        self._api = HiveClient(self.pool)
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

    def close(self) -> None:
        if self._api is not None:
            self._api.close()
        if self.supervisor is not None:
            self.supervisor.stop()
        elif self.embedded is not None:
            self.embedded.stop()

    def attach(self, api: HiveClient) -> None:
        """Serve this session's calls with ``api`` (unit tests: a fake client; no metastore is started)."""
        self._api = api

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
    ) -> Iterator[HiveClient]:
        """Lend the typed client for a block; HMS exceptions leave it as catalogd errors naming ``what``."""
        with translate(what, not_found, exists):
            if self._api is None:
                raise MetastoreUnavailableError(f"catalog {self.name} is not open")
            # A metastore being restarted fails the call now, not after a connect timeout.
            self._check_up()
            yield self._api

    @contextmanager
    def target_lock(self, database: str, target: str) -> Iterator[None]:
        """Writes that read a table and write it back whole (commits, aborts, alters) run one at a
        time per table in this daemon.

        HMS 2.3 checks that a rename's destination is free and then moves the files
        in separate steps: two renames onto one name at once could both pass the check.
        """
        with self._guard:
            lock = self._target_locks.setdefault((database, target), threading.Lock())
        with lock:
            yield

    def create_table(self, table: Table) -> hms.Table:
        """Create a checked table (staging tables too) and return it as HMS stored it."""
        what = f"table {self.name}.{table.database}.{table.name}"
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
