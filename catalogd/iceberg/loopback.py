"""The REST door's HMS client: Thrift calls handed to the HMS endpoint's router in-process.

The Iceberg REST door keeps Iceberg tables exactly as Iceberg's ``HiveCatalog`` keeps them, and
it makes them with pyiceberg's own ``HiveCatalog`` code; only that code's socket is replaced.
Each call is encoded as a client would send it and answered by ``Router.handle`` for a
connection that carries the REST caller's principal, so every rule of the HMS door applies to
the REST door unchanged, in one place: routing by catalog (``@cat#db``), grants, read-only
catalogs, hidden stages, confined locations, drops made by catalogd, the metadata cache with
its invalidations (and the cluster's), the HMS lock keeper and the audit log (surface
``iceberg``).

A refused call comes back as the HMS exception a socket client would read; the router also
leaves the refusal itself in the connection's state (``LAST_ERROR``), which
:func:`typed_error` turns back into catalogd's typed error for the REST answer.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from pyiceberg.catalog.hive import _HiveClient
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.transport.TTransport import CReadableTransport, TTransportBase

from catalogd.errors import CatalogError
from catalogd.hms.refused import Refused
from catalogd.hms.router import LAST_ERROR
from catalogd.hms.server import ClientConnection
from catalogd.metastore.messages import Message, parse_message

__all__ = ["Handler", "LoopbackClient", "LoopbackTransport", "connection", "typed_error"]

#: ``Router.handle``: one call message -> the reply's bytes (None for a oneway call).
Handler = Callable[[ClientConnection, Message], "bytes | None"]


class LoopbackTransport(TTransportBase, CReadableTransport):
    """A Thrift transport whose flush hands the written call to ``handle`` and reads its reply.

    A ``CReadableTransport`` so the accelerated binary protocol decodes replies in C.
    """

    def __init__(self, handle: Handler, conn: ClientConnection) -> None:
        self._handle = handle
        self.conn = conn
        self._out = io.BytesIO()
        self._in = io.BytesIO(b"")

    def isOpen(self) -> bool:
        return True

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def write(self, buf: bytes) -> None:
        self._out.write(buf)

    def flush(self) -> None:
        data = self._out.getvalue()
        self._out = io.BytesIO()
        if not data:
            return
        self.conn.state.pop(LAST_ERROR, None)
        reply = self._handle(self.conn, parse_message(data))
        self._in = io.BytesIO(reply or b"")

    def read(self, sz: int) -> bytes:
        return self._in.read(sz)

    @property
    def cstringio_buf(self) -> io.BytesIO:
        return self._in

    def cstringio_refill(self, partialread: bytes, reqlen: int) -> io.BytesIO:
        # A whole reply is in the buffer: needing more means it was cut short.
        raise EOFError("the HMS endpoint's reply ended early")


class LoopbackClient(_HiveClient):
    """pyiceberg's ``_HiveClient`` (what ``HiveCatalog`` opens for each operation) on the loopback."""

    def __init__(self, handle: Handler, conn: ClientConnection) -> None:
        # Not _HiveClient.__init__: it parses a URI and makes a socket.
        self._transport = LoopbackTransport(handle, conn)
        self._ugi = None
        self._was_opened = False
        self.conn = conn

    def _init_thrift_transport(self) -> LoopbackTransport:
        transport: LoopbackTransport = self._transport
        return transport

    def _client(self) -> Any:
        from hive_metastore.ThriftHiveMetastore import Client

        return Client(TBinaryProtocolAccelerated(self._transport))


def connection(principal: str | None, peer: str) -> ClientConnection:
    """The connection the router sees for one REST request: its principal proven (by the bearer
    token the HTTP layer checked), its client's address, audited as the ``iceberg`` surface."""
    conn = ClientConnection(peer=peer, surface="iceberg")
    if principal is not None:
        conn.identity = (principal, ())
        conn.proven = "token"
        conn.proven_name = principal
    return conn


def typed_error(conn: ClientConnection, exc: BaseException) -> CatalogError | None:
    """The catalogd error behind an HMS exception the loopback raised: the router's own refusal
    of the connection's last call (None when the exception was not a refusal of catalogd's)."""
    last = conn.state.get(LAST_ERROR)
    if isinstance(last, CatalogError):
        return last
    if isinstance(last, Refused):
        return last.error
    return None
