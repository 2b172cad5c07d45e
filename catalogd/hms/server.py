"""The HMS endpoint's socket server: a thread per client connection, with caps and deadlines.

HMS clients (Spark's Hive client, Hive, Trino, hmsclient) speak the binary protocol over
buffered transport by default, framed when configured to; the first bytes of a connection
say which (a strict binary message starts with 0x80 0x01, a frame with its length). A client
is sequential: it sends a call and waits for the reply, so a thread per connection is idle
only while its client is, and the limits below bound what an idle or slow one holds:

* ``idle_timeout``: no call arriving for that long closes the connection;
* ``frame_timeout``: a call must arrive whole within that long of its first byte, and a
  reply be taken within that long;
* ``max_message``: a call announcing or sending more is refused (connection closed);
* ``max_buffered_bytes``: the bytes all connections hold together for calls partly received
  or running; when a new chunk would pass it, the connection with the largest partly received
  call is closed (it frees the most, and ordinary calls are small), as the Thrift API does.
  Bytes are counted as they arrive, never as a message announces them, and a call's bytes
  stay counted until its reply is sent; nothing of a call is kept once it has been answered;
* ``max_connections``: connections still in their TLS handshake or SASL negotiation count
  against it like any other. At the cap, a new connection closes the one that has been
  handshaking the longest (a client that never finishes holds a thread and a socket for
  nothing; stalling handshakes must not lock real clients out), else the one idle the longest;
  when none is either, the new one is closed at once.

With an ``ssl_context`` the connection's own thread wraps the accepted socket and finishes
the TLS handshake within ``frame_timeout`` before anything else; a client that does not
speak TLS (or fails the handshake) is closed, and no other connection notices.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import gc
import logging
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from catalogd.closing import hand_off
from catalogd.hms.listener import listen
from catalogd.hms.sasl import SaslError, SaslSession
from catalogd.metastore.messages import Message, MessageStream, ProtocolError, parse_message
from catalogd.metastore.relay import Identity
from catalogd.ratelog import BoundedLog

logger = logging.getLogger(__name__)

__all__ = ["ClientConnection", "HmsServer"]

_FRAME = struct.Struct("!i")
_STRICT_FIRST_BYTE = 0x80
#: The most one ``recv`` asks for: a message announcing 256 MiB must not make the socket
#: layer allocate 256 MiB before a byte of it has arrived (bytes are counted as they come).
_MAX_RECV = 1024 * 1024


#: glibc's mallopt parameter for the size from which allocations get their own mapping.
_M_MMAP_THRESHOLD = -3
#: Buffers this large or larger (a call's chunks and the message they make) get their own
#: mapping, which goes back to the system the moment it is freed.
_MMAP_THRESHOLD = 256 * 1024


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def _load_malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (None elsewhere)."""
    libc = _libc()
    trim: Callable[[int], int] | None = getattr(libc, "malloc_trim", None)
    return trim


def fix_mmap_threshold() -> bool:
    """Keep glibc from serving large buffers out of its arenas (whether it could).

    glibc raises its mmap threshold each time a mapped buffer is freed (up to 32 MiB), after
    which large buffers come from the per-thread arenas and stay resident after they are freed:
    a burst of large calls then leaves RSS near its peak. A fixed threshold turns that off.
    """
    mallopt = getattr(_libc(), "mallopt", None)
    return bool(mallopt is not None and mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD))


class _Trimmer:
    """Gives the memory of large calls back to the system once they are gone.

    Without it RSS stays well above where it was after the clients closed: what a large call
    left in reference cycles (an exception's traceback holding a frame's buffer) waits for the
    garbage collector, and glibc keeps the freed memory of its per-thread arenas (the buffers
    below the fixed mmap threshold). Once calls holding ``threshold`` bytes together were
    freed, a thread of its own collects and trims, at most once per ``interval`` seconds (a
    collection holds the GIL), and always once more after the last of them (when they were a
    burst, not a trickle of small calls).
    """

    def __init__(self, threshold: int = 1024 * 1024, interval: float = 1.0) -> None:
        self.threshold = threshold
        self.interval = interval
        self._trim = _load_malloc_trim()
        self._pending = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        #: Collections and trims made (tests read it).
        self.runs = 0

    def freed(self, size: int) -> None:
        if size <= 0:
            return
        with self._cond:
            self._pending += size
            if self._pending < self.threshold:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hms-trim", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        again = False
        while True:
            with self._cond:
                if not again:
                    self._cond.wait_for(lambda: self._pending >= self.threshold)
                self._pending = 0
            gc.collect()
            if self._trim is not None:
                self._trim(0)
            self.runs += 1
            time.sleep(self.interval)
            with self._cond:
                # What was freed while it slept (the end of a burst) is not left behind.
                again = self._pending >= self.threshold // 8


