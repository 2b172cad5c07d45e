package catalogd.spark;

import catalogd.thrift.Column;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser$;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** Spark schemas <-> catalogd's columns (Hive type names, as the metastore keeps them). */
final class Types {
    private Types() {}

    static DataType sparkType(String hiveType) {
        try {
            return CharVarcharUtils.replaceCharVarcharWithString(CatalystSqlParser$.MODULE$.parseDataType(hiveType));
        } catch (RuntimeException e) {
            throw Errors.unsupported("column type " + hiveType + " has no Spark type: " + e.getMessage());
        }
    }

    static StructType schema(List<Column> columns, List<Column> partitionKeys) {
        List<StructField> fields = new ArrayList<>();
        for (List<Column> part : List.of(columns, partitionKeys)) {
            for (Column c : part) {
                Metadata meta = c.isSetComment() && c.getComment() != null
                    ? new org.apache.spark.sql.types.MetadataBuilder().putString("comment", c.getComment()).build()
                    : Metadata.empty();
                fields.add(new StructField(c.getName(), sparkType(c.getType()), true, meta));
            }
        }
        return new StructType(fields.toArray(new StructField[0]));
    }

    /** A Spark field as a catalogd column (Spark's catalog string is Hive's type name). */
    static Column column(StructField field) {
        DataType type = field.dataType();
        String name = type.catalogString();
        if (name.equals("timestamp_ntz")) {
            throw Errors.unsupported("column " + field.name() + ": TIMESTAMP_NTZ has no Hive type; cast it to TIMESTAMP");
        }
        Column column = new Column(field.name().toLowerCase(java.util.Locale.ROOT), name);
        if (field.getComment().isDefined()) {
            column.setComment(field.getComment().get());
        }
        return column;
    }
}
