"""Raw HMS Thrift calls relayed to a metastore on connections kept per client identity.

The HMS endpoint hands a client's call to the backing metastore as the bytes the client sent
and gets the reply back as the bytes the metastore sent (``messages``). HMS remembers the user
a connection named with ``set_ugi`` for every later call on it, so a connection is only ever
reused for the same identity: a client that never calls ``set_ugi`` gets a connection on
which nobody did, never one another client set.
"""

from __future__ import annotations

import collections
import logging
import select
import socket
import threading
import time
from collections.abc import Callable
from contextlib import suppress

from catalogd.errors import MetastoreUnavailableError
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.metastore.access_key import KeySource, send_key
from catalogd.metastore.messages import CALL, EXCEPTION, Message, MessageStream, ProtocolError, decode, encode
from catalogd.metastore.sasl import MetastoreKerberos, SaslChannel, SaslError

logger = logging.getLogger(__name__)

__all__ = ["Identity", "RelayPool"]

#: ``set_ugi``'s user and groups; None: the client never called it.
Identity = tuple[str, tuple[str, ...]] | None

#: Seconds after its last call during which an idle connection is not checked before reuse.
_FRESH = 1.0

#: Broken connections: the call may or may not have run.
_BROKEN = (OSError, EOFError, ProtocolError)