#: One per process: the arenas and the garbage collector are the process's.
_trimmer = _Trimmer()


class BufferLimitError(ProtocolError):
    """The connection was closed to keep the endpoint's bytes under ``max_buffered_bytes``."""


@dataclass
class ClientConnection:
    """What the endpoint knows of one client connection."""

    peer: str
    #: ``set_ugi``'s user and groups once the client called it; or the principal the connection
    #: proved (Kerberos, a client certificate), which set_ugi cannot change.
    identity: Identity = None
    #: How ``identity`` was proven: ``kerberos``, ``certificate``; None: only asserted by set_ugi.
    proven: str | None = None
    #: The name the proof carried (a Kerberos principal, a certificate subject), for the audit log.
    proven_name: str | None = None
    framed: bool = False
    #: Per-connection state the router keeps (e.g. lock ids it took).
    state: dict[str, object] = field(default_factory=dict)
    #: The door the calls came through, as the audit log names it (``iceberg``: the REST door's
    #: calls, made in-process by ``catalogd.iceberg.loopback`` for a REST caller).
    surface: str = "hms"
    #: catalogd's own calls (the REST door finishing a transaction a dead daemon left): no
    #: principal's grants apply.
    internal: bool = False


#: Answers one call message: the reply's bytes (None for a oneway call).
Handler = Callable[[ClientConnection, Message], bytes | None]
#: Proves who a new connection is before its first call (after TLS): given the connection, the
#: peer's verified certificate (None: none) and the raw read and write of its socket, sets the
#: connection's identity and returns the SASL session its frames go through (None: no SASL).
#: Raises SaslError (or PermissionError) to close the connection.
Authenticator = Callable[[ClientConnection, dict[str, object] | None, Callable[[int], bytes],
                          Callable[[bytes], None]], SaslSession | None]


class _Conn:
    def __init__(self, sock: socket.socket, peer: str) -> None:
        self.sock = sock
        #: Bytes read ahead of the message stream (a TLS socket cannot be peeked at).
        self.unread = b""
        self.client = ClientConnection(peer)
        #: The SASL session the connection's frames go through (None: plain Thrift).
        self.sasl: SaslSession | None = None
        self.busy = False
        self.last_active = time.monotonic()
        #: Still in its TLS handshake or SASL negotiation (closed first at the connection cap).
        self.handshaking = True
        self.deadline: float | None = None
        self.closed = False
        #: Bytes counted for it in the server's buffered total (calls partly received or running).
        self.held = 0
        #: The most it held since its last call was answered (what the trimmer is told was freed).
        self.peak = 0

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.shut()

    def finish(self) -> None:
        """Close at the end of its own thread: cleanly (``catalogd.closing``) unless another thread
        already closed it (then only make sure the socket is closed)."""
        if self.closed:
            self.shut()
            return
        self.closed = True
        # What was written last (a reply, a SASL refusal) reaches the client before the close.
        hand_off(self.sock)

    def shut(self) -> None:
        # shutdown wakes the connection's thread out of a blocking recv or TLS handshake. The
        # plain socket's shutdown, also on a TLS socket: SSLSocket.shutdown would first drop the
        # TLS state a handshake running in that thread is about to use.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


