"""The warm engine (``spark.engine: connect``): refreshes run in sessions of a long-lived
Spark Connect server instead of a ``spark-submit`` application each.

catalogd starts the server itself (its ``catalogd.connect.ConnectServer``, Spark's own server
with one setting changed, through ``spark-submit``, bound on 127.0.0.1 and guarded by a random
token only the daemon knows), or uses an existing one (``spark.remote``). Each run gets a
session of its own (``SparkSession.builder.remote(url).create()``: its own temporary views and
SQL settings), which it stops when it ends.

The setting: Spark's server gives every session a class loader of its own, and its cache of
compiled query code is per class loader, so each run's new session compiled every stage's code
again and the JIT compiled the new classes again (about 0.4 s of a one-second refresh on two
cores). catalogd's sessions add no jars or classes, so its server keeps them in the one shared
class loader (``jvm/connect-server``). Without that jar (an installed package that lacks it
and no JDK to build it), Spark's own server is started, with a warning: runs work, slower.

A server started here is supervised by one thread, which also launches it (a child's
parent-death signal follows the thread that started it): when the server dies, the
sessions it held are closed at once (their runs fail instead of waiting on gRPC retries)
and it is started again after a backoff that doubles on each quick death (1 s to 60 s).

Spark settings that only apply when an application starts (the metastore URI, master,
executor sizes) are the server's: runs whose settings differ get a server each, keyed by
those settings (one per catalog metastore in practice).

A server started here is warmed up before it hands out sessions (``spark.connect-warmup``):
a just-started JVM runs a refresh about twice as slowly as one that has run a few (classes
loaded, the parquet writer and the planner compiled by the JIT, the Hive client loaded), so
one session of its own runs ``WARMUP_ROUNDS`` small refreshes' worth of work first, writing
only into a scratch directory inside the server's own work dir (``warm_up``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalogd.dynamic import runner as spark_runner
from catalogd.dynamic.pgpass import PGPASSFILE_ENV, PasswordFile
from catalogd.errors import CatalogError, InvalidArgumentError, UnsupportedError
from catalogd.model import Column
from catalogd.spark_common import DYNAMIC_PARTITION_MODE, ROWS_OBSERVATION, observed_rows

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as RemoteSession

logger = logging.getLogger(__name__)

#: Spark's own Connect server: started when catalogd's (``CONNECT_SERVER_CLASS``) cannot be.
SPARK_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: How long a starting server may take to listen (JVM start, SparkContext, metastore client).
START_TIMEOUT = 180.0
_STARTED = re.compile(r"Spark Connect server started at: \S*?:(\d+)")
_MIN_BACKOFF, _MAX_BACKOFF = 1.0, 60.0
#: A server that ran this long before dying was healthy: its next restart waits the least again.
_HEALTHY = 60.0
#: A run's session gives up on a server that does not answer after these retries (the
#: client's default waits ten minutes, long past the supervisor's restart).
_RETRIES, _MAX_RETRY_BACKOFF_MS = 3, 2000
#: Sessions a server keeps created ahead of need (each handed out once, to one run).
POOL_SIZE = 1
#: What a session created ahead starts with: a refresh's insert writes partitions from the
#: data's values, so its write need not set and restore this itself (two requests fewer).
SESSION_CONF = {DYNAMIC_PARTITION_MODE: "nonstrict"}
#: A session created ahead and not taken within this long is let go (the server drops idle
#: sessions after ``spark.connect.session.manager.defaultSessionTimeout``, 60 min by default).
POOL_MAX_IDLE = 300.0
#: Rounds of the warm-up's refresh-like work (query, partition overwrite, row count, file
#: listing) in a server that just started; measured in benchmarks/dynamic_tables.py.
WARMUP_ROUNDS = 5
#: The longest a warm-up holds the first sessions back: past it, it is cut off (its session
#: closed) and sessions are handed out as if it had failed.
WARMUP_TIMEOUT = 60.0
#: How long a run waits for a starting server: to listen, then to warm up.
READY_TIMEOUT = START_TIMEOUT + WARMUP_TIMEOUT
#: The warm-up's scratch directory, inside the server's work dir (removed before and after).
WARMUP_DIR = "warmup"
#: Rows of the warm-up's source (three days, a few hundred per day: classes and JIT, not data).
_WARMUP_ROWS = 3000
_WARMUP_DAY = "2024-03-02"


def redact_url(url: str) -> str:
    """An ``sc://`` URL without its parameters (a ``token`` must not reach a log or a run record)."""
    return url.split("/;", 1)[0]


