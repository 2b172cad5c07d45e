/*
 * catalogd: the unified catalog service (FLIP-30 ReadableWritableCatalog plus
 * CatalogManager) served by the catalogd daemon.
 *
 * Python code is generated into catalogd/gen/ by `make idl`; never edit it.
 * Names: an empty catalog means the default catalog, an empty database the
 * catalog's default database.
 */

namespace py catalogd_thrift

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
  // hive | memory
  2: required string type,
  3: required bool isDefault,
  4: required string defaultDatabase,
  5: required bool readOnly,
  // metastore URI(s) for hive catalogs, e.g. thrift://127.0.0.1:9083
  6: optional string metastore,
  7: optional string warehouse,
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
}

struct DatabaseUpdate {
  1: optional string comment,
  2: optional map<string, string> setProperties,
  3: optional list<string> unsetProperties,
}

struct TableUpdate {
  1: optional string comment,
  2: optional map<string, string> setProperties,
  3: optional list<string> unsetProperties,
  4: optional list<Column> addColumns,
}

// ---------------------------------------------------------------- service

service CatalogService {
  string ping(),

  // -- catalogs (CatalogManager)
  list<CatalogInfo> listCatalogs()
  throws (1: InternalError internal),
  CatalogInfo getCatalog(1: string name)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: InternalError internal),

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
  void dropDatabase(1: NamespacePath path, 2: bool ignoreIfNotExists, 3: bool cascade)
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
  void dropTable(1: ObjectPath path, 2: bool ignoreIfNotExists, 3: bool purge)
  throws (1: NotFound notFound, 2: InvalidArgument invalid, 3: MetastoreUnavailable unavailable,
          4: PermissionDenied denied, 5: Unsupported unsupported, 6: InternalError internal),
}
