/*
 * catalogd: the unified catalog service (FLIP-30 ReadableWritableCatalog plus
 * CatalogManager) served by the catalogd daemon.
 *
 * Python code is generated into catalogd/gen/ by `make idl`; never edit it.
 * Names: an empty catalog means the default catalog, an empty database the
 * catalog's default database.
 */

namespace py catalogd_thrift
namespace java catalogd.thrift

// ---------------------------------------------------------------- errors

exception NotFound {
  1: required string message,
  // catalog | database | table | function | partition
  2: optional string objectType,
}

exception AlreadyExists {
  1: required string message,
  2: optional string objectType,
}

exception NotEmpty {
  1: required string message,
}

exception InvalidArgument {
  1: required string message,
}

exception Unsupported {
  1: required string message,
}

exception MetastoreUnavailable {
  1: required string message,
}

exception PermissionDenied {
  1: required string message,
}

exception Conflict {
  1: required string message,
}

// A bug in the daemon; details are in its log.
exception InternalError {
  1: required string message,
}

// ---------------------------------------------------------------- objects

struct NamespacePath {
  1: optional string catalog,
  2: required string database,
}

struct ObjectPath {
  1: optional string catalog,
  2: optional string database,
  3: required string name,
}

struct CatalogInfo {
  1: required string name,
  // hive | memory | jdbc
  2: required string type,
  3: required bool isDefault,
  4: required string defaultDatabase,
  5: required bool readOnly,
  // metastore URI(s) for hive catalogs, e.g. thrift://127.0.0.1:9083
  6: optional string metastore,
  7: optional string warehouse,
  // whether catalogd.spark writes through stages (config `atomic-writes`)
  8: optional bool atomicWrites = true,
  // catalogd's HMS endpoint (thrift://host:port): Spark, Hive and other engines use it for every catalog
  9: optional string hmsEndpoint,
  // what this catalog's database names start with on the HMS endpoint ('' for none)
  10: optional string hmsPrefix,
  // the HMS endpoint serves TLS only (server.tls): Hive clients set hive.metastore.use.SSL
  11: optional bool hmsTls,
  // the JKS truststore for Hive clients of the endpoint (server.tls.truststore)
  12: optional string hmsTruststore,
  // 13 was the truststore's password: no longer sent (the daemon does not hand it out)
  // jdbc catalogs: the role catalogd logs in as, and the JDBC driver jar Spark reads and writes with
  // (the database's JDBC URL, without credentials, is in `metastore`)
  14: optional string jdbcUser,
  15: optional string jdbcDriverJar,
  // the endpoint's Kerberos service principal (auth.kerberos.principal): clients use SASL GSSAPI
  16: optional string hmsKerberosPrincipal,
  // the environment variable Hive clients read the truststore's password from
  // (server.tls.truststore-password-env): spark-conf prints ${env.NAME}, never the password
  17: optional string hmsTruststorePasswordEnv,
  // the Iceberg REST catalog's URI on catalogd's HTTP port (http(s)://host:port/iceberg); the catalog
  // is its warehouse there
  18: optional string icebergUri,
}

struct Database {
  1: required string name,
  2: optional string catalog,
  3: optional string comment,
  4: optional string location,
  5: optional map<string, string> properties,
  6: optional string owner,
}

struct Column {
  1: required string name,
  // Hive type: bigint, decimal(10,2), array<string>, struct<a:int>, ...
  2: required string type,
  3: optional string comment,
}

enum TableKind {
  MANAGED = 1,
  EXTERNAL = 2,
  VIEW = 3,
}

// What the metastore knows of the data's size; unset means unknown.
struct Statistics {
  1: optional i64 rowCount,
  2: optional i64 totalSize,
  3: optional i64 fileCount,
}

struct Partition {
  // in the order of the table's partition keys
  1: required list<string> values,
  2: optional list<string> keys,
  3: optional string location,
  4: optional map<string, string> properties,
  5: optional i64 created,
  6: optional Statistics statistics,
}