def new_session(url: str) -> RemoteSession:
    """A Connect session of its own on ``url`` (not the process's shared default one)."""
    from pyspark.sql.connect.client.retries import DefaultPolicy
    from pyspark.sql.connect.session import SparkSession as Remote

    # The client logs every failed query with its JVM stack trace at ERROR; the run records the error.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    session = Remote.builder.remote(url).create()
    session.client.set_retry_policies([DefaultPolicy(max_retries=_RETRIES, max_backoff=_MAX_RETRY_BACKOFF_MS)])
    return session


def set_confs(session: RemoteSession, conf: dict[str, str]) -> None:
    """Set ``conf`` in the session in one request (a setting Spark refuses fails it, as
    ``conf.set`` would)."""
    if not conf:
        return
    set_all = getattr(session.conf, "_set_all", None)  # pyspark's one-request form (3.5+)
    if set_all is None:
        for key, value in conf.items():
            session.conf.set(key, value)
        return
    set_all(configs=conf, silent=False)


def session_gone(error: BaseException) -> bool:
    """Whether ``error`` says the server no longer has the session (it closed it: an idle
    timeout, ``spark.connect.session.manager.defaultSessionTimeout``)."""
    text = str(error)
    return "SESSION_NOT_FOUND" in text or "SESSION_CLOSED" in text


def configured_session(server: ConnectServer, conf: dict[str, str],
                       timeout: float = READY_TIMEOUT) -> tuple[RemoteSession, int]:
    """A session of ``server`` for one run, ``conf`` set in it, and its server generation.

    A session created ahead of need may have been closed by its server meanwhile (an
    external server's idle timeout shorter than ``POOL_MAX_IDLE``): the run then takes a new
    one instead of failing. Nothing was run in the first, so nothing is lost or done twice.
    ``SESSION_CONF`` goes in the same request, so there is always one to find that out. On
    failure the session is released (the caller gets none to release).

    Raises:
        CatalogError: the server died meanwhile.
    """
    for fresh in (False, True):
        session, generation = server.session(timeout, fresh=fresh)
        try:
            set_confs(session, {**SESSION_CONF, **conf})
            return session, generation
        except Exception as e:
            server.release(session, generation)
            if not server.alive(generation):
                raise CatalogError(f"the Spark Connect server died while a session was set up (it is restarted; "
                                   f"the next run retries): {str(e).splitlines()[0][:500] if str(e) else e!r}") from e
            if fresh or not session_gone(e):
                raise
            logger.info("a Spark Connect session created ahead was closed by its server (%s); the run takes a "
                        "new one", str(e).splitlines()[0][:200])
    raise AssertionError("unreachable: the second try returns or raises")


def close_session(session: RemoteSession, released: bool = True) -> None:
    """End a run's session: released on the server (its views and state go), or, when the
    server is gone, only its channel closed (which fails the calls still waiting on it)."""
    try:
        if released:
            session.stop()
        else:
            session.client.close()
    except Exception as e:  # best effort: the server drops idle sessions itself
        logger.debug("closing a Spark Connect session: %s", e)


