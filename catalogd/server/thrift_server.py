"""A threaded Thrift server (framed transport, accelerated binary protocol)
that can stop gracefully: it stops accepting, lets requests in flight finish,
then closes idle connections."""

from __future__ import annotations

import logging
import select
import socket
import threading
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAcceleratedFactory
from thrift.transport import TSocket, TTransport

logger = logging.getLogger(__name__)

_POLL_SECONDS = 0.25


class ThriftServer:
    """Serve one Thrift processor on host:port, one thread per connection.

    Args:
        max_connections: connections served at once; more wait in the listen backlog.
        max_frame_size: larger frames are refused (the connection is closed).
    """

    def __init__(self, processor: Any, host: str, port: int, max_frame_size: int, max_connections: int) -> None:
        self.processor = processor
        self.host = host
        self.port = port
        self.max_frame_size = max_frame_size
        self._slots = threading.BoundedSemaphore(max_connections)
        self._transport_factory = TTransport.TFramedTransportFactory(max_frame_size)
        self._protocol_factory = TBinaryProtocolAcceleratedFactory()
        self._listener: socket.socket | None = None
        self._stopping = threading.Event()
        self._busy = 0
        self._busy_cond = threading.Condition()
        self._threads: set[threading.Thread] = set()
        self._accept_thread: threading.Thread | None = None

    def bind(self) -> None:
        sock = socket.create_server((self.host, self.port), backlog=128, reuse_port=False)
        self._listener = sock
        self.port = sock.getsockname()[1]

    def start(self) -> None:
        if self._listener is None:
            self.bind()
        self._accept_thread = threading.Thread(target=self._accept_loop, name="thrift-accept", daemon=True)
        self._accept_thread.start()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        self._listener.settimeout(_POLL_SECONDS)
        while not self._stopping.is_set():
            if not self._slots.acquire(timeout=_POLL_SECONDS):
                continue
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                self._slots.release()
                continue
            except OSError:
                self._slots.release()
                if self._stopping.is_set():
                    return
                logger.exception("accept failed")
                continue
            client.settimeout(None)
            thread = threading.Thread(target=self._serve_connection, args=(client,), name="thrift-conn", daemon=True)
            self._threads.add(thread)
            thread.start()

    def _serve_connection(self, client: socket.socket) -> None:
        tsocket = TSocket.TSocket()
        tsocket.setHandle(client)
        itrans = self._transport_factory.getTransport(tsocket)
        otrans = self._transport_factory.getTransport(tsocket)
        iprot = self._protocol_factory.getProtocol(itrans)
        oprot = self._protocol_factory.getProtocol(otrans)
        try:
            while not self._stopping.is_set():
                readable, _, _ = select.select([client], [], [], _POLL_SECONDS)
                if not readable:
                    continue
                with self._busy_cond:
                    self._busy += 1
                try:
                    self.processor.process(iprot, oprot)
                finally:
                    with self._busy_cond:
                        self._busy -= 1
                        self._busy_cond.notify_all()
        except TTransport.TTransportException as e:
            if e.type != TTransport.TTransportException.END_OF_FILE:
                logger.warning("closing Thrift connection: %s", e)
        except (OSError, EOFError):
            pass
        except Exception:
            logger.exception("unexpected error on a Thrift connection")
        finally:
            itrans.close()
            self._slots.release()
            self._threads.discard(threading.current_thread())

    def shutdown(self, grace: float = 10.0) -> None:
        """Stop accepting, wait up to ``grace`` seconds for requests in flight."""
        self._stopping.set()
        if self._listener is not None:
            self._listener.close()
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=2)
        with self._busy_cond:
            if not self._busy_cond.wait_for(lambda: self._busy == 0, timeout=grace):
                logger.warning("%d Thrift requests still running after %.0fs; closing anyway", self._busy, grace)
        for thread in list(self._threads):
            thread.join(timeout=1)
