"""Embedded metastores on a real PostgreSQL server (``metastore-db``): what they keep survives a restart,
two daemons on one database see each other's objects, the password shows nowhere, bad values exit 2.

One pair of daemons (each with its own embedded HMS, a JVM) serves the whole module, the one
test_cluster_members.py used too (tests/integration/pg_pair.py): A takes the password from the
environment (``${VAR}`` in its config), B from ``metastore-db-password-file``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until
from thrift.transport.TTransport import TTransportException

from catalogd.catalog.base import LEASE_TABLE_PREFIX
from catalogd.catalog.hive_lease import lease_view
from catalogd.client import CatalogClient
from catalogd.errors import DatabaseNotFoundError
from catalogd.hive_idl import ttypes

from .helpers import (
    CATALOGD,
    Daemon,
    clean_env,
    embedded_catalog,
    free_port,
    hms_connection,
    http_get,
    log_text,
    metastore_key_file,
    metastore_pids,
    write_config,
)
from .pg_pair import PgPair as Pair
from .pg_pair import PgPairs

pytestmark = pytest.mark.integration

#: What a daemon waits for the other one's writes at most (their invalidations), on a busy machine.
SEEN_WITHIN = 30.0


@pytest.fixture(scope="module")
def pair(pg_pairs: PgPairs) -> Iterator[Pair]:
    """The session's PostgreSQL pair (tests/integration/pg_pair.py); this module, its last user
    (test_cluster_members.py comes first), closes it."""
    yield pg_pairs.get()
    pg_pairs.close()


def _metastore_tables(pair: Pair) -> list[str]:
    return pair.server.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
                           pair.database).split()


def test_the_metastore_keeps_its_data_in_postgresql(pair: Pair) -> None:
    tables = _metastore_tables(pair)
    assert {"DBS", "TBLS", "PARTITIONS", "SDS", "VERSION"} <= set(tables), tables
    assert "default" in pair.server.sql('SELECT "NAME" FROM "DBS" ORDER BY 1', pair.database).split()
    for daemon in (pair.a, pair.b):
        assert not (daemon.data_dir / "catalogs" / "main" / "metastore_db").exists(), "no Derby database"


def test_two_daemons_see_each_others_objects(pair: Pair, unique_name) -> None:
    name = unique_name("shared")
    with CatalogClient(pair.a.address) as a, CatalogClient(pair.b.address) as b:
        a.create_database(f"main.{name}")
        wait_until(lambda: f"{name}" in b.list_databases("main"), SEEN_WITHIN, what="A's database through B")
        b.create_table(f"main.{name}.events", "id bigint, payload string", partitioned_by="ds string")
        b.add_partition(f"main.{name}.events", {"ds": "2024-01-01"})
        wait_until(lambda: [p.name for p in a.list_partitions(f"main.{name}.events")] == ["ds=2024-01-01"],
                   SEEN_WITHIN, what="B's table and partition through A")
        # The HMS endpoint (what Spark talks to) of each daemon, for the other's writes.
        with hms_connection(pair.a.hms_address) as ha:
            ha.create_database(ttypes.Database(name=f"{name}_hms", description="through A's endpoint",
                                               parameters={}))
        with hms_connection(pair.b.hms_address) as hb:
            wait_until(lambda: f"{name}_hms" in hb.get_all_databases(), SEEN_WITHIN, what="A's HMS database via B")
            assert hb.get_partition_names(name, "events", -1) == ["ds=2024-01-01"]
        a.drop_database(f"main.{name}_hms")

        def gone() -> bool:
            try:
                b.get_database(f"main.{name}_hms")
            except DatabaseNotFoundError:
                return True
            return False

        wait_until(gone, SEEN_WITHIN, what="a drop through A to show through B")


def test_objects_survive_a_restart_and_the_schema_is_left_alone(pair: Pair, unique_name) -> None:
    name = unique_name("kept")
    with CatalogClient(pair.a.address) as a:
        a.create_database(f"main.{name}", comment="kept in PostgreSQL")
        a.create_table(f"main.{name}.t", "id int, v string", partitioned_by="ds string")
        for ds in ("2024-01-01", "2024-01-02"):
            a.add_partition(f"main.{name}.t", {"ds": ds})
    with hms_connection(pair.a.hms_address) as ha:
        ha.create_database(ttypes.Database(name=f"{name}_hms", description="", parameters={}))
    tables_before = _metastore_tables(pair)
    metastore_before = metastore_pids(pair.a.data_dir)
    pair.restart_a()
    assert metastore_pids(pair.a.data_dir) != metastore_before, "a new metastore process"
    assert _metastore_tables(pair) == tables_before
    assert pair.server.sql('SELECT count(*) FROM "VERSION"', pair.database) == "1"
    with CatalogClient(pair.a.address) as a:
        assert a.get_database(f"main.{name}").comment == "kept in PostgreSQL"
        assert [c.name for c in a.get_table(f"main.{name}.t").columns][:2] == ["id", "v"]
        assert [p.name for p in a.list_partitions(f"main.{name}.t")] == ["ds=2024-01-01", "ds=2024-01-02"]
        assert f"{name}_hms" in a.list_databases("main")
    with hms_connection(pair.a.hms_address) as ha:
        assert ha.get_partition_names(name, "t", -1) == ["ds=2024-01-01", "ds=2024-01-02"]
        assert ha.get_table(name, "t").tableName == "t"


def _leading(daemon: Daemon) -> bool | None:
    status, body = http_get(f"{daemon.http}/metrics", timeout=5.0)
    found = re.search(r"^catalogd_leader (\S+)$", body, re.MULTILINE) if status == 200 else None
    return None if found is None else float(found.group(1)) == 1.0


def test_the_pair_elects_one_leader_through_the_database(pair: Pair) -> None:
    """The lease's terms are views in the shared database, whose unique key lets one claim win."""
    wait_until(lambda: sorted([_leading(pair.a), _leading(pair.b)]) == [False, True], 60,
               what="exactly one of the pair to lead", every=0.25)
    views = pair.server.sql('SELECT "TBL_NAME" FROM "TBLS" WHERE "TBL_NAME" LIKE \'%catalogd_stage__leader_%\'',
                            pair.database).split()
    assert views and all(v.startswith(LEASE_TABLE_PREFIX) for v in views), views
    with CatalogClient(pair.b.address) as b:
        status = b.cluster_status()
    assert status.leader in (pair.a.address, pair.b.address) and status.lease_store
    assert all(m.up for m in status.members)

    # Two claims of one view at once, one through each embedded metastore: exactly one wins. (A
    # name of its own: a term beyond the pair's would end its leader's term.)
    outcomes: list[str] = []
    name = ""

    def claim(port: int, key_file: Path) -> None:
        view = lease_view(1, {"catalogd.leader.member": f"racer:{port}"})
        view.tableName = name
        try:
            with hms_connection(("127.0.0.1", port), key_file=key_file) as c:
                c.create_table(view)
            outcomes.append("won")
        except Exception as e:
            outcomes.append(type(e).__name__)

    for attempt in range(3):
        name = f"leader_race_{os.getpid()}_{attempt}"
        outcomes.clear()
        # Each daemon's metastore takes its own daemon's key (one database, two keys).
        racers = [threading.Thread(target=claim, args=(port, metastore_key_file(d.data_dir)))
                  for port, d in zip(pair.metastore_ports, (pair.a, pair.b), strict=True)]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(60)
        # Both answered: one claim won, the other lost to the existing view or to the unique key
        # (MetaException: both passed HMS's check, the database refused the second insert), not to a fault.
        assert len(outcomes) == 2 and outcomes.count("won") == 1, outcomes
        assert {o for o in outcomes if o != "won"} <= {"AlreadyExistsException", "MetaException"}, outcomes
        assert pair.server.sql(f'SELECT count(*) FROM "TBLS" WHERE "TBL_NAME" = \'{name}\'', pair.database) == "1"
        with hms_connection(("127.0.0.1", pair.metastore_ports[0]), key_file=metastore_key_file(pair.a.data_dir)) as c:
            c.drop_table("default", name, False)


