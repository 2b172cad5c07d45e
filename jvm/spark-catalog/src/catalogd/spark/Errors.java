package catalogd.spark;

import catalogd.thrift.AlreadyExists;
import catalogd.thrift.Conflict;
import catalogd.thrift.InvalidArgument;
import catalogd.thrift.MetastoreUnavailable;
import catalogd.thrift.NotEmpty;
import catalogd.thrift.NotFound;
import catalogd.thrift.PermissionDenied;
import catalogd.thrift.Unsupported;
import org.apache.spark.QueryContext;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.thrift.TException;
import org.apache.thrift.transport.TTransportException;
import scala.Option;

/**
 * catalogd's typed errors as Spark's own exceptions, translated where they arrive: a missing
 * table is Spark's {@code NoSuchTableException}, an existing one {@code TableAlreadyExistsException},
 * a missing or non-empty namespace Spark's namespace exceptions, and every other kind an
 * {@code AnalysisException} whose message starts with catalogd's kind
 * ({@code catalogd permission denied: ...}), as the CLI prints it.
 */
final class Errors {
    private Errors() {}

    /** An AnalysisException carrying catalogd's message (Spark's analyzer shows it as is). */
    static AnalysisException analysis(String kind, String message, Throwable cause) {
        return new AnalysisException("catalogd " + kind + ": " + message, Option.empty(), Option.empty(),
            Option.apply(cause), Option.empty(), scala.collection.immutable.Map$.MODULE$.empty(), new QueryContext[0]);
    }

    static RuntimeException invalid(String message) {
        return sneaky(analysis("invalid argument", message, null));
    }

    static RuntimeException unsupported(String message) {
        return sneaky(analysis("unsupported", message, null));
    }

    /** {@code e} as the Spark exception a table operation on {@code ident} throws. */
    static RuntimeException forTable(TException e, Identifier ident) {
        if (e instanceof NotFound nf) {
            String type = nf.getObjectType();
            if ("database".equals(type) || "catalog".equals(type)) {
                return sneaky(new NoSuchNamespaceException(ident.namespace()));
            }
            return sneaky(new NoSuchTableException(ident));
        }
        if (e instanceof AlreadyExists) {
            return sneaky(new TableAlreadyExistsException(ident));
        }
        return of(e);
    }

    /** {@code e} as the Spark exception a namespace operation on {@code namespace} throws. */
    static RuntimeException forNamespace(TException e, String[] namespace) {
        if (e instanceof NotFound) {
            return sneaky(new NoSuchNamespaceException(namespace));
        }
        if (e instanceof AlreadyExists) {
            return sneaky(new NamespaceAlreadyExistsException(namespace));
        }
        if (e instanceof NotEmpty ne) {
            return sneaky(new NonEmptyNamespaceException(namespace, ne.getMessage(), Option.empty()));
        }
        return of(e);
    }

    /** Any other catalogd error, by its kind. */
    static RuntimeException of(TException e) {
        if (e instanceof NotFound x) {
            return sneaky(analysis("not found", x.getMessage(), e));
        }
        if (e instanceof AlreadyExists x) {
            return sneaky(analysis("already exists", x.getMessage(), e));
        }
        if (e instanceof NotEmpty x) {
            return sneaky(analysis("not empty", x.getMessage(), e));
        }
        if (e instanceof InvalidArgument x) {
            return sneaky(analysis("invalid argument", x.getMessage(), e));
        }
        if (e instanceof Unsupported x) {
            return sneaky(analysis("unsupported", x.getMessage(), e));
        }
        if (e instanceof MetastoreUnavailable x) {
            return sneaky(analysis("metastore unavailable", x.getMessage(), e));
        }
        if (e instanceof PermissionDenied x) {
            return sneaky(analysis("permission denied", x.getMessage(), e));
        }
        if (e instanceof Conflict x) {
            return sneaky(analysis("conflict", x.getMessage(), e));
        }
        if (e instanceof catalogd.thrift.InternalError x) {
            return sneaky(analysis("internal error", x.getMessage(), e));
        }
        if (e instanceof TTransportException) {
            return sneaky(analysis("unavailable", e.getMessage(), e));
        }
        return sneaky(analysis("internal error", String.valueOf(e.getMessage()), e));
    }

    /** Throws a checked exception where Java's signature does not declare it (Spark's Scala callers catch it). */
    @SuppressWarnings("unchecked")
    static <E extends Throwable> RuntimeException sneaky(Throwable t) throws E {
        throw (E) t;
    }
}
