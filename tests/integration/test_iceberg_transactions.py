"""Atomic multi-table commits: ``POST /iceberg/v1/{prefix}/transactions/commit``.

The bodies are pyiceberg's own update and requirement models (a ``Transaction`` staged and not
committed, serialized as pyiceberg's ``CommitTableRequest``), sent as raw HTTP. The crash test
runs a daemon of its own on the session daemon's metastore (which keeps the dead daemon's
locks) with a fault point that SIGKILLs it mid-commit.
"""

from __future__ import annotations

import json
import signal
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.catalog.rest import CommitTableRequest, RestCatalog
from pyiceberg.table import Table, TableIdentifier
from pyiceberg.table.update import AssertCurrentSchemaId, AssertTableUUID

from catalogd.client import CatalogClient
from catalogd.hive_idl import ttypes

from .helpers import Daemon, hms_connection, metastore_key_file

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("id", pa.int64())])
TABLES = ("a", "b", "c")


def rest(daemon: Daemon, warehouse: str = "main") -> RestCatalog:
    return RestCatalog("rest", uri=f"{daemon.http}/iceberg", warehouse=warehouse)


def change(table: Table, stage: Callable[[Any], None], extra: tuple[Any, ...] = ()) -> dict[str, Any]:
    """One table-change of a transaction body: what ``stage(transaction)`` staged on ``table``,
    with the requirements pyiceberg adds when it commits (and ``extra`` ones)."""
    tx = table.transaction()
    stage(tx)
    requirements = (*tx._requirements, AssertTableUUID(uuid=table.metadata.table_uuid), *extra)
    namespace, name = table.name()[-2:]
    request = CommitTableRequest(identifier=TableIdentifier(namespace=[namespace], name=name),
                                 requirements=requirements, updates=tx._updates)
    result: dict[str, Any] = json.loads(request.model_dump_json(by_alias=True, exclude_none=True))
    return result


def set_txn(value: int) -> Callable[[Any], None]:
    return lambda tx: tx.set_properties(txn=str(value))


def append(value: int) -> Callable[[Any], None]:
    def stage(tx: Any) -> None:
        tx.append(pa.table({"id": [value]}, schema=SCHEMA))
        tx.set_properties(txn=str(value))
    return stage


