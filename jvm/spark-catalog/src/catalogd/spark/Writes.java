package catalogd.spark;

import java.util.function.Consumer;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsDynamicOverwrite;
import org.apache.spark.sql.connector.write.SupportsOverwriteV2;
import org.apache.spark.sql.connector.write.V1Write;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.sources.InsertableRelation;

/**
 * Spark's write of a catalogd table handed to Spark's own file writer ({@code V1Write}: an
 * insert into the hidden staging table through the session catalog), so Spark plans and runs
 * it as it would a write of its own tables, and catalogd publishes it in one metastore call.
 */
final class Writes {
    private Writes() {}

    /** How Spark asked to write: appended, partitions replaced, or everything replaced. */
    enum Mode { APPEND, OVERWRITE_PARTITIONS, TRUNCATE }

    /** A builder that records the mode and hands the data to {@code sink}. */
    static final class Builder implements SupportsOverwriteV2, SupportsDynamicOverwrite {
        private final java.util.function.BiConsumer<Mode, Dataset<Row>> sink;
        private Mode mode = Mode.APPEND;
        /** A dynamic partition overwrite planned as an overwrite of everything (DynamicOverwrite). */
        private final boolean dynamic;

        Builder(LogicalWriteInfo info, java.util.function.BiConsumer<Mode, Dataset<Row>> sink) {
            this.sink = sink;
            this.dynamic = info != null && "dynamic".equals(info.options().get(DynamicOverwrite.OPTION));
        }

        @Override
        public WriteBuilder overwrite(Predicate[] predicates) {
            // A static PARTITION (k = v) clause: the partitions written are replaced (their rows are
            // the clause's values). An overwrite without one replaces the table (Spark's semantics).
            boolean everything = predicates.length == 0
                || (predicates.length == 1 && "ALWAYS_TRUE".equals(predicates[0].name()));
            mode = everything && !dynamic ? Mode.TRUNCATE : Mode.OVERWRITE_PARTITIONS;
            return this;
        }

        @Override
        public WriteBuilder truncate() {
            mode = dynamic ? Mode.OVERWRITE_PARTITIONS : Mode.TRUNCATE;
            return this;
        }

        @Override
        public WriteBuilder overwriteDynamicPartitions() {
            mode = Mode.OVERWRITE_PARTITIONS;
            return this;
        }

        @Override
        public Write build() {
            Mode chosen = mode;
            return new V1Write() {
                @Override
                public InsertableRelation toInsertableRelation() {
                    return (data, overwrite) -> sink.accept(chosen, data);
                }

                @Override
                public String description() {
                    return "catalogd stage (" + chosen + ")";
                }
            };
        }
    }

    /** A builder for a staged table: whatever the mode, the data goes into the stage. */
    static WriteBuilder into(LogicalWriteInfo info, Consumer<Dataset<Row>> sink) {
        return new Builder(info, (mode, data) -> sink.accept(data));
    }
}
