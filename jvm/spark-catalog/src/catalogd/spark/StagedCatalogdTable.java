package catalogd.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;

/**
 * A CREATE / REPLACE ... AS SELECT in progress: Spark writes into the stage, then calls
 * {@link #commitStagedChanges} (catalogd renames or swaps it into place) or, on any failure,
 * {@link #abortStagedChanges} (catalogd drops it and its files).
 */
final class StagedCatalogdTable implements StagedTable, SupportsWrite {
    private final String name;
    private final StructType schema;
    private final Transform[] partitioning;
    private final Map<String, String> properties;
    private final Writer stages;

    StagedCatalogdTable(String name, StructType schema, Transform[] partitioning, Map<String, String> properties,
                        Writer stages) {
        this.name = name;
        this.schema = schema;
        this.partitioning = partitioning;
        this.properties = properties;
        this.stages = stages;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return schema;
    }

    @Override
    public Transform[] partitioning() {
        return partitioning;
    }

    @Override
    public Map<String, String> properties() {
        return properties;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.V1_BATCH_WRITE, TableCapability.TRUNCATE,
            TableCapability.OVERWRITE_BY_FILTER, TableCapability.OVERWRITE_DYNAMIC);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
        return Writes.into(info, stages::write);
    }

    @Override
    public void commitStagedChanges() {
        stages.commit();
    }

    @Override
    public void abortStagedChanges() {
        stages.abort();
    }
}
