"""Tests for auth in catalogd.server.handler: authenticate per connection, roles per catalog, job tokens, audit.

Memory catalogs only (no metastore); the connection is a ``Session`` made current as the
Thrift server does around each call. Stage owners need a hive catalog: see the integration tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from catalogd.auth.audit import AuditLog, read_audit
from catalogd.auth.model import Authority, Role
from catalogd.gen.catalogd_thrift import ttypes as t
from catalogd.manager import CatalogManager
from catalogd.model import ReloadResult
from catalogd.server.access import Access
from catalogd.server.handler import CatalogHandler
from catalogd.server.metrics import Metrics
from catalogd.server.session import Session, reset_session, use_session

TOKENS = {"ana": "reader-token-0123456789", "etl": "writer-token-0123456789", "ops": "admin-token-0123456789"}
GRANTS = {("ana", "*"): Role.READER, ("etl", "main"): Role.WRITER, ("ops", "*"): Role.ADMIN}


@pytest.fixture
def manager(memory_manager: Callable[[str], CatalogManager]) -> CatalogManager:
    return memory_manager(
        """\
  - name: main
    type: memory
    default: true
  - name: other
    type: memory
"""
    )


class Rig:
    def __init__(self, manager: CatalogManager, tmp_path: Path, enabled: bool = True) -> None:
        self.authority = Authority(enabled, dict(TOKENS), set(TOKENS), dict(GRANTS))
        self.audit_path = tmp_path / "audit" / "audit.jsonl"
        self.audit = AuditLog(self.audit_path)
        self.access = Access(self.authority, self.audit, lambda: manager.default_catalog, manager.catalogs)
        self.handler = CatalogHandler(manager, Metrics(), reload=ReloadResult, access=self.access)
        self.manager = manager

    def call(self, session: Session, rpc: str, *args: Any) -> Any:
        """``rpc`` as the Thrift server runs it for ``session``'s connection."""
        token = use_session(session)
        try:
            return getattr(self.handler, rpc)(*args)
        finally:
            reset_session(token)

    def connect(self, token: str | None) -> Session:
        session = Session("10.0.0.7:5000")
        if token is not None:
            self.call(session, "authenticate", token)
        return session

    def lines(self) -> list[dict[str, Any]]:
        """Writes and denials (each in its own file), in time order."""
        return read_audit(self.audit_path, 100_000)

    def text(self) -> str:
        denials = self.audit_path.with_name("audit-denied.jsonl")
        return self.audit_path.read_text() + (denials.read_text() if denials.exists() else "")


@pytest.fixture
def rig(manager: CatalogManager, tmp_path: Path) -> Iterator[Rig]:
    r = Rig(manager, tmp_path)
    yield r
    r.audit.close()


def db(name: str, catalog: str = "main") -> t.Database:
    return t.Database(name=name, catalog=catalog)


def denied(call: Callable[[], Any]) -> str:
    with pytest.raises(t.PermissionDenied) as info:
        call()
    return str(info.value.message)


def test_a_connection_that_never_authenticated_may_only_ping(rig: Rig) -> None:
    session = rig.connect(None)
    assert rig.call(session, "ping").startswith("catalogd ")
    assert "authenticate first" in denied(lambda: rig.call(session, "listDatabases", "main"))
    assert "authenticate first" in denied(lambda: rig.call(session, "createDatabase", db("x"), False))
    assert "x" not in rig.manager.list_databases("main")
    last = rig.lines()[-1]
    assert (last["principal"], last["surface"], last["client"], last["operation"], last["object"],
            last["outcome"]) == (None, "thrift", "10.0.0.7:5000", "createDatabase", "main.x", "denied")


def test_a_wrong_token_is_refused_without_echoing_it_and_undoes_an_earlier_authentication(rig: Rig) -> None:
    session = rig.connect(TOKENS["etl"])
    assert session.principal is not None and session.principal.name == "etl"
    message = denied(lambda: rig.call(session, "authenticate", "not-the-token-at-all"))
    assert message == "the token is not valid"
    assert session.principal is None
    assert "authenticate first" in denied(lambda: rig.call(session, "listDatabases", "main"))
    text = rig.text()
    assert "not-the-token-at-all" not in text and TOKENS["etl"] not in text
    assert rig.lines()[0]["operation"] == "authenticate" and rig.lines()[0]["outcome"] == "denied"


def test_authenticate_answers_the_principal(rig: Rig) -> None:
    session = Session("peer")
    assert rig.call(session, "authenticate", TOKENS["ops"]) == "ops"


