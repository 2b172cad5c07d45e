"""A real PostgreSQL server for the tests: Debian's ``initdb`` and ``pg_ctl`` in a temporary directory.

The server listens on a free port on 127.0.0.1 and on a unix socket in its own directory, with
fsync off (a test database need not survive a power cut). PostgreSQL refuses to run as root, so
under root its programs run as the ``postgres`` user (made by Debian's package) and the directory
is theirs. Superuser access is through the socket (trust); TCP clients log in with a password,
so the metastore's password really travels.

Started by the session fixture ``postgres`` (tests/integration/conftest.py) only when a test asks
for it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .helpers import free_port

#: initdb and pg_ctl -w start take a few seconds; a busy 2-core machine may take many more.
START_TIMEOUT = 120
_SERVICE_USER = "postgres"
#: The superuser role initdb creates (named after the service user, as Debian's clusters are).
_SERVICE_USER_ROLE = _SERVICE_USER


def pg_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb, or None when PostgreSQL is not installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


@dataclass
class PostgresServer:
    """A running server, and how to reach it as its superuser (socket) and as the tests' role (TCP)."""

    bin_dir: Path
    root: Path
    port: int
    run_as: str | None
    role: str
    password: str
    host: str = "127.0.0.1"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "run"

    @property
    def log_path(self) -> Path:
        return self.root / "postgres.log"

    def run(self, *args: str, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """One of the server's programs (``pg_ctl``, ``psql``), as the server's user."""
        done = subprocess.run([str(self.bin_dir / args[0]), *args[1:]], capture_output=True, text=True,
                              timeout=timeout, user=self.run_as, cwd=self.root,
                              env={**os.environ, "PGHOST": str(self.socket_dir), "PGPORT": str(self.port)})
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited with {done.returncode}: {done.stderr.strip()}\n"
                               f"server log:\n{self.log_tail()}")
        return done

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement as the superuser over the socket; its rows, unaligned."""
        return self.run("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-U", _SERVICE_USER_ROLE,
                        "-d", database, "-c", statement).stdout.strip()

    def create_database(self, prefix: str = "metastore") -> str:
        """A new, empty database owned by the tests' role; its name."""
        name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        self.sql(f'CREATE DATABASE "{name}" OWNER "{self.role}"')
        return name

    def url(self, database: str, password: bool = True) -> str:
        """``postgresql://ROLE[:PASSWORD]@127.0.0.1:PORT/DATABASE``, as ``metastore-db`` takes it."""
        secret = f":{self.password}" if password else ""
        return f"postgresql://{self.role}{secret}@{self.host}:{self.port}/{database}"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Fast shutdown (clients are cut off); SIGKILL of the postmaster if that fails."""
        if not (self.data_dir / "postmaster.pid").exists():
            return
        try:
            self.run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "60", "stop")
        except (RuntimeError, subprocess.TimeoutExpired):
            with contextlib.suppress(OSError, ValueError, IndexError):
                pid = int((self.data_dir / "postmaster.pid").read_text().split()[0])
                os.kill(pid, 9)


@contextlib.contextmanager
def running_postgres(role: str = "catalogd") -> Iterator[PostgresServer]:
    """Start a PostgreSQL server with a login role ``role`` (a random password); stop and delete it after.

    Not under pytest's temporary directory: that one is private to root, and under root the
    server runs as ``postgres``, which must be able to reach its own directory.
    """
    bin_dir = pg_bin_dir()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql): the tests start a real server")
    run_as = _SERVICE_USER if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="catalogd-pg-"))
    server = PostgresServer(bin_dir=bin_dir, root=root, port=free_port(), run_as=run_as, role=role,
                            password=uuid.uuid4().hex)
    try:
        server.socket_dir.mkdir()
        if run_as is not None:
            account = pwd.getpwnam(run_as)
            for path in (root, server.socket_dir):
                os.chown(path, account.pw_uid, account.pw_gid)
        # Trust on the socket (the superuser sets up roles), passwords over TCP (what a metastore does).
        server.run("initdb", "-D", str(server.data_dir), "-U", _SERVICE_USER_ROLE, "--no-sync",
                   "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8")
        options = (f"-c listen_addresses={server.host} -p {server.port} -k {server.socket_dir} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        server.run("pg_ctl", "-D", str(server.data_dir), "-l", str(server.log_path), "-o", options,
                   "-w", "-t", str(START_TIMEOUT), "start")
        server.sql(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{server.password}'")
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
