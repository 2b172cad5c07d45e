package catalogd.spark;

import catalogd.thrift.CatalogInfo;
import catalogd.thrift.Column;
import catalogd.thrift.Database;
import catalogd.thrift.DatabaseUpdate;
import catalogd.thrift.NamespacePath;
import catalogd.thrift.NotFound;
import catalogd.thrift.ObjectPath;
import catalogd.thrift.StagePurpose;
import catalogd.thrift.Table;
import catalogd.thrift.TableKind;
import catalogd.thrift.TableUpdate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.catalyst.analysis.NamespaceAlreadyExistsException;
import org.apache.spark.sql.catalyst.analysis.NoSuchNamespaceException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NonEmptyNamespaceException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.NamespaceChange;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.TableWritePrivilege;
import org.apache.spark.sql.connector.catalog.RelationCatalog;
import org.apache.spark.sql.connector.expressions.IdentityTransform;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.thrift.TException;

/**
 * A catalogd catalog as a Spark catalog ({@code spark.sql.catalog.<name>=catalogd.spark.CatalogdCatalog}):
 * namespaces are its databases, tables its tables, and every CREATE / REPLACE ... AS SELECT and
 * INSERT goes through a catalogd stage, so readers see the old table or the new one, and a job
 * that fails or dies leaves nothing. Talks to catalogd's Thrift API; the stage's rows are written
 * by Spark's own writer through the session catalog (catalogd's HMS endpoint).
 *
 * <p>Options ({@code spark.sql.catalog.<name>.<option>}): {@code address} (catalogd's
 * {@code HOST:PORT[,HOST:PORT...]}), {@code catalog} (the catalogd catalog; default the Spark
 * name), {@code token-env} / {@code token-file}, {@code tls}, {@code truststore},
 * {@code truststore-password-env}, {@code session-catalog} (default {@code spark_catalog}),
 * {@code lease} (a stage's lease in milliseconds; default catalogd's {@code staging.lease}); a jdbc
 * catalog's login: {@code jdbc-user}, {@code jdbc-password-file}, {@code jdbc-password-env}
 * ({@link JdbcTables}).
 */
public class CatalogdCatalog implements StagingTableCatalog, SupportsNamespaces, FunctionCatalog, RelationCatalog {
    /** Table properties Spark passes that are not table properties in the metastore. */
    private static final Set<String> RESERVED = Set.of(TableCatalog.PROP_PROVIDER, TableCatalog.PROP_LOCATION,
        TableCatalog.PROP_COMMENT, TableCatalog.PROP_OWNER, TableCatalog.PROP_EXTERNAL,
        TableCatalog.PROP_IS_MANAGED_LOCATION);

