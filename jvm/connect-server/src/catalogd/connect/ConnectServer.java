package catalogd.connect;

import java.net.InetSocketAddress;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connect.service.SparkConnectService$;

import scala.Option;

/**
 * catalogd's own Spark Connect server ({@code spark.engine: connect}): Spark's
 * {@code SparkConnectServer} with one difference, sessions that share their artifacts' class
 * loader.
 *
 * <p>Spark's server turns on {@code spark.sql.artifact.isolation.enabled} (and applies each
 * session's class loader always), whatever the server's settings say: every Connect session
 * gets a class loader of its own on the driver and the executors. Spark's cache of compiled
 * generated code is keyed by class loader, so every new session compiles the code of every
 * query stage again (Janino), and the JIT compiles the new classes again: on two cores that
 * was about 0.4 s of a one-second refresh, paid by every run, since each run takes a new
 * session (docs/benchmarks.md, issue 35). catalogd's sessions add no artifacts (jars, classes,
 * files): a refresh is SQL. So its server keeps them in the one shared class loader, and a
 * run's query stages hit the code a run before it compiled. Sessions stay separate in all the
 * rest (SQL settings, temporary views, current catalog): that is the session, not the class
 * loader.
 *
 * <p>What the daemon reads from it is Spark's own: the line {@code Spark Connect server started
 * at: host:port} once it listens.
 */
public final class ConnectServer {
  private ConnectServer() {}

  public static void main(String[] args) throws Exception {
    SparkSession session = SparkSession.builder()
        .config("spark.sql.artifact.isolation.enabled", false)
        .config("spark.sql.artifact.isolation.alwaysApplyClassloader", false)
        .getOrCreate();
    try {
      try {
        SparkConnectService$.MODULE$.start(session.sparkContext());
      } catch (Throwable e) {
        // As Spark's server: a server that cannot bind exits (its supervisor restarts it).
        System.err.println("catalogd's Spark Connect server failed to start: " + e);
        e.printStackTrace();
        System.exit(-1);
      }
      InetSocketAddress address = SparkConnectService$.MODULE$.bindingAddress();
      String host = address.getAddress().getHostAddress();
      if (host.contains(":") && !host.startsWith("[")) {
        host = "[" + host + "]";  // an IPv6 address, bracketed as Spark's server writes it
      }
      // Spark's own words: the daemon reads the bound port from this line (connect.py, _STARTED).
      System.err.println("Spark Connect server started at: " + host + ":" + address.getPort());
      System.err.flush();
      SparkConnectService$.MODULE$.server().awaitTermination();
    } finally {
      if (SparkConnectService$.MODULE$.started()) {
        SparkConnectService$.MODULE$.stop(Option.empty(), Option.empty());
      }
      session.stop();
    }
  }
}
