package catalogd.spark;

import catalogd.thrift.CatalogInfo;
import catalogd.thrift.Column;
import catalogd.thrift.Stage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.execution.datasources.jdbc.JDBCOptions;
import org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTable;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A jdbc catalog's tables through Spark's own JDBC source: reads are a {@link JDBCTable}'s
 * scans (filters, columns, limits and aggregates pushed down to PostgreSQL), and a stage's rows
 * are appended into its PostgreSQL staging table with Spark's JDBC writer; catalogd then
 * commits the stage in one PostgreSQL transaction (docs/jdbc-catalogs.md).
 *
 * <p>The login: the user is the plugin option {@code jdbc-user}, else the variable
 * {@code CATALOGD_JDBC_USER_<CATALOG>}, else the role catalogd logs in as. The password is read
 * in the driver, when a statement needs it, from the file {@code jdbc-password-file} (the
 * driver's user's, not readable by others), else the variable {@code jdbc-password-env}
 * (default {@code CATALOGD_JDBC_PASSWORD_<CATALOG>}). It is never a Spark setting: it travels
 * only inside the JDBC options Spark hands its tasks, and Spark's plans print those redacted.
 */
final class JdbcTables {
    /** The one dialect catalogd speaks (catalogd/catalog/jdbc_dialect.py). */
    static final String DRIVER = "org.postgresql.Driver";
    /** JDBC options that say what is read and as whom: the catalog's, never a statement's. */
    private static final Set<String> IDENTITY = Set.of("url", "dbtable", "query", "driver", "user", "password",
        "customschema", "sessioninitstatement", "preparequery");

    private JdbcTables() {}

    /** Where a jdbc catalog's login comes from: the plugin's options, read when needed. */
    static final class Login {
        private final String catalog;
        private final String user;
        private final String passwordFile;
        private final String passwordEnv;

        Login(String catalogdName, Map<String, String> options) {
            this.catalog = catalogdName.toUpperCase(Locale.ROOT);
            this.user = blankToNull(options.get("jdbc-user"));
            this.passwordFile = blankToNull(options.get("jdbc-password-file"));
            String env = blankToNull(options.get("jdbc-password-env"));
            this.passwordEnv = env != null ? env : "CATALOGD_JDBC_PASSWORD_" + catalog;
        }

        String user(CatalogInfo info) {
            if (user != null) {
                return user;
            }
            String env = blankToNull(System.getenv("CATALOGD_JDBC_USER_" + catalog));
            if (env != null) {
                return env;
            }
            return info.isSetJdbcUser() ? blankToNull(info.getJdbcUser()) : null;
        }

        /** The password, or null (PostgreSQL may still take the login: trust, ~/.pgpass). */
        String password() {
            if (passwordFile != null) {
                return readPasswordFile(passwordFile);
            }
            return blankToNull(System.getenv(passwordEnv));
        }

        /** Where the password was looked for, for an error message (never the password). */
        String sources() {
            return passwordFile != null ? "the file " + passwordFile + " (option jdbc-password-file)"
                : "the environment variable " + passwordEnv + " of the Spark driver";
        }
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.trim();
    }

