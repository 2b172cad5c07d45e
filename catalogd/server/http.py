"""Serves the HTTP app with uvicorn on a thread of its own: bind, start, graceful stop, slow clients cut.

uvicorn times out an idle kept-alive connection but not a request that is still arriving
(it has no header-read timeout), so the protocol here gives every request a deadline: from
the connection (or the first byte of the next request) to the end of its body. A client
that misses it gets a 408 and is closed, quietly: a slow client is not a bug to log. A 408 or
400 is followed by a clean close (``catalogd.closing``): the write side is shut down and what
the client still sends is read and thrown away until it closes too, so the answer is not lost
to a reset.
Signals stay with the daemon; this server only listens to ``stop``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from catalogd.closing import DRAIN_LIMIT, LINGER
from catalogd.config import TlsConfig
from catalogd.errors import InternalError
from catalogd.server.access import Access
from catalogd.server.console.app import ConsoleSources
from catalogd.server.http_app import PeerReceiver, Pinger, RefreshService, create_app
from catalogd.server.http_models import Error
from catalogd.server.metrics import Metrics

if TYPE_CHECKING:
    from catalogd.iceberg.door import IcebergDoor

logger = logging.getLogger(__name__)

#: Seconds a client has to send a whole request (headers and body), from connecting or from its first byte.
REQUEST_TIMEOUT = 10.0
#: Seconds an idle kept-alive connection stays open.
KEEP_ALIVE = 5
#: Connections the kernel queues before they are accepted.
BACKLOG = 2048
#: Seconds to wait for the server's thread to start serving.
START_TIMEOUT = 30.0


class _Connection(h11.Connection):
    """h11's connection, remembering why it refused a request (uvicorn only logs that it did)."""

    last_error: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as e:
            self.last_error = e
            raise


class DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, plus a deadline for receiving each request, and JSON 400/408 answers."""

    request_timeout: ClassVar[float] = REQUEST_TIMEOUT
    conn: _Connection

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _Connection(h11.SERVER)
        self._deadline: asyncio.TimerHandle | None = None
        #: An answer was written and the connection is closing: what arrives is thrown away.
        self._lingering: asyncio.TimerHandle | None = None
        self._drained = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        # A new connection owes a request (uvicorn's keep-alive timer starts only after a response).
        self._deadline = self.loop.call_later(self.request_timeout, self._too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._lingering is not None:
            self._lingering.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering is not None:
            self._drained += len(data)
            if self._drained >= DRAIN_LIMIT:
                self.transport.close()
            return
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Arm the deadline while a request is arriving; disarm it once the request is in (or gone)."""
        if self.transport.is_closing():
            self._disarm()
            return
        state = self.conn.their_state
        waiting = state is h11.IDLE and (bool(self.conn.trailing_data[0]) or self.timeout_keep_alive_task is None)
        if state is h11.SEND_BODY or waiting:
            if self._deadline is None:
                self._deadline = self.loop.call_later(self.request_timeout, self._too_slow)
        else:
            self._disarm()

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        logger.debug("HTTP client %s sent no whole request within %gs: closed", self.client, self.request_timeout)
        cycle = self.cycle
        if cycle is None or cycle.response_complete or not cycle.response_started:
            self._answer(408, "request-timeout", f"the request did not arrive within {self.request_timeout:g}s")
        if cycle is not None and not cycle.response_complete:
            # The app may be waiting for the rest of the body: it gets a disconnect, and what it
            # answers goes nowhere.
            cycle.disconnected = True
            cycle.message_event.set()
        self._close_after_answer()

    def send_400_response(self, msg: str) -> None:
        error = self.conn.last_error
        self._answer(400, "invalid-argument", f"malformed HTTP request: {error or msg}")
        self._close_after_answer()

    def _close_after_answer(self) -> None:
        """Close so that the answer just written reaches the client (see ``catalogd.closing``): a FIN
        after it, the client's further bytes read and dropped, closed at its EOF (the transport
        closes itself then), at ``DRAIN_LIMIT`` bytes or after ``LINGER`` seconds."""
        if self._lingering is not None or self.transport.is_closing():
            return
        self._disarm()
        transport = self.transport
        if transport.can_write_eof():  # not over TLS: there the client closes after the answer's length
            transport.write_eof()
        self._lingering = self.loop.call_later(LINGER, transport.close)

    def _answer(self, status: int, kind: str, message: str) -> None:
        """Write a whole error response past h11 (the request is broken or incomplete) and close after it."""
        body = json.dumps(Error.of(kind, message).model_dump(), indent=2).encode() + b"\n"
        reason = {400: "Bad Request", 408: "Request Timeout"}[status]
        head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
        self.transport.write(head.encode() + body)


