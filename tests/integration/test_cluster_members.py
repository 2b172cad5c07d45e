"""Two members of a cluster on one PostgreSQL database (each with its own embedded HMS).

Caches agree: a write through A is seen through B long before ``cache.ttl`` (60 s here, so only
the invalidations between members can explain it), through the Thrift API and through the HMS
endpoint; a member that hangs gets them once it is back; a forged or malformed invalidation
changes nothing.

Clients fail over (the last test, which SIGKILLs a member): an open Spark session whose member
dies runs its next query through the other; a stage begun through the dead member keeps its
lease through heartbeats sent to the other and commits there.

The session's PostgreSQL pair serves the module (tests/integration/pg_pair.py); the member the
last test kills starts again for the next module that uses the pair.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.errors import TableNotFoundError
from catalogd.hive_idl import ttypes
from catalogd.model import StageState
from catalogd.server.cache_peers import INVALIDATIONS, SIGNATURE_HEADER, invalidation_key, sign
from catalogd.spark.conf import spark_conf_for
from catalogd.spark_common import staged_table

from .helpers import Daemon, SparkChild, hms_connection
from .pg_pair import PAIR_SECRET, PgPairs
from .pg_pair import PgPair as Pair

pytestmark = pytest.mark.integration

#: The pair's stage key, which also keys the invalidations between its members.
KEY = PAIR_SECRET
#: How long a test waits for B to see A's write (a busy machine; the benchmark measures the real figure).
SEEN_WITHIN = 20.0


@pytest.fixture(scope="module")
def pair(pg_pairs: PgPairs) -> Iterator[Pair]:
    """The session's PostgreSQL pair (tests/integration/pg_pair.py), its caches 60 s long."""
    yield pg_pairs.get()
    if pg_pairs.pair is not None:
        # The last test killed a member: it starts again now, while other modules run.
        pg_pairs.pair.respawn()


def _comment(client: CatalogClient, name: str) -> str | None:
    return client.get_table(name).comment


def test_ddl_through_a_is_seen_through_b_before_the_ttl(pair: Pair, unique_name: Any) -> None:
    db = unique_name("coh")
    with CatalogClient(pair.a.address) as a, CatalogClient(pair.b.address) as b:
        a.create_database(f"main.{db}")
        wait_until(lambda: db in b.list_databases("main"), SEEN_WITHIN, what="A's database through B")
        assert b.list_tables(f"main.{db}") == []  # B caches the empty listing
        a.create_table(f"main.{db}.t", "id bigint", comment="first")
        wait_until(lambda: b.list_tables(f"main.{db}") == ["t"], SEEN_WITHIN, what="A's table listed through B")
        assert _comment(b, f"main.{db}.t") == "first"  # cached by B now
        a.alter_table(f"main.{db}.t", comment="second")
        wait_until(lambda: _comment(b, f"main.{db}.t") == "second", SEEN_WITHIN, what="A's alter through B")
        a.drop_table(f"main.{db}.t")

        def gone() -> bool:
            try:
                b.get_table(f"main.{db}.t")
            except TableNotFoundError:
                return True
            return False

        wait_until(gone, SEEN_WITHIN, what="A's drop through B")


def test_hms_endpoint_writes_reach_the_other_member_s_endpoint(pair: Pair, unique_name: Any) -> None:
    db = unique_name("cohhms")
    with hms_connection(pair.a.hms_address) as ha, hms_connection(pair.b.hms_address) as hb:
        ha.create_database(ttypes.Database(name=db, description="through A", parameters={}))
        wait_until(lambda: db in hb.get_all_databases(), SEEN_WITHIN, what="A's database via B's endpoint")
        assert hb.get_database(db).description == "through A"  # cached by B
        found = ha.get_database(db)
        found.parameters = {**(found.parameters or {}), "altered": "through A"}  # HMS 2.3 alters parameters
        ha.alter_database(db, found)
        wait_until(lambda: (hb.get_database(db).parameters or {}).get("altered") == "through A", SEEN_WITHIN,
                   what="A's alter_database via B's endpoint")


def test_a_member_that_hung_gets_the_invalidations_it_missed(pair: Pair, unique_name: Any) -> None:
    db = unique_name("cohstop")
    with CatalogClient(pair.a.address) as a:
        a.create_database(f"main.{db}")
        a.create_table(f"main.{db}.t", "id bigint", comment="before")
    with CatalogClient(pair.b.address) as b:
        wait_until(lambda: _comment(b, f"main.{db}.t") == "before", SEEN_WITHIN, what="the table through B")
    os.kill(pair.b.pid, signal.SIGSTOP)
    try:
        with CatalogClient(pair.a.address) as a:
            a.alter_table(f"main.{db}.t", comment="while B hung")
        time.sleep(1.0)  # A's sends to B fail (or wait) meanwhile: they are retried
    finally:
        os.kill(pair.b.pid, signal.SIGCONT)
    with CatalogClient(pair.b.address) as b:
        wait_until(lambda: _comment(b, f"main.{db}.t") == "while B hung", SEEN_WITHIN,
                   what="the alter made while B hung, through B")


