"""Authentication and roles on the Thrift API, the CLI and HTTP of a real daemon, with stage owners
and a refresh job that authenticates with the token the daemon minted for its run.

The module's daemon (``authd``) has ``auth.enabled: true`` with tokens from environment
variables; its ``main`` catalog is a remote catalog on the session daemon's metastore (it starts
in seconds and stages are real hive stages). Principals: ``etl`` and ``etl2`` writers on main,
``ana`` reader everywhere, ``ops`` admin everywhere.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from catalogd.auth.audit import read_audit
from catalogd.client import CatalogClient
from catalogd.errors import PermissionDeniedError
from catalogd.model import RunStatus, StageState

from .conftest import CliResult
from .helpers import CATALOGD, Daemon, clean_env, free_port, metastore_key_file, start_daemon, write_config

pytestmark = pytest.mark.integration

TOKENS = {
    "etl": "etl-token-5f0d6c1e9a2b4c7d8e",
    "etl2": "etl2-token-7a1b2c3d4e5f6a7b8c",
    "ana": "ana-token-0c9b8a7d6e5f4a3b2c",
    "ops": "ops-token-1d2c3b4a5e6f7a8b9c",
}
SPARK = {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "512m",
                                        "spark.sql.session.timeZone": "UTC"}}


def _env_name(principal: str) -> str:
    return f"CATALOGD_TEST_{principal.upper()}_TOKEN"


@pytest.fixture(scope="module")
def authd(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with CatalogClient(daemon.address) as c:
        metastore = c.get_catalog("main").metastore
    root = tmp_path_factory.mktemp("authd")
    auth = {
        "enabled": True,
        "principals": [{"name": name, "token": f"${{{_env_name(name)}}}"} for name in TOKENS],
        "grants": [{"principal": "etl", "catalog": "main", "role": "writer"},
                   {"principal": "etl2", "catalog": "main", "role": "writer"},
                   {"principal": "ana", "catalog": "*", "role": "reader"},
                   {"principal": "ops", "catalog": "*", "role": "admin"}],
        # Every test here fails on purpose from 127.0.0.1; the back-off has its own test
        # (test_auth_throttle) and would make these wait out lockouts.
        "throttle": {"base-delay": "0s"},
    }
    config = write_config(root / "authd.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
                          catalogs=[{"name": "main", "type": "hive", "default": True,
                                     "connection": {"hive.metastore.uris": metastore},
                                     "metastore-key-file": str(metastore_key_file(daemon.data_dir))},
                                    {"name": "scratch", "type": "memory"}],
                          extra={"auth": auth, "spark": SPARK})
    proc = start_daemon(config, root / "data", root / "authd.log",
                        env={_env_name(name): token for name, token in TOKENS.items()})
    yield proc
    code = proc.stop()
    assert code == 0, proc.log()


def connect(authd: Daemon, principal: str | None = None, token: str | None = None) -> CatalogClient:
    given = TOKENS[principal] if principal else token
    # An empty token, not None: the client must not fall back to a CATALOGD_TOKEN of the test run.
    return CatalogClient(authd.address, timeout=120.0, token=given or "")


@pytest.fixture
def etl(authd: Daemon) -> Iterator[CatalogClient]:
    with connect(authd, "etl") as c:
        yield c


@pytest.fixture
def ops(authd: Daemon) -> Iterator[CatalogClient]:
    with connect(authd, "ops") as c:
        yield c


@pytest.fixture
def auth_db(etl: CatalogClient, ops: CatalogClient, unique_name: Callable[[str], str]) -> Iterator[str]:
    name = f"main.{unique_name('auth')}"
    etl.create_database(name)
    yield name
    for stage in ops.list_stages("main"):
        if stage.database == name.split(".")[1] and stage.state in (StageState.OPEN, StageState.COMMITTING):
            ops.abort_stage(stage.id)
    ops.drop_database(name, if_exists=True, cascade=True)


def cli(authd: Daemon, *args: str, token: str | None = None, env_token: str | None = None) -> CliResult:
    env = {k: v for k, v in clean_env().items() if k != "CATALOGD_TOKEN"}
    if env_token is not None:
        env["CATALOGD_TOKEN"] = env_token
    argv = [str(CATALOGD), "--server", authd.address, *(["--token", token] if token is not None else []), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    return CliResult(done.returncode, done.stdout, done.stderr)


def http(authd: Daemon, method: str, path: str, token: str | None = None,
         body: Any = None) -> tuple[int, dict[str, str], str]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(authd.http + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read().decode()


# ---------------------------------------------------------------- the Thrift API

def _writes(db: str, stage_id: str) -> list[tuple[str, Callable[[CatalogClient], Any]]]:
    """Every kind of write, each as a call on a client."""
    table = f"{db}.kept"
    return [
        ("create database", lambda c: c.create_database(f"{db}_new")),
        ("alter database", lambda c: c.alter_database(db, comment="changed")),
        ("drop database", lambda c: c.drop_database(db, cascade=True)),
        ("create table", lambda c: c.create_table(f"{db}.new", "id bigint")),
        ("alter table", lambda c: c.alter_table(table, comment="changed")),
        ("rename table", lambda c: c.rename_table(table, "renamed")),
        ("drop table", lambda c: c.drop_table(table)),
        ("create view", lambda c: c.create_view(f"{db}.v", "SELECT 1 AS x")),
        ("begin stage", lambda c: c.begin_stage(f"{db}.staged", "id bigint")),
        ("heartbeat stage", lambda c: c.heartbeat_stage(stage_id)),
        ("commit stage", lambda c: c.commit_stage(stage_id)),
        ("abort stage", lambda c: c.abort_stage(stage_id)),
        ("create dynamic table", lambda c: c.create_dynamic_table(f"{db}.dt", f"SELECT * FROM {table}", "1 hour")),
        ("refresh", lambda c: c.refresh_dynamic_tables([f"{db}.dt"])),
        ("drop dynamic table", lambda c: c.drop_dynamic_table(f"{db}.dt", if_exists=True)),
        ("statement", lambda c: c.sql(f"DROP DYNAMIC TABLE IF EXISTS {db}.dt")),
        ("reload", lambda c: c.reload_config()),
    ]


def _state(client: CatalogClient, db: str, stage_id: str) -> Any:
    table = client.get_table(f"{db}.kept")
    return (sorted(client.list_databases("main")), client.list_tables(db), table.comment,
            client.get_database(db).comment, client.get_stage(stage_id).state)


@pytest.mark.parametrize("who", ["no token", "a wrong token", "a reader"])
def test_every_kind_of_write_is_denied_and_changes_nothing(authd: Daemon, etl: CatalogClient, ops: CatalogClient,
                                                           auth_db: str, who: str) -> None:
    etl.create_table(f"{auth_db}.kept", "id bigint")
    stage = etl.begin_stage(f"{auth_db}.target", "id bigint")
    before = _state(ops, auth_db, stage.id)
    token = {"no token": "", "a wrong token": "not-a-token-of-anyone-at-all", "a reader": TOKENS["ana"]}[who]
    with connect(authd, token=token) as caller:
        for what, write in _writes(auth_db, stage.id):
            with pytest.raises(PermissionDeniedError) as info:
                write(caller)
            message = info.value.message
            if who == "no token":
                assert message.startswith("authenticate first: no token given"), (what, message)
            elif who == "a wrong token":
                assert message == "the token is not valid", (what, message)
            else:
                assert message.startswith("ana needs role "), (what, message)
    assert _state(ops, auth_db, stage.id) == before
    assert before[-1] is StageState.OPEN


def test_a_writer_cannot_reload_or_touch_another_s_stage_an_admin_can(authd: Daemon, etl: CatalogClient,
                                                                     ops: CatalogClient, auth_db: str) -> None:
    stage = etl.begin_stage(f"{auth_db}.target", "id bigint")
    assert stage.owner == "etl"  # the principal, whatever the client said
    with connect(authd, "etl2") as other:
        for what, call in (("heartbeat", lambda: other.heartbeat_stage(stage.id)),
                           ("commit", lambda: other.commit_stage(stage.id)),
                           ("abort", lambda: other.abort_stage(stage.id))):
            with pytest.raises(PermissionDeniedError, match=f"etl2 needs role admin on catalog main for "
                                                            f"{what}Stage of stage {stage.id}, which etl began"):
                call()
        with pytest.raises(PermissionDeniedError, match="etl2 needs role admin on catalog \\* for reloadConfig"):
            other.reload_config()
        # Reading another's stage is a reader's right.
        assert other.get_stage(stage.id).state is StageState.OPEN
        # Its own stage it may end.
        own = other.begin_stage(f"{auth_db}.mine", "id bigint")
        assert other.abort_stage(own.id).state is StageState.ABORTED
    assert etl.heartbeat_stage(stage.id).state is StageState.OPEN
    assert ops.abort_stage(stage.id).state is StageState.ABORTED
    assert ops.reload_config().source


# ---------------------------------------------------------------- the CLI

def test_the_cli_takes_a_token_and_refuses_in_one_line(authd: Daemon, auth_db: str) -> None:
    done = cli(authd, "db", "list", "main")
    assert done.code == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: permission-denied: authenticate first: no token given (pass --token or set CATALOGD_TOKEN)"]
    done = cli(authd, "db", "list", "main", token="not-a-token-of-anyone-at-all")
    assert (done.code, done.stderr) == (1, "error: permission-denied: the token is not valid\n")
    done = cli(authd, "db", "list", "main", env_token=TOKENS["ana"])
    assert done.code == 0, done.stderr
    assert auth_db.split(".")[1] in done.stdout.split()
    done = cli(authd, "db", "create", f"{auth_db}_cli", env_token=TOKENS["ana"])
    assert (done.code, done.stderr) == (
        1, "error: permission-denied: ana needs role writer on catalog main for createDatabase\n")
    # --token wins over the environment.
    done = cli(authd, "db", "create", f"{auth_db}_cli", token=TOKENS["etl"], env_token=TOKENS["ana"])
    assert done.code == 0, done.stderr
    assert cli(authd, "db", "drop", f"{auth_db}_cli", token=TOKENS["etl"]).code == 0


# ---------------------------------------------------------------- HTTP

def test_http_wants_a_bearer_token_and_the_role(authd: Daemon, auth_db: str) -> None:
    assert http(authd, "GET", "/healthz")[0] == 200
    assert http(authd, "GET", "/readyz")[0] == 200
    status, headers, body = http(authd, "GET", "/metrics")
    assert status == 401 and headers.get("www-authenticate") == "Bearer"
    assert json.loads(body)["error"]["kind"] == "permission-denied"
    assert http(authd, "GET", "/metrics", "not-a-token-of-anyone-at-all")[0] == 401
    status, _, body = http(authd, "GET", "/metrics", TOKENS["ana"])
    assert status == 200 and "catalogd_rpc_requests_total" in body
    refresh = {"tables": [f"{auth_db}.nothing"]}
    status, _, body = http(authd, "POST", "/v3/dynamic-tables/refresh", TOKENS["ana"], refresh)
    assert status == 403, body
    assert json.loads(body)["error"]["message"] == (
        "ana needs role writer on catalog main for POST /v3/dynamic-tables/refresh")
    # A writer passes the check and reaches the table, which is not there.
    status, _, body = http(authd, "POST", "/v3/dynamic-tables/refresh", TOKENS["etl"], refresh)
    assert status == 404, body


# ---------------------------------------------------------------- refresh jobs, and no token anywhere

def test_a_refresh_job_authenticates_with_its_minted_token_and_no_token_is_written_anywhere(
        authd: Daemon, etl: CatalogClient, auth_db: str) -> None:
    source = f"{auth_db}.src"
    etl.create_table(source, "id bigint")
    name = f"{auth_db}.dt"
    etl.create_dynamic_table(name, f"SELECT id FROM {source}", "1 day")
    job = etl.refresh_dynamic_tables([name])
    done = etl.wait_refresh_job(job.id, timeout=300.0)
    assert done.status is RunStatus.SUCCEEDED, (done.error, authd.log(80))
    # The job began and committed its stage as its own principal, with the token minted for its run.
    entries = _audit(authd)
    mine = {(e["operation"], e["outcome"]) for e in entries if e["principal"] == f"job:{name}"}
    assert {("beginStage", "ok"), ("commitStage", "ok")} <= mine, entries[-10:]
    with connect(authd, "ops") as ops:
        ops.drop_dynamic_table(name)
    _no_token_anywhere(authd)


def _audit(authd: Daemon) -> list[dict[str, Any]]:
    """Writes and denials (each in its own file), in time order."""
    return read_audit(authd.data_dir / "audit" / "audit.jsonl", 100_000)


def _no_token_anywhere(authd: Daemon) -> None:
    """Every file the daemon and its jobs wrote, and its command line: no token of a principal."""
    files = [authd.log_path, *(p for p in authd.data_dir.rglob("*") if p.is_file())]
    assert any(p.name == "job.log" for p in files), "no job ran"
    assert any(p.name == "audit.jsonl" for p in files)
    for path in files:
        data = path.read_bytes()
        for name, token in TOKENS.items():
            assert token.encode() not in data, f"{name}'s token in {path}"
    cmdline = Path(f"/proc/{authd.pid}/cmdline").read_bytes()
    assert not any(token.encode() in cmdline for token in TOKENS.values())


def test_the_audit_log_has_the_denials_and_the_writes(authd: Daemon, etl: CatalogClient, auth_db: str) -> None:
    with connect(authd, "ana") as ana, pytest.raises(PermissionDeniedError):
        ana.drop_database(auth_db, cascade=True)
    etl.create_table(f"{auth_db}.audited", "id bigint")

    def found() -> tuple[dict[str, Any], dict[str, Any]] | None:
        entries = _audit(authd)
        denied = [e for e in entries if e["operation"] == "dropDatabase" and e["object"] == auth_db]
        wrote = [e for e in entries if e["operation"] == "createTable" and e["object"] == f"{auth_db}.audited"]
        return (denied[-1], wrote[-1]) if denied and wrote else None

    denied, wrote = wait_until(found, 30.0, "the audit lines")
    assert {k: denied[k] for k in ("principal", "surface", "outcome", "detail")} == {
        "principal": "ana", "surface": "thrift", "outcome": "denied",
        "detail": "ana needs role writer on catalog main for dropDatabase"}
    assert denied["client"].startswith("127.0.0.1:")
    assert {k: wrote[k] for k in ("principal", "surface", "outcome", "detail")} == {
        "principal": "etl", "surface": "thrift", "outcome": "ok", "detail": None}


# ---------------------------------------------------------------- the HMS endpoint: identity proven by default

def test_an_hms_client_that_only_claims_admin_with_set_ugi_is_refused(authd: Daemon, ops: CatalogClient,
                                                                      unique_name: Callable[[str], str]) -> None:
    """Issue 31 row 10: with auth on and neither Kerberos nor client certificates, set_ugi("ops")
    made a client admin (it created and dropped databases). A user only asserted is refused now
    unless auth.trust-asserted-users trusts it (this daemon keeps the default, none)."""
    from catalogd.hive_idl import ttypes

    from .helpers import hms_connection

    victim = unique_name("victim")
    ops.create_database(f"main.{victim}", comment="made for the purpose")
    try:
        with hms_connection(authd.hms_address, "ops") as claimed:
            for call in (lambda: claimed.drop_database(victim, True, True),
                         lambda: claimed.create_database(ttypes.Database(name=f"{victim}_new", parameters={})),
                         lambda: claimed.get_all_databases()):
                with pytest.raises(ttypes.MetaException,
                                   match=r"user 'ops' is only asserted by set_ugi, which auth\.trust-asserted-users "
                                         r"\(none\) does not trust: authenticate with Kerberos"):
                    call()
        databases = ops.list_databases("main")
        assert victim in databases and f"{victim}_new" not in databases
        assert ops.get_database(f"main.{victim}").comment == "made for the purpose"

        def denial() -> dict[str, Any] | None:
            found = [e for e in _audit(authd) if e["surface"] == "hms" and e["operation"] == "drop_database"
                     and e["outcome"] == "denied" and "only asserted" in (e.get("detail") or "")]
            return found[-1] if found else None

        # Audited under the claimed name, as what it is: a denial.
        assert wait_until(denial, 30.0, "the denial's audit line")["principal"] == "ops"
    finally:
        ops.drop_database(f"main.{victim}", if_exists=True, cascade=True)
