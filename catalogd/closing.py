"""Closing a server's socket so that what it wrote last (an answer, a refusal) reaches the client.

A socket closed while bytes the peer sent are still unread in it makes the kernel send a reset
(RST) instead of a FIN: what was written just before (a 408, an error frame, the reply to a last
call) may be thrown away with it, or overtake nothing at all and leave the client with
"connection reset by peer" where it should have read the answer. So a server's doors close
this way instead: shut down the write side (a FIN goes after the answer), read and throw away
what the client still sends until it closes too, for at most ``LINGER`` seconds and
``DRAIN_LIMIT`` bytes, and only then close.

The draining is done by one thread of the process (``hand_off``), never by the thread that
serves connections: a client that keeps sending must not hold a server's thread or delay a
shutdown. It holds at most ``MAX_LINGERING`` sockets at once; past that a socket is closed at
once (a flood of closing connections must not hold file descriptors).

The HTTP server's event loop does the same with its transports (``catalogd.server.http``),
with these bounds.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time

logger = logging.getLogger(__name__)

__all__ = ["DRAIN_LIMIT", "LINGER", "MAX_LINGERING", "hand_off"]

#: The longest a closing socket waits for its client to close (seconds).
LINGER = 2.0
#: The most a closing socket reads and throws away before it is closed anyway.
DRAIN_LIMIT = 256 * 1024
#: Closing sockets drained at once; past that a socket is closed at once. Well inside the 256
#: file descriptors the daemon keeps beyond ``server.max-connections`` (``thrift_server``).
MAX_LINGERING = 128
_CHUNK = 64 * 1024


class _Lingerer:
    """The thread that drains closing sockets (one per process, started on first use)."""

    def __init__(self, linger: float = LINGER, limit: int = DRAIN_LIMIT, capacity: int = MAX_LINGERING) -> None:
        self.linger = linger
        self.limit = limit
        self.capacity = capacity
        self._lock = threading.Lock()
        self._selector: selectors.DefaultSelector | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._thread: threading.Thread | None = None
        #: socket -> (deadline, bytes read)
        self._sockets: dict[socket.socket, tuple[float, int]] = {}
        self._incoming: list[socket.socket] = []
        #: Sockets handed off and not closed yet (incoming, moving in, or drained).
        self._held = 0
        #: Sockets closed at once because ``capacity`` were lingering (tests read it).
        self.overflowed = 0

    def hand_off(self, sock: socket.socket) -> None:
        plain = _detach(sock)
        if plain is None:
            return
        with contextlib.suppress(OSError):
            # The FIN goes after every byte written so far: the client reads the answer, then EOF.
            plain.shutdown(socket.SHUT_WR)
        with self._lock:
            if self._held >= self.capacity:
                self.overflowed += 1
                full = True
            else:
                full = False
                self._held += 1
                self._incoming.append(plain)
                self._start_locked()
        if full:
            _close(plain)
            return
        self._wake()

    def lingering(self) -> int:
        with self._lock:
            return self._held

    def _start_locked(self) -> None:
        if self._thread is not None:
            return
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._run, name="socket-linger", daemon=True)
        self._thread.start()

    def _wake(self) -> None:
        if self._wake_w is not None:
            with contextlib.suppress(OSError):  # a full pipe wakes the thread too
                self._wake_w.send(b"\0")

    def _run(self) -> None:
        assert self._selector is not None and self._wake_r is not None
        while True:
            with self._lock:
                incoming, self._incoming = self._incoming, []
            now = time.monotonic()
            for sock in incoming:
                try:
                    sock.setblocking(False)
                    self._selector.register(sock, selectors.EVENT_READ)
                except (OSError, ValueError):
                    self._closed(sock)
                    continue
                self._sockets[sock] = (now + self.linger, 0)
            timeout = max(min((d for d, _ in self._sockets.values()), default=now + 60.0) - now, 0.0)
            for key, _ in self._selector.select(timeout):
                if key.fileobj is self._wake_r:
                    with contextlib.suppress(OSError):
                        self._wake_r.recv(4096)
                    continue
                if isinstance(key.fileobj, socket.socket):
                    self._drain(key.fileobj)
            now = time.monotonic()
            for sock, (deadline, _) in list(self._sockets.items()):
                if deadline <= now:
                    self._done(sock)

    def _drain(self, sock: socket.socket) -> None:
        deadline, read = self._sockets[sock]
        try:
            chunk = sock.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._done(sock)
            return
        read += len(chunk)
        if not chunk or read >= self.limit:  # the client closed too, or sends too much to wait for
            self._done(sock)
        else:
            self._sockets[sock] = (deadline, read)

    def _done(self, sock: socket.socket) -> None:
        assert self._selector is not None
        self._sockets.pop(sock, None)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(sock)
        self._closed(sock)

    def _closed(self, sock: socket.socket) -> None:
        _close(sock)
        with self._lock:
            self._held -= 1


def _detach(sock: socket.socket) -> socket.socket | None:
    """A plain socket on ``sock``'s connection, which ``sock`` no longer owns (None: already closed).

    A TLS socket's records were written whole; what is drained is thrown away unread, so the
    TLS layer has no part in it (its own shutdown would wait for the client's close_notify).
    """
    try:
        family, kind, proto = sock.family, sock.type, sock.proto
        fd = sock.detach()
    except OSError:
        return None
    if fd < 0:
        return None
    return socket.socket(family, kind, proto, fileno=fd)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()


_lingerer = _Lingerer()


def hand_off(sock: socket.socket) -> None:
    """Close ``sock`` cleanly (see the module's docstring): returns at once; ``sock`` is closed for
    the caller (its file descriptor now belongs to the draining thread)."""
    _lingerer.hand_off(sock)