def test_a_reader_reads_and_every_kind_of_write_is_denied(rig: Rig) -> None:
    writer = rig.connect(TOKENS["etl"])
    rig.call(writer, "createDatabase", db("sales"), False)
    reader = rig.connect(TOKENS["ana"])
    assert "sales" in rig.call(reader, "listDatabases", "main")
    path = t.NamespacePath(catalog="main", database="sales")
    table = t.Table(name="t", database="sales", catalog="main", columns=[t.Column(name="id", type="bigint")])
    writes: list[tuple[str, tuple[Any, ...]]] = [
        ("createDatabase", (db("new"), False)),
        ("dropDatabase", (path, False, True)),
        ("alterDatabase", (path, t.DatabaseUpdate(comment="x"))),
        ("createTable", (table, False)),
        ("dropTable", (t.ObjectPath("main", "sales", "t"), True, False)),
    ]
    for rpc, args in writes:
        message = denied(lambda rpc=rpc, args=args: rig.call(reader, rpc, *args))  # type: ignore[misc]
        assert message == f"ana needs role writer on catalog main for {rpc}"
    assert "new" not in rig.manager.list_databases("main")
    assert "sales" in rig.manager.list_databases("main")
    outcomes = [(line["principal"], line["operation"], line["outcome"]) for line in rig.lines()]
    assert outcomes[0] == ("etl", "createDatabase", "ok")
    assert outcomes[1:] == [("ana", rpc, "denied") for rpc, _ in writes]


def test_a_writer_writes_its_catalog_only_and_cannot_reload(rig: Rig) -> None:
    writer = rig.connect(TOKENS["etl"])
    rig.call(writer, "createDatabase", db("mine"), False)
    # An empty catalog means the default one, main: the writer's.
    rig.call(writer, "createDatabase", db("also", catalog=""), False)
    assert denied(lambda: rig.call(writer, "createDatabase", db("theirs", "other"), False)) == \
        "etl needs role writer on catalog other for createDatabase"
    assert denied(lambda: rig.call(writer, "listDatabases", "other")) == \
        "etl needs role reader on catalog other for listDatabases"
    assert denied(lambda: rig.call(writer, "reloadConfig")) == "etl needs role admin on catalog * for reloadConfig"
    admin = rig.connect(TOKENS["ops"])
    rig.call(admin, "reloadConfig")
    rig.call(admin, "createDatabase", db("theirs", "other"), False)


def test_dropping_what_catalogd_did_not_create_needs_an_admin(rig: Rig) -> None:
    writer, admin = rig.connect(TOKENS["etl"]), rig.connect(TOKENS["ops"])
    for name in ("a", "b"):
        rig.call(writer, "createDatabase", db(name), False)
    path = t.NamespacePath(catalog="main", database="a")
    assert denied(lambda: rig.call(writer, "dropDatabase", path, False, True, True)) == \
        "etl needs role admin on catalog main for dropDatabase with dropForeign (objects catalogd did not create)"
    table = t.ObjectPath(catalog="main", database="a", name="t")
    assert "for dropTable with dropForeign" in denied(lambda: rig.call(writer, "dropTable", table, True, False, True))
    rig.call(writer, "dropDatabase", path, False, True, False)
    rig.call(admin, "dropDatabase", t.NamespacePath(catalog="main", database="b"), False, True, True)
    assert rig.call(admin, "listDatabases", "main") == ["default"]


def test_list_catalogs_shows_only_what_the_principal_reads(rig: Rig) -> None:
    assert [c.name for c in rig.call(rig.connect(TOKENS["etl"]), "listCatalogs")] == ["main"]
    assert [c.name for c in rig.call(rig.connect(TOKENS["ana"]), "listCatalogs")] == ["main", "other"]


def test_statements_need_what_their_verb_needs(rig: Rig) -> None:
    writer = rig.connect(TOKENS["etl"])
    assert "needs role admin on catalog main for executeStatement (DropDynamicTable)" in denied(
        lambda: rig.call(writer, "executeStatement", "DROP DYNAMIC TABLE main.db.t"))
    assert "needs role admin" in denied(
        lambda: rig.call(writer, "executeStatement", "ALTER DYNAMIC TABLE main.db.t SUSPEND"))
    # REFRESH is a writer's: it passes the check and reaches the (absent) dynamic tables.
    with pytest.raises(t.Unsupported):
        rig.call(writer, "executeStatement", "ALTER DYNAMIC TABLE main.db.t REFRESH")
    assert "needs role writer" in denied(
        lambda: rig.call(rig.connect(TOKENS["ana"]), "refreshDynamicTables", t.RefreshRequest(tables=["main.db.t"])))
    # A new query alters the table: admin, whichever statement brings it.
    for text in ("ALTER DYNAMIC TABLE main.db.t AS SELECT 1 AS a",
                 "CREATE OR ALTER MATERIALIZED TABLE main.db.t AS SELECT 1 AS a"):
        assert "needs role admin" in denied(lambda text=text: rig.call(writer, "executeStatement", text))
    # SHOW CREATE only reads: a reader passes the check.
    with pytest.raises(t.Unsupported):
        rig.call(rig.connect(TOKENS["ana"]), "executeStatement", "SHOW CREATE DYNAMIC TABLE main.db.t")


