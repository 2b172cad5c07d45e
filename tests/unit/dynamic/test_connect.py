"""The connect engine's server supervision, with a stand-in for spark-submit that listens
like a Spark Connect server (no JVM): start, token, death, restart with backoff."""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from polling import wait_until

from catalogd.config import parse_config
from catalogd.dynamic import connect
from catalogd.errors import CatalogError, ConfigError, InvalidArgumentError, UnsupportedError
from catalogd.spark import plugin

FAKE_SERVER = r'''
import os, re, socket, sys, time
args = sys.argv[1:]
props = open(args[args.index("--properties-file") + 1]).read()
port = int(re.search(r"spark.connect.grpc.binding.port (\d+)", props).group(1))
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "seen.txt"), "a") as f:
    f.write(" ".join(args) + "\n" + os.environ.get("SPARK_CONNECT_AUTHENTICATE_TOKEN", "") + "\n")
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", port)); s.listen()
print(f"INFO SparkConnectServer: Spark Connect server started at: 127.0.0.1:{port}", flush=True)
while True:
    time.sleep(1)
'''


@pytest.fixture
def fake_spark_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "spark"
    (home / "bin").mkdir(parents=True)
    (home / "jars").mkdir()
    (home / "bin" / "fake.py").write_text(FAKE_SERVER)
    script = home / "bin" / "spark-submit"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} "$(dirname "$0")/fake.py" "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("SPARK_HOME", str(home))
    return home


