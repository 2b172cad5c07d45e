package catalogd.spark;

import catalogd.thrift.Column;
import catalogd.thrift.Stage;
import catalogd.thrift.StagePurpose;
import catalogd.thrift.StageRequest;
import catalogd.thrift.StageState;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.thrift.TException;

/**
 * One catalogd stage seen from the driver: begun, written through Spark's session catalog
 * (catalogd's HMS endpoint, where the hidden staging table is an ordinary table), its lease
 * heartbeated while the job runs, then committed or aborted. The same steps as the Python
 * helpers' {@code staged_table} + {@code write_staged} (docs/atomic-writes.md).
 */
final class Stages implements Writer {
    private final Connection conn;
    private final CatalogdCatalog catalog;
    private final Identifier ident;
    private Stage stage;
    private Thread heartbeat;
    private volatile boolean done;
    private volatile String lost;

    private Stages(CatalogdCatalog catalog, Identifier ident, Stage stage) {
        this.catalog = catalog;
        this.conn = catalog.connection();
        this.ident = ident;
        this.stage = stage;
    }

    /** Begins a stage on {@code ident}; errors are Spark's (TableAlreadyExists, NoSuchNamespace, ...). */
    static Stages begin(CatalogdCatalog catalog, Identifier ident, StagePurpose purpose, List<Column> columns,
                        List<Column> partitionKeys, String format, Map<String, String> properties, String comment) {
        StageRequest request = new StageRequest(catalog.path(ident), purpose);
        if (columns != null) {
            request.setColumns(columns);
        }
        if (partitionKeys != null) {
            request.setPartitionKeys(partitionKeys);
        }
        if (format != null) {
            request.setFormat(format);
        }
        if (properties != null && !properties.isEmpty()) {
            request.setProperties(properties);
        }
        if (comment != null) {
            request.setComment(comment);
        }
        if (catalog.leaseMillis() > 0) {
            request.setLeaseMillis(catalog.leaseMillis());
        }
        request.setOwner("spark:" + System.getProperty("user.name") + "@" + ProcessHandle.current().pid());
        if (catalog.jdbc()) {
            catalog.jdbcLogin().password();  // an unreadable or unsafe password file: refused before any stage
        }
        Stage stage;
        try {
            stage = catalog.connection().call(c -> c.beginStage(request));
        } catch (TException e) {
            throw Errors.forTable(e, ident);
        }
        Stages stages = new Stages(catalog, ident, stage);
        if (stage.getState() == StageState.OPEN) {
            stages.startHeartbeat();
        }
        return stages;
    }

    boolean active() {
        return stage.getState() == StageState.OPEN;
    }

    Stage stage() {
        return stage;
    }

    private void startHeartbeat() {
        long lease = stage.isSetLeaseDeadlineMillis() && stage.isSetCreatedMillis()
            ? Math.max(1000, stage.getLeaseDeadlineMillis() - stage.getCreatedMillis()) : 60_000;
        long interval = Math.max(500, lease / 3);
        String id = stage.getId();
        heartbeat = new Thread(() -> {
            while (!done) {
                try {
                    Thread.sleep(interval);
                } catch (InterruptedException e) {
                    return;
                }
                if (done) {
                    return;
                }
                try {
                    conn.call(c -> c.heartbeatStage(id, lease));
                } catch (catalogd.thrift.NotFound | catalogd.thrift.Conflict e) {
                    lost = e.getMessage();  // the janitor took it: the commit will say so
                    return;
                } catch (TException e) {
                    // a daemon restart or a network blip: the lease has room for a few misses
                }
            }
        }, "catalogd-heartbeat-" + id);
        heartbeat.setDaemon(true);
        heartbeat.start();
    }

    /** The name Spark's session catalog gives the staging table. */
    String sparkName() {
        return catalog.sessionCatalogName() + "." + Inserts.quote(catalog.hmsPrefix()
            + stage.getTarget().getDatabase()) + "." + Inserts.quote(stage.getStagingTable());
    }

    /** Writes {@code data} into the stage (its data columns, then its partition columns). */
    @Override
    public void write(Dataset<Row> data) {
        if (!active()) {
            return;
        }
        if (catalog.jdbc()) {
            // A jdbc catalog's staging table is a PostgreSQL table (not on the HMS endpoint).
            JdbcTables.append(catalog, stage, data);
            return;
        }
        Inserts.insertInto(data, sparkName(), stage.isSetColumns() ? stage.getColumns() : List.of(),
            stage.isSetPartitionKeys() ? stage.getPartitionKeys() : List.of(), true, false);
    }

    /** Publishes the stage (one metastore call on the daemon's side); throws Spark's errors. */
    @Override
    public void commit() {
        stopHeartbeat();
        if (!active()) {
            return;
        }
        String id = stage.getId();
        try {
            stage = conn.call(c -> c.commitStage(id));
        } catch (TException e) {
            if (lost != null && !(e instanceof catalogd.thrift.AlreadyExists)) {
                throw Errors.sneaky(Errors.analysis("conflict", "stage " + id + " was lost (" + lost
                    + ") before its commit: nothing was published", e));
            }
            throw Errors.forTable(e, ident);
        }
    }

    /** Drops the stage and its files; quiet when it is gone already (the janitor's, or a failed commit's). */
    @Override
    public void abort() {
        stopHeartbeat();
        String id = stage.getId();
        if (stage.getState() == StageState.ABORTED || stage.getState() == StageState.COMMITTED) {
            return;
        }
        try {
            stage = conn.call(c -> c.abortStage(id, true));
        } catch (TException e) {
            // the janitor drops it once its lease lapses
        }
    }

    private void stopHeartbeat() {
        done = true;
        if (heartbeat != null) {
            heartbeat.interrupt();
        }
    }
}
