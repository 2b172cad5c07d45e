package catalogd.spark;

import catalogd.thrift.Column;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;

/** Spark's own insert into a table of the session catalog (catalogd's HMS endpoint), by position. */
final class Inserts {
    private Inserts() {}

    private static final String SESSION_CATALOG = "spark_catalog";

    static String quote(String name) {
        return "`" + name.replace("`", "``") + "`";
    }

    /**
     * Inserts {@code data} into {@code sparkName}: its columns put in the table's order (data
     * columns, then partition columns) when their names match, else taken by position.
     *
     * @param overwrite replace what is there (the partitions written, with {@code dynamic})
     * @param dynamic   an overwrite replaces only the partitions the rows fall in
     */
    static void insertInto(Dataset<Row> data, String sparkName, List<Column> columns, List<Column> keys,
                           boolean overwrite, boolean dynamic) {
        List<Column> all = new ArrayList<>(columns == null ? List.of() : columns);
        if (keys != null) {
            all.addAll(keys);
        }
        Dataset<Row> input = data;
        if (!all.isEmpty() && all.size() == data.columns().length) {
            Map<String, String> lower = new HashMap<>();
            for (String n : data.columns()) {
                lower.put(n.toLowerCase(Locale.ROOT), n);
            }
            List<org.apache.spark.sql.Column> ordered = new ArrayList<>();
            for (Column c : all) {
                String found = lower.get(c.getName().toLowerCase(Locale.ROOT));
                if (found == null) {
                    ordered = null;
                    break;
                }
                ordered.add(data.col(quote(found)));
            }
            if (ordered != null) {
                input = data.select(ordered.toArray(new org.apache.spark.sql.Column[0]));
            }
        }
        SparkSession spark = data.sparkSession();
        Map<String, String> settings = new HashMap<>();
        settings.put("hive.exec.dynamic.partition.mode", "nonstrict");
        settings.put("spark.sql.sources.partitionOverwriteMode", dynamic ? "dynamic" : "static");
        Map<String, String> before = new HashMap<>();
        for (Map.Entry<String, String> e : settings.entrySet()) {
            before.put(e.getKey(), spark.conf().getOption(e.getKey()).getOrElse(() -> null));
            spark.conf().set(e.getKey(), e.getValue());
        }
        try {
            if (SESSION_CATALOG.equalsIgnoreCase(spark.catalog().currentCatalog())) {
                input.write().mode(overwrite ? SaveMode.Overwrite : SaveMode.Append).insertInto(sparkName);
            } else {
                bySql(input, sparkName, overwrite);
            }
        } finally {
            for (Map.Entry<String, String> e : before.entrySet()) {
                if (e.getValue() == null) {
                    spark.conf().unset(e.getKey());
                } else {
                    spark.conf().set(e.getKey(), e.getValue());
                }
            }
        }
    }

    /**
     * The same insert as SQL: {@code DataFrameWriter.insertInto} takes a session-catalog table only
     * while the session catalog is the current one, and the plugin's own catalog is the current
     * one when {@code spark.sql.defaultCatalog} names it (as {@code catalogd spark-conf} sets it).
     * {@code INSERT ... TABLE t SELECT} without a PARTITION clause is what insertInto plans: columns
     * by position, every partition column dynamic.
     */
    private static void bySql(Dataset<Row> input, String sparkName, boolean overwrite) {
        SparkSession spark = input.sparkSession();
        String view = "__catalogd_insert_" + java.util.UUID.randomUUID().toString().replace("-", "");
        input.createOrReplaceTempView(view);
        try {
            spark.sql("INSERT " + (overwrite ? "OVERWRITE" : "INTO") + " TABLE " + sparkName + " SELECT * FROM "
                + quote(view));
        } finally {
            spark.catalog().dropTempView(view);
        }
    }
}