def test_without_catalogd_s_server_jar_spark_s_own_server_starts_with_a_warning(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def missing() -> Path:
        raise UnsupportedError("catalogd's Spark Connect server is not built and no javac was found: run make")

    monkeypatch.setattr(plugin, "connect_server_jar", missing)
    with caplog.at_level(logging.WARNING, logger=connect.__name__):
        assert connect.server_main() == (connect.SPARK_SERVER_CLASS, None)
    assert "no javac" in caplog.text and "compiles its query's code again" in caplog.text


def test_catalogd_s_server_is_the_one_started_when_its_jar_is_there(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    jar = tmp_path / "catalogd-connect.jar"
    monkeypatch.setattr(plugin, "connect_server_jar", lambda: jar)
    assert connect.server_main() == ("catalogd.connect.ConnectServer", jar)


def test_the_server_starts_with_a_secret_token_dies_and_is_restarted(fake_spark_home: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connect, "_MIN_BACKOFF", 0.2)
    jar = tmp_path / "catalogd-connect.jar"
    monkeypatch.setattr(plugin, "connect_server_jar", lambda: jar)
    engine = connect.ConnectEngine("local[1]", tmp_path / "connect")
    server = engine.server({"spark.hadoop.hive.metastore.uris": "thrift://h:1"})
    assert engine.server({"spark.hadoop.hive.metastore.uris": "thrift://h:1"}) is server
    try:
        pid = wait_until(lambda: server.pid if server.alive(0) else None, 30, "the server to listen", every=0.1)
        seen = (fake_spark_home / "bin" / "seen.txt").read_text().splitlines()
        # catalogd's own server class, from its jar (the application's resource, last).
        assert f"--class {plugin.CONNECT_SERVER_CLASS}" in seen[0] and seen[0].endswith(f" {jar}")
        token = seen[1]
        assert len(token) >= 24 and token not in seen[0], "the token is in the environment, not the command line"
        server_dir = tmp_path / "connect" / "server-0"
        assert stat.S_IMODE(server_dir.stat().st_mode) == 0o700
        assert token not in (server_dir / "spark.properties").read_text()
        assert int((server_dir / "server.pid").read_text()) == pid

        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not server.alive(0), 30, "the death noticed", every=0.1)
        again = wait_until(lambda: server.pid if server.alive(1) else None, 30, "the restart", every=0.1)
        assert again != pid and server.restarts == 1
        assert (fake_spark_home / "bin" / "seen.txt").read_text().splitlines()[3] != token, "a new token per start"
    finally:
        engine.close(1.0)
    assert server.pid is None


def test_a_jdbc_password_goes_to_the_server_s_own_password_file(fake_spark_home: Path, tmp_path: Path) -> None:
    """Issue 31, row 12: not a session setting (handed back redacted) nor a JDBC option (logged
    with the run's plan): a 0600 file the server's environment names, gone with the server."""
    engine = connect.ConnectEngine("local[1]", tmp_path / "connect")
    server = engine.server({})
    try:
        pid = wait_until(lambda: server.pid if server.alive(0) else None, 30, "the server to listen", every=0.1)
        path = tmp_path / "connect" / "server-0" / "pgpass"
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"PGPASSFILE={path}".encode() in environ
        assert path.read_text() == "" and stat.S_IMODE(path.stat().st_mode) == 0o600
        server.give_jdbc_password("jdbc:postgresql://db:5433/x", "etl", "s3cret")
        assert path.read_text() == "db:5433:*:etl:s3cret\n" and stat.S_IMODE(path.stat().st_mode) == 0o600
        assert "s3cret" not in (path.parent / "spark.properties").read_text()
    finally:
        engine.close(1.0)
    assert not path.exists()
    outside = connect.ConnectServer("local[1]", {}, tmp_path / "remote", remote="sc://elsewhere:15002")
    with pytest.raises(UnsupportedError, match="outside"):
        outside.give_jdbc_password("jdbc:postgresql://db/x", "etl", "s3cret")
    assert not (tmp_path / "remote").exists()


def test_a_session_on_a_closed_engine_is_refused(tmp_path: Path) -> None:
    engine = connect.ConnectEngine("local[1]", tmp_path / "connect", remote="sc://spark.example:15002/;token=t")
    server = engine.server({})
    engine.close(1.0)
    with pytest.raises(Exception, match="stopping"):
        server.session(timeout=0.0)


def test_urls_lose_their_token_when_shown() -> None:
    assert connect.redact_url("sc://localhost:1234/;token=secret") == "sc://localhost:1234"
    engine = connect.ConnectEngine("local[1]", Path("/nonexistent"), remote="sc://h:15002/;token=secret")
    assert "secret" not in engine.describe()


def test_engine_settings() -> None:
    base = "catalogs:\n  - {name: s, type: memory}\n"
    default = parse_config(base).spark
    # submit stays the default: nothing resident between runs, each run in its own JVM.
    assert (default.engine, default.remote, default.connect_port) == ("submit", None, 0)
    chosen = parse_config(base + "spark: {engine: CONNECT, remote: 'sc://h:15002', connect-port: 15002}\n").spark
    assert (chosen.engine, chosen.remote, chosen.connect_port) == ("connect", "sc://h:15002", 15002)
    for bad in ("spark: {engine: yarn}", "spark: {remote: 'http://h:1'}", "spark: {connect-port: 70000}"):
        with pytest.raises(ConfigError):
            parse_config(base + bad + "\n")


class _FakeSession:
    def __init__(self) -> None:
        self.interrupted = False
        self.settings: dict[str, str] = {}
        self.conf = self

    def _set_all(self, configs: dict[str, str], silent: bool) -> None:
        self.settings.update(configs)

    def interruptAll(self) -> None:
        self.interrupted = True


class _FakeServer:
    """What a trigger loop needs of a ConnectServer."""

    pid = 4242
    application_id = "local-1"

    def __init__(self) -> None:
        self.sessions: list[_FakeSession] = []
        self.released = 0

    def session(self, timeout: float, fresh: bool = False) -> tuple[_FakeSession, int]:
        self.sessions.append(_FakeSession())
        return self.sessions[-1], 0

    def release(self, session: object, generation: int) -> None:
        self.released += 1

    def alive(self, generation: int) -> bool:
        return True


class _FakeClient:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def close(self) -> None:
        pass


def _spec(tmp_path: Path, name: str) -> dict[str, object]:
    work = tmp_path / name
    work.mkdir()
    return {"table": f"main.db.{name}", "daemon": "127.0.0.1:1", "trigger_seconds": 0.05, "sources": [],
            "checkpoint": str(work / "checkpoint"), "status_file": str(work / "status.json"), "work": work}


def test_trigger_loops_fire_stop_one_at_a_time_and_report_a_failure(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import catalogd.client
    from catalogd.dynamic import job

    fired: dict[str, int] = {}

    def trigger(spark: object, client: object, state: job._Continuous, batch_id: int) -> None:
        table = state.spec["table"]
        fired[table] = fired.get(table, 0) + 1
        if table.endswith("bad") and batch_id == 2:
            raise RuntimeError("boom")

    monkeypatch.setattr(job, "connect_trigger", trigger)
    monkeypatch.setattr(catalogd.client, "CatalogClient", _FakeClient)
    server = _FakeServer()
    loops = {}
    for name in ("a", "b", "bad"):
        spec = _spec(tmp_path, name)
        loops[name] = connect.TriggerLoop(server, spec, None, spec.pop("work")).start()  # type: ignore[arg-type]
        assert loops[name].pid == 4242 and loops[name].poll() is None

    wait_until(lambda: loops["bad"].poll() == 1, 10, "the failing loop to end", every=0.05)
    result = json.loads((tmp_path / "bad" / "result.json").read_text())
    assert result == {"ok": False, "error": "RuntimeError: boom"}
    connect.ConnectRunner(connect.ConnectEngine("local[1]", tmp_path)).stop_all([loops["a"]], 1.0)
    assert loops["a"].poll() == 0 and loops["a"]._session.interrupted  # type: ignore[attr-defined]
    before = fired["main.db.b"]
    wait_until(lambda: fired["main.db.b"] > before + 2, 10, "the other loop to go on", every=0.05)
    assert loops["b"].poll() is None
    loops["b"].stop(1.0)
    assert json.loads((tmp_path / "b" / "status.json").read_text())["phase"] == "done"
    assert server.released == 3
    assert all(s.settings == connect.SESSION_CONF for s in server.sessions), "each loop's session is checked"


class _PoolConf:
    def __init__(self, session: _PoolSession) -> None:
        self.session = session

    def _set_all(self, configs: dict[str, str], silent: bool) -> None:
        assert not silent, "a setting Spark refuses must fail the run, not be skipped"
        self.session.requests.append(("set", dict(configs)))

    def get(self, key: str) -> str:
        self.session.requests.append(("get", key))
        return "local-1"


class _PoolSession:
    """A Connect session as the pool sees it: its requests, and how it was closed."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, object]] = []
        self.closed: bool | None = None  # True: released on the server; False: only its channel closed
        self.conf = _PoolConf(self)


def _pooled_server(monkeypatch: pytest.MonkeyPatch) -> tuple[connect.ConnectServer, list[_PoolSession]]:
    made: list[_PoolSession] = []

    def new_session(url: str) -> _PoolSession:
        made.append(_PoolSession())
        return made[-1]

    def close_session(session: _PoolSession, released: bool = True) -> None:
        session.closed = released

    monkeypatch.setattr(connect, "new_session", new_session)
    monkeypatch.setattr(connect, "close_session", close_session)
    server = connect.ConnectServer("local[1]", {}, Path("/nonexistent"), remote="sc://h:15002/;token=t")
    return server, made


def test_a_run_gets_a_session_created_ahead_and_never_one_another_run_had(monkeypatch: pytest.MonkeyPatch) -> None:
    server, made = _pooled_server(monkeypatch)
    first, generation = server.session(timeout=1.0)
    assert first is made[0] and generation == 0
    ahead = wait_until(lambda: server._idle[0][0] if server._idle else None, 10, "a session created ahead",
                       every=0.01)
    # Created ahead: the server made it (and set what a refresh's write needs) before any run asked.
    assert ahead.requests == [("set", connect.SESSION_CONF), ("get", "spark.app.id")]
    assert server.application_id == "local-1"
    second, _ = server.session(timeout=1.0)
    assert second is ahead and second is not first
    third = wait_until(lambda: server._idle[0][0] if server._idle else None, 10, "the next one", every=0.01)
    assert third not in (first, second)
    server.release(first, generation)
    server.release(second, generation)
    assert (first.closed, second.closed) == (True, True)
    assert third.closed is None, "a session no run had stays ready"


def test_sessions_created_ahead_go_when_stale_or_when_the_server_dies(monkeypatch: pytest.MonkeyPatch) -> None:
    server, _ = _pooled_server(monkeypatch)
    server.session(timeout=1.0)
    ahead = wait_until(lambda: server._idle[0][0] if server._idle else None, 10, "a session created ahead",
                       every=0.01)
    monkeypatch.setattr(connect, "POOL_MAX_IDLE", 0.0)
    fresh, _ = server.session(timeout=1.0)
    assert fresh is not ahead and ahead.closed is True, "idle too long: released, not handed out"
    monkeypatch.setattr(connect, "POOL_MAX_IDLE", 300.0)
    waiting = wait_until(lambda: server._idle[0][0] if server._idle else None, 10, "another one", every=0.01)

    class _Dead:
        pid, returncode = 4242, -9

    server._died(_Dead())  # type: ignore[arg-type]
    assert waiting.closed is False and not server._idle, "the dead server's sessions are dropped with it"


def test_session_settings_go_in_one_request() -> None:
    session = _PoolSession()
    connect.set_confs(session, {"spark.sql.shuffle.partitions": "4", "spark.a": "b"})  # type: ignore[arg-type]
    connect.set_confs(session, {})  # type: ignore[arg-type]
    assert session.requests == [("set", {"spark.sql.shuffle.partitions": "4", "spark.a": "b"})]


class _ClosedByServer(Exception):
    """What pyspark raises for a request on a session its server closed (an idle timeout)."""

    def __init__(self) -> None:
        super().__init__("[INVALID_HANDLE.SESSION_CLOSED] The handle 1234 is invalid. Session was closed.")


def test_a_session_created_ahead_that_its_server_closed_is_replaced_for_the_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, made = _pooled_server(monkeypatch)
    server.session(timeout=1.0)
    ahead = wait_until(lambda: server._idle[0][0] if server._idle else None, 10, "a session created ahead",
                       every=0.01)

    def closed(configs: dict[str, str], silent: bool) -> None:
        raise _ClosedByServer()

    ahead.conf._set_all = closed  # type: ignore[method-assign]
    session, _ = connect.configured_session(server, {"spark.a": "b"}, timeout=1.0)  # type: ignore[arg-type]
    assert session is not ahead and session in made and ahead.closed is True
    assert ("set", {**connect.SESSION_CONF, "spark.a": "b"}) in session.requests  # type: ignore[attr-defined]
    # No settings of the run's own: the request is sent all the same (it finds a closed session).
    connect.configured_session(server, {}, timeout=1.0)  # type: ignore[arg-type]


def test_any_other_failure_to_set_a_runs_settings_fails_it_and_releases_the_session(
        monkeypatch: pytest.MonkeyPatch) -> None:
    server, made = _pooled_server(monkeypatch)
    refusals: list[dict[str, str]] = []

    def refused(self: _PoolConf, configs: dict[str, str], silent: bool) -> None:
        refusals.append(configs)
        raise RuntimeError("[CANNOT_MODIFY_CONFIG] Cannot modify the value of a static config")

    monkeypatch.setattr(_PoolConf, "_set_all", refused)
    with pytest.raises(RuntimeError, match="CANNOT_MODIFY_CONFIG"):
        connect.configured_session(server, {"spark.a": "b"}, timeout=1.0)  # type: ignore[arg-type]
    assert made[0].closed is True
    assert refusals.count({**connect.SESSION_CONF, "spark.a": "b"}) == 1, \
        "no second try but for a session its server closed"


# ---------------------------------------------------------------- warm-up of a started server


class _WarmSession(_PoolSession):
    def __init__(self) -> None:
        super().__init__()
        self.interrupted = threading.Event()

    def interruptAll(self) -> None:
        self.interrupted.set()


def _warming_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                    warm: Callable[[_WarmSession, Path], list[float]]) -> tuple[connect.ConnectEngine,
                                                                                 list[_WarmSession]]:
    """An engine (warm-up on) whose server is the stand-in above and whose warm-up is ``warm``."""
    made: list[_WarmSession] = []

    def new_session(url: str) -> _WarmSession:
        made.append(_WarmSession())
        return made[-1]

    def close_session(session: _WarmSession, released: bool = True) -> None:
        # Only ours: an earlier test's pool thread may still be closing a real session.
        if isinstance(session, _WarmSession) and session.closed is None:
            session.closed = released

    monkeypatch.setattr(connect, "new_session", new_session)
    monkeypatch.setattr(connect, "close_session", close_session)
    monkeypatch.setattr(connect, "warm_up", lambda session, scratch: warm(session, scratch))
    return connect.ConnectEngine("local[1]", tmp_path / "connect", warmup=True), made


def test_a_started_server_hands_out_sessions_only_after_its_warm_up(
        fake_spark_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    go = threading.Event()
    seen: list[Path] = []

    def warm(session: _WarmSession, scratch: Path) -> list[float]:
        seen.append(scratch)
        scratch.mkdir()
        (scratch / "part-0.parquet").write_text("x")  # what the real one leaves: removed after
        assert go.wait(30)
        return [1.5, 0.5]

    engine, made = _warming_engine(monkeypatch, tmp_path, warm)
    server = engine.server({})
    try:
        wait_until(lambda: seen, 30, "the warm-up to begin", every=0.05)
        assert server.pid is not None and not server.alive(0), "listening, but no session until it is warm"
        with pytest.raises(CatalogError, match="not up"):
            server.session(timeout=0.3)
        go.set()
        session, generation = server.session(timeout=30)
        assert generation == 0 and session is not made[0], "runs never get the warm-up's session"
        assert made[0].closed is True, "the warm-up's session is released"
        server_dir = tmp_path / "connect" / "server-0"
        assert seen == [server_dir / connect.WARMUP_DIR] and not seen[0].exists(), "its scratch is removed"
        start = json.loads((server_dir / "warmup.json").read_text())
        assert start["warmup"] and start["rounds_s"] == [1.5, 0.5] and start["error"] is None
        assert start["ready_s"] >= start["listening_s"] and server.last_start == start
        assert server.warmup_failures == 0
    finally:
        go.set()
        engine.close(1.0)


def test_a_failed_or_hung_warm_up_is_counted_and_the_server_serves_all_the_same(
        fake_spark_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(session: _WarmSession, scratch: Path) -> list[float]:
        scratch.mkdir()
        raise RuntimeError("no parquet today\nstack trace")

    engine, _ = _warming_engine(monkeypatch, tmp_path, fail)
    server = engine.server({})
    try:
        server.session(timeout=30)
        assert server.warmup_failures == 1 and server.last_start["error"] == "no parquet today"
        assert not (tmp_path / "connect" / "server-0" / connect.WARMUP_DIR).exists()
    finally:
        engine.close(1.0)

    # Hung: cut off at WARMUP_TIMEOUT (its session interrupted and closed), then ready.
    monkeypatch.setattr(connect, "WARMUP_TIMEOUT", 0.5)

    def hang(session: _WarmSession, scratch: Path) -> list[float]:
        assert session.interrupted.wait(30)
        raise RuntimeError("interrupted")

    engine, made = _warming_engine(monkeypatch, tmp_path / "hung", hang)
    server = engine.server({})
    try:
        server.session(timeout=30)
        assert server.warmup_failures == 1 and "cut off after" in server.last_start["error"]
        assert made[0].closed is False, "a cut-off session's channel is closed, not released"
    finally:
        engine.close(1.0)


def test_the_warm_up_is_for_catalogds_own_server_on_a_local_master_only(tmp_path: Path) -> None:
    def warms(master: str, remote: str | None = None, warmup: bool = True) -> bool:
        return connect.ConnectServer(master, {}, tmp_path, remote=remote, warmup=warmup).warms_up

    assert warms("local[2]") and warms("local") and warms(" LOCAL[*]")
    assert not warms("local[2]", warmup=False)
    assert not warms("local[2]", remote="sc://h:15002"), "an outside server is not catalogd's to load"
    assert not warms("spark://127.0.0.1:7077") and not warms("yarn"), "executors would write on their own hosts"


def test_the_warm_ups_scratch_removal_is_confined_to_its_directory(tmp_path: Path) -> None:
    work = tmp_path / "server-0"
    work.mkdir()
    elsewhere = tmp_path / "precious"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("x")
    with pytest.raises(InvalidArgumentError):
        connect.remove_scratch(elsewhere, work)
    (work / connect.WARMUP_DIR).symlink_to(elsewhere)
    connect.remove_scratch(work / connect.WARMUP_DIR, work)  # the link goes, not what it points at
    assert not (work / connect.WARMUP_DIR).exists() and (elsewhere / "keep").exists()
    connect.remove_scratch(work / connect.WARMUP_DIR, work)  # nothing there: nothing to do


def test_connect_warmup_setting() -> None:
    base = "catalogs:\n  - {name: s, type: memory}\n"
    assert parse_config(base).spark.connect_warmup is True
    assert parse_config(base + "spark: {connect-warmup: false}\n").spark.connect_warmup is False
    with pytest.raises(ConfigError):
        parse_config(base + "spark: {connect-warmup: sometimes}\n")