def test_each_metastore_on_the_shared_database_takes_its_own_daemon_s_key_only(pair: Pair) -> None:
    """One database, two embedded metastores, two keys (issue 31, row 2): a key opens its own
    daemon's metastore only (no key is for catalogd's own OS user, which this test runs as:
    test_metastore_access runs another user)."""
    keys = [metastore_key_file(d.data_dir) for d in (pair.a, pair.b)]
    assert keys[0].read_text() != keys[1].read_text()
    for port, own, other in zip(pair.metastore_ports, keys, reversed(keys), strict=True):
        with hms_connection(("127.0.0.1", port), key_file=own) as c:
            assert "default" in c.get_all_databases()
        with pytest.raises((TTransportException, OSError, EOFError)), \
                hms_connection(("127.0.0.1", port), key_file=other) as c:
            c.get_all_databases()


def test_the_password_shows_nowhere_but_the_private_hive_site(pair: Pair) -> None:
    secret = pair.server.password
    for daemon in (pair.a, pair.b):
        for pid in metastore_pids(daemon.data_dir):
            # The command line is everyone's to read (ps); the environment of A and its JVM holds the
            # variable its config names, as any process given a secret through its environment does.
            assert secret not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        assert secret not in Path(f"/proc/{daemon.pid}/cmdline").read_bytes().decode(errors="replace")
        logs = [daemon.log_path, *sorted((daemon.data_dir / "logs").glob("*"))]
        assert len(logs) > 1
        for log in logs:
            assert secret not in log.read_text(errors="replace"), log
        assert "database postgresql://catalogd:***@127.0.0.1:" in log_text(daemon)
        site = daemon.data_dir / "catalogs" / "main" / "conf" / "hive-site.xml"
        assert secret in site.read_text()
        assert site.stat().st_mode & 0o777 == 0o600
        assert site.parent.stat().st_mode & 0o777 == 0o700


