"""A small pool of HMS Thrift connections with timeouts and failover.

Only the HMS session (``catalogd.catalog.hive_client``) uses this: the HMS Thrift types it hands out
never travel further up.
"""

from __future__ import annotations

import logging
import queue
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import urlparse

from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TException
from thrift.transport import TSocket, TTransport

from catalogd.errors import InvalidArgumentError, MetastoreUnavailableError
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.metastore.access_key import KeySource, send_key
from catalogd.metastore.sasl import MetastoreKerberos, SaslClientTransport

logger = logging.getLogger(__name__)

#: What a broken connection looks like: the call may or may not have run.
TRANSPORT_ERRORS = (TTransport.TTransportException, socket.error, EOFError, TimeoutError)


def parse_uris(uris: str | list[str]) -> list[tuple[str, int]]:
    """``thrift://h1:9083,thrift://h2:9083`` -> [(h1, 9083), (h2, 9083)]."""
    items = uris.split(",") if isinstance(uris, str) else uris
    result = []
    for item in items:
        item = item.strip()
        parsed = urlparse(item)
        try:
            port = parsed.port  # a ValueError for a port that is not a number in 0..65535
        except ValueError:
            port = -1
        if parsed.scheme != "thrift" or not parsed.hostname or port == -1:
            raise InvalidArgumentError(f"bad metastore URI {item!r}: expected thrift://HOST:PORT")
        result.append((parsed.hostname, port or 9083))
    if not result:
        raise InvalidArgumentError("no metastore URI given")
    return result