def warm_up(session: RemoteSession, scratch: Path, rounds: int = WARMUP_ROUNDS) -> list[float]:
    """Run a refresh's code paths ``rounds`` times in ``session``; the seconds of each round.

    What a refresh does in the server (``job.write_result``), on a small parquet source written
    into ``scratch`` first: a SQL query with an aggregation read through a temporary view, its
    columns selected, a partition filter pushed down, a dynamic-partition overwrite of parquet
    files (``scratch/out``) whose rows an observation counts, and ``inputFiles()``. The Hive
    client is loaded with a read-only call (``SHOW DATABASES``): nothing is written to a metastore.

    Raises:
        CatalogError: a round wrote or read what it should not have (any Spark error is raised as is).
    """
    from pyspark.sql.connect import functions as F

    set_confs(session, SESSION_CONF)
    session.sql("SHOW DATABASES").collect()
    source, out = scratch / "source", scratch / "out"
    (session.range(_WARMUP_ROWS)
     .selectExpr("id", "cast(id % 1000 / 10 AS decimal(10,2)) AS amount", "concat('c', id % 50) AS customer",
                 "date_format(date_add(DATE'2024-03-01', cast(id % 3 AS int)), 'yyyy-MM-dd') AS ds")
     .write.mode("overwrite").partitionBy("ds").parquet(source.as_uri()))
    session.read.parquet(source.as_uri()).createOrReplaceTempView("catalogd_warmup_source")
    seconds = []
    for _ in range(rounds):
        began = time.monotonic()
        df = session.sql("SELECT ds, count(*) AS orders, sum(amount) AS total, count(DISTINCT customer) AS customers "
                         "FROM catalogd_warmup_source GROUP BY ds")
        lowered = {c.lower(): c for c in df.columns}
        df = df.select(*[F.col(f"`{lowered[n]}`").alias(n) for n in ("orders", "total", "customers", "ds")])
        df = df.where(F.col("ds") == F.lit(_WARMUP_DAY))
        observed = df.observe(ROWS_OBSERVATION, F.count(F.lit(1)).alias("rows"))
        (observed.write.mode("overwrite").option("partitionOverwriteMode", "dynamic").partitionBy("ds")
         .parquet(out.as_uri()))
        rows = observed_rows(observed)
        files = df.inputFiles()
        if rows != 1 or not files:  # a file source's inputFiles() is all its files, not the day's
            raise CatalogError(f"the warm-up wrote {rows} row(s) from {len(files)} file(s), expected 1 row")
        seconds.append(round(time.monotonic() - began, 3))
    return seconds


def server_main() -> tuple[str, Path | None]:
    """The main class of the server to start, and its jar (None: one of Spark's jars).

    catalogd's server (``catalogd.spark.plugin.connect_server_jar``) when its jar is there or
    can be built; otherwise Spark's own, with a warning: every run's session then compiles its
    query's code again.
    """
    from catalogd.spark.plugin import CONNECT_SERVER_CLASS, connect_server_jar

    try:
        return CONNECT_SERVER_CLASS, connect_server_jar()
    except UnsupportedError as e:
        logger.warning("starting Spark's own Connect server: %s (each run's session compiles its query's code "
                       "again, which costs about half a second a run)", e.message)
        return SPARK_SERVER_CLASS, None


def remove_scratch(scratch: Path, work_dir: Path) -> None:
    """Remove the warm-up's scratch directory: only ``work_dir/WARMUP_DIR``, never a link."""
    if scratch != work_dir / WARMUP_DIR:
        raise InvalidArgumentError(f"{scratch} is not the warm-up directory of {work_dir}")
    if scratch.is_symlink():
        scratch.unlink()
    elif scratch.exists():
        shutil.rmtree(scratch)


