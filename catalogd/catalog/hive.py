"""The ``hive`` catalog: databases, tables, views, functions and partitions kept in a Hive Metastore.

Everything that leaves is a ``catalogd.model`` object: ``hive_codec`` converts,
``hive_client`` talks to HMS and turns its errors into catalogd errors where the
call is made. Stages (atomic writes) are done by a stager the catalog is given
as a ``HiveStages`` (``hive_staging.HiveStager`` in the daemon); this module
never imports it.

Cached reads: the user-facing reads ``list_databases``, ``get_database``,
``list_tables``, ``list_views``, ``get_table`` (and ``get_view`` on it),
``list_partitions`` and ``get_partition`` ask the session's client with ``cached=True``
(``caching_client.CachingHiveClient``: answered from the daemon's metadata cache when it
has them). Everything else reads the metastore itself: ``_raw_table``, the existence
checks before a create, the staging protocol, drops and location checks (which decide
what to write, commit or delete), and every read of the view ``fresh()`` returns (for
callers outside the catalog that decide writes on what they read). Every write through
the session invalidates the cache.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self

from catalogd.catalog import hive_codec as codec
from catalogd.catalog import spark_schema
from catalogd.catalog.base import BaseCatalog, StageBackend, is_stage_table
from catalogd.catalog.hive_api import HiveClient
from catalogd.catalog.hive_client import HiveSession, TablesRead
from catalogd.catalog.hive_location_tracker import INDEX_WAIT
from catalogd.catalog.hms_cache import MetadataCache
from catalogd.errors import (
    AlreadyExistsError,
    ConfigError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    FunctionAlreadyExistsError,
    FunctionNotFoundError,
    InvalidArgumentError,
    NotFoundError,
    PartitionAlreadyExistsError,
    PartitionNotFoundError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
    ViewAlreadyExistsError,
    ViewNotFoundError,
)
from catalogd.hive_idl import ttypes as hms
from catalogd.hive_types import parse_type
from catalogd.metastore.access_key import KeySource, file_key
from catalogd.metastore.client import parse_uris
from catalogd.metastore.embedded import EmbeddedMetastore
from catalogd.metastore.sasl import KerberosLogin, MetastoreKerberos
from catalogd.model import (
    CatalogInfo,
    Column,
    Database,
    DatabaseUpdate,
    Function,
    Partition,
    Table,
    TableKind,
    TableUpdate,
    ViewUpdate,
)

if TYPE_CHECKING:
    from catalogd.catalog.relay_target import RelayTarget
    from catalogd.config import CatalogConfig, Config

logger = logging.getLogger(__name__)

#: Tables a cascade reads in one call, the next batch while it drops one (HMS 2.3 answers a call
#: of 100 names markedly slower than one of 20).
DROP_BATCH = 20


class HiveStages(StageBackend, Protocol):
    """The stage operations a hive catalog hands on (see ``Catalog.begin_stage`` & co.), and two of its own."""

    def purge_retired_for(self, database: str, target: str) -> None:
        """The target was dropped: delete the replaced data its commits kept for readers."""

    def signed_owner(self, tbl: hms.Table) -> str | None:
        """The owner a staging table records, when catalogd signed it; None: it did not."""

    def close(self) -> None:
        """Stop background work (the housekeeping commits leave); the catalog is closing."""


#: Builds a catalog's stager on the catalog's session.
StagesFactory = Callable[[HiveSession], HiveStages]


def _kerberos(conf: CatalogConfig, config: Config) -> MetastoreKerberos | None:
    """How the catalog reaches its metastore when that is kerberized (``hive.metastore.sasl.enabled``):
    as catalogd's own principal (``auth.kerberos``), to ``hive.metastore.kerberos.principal``. The
    config's checks made sure both are there."""
    if not conf.sasl_enabled:
        return None
    assert config.auth.kerberos is not None
    login = KerberosLogin(config.auth.kerberos.principal, config.auth.kerberos.keytab)
    return MetastoreKerberos(login, conf.metastore_principal)