struct Table {
  1: required string name,
  2: required string database,
  3: optional string catalog,
  4: optional list<Column> columns,
  5: optional list<Column> partitionKeys,
  // parquet | orc | avro | csv | json | textfile; unset when unknown
  6: optional string format,
  7: optional string location,
  8: optional TableKind kind = TableKind.MANAGED,
  9: optional string comment,
  10: optional map<string, string> properties,
  11: optional string owner,
  12: optional i64 created,
  13: optional Statistics statistics,
  // views: the query as written, and expanded (qualified, SELECT * replaced)
  14: optional string viewText,
  15: optional string viewExpandedText,
}

struct DatabaseUpdate {
  1: optional string comment,
  2: optional map<string, string> setProperties,
  3: optional list<string> unsetProperties,
}

struct Resource {
  // jar | file | archive
  1: required string type,
  2: required string uri,
}

struct Function {
  1: required string name,
  2: optional string database,
  3: optional string catalog,
  // a JVM class (java, scala) or module:function (python)
  4: required string className,
  // java | scala | python
  5: optional string language = "java",
  6: optional list<Resource> resources,
  7: optional string owner,
  8: optional i64 created,
}

// alterView: a new query is validated and expanded again.
struct ViewUpdate {
  1: optional string query,
  2: optional string comment,
  3: optional map<string, string> setProperties,
  4: optional list<string> unsetProperties,
}

struct TableUpdate {
  1: optional string comment,
  2: optional map<string, string> setProperties,
  3: optional list<string> unsetProperties,
  4: optional list<Column> addColumns,
}

// ---------------------------------------------------------------- stages (atomic writes)

// What commit does to the target (DESIGN.md section 4).
enum StagePurpose {
  CREATE = 1,
  CREATE_IF_NOT_EXISTS = 2,
  REPLACE = 3,
  OVERWRITE_PARTITIONS = 4,
  // INSERT INTO: the staged rows are added to the target's (docs/atomic-writes.md)
  APPEND = 5,
}

enum StageState {
  OPEN = 1,
  COMMITTING = 2,
  COMMITTED = 3,
  ABORTED = 4,
}

struct StageRequest {
  1: required ObjectPath target,
  2: required StagePurpose purpose,
  // empty under OVERWRITE_PARTITIONS and APPEND: the target's columns
  3: optional list<Column> columns,
  4: optional list<Column> partitionKeys,
  5: optional string format,
  6: optional map<string, string> properties,
  7: optional string comment,
  // 0 or unset: the daemon's staging.lease
  8: optional i64 leaseMillis,
  // who writes, e.g. alice@host:pid
  9: optional string owner,
}

struct Stage {
  // catalog.database.<16 hex digits>
  1: required string id,
  // fully qualified
  2: required ObjectPath target,
  3: required StagePurpose purpose,
  4: required StageState state,
  5: optional string owner,
  // milliseconds since the epoch
  6: optional i64 createdMillis,
  7: optional i64 leaseDeadlineMillis,
  // the hidden table to write into, in the target's database
  8: optional string stagingTable,
  9: optional string location,
  10: optional list<Column> columns,
  11: optional list<Column> partitionKeys,
  12: optional string format,
  // why the stage ended the way it did
  13: optional string message,
}

// What reloadConfig did, by catalog name.
struct ReloadResult {
  1: list<string> added,
  2: list<string> removed,
  3: list<string> changed,
  4: list<string> unchanged,
  // sections that changed but apply at the next start (server, staging, spark, dynamic-tables)
  5: list<string> restartNeeded,
  // the file read
  6: string source,
}


// ---------------------------------------------------------------- dynamic tables (FLIP-435)

enum RefreshMode {
  FULL = 1,
  CONTINUOUS = 2,
}

// The RefreshJobHandler's state.
enum RefreshState {
  INITIALIZING = 1,
  RUNNING = 2,
  SUSPENDED = 3,
}

enum RunStatus {
  PENDING = 1,
  RUNNING = 2,
  SUCCEEDED = 3,
  FAILED = 4,
}

// One refresh run (a continuous job's lifetime counts as one run).
struct RefreshRun {
  1: required string id,
  // catalog.database.table
  2: required string table,
  // schedule | catch-up | initial | manual | api | continuous | append | merge | recompute
  3: required string trigger,
  4: required RunStatus status,
  // "2024-03-02 00:00:00+00:00"
  5: optional string scheduleTime,
  6: optional map<string, string> partition,
  // seconds since the epoch
  7: optional double submitted,
  8: optional double started,
  9: optional double ended,
  10: optional string error,
  11: optional i64 rows,
  12: optional string applicationId,
  // files the job read (after partition pruning)
  13: optional i64 inputFiles,
  14: optional list<string> sourcePartitions,
  // starting | planning | writing | committing | ... while it runs
  15: optional string phase,
  // the scheduler's fire time (scheduled runs)
  16: optional double fired,
}