class ConnectServer:
    """One Spark Connect server: catalogd's own process (``remote`` None) or an existing one.

    Args:
        master: the server's Spark master.
        conf: its Spark settings (static ones included: they are fixed when it starts).
        work_dir: its directory (settings file, log), created 0700.
        port: the port to bind (0: a free one).
        remote: an existing server's URL; catalogd then starts nothing.
        warmup: warm a started server up before handing out sessions (``warms_up`` says
            when it applies).
    """

    def __init__(self, master: str, conf: dict[str, str], work_dir: Path, port: int = 0,
                 remote: str | None = None, warmup: bool = False) -> None:
        self.master = master
        self.conf = conf
        self.work_dir = work_dir
        self.port = port
        self.remote = remote
        self._cond = threading.Condition()
        self._proc: subprocess.Popen[bytes] | None = None
        self._url: str | None = remote
        self._started_at = 0.0
        self._backoff = _MIN_BACKOFF
        self._restart_at = 0.0
        self._closed = False
        self._error: str | None = None
        #: Sessions handed out by the running server, and those created ahead (closed when it dies).
        self._sessions: set[RemoteSession] = set()
        #: Sessions created ahead of need, none handed out yet: (session, generation, created).
        self._idle: list[tuple[RemoteSession, int, float]] = []
        self._filling = False
        #: Incremented at each (re)start: a run that saw the generation change saw the server die.
        self.generation = 0
        self.restarts = 0
        self.application_id: str | None = None
        self.warmup = warmup
        #: Warm-ups that failed or were cut off (each logged; the server is used all the same).
        self.warmup_failures = 0
        #: The last start's readiness: ``warmup.json`` in the work dir holds the same.
        self.last_start: dict[str, Any] = {}
        #: The jdbc catalogs' passwords its runs were given (``give_jdbc_password``).
        self.passwords = PasswordFile(work_dir / "pgpass")

    def give_jdbc_password(self, url: str, user: str | None, password: str) -> None:
        """Let this server's JDBC connections to ``url`` as ``user`` log in with ``password``
        (``pgpass``: never in a run's plan, a session setting or a log).

        Raises:
            UnsupportedError: an outside server (``spark.remote``): catalogd sends it no password.
        """
        if self.remote is not None:
            raise UnsupportedError("a jdbc catalog's dynamic tables refresh only in catalogd's own Spark Connect "
                                   "server: the catalog's password is not sent to an outside one (spark.remote)")
        self.passwords.give(url, user, password)

    @property
    def warms_up(self) -> bool:
        """Whether a start is warmed up: catalogd's own server on a ``local`` master only. An
        outside server (``remote``) is not catalogd's to load, nor its file system catalogd's
        to write; on a cluster the executors would write the scratch files on their own hosts,
        outside anything catalogd owns."""
        return self.warmup and self.remote is None and self.master.strip().lower().startswith("local")

    # ------------------------------------------------------------ sessions

    def session(self, timeout: float = READY_TIMEOUT, fresh: bool = False) -> tuple[RemoteSession, int]:
        """A new session and the server generation it belongs to; waits for a starting server.

        The session is one no run has had: one created ahead of need when there is one (the
        server's handshake is then behind it) unless ``fresh``, else a new one. Either way
        another is created ahead for the next run.

        Raises:
            CatalogError: the server did not come up within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        stale: list[RemoteSession] = []
        with self._cond:
            while self._url is None and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CatalogError("the Spark Connect server is not up"
                                       + (f" after {timeout:.0f}s" if timeout else " (it is starting)")
                                       + (f": {self._error}" if self._error else ""))
                self._cond.wait(min(left, 1.0))
            if self._closed:
                raise CatalogError("the Spark Connect engine is stopping")
            url, generation = self._url, self.generation
            ready = None if fresh else self._take_idle(generation, stale)
        for old in stale:  # idle too long: the server may have dropped it
            close_session(old)
        if ready is not None:
            self.refill()
            return ready, generation
        assert url is not None
        session = new_session(url)
        with self._cond:
            if generation != self.generation:  # died while we connected
                close_session(session, released=False)
                raise CatalogError("the Spark Connect server restarted while the run connected")
            self._sessions.add(session)
        if self.application_id is None:
            with contextlib.suppress(Exception):
                self.application_id = session.conf.get("spark.app.id")
        self.refill()  # after this one: the two do not compete for the server
        return session, generation

    def _take_idle(self, generation: int, stale: list[RemoteSession]) -> RemoteSession | None:
        """The oldest session created ahead for ``generation`` (under the lock); those idle
        too long go to ``stale``."""
        now = time.monotonic()
        while self._idle:
            session, made_for, created = self._idle.pop(0)
            if made_for == generation and now - created < POOL_MAX_IDLE:
                return session
            self._sessions.discard(session)
            stale.append(session)
        return None

    def refill(self) -> None:
        """Create a session ahead of need (on a thread of its own) unless enough are waiting."""
        with self._cond:
            if self._filling or self._closed or self._url is None or len(self._idle) >= POOL_SIZE:
                return
            self._filling = True
            url, generation = self._url, self.generation
        threading.Thread(target=self._fill, args=(url, generation), name="dt-connect-pool", daemon=True).start()

    def _fill(self, url: str, generation: int) -> None:
        session: RemoteSession | None = None
        try:
            session = new_session(url)
            # The first request makes the server create the session (and its SQL state) now,
            # not when a run is waiting for it.
            set_confs(session, SESSION_CONF)
            app_id = session.conf.get("spark.app.id")
            with self._cond:
                if generation == self.generation and self._url is not None and not self._closed:
                    self._sessions.add(session)
                    self._idle.append((session, generation, time.monotonic()))
                    self.application_id = self.application_id or app_id
                    session = None
        except Exception as e:  # the server died or is stopping: its supervisor handles that
            logger.debug("creating a Spark Connect session ahead of need: %s", e)
        finally:
            with self._cond:
                self._filling = False
            if session is not None:
                close_session(session, released=False)

    def release(self, session: RemoteSession, generation: int) -> None:
        with self._cond:
            self._sessions.discard(session)
            alive = generation == self.generation and self._url is not None
        close_session(session, released=alive)

    def alive(self, generation: int) -> bool:
        """Whether the server of that generation is still the one running."""
        with self._cond:
            return generation == self.generation and self._url is not None

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    # ------------------------------------------------------------ supervision (one thread)

    def tick(self) -> None:
        """Start the server when it should run and does not; notice a death. Called by the
        supervising thread only (the server's parent-death signal follows it)."""
        if self.remote is not None or self._closed:
            return
        proc = self._proc
        if proc is not None and proc.poll() is not None:
            self._died(proc)
        elif proc is None and time.monotonic() >= self._restart_at:
            self._start()

    def _died(self, proc: subprocess.Popen[bytes]) -> None:
        lived = time.monotonic() - self._started_at
        self._backoff = _MIN_BACKOFF if lived > _HEALTHY else min(self._backoff * 2, _MAX_BACKOFF)
        self._restart_at = time.monotonic() + self._backoff
        with self._cond:
            self._proc, self._url, self.application_id = None, None, None
            self.generation += 1
            sessions, self._sessions = self._sessions, set()
            self._idle = []
        logger.warning("the Spark Connect server (pid %d) exited with code %s after %.0fs; %d run(s) on it fail, "
                       "restarting in %.0fs", proc.pid, proc.returncode, lived, len(sessions), self._backoff)
        for session in sessions:  # their blocked calls fail now, not after the client's retries
            close_session(session, released=False)

    def _start(self) -> None:
        token = secrets.token_urlsafe(24)
        port = self.port or _free_port()
        conf = {**self.conf, "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(port)}
        spec_dir = self.work_dir
        spec_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        (spec_dir / "job.log").unlink(missing_ok=True)  # the bound port is read from this start's log
        try:
            spark_runner.own_dir(spec_dir)  # the password file goes there
            self.passwords.create()
            # The server's token travels in its environment, never in a file or on its command line.
            main_class, jar = server_main()
            proc = spark_runner.launch_class(self.master, conf, main_class, "catalogd Spark Connect server",
                                             spec_dir, env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": token,
                                                            PGPASSFILE_ENV: str(self.passwords.path)}, jar=jar)
        except (OSError, CatalogError) as e:
            self._error = f"cannot start the Spark Connect server: {e}"
            logger.error("%s", self._error)
            self._restart_at = time.monotonic() + self._backoff
            return
        self._proc, self._started_at = proc, time.monotonic()
        # For operators (and the tests' SIGKILL): which process is the server now.
        (spec_dir / "server.pid").write_text(f"{proc.pid}\n")
        logger.info("starting the Spark Connect server (pid %d, port %d)", proc.pid, port)
        bound = self._wait_listening(proc, port)
        if bound is None:
            self._error = f"it did not start: {spark_runner.log_tail(spec_dir)}"
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            self._died(proc)
            return
        url = f"sc://localhost:{bound}/;token={token}"
        listening = time.monotonic() - self._started_at
        logger.info("the Spark Connect server (pid %d) listens on 127.0.0.1:%d after %.1fs", proc.pid, bound,
                    listening)
        if not self.warms_up:
            self._ready(proc, url, self.generation, {"listening_s": round(listening, 3), "warmup": False})
            return
        # Its own thread: the supervisor goes on watching (a death during the warm-up is noticed).
        threading.Thread(target=self._warm_then_ready, args=(proc, url, self.generation, listening),
                         name="dt-connect-warmup", daemon=True).start()

    def _ready(self, proc: subprocess.Popen[bytes], url: str, generation: int, start: dict[str, Any]) -> None:
        """Hand out sessions of the server that ``generation`` started (unless it died since)."""
        ready = {**start, "ready_s": round(time.monotonic() - self._started_at, 3)}
        with self._cond:
            if generation != self.generation or self._closed or self._proc is not proc:
                return  # a late warm-up of a server that died: its record is not the current one
            # Written (whole: a temporary file of this start's renamed) before the first session
            # is handed out, so whoever got one reads this start's record.
            with contextlib.suppress(OSError):  # for operators and the benchmark
                record = self.work_dir / "warmup.json"
                tmp = record.with_name(f"warmup.json.{generation}.tmp")
                tmp.write_text(json.dumps(ready))
                os.replace(tmp, record)
            self.last_start = ready
            self.restarts = generation  # each death before this start made one restart
            self._url = url
            self._error = None
            self._cond.notify_all()
        self.refill()  # the first run's session is ready when it comes

    def _warm_then_ready(self, proc: subprocess.Popen[bytes], url: str, generation: int, listening: float) -> None:
        """Warm the server up in a session of its own (closed after), then hand out sessions,
        whether the warm-up worked or not: it only makes the first runs faster."""
        began = time.monotonic()
        scratch = self.work_dir / WARMUP_DIR
        session: RemoteSession | None = None
        cut_off = threading.Event()
        error: str | None = None
        rounds: list[float] = []

        def cut() -> None:  # a hung warm-up must not hold the runs back
            cut_off.set()
            if session is not None:
                with contextlib.suppress(Exception):
                    session.interruptAll()
                close_session(session, released=False)

        timer = threading.Timer(WARMUP_TIMEOUT, cut)
        timer.daemon = True
        timer.start()
        try:
            remove_scratch(scratch, self.work_dir)
            session = new_session(url)
            with self._cond:  # closed with the others if the server dies or the engine stops
                if generation != self.generation or self._closed:
                    raise CatalogError("the server stopped before its warm-up")
                self._sessions.add(session)
            if cut_off.is_set():
                raise CatalogError("cut off")
            rounds = warm_up(session, scratch)
        except Exception as e:
            error = (f"cut off after {WARMUP_TIMEOUT:.0f}s" if cut_off.is_set()
                     else (str(e).strip().splitlines() or [type(e).__name__])[0][:500])
        finally:
            timer.cancel()
            if session is not None:
                with self._cond:
                    self._sessions.discard(session)
                    alive = generation == self.generation and not self._closed
                close_session(session, released=alive and not cut_off.is_set())
            # After a death, the next start's warm-up removes it first (this thread, late, must
            # not remove what that one is writing).
            if self._start_current(generation) or self._closed:
                try:
                    remove_scratch(scratch, self.work_dir)
                except OSError as e:
                    logger.warning("removing the warm-up's scratch directory %s: %s", scratch, e)
        took = time.monotonic() - began
        if error is None:
            logger.info("the Spark Connect server (pid %d) warmed up in %.1fs (%d rounds: %s s)", proc.pid, took,
                        len(rounds), ", ".join(f"{r:.2f}" for r in rounds))
        elif self._start_current(generation):
            self.warmup_failures += 1
            logger.warning("the Spark Connect server's warm-up failed after %.1fs (it serves runs all the same): "
                           "%s", took, error)
        self._ready(proc, url, generation, {"listening_s": round(listening, 3), "warmup": True,
                                            "warmup_s": round(took, 3), "rounds_s": rounds, "error": error})

    def _start_current(self, generation: int) -> bool:
        """Whether the start of ``generation`` is still the server's (listening or warming up)."""
        with self._cond:
            return generation == self.generation and not self._closed

    def _wait_listening(self, proc: subprocess.Popen[bytes], port: int) -> int | None:
        """The port the server bound (from its log line), once it accepts connections."""
        deadline = time.monotonic() + START_TIMEOUT
        log = self.work_dir / "job.log"
        while time.monotonic() < deadline and not self._closed:
            if proc.poll() is not None:
                return None
            try:
                found = _STARTED.findall(log.read_text(errors="replace"))
            except OSError:
                found = []
            if found:
                bound = int(found[-1])
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", bound), timeout=1.0):
                    return bound
            time.sleep(0.2)
        return None

    def close(self, grace: float) -> None:
        """Stop the server (sessions closed first); no restart after this."""
        with self._cond:
            self._closed = True
            sessions, self._sessions = self._sessions, set()
            self._idle = []
            self._url = None
            self._cond.notify_all()
        for session in sessions:
            close_session(session, released=False)
        if self._proc is not None:
            spark_runner.stop(self._proc, grace)
        if self.remote is None:
            with contextlib.suppress(OSError):
                self.passwords.remove()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ConnectEngine:
    """The connect engine's servers, one per set of Spark settings, and their supervisor thread.

    Args:
        master: ``spark.master``.
        work_dir: where the servers' directories go (``<data-dir>/dynamic/connect``).
        port: ``spark.connect-port`` (for the first server; others take free ports).
        remote: ``spark.remote``: every run uses this server; catalogd starts none.
        warmup: ``spark.connect-warmup``: warm each server catalogd starts up before its
            first session (``ConnectServer.warms_up``).
    """

    def __init__(self, master: str, work_dir: Path, port: int = 0, remote: str | None = None,
                 warmup: bool = False) -> None:
        self.master = master
        self.warmup = warmup
        self.work_dir = work_dir
        self.port = port
        self.remote = remote
        self._lock = threading.Lock()
        self._servers: dict[tuple[tuple[str, str], ...], ConnectServer] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def describe(self) -> str:
        """What runs show as their submitter (no token)."""
        return f"spark-connect {redact_url(self.remote)}" if self.remote else "spark-connect (catalogd's own server)"

    def server(self, conf: dict[str, str]) -> ConnectServer:
        """The server for these Spark settings (started by the supervisor thread if new)."""
        key = tuple(sorted(conf.items()))
        with self._lock:
            found = self._servers.get(key)
            if found is None:
                if self.remote is not None:
                    found = ConnectServer(self.master, conf, self.work_dir, remote=self.remote)
                else:
                    index = len(self._servers)
                    found = ConnectServer(self.master, conf, self.work_dir / f"server-{index}",
                                          self.port if index == 0 else 0, warmup=self.warmup)
                self._servers[key] = found
            self._ensure_thread()
        return found

    def servers(self) -> list[ConnectServer]:
        with self._lock:
            return list(self._servers.values())

    def _ensure_thread(self) -> None:
        if self._thread is None and self.remote is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._supervise, name="dt-connect", daemon=True)
            self._thread.start()

    def _supervise(self) -> None:
        while not self._stop.is_set():
            for server in self.servers():
                try:
                    server.tick()
                except Exception:
                    logger.exception("supervising the Spark Connect server failed")
            self._stop.wait(0.25)

    def close(self, grace: float) -> None:
        """Stop every server catalogd started."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(grace + spark_runner.KILL_WAIT)
        for server in self.servers():
            server.close(grace)


class ConnectAnalyzer:
    """``Analyzer``'s job done by the Connect server: a query's columns from a session of
    its own (fresh table metadata each time), with no helper JVM of its own."""

    def __init__(self, server: ConnectServer) -> None:
        self.server = server

    def warm(self) -> threading.Thread:
        """Nothing to start: the engine's supervisor starts the server."""
        thread = threading.Thread(target=lambda: None, daemon=True)
        thread.start()
        return thread

    def analyze(self, query: str, timeout: float = 120.0) -> list[Column]:
        """The columns ``query`` produces.

        Raises:
            InvalidArgumentError: Spark cannot parse or analyse the query.
            CatalogError: the server is not up within ``timeout``.
        """
        from catalogd.spark_common import hive_columns

        for fresh in (False, True):
            session, generation = self.server.session(max(timeout, READY_TIMEOUT), fresh=fresh)
            try:
                schema = session.sql(query).schema
                break
            except Exception as e:
                if not self.server.alive(generation):
                    raise CatalogError(f"the Spark Connect server died while it analysed the query: {e}") from e
                if not fresh and session_gone(e):
                    continue  # created ahead and closed by its server since: a new one
                first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                raise InvalidArgumentError(f"Spark cannot analyse the query: {first[:2000]}") from e
            finally:
                self.server.release(session, generation)
        return hive_columns(schema)

    def close(self) -> None:
        """The server is the engine's: nothing of its own to stop."""