class _Connection:
    def __init__(self, host: str, port: int, connect_timeout: float, socket_timeout: float,
                 kerberos: MetastoreKerberos | None = None, key: KeySource | None = None) -> None:
        self.address = f"{host}:{port}"
        self.socket = TSocket.TSocket(host, port)
        self.socket.setTimeout(connect_timeout * 1000)
        self.transport: TTransport.TTransportBase
        self.socket.open()
        try:
            # An embedded metastore's key first, before any Thrift or SASL byte.
            send_key(self.socket.handle, key)
            if kerberos is None:
                self.transport = TTransport.TBufferedTransport(self.socket)
            else:
                # SASL GSSAPI on the connected socket, negotiated within the connect timeout.
                self.transport = SaslClientTransport(self.socket.handle, kerberos.login, kerberos.service_for(host))
                self.transport.open()
        except BaseException:
            self.socket.close()
            raise
        protocol = TBinaryProtocol.TBinaryProtocolAccelerated(self.transport)
        self.client = ThriftHiveMetastore.Client(protocol)
        self.socket.setTimeout(socket_timeout * 1000)

    def looks_alive(self) -> bool:
        """A cheap check without a round trip: HMS never talks unasked, so an
        idle socket that is readable has been closed (or reset) by the peer."""
        handle = self.socket.handle
        if handle is None:
            return False
        try:
            readable, _, _ = select.select([handle], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def close(self) -> None:
        with suppress(Exception):
            self.transport.close()


class MetastoreClient:
    """Connections to one metastore service (one or more URIs, tried in turn).

    Args:
        uris: addresses to try, first one preferred; the last one that worked
            is tried first on the next connect.
        connect_timeout: seconds to wait for a TCP connection to one URI.
        socket_timeout: seconds to wait for one reply.
        username: passed to HMS with ``set_ugi`` so new objects get an owner.
        pool_size: idle connections kept for reuse.
        max_in_flight: calls running at once; one more fails at once with
            MetastoreUnavailableError, so that a hung metastore holds at most this many
            of the daemon's threads (None: no limit).
        name: what error messages call this metastore (e.g. ``catalog main``).
        kerberos: reach a kerberized metastore (``hive.metastore.sasl.enabled``) this way; None: plain.
        key: what to send first on each connection (an embedded metastore's key); None: nothing.
    """

    def __init__(
        self,
        uris: list[tuple[str, int]],
        connect_timeout: float = 5.0,
        socket_timeout: float = 60.0,
        username: str | None = None,
        pool_size: int = 8,
        max_in_flight: int | None = None,
        name: str | None = None,
        kerberos: MetastoreKerberos | None = None,
        key: KeySource | None = None,
    ) -> None:
        if not uris:
            raise InvalidArgumentError("no metastore URI given")
        self.uris = list(uris)
        self.name = name
        self.max_in_flight = max_in_flight
        self._slots = threading.BoundedSemaphore(max_in_flight) if max_in_flight else None
        self.connect_timeout = connect_timeout
        self.socket_timeout = socket_timeout
        self.username = username
        self.kerberos = kerberos
        self.key = key
        self._idle: queue.LifoQueue[_Connection] = queue.LifoQueue(maxsize=pool_size)
        self._preferred = 0
        self._lock = threading.Lock()
        self._closed = False

    @property
    def uri_string(self) -> str:
        return ",".join(f"thrift://{h}:{p}" for h, p in self.uris)

    def _connect(self) -> _Connection:
        errors = []
        with self._lock:
            start = self._preferred
        for i in range(len(self.uris)):
            index = (start + i) % len(self.uris)
            host, port = self.uris[index]
            try:
                conn = _Connection(host, port, self.connect_timeout, self.socket_timeout, self.kerberos, self.key)
            except TRANSPORT_ERRORS as e:
                logger.warning("metastore thrift://%s:%d unreachable: %s", host, port, e)
                errors.append(f"thrift://{host}:{port}: {e}")
                continue
            if self.username:
                try:
                    conn.client.set_ugi(self.username, [])
                except (TApplicationException, *TRANSPORT_ERRORS) as e:
                    conn.close()
                    errors.append(f"thrift://{host}:{port}: set_ugi failed: {e}")
                    continue
            if index != start:
                logger.info("metastore failover: now using thrift://%s:%d", host, port)
            with self._lock:
                self._preferred = index
            return conn
        raise MetastoreUnavailableError("no metastore reachable: " + "; ".join(errors))

    @contextmanager
    def connection(self) -> Iterator[ThriftHiveMetastore.Client]:
        """Borrow a connection; one that broke is dropped instead of returned."""
        if self._closed:
            raise MetastoreUnavailableError("metastore client is closed")
        conn = None
        while conn is None:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = self._connect()
                break
            if not conn.looks_alive():
                conn.close()
                conn = None
        ok = False
        try:
            yield conn.client
            ok = True
        except TException as e:
            # An exception HMS declared (NoSuchObject, AlreadyExists, ...) or an application
            # error was read off the wire whole: the connection is still good. Dropping it
            # would make the next call pay for a new connection (and a new HMS handler).
            ok = not isinstance(e, TRANSPORT_ERRORS)
            raise
        finally:
            if ok and not self._closed:
                try:
                    self._idle.put_nowait(conn)
                except queue.Full:
                    conn.close()
            else:
                conn.close()

    def call(self, method: str, *args: Any, idempotent: bool = True) -> Any:
        """Run one HMS RPC; HMS's own exceptions pass through untouched.

        A broken connection is retried once on a fresh one (which fails over)
        for idempotent calls; otherwise it becomes MetastoreUnavailableError,
        since the call may or may not have taken effect.
        """
        if self._slots is not None and not self._slots.acquire(blocking=False):
            raise MetastoreUnavailableError(
                f"metastore of {self.name or self.uri_string}: too many calls in flight "
                f"({self.max_in_flight}); it answers slowly or not at all"
            )
        try:
            return self._call(method, args, idempotent)
        finally:
            if self._slots is not None:
                self._slots.release()

    def _call(self, method: str, args: tuple[Any, ...], idempotent: bool) -> Any:
        attempts = 2 if idempotent else 1
        for attempt in range(attempts):
            try:
                with self.connection() as client:
                    return getattr(client, method)(*args)
            except TRANSPORT_ERRORS as e:
                if attempt + 1 < attempts:
                    logger.info("metastore call %s failed (%s); retrying on a new connection", method, e)
                    # A pooled connection may have gone stale while idle: drop them all.
                    self._drain()
                    continue
                raise MetastoreUnavailableError(f"metastore call {method} failed: {e}{self._plain_hint(e)}") from e
        raise AssertionError("unreachable")

    def _plain_hint(self, error: Exception) -> str:
        # A kerberized metastore closes a plain connection at its first call, and so does another
        # catalogd's embedded metastore a connection without its key: that tells nothing more.
        if "read 0 bytes" not in str(error) or (self.kerberos is not None and self.key is not None):
            return ""
        hints = []
        if self.kerberos is None:
            hints.append("if it is kerberized, set hive.metastore.sasl.enabled: true and "
                         "hive.metastore.kerberos.principal")
        if self.key is None:
            hints.append("if it is another catalogd's embedded metastore, set metastore-key-file to its key file")
        return f" (the metastore closed the connection; {'; '.join(hints)})"

    def probe(self, timeout: float) -> None:
        """One cheap call on a fresh connection that gives up after ``timeout`` seconds in all
        (health checks: never waits for the pool, an in-flight slot or the socket timeout).

        Raises:
            MetastoreUnavailableError: no URI answered in time.
        """
        deadline = time.monotonic() + timeout
        errors = []
        with self._lock:
            start = self._preferred
        for i in range(len(self.uris)):
            host, port = self.uris[(start + i) % len(self.uris)]
            left = deadline - time.monotonic()
            if left <= 0:
                errors.append(f"thrift://{host}:{port}: not tried within {timeout:g}s")
                continue
            try:
                conn = _Connection(host, port, left, left, self.kerberos, self.key)
            except TRANSPORT_ERRORS as e:
                errors.append(f"thrift://{host}:{port}: {e}")
                continue
            try:
                conn.socket.setTimeout(max(deadline - time.monotonic(), 0.001) * 1000)
                conn.client.get_all_databases()
                return
            except (TException, *TRANSPORT_ERRORS) as e:
                errors.append(f"thrift://{host}:{port}: no answer within {timeout:g}s ({e})")
            finally:
                conn.close()
        raise MetastoreUnavailableError("metastore does not answer: " + "; ".join(errors))

    def reset(self) -> None:
        """Drop the idle connections (the metastore behind them was restarted)."""
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return

    def close(self) -> None:
        self._closed = True
        self._drain()
