package catalogd.guard;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
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
 * The embedded metastore's door: a connection is served only after it sent catalogd's key.
 *
 * <p>Every connection must start with {@code MAGIC} followed by the key (64 hex digits, the
 * content of the key file catalogd wrote, mode 0600, before the JVM started), before any Thrift
 * or SASL byte. This factory reads those bytes from the raw socket, compares them in constant
 * time, and closes the connection when they are wrong or do not arrive within the timeout;
 * otherwise it hands the connection to the metastore's own transport factory (plain, set_ugi or
 * SASL), which sees the stream as if the key had never been there.
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
    /** Connections whose key was checked: the second getTransport of a connection skips the read. */
    private final Map<TTransport, Boolean> checked = Collections.synchronizedMap(new WeakHashMap<>());
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
        if (!checked.containsKey(trans)) {
            check(trans);
            checked.put(trans, Boolean.TRUE);
        }
        return delegate.getTransport(trans);
    }

    private void check(TTransport trans) throws TTransportException {
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
            // The public magic first: a plain Thrift client (whose call is longer) is turned away at once.
            in.readFully(got, 0, MAGIC.length);
            if (!Arrays.equals(MAGIC, Arrays.copyOf(got, MAGIC.length))) {
                trans.close();
                throw refused(peer, "no key (not a catalogd client)");
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
}
