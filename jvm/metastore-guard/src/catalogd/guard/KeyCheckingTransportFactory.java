package catalogd.guard;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.NoSuchFileException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.List;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportException;
import org.apache.thrift.transport.TTransportFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded metastore's door: a connection is served only when it sent catalogd's key or
 * comes from a process of catalogd's own OS user.
 *
 * <p>A catalogd client starts with {@code MAGIC} followed by the key (64 hex digits, the content
 * of the key file catalogd wrote, mode 0600, before the JVM started), before any Thrift or SASL
 * byte. This factory reads those bytes from the raw socket, compares them in constant time, and
 * closes the connection when they are wrong or do not arrive within the timeout. A connection
 * whose first byte is not the magic's (a Thrift message starts with 0x80 or 0x00, a SASL
 * exchange with 0x01: never 'c') is served only when the socket at its other end belongs to this
 * JVM's own OS user (read from {@code /proc/net/tcp} and {@code tcp6}, as a Unix socket's
 * {@code SO_PEERCRED} would tell): the Spark processes catalogd starts (its refresh jobs, its
 * Connect server, its query analyser) use Hive's own metastore client, which cannot send a key,
 * and run as catalogd's user; any other user of the machine is refused. Either way the
 * metastore's own transport factory (plain, set_ugi or SASL) then sees the stream as if nothing
 * had been read.
 *
 * <p>It runs in the server's worker thread ({@code TThreadPoolServer} calls the factory there,
 * not in its accept loop), so a client that sends nothing holds one worker for the timeout at
 * most and never delays another connection. The server calls {@link #getTransport} twice per
 * connection (input and output): the key is read the first time only.
 */
public final class KeyCheckingTransportFactory extends TTransportFactory {
    /** What a catalogd client sends first, then the key: also tells a plain Thrift client apart in the log. */
    public static final byte[] MAGIC = "catalogd-metastore-key-1:".getBytes(StandardCharsets.US_ASCII);
    /** The key's length in the file and on the wire: 32 random bytes as hex. */
    public static final int KEY_LENGTH = 64;
    /** At most one log line per this many milliseconds about refused connections (a flood cannot fill the disk). */
    private static final long LOG_INTERVAL_MS = 60_000;
    private static final Logger LOG = LoggerFactory.getLogger(KeyCheckingTransportFactory.class);

    private final TTransportFactory delegate;
    private final byte[] expected;
    private final int timeoutMs;
    /** Connections checked, and what the metastore reads them through: the second getTransport of a connection skips the check. */
    private final Map<TTransport, TTransport> checked = Collections.synchronizedMap(new WeakHashMap<>());
    /** This JVM's OS user (the owner of /proc/self), or -1 where that cannot be read (then only the key opens). */
    private final int ownUid = ownUid();
    private final AtomicLong lastLog = new AtomicLong(Long.MIN_VALUE / 2);
    private final AtomicLong unlogged = new AtomicLong();

    /**
     * @param delegate the metastore's own transport factory, given each accepted connection
     * @param keyFile the key file catalogd wrote (64 hex digits; surrounding white space ignored)
     * @param timeoutMs how long a new connection may take to send its key
     */
    public KeyCheckingTransportFactory(TTransportFactory delegate, String keyFile, int timeoutMs) throws IOException {
        String key = new String(Files.readAllBytes(Path.of(keyFile)), StandardCharsets.US_ASCII).strip();
        if (!key.matches("[0-9a-f]{" + KEY_LENGTH + "}")) {
            throw new IOException("the metastore key file " + keyFile + " does not hold " + KEY_LENGTH
                    + " lower-case hex digits");
        }
        if (timeoutMs <= 0) {
            throw new IllegalArgumentException("timeoutMs must be positive");
        }
        this.delegate = delegate;
        this.timeoutMs = timeoutMs;
        byte[] keyBytes = key.getBytes(StandardCharsets.US_ASCII);
        this.expected = new byte[MAGIC.length + keyBytes.length];
        System.arraycopy(MAGIC, 0, expected, 0, MAGIC.length);
        System.arraycopy(keyBytes, 0, expected, MAGIC.length, keyBytes.length);
    }

    @Override
    public TTransport getTransport(TTransport trans) throws TTransportException {
        TTransport served = checked.get(trans);
        if (served == null) {
            served = check(trans);
            checked.put(trans, served);
        }
        return delegate.getTransport(served);
    }

    private TTransport check(TTransport trans) throws TTransportException {
        if (!(trans instanceof TSocket)) {
            // Fail closed: a server transport of another kind was not foreseen.
            trans.close();
            throw refused("?", "not a socket connection");
        }
        Socket socket = ((TSocket) trans).getSocket();
        String peer = String.valueOf(socket.getRemoteSocketAddress());
        byte[] got = new byte[expected.length];
        try {
            int before = socket.getSoTimeout();
            socket.setSoTimeout(timeoutMs);
            // Straight from the socket, unbuffered: not one byte past the key is consumed here.
            DataInputStream in = new DataInputStream(socket.getInputStream());
            int first = in.read();
            if (first < 0) {
                throw new EOFException();
            }
            if (first != (MAGIC[0] & 0xff)) {
                // No key: a plain HMS client. Served only for a process of this OS user.
                socket.setSoTimeout(before);
                int uid = ownUid < 0 ? -1 : peerUid(socket);
                if (uid < 0 || uid != ownUid) {
                    trans.close();
                    throw refused(peer, uid < 0 ? "no key, and its OS user is unknown" : "no key, and OS user " + uid
                            + " is not catalogd's");
                }
                return new ReplayingSocket(socket, (byte) first);
            }
            got[0] = (byte) first;
            // The public magic first: a client that sent a 'c' and something else is turned away at once.
            in.readFully(got, 1, MAGIC.length - 1);
            if (!Arrays.equals(MAGIC, Arrays.copyOf(got, MAGIC.length))) {
                trans.close();
                throw refused(peer, "not a catalogd client");
            }
            in.readFully(got, MAGIC.length, got.length - MAGIC.length);
            socket.setSoTimeout(before);
        } catch (SocketTimeoutException e) {
            trans.close();
            throw refused(peer, "no key within " + timeoutMs + " ms");
        } catch (EOFException e) {
            trans.close();
            throw refused(peer, "closed before sending a key");
        } catch (IOException e) {
            trans.close();
            throw refused(peer, "read failed: " + e.getMessage());
        }
        // Constant time: how much of the key matched is not told by how long the check took.
        if (!MessageDigest.isEqual(expected, got)) {
            trans.close();
            throw refused(peer, "wrong key");
        }
        return trans;
    }

    /** The owner of /proc/self: this JVM's real OS user; -1 where it cannot be read. */
    private static int ownUid() {
        try {
            return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * The OS user owning the other end of a loopback connection: the entry of /proc/net/tcp or
     * tcp6 whose local port is the peer's port and whose remote port is ours (the server's own
     * entry has them the other way round). -1 when none is found (the client is gone already).
     */
    static int peerUid(Socket socket) {
        int peerPort = socket.getPort();
        int ownPort = socket.getLocalPort();
        for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
            List<String> lines;
            try {
                lines = Files.readAllLines(Path.of(table), StandardCharsets.US_ASCII);
            } catch (NoSuchFileException e) {
                continue;
            } catch (IOException e) {
                return -1;
            }
            for (int i = 1; i < lines.size(); i++) {
                String[] f = lines.get(i).trim().split("\\s+");
                if (f.length > 7 && port(f[1]) == peerPort && port(f[2]) == ownPort && loopback(f[1])) {
                    try {
                        return Integer.parseInt(f[7]);
                    } catch (NumberFormatException e) {
                        return -1;
                    }
                }
            }
        }
        return -1;
    }

    private static int port(String address) {
        int colon = address.lastIndexOf(':');
        try {
            return colon < 0 ? -1 : Integer.parseInt(address.substring(colon + 1), 16);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** 127.0.0.0/8 (little-endian hex in /proc), ::1 and ::ffff:127.x: the metastore listens on 127.0.0.1 only. */
    private static boolean loopback(String address) {
        String host = address.substring(0, Math.max(0, address.lastIndexOf(':')));
        if (host.length() == 8) {
            return host.endsWith("7F");
        }
        return host.equals("00000000000000000000000001000000")
                || (host.startsWith("0000000000000000FFFF0000") && host.endsWith("7F"));
    }

    /** The exception the server closes the connection on without a log line of its own (END_OF_FILE). */
    private TTransportException refused(String peer, String reason) {
        long now = System.currentTimeMillis();
        long last = lastLog.get();
        if (now - last >= LOG_INTERVAL_MS && lastLog.compareAndSet(last, now)) {
            long more = unlogged.getAndSet(0);
            LOG.warn("catalogd: refused a connection from {}: {}; only catalogd may use this metastore{}", peer,
                    reason, more > 0 ? " (" + more + " more refused since the last line)" : "");
        } else {
            unlogged.incrementAndGet();
        }
        return new TTransportException(TTransportException.END_OF_FILE, "catalogd: connection refused: " + reason);
    }

    /** The accepted socket with the one byte read to tell a key from a Thrift message given back first. */
    static final class ReplayingSocket extends TSocket {
        private int pending;

        ReplayingSocket(Socket socket, byte first) throws TTransportException {
            super(socket);
            this.pending = first & 0xff;
        }

        @Override
        public int read(byte[] buf, int off, int len) throws TTransportException {
            if (pending >= 0 && len > 0) {
                buf[off] = (byte) pending;
                pending = -1;
                return 1;
            }
            return super.read(buf, off, len);
        }
    }
}