def _post(daemon: Daemon, body: bytes, signature: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if signature is not None:
        headers[SIGNATURE_HEADER] = signature
    request = urllib.request.Request(f"{daemon.http}{INVALIDATIONS}", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def _change_behind_the_caches(pair: Pair, db: str, table: str, comment: str) -> None:
    """Set a table's comment in the shared metastore database itself: no member hears of it."""
    changed = pair.server.sql(
        'UPDATE "TABLE_PARAMS" SET "PARAM_VALUE" = \'' + comment + '\' WHERE "PARAM_KEY" = \'comment\' '
        'AND "TBL_ID" = (SELECT t."TBL_ID" FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
        'WHERE d."NAME" = \'' + db + '\' AND t."TBL_NAME" = \'' + table + '\') RETURNING "TBL_ID"',
        database=pair.database)
    assert changed, f"no comment of {db}.{table} in the metastore database"


def test_forged_or_malformed_invalidations_change_nothing(pair: Pair, unique_name: Any) -> None:
    db = unique_name("cohforge")
    name = f"main.{db}.t"
    with CatalogClient(pair.b.address) as b:
        b.create_database(f"main.{db}")
        b.create_table(name, "id bigint", comment="cached")
        assert _comment(b, name) == "cached"  # in B's cache now
    # Only an invalidation can make B answer the new comment before its cache's TTL (60 s).
    _change_behind_the_caches(pair, db, "t", "behind the cache")
    body = json.dumps({"v": 1, "from": "x", "sent": time.time(), "scopes": [["main", db, "t"]]}).encode()
    assert _post(pair.b, body, None) == 401
    assert _post(pair.b, body, sign(invalidation_key(b"another deployment's key"), body)) == 401
    key = invalidation_key(KEY.encode())
    old = json.dumps({"v": 1, "from": "x", "sent": time.time() - 3600, "scopes": [["main", db, "t"]]}).encode()
    assert _post(pair.b, old, sign(key, old)) == 400  # a replay from an hour ago
    bad = json.dumps({"v": 1, "from": "x", "sent": time.time(), "scopes": [["main", db]]}).encode()
    assert _post(pair.b, bad, sign(key, bad)) == 400
    with CatalogClient(pair.b.address) as b:
        assert _comment(b, name) == "cached", "a refused invalidation emptied B's cache"
        assert _post(pair.b, body, sign(key, body)) == 204  # the deployment's own: accepted, and it acts
        wait_until(lambda: _comment(b, name) == "behind the cache", SEEN_WITHIN, what="the signed invalidation")
    status, text = _metrics(pair.b)
    assert status == 200
    assert 'catalogd_cache_invalidations_total{outcome="rejected"}' in text
    rejected = [line for line in text.splitlines()
                if line.startswith('catalogd_cache_invalidations_total{outcome="rejected"}')]
    assert float(rejected[0].split()[-1]) >= 4
    assert KEY not in pair.b.log_path.read_text()


def _metrics(daemon: Daemon) -> tuple[int, str]:
    with urllib.request.urlopen(f"{daemon.http}/metrics", timeout=30) as response:
        return int(response.status), response.read().decode()


def _open_hms_connections(daemon: Daemon) -> float:
    _, text = _metrics(daemon)
    found = re.search(r"^catalogd_hms_connections_open (\S+)$", text, re.MULTILINE)
    assert found, "catalogd_hms_connections_open not in /metrics"
    return float(found.group(1))


def test_spark_and_a_stage_go_on_through_the_other_member_when_theirs_is_killed(
        pair: Pair, unique_name: Any, tmp_path: Path) -> None:
    db = unique_name("fail")
    with CatalogClient(pair.a.address) as a:
        a.create_database(f"main.{db}")
        conf = spark_conf_for(a.get_catalog("main"))
    assert conf["spark.hadoop.hive.metastore.uris"].count("thrift://") == 2  # every member's endpoint
    child = SparkChild.start(tmp_path / "child.py", conf)
    try:
        assert child.answer() == {"ready": True}
        assert child.sql(f"CREATE TABLE {db}.t (id INT) STORED AS PARQUET") == {"rows": []}
        assert child.sql(f"INSERT INTO {db}.t VALUES (1)") == {"rows": []}
        # Hive's client picks a member at random: the one Spark holds a connection to dies.
        used = wait_until(lambda: [d for d in (pair.a, pair.b) if _open_hms_connections(d) > 0], SEEN_WITHIN,
                          what="Spark's connection to a member")
        assert len(used) == 1, "Spark talks to one member"
        dead = used[0]
        alive = pair.b if dead is pair.a else pair.a
        with CatalogClient(f"{dead.address},{alive.address}", timeout=30) as client, \
                staged_table(f"main.{db}.staged", "id bigint", lease=6.0, client=client) as staged:
            assert client.port == int(dead.address.rsplit(":", 1)[1])
            dead.proc.kill()
            dead.proc.wait(30)
            killed_at = time.monotonic()
            # The open session's next queries go through the other member.
            assert child.sql(f"INSERT INTO {db}.t VALUES (2)") == {"rows": []}
            assert child.sql(f"SELECT id FROM {db}.t ORDER BY id") == {"rows": [[1], [2]]}
            # Two leases without the dead member (counted from the kill: the queries above were
            # part of them): only heartbeats through the other keep the stage.
            time.sleep(max(0.0, killed_at + 12.0 - time.monotonic()))
            assert client.get_stage(staged.stage.id).state is StageState.OPEN
        assert staged.result is not None and staged.result.state is StageState.COMMITTED
        with CatalogClient(alive.address) as b:
            assert "staged" in b.list_tables(f"main.{db}")
        assert child.sql(f"SELECT count(*) FROM {db}.staged") == {"rows": [[0]]}
    finally:
        if child.proc.stdin is not None:
            child.proc.stdin.close()
        try:
            child.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.proc.kill()
            child.proc.wait()
