package catalogd.spark;

import catalogd.thrift.Function;
import catalogd.thrift.NamespacePath;
import catalogd.thrift.NotFound;
import catalogd.thrift.Resource;
import java.util.List;
import java.util.Locale;
import java.util.StringJoiner;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.StructType;
import org.apache.thrift.TException;

/**
 * {@link CatalogdCatalog}'s functions (Spark's {@code FunctionCatalog}): catalogd's functions by
 * their catalog names ({@code main.db.f(x)}). A catalog plugin's function must be one of Spark's
 * own (connector) functions, so a function whose class implements Spark's
 * {@code UnboundFunction}, or a {@code BoundFunction} ({@code ScalarFunction},
 * {@code AggregateFunction}) taken as it is, is loaded from the driver's classpath, or from its jar
 * resources (added to the session as Spark adds a Hive function's), and called.
 * A Hive {@code GenericUDF} runs through {@link HiveFunction} over primitive types. Other Hive
 * functions (old-style {@code UDF}s, whose method resolution needs Hive's function registry, which
 * pyspark's Hive jars cannot load; UDAFs; UDTFs) and other types are refused with the name that
 * calls them through Spark's session catalog ({@code spark_catalog.<database on the HMS endpoint>.f}).
 */
final class Functions {
    private final CatalogdCatalog catalog;

    Functions(CatalogdCatalog catalog) {
        this.catalog = catalog;
    }

    Identifier[] list(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length == 0) {
            return new Identifier[0];
        }
        if (namespace.length != 1) {
            throw new NoSuchNamespaceException(namespace);
        }
        NamespacePath path = new NamespacePath(namespace[0]);
        path.setCatalog(catalog.info().getName());
        List<String> names;
        try {
            names = catalog.connection().call(c -> c.listFunctions(path));
        } catch (catalogd.thrift.Unsupported e) {
            return new Identifier[0];  // a catalog without functions (jdbc): none to list
        } catch (TException e) {
            throw Errors.forNamespace(e, namespace);
        }
        return names.stream().map(n -> Identifier.of(namespace, n)).toArray(Identifier[]::new);
    }

    UnboundFunction load(Identifier ident) throws NoSuchFunctionException {
        if (ident.namespace().length != 1) {
            throw new NoSuchFunctionException(ident);
        }
        Function function;
        try {
            function = catalog.connection().call(c -> c.getFunction(catalog.path(ident)));
        } catch (NotFound | catalogd.thrift.Unsupported e) {
            throw new NoSuchFunctionException(ident);
        } catch (TException e) {
            throw Errors.of(e);
        }
        String full = catalog.name() + "." + ident.namespace()[0] + "." + ident.name();
        String language = function.isSetLanguage() && function.getLanguage() != null
            ? function.getLanguage().toLowerCase(Locale.ROOT) : "java";
        if (!language.equals("java") && !language.equals("scala")) {
            throw Errors.unsupported(full + " is a " + language + " function (" + function.getClassName()
                + "); Spark SQL calls catalogd's JVM functions only");
        }
        Class<?> cls = find(function.getClassName());
        if (cls == null && addJars(function)) {
            cls = find(function.getClassName());
        }
        if (cls == null) {
            throw Errors.unsupported(full + ": its class " + function.getClassName()
                + " is not on the driver's classpath" + resources(function)
                + " (add its jar with spark.jars or ADD JAR)");
        }
        if (UnboundFunction.class.isAssignableFrom(cls)) {
            return (UnboundFunction) instance(cls, full);
        }
        if (BoundFunction.class.isAssignableFrom(cls)) {
            return new Bound((BoundFunction) instance(cls, full));
        }
        String elsewhere = "call it as " + catalog.sessionCatalogName() + ".`" + catalog.hmsPrefix()
            + ident.namespace()[0] + "`." + ident.name() + "(...) (Spark's session catalog on catalogd's HMS endpoint)";
        try {
            if (org.apache.hadoop.hive.ql.udf.generic.GenericUDF.class.isAssignableFrom(cls)) {
                return new HiveFunction(full, function.getClassName(), false, elsewhere);
            }
        } catch (LinkageError e) {
            // A Spark without Hive's classes: no Hive function runs here.
        }
        throw Errors.unsupported(full + " is a Hive function (" + function.getClassName() + ") that is not a "
            + "GenericUDF: through a Spark catalog plugin run Spark's own functions and Hive GenericUDFs only; "
            + elsewhere);
    }

    private static Class<?> find(String className) {
        try {
            return Class.forName(className, true, org.apache.spark.util.Utils.getContextOrSparkClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
    }

    /**
     * The function's jar resources added to the session (as Spark adds a Hive function's on first
     * use: {@code ADD JAR}, which also makes them the calling thread's class loader); whether any was.
     */
    private static boolean addJars(Function function) {
        if (!function.isSetResources()) {
            return false;
        }
        boolean added = false;
        for (Resource r : function.getResources()) {
            if ("jar".equalsIgnoreCase(r.getType())) {
                org.apache.spark.sql.SparkSession.active().sessionState().resourceLoader().addJar(r.getUri());
                added = true;
            }
        }
        return added;
    }

    private static String resources(Function function) {
        if (!function.isSetResources() || function.getResources().isEmpty()) {
            return "";
        }
        StringJoiner out = new StringJoiner(", ", "; its resources: ", "");
        for (Resource r : function.getResources()) {
            out.add(r.getType() + " " + r.getUri());
        }
        return out.toString();
    }

    private static Object instance(Class<?> cls, String full) {
        try {
            return cls.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw Errors.unsupported(full + ": cannot make an instance of " + cls.getName()
                + " (a public no-argument constructor is needed): " + e);
        }
    }

    /** A BoundFunction taken as it is: Spark checks (and casts) the arguments to its input types. */
    private record Bound(BoundFunction function) implements UnboundFunction {
        @Override
        public BoundFunction bind(StructType inputType) {
            return function;
        }

        @Override
        public String description() {
            return function.name() + ": " + function.getClass().getName();
        }

        @Override
        public String name() {
            return function.name();
        }
    }
}
