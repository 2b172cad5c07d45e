"""Python client of the catalogd daemon.

    >>> from catalogd.client import CatalogClient
    >>> client = CatalogClient("localhost:9190")
    >>> client.get_table("main.sales.orders").columns

Names are dotted strings (``catalog.database.table``; shorter forms use the
daemon's defaults). Results are ``catalogd.model`` objects; failures raise
``catalogd.errors.CatalogError`` subclasses.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TTransport

from catalogd import wire
from catalogd.errors import InternalError, InvalidArgumentError, ServerUnavailableError
from catalogd.gen.catalogd_thrift import CatalogService
from catalogd.hive_types import parse_schema
from catalogd.model import (
    CatalogInfo,
    ClusterStatus,
    Column,
    Database,
    DatabaseUpdate,
    DynamicTable,
    DynamicTableChange,
    DynamicTableSpec,
    Function,
    FunctionLanguage,
    Partition,
    RefreshJob,
    RefreshMode,
    RefreshRun,
    ReloadResult,
    Resource,
    Stage,
    StagePurpose,
    StageRequest,
    StatementResult,
    Table,
    TableFormat,
    TableKind,
    TableUpdate,
    ViewUpdate,
)
from catalogd.names import parse_catalog, parse_namespace, parse_object
from catalogd.tls import client_context_from_env

logger = logging.getLogger(__name__)

DEFAULT_ADDRESS = "localhost:9190"
DEFAULT_MAX_FRAME_SIZE = 256 * 1024 * 1024
#: Seconds a member of a list has to accept a connection (and finish TLS) before the next is tried.
MEMBER_CONNECT_TIMEOUT = 10.0
#: Where a client finds its token when none is given.
TOKEN_ENV = "CATALOGD_TOKEN"
#: The wait ``wait_refresh_job`` asks of each ``getRefreshJob`` (a long poll), seconds.
LONG_POLL = 60.0
#: How much longer than its wait a long poll's reply may take (the daemon's own answer, a forwarded
#: call to the cluster's leader) before the socket gives up, seconds.
LONG_POLL_MARGIN = 30.0
T = TypeVar("T")


def default_address() -> str:
    return os.environ.get("CATALOGD_SERVER") or DEFAULT_ADDRESS


def _tls_closed(handle: ssl.SSLSocket) -> bool:
    """A readable idle TLS socket: closed, unless what arrived was TLS housekeeping (a session
    ticket from a server that sends them), which reading consumes without any data."""
    timeout = handle.gettimeout()
    handle.settimeout(0)
    try:
        handle.recv(1)  # b"": closed; data the daemon never sends unasked: out of step, as bad
        return True
    except ssl.SSLWantReadError:
        return False
    except (TimeoutError, OSError):
        return True
    finally:
        handle.settimeout(timeout)


def default_token() -> str | None:
    """``$CATALOGD_TOKEN``, or None when it is unset or empty."""
    return os.environ.get(TOKEN_ENV) or None


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidArgumentError(f"bad server address {address!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def parse_addresses(addresses: str) -> list[tuple[str, int]]:
    """The members of ``a:9190,b:9190`` (one address is a list of one), in order.

    Raises:
        InvalidArgumentError: an empty list, or a member that is not ``HOST:PORT``.
    """
    parts = [part.strip() for part in addresses.split(",")]
    if not any(parts):
        raise InvalidArgumentError(f"bad server address {addresses!r}: expected HOST:PORT[,HOST:PORT...]")
    members: list[tuple[str, int]] = []
    for part in parts:
        if not part:
            raise InvalidArgumentError(f"bad server address list {addresses!r}: an empty member")
        member = parse_address(part)
        if member not in members:
            members.append(member)
    return members


def _spell(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _TlsSocket(TSocket.TSocket):
    """thrift's TSocket, wrapped in TLS once connected (the handshake within the socket's timeout)."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext) -> None:
        super().__init__(host, port)
        self._context = context

    def open(self) -> None:
        super().open()
        plain: Any = self.__dict__["handle"]  # thrift's attribute carries no type
        try:
            self.__dict__["handle"] = self._context.wrap_socket(plain, server_hostname=self.host)
        except (ssl.SSLError, ssl.CertificateError, OSError) as e:
            with contextlib.suppress(OSError):
                plain.close()
            self.__dict__["handle"] = None
            raise TTransport.TTransportException(TTransport.TTransportException.NOT_OPEN,
                                                 f"TLS handshake failed: {getattr(e, 'reason', None) or e}") from e


