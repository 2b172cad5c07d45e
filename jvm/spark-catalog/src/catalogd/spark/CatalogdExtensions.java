package catalogd.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=catalogd.spark.CatalogdExtensions}: catalogd's dynamic-table
 * statements in Spark SQL ({@link CatalogdParser}; every other statement stays Spark's), and the
 * resolution rule that plans a dynamic partition overwrite of a catalogd table
 * ({@link DynamicOverwrite}).
 */
public class CatalogdExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
            @Override
            public ParserInterface apply(SparkSession session, ParserInterface delegate) {
                return new CatalogdParser(session, delegate);
            }
        });
        extensions.injectResolutionRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new DynamicOverwrite();
            }
        });
        return BoxedUnit.UNIT;
    }
}