class HmsServer:
    """Serves ``handler`` on ``host:port`` (0: a free port, see ``port`` after ``bind``)."""

    def __init__(self, handler: Handler, host: str, port: int, *, max_connections: int = 1000,
                 idle_timeout: float = 300.0, frame_timeout: float = 30.0,
                 max_message: int = 256 * 1024 * 1024, max_buffered_bytes: int = 256 * 1024 * 1024,
                 ssl_context: ssl.SSLContext | None = None, authenticator: Authenticator | None = None) -> None:
        self._handler = handler
        self._authenticator = authenticator
        fix_mmap_threshold()
        self.ssl_context = ssl_context
        self.host = host
        self._port = port
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.frame_timeout = frame_timeout
        # One call can never be larger than all calls together may be.
        self.max_message = min(max_message, max_buffered_bytes)
        self.max_buffered_bytes = max_buffered_bytes
        self._buffered = 0
        self._over_budget = BoundedLog(logger, "hms-buffer-budget", interval=10.0)
        self._listener: socket.socket | None = None
        self._conns: set[_Conn] = set()
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._acceptor: threading.Thread | None = None
        self._full = BoundedLog(logger, "hms-connection-cap", interval=10.0)
        self._tls_failed = BoundedLog(logger, "hms-tls-handshake-failed", interval=10.0)
        # Any client can send garbage: told at INFO, at a bounded rate.
        self._bad_message = BoundedLog(logger, "hms-bad-message", level=logging.INFO, interval=10.0)
        self.accepted = 0
        self.refused = 0

    @property
    def port(self) -> int:
        return self._listener.getsockname()[1] if self._listener is not None else self._port

    def bind(self, listener: socket.socket | None = None) -> None:
        """Listen on ``host:port``, or on ``listener``, bound earlier to the same address (see
        ``catalogd.hms.listener``: connections queued in it are served once ``start`` is called)."""
        listener = listener or listen(self.host, self._port)
        listener.settimeout(1.0)
        self._listener = listener

    def start(self) -> None:
        if self._listener is None:
            self.bind()
        self._acceptor = threading.Thread(target=self._accept_loop, name="hms-accept", daemon=True)
        self._acceptor.start()

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"open": len(self._conns), "busy": sum(1 for c in self._conns if c.busy),
                    "accepted": self.accepted, "refused": self.refused, "buffered": self._buffered}

    def shutdown(self, grace: float = 10.0) -> None:
        """Stop accepting, let calls running finish (up to ``grace``), close every connection."""
        self._stopping.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        if self._acceptor is not None:
            self._acceptor.join(timeout=max(grace, 1.0))
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            with self._lock:
                if not any(c.busy for c in self._conns):
                    break
            time.sleep(0.05)
        with self._lock:
            conns = list(self._conns)
            threads = list(self._threads)
        for conn in conns:
            conn.close()
        for thread in threads:
            thread.join(timeout=max(deadline - time.monotonic(), 0.1))

    # ------------------------------------------------------------ accepting

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                sock, address = self._listener.accept()
            except TimeoutError:
                continue
            except OSError as e:
                if self._stopping.is_set():
                    return
                if e.errno in (errno.EMFILE, errno.ENFILE):
                    self._full.warning("HMS endpoint: out of file descriptors; pausing accepts")
                    time.sleep(0.5)
                continue
            peer = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)
            if not self._admit():
                self.refused += 1
                self._full.warning("HMS endpoint: %d connections open, all busy; refusing %s",
                                   self.max_connections, peer)
                hand_off(sock)
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(sock, peer)
            thread = threading.Thread(target=self._serve, args=(conn,), name=f"hms-{peer}", daemon=True)
            with self._lock:
                self._conns.add(conn)
                self._threads.add(thread)
                self.accepted += 1
            thread.start()

    def _admit(self) -> bool:
        """Room for one more connection: at the cap, closes the one handshaking the longest, else
        the one idle the longest (connections closed to make room are no longer counted)."""
        with self._lock:
            if sum(1 for c in self._conns if not c.closed) < self.max_connections:
                return True
            idle = [c for c in self._conns if not c.busy and not c.closed]
            if not idle:
                return False
            # Handshaking first (accepted the earliest first), then idle the longest.
            victim = min(idle, key=lambda c: (not c.handshaking, c.last_active))
            # Marked closed under the lock, so that a burst of new connections picks others.
            victim.closed = True
        what = "still in its handshake" if victim.handshaking else "idle the longest"
        logger.info("HMS endpoint: %d connections open; closing %s, %s", self.max_connections,
                    victim.client.peer, what)
        victim.shut()
        return True

    # ------------------------------------------------------------ one connection

    def _raw_for(self, conn: _Conn) -> Callable[[int], bytes]:
        """Reads the socket: the idle timeout before a call's first byte, the frame timeout after."""
        def raw(size: int) -> bytes:
            size = min(size, _MAX_RECV)
            if conn.deadline is None:
                conn.sock.settimeout(self.idle_timeout)
                data = conn.sock.recv(size)
                conn.deadline = time.monotonic() + self.frame_timeout
                return data
            left = conn.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("call not complete within the frame timeout")
            conn.sock.settimeout(left)
            return conn.sock.recv(size)

        return raw

    def _sasl_frame(self, conn: _Conn, raw: Callable[[int], bytes]) -> bytes:
        """The next SASL data frame of ``conn``, unwrapped."""
        assert conn.sasl is not None
        (size,) = _FRAME.unpack(self._read_exact(raw, 4))
        if not 0 < size <= self.max_message:
            raise ProtocolError(f"SASL frame of {size} bytes (the limit is {self.max_message})")
        data = self._read_exact(raw, size)
        if conn.sasl.unwrap is not None:
            try:
                data = conn.sasl.unwrap(data)
            except Exception as e:
                raise ProtocolError(f"a SASL frame does not unwrap: {e}") from None
        return data

    def _recv_for(self, conn: _Conn) -> Callable[[int], bytes]:
        raw = self._raw_for(conn)

        def receive(size: int) -> bytes:
            size = min(size, _MAX_RECV)
            if not conn.unread and conn.sasl is not None:
                conn.unread = self._sasl_frame(conn, raw)
            if conn.unread:
                data, conn.unread = conn.unread[:size], conn.unread[size:]
                if conn.deadline is None:
                    conn.deadline = time.monotonic() + self.frame_timeout
                return data
            return raw(size)

        def recv(size: int) -> bytes:
            data = receive(size)
            self._reserve(conn, len(data))
            return data

        return recv

    # ------------------------------------------------------------ the bytes held

    def _reserve(self, conn: _Conn, size: int) -> None:
        """Count ``size`` bytes just received for ``conn``, closing the connections with the largest
        partly received calls to stay under ``max_buffered_bytes``.

        Raises:
            BufferLimitError: ``conn`` itself was the largest (it is closed).
        """
        if conn.closed:  # closed to make room (or at shutdown) while this chunk arrived
            raise EOFError
        if size <= 0:
            return
        victims = []
        with self._lock:
            while self._buffered + size > self.max_buffered_bytes:
                # Calls running are not candidates: their bytes go when they are answered.
                partial = [c for c in self._conns if not c.busy and c.held > 0 and c is not conn]
                victim = max(partial, key=lambda c: c.held, default=None)
                if victim is None or conn.held + size >= victim.held:
                    victim = conn
                self._over_budget.warning(
                    "HMS endpoint: calls hold %d bytes, a new chunk would pass server.hms-max-buffered-bytes (%d): "
                    "closing the connection from %s with the largest partly received call (%d bytes)",
                    self._buffered, self.max_buffered_bytes, victim.client.peer, victim.held + (
                        size if victim is conn else 0))
                self._release_locked(victim)
                victims.append(victim)
                if victim is conn:
                    break
            else:
                self._buffered += size
                conn.held += size
                conn.peak = max(conn.peak, conn.held)
        for victim in victims:
            victim.close()
            if victim is conn:
                raise BufferLimitError(f"{self.max_buffered_bytes} bytes held by the endpoint's calls "
                                       "(server.hms-max-buffered-bytes)")

    def _release_locked(self, conn: _Conn, keep: int = 0) -> None:
        """Count only ``keep`` bytes for ``conn`` any more (self._lock held)."""
        self._buffered += keep - conn.held
        conn.held = keep

    def _answered(self, conn: _Conn, keep: int) -> None:
        """``conn``'s call was answered: only ``keep`` bytes read ahead stay counted."""
        with self._lock:
            self._release_locked(conn, min(keep, conn.held))
            peak, conn.peak = conn.peak, conn.held
        _trimmer.freed(peak - conn.held)

    def _serve(self, conn: _Conn) -> None:
        recv = self._recv_for(conn)
        stream = MessageStream(recv, self.max_message)
        reason = "closed by client"
        try:
            if self.ssl_context is not None:
                self._start_tls(conn)
            if self._authenticator is not None:
                self._authenticate(conn)
            conn.handshaking = False
            conn.last_active = time.monotonic()  # its idle clock starts now
            if conn.closed:  # closed to make room as the handshake ended
                raise EOFError
            conn.client.framed = self._detect_framed(conn)
            while not self._stopping.is_set():
                conn.deadline = None
                if conn.client.framed:
                    message = self._read_frame(conn, recv)
                else:
                    stream.first_byte()
                    message = stream.read_message()
                conn.busy = True
                try:
                    reply = self._handler(conn.client, message)
                    # Nothing of the call is kept while the connection waits for its next one.
                    del message
                    if reply is not None:
                        if conn.client.framed:
                            reply = _FRAME.pack(len(reply)) + reply
                        if conn.sasl is not None:
                            if conn.sasl.wrap is not None:
                                reply = conn.sasl.wrap(reply)
                            reply = _FRAME.pack(len(reply)) + reply
                        conn.sock.settimeout(self.frame_timeout)
                        conn.sock.sendall(reply)
                    del reply
                finally:
                    # last_active first: a connection seen not busy has its idle clock set.
                    conn.last_active = time.monotonic()
                    conn.busy = False
                    self._answered(conn, 0 if conn.client.framed else stream.buffered())
        except EOFError:
            pass
        except TimeoutError:
            reason = "idle or slow (timeout)"
        except BufferLimitError as e:
            reason = f"closed to bound the memory held: {e}"
        except ProtocolError as e:
            reason = f"protocol error: {e}"
            self._bad_message.log("HMS endpoint: %s sent a bad message (%s); closing it", conn.client.peer, e)
        except SaslError as e:
            reason = f"authentication failed: {e}"
        except ssl.SSLError as e:
            reason = f"TLS error: {getattr(e, 'reason', None) or e}"
            if conn.closed:
                reason = "closed to make room (connection cap)"
            else:
                self._tls_failed.warning("HMS endpoint: TLS with %s failed (%s); closing it", conn.client.peer,
                                         reason)
        except OSError as e:
            reason = "closed to make room (connection cap)" if conn.closed else f"socket error: {e}"
        except Exception:
            if conn.closed:  # its socket was pulled from under a step in progress
                reason = "closed"
            else:
                reason = "internal error"
                logger.exception("HMS endpoint: connection %s failed", conn.client.peer)
        finally:
            logger.debug("HMS endpoint: connection %s ends: %s", conn.client.peer, reason)
            conn.finish()
            with self._lock:
                self._release_locked(conn)
                peak = conn.peak
                self._conns.discard(conn)
                self._threads.discard(threading.current_thread())
            # The stream and its protocol refer to each other: without this its buffers would
            # wait for the garbage collector.
            stream.close()
            _trimmer.freed(peak)

    def _start_tls(self, conn: _Conn) -> None:
        """Wrap the connection's socket and finish the handshake within the frame timeout.

        The wrapped socket is the connection's before the handshake starts, so that closing the
        connection to make room shuts down the socket the handshake waits on (wrapping detaches
        the plain socket: closing that one would leave the handshake waiting).
        """
        assert self.ssl_context is not None
        conn.sock.settimeout(self.frame_timeout)
        conn.sock = self.ssl_context.wrap_socket(conn.sock, server_side=True, do_handshake_on_connect=False)
        if conn.closed:  # closed to make room while it was being wrapped
            with contextlib.suppress(OSError):
                conn.sock.close()
            raise EOFError
        conn.sock.do_handshake()

    def _authenticate(self, conn: _Conn) -> None:
        """Prove who the connection is (see ``Authenticator``), within the frame timeout."""
        assert self._authenticator is not None
        conn.deadline = time.monotonic() + self.frame_timeout
        raw = self._raw_for(conn)
        cert: dict[str, object] | None = None
        if isinstance(conn.sock, ssl.SSLSocket):
            cert = dict(conn.sock.getpeercert() or {})

        def write(data: bytes) -> None:
            conn.sock.settimeout(max(conn.deadline - time.monotonic(), 0.01) if conn.deadline else None)
            conn.sock.sendall(data)

        conn.sasl = self._authenticator(conn.client, cert or None, raw, write)
        conn.deadline = None

    def _detect_framed(self, conn: _Conn) -> bool:
        """Whether the client frames its messages (looks at the first byte, which the stream still reads)."""
        conn.sock.settimeout(self.idle_timeout)
        if conn.sasl is not None:
            first = conn.unread = self._sasl_frame(conn, self._raw_for(conn))
            conn.deadline = None
        elif isinstance(conn.sock, ssl.SSLSocket):
            first = conn.unread = conn.sock.recv(1)  # no MSG_PEEK on a TLS socket
        else:
            first = conn.sock.recv(1, socket.MSG_PEEK)
        if not first:
            raise EOFError
        if first[0] == _STRICT_FIRST_BYTE:
            return False
        if first[0] != 0:
            # Neither a strict binary message nor a frame length below 16 MiB: compact protocol,
            # HTTP, TLS, or noise.
            raise ProtocolError(f"first byte 0x{first[0]:02x} is not a binary-protocol message or frame")
        return True

    def _read_frame(self, conn: _Conn, recv: Callable[[int], bytes]) -> Message:
        size_bytes = self._read_exact(recv, 4)
        (size,) = _FRAME.unpack(size_bytes)
        if not 0 < size <= self.max_message:
            raise ProtocolError(f"frame of {size} bytes (the limit is {self.max_message})")
        return parse_message(self._read_exact(recv, size))

    @staticmethod
    def _read_exact(recv: Callable[[int], bytes], size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = recv(min(size - len(data), _MAX_RECV))
            if not chunk:
                raise EOFError
            data += chunk
        return bytes(data)
