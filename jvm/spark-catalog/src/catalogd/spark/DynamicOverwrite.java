package catalogd.spark;

import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import scala.Function1;
import scala.Option;
import scala.runtime.AbstractPartialFunction;

/**
 * A dynamic partition overwrite of a catalogd table ({@code INSERT OVERWRITE} with
 * {@code spark.sql.sources.partitionOverwriteMode=dynamic}, {@code df.writeTo(t).overwritePartitions()})
 * planned as Spark's V1-fallback overwrite, marked with {@link #OPTION}, so that the table's
 * {@code V1Write} runs it as an OVERWRITE_PARTITIONS stage.
 *
 * <p>Why: Spark plans {@code OverwritePartitionsDynamic} only for tables with {@code BATCH_WRITE}
 * (a V2 {@code BatchWrite} of their own); a {@code V1_BATCH_WRITE} table is refused in analysis
 * ("does not support dynamic overwrite in batch mode"). Delta's {@code DeltaAnalysis} rewrites
 * the same plan the same way. Injected by {@link CatalogdExtensions} ({@code spark.sql.extensions}).
 */
final class DynamicOverwrite extends Rule<LogicalPlan> {
    /** The write option that tells {@link Writes.Builder} an overwrite is a dynamic one. */
    static final String OPTION = "catalogd.partition-overwrite";

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        return plan.transformUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan node) {
                return node instanceof OverwritePartitionsDynamic o && o.table() instanceof DataSourceV2Relation r
                    && r.table() instanceof CatalogdTable;
            }

            @Override
            public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 node, Function1<A1, B1> otherwise) {
                if (!isDefinedAt(node)) {
                    return otherwise.apply(node);
                }
                OverwritePartitionsDynamic o = (OverwritePartitionsDynamic) node;
                @SuppressWarnings("unchecked")
                B1 rewritten = (B1) new OverwriteByExpression(o.table(), Literal.TrueLiteral(), o.query(),
                    o.writeOptions().updated(OPTION, "dynamic"), o.isByName(), o.withSchemaEvolution(),
                    Option.empty(), Option.empty());
                return rewritten;
            }
        });
    }
}
