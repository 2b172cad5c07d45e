package catalogd.spark;

import catalogd.thrift.Table;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.thrift.TException;

/**
 * CREATE / REPLACE ... AS SELECT on a catalog without stages (a memory catalog, or
 * {@code atomic-writes: false}): what Spark does for its own tables. The table is created
 * when the rows are written (a REPLACE drops the old one first) and dropped again if the
 * write fails; a reader may see it empty or half written meanwhile (docs/spark.md).
 */
final class PlainWrite implements Writer {
    private final CatalogdCatalog catalog;
    private final Identifier ident;
    private final Table definition;
    private final boolean replace;
    private boolean created;

    PlainWrite(CatalogdCatalog catalog, Identifier ident, Table definition, boolean replace) {
        this.catalog = catalog;
        this.ident = ident;
        this.definition = definition;
        this.replace = replace;
    }

    @Override
    public void write(Dataset<Row> data) {
        try {
            if (replace) {
                catalog.connection().call(c -> {
                    c.dropTable(catalog.path(ident), true, true, false);
                    return null;
                });
            }
            catalog.connection().call(c -> c.createTable(definition, false));
        } catch (TException e) {
            throw Errors.forTable(e, ident);
        }
        created = true;
        Inserts.insertInto(data, catalog.sparkName(ident), definition.getColumns(), definition.getPartitionKeys(),
            true, false);
    }

    @Override
    public void commit() {
    }

    @Override
    public void abort() {
        if (!created) {
            return;
        }
        try {
            catalog.connection().call(c -> {
                c.dropTable(catalog.path(ident), true, true, false);
                return null;
            });
        } catch (TException e) {
            // nothing more to do: the error that made Spark abort is the one reported
        }
    }
}