def post(daemon: Daemon, changes: list[dict[str, Any]], warehouse: str = "main",
         timeout: float = 120.0) -> tuple[int, dict[str, Any]]:
    """POST the transaction; (status, the JSON answer or {})."""
    request = urllib.request.Request(f"{daemon.http}/iceberg/v1/{warehouse}/transactions/commit",
                                     data=json.dumps({"table-changes": changes}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
            return response.status, json.loads(body) if body else {}
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def make_tables(catalog: RestCatalog, namespace: str, names: tuple[str, ...] = TABLES) -> list[Table]:
    return [catalog.create_table(f"{namespace}.{name}", SCHEMA, properties={"txn": "0"}) for name in names]


def state(catalog: RestCatalog, namespace: str, names: tuple[str, ...] = TABLES) -> dict[str, tuple[str, str]]:
    """Each table's (metadata location, txn property), loaded through REST."""
    out = {}
    for name in names:
        table = catalog.load_table(f"{namespace}.{name}")
        out[name] = (table.metadata_location, table.properties.get("txn", ""))
    return out


def metadata_files(table: Table) -> set[str]:
    directory = Path(table.metadata.location.removeprefix("file:")) / "metadata"
    return {p.name for p in directory.glob("*.metadata.json")}


@pytest.fixture
def namespace(daemon: Daemon) -> Iterator[str]:
    name = f"txn_{uuid.uuid4().hex[:8]}"
    catalog = rest(daemon)
    catalog.create_namespace(name)
    yield name
    for ident in catalog.list_tables(name):
        catalog.drop_table(ident)
    catalog.drop_namespace(name)


# ---------------------------------------------------------------- commits


def test_three_tables_commit_together(daemon: Daemon, namespace: str) -> None:
    catalog = rest(daemon)
    tables = make_tables(catalog, namespace)
    status, body = post(daemon, [change(t, append(1)) for t in tables])
    assert status == 204, body
    for name in TABLES:
        table = catalog.load_table(f"{namespace}.{name}")
        assert table.properties["txn"] == "1"
        assert len(table.metadata.snapshots) == 1
        assert table.scan().to_arrow().column("id").to_pylist() == [1]
    # No intent or lock record left behind.
    assert not list((daemon.data_dir / "iceberg-intents").glob("*.json"))


def test_a_failed_requirement_moves_nothing_and_releases_every_lock(daemon: Daemon, namespace: str) -> None:
    catalog = rest(daemon)
    tables = make_tables(catalog, namespace)
    before = state(catalog, namespace)
    files = {t.name()[-1]: metadata_files(t) for t in tables}
    changes = [change(t, set_txn(1)) for t in tables[:2]]
    changes.append(change(tables[2], set_txn(1), (AssertCurrentSchemaId(current_schema_id=99),)))
    status, body = post(daemon, changes)
    assert status == 409, body
    assert body["error"]["type"] == "CommitFailedException"
    assert f"{namespace}.c" in body["error"]["message"]
    assert state(catalog, namespace) == before
    # Checked before anything is written: no new metadata file, referenced or not.
    assert {t.name()[-1]: metadata_files(t) for t in tables} == files
    # Every lock released: a single-table commit and a transaction on the same tables go through
    # (a lock left behind would keep them waiting for server.hms-lock-timeout, 5 minutes).
    table = catalog.load_table(f"{namespace}.a")
    table.transaction().set_properties(txn="2").commit_transaction()
    tables = [catalog.load_table(f"{namespace}.{name}") for name in TABLES]
    status, body = post(daemon, [change(t, set_txn(3)) for t in tables])
    assert status == 204, body
    assert {name: txn for name, (_, txn) in state(catalog, namespace).items()} == {"a": "3", "b": "3", "c": "3"}


def test_bad_transactions_are_refused_clearly(daemon: Daemon, namespace: str) -> None:
    catalog = rest(daemon)
    a, b = make_tables(catalog, namespace, ("a", "b"))
    before = state(catalog, namespace, ("a", "b"))
    twice = post(daemon, [change(a, set_txn(1)), change(a, set_txn(2))])
    assert twice[0] == 400 and "appears twice" in twice[1]["error"]["message"], twice
    missing = change(b, set_txn(1))
    missing["identifier"]["name"] = "no_such_table"
    status, body = post(daemon, [change(a, set_txn(1)), missing])
    assert status == 404 and body["error"]["type"] == "NoSuchTableException", body
    create = change(b, set_txn(1))
    create["requirements"] = [{"type": "assert-create"}]
    status, body = post(daemon, [create])
    assert status == 400 and "existing tables" in body["error"]["message"], body
    # A namespace the default catalog's warehouse would route to another catalog (its prefix).
    other = change(b, set_txn(1))
    other["identifier"]["namespace"] = ["scratch__x"]
    status, body = post(daemon, [change(a, set_txn(1)), other])
    assert status == 400 and "scratch" in body["error"]["message"], body
    assert state(catalog, namespace, ("a", "b")) == before


def test_memory_catalog_transaction(daemon: Daemon) -> None:
    """The same through a memory catalog's warehouse (its locks by their 2.3 names)."""
    catalog = rest(daemon, "scratch")
    name = f"txn_{uuid.uuid4().hex[:8]}"
    catalog.create_namespace(name)
    try:
        tables = make_tables(catalog, name, ("a", "b"))
        status, body = post(daemon, [change(t, append(5)) for t in tables], warehouse="scratch")
        assert status == 204, body
        assert {n: txn for n, (_, txn) in state(catalog, name, ("a", "b")).items()} == {"a": "5", "b": "5"}
    finally:
        for ident in catalog.list_tables(name):
            catalog.drop_table(ident)
        catalog.drop_namespace(name)


# ---------------------------------------------------------------- readers


def test_readers_through_the_hms_endpoint_never_see_a_mixed_state(daemon: Daemon, namespace: str) -> None:
    """While transactions move ``a`` and ``b`` together: one ``get_table_objects_by_name`` always
    answers them equal; pyiceberg's ``HiveCatalog`` loading one then the other never finds the
    second older than the first (it may be newer: a transaction between the two loads); nor
    does the catalogd API's get_table."""
    catalog = rest(daemon)
    make_tables(catalog, namespace, ("a", "b"))
    rounds = 25
    stop = threading.Event()
    problems: list[str] = []
    reads = [0, 0, 0]

    def together() -> None:
        with hms_connection(daemon.hms_address, "reader") as c:
            while not stop.is_set():
                found = {t.tableName: (t.parameters or {}).get("txn")
                         for t in c.get_table_objects_by_name(namespace, ["a", "b"])}
                reads[0] += 1
                if found["a"] != found["b"]:
                    problems.append(f"get_table_objects_by_name: {found}")

    def one_by_one() -> None:
        hive = HiveCatalog("hms", uri=daemon.hms_uri)
        n = 0
        while not stop.is_set():
            first, second = ("a", "b") if n % 2 == 0 else ("b", "a")
            x = int(hive.load_table(f"{namespace}.{first}").properties["txn"])
            y = int(hive.load_table(f"{namespace}.{second}").properties["txn"])
            reads[1] += 1
            n += 1
            if y < x:
                problems.append(f"{first} at {x}, then {second} at {y}")

    def api() -> None:
        with CatalogClient(daemon.address, timeout=60.0) as client:
            n = 0
            while not stop.is_set():
                first, second = ("a", "b") if n % 2 == 0 else ("b", "a")
                x = int(client.get_table(f"main.{namespace}.{first}").properties["txn"])
                y = int(client.get_table(f"main.{namespace}.{second}").properties["txn"])
                reads[2] += 1
                n += 1
                if y < x:
                    problems.append(f"API: {first} at {x}, then {second} at {y}")

    threads = [threading.Thread(target=f, daemon=True) for f in (together, one_by_one, api)]
    for thread in threads:
        thread.start()
    try:
        for value in range(1, rounds + 1):
            tables = [catalog.load_table(f"{namespace}.{name}") for name in ("a", "b")]
            status, body = post(daemon, [change(t, set_txn(value)) for t in tables])
            assert status == 204, body
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert not problems, problems[:10]
    assert min(reads) > 0, reads
    print(f"\n{rounds} transactions; {reads[0]} two-table reads, {reads[1]} pairs of HMS loads, "
          f"{reads[2]} pairs of API reads")


def test_overlapping_transactions_in_opposite_orders_all_commit(daemon: Daemon, namespace: str) -> None:
    """Two clients commit {a, b, c} and {c, b, a} (and {b, c}) at once, again and again: one
    lock order, so none waits on the other for good; each transaction applies on top of the
    last (its requirements are the table's uuid only), so every one commits."""
    catalog = rest(daemon)
    make_tables(catalog, namespace)
    rounds = 8
    answers: list[int] = []
    failures: list[dict[str, Any]] = []
    done: dict[str, set[int]] = {"a": set(), "b": set(), "c": set()}

    def client(names: tuple[str, ...], base: int) -> None:
        own = rest(daemon)
        for i in range(rounds):
            tables = [own.load_table(f"{namespace}.{name}") for name in names]
            stage = lambda tx, n=base + i: tx.set_properties(**{f"t{n}": "x"})  # noqa: E731
            status, body = post(daemon, [change(t, stage) for t in tables])
            answers.append(status)
            if status != 204:
                failures.append(body)
            if status == 204:
                for name in names:
                    done[name].add(base + i)

    threads = [threading.Thread(target=client, args=(names, base), daemon=True)
               for names, base in ((("a", "b", "c"), 0), (("c", "b", "a"), 100), (("b", "c"), 200))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads)
    assert answers == [204] * len(answers) and len(answers) == 3 * rounds, failures
    for name in TABLES:
        properties = catalog.load_table(f"{namespace}.{name}").properties
        assert {f"t{n}" for n in done[name]} <= set(properties), name


def test_hms_side_iceberg_writers_serialize_with_transactions(daemon: Daemon, namespace: str) -> None:
    """pyiceberg's ``HiveCatalog`` on the HMS endpoint commits to ``a`` (each commit adds its own
    property) while transactions move ``a`` and ``b``: both take the one HMS lock on ``a``, so no
    commit of either is lost (a transaction applies its updates to the pointer it reads under
    the lock; a writer holding another lock would be overwritten)."""
    catalog = rest(daemon)
    make_tables(catalog, namespace, ("a", "b"))
    commits = 15
    errors: list[str] = []

    def hms_writer() -> None:
        hive = HiveCatalog("hms", uri=daemon.hms_uri)
        for i in range(commits):
            try:
                table = hive.load_table(f"{namespace}.a")
                table.transaction().set_properties(**{f"hms_{i}": "x"}).commit_transaction()
            except Exception as e:  # a commit that failed is one the assertion below need not find
                errors.append(f"hms_{i}: {e!r}")

    writer = threading.Thread(target=hms_writer, daemon=True)
    writer.start()
    for value in range(1, commits + 1):
        tables = [catalog.load_table(f"{namespace}.{name}") for name in ("a", "b")]
        status, body = post(daemon, [change(t, set_txn(value)) for t in tables])
        assert status == 204, body
    writer.join(300)
    assert not writer.is_alive()
    properties = catalog.load_table(f"{namespace}.a").properties
    landed = {f"hms_{i}" for i in range(commits)} - {e.split(":")[0] for e in errors}
    assert landed <= set(properties), (sorted(landed - set(properties)), errors)
    assert properties["txn"] == str(commits)
    assert len(landed) >= commits // 2, errors


# ---------------------------------------------------------------- a daemon killed mid-commit


def _kill_during(daemon: Daemon, changes: list[dict[str, Any]]) -> None:
    """Send the transaction to a daemon armed to SIGKILL itself in it; wait until it is gone."""
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        post(daemon, changes, timeout=120)
    daemon.proc.wait(60)
    assert daemon.proc.returncode == -signal.SIGKILL, daemon.log()


def test_a_daemon_killed_mid_commit_rolls_forward_or_moved_nothing(daemon: Daemon,
                                                                   daemon_factory: Callable[..., Daemon]) -> None:
    """SIGKILL after the first pointer moved: started again, every table is at the new snapshot.
    SIGKILL with every lock taken, before the intent: every table is at the old one. Either way
    the dead daemon's locks (which the metastore keeps for hms-lock-timeout, 5 minutes) are
    reused or released at the start: the next commits do not wait for them.

    The daemon's ``main`` is a remote hive catalog on the session daemon's metastore (which
    outlives the kills and keeps the locks; no metastore JVM of its own to start three times)."""
    with CatalogClient(daemon.address, timeout=60.0) as client:
        uri = client.get_catalog("main").metastore
    main = {"name": "main", "type": "hive", "default": True, "connection": {"hive.metastore.uris": uri},
            "metastore-key-file": str(metastore_key_file(daemon.data_dir))}
    first = daemon_factory(name="txn", catalogs=[main], env={"CATALOGD_FAULT_POINTS": "iceberg.txn.moved-one"})
    namespace = f"killed_{uuid.uuid4().hex[:8]}"
    catalog = rest(first)
    catalog.create_namespace(namespace)
    tables = make_tables(catalog, namespace)
    old = state(catalog, namespace)
    _kill_during(first, [change(t, append(1)) for t in tables])
    intents = list((first.data_dir / "iceberg-intents").glob("*.json"))
    assert len(intents) == 1 and json.loads(intents[0].read_text())["state"] == "moving"

    # Started again, armed for the second kill (the roll-forward at the start passes no fault point).
    second = daemon_factory(name="txn", same_as=first, env={"CATALOGD_FAULT_POINTS": "iceberg.txn.locked"})
    assert "finished by roll-forward" in second.log(200)
    catalog = rest(second)
    after = state(catalog, namespace)
    for name in TABLES:
        table = catalog.load_table(f"{namespace}.{name}")
        assert after[name][1] == "1" and after[name][0] != old[name][0], after
        assert table.scan().to_arrow().column("id").to_pylist() == [1]
    assert not list((second.data_dir / "iceberg-intents").glob("*.json"))
    # The locks were reused and released: a single-table commit goes through at once.
    catalog.load_table(f"{namespace}.a").transaction().set_properties(txn="2").commit_transaction()
    before = state(catalog, namespace)
    tables = [catalog.load_table(f"{namespace}.{name}") for name in TABLES]
    _kill_during(second, [change(t, append(3)) for t in tables])

    third = daemon_factory(name="txn", same_as=first)
    catalog = rest(third)
    assert state(catalog, namespace) == before
    assert not list((third.data_dir / "iceberg-intents").glob("*.json"))
    # Its locks were released at the start: a transaction on the same tables goes through.
    tables = [catalog.load_table(f"{namespace}.{name}") for name in TABLES]
    status, body = post(third, [change(t, set_txn(4)) for t in tables])
    assert status == 204, body
    with hms_connection(third.hms_address, "checker") as c:
        held = c.show_locks(ttypes.ShowLocksRequest(dbname=namespace)).locks or []
    assert not held, held
    for ident in catalog.list_tables(namespace):
        catalog.drop_table(ident)
    catalog.drop_namespace(namespace)
