"""The Thrift server (framed transport, accelerated binary protocol): one selector thread reads
frames from every connection without blocking, a bounded pool of worker threads runs the calls,
and idle, slow or greedy connections are closed before they can starve anyone else.

Why this shape: a thread per connection lets a few idle or half-sent connections take every
slot. Here a connection costs a socket and a small buffer until a whole frame has arrived;
only then does it take a worker, for as long as its call runs.

Limits (each closes the offending connection, never the server):

* ``idle_timeout``: no frame arriving and no call running for that long;
* ``frame_timeout``: a frame that started arriving is not complete that long after its first
  byte, or a reply is not fully taken by the client that long after it was ready;
* ``max_frame_size``: a frame that announces more;
* ``max_buffered_bytes``: the request bytes held in memory in total (frames arriving plus
  frames whose call has not finished); when a new chunk would go over it, the connection with
  the largest partial frame is closed (it frees the most, and ordinary calls are small);
* ``max_connections``: connections still in their TLS handshake count against it like any
  other. At the cap, a new connection closes the one that has been handshaking the longest
  (a client that never finishes its handshake must not lock real clients out), else the
  connection idle the longest (as nginx drains keep-alive connections); when none is either,
  the new one is closed at once, so its client fails fast instead of hanging in the listen
  backlog.

A connection reads its next frame only once the reply to the previous one is sent: Thrift
clients are sequential, and so one client can never hold more than one worker.

With an ``ssl_context`` every accepted socket is wrapped and its handshake driven by the
selector like a frame (``SSLWantReadError``/``SSLWantWriteError`` say which readiness to wait
for), within ``frame_timeout``. A TLS socket may hold decrypted bytes that ``select`` cannot
see (``pending()``): they are read before the connection waits for readiness again.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import logging
import queue
import resource
import selectors
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocolAcceleratedFactory
from thrift.transport import TTransport

from catalogd.closing import hand_off
from catalogd.ratelog import BoundedLog
from catalogd.server.session import Session, reset_session, use_session

logger = logging.getLogger(__name__)

__all__ = ["ThriftServer"]

_HEADER = struct.Struct("!i")
#: The most read from one socket per readiness event: big frames arrive in several turns,
#: so one fast sender cannot hold the selector thread.
_CHUNK = 256 * 1024
#: The most connections accepted per readiness event of the listener (others wait a turn).
_ACCEPT_BATCH = 64
#: How long the listener rests after the process ran out of file descriptors.
_ACCEPT_PAUSE = 0.5
#: The longest the selector sleeps: it also notices ``shutdown`` this often.
_TICK = 1.0
#: File descriptors kept beyond ``max_connections`` for the metastore clients, logs, pipes.
_SPARE_FDS = 256

_HANDSHAKE, _READING, _RUNNING, _WRITING, _CLOSED = "handshake", "reading", "running", "writing", "closed"
_WAKE = object()
_LISTENER = object()


class _Connection:
    """One client connection, owned by the selector thread (workers only see its frame)."""

    __slots__ = ("body", "header", "held", "length", "peer", "reply", "sent", "session", "since", "sock", "state")

    def __init__(self, sock: socket.socket, peer: str, now: float) -> None:
        self.sock = sock
        self.peer = peer
        self.state = _READING
        self.header = bytearray()
        self.body = bytearray()
        self.length = -1  # of the frame arriving; -1 until its header is complete
        self.since = now  # when it became idle, started a frame, or started writing a reply
        self.reply: memoryview | None = None
        self.sent = 0
        self.held = 0  # request bytes counted in the server's buffered total
        #: Who the connection authenticated as; its calls see it (``catalogd.server.session``).
        self.session = Session(peer)

    def buffered(self) -> int:
        return len(self.header) + len(self.body)


class _WorkerPool:
    """A fixed set of daemon threads taking calls from one queue.

    Daemon threads, unlike ``ThreadPoolExecutor``'s, let the process exit while a call is
    stuck past the shutdown grace (a hung metastore must not hold the daemon's exit).
    """

    def __init__(self, size: int) -> None:
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._run, name=f"thrift-worker-{i}", daemon=True)
                         for i in range(size)]
        for thread in self._threads:
            thread.start()

    def submit(self, task: Callable[[], None]) -> None:
        self._queue.put(task)

    def _run(self) -> None:
        while (task := self._queue.get()) is not None:
            task()

    def stop(self) -> None:
        """Let idle workers end; a worker inside a call ends when the call returns."""
        for _ in self._threads:
            self._queue.put(None)


class ThriftServer:
    """Serve one Thrift processor on host:port.

    Args:
        max_frame_size: larger frames are refused (the connection is closed).
        workers: calls run at the same time (the worker pool's size); more wait their turn.
        max_connections: connections open at once (see the module text for what happens at the cap).
        idle_timeout: seconds a connection may stay without a frame arriving or a call running.
        frame_timeout: seconds a frame may take to arrive from its first byte, and a reply to be taken.
        max_buffered_bytes: request bytes held in memory in total, over all connections.
    """

    def __init__(self, processor: Any, host: str, port: int, max_frame_size: int, workers: int, *,
                 max_connections: int = 1000, idle_timeout: float = 300.0, frame_timeout: float = 30.0,
                 max_buffered_bytes: int = 64 * 1024 * 1024, ssl_context: ssl.SSLContext | None = None) -> None:
        self.processor = processor
        self.ssl_context = ssl_context
        self.host = host
        self.port = port
        self.max_frame_size = max_frame_size
        self.workers = workers
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.frame_timeout = frame_timeout
        self.max_buffered_bytes = max_buffered_bytes
        self._protocol_factory = TBinaryProtocolAcceleratedFactory()
        self._listener: socket.socket | None = None
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._pool: _WorkerPool | None = None
        self._thread: threading.Thread | None = None
        # Only the selector thread touches the connections and these indexes; each index keeps
        # its connections in the order of ``since``, so the first one is the next to expire.
        self._conns: dict[int, _Connection] = {}
        self._idle: collections.OrderedDict[_Connection, None] = collections.OrderedDict()
        self._partial: collections.OrderedDict[_Connection, None] = collections.OrderedDict()
        self._writing: collections.OrderedDict[_Connection, None] = collections.OrderedDict()
        self._handshaking: collections.OrderedDict[_Connection, None] = collections.OrderedDict()
        self._buffered = 0
        self._listener_paused_until = 0.0
        # Workers hand finished calls back through this deque (and a byte on the wake socket).
        self._done: collections.deque[tuple[_Connection, bytes | None]] = collections.deque()
        # Calls dispatched whose reply is not sent yet (or given up): what shutdown waits for.
        self._busy = 0
        self._busy_cond = threading.Condition()
        self._stopping = threading.Event()
        self._exit = threading.Event()
        self._listener_closed = threading.Event()
        self._warn_oversize = BoundedLog(logger, "thrift-oversize-frame", interval=10.0)
        self._warn_buffered = BoundedLog(logger, "thrift-buffer-budget", interval=10.0)
        self._warn_full = BoundedLog(logger, "thrift-connection-cap", interval=10.0)
        self._warn_accept = BoundedLog(logger, "thrift-accept-failed", interval=10.0)
        self._warn_handshake = BoundedLog(logger, "thrift-tls-handshake-failed", interval=10.0)

    # ------------------------------------------------------------ lifecycle

    def bind(self) -> None:
        sock = socket.create_server((self.host, self.port), backlog=1024, reuse_port=False)
        sock.setblocking(False)
        self._listener = sock
        self.port = sock.getsockname()[1]

    def start(self) -> None:
        if self._listener is None:
            self.bind()
        assert self._listener is not None
        self._raise_fd_limit()
        self._pool = _WorkerPool(self.workers)
        self._selector.register(self._listener, selectors.EVENT_READ, _LISTENER)
        self._selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
        self._thread = threading.Thread(target=self._loop, name="thrift-selector", daemon=True)
        self._thread.start()

    def _raise_fd_limit(self) -> None:
        # Many systems start processes with a soft limit of 1024 descriptors: too few for the cap.
        wanted = self.max_connections + _SPARE_FDS
        try:
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            if soft != resource.RLIM_INFINITY and soft < wanted:
                new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
                resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
                if new < wanted:
                    logger.warning("the open file limit (%d) is below server.max-connections (%d) plus %d: "
                                   "connections beyond it are refused", new, self.max_connections, _SPARE_FDS)
        except (OSError, ValueError) as e:
            logger.warning("cannot raise the open file limit for server.max-connections: %s", e)

    def shutdown(self, grace: float = 10.0) -> None:
        """Stop accepting and close idle connections at once; wait up to ``grace`` seconds
        for the calls in flight to finish and their replies to be sent; then close everything."""
        self._stopping.set()
        if self._thread is None:
            if self._listener is not None:
                self._listener.close()
            self._close_wake()
            return
        self._wake()
        self._listener_closed.wait(timeout=5)
        with self._busy_cond:
            if not self._busy_cond.wait_for(lambda: self._busy == 0, timeout=grace):
                logger.warning("%d Thrift requests still running after %.0fs; closing anyway", self._busy, grace)
        self._exit.set()
        self._wake()
        self._thread.join(timeout=5)
        if self._pool is not None:
            self._pool.stop()
        self._close_wake()

    def _close_wake(self) -> None:
        self._wake_r.close()
        self._wake_w.close()

    def stats(self) -> dict[str, int]:
        """A snapshot for tests and diagnostics (read without locking: each number may be a moment old)."""
        return {"connections": len(self._conns), "buffered_bytes": self._buffered, "busy": self._busy,
                "partial_frames": len(self._partial)}

    def _wake(self) -> None:
        # A full pipe already wakes the selector; a closed one means it has stopped.
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    # ------------------------------------------------------------ the selector thread

    def _loop(self) -> None:
        try:
            while not self._exit.is_set():
                events = self._selector.select(self._next_timeout())
                for key, mask in events:
                    if key.data is _LISTENER:
                        self._accept()
                    elif key.data is _WAKE:
                        self._drain_wake()
                    else:
                        conn: _Connection = key.data
                        if conn.state == _CLOSED:
                            continue  # closed earlier in this round (to make room, or over the byte cap)
                        if conn.state == _HANDSHAKE:
                            self._handshake(conn)
                        elif mask & selectors.EVENT_WRITE:
                            self._write(conn)
                        elif mask & selectors.EVENT_READ:
                            self._read(conn)
                self._finish_calls()
                now = time.monotonic()
                self._expire(now)
                self._resume_listener(now)
                if self._stopping.is_set():
                    self._stop_serving()
        except Exception:  # a bug here must not leave clients hanging silently
            logger.exception("the Thrift selector thread failed; closing every connection")
        finally:
            self._stop_serving()
            # A call still running past the grace keeps its socket: its worker closes it when the call
            # returns, so its client is not told anything before the call has really ended.
            for conn in list(self._conns.values()):
                if conn.state != _RUNNING:
                    self._close(conn)
            self._selector.close()

    def _next_timeout(self) -> float:
        deadlines = [time.monotonic() + _TICK]
        if self._idle:
            deadlines.append(next(iter(self._idle)).since + self.idle_timeout)
        if self._partial:
            deadlines.append(next(iter(self._partial)).since + self.frame_timeout)
        if self._writing:
            deadlines.append(next(iter(self._writing)).since + self.frame_timeout)
        if self._handshaking:
            deadlines.append(next(iter(self._handshaking)).since + self.frame_timeout)
        if self._listener_paused_until:
            deadlines.append(self._listener_paused_until)
        return max(0.0, min(deadlines) - time.monotonic())

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass

    def _stop_serving(self) -> None:
        """Close the listener and every connection that has no call running (once)."""
        if self._listener is not None:
            if not self._listener_paused_until:
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(self._listener)
            self._listener.close()
            self._listener = None
        self._listener_closed.set()
        for conn in list(self._idle) + list(self._partial) + list(self._handshaking):
            self._close(conn)

    # ------------------------------------------------------------ accepting

    def _accept(self) -> None:
        assert self._listener is not None
        for _ in range(_ACCEPT_BATCH):
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            except ConnectionAbortedError:
                continue
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # The connection stays in the backlog; rest so as not to spin on it.
                    self._warn_accept.warning("cannot accept Thrift connections (%s, %d open); retrying",
                                              e.strerror, len(self._conns))
                    self._pause_listener()
                    return
                raise
            now = time.monotonic()
            peer = _peer(address)
            if len(self._conns) >= self.max_connections and not self._make_room():
                self._warn_full.warning("server.max-connections (%d) reached and none idle: "
                                        "closed a new Thrift connection from %s", self.max_connections, peer)
                _close_quietly(sock)
                continue
            sock.setblocking(False)
            with contextlib.suppress(OSError):  # not TCP, or gone already: only a latency nicety
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                try:
                    sock = self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
                except (ssl.SSLError, OSError) as e:
                    logger.debug("cannot start TLS with %s: %s", peer, e)
                    _close_quietly(sock)
                    continue
            conn = _Connection(sock, peer, now)
            self._conns[sock.fileno()] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)
            if self.ssl_context is not None:
                conn.state = _HANDSHAKE
                self._handshaking[conn] = None
            else:
                self._idle[conn] = None

    def _handshake(self, conn: _Connection) -> None:
        """One step of a TLS handshake (the selector found the socket ready for it)."""
        assert isinstance(conn.sock, ssl.SSLSocket)
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
            return
        except ssl.SSLWantWriteError:
            self._selector.modify(conn.sock, selectors.EVENT_WRITE, conn)
            return
        except (ssl.SSLError, OSError) as e:
            # A plaintext client, a certificate the client CA did not sign, no certificate under
            # mutual TLS, or a client gone: its connection closes, nothing else is affected.
            self._warn_handshake.warning("TLS handshake with the Thrift client %s failed: %s", conn.peer,
                                         getattr(e, "reason", None) or e)
            self._close(conn)
            return
        del self._handshaking[conn]
        conn.state = _READING
        conn.since = time.monotonic()
        self._idle[conn] = None
        self._selector.modify(conn.sock, selectors.EVENT_READ, conn)
        self._read_pending(conn)

    def _make_room(self) -> bool:
        """Close the connection handshaking the longest, else the one idle the longest; False when
        none is either."""
        if self._handshaking:
            victim, what = next(iter(self._handshaking)), "still in its TLS handshake"
        elif self._idle:
            victim, what = next(iter(self._idle)), "idle the longest"
        else:
            return False
        logger.debug("server.max-connections reached: closing the Thrift connection from %s, %s", victim.peer, what)
        self._close(victim)
        return True

    def _pause_listener(self) -> None:
        if self._listener is not None and not self._listener_paused_until:
            self._selector.unregister(self._listener)
            self._listener_paused_until = time.monotonic() + _ACCEPT_PAUSE

    def _resume_listener(self, now: float) -> None:
        if self._listener_paused_until and now >= self._listener_paused_until:
            self._listener_paused_until = 0.0
            if self._listener is not None:
                self._selector.register(self._listener, selectors.EVENT_READ, _LISTENER)

    # ------------------------------------------------------------ reading a frame

    def _read_pending(self, conn: _Connection) -> None:
        """Read what a TLS socket already decrypted (``select`` does not see it) while ``conn`` reads."""
        sock = conn.sock
        while conn.state == _READING and isinstance(sock, ssl.SSLSocket) and sock.pending():
            self._read(conn, drain=False)

    def _read(self, conn: _Connection, drain: bool = True) -> None:
        want = _HEADER.size - len(conn.header) if conn.length < 0 else min(_CHUNK, conn.length - len(conn.body))
        try:
            chunk = conn.sock.recv(want)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except OSError as e:
            logger.debug("Thrift connection from %s failed while reading: %s", conn.peer, e)
            self._close(conn)
            return
        if not chunk:
            if conn.buffered():
                logger.debug("Thrift client %s went away in the middle of a frame", conn.peer)
            self._close(conn)
            return
        if not conn.buffered():  # the first byte of a frame
            self._idle.pop(conn, None)
            conn.since = time.monotonic()
            self._partial[conn] = None
        if not self._reserve(conn, len(chunk)):
            return
        if conn.length < 0:
            conn.header += chunk
            if len(conn.header) < _HEADER.size:
                return
            conn.length = _HEADER.unpack(conn.header)[0]
            if conn.length > self.max_frame_size:
                self._warn_oversize.warning("closing the Thrift connection from %s: a frame of %d bytes is larger "
                                            "than the maximum (server.max-frame-size %d)",
                                            conn.peer, conn.length, self.max_frame_size)
                self._close(conn)
                return
            if conn.length <= 0:
                logger.debug("closing the Thrift connection from %s: invalid frame size %d", conn.peer, conn.length)
                self._close(conn)
                return
        else:
            conn.body += chunk
        if len(conn.body) == conn.length:
            self._dispatch(conn)
        elif drain:
            self._read_pending(conn)

    def _reserve(self, conn: _Connection, size: int) -> bool:
        """Count ``size`` more bytes for ``conn``, closing the largest partial frames to stay under the cap.

        False when ``conn`` itself was closed.
        """
        while self._buffered + size > self.max_buffered_bytes:
            victim = max(self._partial, key=lambda c: c.buffered() + (size if c is conn else 0))
            self._warn_buffered.warning(
                "Thrift requests hold %d bytes, a new chunk would pass server.max-buffered-bytes (%d): closing the "
                "connection from %s with the largest partial frame (%d bytes)",
                self._buffered, self.max_buffered_bytes, victim.peer, victim.buffered())
            self._close(victim)
            if victim is conn:
                return False
        self._buffered += size
        conn.held += size
        return True

    # ------------------------------------------------------------ running a call

    def _dispatch(self, conn: _Connection) -> None:
        del self._partial[conn]
        frame = conn.body
        conn.header = bytearray()
        conn.body = bytearray()
        conn.length = -1
        conn.state = _RUNNING
        self._selector.unregister(conn.sock)
        with self._busy_cond:
            self._busy += 1
        assert self._pool is not None
        self._pool.submit(lambda: self._call(conn, frame))

    def _call(self, conn: _Connection, frame: bytearray) -> None:
        """In a worker: run the processor on ``frame``; hand the framed reply to the selector thread."""
        reply: bytes | None
        otrans = TTransport.TMemoryBuffer()
        # The worker runs calls of many connections: the handler finds this one's principal here.
        token = use_session(conn.session)
        try:
            itrans = TTransport.TMemoryBuffer(frame)
            self.processor.process(self._protocol_factory.getProtocol(itrans),
                                   self._protocol_factory.getProtocol(otrans))
            payload = otrans.getvalue()
            reply = _HEADER.pack(len(payload)) + payload if payload else b""
        except Exception as e:
            if otrans.getvalue():
                # The request was read and the handler ran: failing to write its reply is our bug.
                logger.exception("cannot write the reply to a Thrift call from %s", conn.peer)
            else:
                logger.debug("closing the Thrift connection from %s: unreadable request (%s: %s)",
                             conn.peer, type(e).__name__, e)
            reply = None
        finally:
            reset_session(token)
        self._done.append((conn, reply))
        if self._exit.is_set():
            _close_quietly(conn.sock)  # the selector thread has stopped: nobody will send the reply
        else:
            self._wake()

    def _finish_calls(self) -> None:
        while self._done:
            conn, reply = self._done.popleft()
            self._release(conn)
            if conn.state == _CLOSED:
                self._not_busy()  # given up on (shutdown past its grace, or the buffer cap)
                continue
            if reply is None:
                self._not_busy()
                self._close(conn)
                continue
            if not reply:  # a oneway call: nothing to send
                conn.state = _READING
                self._not_busy()
                self._ready_for_next(conn)
                continue
            conn.state = _WRITING
            conn.reply = memoryview(reply)
            conn.sent = 0
            conn.since = time.monotonic()
            self._writing[conn] = None
            self._write(conn, registered=False)

    def _write(self, conn: _Connection, registered: bool = True) -> None:
        assert conn.reply is not None
        try:
            conn.sent += conn.sock.send(conn.reply[conn.sent:])
        except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            pass
        except OSError as e:
            logger.debug("Thrift client %s went away before taking its reply: %s", conn.peer, e)
            self._close(conn)
            return
        if conn.sent < len(conn.reply):
            if not registered:
                self._selector.register(conn.sock, selectors.EVENT_WRITE, conn)
            return
        if registered:
            self._selector.unregister(conn.sock)
        del self._writing[conn]
        conn.reply = None
        conn.state = _READING
        self._not_busy()
        self._ready_for_next(conn)

    def _ready_for_next(self, conn: _Connection) -> None:
        """After a reply (``conn`` is reading, not registered yet): wait for its next frame."""
        if self._stopping.is_set():
            self._close(conn)
            return
        conn.since = time.monotonic()
        self._idle[conn] = None
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)
        self._read_pending(conn)  # a client that sent its next call early, inside one TLS record

    def _not_busy(self) -> None:
        with self._busy_cond:
            self._busy -= 1
            self._busy_cond.notify_all()

    # ------------------------------------------------------------ closing

    def _expire(self, now: float) -> None:
        while self._idle and (conn := next(iter(self._idle))).since + self.idle_timeout <= now:
            logger.debug("closing the Thrift connection from %s: idle for %.0fs", conn.peer, self.idle_timeout)
            self._close(conn)
        while self._partial and (conn := next(iter(self._partial))).since + self.frame_timeout <= now:
            logger.debug("closing the Thrift connection from %s: its frame did not arrive within %.0fs "
                         "(%d of %s bytes)", conn.peer, self.frame_timeout, len(conn.body),
                         conn.length if conn.length >= 0 else "?")
            self._close(conn)
        while self._writing and (conn := next(iter(self._writing))).since + self.frame_timeout <= now:
            logger.debug("closing the Thrift connection from %s: it did not take its reply within %.0fs",
                         conn.peer, self.frame_timeout)
            self._close(conn)
        while self._handshaking and (conn := next(iter(self._handshaking))).since + self.frame_timeout <= now:
            logger.debug("closing the Thrift connection from %s: its TLS handshake did not finish within %.0fs",
                         conn.peer, self.frame_timeout)
            self._close(conn)

    def _release(self, conn: _Connection) -> None:
        self._buffered -= conn.held
        conn.held = 0

    def _close(self, conn: _Connection) -> None:
        """Close ``conn`` whatever its state; a call still running finds it closed when it returns."""
        if conn.state == _CLOSED:
            return
        was_busy = conn.state == _WRITING
        running = conn.state == _RUNNING
        if conn.state in (_READING, _WRITING, _HANDSHAKE):
            # Not registered: a reply not yet waiting for the socket to drain, or just sent.
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(conn.sock)
        self._idle.pop(conn, None)
        self._partial.pop(conn, None)
        self._writing.pop(conn, None)
        self._handshaking.pop(conn, None)
        self._conns.pop(conn.sock.fileno(), None)
        if not running:  # a running call's frame stays counted until the call returns
            self._release(conn)
        conn.state = _CLOSED
        conn.header = bytearray()
        conn.body = bytearray()
        conn.reply = None
        _close_quietly(conn.sock)
        if was_busy:
            self._not_busy()


def _peer(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address) or "?"


def _close_quietly(sock: socket.socket) -> None:
    # Cleanly (``catalogd.closing``): a reply just sent, e.g. the last one before a shutdown,
    # must not be lost to the reset a close with unread bytes makes.
    hand_off(sock)
