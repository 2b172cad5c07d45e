package catalogd.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/** A write in progress on one table: the rows written, then committed or aborted. */
interface Writer {
    void write(Dataset<Row> data);

    void commit();

    void abort();
}