# ---------------------------------------------------------------- bad values: no PostgreSQL needed

def _serve(config: Path) -> subprocess.CompletedProcess[str]:
    # A config error is found before any metastore starts: far less than this.
    return subprocess.run([str(CATALOGD), "serve", "--config", str(config)], capture_output=True, text=True,
                          timeout=60, env=clean_env())


@pytest.mark.parametrize(("entry", "key", "message"), [
    ({"metastore-db": "mysql://u:hunter2hunter2@h:3306/meta"}, "metastore-db", "unsupported database 'mysql'"),
    ({"metastore-db": "postgresql://u:hunter2hunter2@h:5432"}, "metastore-db", "the database name is missing"),
    ({"metastore-db": "postgresql://u:hunter2hunter2@h:99999/m"}, "metastore-db", "the port must be a number"),
    ({"metastore-db": "postgresql://u:hunter2hunter2@h/m", "connection": {"hive.metastore.uris": "thrift://h:9083"}},
     "metastore-db", "only used by an embedded metastore"),
    ({"metastore-db-password-file": "PASSWORD_FILE", "metastore-db": "postgresql://u@h/m"},
     "metastore-db-password-file", "readable by group or others"),
])
def test_a_bad_metastore_db_exits_2_naming_the_key(tmp_path: Path, entry: dict[str, Any], key: str,
                                                   message: str) -> None:
    password_file = tmp_path / "password"
    password_file.write_text("hunter2hunter2\n")
    password_file.chmod(0o644)
    catalog = embedded_catalog("main")
    catalog.update({k: (str(password_file) if v == "PASSWORD_FILE" else v) for k, v in entry.items()})
    data_dir = tmp_path / "data"
    config = write_config(tmp_path / "c.yaml", port=free_port(), http_port=free_port(), data_dir=data_dir,
                          catalogs=[catalog])
    done = _serve(config)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: config: {config}: catalogs[0].{key}: "), lines[0]
    assert message in lines[0]
    assert "hunter2" not in done.stderr + done.stdout
    assert not (data_dir / "catalogs").exists(), "no metastore was started"


#: ``catalogd serve`` as the console script runs it, on a machine without the PostgreSQL JDBC driver.
WITHOUT_DRIVER = """
import pathlib, sys
import catalogd.metastore.database
catalogd.metastore.database.POSTGRESQL_JAR = pathlib.Path(sys.argv[1])
from catalogd.cli import main
sys.exit(main(["serve", "--config", sys.argv[2]]))
"""


def test_a_missing_jdbc_driver_exits_2_naming_the_key_and_the_package(tmp_path: Path) -> None:
    absent = tmp_path / "postgresql.jar"
    catalog = embedded_catalog("main", **{"metastore-db": "postgresql://u:hunter2hunter2@127.0.0.1:1/m"})
    data_dir = tmp_path / "data"
    config = write_config(tmp_path / "c.yaml", port=free_port(), http_port=free_port(), data_dir=data_dir,
                          catalogs=[catalog])
    done = subprocess.run([sys.executable, "-c", WITHOUT_DRIVER, str(absent), str(config)], capture_output=True,
                          text=True, timeout=60, env=clean_env())
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: config: catalogs[main].metastore-db: the PostgreSQL JDBC driver {absent} is missing: "
        "install it (apt-get install libpostgresql-jdbc-java)")
    assert "hunter2" not in done.stderr + done.stdout
    assert metastore_pids(data_dir) == []