def _protocol(request_timeout: float) -> type[DeadlineProtocol]:
    return type("DeadlineProtocol", (DeadlineProtocol,), {"request_timeout": request_timeout})


def _loop_problem(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    exc = context.get("exception")
    if isinstance(exc, OSError):
        # Out of file descriptors at accept, a reset socket: a condition, not a bug (asyncio retries).
        logger.warning("HTTP server: %s: %s", context.get("message"), exc)
        return
    loop.default_exception_handler(context)


class _Uvicorn(uvicorn.Server):
    """uvicorn's server without its signal handlers (the daemon owns signals), telling when it serves."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.serving = threading.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.get_running_loop().set_exception_handler(_loop_problem)
        await super().startup(sockets)
        if self.started:
            self.serving.set()


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def _tls_settings(tls: TlsConfig | None) -> dict[str, Any]:
    """uvicorn's settings for HTTPS (with a client CA: a client certificate is required)."""
    if tls is None:
        return {}
    settings: dict[str, Any] = {"ssl_certfile": str(tls.cert), "ssl_keyfile": str(tls.key)}
    if tls.client_ca is not None:
        settings.update(ssl_ca_certs=str(tls.client_ca), ssl_cert_reqs=ssl.CERT_REQUIRED)
    return settings


class HttpServer:
    """The daemon's HTTP port: the app of ``http_app`` served by uvicorn on its own thread and event loop."""

    def __init__(self, host: str, port: int, manager: Pinger, metrics: Metrics,
                 dynamic: RefreshService | None = None, *, shutdown_grace: float = 10.0,
                 request_timeout: float = REQUEST_TIMEOUT, keep_alive: int = KEEP_ALIVE,
                 tls: TlsConfig | None = None, access: Access | None = None,
                 console: ConsoleSources | None = None, peers: PeerReceiver | None = None,
                 iceberg: IcebergDoor | None = None) -> None:
        """Bind the port (so that a port in use fails here, before anything runs).

        Raises:
            OSError: the address cannot be bound.
        """
        self.app = create_app(manager, metrics, dynamic, access, console, peers, iceberg)
        self.shutdown_grace = shutdown_grace
        self._socket = _bind(host, port)
        self._port = int(self._socket.getsockname()[1])
        config = uvicorn.Config(
            self.app, http=_protocol(request_timeout), loop="asyncio", lifespan="off", ws="none",
            log_config=None, log_level="warning", access_log=False, proxy_headers=False,
            timeout_keep_alive=keep_alive, backlog=BACKLOG,
            # uvicorn counts whole seconds.
            timeout_graceful_shutdown=math.ceil(shutdown_grace),
            **_tls_settings(tls),
        )
        self._server = _Uvicorn(config)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._port

    def start(self) -> None:
        """Serve on a thread; return once the server accepts connections.

        Raises:
            InternalError: the server did not start (the reason is in the log).
        """
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        name="http", daemon=True)
        self._thread.start()
        waited = 0.0
        while not self._server.serving.wait(0.1):
            waited += 0.1
            if not self._thread.is_alive() or waited >= START_TIMEOUT:
                self.stop()
                raise InternalError(f"the HTTP server on port {self.port} did not start (see the log)")

    def stop(self) -> None:
        """Stop accepting, let requests in flight finish within the shutdown grace, then close."""
        self._server.should_exit = True
        if self._thread is not None:
            # uvicorn waits the grace, then cancels what is left; a little more for that.
            self._thread.join(self.shutdown_grace + 5.0)
            if self._thread.is_alive():
                logger.warning("the HTTP server did not stop within %gs; leaving it", self.shutdown_grace + 5.0)
        self._socket.close()
