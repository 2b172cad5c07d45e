"""A catalog on a relational database through its own protocol: ``type: jdbc`` (PostgreSQL).

The catalog serves one PostgreSQL database (``default-database``, Flink's meaning). A
catalogd database is a PostgreSQL schema (``pg.sales`` is schema ``sales``), a table is a
table (``pg.sales.orders`` is ``sales.orders``), a view is a view whose text PostgreSQL
keeps. Functions and partitions are refused as unsupported.

Comments and properties: a table's (and a schema's) comment is PostgreSQL's own ``COMMENT``;
catalogd's properties of it are kept in the same comment, after a marker line
(``-- catalogd properties: {json}``), so they travel with the table through any rename,
even one made outside catalogd, and go with it when it is dropped. A comment without
properties is left exactly as written, so ``psql``'s ``\\d+`` shows what the user wrote.

Names: catalogd's names are lower case (``[a-z0-9_]``); objects whose PostgreSQL names are
not (made outside catalogd with quoted capitals) are not listed, because no catalogd name
reaches them. Names starting with ``__catalogd_stage_`` are stages (``jdbc_staging``):
hidden from listings, refused as names of user tables.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from psycopg import sql
from pydantic import SecretStr

from catalogd.catalog.base import STAGE_TABLE_PREFIX, BaseCatalog, StageBackend, check_name, is_stage_table
from catalogd.catalog.jdbc_comments import decode_comment, encode_comment, updated_comment
from catalogd.catalog.jdbc_connection import PgConnections
from catalogd.catalog.jdbc_dialect import Dialect, dialect_for
from catalogd.errors import (
    CatalogError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
    ViewAlreadyExistsError,
    ViewNotFoundError,
)
from catalogd.model import (
    CatalogInfo,
    Column,
    Database,
    DatabaseUpdate,
    Statistics,
    Table,
    TableKind,
    TableUpdate,
    ViewUpdate,
)

if TYPE_CHECKING:
    from catalogd.config import CatalogConfig
    from catalogd.hive_idl import ttypes as hms

#: Names catalogd can address (it lower-cases every name it is given).
_ADDRESSABLE = re.compile(r"[a-z0-9_]+")
#: Relation kinds (pg_class.relkind) listed as tables and as views.
TABLE_KINDS = ("r", "p", "f")
VIEW_KINDS = ("v", "m")
#: The property that marks a table or view catalogd created (drops delete only those: ``made_by_catalogd``).
MADE = "catalogd.made"
#: The property a stage's commit leaves on its target (as ``jdbc_staging.LAST_COMMIT``).
LAST_COMMIT = "catalogd.last-commit"
#: Advisory-lock namespace (pg_advisory_xact_lock's first key) of a target table: commits onto it
#: and changes of its catalogd properties take it (``lock_target``), so neither loses the other's.
TARGET_LOCK = 0x0CA7D002


def made_by_catalogd(properties: dict[str, str]) -> bool:
    """Whether a table or view whose catalogd properties are these was made by catalogd: created
    by it (``MADE``) or committed by one of its stages (``LAST_COMMIT``). Clients cannot set
    either (``catalogd.*`` properties are refused on every door)."""
    return MADE in properties or LAST_COMMIT in properties


def _listed(names: list[str], limit: int = 20) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def missing(ignore: bool, error: CatalogError) -> None:
    """What a drop or rename of something that is not there does: nothing when told to ignore
    it (the caller returns), else raise ``error``."""
    if not ignore:
        raise error


def lock_target(conn: Any, database: str, name: str) -> None:
    """Take ``database.name``'s target lock for the rest of ``conn``'s transaction."""
    conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (TARGET_LOCK, f"{database}.{name}"))


class JdbcCatalog(BaseCatalog):
    """A catalog on one PostgreSQL database; ``stager`` (None: read-only use) does its atomic writes."""

    hms_served = False

    def __init__(self, name: str, *, dialect: Dialect, connections: PgConnections, jdbc_url: str, user: str,
                 driver_jar: str, default_schema: str = "public",
                 stager: StageBackend | None = None, password: SecretStr | None = None) -> None:
        super().__init__(name)
        self.dialect = dialect
        self.connections = connections
        self.jdbc_url = jdbc_url
        self.user = user
        self.driver_jar = driver_jar
        self.default_schema = default_schema
        self.stager = stager
        self._password = password

    @classmethod
    def from_config(cls, conf: CatalogConfig, stager: Any = None) -> JdbcCatalog:
        from catalogd.config.jdbc_url import parse_base_url

        base = parse_base_url(conf.base_url or "")
        password = conf.jdbc_password
        connect: dict[str, Any] = {"host": base.host, "port": base.port, "dbname": conf.default_database,
                                   "user": conf.username}
        if password is not None:
            connect["password"] = password.get_secret_value()
        connect.update(dict(base.params))
        catalog = cls(conf.name, dialect=dialect_for(base.dialect), connections=PgConnections(connect),
                      jdbc_url=base.jdbc_url(conf.default_database), user=conf.username or "",
                      driver_jar=str(conf.driver_jar), default_schema=conf.default_schema, password=password)
        if stager is not None:
            catalog.stager = stager(catalog)
        return catalog

    # ------------------------------------------------------------ lifecycle

    def open(self) -> None:
        # A wrong password or an unreachable server stops the start with PostgreSQL's reason,
        # rather than failing the first call.
        self.ping()

    def close(self) -> None:
        self.connections.close()

    def info(self) -> CatalogInfo:
        # metastore: where the data is, for clients (no credentials); the driver Spark needs.
        return CatalogInfo(name=self.name, type="jdbc", metastore=self.jdbc_url, atomic_writes=self.stager is not None,
                           jdbc_user=self.user, jdbc_driver_jar=self.driver_jar)

    def ping(self, timeout: float | None = None) -> None:
        with self.connections.connection(f"catalog {self.name}") as conn:
            conn.execute("SELECT 1")

    def q(self, *parts: str) -> sql.Composable:
        """A (schema-)qualified, quoted identifier."""
        return sql.SQL(".").join(sql.Identifier(p) for p in parts)

    def _what(self, database: str, name: str | None = None) -> str:
        return f"{'table ' if name else 'database '}{self.name}.{database}" + (f".{name}" if name else "")

    # ------------------------------------------------------------ databases (schemas)

    def list_databases(self) -> list[str]:
        with self.connections.connection(f"catalog {self.name}") as conn:
            rows = conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' "
                "AND nspname <> 'information_schema' ORDER BY 1").fetchall()
        return [r[0] for r in rows if _ADDRESSABLE.fullmatch(r[0])]

    def _schema_row(self, conn: Any, name: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = conn.execute(
            "SELECT oid, pg_get_userbyid(nspowner), obj_description(oid, 'pg_namespace') "
            "FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
        return row

    def require_schema(self, conn: Any, name: str) -> None:
        """Raise DatabaseNotFoundError unless schema ``name`` exists (read on ``conn``)."""
        if self._schema_row(conn, name) is None:
            raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")

    def get_database(self, name: str) -> Database:
        with self.connections.connection(self._what(name)) as conn:
            row = self._schema_row(conn, name)
        if row is None:
            raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")
        comment, properties = decode_comment(row[2])
        return Database(name=name, catalog=self.name, comment=comment, properties=properties, owner=row[1])

    def create_database(self, database: Database, ignore_if_exists: bool = False) -> None:
        check_name(database.name, "database")
        name = database.name.lower()
        if database.location:
            raise InvalidArgumentError(f"database {self.name}.{name}: a jdbc catalog's databases are schemas "
                                       "and have no location")
        what = self._what(name)
        with self.connections.connection(what) as conn, conn.transaction():
            if self._schema_row(conn, name) is not None:
                if ignore_if_exists:
                    return
                raise DatabaseAlreadyExistsError(f"database {self.name}.{name} already exists")
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
            text = encode_comment(database.comment, database.properties)
            if text is not None:
                conn.execute(sql.SQL("COMMENT ON SCHEMA {} IS {}").format(sql.Identifier(name), sql.Literal(text)))

    def alter_database(self, name: str, update: DatabaseUpdate) -> None:
        with self.connections.connection(self._what(name)) as conn, conn.transaction():
            row = conn.execute("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace "
                               "WHERE nspname = %s FOR UPDATE", (name,)).fetchone()
            if row is None:
                raise DatabaseNotFoundError(f"database {self.name}.{name} does not exist")
            conn.execute(sql.SQL("COMMENT ON SCHEMA {} IS {}").format(
                sql.Identifier(name), sql.Literal(updated_comment(row[0], update))))

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False,
                      drop_foreign: bool = False) -> None:
        """Drop a schema. Without ``cascade`` only an empty one (but for the stages of writes in
        flight); with it, its objects go too, but only those catalogd made (``made_by_catalogd``):
        any other object in it (a table, view, sequence, function, type... made outside
        catalogd) refuses the drop, with their list, unless ``drop_foreign`` (an admin's word)."""
        what = self._what(name)
        with self.connections.connection(what) as conn, conn.transaction():
            row = self._schema_row(conn, name)
            if row is None:
                missing(ignore_if_not_exists, DatabaseNotFoundError(f"database {self.name}.{name} does not exist"))
                return
            if name == self.default_schema:
                raise InvalidArgumentError(f"database {self.name}.{name}: the default database cannot be dropped")
            # Every object of the schema, whatever its kind (PostgreSQL's DROP SCHEMA ... CASCADE
            # drops them all): tables and views by name, the rest as PostgreSQL describes them.
            objects = self._schema_objects(conn, int(row[0]))
            if not cascade:
                contents = [describe for describe, _ours, stage in objects if not stage]
                if contents:
                    raise DatabaseNotEmptyError(f"database {self.name}.{name} is not empty ({len(contents)} objects: "
                                                f"{_listed(contents)}); drop it with cascade")
            foreign = [describe for describe, ours, _stage in objects if not ours]
            if foreign and not drop_foreign:
                raise PermissionDeniedError(
                    f"database {self.name}.{name} holds {len(foreign)} objects catalogd did not create "
                    f"({_listed(foreign)}): a cascade drops only what catalogd made; nothing was dropped. An admin "
                    "who means to drop them says so explicitly (--drop-foreign)")
            # CASCADE also when empty of user objects: the stages of writes in flight go with it.
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))

    def _schema_objects(self, conn: Any, oid: int) -> list[tuple[str, bool, bool]]:
        """(description, made by catalogd, a stage) of each object of the schema ``oid``.

        Every object in a schema depends on it in ``pg_depend`` (a normal dependency); what
        belongs to one of those (a table's indexes, row type, owned sequences) depends on its
        owner instead and goes with it.
        """
        rows = conn.execute(
            "SELECT pg_describe_object(d.classid, d.objid, 0), c.relname, c.relkind, "
            "obj_description(c.oid, 'pg_class') FROM pg_depend d "
            "LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid "
            "WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = %s AND d.deptype = 'n' "
            "ORDER BY 1", (oid,)).fetchall()
        found = []
        for describe, relname, relkind, comment in rows:
            stage = relname is not None and is_stage_table(relname)
            ours = stage or (relname is not None and relkind in TABLE_KINDS + VIEW_KINDS
                             and _ADDRESSABLE.fullmatch(relname) is not None
                             and made_by_catalogd(decode_comment(comment)[1]))
            found.append((str(describe), ours, stage))
        return found

    def rename_database(self, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        check_name(new_name, "database")
        new_name = new_name.lower()
        with self.connections.connection(self._what(name)) as conn, conn.transaction():
            if self._schema_row(conn, name) is None:
                missing(ignore_if_not_exists, DatabaseNotFoundError(f"database {self.name}.{name} does not exist"))
                return
            if name == self.default_schema:
                raise InvalidArgumentError(f"database {self.name}.{name}: the default database cannot be renamed")
            if self._schema_row(conn, new_name) is not None:
                raise DatabaseAlreadyExistsError(f"database {self.name}.{new_name} already exists")
            # Stages in flight go with the schema; their ids name the old one, so they fail and are redone.
            conn.execute(sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(sql.Identifier(name),
                                                                       sql.Identifier(new_name)))

    # ------------------------------------------------------------ tables

    @staticmethod
    def _relations(conn: Any, schema: str, kinds: tuple[str, ...]) -> list[str]:
        rows = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = ANY(%s) ORDER BY 1", (schema, list(kinds))).fetchall()
        return [r[0] for r in rows]

    def _names(self, database: str, kinds: tuple[str, ...]) -> list[str]:
        with self.connections.connection(self._what(database)) as conn:
            self.require_schema(conn, database)
            names = self._relations(conn, database, kinds)
        return [n for n in names if _ADDRESSABLE.fullmatch(n) and not is_stage_table(n)]

    def list_tables(self, database: str) -> list[str]:
        return self._names(database, TABLE_KINDS)

    def list_views(self, database: str) -> list[str]:
        return self._names(database, VIEW_KINDS)

    def relation(self, conn: Any, database: str, name: str) -> tuple[int, str, str | None, str, float] | None:
        """(oid, relkind, comment, owner, reltuples) of ``database.name``; None when there is none."""
        row = conn.execute(
            "SELECT c.oid, c.relkind, obj_description(c.oid, 'pg_class'), pg_get_userbyid(c.relowner), c.reltuples "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s AND c.relkind = ANY(%s)",
            (database, name, list(TABLE_KINDS + VIEW_KINDS))).fetchone()
        return None if row is None else (int(row[0]), str(row[1]), row[2], str(row[3]), float(row[4]))

    def columns_of(self, conn: Any, oid: int) -> list[Column]:
        rows = conn.execute(
            "SELECT attname, format_type(atttypid, atttypmod), col_description(attrelid, attnum) "
            "FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (oid,)).fetchall()
        return [Column(r[0], self.dialect.from_db_type(r[1]), r[2]) for r in rows]

    def read_table(self, conn: Any, database: str, name: str) -> Table | None:
        """The table or view ``database.name`` as catalogd describes it, read on ``conn``; None: none."""
        found = self.relation(conn, database, name)
        if found is None:
            return None
        oid, kind, text, owner, tuples = found
        comment, properties = decode_comment(text)
        properties.pop(MADE, None)  # catalogd's own mark, not the user's property
        table = Table(name=name, database=database, catalog=self.name, columns=self.columns_of(conn, oid),
                      format=None, kind=TableKind.VIEW if kind in VIEW_KINDS else TableKind.MANAGED,
                      comment=comment, properties=properties, owner=owner,
                      statistics=Statistics(row_count=int(tuples) if tuples >= 0 else None))
        if kind in VIEW_KINDS:
            definition = conn.execute("SELECT pg_get_viewdef(%s::oid, true)", (oid,)).fetchone()[0]
            table.view_text = table.view_expanded_text = (definition or "").strip()
        return table

    def get_table(self, database: str, name: str) -> Table:
        if is_stage_table(name):
            raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
        with self.connections.connection(self._what(database, name)) as conn:
            table = self.read_table(conn, database, name)
        if table is None:
            raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
        return table

    def check_table(self, table: Table) -> None:
        """A new table's definition as PostgreSQL can keep it."""
        check_name(table.name, "table")
        self.check_new_table(table)
        if table.partition_keys:
            raise UnsupportedError(f"table {self.name}.{table.database}.{table.name}: a jdbc catalog has no "
                                   "partitions (PostgreSQL's declarative partitioning is not mapped)")
        if table.kind is TableKind.EXTERNAL or table.location:
            raise InvalidArgumentError(f"table {self.name}.{table.database}.{table.name}: a jdbc catalog's tables "
                                       "live in PostgreSQL: no external tables, no location")
        if len(table.name) > self.dialect.max_identifier:
            raise InvalidArgumentError(f"table name {table.name!r}: PostgreSQL keeps at most "
                                       f"{self.dialect.max_identifier} characters")

    def table_ddl(self, database: str, name: str, columns: list[Column], comment: str | None,
                  properties: dict[str, str]) -> list[sql.Composed]:
        """The statements that create ``database.name`` with these columns, comment and properties."""
        cols = sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(c.name.lower()), sql.SQL(self.dialect.to_db_type(c.type, c.name)))
            for c in columns)
        statements: list[sql.Composed] = [
            sql.SQL("CREATE TABLE {} ({})").format(self.q(database, name), cols)]
        for c in columns:
            if c.comment:
                statements.append(sql.SQL("COMMENT ON COLUMN {} IS {}").format(
                    self.q(database, name, c.name.lower()), sql.Literal(c.comment)))
        text = encode_comment(comment, properties)
        if text is not None:
            statements.append(sql.SQL("COMMENT ON TABLE {} IS {}").format(self.q(database, name), sql.Literal(text)))
        return statements

    def create_table(self, table: Table, ignore_if_exists: bool = False) -> Table:
        self.check_table(table)
        database, name = table.database, table.name.lower()
        what = self._what(database, name)
        with self.connections.connection(what) as conn:
            with conn.transaction():
                self.require_schema(conn, database)
                existing = self.relation(conn, database, name)
                if existing is not None:
                    if ignore_if_exists and existing[1] in TABLE_KINDS:
                        pass
                    else:
                        raise TableAlreadyExistsError(f"{what} already exists")
                else:
                    for statement in self.table_ddl(database, name, table.columns, table.comment,
                                                    {**table.properties, MADE: "true"}):
                        conn.execute(statement)
            created = self.read_table(conn, database, name)
        assert created is not None
        return created

    def alter_table(self, database: str, name: str, update: TableUpdate) -> Table:
        what = self._what(database, name)
        if is_stage_table(name):
            raise TableNotFoundError(f"{what} does not exist")
        with self.connections.connection(what) as conn:
            with conn.transaction():
                # The table's lock serialises this read-modify-write of the comment with commits onto it.
                found = self._locked_relation(conn, database, name)
                if found[1] in VIEW_KINDS:
                    raise InvalidArgumentError(f"{self.name}.{database}.{name} is a view: alter it as a view")
                self._add_columns(conn, database, name, found[0], update.add_columns)
                conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
                    self.q(database, name), sql.Literal(updated_comment(found[2], update))))
            table = self.read_table(conn, database, name)
        assert table is not None
        return table

    def _add_columns(self, conn: Any, database: str, name: str, oid: int, columns: Sequence[Column]) -> None:
        """Append ``columns`` to the table (in the caller's transaction); a name it has already is refused."""
        existing = {c.name for c in self.columns_of(conn, oid)}
        for col in columns:
            if col.name.lower() in existing:
                raise InvalidArgumentError(f"column {col.name!r} already exists in {database}.{name}")
            existing.add(col.name.lower())
            conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(
                self.q(database, name), sql.Identifier(col.name.lower()),
                sql.SQL(self.dialect.to_db_type(col.type, col.name))))
            if col.comment:
                conn.execute(sql.SQL("COMMENT ON COLUMN {} IS {}").format(
                    self.q(database, name, col.name.lower()), sql.Literal(col.comment)))

    def _locked_relation(self, conn: Any, database: str, name: str) -> tuple[int, str, str | None, str, float]:
        found = self.relation(conn, database, name)
        if found is None:
            raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
        conn.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(self.q(database, name)))
        again = self.relation(conn, database, name)
        if again is None:
            raise TableNotFoundError(f"table {self.name}.{database}.{name} does not exist")
        return again

    def rename_table(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        check_name(new_name, "table")
        new_name = new_name.lower()
        if is_stage_table(new_name):
            raise InvalidArgumentError(f"table name {new_name!r}: {STAGE_TABLE_PREFIX!r} is reserved for stages")
        what = self._what(database, name)
        with self.connections.connection(what) as conn, conn.transaction():
            found = None if is_stage_table(name) else self.relation(conn, database, name)
            if found is None:
                missing(ignore_if_not_exists, TableNotFoundError(f"{what} does not exist"))
                return
            if self.relation(conn, database, new_name) is not None:
                raise TableAlreadyExistsError(f"table {self.name}.{database}.{new_name} already exists")
            conn.execute(sql.SQL("ALTER {} {} RENAME TO {}").format(
                sql.SQL("MATERIALIZED VIEW" if found[1] == "m" else "VIEW" if found[1] == "v" else "TABLE"),
                self.q(database, name), sql.Identifier(new_name)))

    def drop_table(self, database: str, name: str, ignore_if_not_exists: bool = False, purge: bool = False,
                   drop_foreign: bool = False) -> None:
        """Drop a table (or view); a table catalogd did not create (its data is not catalogd's) is
        refused unless ``drop_foreign`` (an admin's word). A view holds no data: dropped."""
        what = self._what(database, name)
        with self.connections.connection(what) as conn, conn.transaction():
            found = None if is_stage_table(name) else self.relation(conn, database, name)
            if found is None:
                missing(ignore_if_not_exists, TableNotFoundError(f"{what} does not exist"))
                return
            if found[1] != "v" and not drop_foreign and not made_by_catalogd(decode_comment(found[2])[1]):
                raise PermissionDeniedError(
                    f"{what} was not created by catalogd: catalogd drops only the tables it made; nothing was "
                    "dropped. An admin who means to drop it says so explicitly (--drop-foreign)")
            kind = {"v": "VIEW", "m": "MATERIALIZED VIEW", "f": "FOREIGN TABLE"}.get(found[1], "TABLE")
            conn.execute(sql.SQL("DROP {} {}").format(sql.SQL(kind), self.q(database, name)))

    # ------------------------------------------------------------ table parameters (dynamic tables)

    def update_table_parameters(self, database: str, name: str, set: dict[str, str],
                                remove_prefixes: tuple[str, ...] = (),
                                add_columns: Sequence[Column] = ()) -> dict[str, str]:
        what = self._what(database, name)
        if is_stage_table(name):
            raise TableNotFoundError(f"{what} does not exist")
        with self.connections.connection(what) as conn, conn.transaction():
            # The target lock a commit takes: a REPLACE reads the properties it keeps under it.
            lock_target(conn, database, name)
            found = self.relation(conn, database, name)
            if found is None or found[1] not in TABLE_KINDS:
                raise TableNotFoundError(f"{what} does not exist")
            comment, properties = decode_comment(found[2])
            properties = {k: v for k, v in properties.items()
                          if not (remove_prefixes and k.startswith(remove_prefixes))}
            properties.update(set)
            self._add_columns(conn, database, name, found[0], add_columns)
            conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
                self.q(database, name), sql.Literal(encode_comment(comment, properties))))
        return properties

    def tables_with_parameter(self, key: str) -> list[tuple[str, str, dict[str, str]]]:
        # One query over the database's comments (LIKE's wildcards only widen it; the key is checked after).
        pattern = f"%{key}%"
        with self.connections.connection(f"catalog {self.name}") as conn:
            rows = conn.execute(
                "SELECT n.nspname, c.relname, obj_description(c.oid, 'pg_class') FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = ANY(%s) "
                "AND obj_description(c.oid, 'pg_class') LIKE %s", (list(TABLE_KINDS), pattern)).fetchall()
        found = []
        for schema, name, text in rows:
            if is_stage_table(name) or not (_ADDRESSABLE.fullmatch(schema) and _ADDRESSABLE.fullmatch(name)):
                continue
            _, properties = decode_comment(text)
            if key in properties:
                found.append((schema, name, properties))
        return found

    def job_password(self) -> str | None:
        # username's: the daemon's jobs (dynamic tables' refreshes) get it in their environment only.
        return self._password.get_secret_value() if self._password is not None else None

    # ------------------------------------------------------------ views

    def _view_sql(self, query: str) -> str:
        """A view's query (Spark SQL, as catalogd takes it) in PostgreSQL's SQL."""
        import sqlglot

        try:
            return str(sqlglot.transpile(query, read="spark", write="postgres")[0])
        except sqlglot.errors.SqlglotError as e:
            raise InvalidArgumentError(f"cannot translate the view's query to PostgreSQL: {e}") from e

    def create_view(self, view: Table, ignore_if_exists: bool = False) -> Table:
        self.check_new_view(view)
        check_name(view.name, "view")
        database, name = view.database, view.name.lower()
        what = f"view {self.name}.{database}.{name}"
        with self.connections.connection(what) as conn:
            with conn.transaction():
                self.require_schema(conn, database)
                existing = self.relation(conn, database, name)
                if existing is not None:
                    if not (ignore_if_exists and existing[1] in VIEW_KINDS):
                        raise ViewAlreadyExistsError(f"{self.name}.{database}.{name} already exists")
                else:
                    # Names without a schema in the query mean the view's own (catalogd's rule).
                    conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(database)))
                    conn.execute(sql.SQL("CREATE VIEW {} AS {}").format(
                        self.q(database, name), sql.SQL(self._view_sql(view.view_text or ""))))
                    text = encode_comment(view.comment, {**view.properties, MADE: "true"})
                    conn.execute(sql.SQL("COMMENT ON VIEW {} IS {}").format(self.q(database, name),
                                                                            sql.Literal(text)))
            created = self.read_table(conn, database, name)
        assert created is not None
        return created

    def alter_view(self, database: str, name: str, update: ViewUpdate) -> Table:
        what = f"view {self.name}.{database}.{name}"
        with self.connections.connection(what) as conn:
            with conn.transaction():
                found = self.relation(conn, database, name)
                if found is None or found[1] not in VIEW_KINDS:
                    raise ViewNotFoundError(f"{what} does not exist")
                if update.query is not None:
                    conn.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(database)))
                    # DROP and CREATE (not CREATE OR REPLACE): the new query may change the columns.
                    conn.execute(sql.SQL("DROP VIEW {}").format(self.q(database, name)))
                    conn.execute(sql.SQL("CREATE VIEW {} AS {}").format(
                        self.q(database, name), sql.SQL(self._view_sql(update.query))))
                conn.execute(sql.SQL("COMMENT ON VIEW {} IS {}").format(
                    self.q(database, name), sql.Literal(updated_comment(found[2], update))))
            table = self.read_table(conn, database, name)
        assert table is not None
        return table

    # ------------------------------------------------------------ functions, partitions

    def _unsupported(self, what: str) -> UnsupportedError:
        return UnsupportedError(f"catalog {self.name!r} is a jdbc catalog: it has no {what}")

    def list_functions(self, database: str) -> list[str]:
        raise self._unsupported("functions")

    def get_function(self, database: str, name: str) -> Any:
        raise self._unsupported("functions")

    def create_function(self, function: Any, ignore_if_exists: bool = False) -> Any:
        raise self._unsupported("functions")

    def alter_function(self, database: str, name: str, function: Any) -> Any:
        raise self._unsupported("functions")

    def rename_function(self, database: str, name: str, new_name: str, ignore_if_not_exists: bool = False) -> None:
        raise self._unsupported("functions")

    def drop_function(self, database: str, name: str, ignore_if_not_exists: bool = False) -> None:
        raise self._unsupported("functions")

    def list_partitions(self, database: str, table: str, filter: str | None = None) -> list[Any]:
        raise self._unsupported("partitions")

    def get_partition(self, database: str, table: str, spec: dict[str, str]) -> Any:
        raise self._unsupported("partitions")

    def add_partition(self, database: str, table: str, spec: dict[str, str], location: str | None = None,
                      ignore_if_exists: bool = False) -> Any:
        raise self._unsupported("partitions")

    def drop_partition(self, database: str, table: str, spec: dict[str, str], ignore_if_not_exists: bool = False,
                       purge: bool = False) -> None:
        raise self._unsupported("partitions")

    # ------------------------------------------------------------ stages

    def stage_backend(self) -> StageBackend | None:
        return self.stager

    def stage_owner(self, table: hms.Table) -> str | None:
        return None  # never asked: the HMS endpoint does not serve jdbc catalogs
