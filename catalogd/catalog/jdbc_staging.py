"""Stages of a jdbc catalog: FLIP-305's ``JdbcStagedTable`` on PostgreSQL.

``begin`` creates a hidden staging table ``__catalogd_stage_<key>`` in the target's schema
(the target's column types); the Spark job writes into it through Spark's JDBC data source;
``commit`` publishes it in **one PostgreSQL transaction**:

* CREATE / CREATE_IF_NOT_EXISTS: ``ALTER TABLE stage RENAME TO target``. A target that
  appeared meanwhile makes the transaction fail (CREATE: already-exists, the stage is
  dropped; CREATE_IF_NOT_EXISTS: the stage is dropped quietly).
* REPLACE (also INSERT OVERWRITE of a jdbc table): the old target is renamed aside, the
  stage renamed in, the old one dropped, all in the transaction. The renames take
  ``ACCESS EXCLUSIVE`` locks, so a reader's statement waits for the commit and then reads the
  new table (PostgreSQL looks the name up again once it has the lock): old rows or new rows,
  never a mixture, never a missing table.
* APPEND (INSERT INTO): ``INSERT INTO target SELECT ... FROM stage`` and the stage dropped.

What a stage is lives in PostgreSQL, never only in the daemon: the staging table's comment
holds its ``catalogd.stage.*`` fields as JSON (id, target, purpose, state, owner, lease
deadline, the target's comment and properties to be), signed with the stage key (HMAC, as
hive stages are), so a table with the prefix that catalogd did not create is never committed,
aborted or dropped by it. A commit is the one transaction, so there is no half-done commit
to recover: a daemon killed during it leaves PostgreSQL as it was before (the server rolls
the transaction back when the connection drops) and the stage OPEN, and the writer's retry
of the commit (to the restarted daemon, or another) publishes it while its lease lasts; a
daemon killed after it leaves the target published, and the retry finds the stage committed
by the tag on the target (``catalogd.last-commit``). Stage operations on one stage are serialised by a
transaction-scoped advisory lock on the stage, commits onto one target by one on the target
(so four racing CREATEs publish one after the other and three fail cleanly).

An abort drops the staging table at once: a writer still running then fails on its next
insert (its table is gone) rather than leaving rows anywhere.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from catalogd.catalog.base import (
    DYNAMIC_TABLE_PREFIX,
    RESERVED_PROPERTY_PREFIX,
    STAGE_KEY_LENGTH,
    STAGE_TABLE_PREFIX,
    check_stage_key,
    is_stage_table,
    new_stage_key,
)
from catalogd.catalog.jdbc import TABLE_KINDS, TARGET_LOCK, VIEW_KINDS, JdbcCatalog
from catalogd.catalog.jdbc_comments import decode_comment, encode_comment
from catalogd.errors import (
    CatalogError,
    ConflictError,
    InvalidArgumentError,
    PermissionDeniedError,
    StageNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.faults import fault_point
from catalogd.hive_types import parse_type
from catalogd.model import Column, Stage, StagePurpose, StageRequest, StageState

logger = logging.getLogger(__name__)

PARAM = "catalogd.stage."
#: The target's property naming the stage that last committed into it.
LAST_COMMIT = "catalogd.last-commit"
_KEY_LENGTH = STAGE_KEY_LENGTH
_SIGNATURE_VERSION = "v1"
#: Advisory-lock namespace (pg_advisory_xact_lock's first key) of one stage (a target's: jdbc.TARGET_LOCK).
_STAGE_LOCK = 0x0CA7D001
_FINISHED_CACHE = 4096
FORGED = ("not created by this catalogd (no valid signature; daemons sharing a database must share "
          "staging.secret): left alone")
#: The suffix of the name the old target has for the instant of a REPLACE (inside the commit's transaction).
_OLD = "o"


# The one definition of a stage key, for hive and jdbc stages alike.
new_key = new_stage_key
check_key = check_stage_key


def _now_ms() -> int:
    return int(time.time() * 1000)


def signature(secret: bytes, database: str, table: str, meta: dict[str, Any]) -> str:
    """HMAC-SHA256 over the staging table's schema, name and stage fields (all but the signature)."""
    fields = {k: v for k, v in meta.items() if k != PARAM + "signature"}
    message = json.dumps([_SIGNATURE_VERSION, database, table, fields], sort_keys=True, separators=(",", ":"))
    return f"{_SIGNATURE_VERSION}:{hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()}"