class TriggerLoop:
    """A continuous table on the connect engine: a thread of the daemon that fires its
    trigger every ``trigger_seconds`` on a Connect session of its own in the shared server.

    Seen by the supervisor as a job's process (``pid``, ``poll``, ``returncode``): it has
    ended when a trigger failed (the error goes to ``result.json``) or its server died, and
    the supervisor restarts it under its restart policy. The marker of the files last
    refreshed from stays in the table's checkpoint directory across restarts.

    Why not a streaming query with ``foreachBatch``: the server would start a Python worker
    per table that must connect back within a fixed 10 s (too short on a busy machine) and
    costs a Python process each, while the trigger only ever ran a batch refresh.
    """

    def __init__(self, server: ConnectServer, spec: dict[str, Any], token: str | None, work_dir: Path) -> None:
        self.server = server
        self.spec = spec
        self.token = token
        self.work_dir = work_dir
        self.returncode: int | None = None
        self._stop = threading.Event()
        self._session: RemoteSession | None = None
        self._thread = threading.Thread(target=self._loop, name=f"dt-trigger-{spec['table']}", daemon=True)

    def start(self) -> TriggerLoop:
        self._thread.start()
        return self

    @property
    def pid(self) -> int:
        """The server's process (a trigger loop has none of its own); 0 for a remote server."""
        return self.server.pid or 0

    def poll(self) -> int | None:
        return self.returncode

    def _loop(self) -> None:
        from catalogd.client import CatalogClient
        from catalogd.dynamic import job

        reporter = job.StatusFile(self.spec)
        error: str | None = None
        generation = -1
        client = None
        try:
            # Its settings again: a request that also finds a session its server closed meanwhile.
            session, generation = configured_session(self.server, {})
            self._session = session
            reporter.update(phase="streaming", application_id=self.server.application_id)
            client = CatalogClient(self.spec["daemon"], token=self.token or "",
                                   tls_context=job._tls_context(self.spec.get("tls")))
            state = job.continuous_state(self.spec, reporter)
            every = float(self.spec["trigger_seconds"])
            batch_id = 0
            while not self._stop.is_set():
                began = time.monotonic()
                job.connect_trigger(session, client, state, batch_id)
                batch_id += 1
                self._stop.wait(max(0.0, every - (time.monotonic() - began)))
        except Exception as e:
            if not self._stop.is_set():
                error = job._describe(e)
                if generation >= 0 and not self.server.alive(generation):
                    error = f"the Spark Connect server died: {error}"
        finally:
            if client is not None:
                client.close()
            if self._session is not None:
                self.server.release(self._session, generation)
            with contextlib.suppress(OSError):
                (self.work_dir / "result.json").write_text(json.dumps({"ok": error is None, "error": error}))
            reporter.update(phase="failed" if error else "done")
            self.returncode = 1 if error else 0

    def stop(self, grace: float) -> None:
        """Stop this table's loop only: its refresh going is interrupted, the server and the
        other tables' loops go on."""
        self._stop.set()
        session = self._session
        if session is not None:
            with contextlib.suppress(Exception):
                session.interruptAll()
        self._thread.join(grace + spark_runner.KILL_WAIT)


