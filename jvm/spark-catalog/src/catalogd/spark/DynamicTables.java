package catalogd.spark;

import catalogd.thrift.Column;
import catalogd.thrift.DynamicTable;
import catalogd.thrift.ObjectPath;
import catalogd.thrift.RefreshRun;
import catalogd.thrift.StatementResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.StringJoiner;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.thrift.TException;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Runs a dynamic-table statement through catalogd's {@code executeStatement} (DESCRIBE through
 * {@code getDynamicTable}) when Spark parses it, and hands back its result as rows.
 *
 * <p>Names: {@code cat.db.t} whose {@code cat} is a catalogd plugin catalog goes to that
 * catalog's daemon with its catalogd name; {@code db.t} and {@code t} are in the session's current
 * catalog (and namespace), which must then be a catalogd plugin catalog. The statement runs at
 * parse time, as Spark runs a command when {@code spark.sql} is called: a dynamic-table statement
 * inside EXPLAIN or a multi-statement script other than spark-sql's is not recognized.
 */
final class DynamicTables {
    static final StructType RESULT = new StructType()
        .add("kind", DataTypes.StringType, false)
        .add("message", DataTypes.StringType, false)
        .add("table", DataTypes.StringType, true)
        .add("job", DataTypes.StringType, true);
    static final StructType DESCRIBE = new StructType()
        .add("info_name", DataTypes.StringType, false)
        .add("info_value", DataTypes.StringType, true);

    private DynamicTables() {}

    static LogicalPlan run(SparkSession session, DynamicStatement statement) {
        CatalogManager catalogs = session.sessionState().catalogManager();
        CatalogPlugin current = catalogs.currentCatalog();
        CatalogdCatalog currentCatalogd = current instanceof CatalogdCatalog c ? c : null;
        List<String> parts = statement.parts;
        CatalogdCatalog target = currentCatalogd;
        List<String> qualified = null;
        if (parts.size() == 3) {
            CatalogdCatalog named = plugin(catalogs, parts.get(0));
            if (named != null) {
                target = named;
                qualified = List.of(named.info().getName(), parts.get(1), parts.get(2));
            } else if (currentCatalogd == null) {
                throw Errors.invalid(String.join(".", parts) + ": " + parts.get(0)
                    + " is not a catalogd catalog (spark.sql.catalog." + parts.get(0) + "=" + CatalogdCatalog.class.getName()
                    + "); name a dynamic table catalog.database.table with a catalogd catalog");
            } else {
                qualified = parts;
            }
        } else if (parts.size() == 2 || parts.size() == 1) {
            if (currentCatalogd == null) {
                throw Errors.invalid(String.join(".", parts) + ": the current catalog " + current.name()
                    + " is not a catalogd catalog; name a dynamic table catalog.database.table");
            }
            qualified = new ArrayList<>();
            qualified.add(currentCatalogd.info().getName());
            if (parts.size() == 1) {
                String[] ns = catalogs.currentNamespace();
                qualified.add(ns.length > 0 ? ns[0] : currentCatalogd.defaultNamespace()[0]);
            }
            qualified.addAll(parts);
        }
        if (target == null) {
            throw Errors.invalid("the current catalog " + current.name() + " is not a catalogd catalog; "
                + "name a dynamic table catalog.database.table with a catalogd catalog");
        }
        if (statement.isDescribe()) {
            if (qualified == null) {
                throw Errors.invalid("DESCRIBE DYNAMIC TABLE takes a name of 1 to 3 parts (catalog.database.table)");
            }
            return describe(target, qualified);
        }
        String text = qualified == null ? statement.text : statement.withName(quoted(qualified));
        StatementResult result;
        try {
            result = target.connection().call(c -> c.executeStatement(text));
        } catch (TException e) {
            throw Errors.of(e);
        }
        String table = result.isSetTable() ? full(result.getTable().getPath()) : null;
        String job = result.isSetJob() ? result.getJob().getJobId() : null;
        return rows(RESULT, List.of(RowFactory.create(result.getKind(), result.getMessage(), table, job)));
    }

    /** The catalogd plugin catalog Spark calls {@code name}, or null. */
    private static CatalogdCatalog plugin(CatalogManager catalogs, String name) {
        try {
            return catalogs.catalog(name) instanceof CatalogdCatalog c ? c : null;
        } catch (Exception e) {
            return null;  // no such Spark catalog
        }
    }

    static String quoted(List<String> parts) {
        StringJoiner out = new StringJoiner(".");
        for (String part : parts) {
            out.add("`" + part + "`");
        }
        return out.toString();
    }

    private static String full(ObjectPath path) {
        return path.getCatalog() + "." + path.getDatabase() + "." + path.getName();
    }

    private static LogicalPlan describe(CatalogdCatalog target, List<String> name) {
        ObjectPath path = new ObjectPath(name.get(2).toLowerCase(Locale.ROOT));
        path.setCatalog(name.get(0).toLowerCase(Locale.ROOT));
        path.setDatabase(name.get(1).toLowerCase(Locale.ROOT));
        DynamicTable dt;
        try {
            dt = target.connection().call(c -> c.getDynamicTable(path));
        } catch (TException e) {
            throw Errors.of(e);
        }
        List<Row> rows = new ArrayList<>();
        rows.add(RowFactory.create("name", full(dt.getPath())));
        rows.add(RowFactory.create("columns", columns(dt.getColumns())));
        rows.add(RowFactory.create("partition_keys", columns(dt.getPartitionKeys())));
        rows.add(RowFactory.create("query", dt.getQuery()));
        rows.add(RowFactory.create("expanded_query", dt.getExpandedQuery()));
        rows.add(RowFactory.create("freshness", dt.getFreshness()));
        rows.add(RowFactory.create("declared_mode", dt.isSetDeclaredMode() ? dt.getDeclaredMode().name() : null));
        rows.add(RowFactory.create("refresh_mode", dt.getRefreshMode().name()));
        rows.add(RowFactory.create("state", dt.getState().name()));
        rows.add(RowFactory.create("schedule", dt.getSchedule()));
        rows.add(RowFactory.create("options", dt.isSetOptions() ? dt.getOptions().toString() : null));
        rows.add(RowFactory.create("comment", dt.getComment()));
        RefreshRun last = dt.getLastRefresh();
        rows.add(RowFactory.create("last_refresh", last == null ? null : last.getId() + " " + last.getStatus().name()
            + (last.isSetError() ? ": " + last.getError() : "")));
        rows.add(RowFactory.create("freshness_lag_seconds", dt.isSetFreshnessLag()
            ? String.valueOf(dt.getFreshnessLag()) : null));
        rows.add(RowFactory.create("within_target", dt.isSetWithinTarget() ? String.valueOf(dt.isWithinTarget()) : null));
        return rows(DESCRIBE, rows);
    }

    private static String columns(List<Column> columns) {
        if (columns == null) {
            return "";
        }
        StringJoiner out = new StringJoiner(", ");
        columns.forEach(c -> out.add(c.getName() + " " + c.getType()));
        return out.toString();
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static LogicalPlan rows(StructType schema, List<Row> rows) {
        scala.collection.immutable.Seq attributes = DataTypeUtils.toAttributes(schema);
        return LocalRelation.fromExternalRows(attributes, CollectionConverters.asScala(rows).toList());
    }
}