// A refresh request: the runs it started or joined.
struct RefreshJob {
  1: required string jobId,
  2: required RunStatus status,
  3: list<RefreshRun> runs,
  4: map<string, string> clusterInfo,
  5: optional string error,
}

struct DynamicTable {
  // fully qualified
  1: required ObjectPath path,
  // the query as written, and expanded (qualified, `*` expanded) as the jobs run it
  2: required string query,
  3: required string expandedQuery,
  // "1 DAY", "10 SECOND"
  4: required string freshness,
  // unset: derived from dynamic-tables.freshness-threshold
  5: optional RefreshMode declaredMode,
  // the RefreshJobHandler: actual mode, state and a JSON job detail
  6: required RefreshMode refreshMode,
  7: required RefreshState state,
  8: required string jobDetail,
  9: list<Column> columns,
  10: list<Column> partitionKeys,
  11: map<string, string> options,
  12: optional string comment,
  // Quartz cron of a FULL refresh
  13: optional string schedule,
  // seconds since the epoch
  14: optional i64 created,
  15: optional RefreshRun lastRefresh,
  // seconds since the data was current; unset: never refreshed
  16: optional double freshnessLag,
  17: optional bool withinTarget,
  // seconds since the epoch the data is current as of, and the run that made it so
  18: optional double dataTime,
  19: optional RefreshRun dataTimeRun,
}

struct DynamicTableSpec {
  1: required ObjectPath path,
  2: required string query,
  // "1 day", "10 minutes", "INTERVAL '1' HOUR"; "": the configured default of the mode
  3: required string freshness,
  4: optional RefreshMode refreshMode,
  5: optional list<string> partitionedBy,
  6: optional map<string, string> options,
  7: optional string comment,
}

// Set one: a freshness and/or a mode, or an action (SUSPEND, RESUME).
struct DynamicTableChange {
  1: optional string freshness,
  2: optional RefreshMode refreshMode,
  3: optional string action,
}

struct RefreshRequest {
  // catalog.database.table (shorter forms use the defaults)
  1: required list<string> tables,
  // "2024-03-02 00:00:00" (dynamic-tables.time-zone unless it has an offset)
  2: optional string scheduleTime,
  3: optional map<string, string> partition,
  // extra Spark settings for the job
  4: optional map<string, string> configuration,
  // manual | api
  5: optional string trigger,
}

struct StatementResult {
  // created | exists | altered | suspended | resumed | refreshing | dropped | not-found
  // | show-create (message: the CREATE statement)
  1: required string kind,
  2: required string message,
  3: optional DynamicTable table,
  4: optional RefreshJob job,
}

// ---------------------------------------------------------------- cluster

// One member of a cluster (cluster.members), as the daemon that answered saw it.
struct MemberStatus {
  // host:port of its Thrift API, as in cluster.members
  1: required string address,
  2: required string hmsUri,
  3: required string httpAddress,
  // it answered a ping just now
  4: required bool up,
  // why not, when it is down
  5: optional string problem,
  // it holds the leader lease's latest term
  6: required bool leader,
  // it is the daemon that answered
  7: required bool answering,
}

struct ClusterStatus {
  // false: no cluster section (the daemon works alone and leads itself)
  1: required bool clustered,
  2: required list<MemberStatus> members,
  // host:port of the leader (none: no term seen yet)
  3: optional string leader,
  // when the leader's term began, epoch seconds
  4: optional double leaderSince,
  // the latest term's number: each takeover adds one
  5: required i64 epoch,
  // seconds since the leader's lease was last renewed, as the answering daemon saw it
  6: optional double leaseAge,
  // cluster.lease, seconds
  7: required double lease,
  // where the lease is kept (a metastore's address); none: the daemon leads alone
  8: optional string leaseStore,
  // the answering daemon's last error reaching the lease store
  9: optional string problem,
  // whether the answering daemon does the background work now
  10: required bool leading,
}

