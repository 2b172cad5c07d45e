package catalogd.spark;

import catalogd.thrift.Column;
import catalogd.thrift.Partition;
import catalogd.thrift.StagePurpose;
import catalogd.thrift.Table;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.FileTable;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.thrift.TException;

/**
 * A catalogd table in Spark: read with Spark's own file readers over the metastore's partitions,
 * written through a catalogd stage (INSERT INTO: an APPEND stage; INSERT OVERWRITE: the partitions
 * written replaced, or the whole table when it has no partitions or no PARTITION clause).
 */
final class CatalogdTable implements SupportsRead, SupportsWrite {
    private final CatalogdCatalog catalog;
    private final Identifier ident;
    private final Table table;
    private final StructType schema;
    private final StructType partitionSchema;
    private FileTable files;

    CatalogdTable(CatalogdCatalog catalog, Identifier ident, Table table) {
        this.catalog = catalog;
        this.ident = ident;
        this.table = table;
        this.schema = Types.schema(dataColumns(), keys());
        this.partitionSchema = Types.schema(List.of(), keys());
    }

    private List<Column> dataColumns() {
        return table.isSetColumns() ? table.getColumns() : List.of();
    }

    private List<Column> keys() {
        return table.isSetPartitionKeys() ? table.getPartitionKeys() : List.of();
    }

    @Override
    public String name() {
        return catalog.name() + "." + table.getDatabase() + "." + table.getName();
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return schema;
    }

    @Override
    public Transform[] partitioning() {
        List<Transform> out = new ArrayList<>();
        for (Column key : keys()) {
            out.add(Expressions.identity(key.getName()));
        }
        return out.toArray(new Transform[0]);
    }

    @Override
    public Map<String, String> properties() {
        Map<String, String> props = new HashMap<>(table.isSetProperties() ? table.getProperties() : Map.of());
        if (table.isSetFormat()) {
            props.put("provider", table.getFormat());
        }
        if (table.isSetLocation()) {
            props.put("location", table.getLocation());
        }
        if (table.isSetComment() && table.getComment() != null) {
            props.put("comment", table.getComment());
        }
        if (table.isSetOwner() && table.getOwner() != null) {
            props.put("owner", table.getOwner());
        }
        return props;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.V1_BATCH_WRITE, TableCapability.TRUNCATE,
            TableCapability.OVERWRITE_BY_FILTER, TableCapability.OVERWRITE_DYNAMIC);
    }

    private synchronized FileTable files() {
        if (files == null && table.isSetLocation() && table.getLocation().startsWith("memory:")) {
            files = memoryFiles();
        }
        if (files == null) {
            List<Partition> partitions = List.of();
            if (!keys().isEmpty()) {
                try {
                    partitions = catalog.connection().call(c -> c.listPartitions(catalog.path(ident), ""));
                } catch (TException e) {
                    throw Errors.forTable(e, ident);
                }
            }
            files = Reads.fileTable(name(), table.getFormat(), table.getLocation(), schema, partitionSchema,
                partitions, catalog.listings(ident, fingerprint(partitions)));
            if (files == null) {
                throw Errors.unsupported(name() + " is stored as " + table.getFormat() + ": the catalogd plugin reads "
                    + "parquet and orc tables; read it through the HMS endpoint (spark_catalog."
                    + catalog.hmsPrefix() + table.getDatabase() + "." + table.getName() + ")");
            }
        }
        return files;
    }

    /**
     * A memory catalog's table: its files are where catalogd's HMS endpoint says (its own
     * {@code memory://} locations mean nothing to Spark), asked through the session catalog.
     */
    private FileTable memoryFiles() {
        org.apache.spark.sql.catalyst.catalog.ExternalCatalog hms =
            ((org.apache.spark.sql.classic.SparkSession) org.apache.spark.sql.SparkSession.active())
                .sharedState().externalCatalog();
        String db = catalog.hmsPrefix() + table.getDatabase();
        org.apache.spark.sql.catalyst.catalog.CatalogTable meta = hms.getTable(db, table.getName());
        List<Partition> partitions = new ArrayList<>();
        if (!keys().isEmpty()) {
            for (org.apache.spark.sql.catalyst.catalog.CatalogTablePartition p : scala.jdk.javaapi.CollectionConverters
                    .asJava(hms.listPartitions(db, table.getName(), scala.Option.empty()))) {
                List<String> values = new ArrayList<>();
                for (Column key : keys()) {
                    values.add(p.spec().get(key.getName()).getOrElse(() -> null));
                }
                Partition part = new Partition(values);
                part.setLocation(p.location().toString());
                partitions.add(part);
            }
        }
        return Reads.fileTable(name(), table.getFormat(), meta.location().toString(), schema, partitionSchema,
            partitions, catalog.listings(ident, null));
    }

    /** The table as catalogd answered it, in one string: its listings are kept while it is the same. */
    private String fingerprint(List<Partition> partitions) {
        StringBuilder out = new StringBuilder();
        out.append(table.getLocation()).append('\0').append(table.getFormat()).append('\0');
        if (table.isSetProperties()) {
            new java.util.TreeMap<>(table.getProperties()).forEach((k, v) -> out.append(k).append('=').append(v)
                .append('\0'));
        }
        for (Partition p : partitions) {
            out.append(p.getValues()).append('@').append(p.getLocation());
            if (p.isSetProperties()) {
                new java.util.TreeMap<>(p.getProperties()).forEach((k, v) -> out.append(k).append('=').append(v)
                    .append('\0'));
            }
        }
        return out.toString();
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        if (catalog.jdbc()) {
            return JdbcTables.scanBuilder(catalog, ident, schema, options);
        }
        return files().newScanBuilder(options);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return new Writes.Builder(info, this::insert);
    }

    /** One INSERT, through a stage: begun, written, committed; aborted on any failure. */
    private void insert(Writes.Mode mode, Dataset<Row> data) {
        if (!catalog.stages()) {
            // No stages here (a memory catalog, atomic-writes: false): Spark's own insert.
            Inserts.insertInto(data, catalog.sparkName(ident), dataColumns(), keys(), mode != Writes.Mode.APPEND,
                mode == Writes.Mode.OVERWRITE_PARTITIONS);
            catalog.invalidated(ident);
            return;
        }
        StagePurpose purpose;
        if (mode == Writes.Mode.APPEND) {
            purpose = StagePurpose.APPEND;
        } else if (mode == Writes.Mode.OVERWRITE_PARTITIONS && !keys().isEmpty()) {
            purpose = StagePurpose.OVERWRITE_PARTITIONS;
        } else {
            purpose = StagePurpose.REPLACE;
        }
        // A REPLACE carries the table's definition over; the other purposes keep the target's own.
        boolean whole = purpose == StagePurpose.REPLACE;
        Map<String, String> props = new HashMap<>();
        if (whole && table.isSetProperties()) {
            table.getProperties().forEach((k, v) -> {
                if (!k.startsWith("catalogd.")) {
                    props.put(k, v);
                }
            });
        }
        Stages stage = Stages.begin(catalog, ident, purpose, dataColumns(), keys(), table.getFormat(),
            whole ? props : null, whole ? table.getComment() : null);
        try {
            stage.write(data);
        } catch (RuntimeException | Error e) {
            stage.abort();
            throw e;
        }
        try {
            stage.commit();
        } catch (RuntimeException e) {
            stage.abort();
            throw e;
        }
        catalog.invalidated(ident);
    }
}