class CatalogClient:
    """A connection to a catalogd daemon; safe to share between threads.

    Args:
        address: ``host:port``, or the members of one deployment as ``a:9190,b:9190``;
            default ``$CATALOGD_SERVER`` or ``localhost:9190``. With several members the
            client talks to one at a time and moves to the next when it is down: a call is
            moved when the member refused or dropped the connection before the call was sent,
            and an idempotent call (reads, stage heartbeat, commit and abort) also when the
            connection was lost or timed out while waiting for its reply. Any other call lost
            that way raises ``ServerUnavailableError`` (it may or may not have happened). A
            member has ``MEMBER_CONNECT_TIMEOUT`` (10 s, or ``timeout`` if shorter) to accept.
        timeout: seconds to wait for a connection and for each reply.
        token: authenticates every connection (a daemon with auth enabled refuses calls
            without one); default ``$CATALOGD_TOKEN``, else none.
        tls_ca: CA certificates (PEM) to verify a daemon serving TLS (``server.tls``); default
            ``$CATALOGD_TLS_CA``. Any of the three TLS arguments set: the connection uses TLS.
        tls_cert: a client certificate (PEM) for mutual TLS; default ``$CATALOGD_TLS_CERT``.
        tls_key: its private key (PEM); default ``$CATALOGD_TLS_KEY``.
        tls_context: a client ``ssl.SSLContext`` of your own, instead of the three above.
    """

    def __init__(self, address: str | None = None, timeout: float = 120.0, token: str | None = None, *,
                 tls_ca: str | None = None, tls_cert: str | None = None, tls_key: str | None = None,
                 tls_context: ssl.SSLContext | None = None) -> None:
        self.address = address or default_address()
        #: Every member, in order; ``host``/``port`` are the one in use (or to try first).
        self.members = parse_addresses(self.address)
        self._current = 0
        self.host, self.port = self.members[0]
        self.timeout = timeout
        # Kept private and out of repr: a token must not reach a log or a traceback.
        self._token = token if token is not None else default_token()
        #: The principal the daemon answered for the token (None until a connection authenticated).
        self.principal: str | None = None
        self._tls = tls_context or client_context_from_env(tls_ca, tls_cert, tls_key)
        self._lock = threading.Lock()
        self._socket: TSocket.TSocket | None = None
        self._transport: TTransport.TTransportBase | None = None
        self._client: CatalogService.Client | None = None

    # ------------------------------------------------------------ plumbing

    def _member_address(self) -> str:
        """The member in use, as the errors name it (the whole address with one member)."""
        return self.address if len(self.members) == 1 else _spell(self.host, self.port)

    def _connect(self) -> CatalogService.Client:
        """A connection to the current member, or else to the next that answers (nothing was sent
        to those that did not, so any call may move).

        Raises:
            ServerUnavailableError: no member answered (each one named).
        """
        failures: list[str] = []
        for step in range(len(self.members)):
            index = (self._current + step) % len(self.members)
            self.host, self.port = self.members[index]
            try:
                client = self._connect_one()
            except ServerUnavailableError as e:
                failures.append(str(e))
                if step + 1 < len(self.members):
                    logger.info("catalogd at %s is unavailable; trying the next member", self._member_address())
                continue
            if index != self._current:
                logger.info("moved to catalogd at %s", self._member_address())
            self._current = index
            return client
        self.host, self.port = self.members[self._current]
        if len(failures) == 1:
            raise ServerUnavailableError(failures[0])
        raise ServerUnavailableError("no member of " + self.address + " answered: " + "; ".join(failures))

    def _advance(self) -> None:
        """Try the next member first from now on (the current one failed a call)."""
        self._current = (self._current + 1) % len(self.members)
        self.host, self.port = self.members[self._current]

    def _connect_one(self) -> CatalogService.Client:
        address = self._member_address()
        sock = (TSocket.TSocket(self.host, self.port) if self._tls is None
                else _TlsSocket(self.host, self.port, self._tls))
        # With other members to try, one that does not answer is given up on sooner.
        connect_timeout = self.timeout if len(self.members) == 1 else min(self.timeout, MEMBER_CONNECT_TIMEOUT)
        sock.setTimeout(connect_timeout * 1000)
        transport = TTransport.TFramedTransport(sock, DEFAULT_MAX_FRAME_SIZE)
        try:
            transport.open()
        except TTransport.TTransportException as e:
            raise ServerUnavailableError(f"cannot reach catalogd at {address}: {e}") from e
        sock.setTimeout(self.timeout * 1000)
        client = CatalogService.Client(TBinaryProtocolAccelerated(transport))
        if self._token:
            # The first call of every connection, reconnects included: the daemon keeps the
            # principal per connection.
            try:
                self.principal = client.authenticate(self._token)
            except wire.THRIFT_ERRORS as e:
                _close_quietly(transport)
                raise wire.error_from_thrift(e) from None
            except TApplicationException as e:
                if e.type != TApplicationException.UNKNOWN_METHOD:
                    _close_quietly(transport)
                    raise InternalError(f"catalogd at {address} failed to authenticate: {e}") from None
                # A daemon older than authentication: it lets every caller do everything.
            except (TTransport.TTransportException, OSError, EOFError) as e:
                _close_quietly(transport)
                raise ServerUnavailableError(f"lost connection to catalogd at {address}: {e}") from e
        self._socket = sock
        self._transport = transport
        self._client = client
        return self._client

    def _call(self, fn: Callable[[CatalogService.Client], T], idempotent: bool = True,
              reply_timeout: float | None = None) -> T:
        """``fn`` on the connection (made if need be); ``reply_timeout``: seconds this call's reply
        may take when longer than ``timeout`` (a long poll), the socket's timeout for it alone."""
        with self._lock:
            # Idempotent: once more on the same member (a pooled connection the daemon closed),
            # then once on each other member.
            attempts = 1 + len(self.members) if idempotent else 1
            if self._client is not None and self._peer_closed():
                self._reset()
            for attempt in range(attempts):
                pooled = self._client is not None
                client = self._client or self._connect()
                longer = reply_timeout is not None and reply_timeout > self.timeout and self._socket is not None
                try:
                    if longer:
                        self._set_reply_timeout(reply_timeout)
                    try:
                        return fn(client)
                    finally:
                        if longer:
                            self._set_reply_timeout(None)
                except wire.THRIFT_ERRORS as e:
                    raise wire.error_from_thrift(e) from None
                except (TTransport.TTransportException, OSError, EOFError) as e:
                    self._reset()
                    lost = f"lost connection to catalogd at {self._member_address()}: {e}"
                    if attempt + 1 < attempts:
                        if not (pooled and attempt == 0):
                            # A fresh connection failed too: this member is down, try the next.
                            logger.info("%s; moving the call to the next member", lost)
                            self._advance()
                        continue
                    raise ServerUnavailableError(lost) from e
            raise AssertionError("unreachable")

    def _set_reply_timeout(self, seconds: float | None) -> None:
        """The socket's timeout: ``seconds``, or back to ``timeout`` (None)."""
        if self._socket is not None:
            self._socket.setTimeout((self.timeout if seconds is None else seconds) * 1000)

    def _peer_closed(self) -> bool:
        # The daemon never talks unasked: a readable idle socket means it was closed.
        handle = self._socket.handle if self._socket is not None else None
        if handle is None:
            return False
        try:
            if not select.select([handle], [], [], 0)[0]:
                return False
            if isinstance(handle, ssl.SSLSocket):
                return _tls_closed(handle)
            return True
        except (OSError, ValueError):
            return True

    def _reset(self) -> None:
        if self._transport is not None:
            with contextlib.suppress(OSError, TTransport.TTransportException):
                self._transport.close()
        self._transport = None
        self._client = None

    def close(self) -> None:
        with self._lock:
            self._reset()

    def __enter__(self) -> CatalogClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ping(self) -> str:
        reply: str = self._call(lambda c: c.ping())
        return reply

    # ------------------------------------------------------------ catalogs

    def list_catalogs(self) -> list[CatalogInfo]:
        return [wire.catalog_from_thrift(c) for c in self._call(lambda c: c.listCatalogs())]

    def get_catalog(self, name: str | None = None) -> CatalogInfo:
        catalog = parse_catalog(name) if name else ""
        return wire.catalog_from_thrift(self._call(lambda c: c.getCatalog(catalog)))

    # ------------------------------------------------------------ databases

    def list_databases(self, catalog: str | None = None) -> list[str]:
        name = parse_catalog(catalog) if catalog else ""
        return self._call(lambda c: c.listDatabases(name))

    def get_database(self, name: str) -> Database:
        path = wire.namespace_to_thrift(parse_namespace(name))
        return wire.database_from_thrift(self._call(lambda c: c.getDatabase(path)))

    def database_exists(self, name: str) -> bool:
        path = wire.namespace_to_thrift(parse_namespace(name))
        exists: bool = self._call(lambda c: c.databaseExists(path))
        return exists

    def create_database(
        self,
        name: str,
        comment: str | None = None,
        location: str | None = None,
        properties: dict[str, str] | None = None,
        if_not_exists: bool = False,
    ) -> Database:
        """Create ``catalog.database`` (or ``database`` in the default catalog) and return it."""
        ns = parse_namespace(name)
        db = Database(name=ns.database, catalog=ns.catalog or "", comment=comment, location=location,
                      properties=dict(properties or {}))
        self._call(lambda c: c.createDatabase(wire.database_to_thrift(db), if_not_exists), idempotent=False)
        return self.get_database(name)

    def alter_database(
        self,
        name: str,
        comment: str | None = None,
        set_properties: dict[str, str] | None = None,
        unset_properties: list[str] | None = None,
    ) -> Database:
        path = wire.namespace_to_thrift(parse_namespace(name))
        update = DatabaseUpdate(comment, dict(set_properties or {}), list(unset_properties or []))
        self._call(lambda c: c.alterDatabase(path, wire.database_update_to_thrift(update)), idempotent=False)
        return self.get_database(name)

    def rename_database(self, name: str, new_name: str, if_exists: bool = False) -> None:
        """Rename a database; hive catalogs answer UnsupportedError (HMS cannot)."""
        path = wire.namespace_to_thrift(parse_namespace(name))
        self._call(lambda c: c.renameDatabase(path, new_name, if_exists), idempotent=False)

    def drop_database(self, name: str, if_exists: bool = False, cascade: bool = False,
                      drop_foreign: bool = False) -> None:
        """``drop_foreign``: objects catalogd did not create go too (an admin's word; a jdbc catalog
        refuses otherwise)."""
        path = wire.namespace_to_thrift(parse_namespace(name))
        self._call(lambda c: c.dropDatabase(path, if_exists, cascade, drop_foreign), idempotent=False)

    # ------------------------------------------------------------ tables

    def list_tables(self, database: str) -> list[str]:
        path = wire.namespace_to_thrift(parse_namespace(database))
        return self._call(lambda c: c.listTables(path))

    def get_table(self, name: str) -> Table:
        path = wire.object_to_thrift(parse_object(name))
        return wire.table_from_thrift(self._call(lambda c: c.getTable(path)))

    def table_exists(self, name: str) -> bool:
        path = wire.object_to_thrift(parse_object(name))
        exists: bool = self._call(lambda c: c.tableExists(path))
        return exists

    def create_table(
        self,
        name: str,
        schema: str | list[Column],
        partitioned_by: str | list[Column] | None = None,
        format: str | TableFormat = TableFormat.PARQUET,
        location: str | None = None,
        external: bool = False,
        comment: str | None = None,
        properties: dict[str, str] | None = None,
        if_not_exists: bool = False,
    ) -> Table:
        """Create a table and return it as stored.

        Args:
            name: ``catalog.database.table`` (shorter forms use the defaults).
            schema: ``"id bigint, amount decimal(10,2) COMMENT 'EUR'"`` or a list of Columns.
            partitioned_by: partition columns, same forms as ``schema``.
            format: parquet, orc, avro, csv, json or textfile.
            external: the files outlive the table (needs ``location``).
        """
        path = parse_object(name)
        columns = parse_schema(schema) if isinstance(schema, str) else list(schema)
        partition_keys = parse_schema(partitioned_by) if isinstance(partitioned_by, str) else list(partitioned_by or [])
        table = Table(
            name=path.name,
            database=path.database or "",
            catalog=path.catalog or "",
            columns=columns,
            partition_keys=partition_keys,
            format=TableFormat.parse(format) if isinstance(format, str) else format,
            location=location,
            kind=TableKind.EXTERNAL if external else TableKind.MANAGED,
            comment=comment,
            properties=dict(properties or {}),
        )
        created = self._call(lambda c: c.createTable(wire.table_to_thrift(table), if_not_exists), idempotent=False)
        return wire.table_from_thrift(created)

    def alter_table(
        self,
        name: str,
        comment: str | None = None,
        set_properties: dict[str, str] | None = None,
        unset_properties: list[str] | None = None,
        add_columns: str | list[Column] | None = None,
    ) -> Table:
        path = wire.object_to_thrift(parse_object(name))
        columns = parse_schema(add_columns) if isinstance(add_columns, str) else list(add_columns or [])
        update = TableUpdate(comment, dict(set_properties or {}), list(unset_properties or []), columns)
        return wire.table_from_thrift(
            self._call(lambda c: c.alterTable(path, wire.table_update_to_thrift(update)), idempotent=False)
        )

    def rename_table(self, name: str, new_name: str, if_exists: bool = False) -> None:
        """Rename within the database; ``new_name`` may repeat the catalog and database."""
        path = parse_object(name)
        target = parse_object(new_name)
        same_catalog = not target.catalog or target.catalog == path.catalog
        if not same_catalog or (target.database and target.database != path.database):
            raise InvalidArgumentError("a table can only be renamed within its database")
        thrift_path = wire.object_to_thrift(path)
        self._call(lambda c: c.renameTable(thrift_path, target.name, if_exists), idempotent=False)

    def drop_table(self, name: str, if_exists: bool = False, purge: bool = False, drop_foreign: bool = False) -> None:
        """``drop_foreign``: a table catalogd did not create goes too (an admin's word)."""
        path = wire.object_to_thrift(parse_object(name))
        self._call(lambda c: c.dropTable(path, if_exists, purge, drop_foreign), idempotent=False)



    # ------------------------------------------------------------ configuration

    def cluster_status(self) -> ClusterStatus:
        """Every member of the daemon's cluster (each pinged by the daemon now), the leader and its lease."""
        return wire.cluster_status_from_thrift(self._call(lambda c: c.clusterStatus()))

    def reload_config(self) -> ReloadResult:
        """Make the daemon re-read its configuration file (as SIGHUP does).

        Raises:
            InvalidArgumentError: the file is invalid (every problem, one per line, after the
                first line); the daemon keeps running its current configuration.
        """
        return wire.reload_result_from_thrift(self._call(lambda c: c.reloadConfig(), idempotent=False))

    # ------------------------------------------------------------ functions

    def list_functions(self, database: str) -> list[str]:
        path = wire.namespace_to_thrift(parse_namespace(database))
        return self._call(lambda c: c.listFunctions(path))

    def get_function(self, name: str) -> Function:
        path = wire.object_to_thrift(parse_object(name))
        return wire.function_from_thrift(self._call(lambda c: c.getFunction(path)))

    def create_function(self, name: str, class_name: str, language: str | FunctionLanguage = "java",
                        resources: list[str | Resource] | None = None, if_not_exists: bool = False) -> Function:
        """Create a function.

        Args:
            class_name: a JVM class (java, scala), or ``module:function`` (python).
            resources: ``jar:URI``, ``file:URI``, ``archive:URI`` or a bare URI (type from
                its extension: .jar, .zip/.tar.gz/.tgz archives, else file), or Resources.
        """
        path = parse_object(name)
        function = Function(name=path.name, database=path.database or "", catalog=path.catalog or "",
                            class_name=class_name, language=_language(language),
                            resources=[parse_resource(r) for r in resources or []])
        thrift = wire.function_to_thrift(function)
        return wire.function_from_thrift(self._call(lambda c: c.createFunction(thrift, if_not_exists),
                                                    idempotent=False))

    def alter_function(self, name: str, class_name: str, language: str | FunctionLanguage = "java",
                       resources: list[str | Resource] | None = None) -> Function:
        """Replace a function's class, language and resources."""
        path = parse_object(name)
        function = Function(name=path.name, database=path.database or "", class_name=class_name,
                            language=_language(language), resources=[parse_resource(r) for r in resources or []])
        thrift_path, thrift = wire.object_to_thrift(path), wire.function_to_thrift(function)
        return wire.function_from_thrift(self._call(lambda c: c.alterFunction(thrift_path, thrift),
                                                    idempotent=False))

    def rename_function(self, name: str, new_name: str, if_exists: bool = False) -> None:
        path = wire.object_to_thrift(parse_object(name))
        self._call(lambda c: c.renameFunction(path, new_name, if_exists), idempotent=False)

    def drop_function(self, name: str, if_exists: bool = False) -> None:
        path = wire.object_to_thrift(parse_object(name))
        self._call(lambda c: c.dropFunction(path, if_exists), idempotent=False)

    # ------------------------------------------------------------ views

    def list_views(self, database: str) -> list[str]:
        path = wire.namespace_to_thrift(parse_namespace(database))
        return self._call(lambda c: c.listViews(path))

    def get_view(self, name: str) -> Table:
        path = wire.object_to_thrift(parse_object(name))
        return wire.table_from_thrift(self._call(lambda c: c.getView(path)))

    def create_view(self, name: str, query: str, comment: str | None = None,
                    properties: dict[str, str] | None = None, if_not_exists: bool = False) -> Table:
        """Create a view; the daemon checks ``query`` against the catalog and stores it expanded."""
        path = parse_object(name)
        view = Table(name=path.name, database=path.database or "", catalog=path.catalog or "", format=None,
                     kind=TableKind.VIEW, comment=comment, properties=dict(properties or {}), view_text=query)
        created = self._call(lambda c: c.createView(wire.table_to_thrift(view), if_not_exists), idempotent=False)
        return wire.table_from_thrift(created)

    def alter_view(self, name: str, query: str | None = None, comment: str | None = None,
                   set_properties: dict[str, str] | None = None,
                   unset_properties: list[str] | None = None) -> Table:
        path = wire.object_to_thrift(parse_object(name))
        update = wire.view_update_to_thrift(ViewUpdate(query=query, comment=comment,
                                                       set_properties=dict(set_properties or {}),
                                                       unset_properties=list(unset_properties or [])))
        return wire.table_from_thrift(self._call(lambda c: c.alterView(path, update), idempotent=False))

    def rename_view(self, name: str, new_name: str, if_exists: bool = False) -> None:
        path = wire.object_to_thrift(parse_object(name))
        self._call(lambda c: c.renameView(path, new_name, if_exists), idempotent=False)

    def drop_view(self, name: str, if_exists: bool = False) -> None:
        path = wire.object_to_thrift(parse_object(name))
        self._call(lambda c: c.dropView(path, if_exists), idempotent=False)

    # ------------------------------------------------------------ partitions

    def list_partitions(self, table: str, filter: str | None = None) -> list[Partition]:
        """Partitions of a partitioned table, optionally filtered: ``"ds >= '2024-03-01'"``."""
        path = wire.object_to_thrift(parse_object(table))
        return [wire.partition_from_thrift(p) for p in self._call(lambda c: c.listPartitions(path, filter or ""))]

    def get_partition(self, table: str, spec: dict[str, str] | str) -> Partition:
        """One partition; ``spec`` is ``{"ds": "2024-03-01"}`` or ``"ds=2024-03-01/hr=01"``."""
        path = wire.object_to_thrift(parse_object(table))
        values = parse_partition_spec(spec)
        return wire.partition_from_thrift(self._call(lambda c: c.getPartition(path, values)))

    def add_partition(self, table: str, spec: dict[str, str] | str, location: str | None = None,
                      if_not_exists: bool = False) -> Partition:
        path = wire.object_to_thrift(parse_object(table))
        values = parse_partition_spec(spec)
        added = self._call(lambda c: c.addPartition(path, values, location or "", if_not_exists), idempotent=False)
        return wire.partition_from_thrift(added)

    def drop_partition(self, table: str, spec: dict[str, str] | str, if_exists: bool = False,
                       purge: bool = False) -> None:
        path = wire.object_to_thrift(parse_object(table))
        values = parse_partition_spec(spec)
        self._call(lambda c: c.dropPartition(path, values, if_exists, purge), idempotent=False)

    # ------------------------------------------------------------ stages (atomic writes)

    def begin_stage(
        self,
        target: str,
        schema: str | list[Column] | None = None,
        partitioned_by: str | list[Column] | None = None,
        format: str | TableFormat | None = None,
        purpose: str | StagePurpose = StagePurpose.CREATE,
        properties: dict[str, str] | None = None,
        comment: str | None = None,
        lease: float | None = None,
        owner: str | None = None,
    ) -> Stage:
        """Open a stage on ``target``: a hidden staging table to write into.

        Args:
            target: ``catalog.database.table`` (shorter forms use the defaults).
            schema: the columns (``"id bigint, name string"`` or Columns); under
                OVERWRITE_PARTITIONS and APPEND None means the target's.
            partitioned_by: partition columns, same forms as ``schema``.
            format: parquet (default), orc, avro, csv, json or textfile.
            purpose: CREATE, CREATE_IF_NOT_EXISTS, REPLACE, OVERWRITE_PARTITIONS or APPEND
                (INSERT INTO an existing table on the daemon's local file system).
            lease: seconds the stage stays open without a heartbeat (None: the daemon's).
            owner: who writes (default ``user@host:pid``).

        Returns:
            The stage; ``stage.spark_table`` is the table to write into. Under
            CREATE_IF_NOT_EXISTS with an existing target it is ABORTED already.
        """
        path = parse_object(target)
        columns = parse_schema(schema) if isinstance(schema, str) else list(schema or [])
        partition_keys = parse_schema(partitioned_by) if isinstance(partitioned_by, str) else list(partitioned_by or [])
        request = StageRequest(
            catalog=path.catalog or "",
            database=path.database or "",
            target=path.name,
            purpose=StagePurpose.parse(purpose) if isinstance(purpose, str) else purpose,
            columns=columns,
            partition_keys=partition_keys,
            format=TableFormat.parse(format) if isinstance(format, str) else format,
            properties=dict(properties or {}),
            comment=comment,
            lease=lease,
            owner=owner or default_owner(),
        )
        thrift_request = wire.stage_request_to_thrift(request)
        return wire.stage_from_thrift(self._call(lambda c: c.beginStage(thrift_request), idempotent=False))

    def heartbeat_stage(self, stage_id: str, lease: float | None = None) -> Stage:
        """Extend a stage's lease to ``lease`` seconds (None: the daemon's default) from now."""
        millis = round(lease * 1000) if lease else 0
        return wire.stage_from_thrift(self._call(lambda c: c.heartbeatStage(stage_id, millis)))

    def commit_stage(self, stage_id: str) -> Stage:
        """Publish the stage into its target atomically; safe to retry (the daemon makes it idempotent)."""
        return wire.stage_from_thrift(self._call(lambda c: c.commitStage(stage_id)))

    def abort_stage(self, stage_id: str, writer_stopped: bool = False) -> Stage:
        """Abort a stage; safe to retry.

        Args:
            writer_stopped: you are its writer and write no more: its files are deleted at
                once. Otherwise its writer may still be running: the stage stays as an
                ABORTED tombstone for a lease, so files written late are deleted too.
        """
        return wire.stage_from_thrift(self._call(lambda c: c.abortStage(stage_id, writer_stopped)))

    def get_stage(self, stage_id: str) -> Stage:
        return wire.stage_from_thrift(self._call(lambda c: c.getStage(stage_id)))

    def list_stages(self, catalog: str | None = None) -> list[Stage]:
        name = parse_catalog(catalog) if catalog else ""
        return [wire.stage_from_thrift(s) for s in self._call(lambda c: c.listStages(name))]


    # ------------------------------------------------------------ dynamic tables

    def create_dynamic_table(
        self,
        name: str,
        query: str,
        freshness: str,
        refresh_mode: str | RefreshMode | None = None,
        partitioned_by: list[str] | str | None = None,
        options: dict[str, str] | None = None,
        comment: str | None = None,
        if_not_exists: bool = False,
    ) -> DynamicTable:
        """Create a dynamic table: the daemon validates ``query`` with Spark, derives the
        schema and the refresh mode (unless given) and starts its schedule or job.

        Args:
            freshness: ``"1 day"``, ``"10 minutes"``, ``"INTERVAL '1' HOUR"``; ``""``: the daemon's
                default for the mode (``dynamic-tables.default-freshness-full`` with ``refresh_mode``
                FULL, else ``default-freshness-continuous``).
            options: table options, e.g. ``{"partition.fields.ds.date-formatter": "yyyy-MM-dd"}``.
        """
        path = parse_object(name)
        keys = [partitioned_by] if isinstance(partitioned_by, str) else list(partitioned_by or [])
        mode = RefreshMode.parse(refresh_mode) if isinstance(refresh_mode, str) else refresh_mode
        spec = DynamicTableSpec(catalog=path.catalog or "", database=path.database or "", name=path.name,
                                query=query, freshness=freshness, refresh_mode=mode, partitioned_by=keys,
                                options=dict(options or {}), comment=comment)
        created = self._call(lambda c: c.createDynamicTable(wire.dynamic_spec_to_thrift(spec), if_not_exists),
                             idempotent=False)
        return wire.dynamic_table_from_thrift(created)

    def get_dynamic_table(self, name: str) -> DynamicTable:
        path = wire.object_to_thrift(parse_object(name))
        return wire.dynamic_table_from_thrift(self._call(lambda c: c.getDynamicTable(path)))

    def list_dynamic_tables(self, catalog: str | None = None, database: str | None = None) -> list[DynamicTable]:
        """The dynamic tables of a catalog (default: the default one), or of one of its databases."""
        found = self._call(lambda c: c.listDynamicTables(catalog or "", database or ""))
        return [wire.dynamic_table_from_thrift(dt) for dt in found]

    def alter_dynamic_table(self, name: str, freshness: str | None = None,
                            refresh_mode: str | RefreshMode | None = None, action: str | None = None) -> DynamicTable:
        """Change the freshness and/or the refresh mode, or SUSPEND / RESUME."""
        path = wire.object_to_thrift(parse_object(name))
        mode = RefreshMode.parse(refresh_mode) if isinstance(refresh_mode, str) else refresh_mode
        change = wire.dynamic_change_to_thrift(DynamicTableChange(freshness, mode, action))
        return wire.dynamic_table_from_thrift(self._call(lambda c: c.alterDynamicTable(path, change),
                                                         idempotent=False))

    def suspend_dynamic_table(self, name: str) -> DynamicTable:
        return self.alter_dynamic_table(name, action="SUSPEND")

    def resume_dynamic_table(self, name: str) -> DynamicTable:
        return self.alter_dynamic_table(name, action="RESUME")

    def drop_dynamic_table(self, name: str, if_exists: bool = False) -> None:
        """Stop the table's schedule and job, then drop it."""
        path = wire.object_to_thrift(parse_object(name))
        self._call(lambda c: c.dropDynamicTable(path, if_exists), idempotent=False)

    def refresh_dynamic_tables(self, tables: list[str] | str, schedule_time: str | None = None,
                               partition: dict[str, str] | str | None = None,
                               configuration: dict[str, str] | None = None) -> RefreshJob:
        """Start a refresh now (a running one for the same partition is joined).

        Args:
            schedule_time: ``"2024-03-02 00:00:00"``; with date formatters it picks the partition.
            partition: ``{"ds": "2024-03-01"}`` or ``"ds=2024-03-01"``.
        """
        names = [tables] if isinstance(tables, str) else list(tables)
        spec = parse_partition_spec(partition) if isinstance(partition, str) else dict(partition or {})
        request = wire.refresh_request_to_thrift(names, schedule_time, spec, dict(configuration or {}), "manual")
        return wire.refresh_job_from_thrift(self._call(lambda c: c.refreshDynamicTables(request), idempotent=False))

    def get_refresh_job(self, job_id: str, wait: float = 0.0) -> RefreshJob:
        """The job's status; ``wait`` > 0: a long poll, answered once every run of the job has ended
        or when ``wait`` seconds (at most 300) lapse, with the job as it is then."""
        wait = max(0.0, float(wait))
        return wire.refresh_job_from_thrift(self._call(lambda c: c.getRefreshJob(job_id, wait),
                                                       reply_timeout=wait + LONG_POLL_MARGIN if wait else None))

    def wait_refresh_job(self, job_id: str, timeout: float | None = None, poll: float = 1.0,
                         progress: Callable[[RefreshJob], None] | None = None) -> RefreshJob:
        """Until the job ends (or ``timeout`` seconds pass: the job as it is then); ``progress``
        sees each answer.

        Each call is a long poll (``get_refresh_job`` with a wait): the daemon answers as soon as
        the job's runs have ended, so the end is seen at once, not at the next poll. The wait is
        ``LONG_POLL`` seconds, or ``poll`` seconds with ``progress`` (it sees the job at least that
        often while it runs). A daemon that answers an unfinished job before the wait lapsed did
        not wait (one older than long polls, or one with too many waiting): it is asked again
        after ``poll`` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        step = LONG_POLL if progress is None else poll
        while True:
            left = step if deadline is None else min(step, max(0.0, deadline - time.monotonic()))
            asked = time.monotonic()
            job = self.get_refresh_job(job_id, wait=left)
            if progress is not None:
                progress(job)
            now = time.monotonic()
            if job.status.finished or (deadline is not None and now >= deadline):
                return job
            if now - asked < left:
                time.sleep(poll if deadline is None else min(poll, max(0.0, deadline - now)))

    def dynamic_table_history(self, name: str, limit: int = 20) -> list[RefreshRun]:
        path = wire.object_to_thrift(parse_object(name))
        return [wire.refresh_run_from_thrift(r) for r in self._call(lambda c: c.dynamicTableHistory(path, limit))]

    def sql(self, statement: str) -> StatementResult:
        """Run a CREATE / ALTER / DROP DYNAMIC TABLE statement in the daemon."""
        return wire.statement_result_from_thrift(self._call(lambda c: c.executeStatement(statement),
                                                            idempotent=False))


def _language(value: str | FunctionLanguage) -> FunctionLanguage:
    return value if isinstance(value, FunctionLanguage) else FunctionLanguage.parse(value)


def parse_resource(value: str | Resource) -> Resource:
    """A URI typed by its extension (.jar; .zip, .tar.gz, .tgz, .tar archives; else file), or
    with the type first: ``jar:hdfs:///udfs/x``, ``archive:s3a://b/env`` (``file:`` is a URI scheme).

    Raises:
        InvalidArgumentError: an empty URI.
    """
    if isinstance(value, Resource):
        return value
    text = value.strip()
    kind, sep, rest = text.partition(":")
    if sep and kind.lower() in ("jar", "archive") and rest.strip():
        return Resource(kind.lower(), rest.strip())
    if not text:
        raise InvalidArgumentError("an empty resource URI")
    lower = text.lower()
    if lower.endswith(".jar"):
        return Resource("jar", text)
    if lower.endswith((".zip", ".tar.gz", ".tgz", ".tar")):
        return Resource("archive", text)
    return Resource("file", text)


def parse_partition_spec(spec: dict[str, str] | str | list[str] | tuple[str, ...]) -> dict[str, str]:
    """``{"ds": "x"}``, ``"ds=x/hr=1"``, ``"ds=x,hr=1"`` or ``["ds=x", "hr=1"]`` -> ``{"ds": "x", "hr": "1"}``.

    Raises:
        InvalidArgumentError: a part without ``=``, an empty key, or a key named twice.
    """
    if isinstance(spec, dict):
        return {str(k): str(v) for k, v in spec.items()}
    parts = [spec] if isinstance(spec, str) else list(spec)
    result: dict[str, str] = {}
    for text in parts:
        for item in text.replace("/", ",").split(","):
            if not item.strip():
                continue
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise InvalidArgumentError(f"bad partition spec {item!r}: expected key=value, e.g. ds=2024-03-01")
            key = key.strip().lower()
            if key in result:
                raise InvalidArgumentError(f"partition key {key!r} given twice")
            result[key] = value.strip()
    if not result:
        raise InvalidArgumentError("an empty partition spec: expected key=value, e.g. ds=2024-03-01")
    return result


def default_owner() -> str:
    """``user@host:pid`` of this process: who a stage belongs to."""
    import getpass

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}:{os.getpid()}"


def _close_quietly(transport: TTransport.TTransportBase) -> None:
    with contextlib.suppress(OSError, TTransport.TTransportException):
        transport.close()
