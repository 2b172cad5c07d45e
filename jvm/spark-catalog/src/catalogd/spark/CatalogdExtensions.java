package catalogd.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=catalogd.spark.CatalogdExtensions}: catalogd's statements in Spark SQL.
 */
public class CatalogdExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectResolutionRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new DynamicOverwrite();
            }
        });
        return BoxedUnit.UNIT;
    }
}