class JdbcStager:
    """The stage operations of one jdbc catalog (see the module docstring)."""

    def __init__(self, catalog: JdbcCatalog, *, lease: float, secret: bytes, max_lease: float,
                 committer: str | None = None) -> None:
        self.catalog = catalog
        self.name = catalog.name
        self.lease = lease
        self.max_lease = max_lease
        self.committer = committer or ""
        self._secret = secret
        self._finished: OrderedDict[str, Stage] = OrderedDict()
        self._guard = threading.Lock()

    # ------------------------------------------------------------ plumbing

    def _stage_id(self, database: str, key: str) -> str:
        return f"{self.name}.{database}.{key}"

    def _what(self, database: str, key: str) -> str:
        return f"stage {self._stage_id(database, key)}"

    def _q(self, *parts: str) -> sql.Composable:
        return sql.SQL(".").join(sql.Identifier(p) for p in parts)

    @staticmethod
    def _lock(conn: Any, namespace: int, name: str) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (namespace, name))

    def _read(self, conn: Any, database: str, key: str) -> dict[str, Any] | None:
        """The stage fields of ``__catalogd_stage_<key>``; None when there is no such table."""
        found = self.catalog.relation(conn, database, STAGE_TABLE_PREFIX + key)
        if found is None:
            return None
        try:
            meta = json.loads(found[2] or "{}")
        except ValueError:
            meta = {}
        return meta if isinstance(meta, dict) else {}

    def _authentic(self, database: str, table: str, meta: dict[str, Any]) -> bool:
        given = meta.get(PARAM + "signature")
        return isinstance(given, str) and hmac.compare_digest(
            given.encode(), signature(self._secret, database, table, meta).encode())

    def _check_authentic(self, database: str, key: str, meta: dict[str, Any]) -> None:
        if not self._authentic(database, STAGE_TABLE_PREFIX + key, meta):
            raise PermissionDeniedError(f"{self._what(database, key)}: {FORGED}")

    def _write_meta(self, conn: Any, database: str, key: str, meta: dict[str, Any]) -> None:
        table = STAGE_TABLE_PREFIX + key
        meta[PARAM + "signature"] = signature(self._secret, database, table, meta)
        conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
            self._q(database, table), sql.Literal(json.dumps(meta, sort_keys=True))))

    def _to_stage(self, database: str, key: str, meta: dict[str, Any], columns: list[Column] | None = None,
                  state: StageState | None = None, message: str | None = None) -> Stage:
        if not self._authentic(database, STAGE_TABLE_PREFIX + key, meta):
            message = FORGED
        return Stage(
            id=self._stage_id(database, key), catalog=self.name, database=database,
            target=str(meta.get(PARAM + "target", "")),
            purpose=StagePurpose.parse(str(meta.get(PARAM + "purpose", "CREATE"))),
            state=state or StageState(str(meta.get(PARAM + "state", "OPEN"))),
            owner=meta.get(PARAM + "owner") or None, created=meta.get(PARAM + "created"),
            lease_deadline=meta.get(PARAM + "lease-deadline"), staging_table=STAGE_TABLE_PREFIX + key,
            location=self.catalog.jdbc_url, columns=list(columns or []), format=None, message=message,
        )

    def _remember(self, stage: Stage) -> Stage:
        with self._guard:
            self._finished[stage.id] = stage
            self._finished.move_to_end(stage.id)
            while len(self._finished) > _FINISHED_CACHE:
                self._finished.popitem(last=False)
        return stage

    def _ended(self, database: str, key: str, target: str, purpose: StagePurpose, state: StageState,
               message: str) -> Stage:
        return self._remember(Stage(id=self._stage_id(database, key), catalog=self.name, database=database,
                                    target=target, purpose=purpose, state=state, message=message,
                                    location=self.catalog.jdbc_url))

    def _find_committed(self, conn: Any, database: str, key: str) -> Stage | None:
        """A stage this daemon saw end, or the table of the schema whose last commit it was."""
        stage_id = self._stage_id(database, key)
        with self._guard:
            known = self._finished.get(stage_id)
        if known is not None:
            return known
        # One query over the schema's comments: the tag is in the target's comment.
        rows = conn.execute(
            "SELECT c.relname, obj_description(c.oid, 'pg_class') FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' "
            "AND obj_description(c.oid, 'pg_class') LIKE %s", (database, f"%{stage_id}%")).fetchall()
        for name, text in rows:
            _, properties = decode_comment(text)
            if properties.get(LAST_COMMIT) == stage_id and not is_stage_table(name):
                return self._ended(database, key, name, StagePurpose.CREATE, StageState.COMMITTED,
                                   f"committed into {self.name}.{database}.{name}")
        return None

    def _check_lease(self, lease: float) -> None:
        if lease <= 0:
            raise InvalidArgumentError(f"a lease must be positive, got {lease} s")
        if lease > self.max_lease:
            raise InvalidArgumentError(f"a lease of {lease:g} s is longer than staging.max-lease "
                                       f"({self.max_lease:g} s)")

    # ------------------------------------------------------------ begin

    def begin(self, request: StageRequest) -> Stage:
        database, target = request.database, request.target.lower()
        what = f"table {self.name}.{database}.{target}"
        if is_stage_table(target):
            raise InvalidArgumentError(f"{what}: a staging table cannot be the target of a stage")
        purpose = request.purpose
        if purpose is StagePurpose.OVERWRITE_PARTITIONS or request.partition_keys:
            raise UnsupportedError(f"{what}: a jdbc catalog has no partitions (overwrite the whole table: REPLACE)")
        reserved = sorted(k for k in request.properties if k.lower().startswith(RESERVED_PROPERTY_PREFIX))
        if reserved:
            raise InvalidArgumentError(f"{what}: properties {reserved} are reserved for catalogd")
        lease = request.lease if request.lease is not None else self.lease
        self._check_lease(lease)
        key = new_key()
        table = STAGE_TABLE_PREFIX + key
        with self.catalog.connections.connection(what) as conn, conn.transaction():
            self.catalog.require_schema(conn, database)
            existing = self.catalog.read_table(conn, database, target)
            if existing is not None and existing.view_text is not None and \
                    purpose is not StagePurpose.CREATE_IF_NOT_EXISTS:
                raise InvalidArgumentError(f"{what} is a view: stages write tables only")
            if purpose is StagePurpose.CREATE and existing is not None:
                raise TableAlreadyExistsError(f"{what} already exists")
            if purpose is StagePurpose.CREATE_IF_NOT_EXISTS and existing is not None:
                return self._ended(database, key, target, purpose, StageState.ABORTED,
                                   f"{what} exists already; nothing to write")
            if purpose is StagePurpose.APPEND and existing is None:
                raise TableNotFoundError(f"{what} does not exist: an append needs an existing table")
            columns = list(request.columns)
            if purpose is StagePurpose.APPEND:
                assert existing is not None
                columns = columns or existing.columns
            if not columns:
                raise InvalidArgumentError(f"{what}: a stage needs the table's columns")
            columns = [Column(c.name.lower(), parse_type(c.type), c.comment) for c in columns]
            now = _now_ms()
            meta: dict[str, Any] = {
                PARAM + "id": self._stage_id(database, key), PARAM + "target": target,
                PARAM + "purpose": purpose.value, PARAM + "state": StageState.OPEN.value,
                PARAM + "owner": request.owner or "", PARAM + "created": now,
                PARAM + "lease": int(lease * 1000), PARAM + "lease-deadline": now + int(lease * 1000),
                PARAM + "comment": request.comment, PARAM + "properties": dict(request.properties),
            }
            for statement in self.catalog.table_ddl(database, table, columns, None, {}):
                conn.execute(statement)
            self._write_meta(conn, database, key, meta)
        logger.info("stage %s begun for %s (%s)", self._stage_id(database, key), what, purpose.value)
        return self._to_stage(database, key, meta, columns)

    # ------------------------------------------------------------ get, list, heartbeat

    def get(self, database: str, key: str) -> Stage:
        check_key(key)
        what = self._what(database, key)
        with self.catalog.connections.connection(what) as conn:
            meta = self._read(conn, database, key)
            if meta is not None:
                found = self.catalog.relation(conn, database, STAGE_TABLE_PREFIX + key)
                columns = self.catalog.columns_of(conn, found[0]) if found else []
                return self._to_stage(database, key, meta, columns)
            committed = self._find_committed(conn, database, key)
        if committed is not None:
            return committed
        raise StageNotFoundError(f"{what} is not open: it was aborted (or its lease lapsed), or never existed")

    def _raw_stages(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(schema, key, fields) of every staging table of the database: one catalog query."""
        with self.catalog.connections.connection(f"catalog {self.name}") as conn:
            rows = conn.execute(
                "SELECT n.nspname, c.relname, obj_description(c.oid, 'pg_class') FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' "
                "AND c.relname LIKE %s", (STAGE_TABLE_PREFIX.replace("_", "\\_") + "%",)).fetchall()
        found = []
        for schema, name, text in rows:
            key = name[len(STAGE_TABLE_PREFIX):]
            try:
                meta = json.loads(text or "{}")
            except ValueError:
                meta = {}
            if len(key) == _KEY_LENGTH and isinstance(meta, dict):
                found.append((schema, key, meta))
        return found

    def list_stages(self) -> list[Stage]:
        return [self._to_stage(schema, key, meta) for schema, key, meta in self._raw_stages()]

    def heartbeat(self, database: str, key: str, lease: float | None = None) -> Stage:
        check_key(key)
        lease = lease if lease is not None else self.lease
        self._check_lease(lease)
        what = self._what(database, key)
        lapsed = False
        with self.catalog.connections.connection(what) as conn, conn.transaction():
            self._lock(conn, _STAGE_LOCK, self._stage_id(database, key))
            meta = self._read(conn, database, key)
            if meta is None:
                raise StageNotFoundError(f"{what} is not open (aborted, committed, or its lease lapsed)")
            self._check_authentic(database, key, meta)
            if meta.get(PARAM + "state") != StageState.OPEN.value:
                raise StageNotFoundError(f"{what} is {str(meta.get(PARAM + 'state')).lower()}, not open")
            now = _now_ms()
            if int(meta.get(PARAM + "lease-deadline") or 0) < now:
                lapsed = True
                self._drop(conn, database, key)
            else:
                meta[PARAM + "lease"] = int(lease * 1000)
                meta[PARAM + "lease-deadline"] = now + int(lease * 1000)
                self._write_meta(conn, database, key, meta)
        if lapsed:
            self._ended(database, key, str(meta.get(PARAM + "target", "")),
                        StagePurpose.parse(str(meta.get(PARAM + "purpose"))), StageState.ABORTED, "its lease lapsed")
            raise ConflictError(f"{what}: its lease lapsed before this heartbeat; the stage is aborted")
        return self._to_stage(database, key, meta)

    # ------------------------------------------------------------ abort

    def _drop(self, conn: Any, database: str, key: str) -> None:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._q(database, STAGE_TABLE_PREFIX + key)))

    def abort(self, database: str, key: str, reason: str = "aborted", tombstone: bool = False) -> Stage:
        """Drop the staging table (``tombstone`` is accepted for the interface: a jdbc stage needs none,
        because a writer that goes on writing into a dropped table fails)."""
        check_key(key)
        what = self._what(database, key)
        with self.catalog.connections.connection(what) as conn:
            with conn.transaction():
                self._lock(conn, _STAGE_LOCK, self._stage_id(database, key))
                meta = self._read(conn, database, key)
                if meta is not None:
                    self._check_authentic(database, key, meta)
                    self._drop(conn, database, key)
            if meta is None:
                committed = self._find_committed(conn, database, key)
                if committed is not None and committed.state is StageState.COMMITTED:
                    raise ConflictError(f"{what} is committed; it cannot be aborted")
                return committed or self._ended(database, key, "", StagePurpose.CREATE, StageState.ABORTED,
                                                "no open stage (aborted already, or never existed)")
        logger.info("stage %s aborted: %s", self._stage_id(database, key), reason)
        return self._ended(database, key, str(meta.get(PARAM + "target", "")),
                           StagePurpose.parse(str(meta.get(PARAM + "purpose"))), StageState.ABORTED, reason)

    # ------------------------------------------------------------ commit

    def commit(self, database: str, key: str) -> Stage:
        """Publish the stage in one transaction (idempotent: a committed stage is found by its target's tag).

        A daemon killed during the transaction leaves the stage OPEN and the target as it was
        (PostgreSQL rolls the transaction back when the connection drops): the writer's retry of
        the commit, to this daemon restarted or to another, publishes it while its lease lasts.
        """
        check_key(key)
        what = self._what(database, key)
        outcome, lost, target, purpose = "", "", "", StagePurpose.CREATE
        with self.catalog.connections.connection(what) as conn:
            try:
                with conn.transaction():
                    # Round trips are the commit's cost: both locks in one statement, then the stage
                    # and the target read, under the locks, in one query.
                    target_hint = self._lock_stage_and_target(conn, database, key)
                    meta, existing = self._stage_and_target(conn, database, key, target_hint)
                    if meta is None:
                        found = self._find_committed(conn, database, key)
                        if found is not None and found.state is StageState.COMMITTED:
                            return found
                        if found is not None:
                            raise StageNotFoundError(f"{what} is not open: {found.message}")
                        raise StageNotFoundError(f"{what} is not open: it was aborted (or its lease lapsed), "
                                                 "or never existed")
                    self._check_authentic(database, key, meta)
                    target = str(meta[PARAM + "target"])
                    purpose = StagePurpose.parse(str(meta[PARAM + "purpose"]))
                    if int(meta.get(PARAM + "lease-deadline") or 0) < _now_ms():
                        self._drop(conn, database, key)
                        outcome = "lapsed"
                    else:
                        outcome = self._publish(conn, database, key, meta, target, purpose, existing)
                        if outcome == "lost":
                            lost = f"table {self.name}.{database}.{target} appeared meanwhile"
            except psycopg.errors.DuplicateTable:
                # A table of that name made outside catalogd (without its target lock) got in first.
                with conn.transaction():
                    self._lock(conn, _STAGE_LOCK, self._stage_id(database, key))
                    self._drop(conn, database, key)
                lost, outcome = f"table {self.name}.{database}.{target} appeared meanwhile", "lost"
        fault_point("jdbc.commit.committed")
        if outcome == "lapsed":
            self._ended(database, key, target, purpose, StageState.ABORTED, "its lease lapsed")
            raise ConflictError(f"{what}: its lease lapsed before the commit; the stage is aborted")
        if outcome == "lost":
            if purpose is StagePurpose.CREATE:
                self._ended(database, key, target, purpose, StageState.ABORTED, lost)
                raise TableAlreadyExistsError(f"{lost}; the stage is aborted")
            return self._ended(database, key, target, purpose, StageState.ABORTED, f"{lost}; nothing written")
        logger.info("stage %s committed into %s.%s.%s", self._stage_id(database, key), self.name, database, target)
        return self._ended(database, key, target, purpose, StageState.COMMITTED,
                           f"committed into {self.name}.{database}.{target}")

    def _lock_stage_and_target(self, conn: Any, database: str, key: str) -> str | None:
        """Take the stage's lock, then its target's, in one statement; the target's name (None: no stage).

        The target is read from the stage's comment in the same statement, on the snapshot taken
        before the stage's lock was granted: a stage's target is fixed (and signed) when it begins,
        so an older snapshot names the same one. No stage: no target lock (a NULL key takes none).
        """
        row = conn.execute(
            "WITH s AS (SELECT obj_description(c.oid, 'pg_class') AS meta FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s), "
            "t AS (SELECT CASE WHEN meta IS NOT NULL AND meta LIKE '{%%' "
            "THEN (meta::json ->> %s) END AS target FROM s) "
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s)), "
            "pg_advisory_xact_lock(%s, hashtext(%s || '.' || (SELECT target FROM t))), (SELECT target FROM t)",
            (database, STAGE_TABLE_PREFIX + key, PARAM + "target", _STAGE_LOCK, self._stage_id(database, key),
             TARGET_LOCK, database)).fetchone()
        return None if row is None or row[2] is None else str(row[2])

    def _stage_and_target(self, conn: Any, database: str, key: str,
                          target: str | None) -> tuple[dict[str, Any] | None, tuple[int, str, str | None] | None]:
        """The stage's fields (None: no staging table) and the target's (oid, relkind, comment)
        (None: no table or view of that name), in one catalog query."""
        stage_table = STAGE_TABLE_PREFIX + key
        rows = conn.execute(
            "SELECT c.relname, c.oid, c.relkind, obj_description(c.oid, 'pg_class') FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = ANY(%s) "
            "AND c.relkind = ANY(%s)",
            (database, [stage_table, *([target] if target else [])], list(TABLE_KINDS + VIEW_KINDS))).fetchall()
        meta: dict[str, Any] | None = None
        existing: tuple[int, str, str | None] | None = None
        for name, oid, kind, text in rows:
            if name == stage_table:
                try:
                    loaded = json.loads(text or "{}")
                except ValueError:
                    loaded = {}
                meta = loaded if isinstance(loaded, dict) else {}
            else:
                existing = (int(oid), str(kind), text)
        return meta, existing

    def _publish(self, conn: Any, database: str, key: str, meta: dict[str, Any], target: str,
                 purpose: StagePurpose, existing: tuple[int, str, str | None] | None) -> str:
        """The commit's changes, inside its transaction (both locks held; ``existing``: the target's
        oid, relkind and comment, read under them): "published", "appended", or "lost" (CREATE and
        the target exists: the stage is dropped).

        A REPLACE keeps the old target's ``catalogd.dt.`` properties (a dynamic table's
        definition and history, changed only under the same target lock), as a hive REPLACE does.
        """
        stage_table = STAGE_TABLE_PREFIX + key
        kept = decode_comment(existing[2])[1] if existing is not None else {}
        properties = {k: v for k, v in kept.items() if k.startswith(DYNAMIC_TABLE_PREFIX)}
        properties.update(meta.get(PARAM + "properties") or {})
        properties[LAST_COMMIT] = self._stage_id(database, key)
        if existing is not None and purpose in (StagePurpose.CREATE, StagePurpose.CREATE_IF_NOT_EXISTS):
            self._drop(conn, database, key)
            return "lost"
        if purpose is StagePurpose.APPEND:
            if existing is None:
                raise TableNotFoundError(f"table {self.name}.{database}.{target} is gone: nothing to append to")
            self._append(conn, database, target, stage_table, existing[0])
            return "appended"
        statements: list[sql.Composable] = []
        if existing is not None:
            if existing[1] not in ("r", "p"):
                raise InvalidArgumentError(f"{self.name}.{database}.{target} is not a table: a stage cannot "
                                           "replace it")
            statements.append(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
                self._q(database, target), sql.Identifier(stage_table + _OLD)))
        statements.append(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
            self._q(database, stage_table), sql.Identifier(target)))
        if existing is not None:
            statements.append(sql.SQL("DROP TABLE {}").format(self._q(database, stage_table + _OLD)))
        statements.append(sql.SQL("COMMENT ON TABLE {} IS {}").format(
            self._q(database, target), sql.Literal(encode_comment(meta.get(PARAM + "comment"), properties))))
        # One round trip (no parameters: PostgreSQL's simple protocol runs them in order).
        try:
            conn.execute(sql.SQL("; ").join(statements))
        except psycopg.errors.DependentObjectsStillExist:
            raise ConflictError(f"table {self.name}.{database}.{target}: views (or other objects) depend on it, "
                                "and a REPLACE publishes a new table and drops the old one: drop them first; the "
                                "stage stays open until its lease lapses") from None
        fault_point("jdbc.commit.renamed")
        return "published"

    def _append(self, conn: Any, database: str, target: str, stage_table: str, target_oid: int) -> None:
        staged = self.catalog.relation(conn, database, stage_table)
        assert staged is not None
        names = [c.name for c in self.catalog.columns_of(conn, staged[0])]
        cols = sql.SQL(", ").join(sql.Identifier(n) for n in names)
        conn.execute(sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}").format(
            self._q(database, target), cols, cols, self._q(database, stage_table)))
        self._drop(conn, database, stage_table[len(STAGE_TABLE_PREFIX):])
        text = conn.execute("SELECT obj_description(%s::oid, 'pg_class')", (target_oid,)).fetchone()[0]
        comment, properties = decode_comment(text)
        properties[LAST_COMMIT] = self._stage_id(database, stage_table[len(STAGE_TABLE_PREFIX):])
        conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
            self._q(database, target), sql.Literal(encode_comment(comment, properties))))

    # ------------------------------------------------------------ janitor

    def janitor_pass(self, startup: bool = False, fence: Callable[[], bool] | None = None) -> int:
        """Drop the stages whose lease lapsed; how many it dropped. (A commit is one transaction:
        none is ever left half done for the janitor to finish.) ``fence``: asked before each
        stage; the pass ends when it answers False (this member no longer leads)."""
        acted = 0
        now = _now_ms()
        for schema, key, meta in self._raw_stages():
            if fence is not None and not fence():
                break
            if not self._authentic(schema, STAGE_TABLE_PREFIX + key, meta):
                continue
            if int(meta.get(PARAM + "lease-deadline") or 0) < now:
                try:
                    acted += self._expire(schema, key)
                except CatalogError as e:
                    logger.warning("janitor: stage %s: %s", self._stage_id(schema, key), e)
        return acted

    def _expire(self, database: str, key: str) -> int:
        """Drop a stage whose lease lapsed (decided again under its lock: a heartbeat may have come first)."""
        with self.catalog.connections.connection(self._what(database, key)) as conn, conn.transaction():
            self._lock(conn, _STAGE_LOCK, self._stage_id(database, key))
            meta = self._read(conn, database, key)
            if meta is None or not self._authentic(database, STAGE_TABLE_PREFIX + key, meta):
                return 0
            if int(meta.get(PARAM + "lease-deadline") or 0) >= _now_ms():
                return 0
            self._drop(conn, database, key)
        logger.info("stage %s aborted: its lease lapsed", self._stage_id(database, key))
        return 1
