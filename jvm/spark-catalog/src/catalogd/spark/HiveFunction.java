package catalogd.spark;

import org.apache.hadoop.hive.ql.exec.UDFArgumentException;
import org.apache.hadoop.hive.ql.udf.UDFType;
import org.apache.hadoop.hive.ql.udf.generic.GenericUDF;
import org.apache.hadoop.hive.ql.udf.generic.GenericUDFBridge;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspectorUtils;
import org.apache.hadoop.hive.serde2.objectinspector.PrimitiveObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Hive {@code GenericUDF} class as a Spark connector function: arguments and result of Hive's
 * primitive types (string, boolean, tinyint, smallint, int, bigint, float, double). Other types are
 * refused with the name that calls the function through Spark's session catalog.
 */
final class HiveFunction implements UnboundFunction {
    private final String name;
    private final String className;
    private final boolean simple;
    private final String elsewhere;

    /**
     * @param simple an old-style {@code UDF} through Hive's GenericUDFBridge (unused: its method
     *     resolution needs Hive's function registry, which pyspark's Hive jars cannot initialize)
     * @param elsewhere what to say when the types are not primitive (the session catalog's call)
     */
    HiveFunction(String name, String className, boolean simple, String elsewhere) {
        this.name = name;
        this.className = className;
        this.simple = simple;
        this.elsewhere = elsewhere;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String description() {
        return name + ": the Hive function " + className;
    }

    @Override
    public BoundFunction bind(StructType inputType) {
        DataType[] inputs = new DataType[inputType.fields().length];
        for (int i = 0; i < inputs.length; i++) {
            StructField field = inputType.fields()[i];
            if (field.dataType().equals(DataTypes.NullType)) {
                inputs[i] = DataTypes.StringType;  // a NULL literal: Spark casts it to the type asked
                continue;
            }
            if (inspector(field.dataType()) == null) {
                // Spark turns this into its own AnalysisException (the function cannot process the input).
                throw new UnsupportedOperationException("argument " + (i + 1) + " is " + field.dataType().simpleString()
                    + "; through the plugin a Hive function takes primitive types only; " + elsewhere);
            }
            inputs[i] = field.dataType();
        }
        Bound bound = new Bound(name, className, simple, inputs, null);
        DataType result = bound.open();
        if (result == null) {
            throw new UnsupportedOperationException("its result is not of a primitive type; " + elsewhere);
        }
        return new Bound(name, className, simple, inputs, result);
    }

    static ObjectInspector inspector(DataType type) {
        if (type.equals(DataTypes.StringType)) {
            return PrimitiveObjectInspectorFactory.javaStringObjectInspector;
        } else if (type.equals(DataTypes.BooleanType)) {
            return PrimitiveObjectInspectorFactory.javaBooleanObjectInspector;
        } else if (type.equals(DataTypes.ByteType)) {
            return PrimitiveObjectInspectorFactory.javaByteObjectInspector;
        } else if (type.equals(DataTypes.ShortType)) {
            return PrimitiveObjectInspectorFactory.javaShortObjectInspector;
        } else if (type.equals(DataTypes.IntegerType)) {
            return PrimitiveObjectInspectorFactory.javaIntObjectInspector;
        } else if (type.equals(DataTypes.LongType)) {
            return PrimitiveObjectInspectorFactory.javaLongObjectInspector;
        } else if (type.equals(DataTypes.FloatType)) {
            return PrimitiveObjectInspectorFactory.javaFloatObjectInspector;
        } else if (type.equals(DataTypes.DoubleType)) {
            return PrimitiveObjectInspectorFactory.javaDoubleObjectInspector;
        }
        return null;
    }

    static DataType sparkType(ObjectInspector inspector) {
        if (!(inspector instanceof PrimitiveObjectInspector p)) {
            return null;
        }
        return switch (p.getPrimitiveCategory()) {
            case STRING, VARCHAR, CHAR -> DataTypes.StringType;
            case BOOLEAN -> DataTypes.BooleanType;
            case BYTE -> DataTypes.ByteType;
            case SHORT -> DataTypes.ShortType;
            case INT -> DataTypes.IntegerType;
            case LONG -> DataTypes.LongType;
            case FLOAT -> DataTypes.FloatType;
            case DOUBLE -> DataTypes.DoubleType;
            default -> null;
        };
    }

    /** The bound function; the Hive object is made where it runs (it is not serializable). */
    static final class Bound implements ScalarFunction<Object> {
        private final String name;
        private final String className;
        private final boolean simple;
        private final DataType[] inputs;
        private final DataType result;
        private transient GenericUDF udf;
        private transient ObjectInspector output;

        Bound(String name, String className, boolean simple, DataType[] inputs, DataType result) {
            this.name = name;
            this.className = className;
            this.simple = simple;
            this.inputs = inputs;
            this.result = result;
        }

        /** Makes and initializes the Hive object; its result's Spark type (null: not primitive). */
        DataType open() {
            ObjectInspector[] arguments = new ObjectInspector[inputs.length];
            for (int i = 0; i < inputs.length; i++) {
                arguments[i] = inspector(inputs[i]);
            }
            try {
                GenericUDF made = simple ? new GenericUDFBridge(name, false, className)
                    : (GenericUDF) Class.forName(className, true,
                        org.apache.spark.util.Utils.getContextOrSparkClassLoader()).getDeclaredConstructor().newInstance();
                output = made.initialize(arguments);
                udf = made;
            } catch (UDFArgumentException e) {
                throw new UnsupportedOperationException(e.getMessage(), e);
            } catch (ReflectiveOperationException e) {
                throw new UnsupportedOperationException("cannot make an instance of " + className + ": " + e, e);
            }
            return sparkType(output);
        }

        @Override
        public DataType[] inputTypes() {
            return inputs;
        }

        @Override
        public DataType resultType() {
            return result;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public boolean isDeterministic() {
            try {
                Class<?> cls = Class.forName(className, false, org.apache.spark.util.Utils.getContextOrSparkClassLoader());
                UDFType type = cls.getAnnotation(UDFType.class);
                return type == null || type.deterministic();
            } catch (ClassNotFoundException | LinkageError e) {
                return false;
            }
        }

        @Override
        public Object produceResult(InternalRow row) {
            if (udf == null) {
                open();
            }
            GenericUDF.DeferredObject[] arguments = new GenericUDF.DeferredObject[inputs.length];
            for (int i = 0; i < inputs.length; i++) {
                Object value = null;
                if (!row.isNullAt(i)) {
                    value = row.get(i, inputs[i]);
                    if (value instanceof UTF8String s) {
                        value = s.toString();
                    }
                }
                arguments[i] = new GenericUDF.DeferredJavaObject(value);
            }
            Object out;
            try {
                out = ObjectInspectorUtils.copyToStandardJavaObject(udf.evaluate(arguments), output);
            } catch (org.apache.hadoop.hive.ql.metadata.HiveException e) {
                throw new RuntimeException(name + ": " + e.getMessage(), e);
            }
            if (out == null) {
                return null;
            }
            return result.equals(DataTypes.StringType) ? UTF8String.fromString(out.toString()) : out;
        }
    }
}