class ConnectRunner:
    """The supervisor's job runner on the connect engine: a continuous table's job is a
    trigger loop on the shared server (``TriggerLoop``), not an application of its own."""

    def __init__(self, engine: ConnectEngine) -> None:
        self.engine = engine

    def spark_submit_path(self) -> Path:
        return spark_runner.spark_submit_path()

    def launch(self, master: str, conf: dict[str, str], spec: dict[str, Any], work_dir: Path,
               env: dict[str, str] | None = None) -> TriggerLoop:
        """Start the table's trigger loop (it waits for a starting server itself)."""
        from catalogd.dynamic.jobspec import TOKEN_ENV

        spark_runner.own_dir(work_dir)
        (work_dir / "spec.json").write_text(json.dumps(spec, indent=2))
        return TriggerLoop(self.engine.server(conf), spec, (env or {}).get(TOKEN_ENV), work_dir).start()

    def stop(self, proc: Any, grace: float) -> None:
        self.stop_all([proc], grace)

    def stop_all(self, procs: Iterable[Any], grace: float) -> None:
        procs = list(procs)
        loops = [p for p in procs if isinstance(p, TriggerLoop)]
        for loop in loops:
            loop._stop.set()
        for loop in loops:  # all at once: N tables take one grace, not N
            loop.stop(grace)
        spark_runner.stop_all([p for p in procs if not isinstance(p, TriggerLoop)], grace)

    def read_json(self, path: Path) -> dict[str, Any]:
        return spark_runner.read_json(path)

    def log_tail(self, work_dir: Path, lines: int = 5) -> str:
        return spark_runner.log_tail(work_dir, lines)


__all__ = ["ConnectAnalyzer", "ConnectEngine", "ConnectRunner", "ConnectServer", "TriggerLoop", "close_session",
           "configured_session", "new_session", "redact_url", "remove_scratch", "session_gone", "set_confs",
           "warm_up"]