    private String name;
    private String catalogdName;
    private String sessionCatalog;
    private Connection connection;
    private long leaseMillis;
    private JdbcTables.Login jdbcLogin;
    private volatile CatalogInfo info;

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
        Map<String, String> opts = new HashMap<>();
        options.forEach((k, v) -> opts.put(k.toLowerCase(Locale.ROOT), v));
        this.catalogdName = opts.getOrDefault("catalog", name);
        this.sessionCatalog = opts.getOrDefault("session-catalog", "spark_catalog");
        this.connection = new Connection(opts);
        this.leaseMillis = leaseOption(opts.get("lease"));
        this.jdbcLogin = new JdbcTables.Login(catalogdName, opts);
    }

    private static long leaseOption(String value) {
        if (value == null || value.isBlank()) {
            return 0;
        }
        try {
            long millis = Long.parseLong(value.trim());
            if (millis > 0) {
                return millis;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw Errors.invalid("bad lease " + value + ": a stage's lease in milliseconds (e.g. 60000)");
    }

    /** The lease a stage asks for (0: catalogd's staging.lease). */
    long leaseMillis() {
        return leaseMillis;
    }

    @Override
    public String name() {
        return name;
    }

    Connection connection() {
        return connection;
    }

    String sessionCatalogName() {
        return sessionCatalog;
    }

    CatalogInfo info() {
        CatalogInfo known = info;
        if (known == null) {
            try {
                known = connection.call(c -> c.getCatalog(catalogdName));
            } catch (TException e) {
                throw Errors.of(e);
            }
            info = known;
        }
        return known;
    }

    /** What this catalog's databases are called on catalogd's HMS endpoint start with. */
    String hmsPrefix() {
        CatalogInfo i = info();
        return i.isSetHmsPrefix() && i.getHmsPrefix() != null ? i.getHmsPrefix() : "";
    }

    /** Whether this is a jdbc catalog: its tables are read and written through Spark's JDBC source. */
    boolean jdbc() {
        return "jdbc".equals(info().getType());
    }

    JdbcTables.Login jdbcLogin() {
        return jdbcLogin;
    }

    /** Whether writes go through catalogd stages (hive and jdbc catalogs with atomic writes on). */
    boolean stages() {
        CatalogInfo i = info();
        boolean atomic = !i.isSetAtomicWrites() || i.isAtomicWrites();
        return atomic && !"memory".equals(i.getType());
    }

    /** The name Spark's session catalog (catalogd's HMS endpoint) gives {@code ident}. */
    String sparkName(Identifier ident) {
        return sessionCatalog + "." + Inserts.quote(hmsPrefix() + ident.namespace()[0]) + "."
            + Inserts.quote(ident.name());
    }

    /** A table's file listings, kept while its metastore definition stays the same. */
    private record Listings(String fingerprint, FileStatusCache cache) {}

    private final Map<String, Listings> listings = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * The file listings to read {@code ident} with: the ones kept for it while {@code fingerprint}
     * (its location, properties and partitions as catalogd answered them) is unchanged, else new
     * ones. Every commit through catalogd changes the table's properties (catalogd.last-commit), so
     * a write through catalogd is seen at once; files written behind catalogd's back into an
     * existing directory are seen after {@code REFRESH TABLE}, as with Spark's own file index.
     * Memory catalogs' tables are listed afresh each time (their writes leave no such mark).
     */
    FileStatusCache listings(Identifier ident, String fingerprint) {
        org.apache.spark.sql.SparkSession spark = org.apache.spark.sql.SparkSession.active();
        if (fingerprint == null) {
            return FileStatusCache.getOrCreate(spark);
        }
        String key = String.join(".", ident.namespace()) + "." + ident.name();
        String digest = sha256(fingerprint);  // kept small: a table may have thousands of partitions
        return listings.compute(key, (k, kept) -> kept != null && kept.fingerprint().equals(digest) ? kept
            : new Listings(digest, FileStatusCache.getOrCreate(spark))).cache();
    }

    private static String sha256(String text) {
        try {
            byte[] hash = java.security.MessageDigest.getInstance("SHA-256")
                .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return java.util.HexFormat.of().formatHex(hash);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);  // every JVM has SHA-256
        }
    }

    void invalidated(Identifier ident) {
        listings.remove(String.join(".", ident.namespace()) + "." + ident.name());
    }

    @Override
    public void invalidateTable(Identifier ident) {
        invalidated(ident);  // REFRESH TABLE: list the files again
    }

    // ------------------------------------------------------------ names

    private String database(String[] namespace) {
        if (namespace.length != 1) {
            throw Errors.sneaky(new NoSuchNamespaceException(namespace));
        }
        return namespace[0];
    }

    ObjectPath path(Identifier ident) {
        String[] ns = ident.namespace();
        if (ns.length != 1) {
            throw Errors.invalid(name + "." + String.join(".", ns) + "." + ident.name()
                + ": a catalogd table is named catalog.database.table");
        }
        ObjectPath path = new ObjectPath(ident.name());
        path.setCatalog(catalogdName);
        path.setDatabase(ns[0]);
        return path;
    }

    private NamespacePath namespacePath(String[] namespace) {
        NamespacePath path = new NamespacePath(database(namespace));
        path.setCatalog(catalogdName);
        return path;
    }

    @Override
    public String[] defaultNamespace() {
        return new String[] {info().getDefaultDatabase()};
    }

    // ------------------------------------------------------------ namespaces

    @Override
    public String[][] listNamespaces() {
        List<String> names;
        try {
            names = connection.call(c -> c.listDatabases(catalogdName));
        } catch (TException e) {
            throw Errors.of(e);
        }
        String[][] out = new String[names.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = new String[] {names.get(i)};
        }
        return out;
    }

    @Override
    public String[][] listNamespaces(String[] namespace) throws NoSuchNamespaceException {
        if (namespace.length == 0) {
            return listNamespaces();
        }
        loadNamespaceMetadata(namespace);
        return new String[0][];
    }

    @Override
    public boolean namespaceExists(String[] namespace) {
        if (namespace.length != 1) {
            return false;
        }
        try {
            return connection.call(c -> c.databaseExists(namespacePath(namespace)));
        } catch (NotFound e) {
            return false;
        } catch (TException e) {
            throw Errors.of(e);
        }
    }

    @Override
    public Map<String, String> loadNamespaceMetadata(String[] namespace) throws NoSuchNamespaceException {
        Database db;
        try {
            db = connection.call(c -> c.getDatabase(namespacePath(namespace)));
        } catch (TException e) {
            throw Errors.forNamespace(e, namespace);
        }
        Map<String, String> meta = new HashMap<>(db.isSetProperties() ? db.getProperties() : Map.of());
        if (db.isSetComment() && db.getComment() != null) {
            meta.put(SupportsNamespaces.PROP_COMMENT, db.getComment());
        }
        if (db.isSetLocation() && db.getLocation() != null) {
            meta.put(SupportsNamespaces.PROP_LOCATION, db.getLocation());
        }
        if (db.isSetOwner() && db.getOwner() != null) {
            meta.put(SupportsNamespaces.PROP_OWNER, db.getOwner());
        }
        return meta;
    }

    @Override
    public void createNamespace(String[] namespace, Map<String, String> metadata)
            throws NamespaceAlreadyExistsException {
        Database db = new Database(database(namespace));
        db.setCatalog(catalogdName);
        Map<String, String> props = new HashMap<>();
        metadata.forEach((k, v) -> {
            switch (k) {
                case SupportsNamespaces.PROP_COMMENT -> db.setComment(v);
                case SupportsNamespaces.PROP_LOCATION -> db.setLocation(v);
                case SupportsNamespaces.PROP_OWNER -> { }  // catalogd records the caller
                default -> props.put(k, v);
            }
        });
        db.setProperties(props);
        try {
            connection.call(c -> {
                c.createDatabase(db, false);
                return null;
            });
        } catch (TException e) {
            throw Errors.forNamespace(e, namespace);
        }
    }

    @Override
    public void alterNamespace(String[] namespace, NamespaceChange... changes) throws NoSuchNamespaceException {
        DatabaseUpdate update = new DatabaseUpdate();
        Map<String, String> set = new HashMap<>();
        List<String> unset = new ArrayList<>();
        for (NamespaceChange change : changes) {
            if (change instanceof NamespaceChange.SetProperty sp) {
                if (SupportsNamespaces.PROP_COMMENT.equals(sp.property())) {
                    update.setComment(sp.value());
                } else {
                    set.put(sp.property(), sp.value());
                }
            } else if (change instanceof NamespaceChange.RemoveProperty rp) {
                unset.add(rp.property());
            }
        }
        if (!set.isEmpty()) {
            update.setSetProperties(set);
        }
        if (!unset.isEmpty()) {
            update.setUnsetProperties(unset);
        }
        try {
            connection.call(c -> {
                c.alterDatabase(namespacePath(namespace), update);
                return null;
            });
        } catch (TException e) {
            throw Errors.forNamespace(e, namespace);
        }
    }

    @Override
    public boolean dropNamespace(String[] namespace, boolean cascade)
            throws NoSuchNamespaceException, NonEmptyNamespaceException {
        try {
            connection.call(c -> {
                c.dropDatabase(namespacePath(namespace), false, cascade, false);
                return null;
            });
            return true;
        } catch (TException e) {
            throw Errors.forNamespace(e, namespace);
        }
    }

    // ------------------------------------------------------------ tables

    @Override
    public Identifier[] listTables(String[] namespace) throws NoSuchNamespaceException {
        List<String> names;
        try {
            names = connection.call(c -> c.listTables(namespacePath(namespace)));
        } catch (TException e) {
            throw Errors.forNamespace(e, namespace);
        }
        Identifier[] out = new Identifier[names.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Identifier.of(namespace, names.get(i));
        }
        return out;
    }

    @Override
    public org.apache.spark.sql.connector.catalog.Table loadTable(Identifier ident) throws NoSuchTableException {
        if (ident.namespace().length != 1) {
            throw new NoSuchTableException(ident);
        }
        Table table;
        try {
            table = connection.call(c -> c.getTable(path(ident)));
        } catch (TException e) {
            throw Errors.forTable(e, ident);
        }
        if (table.getKind() == TableKind.VIEW) {
            throw new NoSuchTableException(ident);
        }
        return new CatalogdTable(this, ident, table);
    }

    @Override
    public org.apache.spark.sql.connector.catalog.Table loadTable(Identifier ident,
                                                                  Set<TableWritePrivilege> privileges)
            throws NoSuchTableException {
        return loadTable(ident);
    }

    @Override
    public boolean tableExists(Identifier ident) {
        if (ident.namespace().length != 1) {
            return false;
        }
        try {
            return connection.call(c -> c.tableExists(path(ident)));
        } catch (NotFound e) {
            return false;
        } catch (TException e) {
            throw Errors.of(e);
        }
    }

    @Override
    @SuppressWarnings("deprecation")
    public org.apache.spark.sql.connector.catalog.Table createTable(Identifier ident, StructType schema,
                                                                    Transform[] partitions,
                                                                    Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        Table table = Definition.of(schema, partitions, properties).table(ident.name(), database(ident.namespace()),
            catalogdName);
        Table made;
        try {
            made = connection.call(c -> c.createTable(table, false));
        } catch (TException e) {
            throw Errors.forTable(e, ident);
        }
        return new CatalogdTable(this, ident, made);
    }

    @Override
    public org.apache.spark.sql.connector.catalog.Table alterTable(Identifier ident, TableChange... changes)
            throws NoSuchTableException {
        TableUpdate update = new TableUpdate();
        Map<String, String> set = new HashMap<>();
        List<String> unset = new ArrayList<>();
        List<Column> add = new ArrayList<>();
        for (TableChange change : changes) {
            if (change instanceof TableChange.SetProperty sp) {
                if (TableCatalog.PROP_COMMENT.equals(sp.property())) {
                    update.setComment(sp.value());
                } else {
                    set.put(sp.property(), sp.value());
                }
            } else if (change instanceof TableChange.RemoveProperty rp) {
                unset.add(rp.property());
            } else if (change instanceof TableChange.AddColumn ac && ac.fieldNames().length == 1) {
                StructField field = new StructField(ac.fieldNames()[0], ac.dataType(), ac.isNullable(),
                    org.apache.spark.sql.types.Metadata.empty());
                Column column = Types.column(field);
                if (ac.comment() != null) {
                    column.setComment(ac.comment());
                }
                add.add(column);
            } else {
                throw Errors.unsupported(name + "." + ident + ": catalogd tables take property, comment and "
                    + "added-column changes; " + change.getClass().getSimpleName() + " is not supported");
            }
        }
        if (!set.isEmpty()) {
            update.setSetProperties(set);
        }
        if (!unset.isEmpty()) {
            update.setUnsetProperties(unset);
        }
        if (!add.isEmpty()) {
            update.setAddColumns(add);
        }
        Table altered;
        try {
            altered = connection.call(c -> c.alterTable(path(ident), update));
        } catch (TException e) {
            throw Errors.forTable(e, ident);
        }
        return new CatalogdTable(this, ident, altered);
    }

    @Override
    public boolean dropTable(Identifier ident) {
        return drop(ident, false);
    }

    @Override
    public boolean purgeTable(Identifier ident) {
        return drop(ident, true);
    }

    private boolean drop(Identifier ident, boolean purge) {
        if (ident.namespace().length != 1) {
            return false;
        }
        try {
            connection.call(c -> {
                c.dropTable(path(ident), false, purge, false);
                return null;
            });
            return true;
        } catch (NotFound e) {
            return false;
        } catch (TException e) {
            throw Errors.of(e);
        }
    }

    @Override
    public void renameTable(Identifier from, Identifier to) throws NoSuchTableException, TableAlreadyExistsException {
        if (!java.util.Arrays.equals(from.namespace(), to.namespace()) && to.namespace().length > 0) {
            throw Errors.unsupported("catalogd renames a table within its database: " + from + " -> " + to);
        }
        try {
            connection.call(c -> {
                c.renameTable(path(from), to.name(), false);
                return null;
            });
        } catch (catalogd.thrift.AlreadyExists e) {
            throw new TableAlreadyExistsException(to);
        } catch (TException e) {
            throw Errors.forTable(e, from);
        }
    }

    // ------------------------------------------------------------ staging

    @Override
    @SuppressWarnings("deprecation")
    public StagedTable stageCreate(Identifier ident, StructType schema, Transform[] partitions,
                                   Map<String, String> properties)
            throws TableAlreadyExistsException, NoSuchNamespaceException {
        return stage(ident, StagePurpose.CREATE, schema, partitions, properties);
    }

    @Override
    @SuppressWarnings("deprecation")
    public StagedTable stageReplace(Identifier ident, StructType schema, Transform[] partitions,
                                    Map<String, String> properties) throws NoSuchNamespaceException, NoSuchTableException {
        if (!tableExists(ident)) {
            throw new NoSuchTableException(ident);
        }
        return stage(ident, StagePurpose.REPLACE, schema, partitions, properties);
    }

    @Override
    @SuppressWarnings("deprecation")
    public StagedTable stageCreateOrReplace(Identifier ident, StructType schema, Transform[] partitions,
                                            Map<String, String> properties) throws NoSuchNamespaceException {
        return stage(ident, StagePurpose.REPLACE, schema, partitions, properties);
    }

    private StagedTable stage(Identifier ident, StagePurpose purpose, StructType schema, Transform[] partitions,
                              Map<String, String> properties) {
        Definition def = Definition.of(schema, partitions, properties);
        if (def.location != null) {
            throw Errors.unsupported(name + "." + ident + ": an atomic CREATE / REPLACE ... AS SELECT writes where "
                + "catalogd places the table; drop the LOCATION clause");
        }
        Writer writer;
        if (stages()) {
            writer = Stages.begin(this, ident, purpose, def.columns, def.keys, def.format, def.properties, def.comment);
        } else {
            if (purpose == StagePurpose.CREATE && tableExists(ident)) {
                throw Errors.sneaky(new TableAlreadyExistsException(ident));
            }
            writer = new PlainWrite(this, ident, def.table(ident.name(), database(ident.namespace()), catalogdName),
                purpose == StagePurpose.REPLACE);
        }
        return new StagedCatalogdTable(name + "." + String.join(".", ident.namespace()) + "." + ident.name(),
            schema, partitions, properties, writer);
    }

    // ------------------------------------------------------------ views and functions (Views, Functions)

    /** A table, else a view (Spark 4.3 asks a catalog of both for a RelationCatalog). */
    @Override
    public org.apache.spark.sql.connector.catalog.Relation loadRelation(Identifier ident) throws NoSuchTableException {
        try {
            return loadTable(ident);
        } catch (NoSuchTableException e) {
            try {
                return loadView(ident);
            } catch (org.apache.spark.sql.catalyst.analysis.NoSuchViewException v) {
                throw e;
            }
        }
    }

    @Override
    public Identifier[] listViews(String[] namespace) throws NoSuchNamespaceException {
        return new Views(this).list(namespace);
    }

    @Override
    public org.apache.spark.sql.connector.catalog.View loadView(Identifier ident)
            throws org.apache.spark.sql.catalyst.analysis.NoSuchViewException {
        return new Views(this).load(ident);
    }

    @Override
    public org.apache.spark.sql.connector.catalog.View createView(Identifier ident,
                                                                  org.apache.spark.sql.connector.catalog.View view)
            throws org.apache.spark.sql.catalyst.analysis.ViewAlreadyExistsException, NoSuchNamespaceException {
        return new Views(this).create(ident, view);
    }

    @Override
    public org.apache.spark.sql.connector.catalog.View replaceView(Identifier ident,
                                                                   org.apache.spark.sql.connector.catalog.View view)
            throws org.apache.spark.sql.catalyst.analysis.NoSuchViewException {
        return new Views(this).replace(ident, view);
    }

    @Override
    public boolean dropView(Identifier ident) {
        return new Views(this).drop(ident);
    }

    @Override
    public void renameView(Identifier from, Identifier to)
            throws org.apache.spark.sql.catalyst.analysis.NoSuchViewException,
                   org.apache.spark.sql.catalyst.analysis.ViewAlreadyExistsException {
        new Views(this).rename(from, to);
    }

    @Override
    public Identifier[] listFunctions(String[] namespace) throws NoSuchNamespaceException {
        return new Functions(this).list(namespace);
    }

    @Override
    public org.apache.spark.sql.connector.catalog.functions.UnboundFunction loadFunction(Identifier ident)
            throws org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException {
        return new Functions(this).load(ident);
    }

    /** A Spark table definition as catalogd's: columns, partition keys (last), format, properties. */
    static final class Definition {
        List<Column> columns = new ArrayList<>();
        List<Column> keys = new ArrayList<>();
        String format = "parquet";
        String comment;
        String location;
        Map<String, String> properties = new HashMap<>();

        /** The catalogd table this defines. */
        Table table(String tableName, String database, String catalog) {
            Table table = new Table(tableName, database);
            table.setCatalog(catalog);
            table.setColumns(columns);
            table.setPartitionKeys(keys);
            table.setFormat(format);
            table.setProperties(properties);
            if (comment != null) {
                table.setComment(comment);
            }
            if (location != null) {
                table.setLocation(location);
                table.setKind(TableKind.EXTERNAL);
            }
            return table;
        }

        static Definition of(StructType schema, Transform[] partitions, Map<String, String> properties) {
            Definition def = new Definition();
            List<String> keyNames = new ArrayList<>();
            for (Transform t : partitions) {
                if (!(t instanceof IdentityTransform) || t.references().length != 1
                        || t.references()[0].fieldNames().length != 1) {
                    throw Errors.unsupported("catalogd tables are partitioned by columns (PARTITIONED BY (c, ...)); "
                        + t.describe() + " is not supported");
                }
                keyNames.add(t.references()[0].fieldNames()[0].toLowerCase(Locale.ROOT));
            }
            Map<String, StructField> byName = new HashMap<>();
            for (StructField f : schema.fields()) {
                byName.put(f.name().toLowerCase(Locale.ROOT), f);
                if (!keyNames.contains(f.name().toLowerCase(Locale.ROOT))) {
                    def.columns.add(Types.column(f));
                }
            }
            for (String key : keyNames) {
                StructField f = byName.get(key);
                if (f == null) {
                    throw Errors.invalid("partition column " + key + " is not among the columns");
                }
                def.keys.add(Types.column(f));
            }
            String provider = properties.get(TableCatalog.PROP_PROVIDER);
            if (provider != null && !provider.equalsIgnoreCase("hive")) {
                def.format = provider.toLowerCase(Locale.ROOT);
            } else if (properties.containsKey("hive.stored-as")) {
                def.format = properties.get("hive.stored-as").toLowerCase(Locale.ROOT);
            }
            def.comment = properties.get(TableCatalog.PROP_COMMENT);
            def.location = properties.get(TableCatalog.PROP_LOCATION);
            properties.forEach((k, v) -> {
                if (!RESERVED.contains(k) && !k.startsWith(TableCatalog.OPTION_PREFIX) && !k.startsWith("hive.")) {
                    def.properties.put(k, v);
                }
            });
            return def;
        }
    }
}