// ---------------------------------------------------------------- service

service CatalogService {
  string ping(),

  // -- authentication: the first call on a connection when the daemon has auth enabled
  // (auth.enabled); every other call but ping is refused with PermissionDenied until it
  // succeeded. Returns the principal the token belongs to ("anonymous" with auth off).
  // A wrong token leaves the connection unauthenticated.
  string authenticate(1: string token)
  throws (1: PermissionDenied denied, 2: InternalError internal),

  // -- catalogs (CatalogManager)
  list<CatalogInfo> listCatalogs()
  throws (1: InternalError internal, 2: PermissionDenied denied),
  CatalogInfo getCatalog(1: string name)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: InternalError internal,
          4: PermissionDenied denied),

  // -- databases
  list<string> listDatabases(1: string catalog)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: InternalError internal),
  Database getDatabase(1: NamespacePath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: InternalError internal),
  bool databaseExists(1: NamespacePath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: InternalError internal),
  void createDatabase(1: Database database, 2: bool ignoreIfExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),
  void alterDatabase(1: NamespacePath path, 2: DatabaseUpdate update)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: Conflict conflict,
          7: InternalError internal),
  // dropForeign: objects catalogd did not create go too (a jdbc catalog refuses them
  // otherwise); only an admin may say so.
  void dropDatabase(1: NamespacePath path, 2: bool ignoreIfNotExists, 3: bool cascade, 4: bool dropForeign)
  throws (1: NotFound notFound, 2: NotEmpty notEmpty, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),

  // -- tables
  list<string> listTables(1: NamespacePath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: InternalError internal),
  Table getTable(1: ObjectPath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: InternalError internal),
  bool tableExists(1: ObjectPath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: InternalError internal),
  // Returns the table as stored (location and defaults filled in).
  Table createTable(1: Table table, 2: bool ignoreIfExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),
  Table alterTable(1: ObjectPath path, 2: TableUpdate update)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: Conflict conflict,
          7: InternalError internal),
  void renameTable(1: ObjectPath path, 2: string newName, 3: bool ignoreIfNotExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),
  // dropForeign: as dropDatabase's (a table catalogd did not create; admin only).
  void dropTable(1: ObjectPath path, 2: bool ignoreIfNotExists, 3: bool purge, 4: bool dropForeign)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),

  // -- stages: atomic writes (DESIGN.md section 4)
  // CREATE fails with AlreadyExists when the target exists; CREATE_IF_NOT_EXISTS
  // then answers a stage that is ABORTED already (nothing to write).
  // Every stage RPC: PermissionDenied on a read-only catalog and for a staging table
  // catalogd did not sign (forged in the metastore); a lease over staging.max-lease is
  // InvalidArgument.
  Stage beginStage(1: StageRequest request)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal, 8: Conflict conflict),
  // Extends the lease by leaseMillis (0: staging.lease) from now.
  Stage heartbeatStage(1: string stageId, 2: i64 leaseMillis)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: Conflict conflict, 5: InternalError internal, 6: PermissionDenied denied,
          7: Unsupported unsupported),
  // Idempotent: a commit retried after a lost reply answers COMMITTED.
  Stage commitStage(1: string stageId)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied, 6: Conflict conflict,
          7: Unsupported unsupported, 8: InternalError internal),
  // Idempotent; an unknown or aborted stage answers ABORTED, a committed one Conflict.
  // writerStopped: the caller is the writer and writes no more, so the files go at once;
  // otherwise (an operator) the stage becomes an ABORTED tombstone whose files, with any
  // its still-running writer adds, are deleted a lease later.
  Stage abortStage(1: string stageId, 2: bool writerStopped)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Conflict conflict, 6: InternalError internal,
          7: Unsupported unsupported),
  Stage getStage(1: string stageId)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: InternalError internal, 5: PermissionDenied denied, 6: Unsupported unsupported),
  // Open and committing stages of a catalog (empty: the default catalog).
  list<Stage> listStages(1: string catalog)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: Unsupported unsupported, 5: InternalError internal, 6: PermissionDenied denied),

  // -- partitions. A spec names every partition key: {"ds": "2024-03-01"}.
  // filter: HMS's partition filter syntax, e.g. ds >= '2024-03-01' AND hr = '01'.
  list<Partition> listPartitions(1: ObjectPath path, 2: string filter)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  Partition getPartition(1: ObjectPath path, 2: map<string, string> spec)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  // location unset: <table location>/<partition name>
  Partition addPartition(1: ObjectPath path, 2: map<string, string> spec, 3: string location,
                         4: bool ignoreIfExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),
  void dropPartition(1: ObjectPath path, 2: map<string, string> spec, 3: bool ignoreIfNotExists,
                     4: bool purge)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),

  // -- views. createView takes a Table whose viewText is the query; the daemon validates
  // it against the catalog, expands it and derives the columns.
  list<string> listViews(1: NamespacePath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  Table getView(1: ObjectPath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  Table createView(1: Table view, 2: bool ignoreIfExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),
  Table alterView(1: ObjectPath path, 2: ViewUpdate update)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  void renameView(1: ObjectPath path, 2: string newName, 3: bool ignoreIfNotExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),
  void dropView(1: ObjectPath path, 2: bool ignoreIfNotExists)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),

  // -- functions
  list<string> listFunctions(1: NamespacePath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  Function getFunction(1: ObjectPath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  Function createFunction(1: Function function, 2: bool ignoreIfExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),
  // replaces class, language and resources
  Function alterFunction(1: ObjectPath path, 2: Function function)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  void renameFunction(1: ObjectPath path, 2: string newName, 3: bool ignoreIfNotExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),
  void dropFunction(1: ObjectPath path, 2: bool ignoreIfNotExists)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),

  // -- configuration: re-read the daemon's YAML file (as SIGHUP does). An invalid file is
  // rejected with InvalidArgument whose message lists every problem, one per line, and
  // the running configuration stays.
  ReloadResult reloadConfig()
  throws (1: InvalidArgument invalid, 2: MetastoreUnavailable unavailable, 3: InternalError internal,
          4: PermissionDenied denied),

  // -- cluster: every member (each pinged now, up or down), the leader and its lease
  ClusterStatus clusterStatus()
  throws (1: InternalError internal, 2: PermissionDenied denied),

  // FLIP-30 renameDatabase: Hive Metastores cannot rename a database (Unsupported);
  // memory catalogs can.
  void renameDatabase(1: NamespacePath path, 2: string newName, 3: bool ignoreIfNotExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),

  // -- dynamic tables (FLIP-435). The daemon validates the query with Spark's analyzer,
  // derives the schema and the refresh mode and starts the schedule or the job.
  DynamicTable createDynamicTable(1: DynamicTableSpec spec, 2: bool ignoreIfExists)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal),
  DynamicTable getDynamicTable(1: ObjectPath path)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  // catalog empty: the default catalog; database empty: every database of the catalog
  list<DynamicTable> listDynamicTables(1: string catalog, 2: string database)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  DynamicTable alterDynamicTable(1: ObjectPath path, 2: DynamicTableChange change)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  // stops the schedule and the job first
  void dropDynamicTable(1: ObjectPath path, 2: bool ignoreIfNotExists)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  // joins a run already going for the same table and partition; works while suspended
  RefreshJob refreshDynamicTables(1: RefreshRequest request)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  // waitSeconds > 0 (a long poll): answers once every run of the job has ended, or when the wait
  // lapses (cut to 300 s) with the job as it is then; absent or 0 (older clients): at once. A busy
  // daemon (too many waiting) may answer at once too: the client asks again.
  RefreshJob getRefreshJob(1: string jobId, 2: double waitSeconds)
  throws (1: NotFound notFound, 2: InternalError internal, 3: PermissionDenied denied,
          4: InvalidArgument invalid),
  // newest first; limit 0: all that are kept
  list<RefreshRun> dynamicTableHistory(1: ObjectPath path, 2: i32 limit)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
  // CREATE [OR ALTER] / ALTER / DROP / SHOW CREATE DYNAMIC (or MATERIALIZED) TABLE statements
  StatementResult executeStatement(1: string statement)
  throws (1: NotFound notFound, 2: AlreadyExists exists, 3: InvalidArgument invalid,
          4: MetastoreUnavailable unavailable, 5: PermissionDenied denied,
          6: Unsupported unsupported, 7: InternalError internal, 8: Conflict conflict),
}
