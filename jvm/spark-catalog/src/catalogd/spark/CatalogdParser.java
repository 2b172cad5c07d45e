package catalogd.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParameterContext;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.parser.SqlStatementSplitResult;
import org.apache.spark.sql.catalyst.parser.TemporalIdentifier;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * Spark's parser with catalogd's dynamic-table statements in front: a statement
 * {@link DynamicStatement} recognizes is run by catalogd ({@link DynamicTables}) and its result
 * is the plan; every other statement, and every other method, is Spark's parser's, unchanged.
 */
final class CatalogdParser implements ParserInterface {
    private final SparkSession session;
    private final ParserInterface delegate;

    CatalogdParser(SparkSession session, ParserInterface delegate) {
        this.session = session;
        this.delegate = delegate;
    }

    @Override
    public LogicalPlan parsePlan(String sqlText) throws ParseException {
        DynamicStatement statement = DynamicStatement.parse(sqlText);
        return statement != null ? DynamicTables.run(session, statement) : delegate.parsePlan(sqlText);
    }

    @Override
    public LogicalPlan parsePlanWithParameters(String sqlText, ParameterContext context) throws ParseException {
        DynamicStatement statement = DynamicStatement.parse(sqlText);
        return statement != null ? DynamicTables.run(session, statement)
            : delegate.parsePlanWithParameters(sqlText, context);
    }

    @Override
    public Expression parseExpression(String sqlText) throws ParseException {
        return delegate.parseExpression(sqlText);
    }

    @Override
    public TableIdentifier parseTableIdentifier(String sqlText) throws ParseException {
        return delegate.parseTableIdentifier(sqlText);
    }

    @Override
    public FunctionIdentifier parseFunctionIdentifier(String sqlText) throws ParseException {
        return delegate.parseFunctionIdentifier(sqlText);
    }

    @Override
    public Seq<String> parseMultipartIdentifier(String sqlText) throws ParseException {
        return delegate.parseMultipartIdentifier(sqlText);
    }

    @Override
    public TemporalIdentifier parseTemporalTableIdentifier(String sqlText) throws ParseException {
        return delegate.parseTemporalTableIdentifier(sqlText);
    }

    @Override
    public LogicalPlan parseQuery(String sqlText) throws ParseException {
        return delegate.parseQuery(sqlText);
    }

    @Override
    public StructType parseRoutineParam(String sqlText) throws ParseException {
        return delegate.parseRoutineParam(sqlText);
    }

    @Override
    public SqlStatementSplitResult splitStatements(String sqlText) {
        return delegate.splitStatements(sqlText);
    }

    @Override
    public StructType parseTableSchema(String sqlText) throws ParseException {
        return delegate.parseTableSchema(sqlText);
    }

    @Override
    public DataType parseDataType(String sqlText) throws ParseException {
        return delegate.parseDataType(sqlText);
    }
}