def test_a_job_token_reads_and_writes_only_its_table(rig: Rig) -> None:
    admin = rig.connect(TOKENS["ops"])
    rig.call(admin, "createDatabase", db("db"), False)
    token = rig.authority.mint_job_token("main", "db", "t", 60.0)
    job = rig.connect(token)
    assert job.principal is not None and job.principal.name == "job:main.db.t"
    assert "db" in rig.call(job, "listDatabases", "main")
    assert "refresh job's token" in denied(lambda: rig.call(job, "createDatabase", db("x"), False))
    assert "refresh job's token" in denied(
        lambda: rig.call(job, "dropPartition", t.ObjectPath("main", "db", "other"), {"p": "1"}, True, False))
    assert "refresh job's token" in denied(
        lambda: rig.call(job, "refreshDynamicTables", t.RefreshRequest(tables=["main.db.t"])))
    # Its own table's partition: past the check, to the catalog (a memory catalog has no partitions).
    with pytest.raises(t.Unsupported):
        rig.call(job, "dropPartition", t.ObjectPath("main", "db", "t"), {"p": "1"}, True, False)
    rig.authority.revoke_job_token(token)
    assert denied(lambda: rig.call(Session("p"), "authenticate", token)) == "the token is not valid"


def test_auth_off_lets_everyone_do_everything_and_audits_writes_as_anonymous(manager: CatalogManager,
                                                                            tmp_path: Path) -> None:
    rig = Rig(manager, tmp_path, enabled=False)
    session = rig.connect(None)
    rig.call(session, "createDatabase", db("open"), False)
    rig.call(session, "reloadConfig")
    assert rig.call(session, "authenticate", "anything-at-all") == "anonymous"
    assert [(line["principal"], line["operation"], line["object"], line["outcome"]) for line in rig.lines()] == [
        ("anonymous", "createDatabase", "main.open", "ok"), ("anonymous", "reloadConfig", None, "ok")]
    rig.audit.close()


def test_a_failed_write_is_audited_as_an_error(rig: Rig) -> None:
    writer = rig.connect(TOKENS["etl"])
    with pytest.raises(t.NotFound):
        rig.call(writer, "dropDatabase", t.NamespacePath("main", "nope"), False, False)
    last = rig.lines()[-1]
    assert (last["principal"], last["operation"], last["object"], last["outcome"]) == (
        "etl", "dropDatabase", "main.nope", "error")
    assert last["detail"].startswith("not-found: ")


def test_a_job_token_cannot_touch_another_table_s_stage(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    from catalogd.model import Stage, StagePurpose, StageState

    stages = {
        "main.db.00000000000000aa": Stage(id="main.db.00000000000000aa", catalog="main", database="db",
                                          target="other", purpose=StagePurpose.REPLACE, state=StageState.OPEN,
                                          owner="etl"),
        "main.db.00000000000000bb": Stage(id="main.db.00000000000000bb", catalog="main", database="db",
                                          target="t", purpose=StagePurpose.REPLACE, state=StageState.OPEN,
                                          owner="job:main.db.t"),
    }
    aborted: list[str] = []
    monkeypatch.setattr(rig.manager, "get_stage", lambda stage_id: stages[stage_id])
    monkeypatch.setattr(rig.manager, "abort_stage",
                        lambda stage_id, writer_stopped=False: aborted.append(stage_id) or stages[stage_id])
    job = rig.connect(rig.authority.mint_job_token("main", "db", "t", 60.0))
    for rpc, args in (("abortStage", (False,)), ("commitStage", ()), ("heartbeatStage", (0,))):
        assert "refresh job's token" in denied(lambda rpc=rpc, args=args: rig.call(  # type: ignore[misc]
            job, rpc, "main.db.00000000000000aa", *args))
    other_table = t.StageRequest(target=t.ObjectPath("main", "db", "other"), purpose=t.StagePurpose.REPLACE)
    assert "refresh job's token" in denied(lambda: rig.call(job, "beginStage", other_table))
    # Its own table's stage it may end.
    rig.call(job, "abortStage", "main.db.00000000000000bb", False)
    assert aborted == ["main.db.00000000000000bb"]
    # A writer may not end the job's stage; an admin may.
    assert "etl needs role admin on catalog main for abortStage" in denied(
        lambda: rig.call(rig.connect(TOKENS["etl"]), "abortStage", "main.db.00000000000000bb", False))
    rig.call(rig.connect(TOKENS["ops"]), "abortStage", "main.db.00000000000000bb", False)
    assert aborted == ["main.db.00000000000000bb"] * 2
