package catalogd.spark;

import org.apache.spark.sql.SparkSessionExtensions;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=catalogd.spark.CatalogdExtensions}: catalogd's statements in Spark SQL.
 */
public class CatalogdExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        return BoxedUnit.UNIT;
    }
}