    /** A password file: one line, the driver's user's own, not readable by group or others. */
    static String readPasswordFile(String file) {
        Path path = Path.of(file);
        try {
            if (!Files.isRegularFile(path)) {
                throw Errors.invalid("the jdbc password file " + file + " is not a file");
            }
            try {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS);
                if (perms.contains(PosixFilePermission.GROUP_READ) || perms.contains(PosixFilePermission.OTHERS_READ)) {
                    throw Errors.invalid("the jdbc password file " + file + " is readable by others: "
                        + "chmod 600 " + file);
                }
            } catch (UnsupportedOperationException e) {
                // not a POSIX file system: nothing to check
            }
            String text = Files.readString(path, StandardCharsets.UTF_8);
            int newline = text.indexOf('\n');
            String line = (newline >= 0 ? text.substring(0, newline) : text).strip();
            if (line.isEmpty()) {
                throw Errors.invalid("the jdbc password file " + file + " is empty");
            }
            return line;
        } catch (IOException e) {
            throw Errors.invalid("cannot read the jdbc password file " + file + ": " + e.getMessage());
        }
    }

    static String quote(String name) {
        return "\"" + name.replace("\"", "\"\"") + "\"";
    }

    /** Spark's JDBC options for {@code schema.table} of the catalog's database (with the login). */
    static Map<String, String> options(CatalogdCatalog catalog, String schema, String table) {
        CatalogInfo info = catalog.info();
        String url = info.isSetMetastore() ? info.getMetastore() : null;
        if (url == null || url.isBlank()) {
            throw Errors.invalid("catalog " + catalog.name() + " names no JDBC URL");
        }
        Map<String, String> options = new HashMap<>();
        options.put(JDBCOptions.JDBC_URL(), url);
        options.put(JDBCOptions.JDBC_TABLE_NAME(), quote(schema) + "." + quote(table));
        options.put(JDBCOptions.JDBC_DRIVER_CLASS(), DRIVER);
        // Batched INSERTs sent as multi-row ones: the one driver setting that matters for write speed.
        options.put("reWriteBatchedInserts", "true");
        JdbcTables.Login login = catalog.jdbcLogin();
        String user = login.user(info);
        if (user != null) {
            options.put("user", user);
        }
        String password = login.password();
        if (password != null) {
            options.put("password", password);
        }
        return options;
    }

    private static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> map) {
        return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(map));
    }

    /** A scan of {@code ident} (schema = the namespace) with the table's schema as catalogd gives it. */
    static ScanBuilder scanBuilder(CatalogdCatalog catalog, Identifier ident, StructType schema,
                                   CaseInsensitiveStringMap readOptions) {
        JDBCOptions options = new JDBCOptions(scalaMap(options(catalog, ident.namespace()[0], ident.name())));
        JDBCTable table = new JDBCTable(ident, schema, options, JDBCTable.apply$default$4());
        // A read's own options tune the scan (partitionColumn, lowerBound, upperBound, numPartitions,
        // fetchsize, ...); they do not name another table, server or login.
        for (String key : readOptions.keySet()) {
            if (IDENTITY.contains(key.toLowerCase(Locale.ROOT))) {
                throw Errors.invalid(catalog.name() + "." + ident + ": the read option " + key + " is the catalog's "
                    + "to set (a read of a jdbc catalog's table takes tuning options: partitionColumn, lowerBound, "
                    + "upperBound, numPartitions, fetchsize, ...)");
            }
        }
        return table.newScanBuilder(readOptions);
    }

    /**
     * Appends {@code data} into the stage's PostgreSQL staging table: its columns put in the
     * stage's order and named as catalogd keeps them (lower case), matched by name when every
     * name matches, else by position.
     */
    static void append(CatalogdCatalog catalog, Stage stage, Dataset<Row> data) {
        List<Column> columns = stage.isSetColumns() ? stage.getColumns() : List.of();
        Dataset<Row> input = data;
        if (columns.size() == data.columns().length) {
            Map<String, String> lower = new HashMap<>();
            for (String n : data.columns()) {
                lower.put(n.toLowerCase(Locale.ROOT), n);
            }
            boolean byName = columns.stream().allMatch(c -> lower.containsKey(c.getName().toLowerCase(Locale.ROOT)));
            List<org.apache.spark.sql.Column> ordered = new ArrayList<>();
            for (int i = 0; i < columns.size(); i++) {
                String target = columns.get(i).getName().toLowerCase(Locale.ROOT);
                String source = byName ? lower.get(target) : data.columns()[i];
                ordered.add(data.col(Inserts.quote(source)).as(target));
            }
            input = data.select(ordered.toArray(new org.apache.spark.sql.Column[0]));
        } else {
            String[] names = new String[data.columns().length];
            for (int i = 0; i < names.length; i++) {
                names[i] = data.columns()[i].toLowerCase(Locale.ROOT);
            }
            input = data.toDF(names);
        }
        Map<String, String> options = options(catalog, stage.getTarget().getDatabase(), stage.getStagingTable());
        try {
            input.write().format("jdbc").options(options).mode(SaveMode.Append).save();
        } catch (Exception e) {  // Scala throws the driver's checked SQLExceptions undeclared
            if (!options.containsKey("password") && String.valueOf(e.getMessage()).contains("no password")) {
                throw Errors.sneaky(Errors.analysis("permission denied", "PostgreSQL refused the login of catalog "
                    + catalog.name() + " without a password: give it in " + catalog.jdbcLogin().sources(), e));
            }
            throw Errors.sneaky(e);
        }
    }
}