class HiveCatalog(BaseCatalog):
    """A catalog whose objects live in a Hive Metastore.

    Args:
        name: the catalog's name.
        uris: remote metastore addresses; empty when ``embedded`` is given.
        embedded: a metastore this catalog starts and stops itself.
        warehouse: the warehouse URI (from config, or asked from HMS on open).
        stages: builds the stager; without one, stage operations are unsupported.
        allowed_locations: where its objects may live and files may be deleted
            (``allowed-locations``); None: the warehouse.
        cache: the daemon's metadata cache (shared by all catalogs); None: no cache.
        kerberos: reach a kerberized metastore this way (SASL GSSAPI as catalogd); None: plain.
        key: what a remote metastore takes first on each connection (another catalogd's embedded
            metastore: ``metastore-key-file``); an embedded one's own key is used for it.
    """

    def __init__(
        self,
        name: str,
        uris: list[tuple[str, int]] | None = None,
        embedded: EmbeddedMetastore | None = None,
        warehouse: str | None = None,
        username: str | None = None,
        connect_timeout: float = 5.0,
        socket_timeout: float = 60.0,
        default_database: str = "default",
        stages: StagesFactory | None = None,
        max_concurrent_calls: int | None = None,
        allowed_locations: list[str] | None = None,
        cache: MetadataCache | None = None,
        locations_file: Path | None = None,
        metastore_identity: str = "",
        kerberos: MetastoreKerberos | None = None,
        key: KeySource | None = None,
    ) -> None:
        super().__init__(name)
        # An embedded metastore has no core-site.xml: its default file system is the local one.
        default_fs = ("file", "") if embedded is not None else None
        self.session = HiveSession(name, uris, embedded, username, connect_timeout, socket_timeout,
                                   max_concurrent_calls=max_concurrent_calls,
                                   allowed_locations=allowed_locations, default_fs=default_fs, cache=cache,
                                   locations_file=locations_file, identity=metastore_identity, kerberos=kerberos,
                                   key=key)
        self._warehouse = warehouse
        self.default_database = default_database
        self.stages: HiveStages | None = stages(self.session) if stages is not None else None
        #: False in the view ``fresh()`` returns: user-facing reads skip the cache too.
        self._reads_cached = True

    @classmethod
    def from_config(cls, conf: CatalogConfig, config: Config, stages: StagesFactory | None = None,
                    cache: MetadataCache | None = None) -> HiveCatalog:
        hive_conf = {
            k: v
            for k, v in conf.connection.items()
            if k not in ("hive.metastore.uris", "hive.metastore.username")
            and not k.startswith("hive.metastore.connect")
            and k != "hive.metastore.client.socket.timeout"
        }
        embedded = None
        uris: list[tuple[str, int]] = []
        if conf.is_embedded:
            embedded = EmbeddedMetastore(
                conf.name, config.server.data_dir, conf.metastore_port, conf.warehouse, hive_conf,
                stop_grace=config.server.shutdown_grace.total_seconds(), database=conf.metastore_database,
                # The endpoint's locks are this metastore's (when it is the default catalog's).
                txn_timeout=config.server.hms_lock_timeout.total_seconds(),
                reserved=(config.server.port, config.server.http_port, config.server.hms_port),
            )
        else:
            uris = parse_uris(conf.uris)
        return cls(
            conf.name,
            uris=uris,
            embedded=embedded,
            warehouse=conf.warehouse or (embedded.warehouse if embedded else None),
            username=conf.connection.get("hive.metastore.username"),
            connect_timeout=conf.connect_timeout.total_seconds(),
            socket_timeout=conf.socket_timeout.total_seconds(),
            default_database=conf.default_database,
            stages=stages,
            max_concurrent_calls=conf.max_concurrent_calls,
            allowed_locations=conf.allowed_locations,
            cache=cache,
            # The location index is kept between runs, for this metastore only.
            locations_file=config.server.data_dir / "catalogs" / conf.name / "locations.json",
            metastore_identity=hashlib.sha256(json.dumps([
                conf.uris, conf.warehouse, conf.metastore_database.jdbc_url if conf.metastore_database else None,
            ]).encode()).hexdigest(),
            kerberos=_kerberos(conf, config),
            key=file_key(conf.metastore_key_file) if conf.metastore_key_file is not None else None,
        )

    # ------------------------------------------------------------ lifecycle

    def open(self, timeout: float = 60.0) -> None:
        self.session.open(timeout)
        if self._warehouse is None:
            with self._client("get warehouse dir") as c:
                self._warehouse = c.get_config_value("hive.metastore.warehouse.dir", "") or None
        self.session.warehouse = self._warehouse
        try:
            logger.info("catalog %s: allowed locations %s", self.name, self.session.roots())
        except InvalidArgumentError as e:
            self.session.close()
            raise ConfigError(f"catalog {self.name}: allowed-locations: {e.message}") from e
        if self.default_database != "default":
            with self._client(f"database {self.default_database}") as c:
                c.get_database(self.default_database)

    def close(self) -> None:
        if self.stages is not None:
            self.stages.close()
        self.session.close()

    def info(self) -> CatalogInfo:
        return CatalogInfo(
            name=self.name,
            type="hive",
            default_database=self.default_database,
            metastore=self.session.metastore or None,
            warehouse=self._warehouse,
        )

    @property
    def embedded(self) -> EmbeddedMetastore | None:
        return self.session.embedded

    def ping(self, timeout: float | None = None) -> None:
        self.session.ping(timeout)

    # ------------------------------------------------------------ plumbing

    def _client(
        self,
        what: str,
        not_found: type[NotFoundError] = NotFoundError,
        exists: type[AlreadyExistsError] = AlreadyExistsError,
    ) -> AbstractContextManager[HiveClient]:
        """The typed HMS client for a block, reading the metastore itself; HMS errors leave it
        as catalogd errors naming ``what``."""
        return self.session.client(what, not_found, exists)

    def _cached_client(
        self,
        what: str,
        not_found: type[NotFoundError] = NotFoundError,
    ) -> AbstractContextManager[HiveClient]:
        """The client for a user-facing read: answered from the metadata cache when it can be
        (unless this is the ``fresh()`` view)."""
        return self.session.client(what, not_found, cached=self._reads_cached)

    @property
    def cache(self) -> MetadataCache | None:
        """The metadata cache this catalog reads through (and its writes invalidate)."""
        return self.session.cache

    def relay_target(self) -> RelayTarget:
        """The session: it knows the metastore's addresses, timeouts and call limit, and
        holds the caching client the endpoint reads and invalidates."""
        return self.session

    def fresh(self) -> Self:
        """This catalog with every read asked of the metastore (see ``Catalog.fresh``).

        A shallow copy: it shares the session (connections, locks, the cache its writes
        invalidate) and the stager; only its user-facing reads skip the cache.
        """
        if not self._reads_cached:
            return self
        view = copy.copy(self)
        view._reads_cached = False
        return view

    def _raw_table(self, database: str, name: str) -> hms.Table:
        """The table as the metastore has it now (never cached: callers write it back or decide on it)."""
        with self._client(f"table {self.name}.{database}.{name}", TableNotFoundError) as c:
            return c.get_table(database, name)

    def _cached_table(self, database: str, name: str) -> hms.Table:
        with self._cached_client(f"table {self.name}.{database}.{name}", TableNotFoundError) as c:
            return c.get_table(database, name)

    def _to_table(self, tbl: hms.Table) -> Table:
        return codec.to_table(self.name, tbl)

    # ------------------------------------------------------------ databases

    def list_databases(self) -> list[str]:
        with self._cached_client("list databases") as c:
            return sorted(c.get_all_databases())

    def _cached_database(self, name: str) -> hms.Database:
        with self._cached_client(f"database {self.name}.{name}", DatabaseNotFoundError) as c:
            return c.get_database(name)

    def get_database(self, name: str) -> Database:
        return codec.to_database(self.name, self._cached_database(name))

    def database_exists(self, name: str) -> bool:
        """Asked of the metastore itself (creates decide on it)."""
        try:
            with self._client(f"database {self.name}.{name}", DatabaseNotFoundError) as c:
                c.get_database(name)
        except DatabaseNotFoundError:
            return False
        return True

    def _database_lock(self, name: str) -> AbstractContextManager[None]:
        """DDL on one database runs one at a time in this daemon."""
        return self.session.target_lock(name, "")

    def _default_database_location(self, name: str) -> str:
        """Where HMS puts a database given no location: ``<warehouse>/<name>.db``."""
        self.session.roots()
        warehouse = self.session.warehouse
        if not warehouse:
            raise PermissionDeniedError(f"database {self.name}.{name}: the warehouse of catalog {self.name} is "
                                        "not known; give the database a location")
        return f"{warehouse.rstrip('/')}/{name.lower()}.db"

    def create_database(self, database: Database, ignore_if_exists: bool = False) -> None:
        what = f"database {self.name}.{database.name}"
        with self._database_lock(database.name):
            # Asked first: the existing database's own directory would count as taken (if it
            # exists, the metastore's own refusal below is the answer).
            exists = self.database_exists(database.name)
            if exists and ignore_if_exists:
                return
            with self.session.files():
                db = codec.to_hms_database(database, self.session.username)
                if not exists:
                    location = self.session.claim(database.location or self._default_database_location(database.name),
                                                  what)
                    if database.location:
                        db.locationUri = location.uri
                try:
                    with self._client(what, exists=DatabaseAlreadyExistsError) as c:
                        c.create_database(db)
                except DatabaseAlreadyExistsError:
                    if not ignore_if_exists:
                        raise

    def alter_database(self, name: str, update: DatabaseUpdate) -> None:
        what = f"database {self.name}.{name}"
        with self._client(what, DatabaseNotFoundError) as c:
            db = c.get_database(name)
            if update.comment is not None and update.comment != (db.description or ""):
                # HMS 2.3 (the embedded one) ignores a new description without a
                # word: change it alone first, and refuse when it did not take.
                db.description = update.comment
                c.alter_database(name, db)
                db = c.get_database(name)
                if (db.description or "") != update.comment:
                    raise UnsupportedError(
                        f"{what}: this metastore cannot change a database's comment (Hive Metastore 2.3 "
                        "keeps the one given at creation); nothing was changed"
                    )
            params = dict(db.parameters or {})
            params.update(update.set_properties)
            for key in update.unset_properties:
                params.pop(key, None)
            db.parameters = params
            # The whole database object, again: repeating it changes nothing.
            c.alter_database(name, db, retry=True)

    def rename_database(self, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        try:
            self.get_database(name)
        except DatabaseNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        raise UnsupportedError(
            f"database {self.name}.{name}: a Hive Metastore cannot rename a database (create {new_name}, "
            "then rename or re-create its tables)"
        )

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False,
                      drop_foreign: bool = False) -> None:
        """Drop a database; with ``cascade`` its tables go one by one first, each by the rules
        of ``drop_table`` (never by HMS's own cascade, which deletes every managed table's
        directory wherever it is), then its functions, then the database itself."""
        what = f"database {self.name}.{name}"
        with self._database_lock(name):
            try:
                with self._client(what, DatabaseNotFoundError) as c:
                    # HMS 2.3 answers a missing database here with a NullPointerException.
                    c.get_database(name)
                    tables = c.get_all_tables(name)
            except DatabaseNotFoundError:
                if not ignore_if_not_exists:
                    raise
                return
            if name == "default":
                # HMS refuses this before anything else: let it say so, before a cascade drops a table.
                with self._client(what, DatabaseNotFoundError) as c:
                    c.drop_database(name, False, False)
            if not cascade and tables:
                raise DatabaseNotEmptyError(f"{what} is not empty; drop it with cascade")
            for attempt in range(3):
                if cascade:
                    self._drop_contents(name, tables)
                try:
                    self.session.drop_database(name)
                    return
                except DatabaseNotEmptyError:
                    # A table (or function) arrived meanwhile, from behind catalogd.
                    if not cascade or attempt == 2:
                        raise
                    with self._client(what, DatabaseNotFoundError) as c:
                        tables = c.get_all_tables(name)

    def _drop_contents(self, database: str, tables: list[str]) -> None:
        # The tables are read a batch a call (get_table_objects_by_name) on another connection
        # while the batch before is dropped, each by the rules of drop_table: a cascade costs
        # about a drop a table, as dropping them directly does.
        batches = [tables[i:i + DROP_BATCH] for i in range(0, len(tables), DROP_BATCH)]
        with ThreadPoolExecutor(1, thread_name_prefix=f"cascade-{self.name}") as reader:
            reads = [reader.submit(self.session.read_tables, database, batch) for batch in batches]
            try:
                for batch, reading in zip(batches, reads, strict=True):
                    read = reading.result()
                    for table in batch:
                        with suppress(TableNotFoundError):
                            self.drop_table(database, table, read=read)
            finally:
                for reading in reads:
                    reading.cancel()
        with self._client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
            for function in c.get_functions(database, "*"):
                with suppress(hms.NoSuchObjectException):
                    c.drop_function(database, function)

    # ------------------------------------------------------------ tables

    def _all_tables(self, database: str) -> list[str]:
        with self._cached_client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
            return c.get_all_tables(database)

    def _view_names(self, database: str) -> list[str]:
        with self._cached_client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
            return c.get_tables_by_type(database, "*", codec.VIRTUAL_VIEW)

    def list_tables(self, database: str) -> list[str]:
        names = {n for n in self._all_tables(database) if not is_stage_table(n)}
        if not names:
            # HMS answers an unknown database with an empty list too: only
            # then is the extra round trip needed to tell the two apart.
            self._cached_database(database)
            return []
        return sorted(names - set(self._view_names(database)))

    def get_table(self, database: str, name: str) -> Table:
        return self._to_table(self._cached_table(database, name))

    def table_exists(self, database: str, name: str) -> bool:
        """Asked of the metastore itself (creates and renames decide on it)."""
        try:
            self._raw_table(database, name)
        except TableNotFoundError:
            return False
        return True

    def create_table(self, table: Table, ignore_if_exists: bool = False) -> Table:
        what = f"table {self.name}.{table.database}.{table.name}"
        self.check_new_table(table)
        if table.kind is TableKind.VIEW:
            raise InvalidArgumentError(f"{what}: create views with create_view")
        if codec.is_generic(table.properties):
            if not table.properties[codec.CONNECTOR].strip():
                raise InvalidArgumentError(f"{what}: the connector option is empty")
            if table.location or table.kind is TableKind.EXTERNAL:
                raise InvalidArgumentError(f"{what}: a connector table has no location (its connector has the data)")
            table.format = None
        elif table.kind is TableKind.EXTERNAL and not table.location:
            raise InvalidArgumentError(f"{what}: an external table needs a location")
        with self._client(f"database {self.name}.{table.database}", DatabaseNotFoundError) as c:
            c.get_database(table.database)
        with self.session.target_lock(table.database, table.name):
            # Asked first: an existing table's own directory would count as taken (if it
            # exists, the metastore's own refusal is the answer).
            exists = self.table_exists(table.database, table.name)
            try:
                if not exists:
                    return self._to_table(self.session.create_table(table))
                if not ignore_if_exists:
                    with self._client(what, TableNotFoundError, TableAlreadyExistsError) as c:
                        c.create_table(codec.to_hms_table(table, self.session.username))
            except TableAlreadyExistsError:
                if not ignore_if_exists:
                    raise
        return self.get_table(table.database, table.name)

    def alter_table(self, database: str, name: str, update: TableUpdate) -> Table:
        what = f"table {self.name}.{database}.{name}"
        reserved = sorted(k for k in [*update.set_properties, *update.unset_properties]
                          if k.startswith(codec.RESERVED_PREFIXES))
        if reserved:
            raise InvalidArgumentError(f"{what}: properties {reserved} are catalogd's own (a dynamic table's "
                                       "definition and state, or a commit's marks): change them through catalogd")
        # A commit onto this table reads it and writes it back whole: never interleave with one.
        with self.session.target_lock(database, name):
            return self._alter_table(database, name, update, what)

    def _alter_table(self, database: str, name: str, update: TableUpdate, what: str) -> Table:
        tbl = self._raw_table(database, name)
        if tbl.tableType == codec.VIRTUAL_VIEW:
            raise InvalidArgumentError(f"{what} is a view; alter it with alter_view")
        params = self._add_columns(tbl, dict(tbl.parameters or {}), update.add_columns, what)
        if update.comment is not None:
            params["comment"] = update.comment
        prefix = codec.GENERIC_OPTION if params.get(codec.GENERIC) == "true" else ""
        if prefix and codec.CONNECTOR in update.unset_properties:
            raise InvalidArgumentError(f"{what}: a connector table keeps its connector option")
        params.update({prefix + k: v for k, v in update.set_properties.items()})
        for key in update.unset_properties:
            params.pop(prefix + key, None)
        tbl.parameters = params
        # CASCADE: partitions get the new columns too, as Hive's ALTER ... CASCADE does.
        context = codec.cascade_context(bool(update.add_columns and tbl.partitionKeys))
        with self._client(what, TableNotFoundError) as c:
            c.alter_table_with_environment_context(database, name, tbl, context)
        return self.get_table(database, name)

    def _add_columns(self, tbl: hms.Table, params: dict[str, str], columns: Sequence[Column],
                     what: str) -> dict[str, str]:
        """Append ``columns`` to ``tbl``'s data columns (and to Spark's schema in ``params``); the new params."""
        if not columns:
            return params
        current = self._to_table(tbl)
        existing = {c.name for c in [*current.columns, *current.partition_keys]}
        added = []
        for col in columns:
            if col.name.lower() in existing:
                raise InvalidArgumentError(f"{what}: column {col.name!r} already exists")
            existing.add(col.name.lower())
            added.append(Column(col.name.lower(), parse_type(col.type), col.comment))
        tbl.sd.cols = [*(tbl.sd.cols or []), *codec.field_schemas(added)]
        if spark_schema.PROVIDER in params and spark_schema.has_schema(params):
            params = {k: v for k, v in params.items() if not spark_schema.is_schema_key(k)}
            params.update(spark_schema.schema_properties([*current.columns, *added], current.partition_keys))
        return params

    def rename_table(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        first, second = sorted([name, new_name])
        with self.session.target_lock(database, first), self.session.target_lock(database, second):
            self._rename_table(database, name, new_name, ignore_if_not_exists)

    def _rename_table(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool) -> None:
        what = f"table {self.name}.{database}.{name}"
        try:
            tbl = self._raw_table(database, name)
        except TableNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        if is_stage_table(new_name) or is_stage_table(name):
            raise InvalidArgumentError(f"{what}: staging tables cannot be renamed, nor tables renamed to one")
        if self.table_exists(database, new_name):
            raise TableAlreadyExistsError(f"table {self.name}.{database}.{new_name} already exists")
        tbl.tableName = new_name
        with self._client(what, TableNotFoundError, TableAlreadyExistsError) as c:
            c.alter_table(database, name, tbl)
            if codec.spark_path(tbl) is not None and tbl.tableType == codec.MANAGED_TABLE:
                # HMS moved the files of the managed table; Spark's `path` must follow.
                moved = c.get_table(database, new_name)
                if codec.spark_path(moved) != moved.sd.location:
                    codec.set_spark_path(moved, moved.sd.location)
                    c.alter_table(database, new_name, moved)

    def drop_table(self, database: str, name: str, ignore_if_not_exists: bool = False, purge: bool = False,
                   drop_foreign: bool = False, read: TablesRead | None = None) -> None:
        """Drop a table; its files are deleted only where catalogd may (``HiveSession.drop_table``;
        ``read``: the table as a cascade read it with its batch)."""
        with self.session.target_lock(database, name):
            try:
                self.session.drop_table(database, name, purge, read)
            except TableNotFoundError:
                if not ignore_if_not_exists:
                    raise
                return
            # Its stages' tables are catalogd's own writes, in the location index (read by the drop):
            # none there, no staging table to look for.
            if self.stages is not None and self.session.locations.has_stages_of(database, name):
                self.stages.purge_retired_for(database, name)

    # ------------------------------------------------------------ table parameters

    def update_table_parameters(self, database: str, name: str, set: dict[str, str],
                                remove_prefixes: tuple[str, ...] = (),
                                add_columns: Sequence[Column] = ()) -> dict[str, str]:
        what = f"table {self.name}.{database}.{name}"
        with self.session.target_lock(database, name):
            tbl = self._raw_table(database, name)
            params = {k: v for k, v in (tbl.parameters or {}).items()
                      if not (remove_prefixes and k.startswith(remove_prefixes))}
            params = self._add_columns(tbl, params, add_columns, what)
            params.update(set)
            tbl.parameters = params
            with self._client(what, TableNotFoundError) as c:
                if add_columns:
                    # CASCADE: the partitions get the new columns too, as Hive's ALTER ... CASCADE does.
                    c.alter_table_with_environment_context(database, name, tbl,
                                                           codec.cascade_context(bool(tbl.partitionKeys)))
                else:
                    c.alter_table(database, name, tbl)
            return params

    def tables_with_parameter(self, key: str) -> list[tuple[str, str, dict[str, str]]]:
        marked = self._marked_tables(key)
        if marked is not None:
            return marked
        found = []
        with self._client(f"catalog {self.name}") as c:
            databases = c.get_all_databases()
        for database in databases:
            try:
                with self._client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
                    names = [n for n in c.get_all_tables(database) if not is_stage_table(n)]
                    # Read once at start (dynamic tables restored), 100 a call: no answer grows with the catalog.
                    tables = [t for i in range(0, len(names), 100)
                              for t in c.get_table_objects_by_name(database, names[i:i + 100])]
            except DatabaseNotFoundError:
                continue  # dropped while we looked
            found += [(database, t.tableName, dict(t.parameters)) for t in tables if key in (t.parameters or {})]
        return found

    def watch_parameter(self, key: str, found: Callable[[str, str], None]) -> None:
        tracker = self.session.locations
        if key in tracker.indexed:
            tracker.on_marked = lambda parameter, database, table: found(database, table) if parameter == key else None

    def _marked_tables(self, key: str) -> list[tuple[str, str, dict[str, str]]] | None:
        """The tables with ``key`` as the location index notes them (a dynamic table's
        freshness: ``HiveSession.locations.indexed``), read again, 100 a call: the cost of those
        tables, not of the catalog. Just after a first start, waits for the index's first pass
        to have read every table (``INDEX_WAIT`` at most). None: the index does not know them."""
        tracker = self.session.locations
        if key not in tracker.indexed:
            return None
        keys = tracker.tables_with(key, wait=INDEX_WAIT)
        if keys is None:
            return None
        by_database: dict[str, list[str]] = {}
        for database, name in keys:
            if not is_stage_table(name):
                by_database.setdefault(database, []).append(name)
        found = []
        for database, names in sorted(by_database.items()):
            try:
                with self._client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
                    tables = [t for i in range(0, len(names), 100)
                              for t in c.get_table_objects_by_name(database, names[i:i + 100])]
            except DatabaseNotFoundError:
                continue  # dropped since
            found += [(database, t.tableName, dict(t.parameters)) for t in tables if key in (t.parameters or {})]
        return found

    # ------------------------------------------------------------ functions

    def list_functions(self, database: str) -> list[str]:
        with self._client(f"database {self.name}.{database}", DatabaseNotFoundError) as c:
            c.get_database(database)
            return sorted(c.get_functions(database, "*"))

    def get_function(self, database: str, name: str) -> Function:
        what = f"function {self.name}.{database}.{name}"
        with self._client(what, FunctionNotFoundError) as c:
            return codec.to_function(self.name, c.get_function(database, name))

    def create_function(self, function: Function, ignore_if_exists: bool = False) -> Function:
        self.check_function(function)
        what = f"function {self.name}.{function.database}.{function.name}"
        with self._client(f"database {self.name}.{function.database}", DatabaseNotFoundError) as c:
            c.get_database(function.database)
        try:
            with self._client(what, FunctionNotFoundError, FunctionAlreadyExistsError) as c:
                c.create_function(codec.to_hms_function(function, self.session.username))
        except FunctionAlreadyExistsError:
            if not ignore_if_exists:
                raise
        return self.get_function(function.database, function.name)

    def alter_function(self, database: str, name: str, function: Function) -> Function:
        self.check_function(function)
        current = self.get_function(database, name)
        function.name, function.database = name, database
        new = codec.to_hms_function(function, self.session.username)
        new.createTime = current.created
        what = f"function {self.name}.{database}.{name}"
        with self._client(what, FunctionNotFoundError, FunctionAlreadyExistsError) as c:
            if function.resources != current.resources:
                # HMS 2.3's alter_function keeps the old resource URIs: replace the function.
                c.drop_function(database, name)
                c.create_function(new)
            else:
                c.alter_function(database, name, new)
        return self.get_function(database, name)

    def rename_function(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        try:
            current = self.get_function(database, name)
        except FunctionNotFoundError:
            if ignore_if_not_exists:
                return
            raise
        try:
            self.get_function(database, new_name)
            raise FunctionAlreadyExistsError(f"function {self.name}.{database}.{new_name} already exists")
        except FunctionNotFoundError:
            pass
        new = codec.to_hms_function(current, self.session.username)
        new.functionName, new.createTime = new_name, current.created
        with self._client(f"function {self.name}.{database}.{name}", FunctionNotFoundError,
                          FunctionAlreadyExistsError) as c:
            c.alter_function(database, name, new)

    def drop_function(self, database: str, name: str, ignore_if_not_exists: bool = False) -> None:
        try:
            with self._client(f"function {self.name}.{database}.{name}", FunctionNotFoundError) as c:
                c.drop_function(database, name)
        except FunctionNotFoundError:
            if not ignore_if_not_exists:
                raise

    # ------------------------------------------------------------ views

    def list_views(self, database: str) -> list[str]:
        names = self._view_names(database)
        if not names:
            self._cached_database(database)
        return sorted(names)

    def create_view(self, view: Table, ignore_if_exists: bool = False) -> Table:
        self.check_new_view(view)
        what = f"view {self.name}.{view.database}.{view.name}"
        with self._client(f"database {self.name}.{view.database}", DatabaseNotFoundError) as c:
            c.get_database(view.database)
        tbl = codec.to_hms_view(view, self.session.username)
        try:
            with self._client(what, ViewNotFoundError, ViewAlreadyExistsError) as c:
                c.create_table(tbl)
        except ViewAlreadyExistsError:
            existing = self._raw_table(view.database, view.name)
            if existing.tableType != codec.VIRTUAL_VIEW:
                raise ViewAlreadyExistsError(
                    f"{self.name}.{view.database}.{view.name} already exists and is a table, not a view"
                ) from None
            if not ignore_if_exists:
                raise
        return self.get_view(view.database, view.name)

    def alter_view(self, database: str, name: str, update: ViewUpdate) -> Table:
        what = f"view {self.name}.{database}.{name}"
        self.get_view(database, name)
        tbl = self._raw_table(database, name)
        if update.expanded_text is not None and update.columns is not None and update.query is not None:
            tbl.viewOriginalText = update.query
            tbl.viewExpandedText = update.expanded_text
            tbl.sd.cols = codec.field_schemas(update.columns)
        params = dict(tbl.parameters or {})
        if update.comment is not None:
            params["comment"] = update.comment
        params.update(update.set_properties)
        for key in update.unset_properties:
            params.pop(key, None)
        tbl.parameters = params
        with self._client(what, ViewNotFoundError) as c:
            c.alter_table(database, name, tbl)
        return self.get_view(database, name)

    # ------------------------------------------------------------ partitions

    def _partitioned(self, database: str, table: str, cached: bool = False) -> hms.Table:
        """``cached``: for a user-facing read (never for one that writes or deletes on it)."""
        tbl = self._cached_table(database, table) if cached else self._raw_table(database, table)
        if not tbl.partitionKeys:
            raise InvalidArgumentError(f"table {self.name}.{database}.{table} is not partitioned")
        return tbl

    def _values(self, tbl: hms.Table, spec: dict[str, str]) -> list[str]:
        """The spec's values in partition-key order; it must name every key, and nothing else."""
        keys = [k.name.lower() for k in tbl.partitionKeys]
        given = {k.lower(): v for k, v in spec.items()}
        if sorted(given) != sorted(keys):
            raise InvalidArgumentError(
                f"table {self.name}.{tbl.dbName}.{tbl.tableName}: a partition spec names every partition key "
                f"{keys}, got {sorted(given)}"
            )
        values = [str(given[k]) for k in keys]
        for key, value in zip(keys, values, strict=True):
            if value == "" or "/" in value:
                raise InvalidArgumentError(f"partition value {key}={value!r}: empty or containing '/'")
        return values

    def list_partitions(self, database: str, table: str, filter: str | None = None) -> list[Partition]:
        tbl = self._partitioned(database, table, cached=True)
        what = f"table {self.name}.{database}.{table}"
        text = filter.strip() if filter else ""

        with self._cached_client(what, TableNotFoundError) as c:
            if text:
                try:
                    parts = c.get_partitions_by_filter(database, table, text, -1)
                except hms.MetaException as e:
                    raise InvalidArgumentError(f"{what}: bad partition filter {filter!r}: {e.message}") from e
            else:
                parts = c.get_partitions(database, table, -1)
        return sorted((codec.to_partition(tbl, p) for p in parts), key=lambda p: p.values)

    def get_partition(self, database: str, table: str, spec: dict[str, str]) -> Partition:
        tbl = self._partitioned(database, table, cached=True)
        values = self._values(tbl, spec)
        name = codec.partition_name(tbl.partitionKeys, values)

        with self._cached_client(f"partition {name} of table {self.name}.{database}.{table}",
                                 PartitionNotFoundError) as c:
            part = c.get_partition(database, table, values)
        return codec.to_partition(tbl, part)

    def add_partition(self, database: str, table: str, spec: dict[str, str], location: str | None = None,
                      ignore_if_exists: bool = False) -> Partition:
        with self.session.target_lock(database, table):
            self._add_partition(database, table, spec, location, ignore_if_exists)
        return self.get_partition(database, table, spec)

    def _add_partition(self, database: str, table: str, spec: dict[str, str], location: str | None,
                       ignore_if_exists: bool) -> None:
        tbl = self._partitioned(database, table)
        values = self._values(tbl, spec)
        name = codec.partition_name(tbl.partitionKeys, values)
        what = f"partition {name} of table {self.name}.{database}.{table}"
        try:
            with self._client(what, PartitionNotFoundError) as c:
                c.get_partition(database, table, values)
            if not ignore_if_exists:
                raise PartitionAlreadyExistsError(f"{what} already exists")
            return
        except PartitionNotFoundError:
            pass
        with self.session.files():
            if location:
                # Anywhere allowed but in another object's directory (its own table's is fine).
                location = self.session.claim(location, what, own_table=(database, table)).uri
            else:
                # Under the table's directory, which must be allowed itself.
                self.session.claim(f"{(tbl.sd.location or '').rstrip('/')}/{name}", what, check_others=False)
            sd = copy.deepcopy(tbl.sd)
            sd.location = location
            part = hms.Partition(values=values, dbName=database, tableName=table, createTime=int(time.time()),
                                 lastAccessTime=0, sd=sd, parameters={})
            # In its table's directory, a partition adds nothing to the location index.
            current = not location and self.session.locations.is_current(database, table)
            try:
                with self._client(what, PartitionNotFoundError, PartitionAlreadyExistsError) as c:
                    c.add_partition(part)
            except PartitionAlreadyExistsError:
                if not ignore_if_exists:
                    raise
            if current:
                self.session.locations.unchanged(database, table)

    def drop_partition(self, database: str, table: str, spec: dict[str, str], ignore_if_not_exists: bool = False,
                       purge: bool = False) -> None:
        tbl = self._partitioned(database, table)
        values = self._values(tbl, spec)
        try:
            with self.session.target_lock(database, table):
                self.session.drop_partition(database, table, values, purge)
        except PartitionNotFoundError:
            if not ignore_if_not_exists:
                raise

    # ------------------------------------------------------------ stages

    def stage_backend(self) -> HiveStages | None:
        return self.stages

    def stage_owner(self, table: hms.Table) -> str | None:
        return self.stages.signed_owner(table) if self.stages is not None else None