class _Upstream:
    """One connection to the metastore, owned by one identity."""

    def __init__(self, address: tuple[str, int], connect_timeout: float, socket_timeout: float,
                 max_message: int, kerberos: MetastoreKerberos | None = None, key: KeySource | None = None) -> None:
        self.address = address
        self.sock = socket.create_connection(address, timeout=connect_timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            # An embedded metastore's key first, before any Thrift or SASL byte.
            send_key(self.sock, key)
        except BaseException:
            self.close()
            raise
        self._send: Callable[[bytes], None] = self.sock.sendall
        recv: Callable[[int], bytes] = self.sock.recv
        if kerberos is not None:
            # SASL GSSAPI first (within the connect timeout); then every call travels in its frames.
            try:
                channel = SaslChannel(self.sock, kerberos.login, kerberos.service_for(address[0]), max_message)
            except BaseException:
                self.close()
                raise
            self._send, recv = channel.sendall, channel.recv
        self.sock.settimeout(socket_timeout)
        self.stream = MessageStream(recv, max_message)
        self.last_used = time.monotonic()

    def call(self, request: bytes) -> Message:
        self._send(request)
        reply = self.stream.read_message()
        self.last_used = time.monotonic()
        return reply

    def looks_alive(self) -> bool:
        # A connection used a moment ago is taken as alive (no system call on the hot path);
        # a call on one that died meanwhile is retried (reads) or reported (writes).
        if time.monotonic() - self.last_used < _FRESH:
            return True
        # HMS never talks unasked: an idle socket that is readable was closed by the peer.
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def close(self) -> None:
        with suppress(OSError):
            self.sock.close()


class RelayPool:
    """Relays raw calls to one metastore (its URIs tried in turn).

    Args:
        name: what messages call the metastore (``catalog main``).
        addresses: the metastore's current addresses (an embedded one's may change on restart).
        connect_timeout, socket_timeout: seconds, as the catalog's own client uses.
        max_in_flight: calls relayed at once; one more waits up to ``socket_timeout`` for a slot.
        max_idle: idle connections kept, over all identities.
        max_message: the largest reply accepted, in bytes.
        kerberos: reach a kerberized metastore this way (catalogd's own principal); None: plain.
        key: what to send first on each connection (an embedded metastore's key); None: nothing.
    """

    def __init__(self, name: str, addresses: Callable[[], list[tuple[str, int]]], connect_timeout: float = 5.0,
                 socket_timeout: float = 60.0, max_in_flight: int | None = None, max_idle: int = 64,
                 max_message: int = 256 * 1024 * 1024, kerberos: MetastoreKerberos | None = None,
                 key: KeySource | None = None) -> None:
        self.name = name
        self._kerberos = kerberos
        self._key = key
        self._addresses = addresses
        self._connect_timeout = connect_timeout
        self._socket_timeout = socket_timeout
        self._max_message = max_message
        self._max_idle = max_idle
        self._slots = threading.BoundedSemaphore(max_in_flight) if max_in_flight else None
        self._idle: collections.OrderedDict[int, tuple[Identity, _Upstream]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._preferred = 0
        self._closed = False

    def call(self, identity: Identity, request: bytes, retry: bool) -> Message:
        """Send one whole call message and return the reply message.

        Args:
            identity: the client's ``set_ugi`` identity, replayed on a new connection.
            request: the call's bytes as the client sent them.
            retry: the call is safe to run twice: a broken connection is retried once on a new one.

        Raises:
            MetastoreUnavailableError: no metastore answered (or the connection broke on a call
                that may have run).
        """
        if self._slots is not None and not self._slots.acquire(timeout=self._socket_timeout):
            raise MetastoreUnavailableError(f"metastore of {self.name}: no call slot free within "
                                            f"{self._socket_timeout:g}s")
        try:
            for attempt in range(2 if retry else 1):
                conn = self._checkout(identity)
                try:
                    reply = conn.call(request)
                except _BROKEN as e:
                    conn.close()
                    if attempt == 0 and retry:
                        logger.info("metastore of %s: relayed call broke (%s); retrying on a new connection",
                                    self.name, e)
                        self.reset()
                        continue
                    raise MetastoreUnavailableError(f"metastore of {self.name}: call failed: {e}") from e
                self._checkin(identity, conn)
                return reply
            raise AssertionError("unreachable")
        finally:
            if self._slots is not None:
                self._slots.release()

    def _checkout(self, identity: Identity) -> _Upstream:
        with self._lock:
            if self._closed:
                raise MetastoreUnavailableError(f"metastore of {self.name}: closed")
            key = next((k for k, (owner, _) in reversed(self._idle.items()) if owner == identity), None)
            conn = self._idle.pop(key)[1] if key is not None else None
        if conn is not None and conn.looks_alive():
            return conn
        if conn is not None:
            conn.close()
        return self._connect(identity)

    def _checkin(self, identity: Identity, conn: _Upstream) -> None:
        with self._lock:
            if self._closed:
                conn.close()
                return
            self._idle[id(conn)] = (identity, conn)
            while len(self._idle) > self._max_idle:
                _, (_, oldest) = self._idle.popitem(last=False)
                oldest.close()

    def _connect(self, identity: Identity) -> _Upstream:
        addresses = self._addresses()
        if not addresses:
            raise MetastoreUnavailableError(f"metastore of {self.name}: address not known yet")
        errors = []
        with self._lock:
            start = self._preferred % len(addresses)
        for step in range(len(addresses)):
            index = (start + step) % len(addresses)
            address = addresses[index]
            try:
                conn = _Upstream(address, self._connect_timeout, self._socket_timeout, self._max_message,
                                 self._kerberos, self._key)
            except (OSError, EOFError, SaslError, MetastoreUnavailableError) as e:
                what = "SASL GSSAPI: " if isinstance(e, SaslError | EOFError) else ""
                errors.append(f"thrift://{address[0]}:{address[1]}: {what}{e or 'connection closed'}")
                continue
            if identity is not None:
                try:
                    self._set_ugi(conn, identity)
                except (*_BROKEN, MetastoreUnavailableError) as e:
                    conn.close()
                    errors.append(f"thrift://{address[0]}:{address[1]}: set_ugi failed: {e}")
                    continue
            with self._lock:
                self._preferred = index
            return conn
        raise MetastoreUnavailableError(f"metastore of {self.name} unreachable: " + "; ".join(errors))

    @staticmethod
    def _set_ugi(conn: _Upstream, identity: tuple[str, tuple[str, ...]]) -> None:
        user, groups = identity
        args = ThriftHiveMetastore.set_ugi_args(user_name=user, group_names=list(groups))
        reply = conn.call(encode("set_ugi", CALL, 0, args))
        if reply.type == EXCEPTION:
            raise MetastoreUnavailableError("the metastore refused set_ugi")
        result = decode(ThriftHiveMetastore.set_ugi_result(), reply.body)
        if result.o1 is not None:
            raise MetastoreUnavailableError(f"the metastore refused set_ugi: {result.o1.message}")

    def reset(self) -> None:
        """Close the idle connections (the metastore behind them may have restarted)."""
        with self._lock:
            idle = [conn for _, conn in self._idle.values()]
            self._idle.clear()
        for conn in idle:
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.reset()

    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)
