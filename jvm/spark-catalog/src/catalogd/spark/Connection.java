package catalogd.spark;

import catalogd.thrift.CatalogService;
import java.io.FileInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.apache.thrift.TApplicationException;
import org.apache.thrift.TException;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.transport.TSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportException;
import org.apache.thrift.transport.layered.TFramedTransport;

/**
 * One Thrift connection to catalogd (the members of a cluster tried in order), as catalogd's
 * Python client makes it: framed binary protocol, TLS when asked, and the token's
 * {@code authenticate} as the first call of every connection. Calls are serialized; a call
 * whose connection broke is made once more on a new one (every catalogd call is safe to repeat:
 * stage commits and aborts are idempotent, creates answer AlreadyExists).
 */
final class Connection implements AutoCloseable {
    /** What a call does with the client; may throw any Thrift exception. */
    interface Call<T> {
        T apply(CatalogService.Client client) throws TException;
    }

    private static final int MAX_FRAME = 256 * 1024 * 1024;
    private final List<String[]> members = new ArrayList<>();
    private final String token;
    private final SSLContext tls;
    private final int timeoutMillis;
    private final long reconnectMillis;
    private int current;
    private TTransport transport;
    private CatalogService.Client client;

    Connection(Map<String, String> options) {
        String addresses = first(options, "address", "uri");
        if (addresses == null) {
            addresses = System.getenv().getOrDefault("CATALOGD_SERVER", "localhost:9190");
        }
        for (String part : addresses.split(",")) {
            String member = part.trim();
            if (member.startsWith("thrift://")) {
                member = member.substring("thrift://".length());
            }
            int colon = member.lastIndexOf(':');
            if (colon <= 0) {
                throw Errors.invalid("bad catalogd address " + member + ": expected HOST:PORT");
            }
            members.add(new String[] {member.substring(0, colon).replace("[", "").replace("]", ""),
                                      member.substring(colon + 1)});
        }
        this.token = readToken(options);
        this.tls = "true".equalsIgnoreCase(options.getOrDefault("tls", "false")) ? tlsContext(options) : null;
        this.timeoutMillis = Integer.parseInt(options.getOrDefault("timeout-ms", "120000"));
        this.reconnectMillis = Long.parseLong(options.getOrDefault("reconnect-ms", "30000"));
    }

    private static String first(Map<String, String> options, String... keys) {
        for (String key : keys) {
            String value = options.get(key);
            if (value != null && !value.isBlank()) {
                return value;
            }
        }
        return null;
    }

    /** The token: from the file {@code token-file}, else the variable {@code token-env} (CATALOGD_TOKEN). */
    private static String readToken(Map<String, String> options) {
        String file = options.get("token-file");
        if (file != null && !file.isBlank()) {
            try {
                return Files.readString(Path.of(file), StandardCharsets.UTF_8).trim();
            } catch (java.io.IOException e) {
                throw Errors.invalid("cannot read the catalogd token file " + file + ": " + e.getMessage());
            }
        }
        String value = System.getenv(options.getOrDefault("token-env", "CATALOGD_TOKEN"));
        return value == null || value.isBlank() ? null : value.trim();
    }

    private static SSLContext tlsContext(Map<String, String> options) {
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            String truststore = options.get("truststore");
            if (truststore == null) {
                context.init(null, null, null);  // the JVM's own trusted authorities
                return context;
            }
            KeyStore store;
            byte[] content = Files.readAllBytes(Path.of(truststore));
            if (new String(content, 0, Math.min(content.length, 64), StandardCharsets.US_ASCII).contains("-----BEGIN")) {
                // PEM: the authorities catalogd's own clients are given (--tls-ca, CATALOGD_TLS_CA).
                store = KeyStore.getInstance(KeyStore.getDefaultType());
                store.load(null, null);
                int n = 0;
                for (java.security.cert.Certificate cert : java.security.cert.CertificateFactory.getInstance("X.509")
                        .generateCertificates(new java.io.ByteArrayInputStream(content))) {
                    store.setCertificateEntry("ca-" + n++, cert);
                }
            } else {
                String passwordEnv = options.get("truststore-password-env");
                String password = passwordEnv == null ? null : System.getenv(passwordEnv);
                store = KeyStore.getInstance(truststore.endsWith(".p12") ? "PKCS12" : KeyStore.getDefaultType());
                try (FileInputStream in = new FileInputStream(truststore)) {
                    store.load(in, password == null ? null : password.toCharArray());
                }
            }
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(store);
            context.init(null, factory.getTrustManagers(), null);
            return context;
        } catch (Exception e) {
            throw Errors.invalid("cannot set up TLS to catalogd: " + e.getMessage());
        }
    }

    /**
     * Runs {@code call}. A call whose connection broke is made once more, on a new connection (the
     * next member first); while no member accepts a connection (a daemon restarting: its port
     * refuses until the new one has bound it), connecting is tried again every second for up to
     * {@code reconnect-ms} (default 30 s), as the session catalog's metastore client waits.
     */
    synchronized <T> T call(Call<T> call) throws TException {
        TTransportException lost = null;
        for (int attempt = 0; attempt < 2; attempt++) {
            CatalogService.Client ready = connectedWithin(reconnectMillis);
            try {
                return call.apply(ready);
            } catch (TTransportException e) {
                lost = e;
                closeQuietly();
                current = (current + 1) % members.size();
            }
        }
        throw lost;
    }

    private CatalogService.Client connectedWithin(long windowMillis) throws TException {
        long deadline = System.nanoTime() + windowMillis * 1_000_000L;
        while (true) {
            try {
                return connected();
            } catch (TTransportException e) {
                if (e.getType() != TTransportException.NOT_OPEN || System.nanoTime() > deadline) {
                    throw e;
                }
            }
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TTransportException(TTransportException.NOT_OPEN, "interrupted while reconnecting");
            }
        }
    }

    private CatalogService.Client connected() throws TException {
        if (client != null) {
            return client;
        }
        List<String> failures = new ArrayList<>();
        for (int step = 0; step < members.size(); step++) {
            int index = (current + step) % members.size();
            String host = members.get(index)[0];
            int port = Integer.parseInt(members.get(index)[1]);
            try {
                TSocket socket;
                if (tls != null) {
                    SSLSocket ssl = (SSLSocket) tls.getSocketFactory().createSocket(host, port);
                    ssl.setSoTimeout(timeoutMillis);
                    ssl.startHandshake();
                    socket = new TSocket(ssl);
                } else {
                    socket = new TSocket(host, port, timeoutMillis);
                }
                TTransport framed = new TFramedTransport(socket, MAX_FRAME);
                if (!framed.isOpen()) {
                    framed.open();
                }
                CatalogService.Client fresh = new CatalogService.Client(new TBinaryProtocol(framed));
                if (token != null) {
                    try {
                        fresh.authenticate(token);
                    } catch (TApplicationException e) {
                        if (e.getType() != TApplicationException.UNKNOWN_METHOD) {
                            framed.close();
                            throw e;
                        }
                    } catch (TException e) {
                        framed.close();
                        throw e;
                    }
                }
                transport = framed;
                client = fresh;
                current = index;
                return client;
            } catch (TTransportException | java.io.IOException e) {
                failures.add(host + ":" + port + ": " + e.getMessage());
            }
        }
        throw new TTransportException(TTransportException.NOT_OPEN,
            "cannot reach catalogd (" + String.join("; ", failures) + ")");
    }

    private void closeQuietly() {
        if (transport != null) {
            transport.close();
        }
        transport = null;
        client = null;
    }

    @Override
    public synchronized void close() {
        closeQuietly();
    }
}
