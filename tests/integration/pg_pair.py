"""Two cluster members whose embedded metastores share one PostgreSQL database, for several modules.

A pair costs two daemons and two metastore JVMs (20-30 s on a busy 2-core machine), so
test_cluster_members.py and test_metastore_postgresql.py share one, through the session fixture
``pg_pairs`` (tests/integration/conftest.py): ``get()`` starts it, or starts again a member a test
killed; the last module to use it (test_metastore_postgresql.py, in file order) closes it, and the
session's end closes what is left. Tests keep apart by unique database names.

A takes the metastore database's password from the environment (``${VAR}`` in its config), B from
``metastore-db-password-file``. Caches live 60 s (``cache.ttl``): an answer that changes sooner was
invalidated by the other member, not expired.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from .helpers import Daemon, embedded_catalog, free_port, metastore_pids, spawn_daemon, start_daemon, write_config
from .postgres import PostgresServer

#: The pair's ``staging.secret`` (it signs stages and keys the invalidations between members).
PAIR_SECRET = "cache-coherence-test-stage-secret-0123"
PASSWORD_VAR = "CATALOGD_TEST_METASTORE_DB_PASSWORD"
#: Far longer than any wait of the tests: an answer that changes within it was invalidated, not expired.
TTL = "60s"


@dataclass
class PgPair:
    """Two daemons whose embedded metastores share one PostgreSQL database (and one warehouse)."""

    a: Daemon
    b: Daemon
    server: PostgresServer
    database: str
    env_a: dict[str, str]
    #: The ports of A's and B's embedded metastores (on the one database).
    metastore_ports: tuple[int, int]
    secret: str = PAIR_SECRET
    #: Members started again after a kill, not yet waited for.
    starting: list[Daemon] = field(default_factory=list)

    def restart_a(self) -> None:
        assert self.a.stop() == 0, self.a.log()
        self.a = start_daemon(self.a.config_path, self.a.data_dir, self.a.log_path, env=self.env_a)

    def respawn(self) -> None:
        """Start again (without waiting) each member a test killed; continue one left stopped."""
        for index, member in enumerate((self.a, self.b)):
            if member.proc.poll() is None:
                os.kill(member.pid, signal.SIGCONT)
                continue
            # Its metastore ends with it (its stdin closes); the port must be free for the new one.
            for pid in metastore_pids(member.data_dir):
                os.kill(pid, signal.SIGKILL)
            wait_until(lambda m=member: not metastore_pids(m.data_dir), 60, what="the killed member's metastore to go")
            again = spawn_daemon(member.config_path, member.data_dir, member.log_path,
                                 self.env_a if index == 0 else None)
            self.starting.append(again)
            if index == 0:
                self.a = again
            else:
                self.b = again

    def ready(self) -> None:
        self.respawn()
        for member in self.starting:
            member.wait_ready()
        self.starting.clear()

    def close(self) -> None:
        for member in (self.a, self.b):
            if member.proc.poll() is None:
                os.kill(member.pid, signal.SIGCONT)
            member.stop()
        for member in (self.a, self.b):
            for pid in metastore_pids(member.data_dir):
                os.kill(pid, signal.SIGKILL)


class PgPairs:
    """The session's pair, started on first use and closed by its last user (or the session's end)."""

    def __init__(self, postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.postgres = postgres
        self.tmp_path_factory = tmp_path_factory
        self.pair: PgPair | None = None

    def get(self) -> PgPair:
        if self.pair is None:
            self.pair = _start(self.postgres, self.tmp_path_factory.mktemp("pg-pair"))
        self.pair.ready()
        return self.pair

    def close(self) -> None:
        if self.pair is not None:
            pair, self.pair = self.pair, None
            pair.close()


def _start(postgres: PostgresServer, root: Path) -> PgPair:
    database = postgres.create_database()
    warehouse = (root / "warehouse").as_uri()
    url = postgres.url(database, password=False)
    password_file = root / "metastore-db.password"
    password_file.write_text(postgres.password + "\n")
    password_file.chmod(0o600)
    # A's URL takes the password from the environment, B's from the file.
    metastore_ports = (free_port(), free_port())
    catalogs = [
        [embedded_catalog("main", metastore_port=metastore_ports[0], warehouse=warehouse,
                          **{"metastore-db": url.replace("@", f":${{{PASSWORD_VAR}}}@", 1)})],
        [embedded_catalog("main", metastore_port=metastore_ports[1], warehouse=warehouse,
                          **{"metastore-db": url, "metastore-db-password-file": str(password_file)})],
    ]
    members: list[dict[str, Any]] = [{"host": "127.0.0.1", "port": free_port(), "hms-port": free_port(),
                                      "http-port": free_port()} for _ in range(2)]
    configs = []
    for index, name in enumerate("ab"):
        member = members[index]
        extra = {"server": {"hms-port": member["hms-port"]}, "cluster": {"members": members},
                 # A janitor pass every second: a stage whose heartbeats stopped would be aborted soon.
                 "staging": {"secret": PAIR_SECRET, "janitor-interval": "1s"}, "cache": {"ttl": TTL},
                 "dynamic-tables": {"enabled": False, "warm-analyzer": False}}
        configs.append(write_config(root / f"{name}.yaml", port=member["port"], http_port=member["http-port"],
                                    data_dir=root / name, catalogs=catalogs[index], extra=extra))
    env_a = {PASSWORD_VAR: postgres.password}
    # A first, alone: its metastore creates the schema in the empty database.
    a = start_daemon(configs[0], root / "a", root / "a.log", env=env_a)
    try:
        b = start_daemon(configs[1], root / "b", root / "b.log")
    except BaseException:
        a.stop()
        raise
    return PgPair(a=a, b=b, server=postgres, database=database, env_a=env_a, metastore_ports=metastore_ports)
