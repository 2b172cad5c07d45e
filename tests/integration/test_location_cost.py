"""Judging a location costs per object, not per catalog: counted in metastore calls, not timed.

A recording relay sits between a daemon and a real metastore (the session daemon's embedded
one) holding a database of 150 tables written straight into it (every tenth one partitioned).
Once the daemon's first background pass has read them, every write through catalogd -- the
Thrift API's creates and drops, a partition's add and drop, the HMS endpoint's add_partitions
and a cascade drop of a database -- makes a handful of metastore calls, none of them about
those 150 tables: a scan of the catalog would name them, in more calls than a write may make
(two batches of tables and the partitions of fifteen).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from catalogd.client import CatalogClient
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.metastore.access_key import file_key, send_key
from catalogd.metastore.messages import MessageStream, decode

from .helpers import hms_connection, metastore_key_file

pytestmark = pytest.mark.integration

BULK = "cost_bulk"
#: More than one batch of a pass (100 tables), and more partitioned tables than BOUND.
TABLES = 150
#: Calls a write may make (its own, plus reading what the previous one changed): far below a scan's.
BOUND = 12


def _pass_came(made: list[tuple[str, str]]) -> bool:
    """Whether a background pass made some of ``made`` (a window holding one is measured again):
    only a pass lists the databases or reads the 300 tables, and a cascade lists its own
    database's tables once (a pass lists every database's)."""
    listed = [db for m, db in made if m == "get_all_tables"]
    return any(m == "get_all_databases" or (m == "get_table_objects_by_name" and db == BULK) for m, db in made) \
        or len(listed) != len(set(listed))


class CallRecorder:
    """A TCP relay to ``upstream`` noting every call's method and the database it names."""

    def __init__(self, upstream: tuple[str, int], key_file: Path) -> None:
        self.upstream = upstream
        #: The embedded metastore serves a connection only after its key (sent as catalogd sends it).
        self.key = file_key(key_file)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.create_connection(self.upstream)
        send_key(upstream, self.key)
        calls = MessageStream(client.recv, 64 * 1024 * 1024)
        replies = MessageStream(upstream.recv, 256 * 1024 * 1024)
        with contextlib.suppress(OSError, EOFError), client, upstream:
            while True:
                call = calls.read_message()
                with self._lock:
                    self.calls.append((call.name, _database(call)))
                upstream.sendall(call.raw)
                client.sendall(replies.read_message().raw)

    def mark(self) -> int:
        with self._lock:
            return len(self.calls)

    def since(self, mark: int) -> list[tuple[str, str]]:
        with self._lock:
            return list(self.calls[mark:])

    def close(self) -> None:
        self.listener.close()


def _database(call: Any) -> str:
    """The database a call names (its first string argument that is one), lower-cased; "" if none."""
    args_type = getattr(ThriftHiveMetastore, f"{call.name}_args", None)
    if args_type is None:
        return ""
    try:
        args = decode(args_type(), call.body)
    except Exception:  # a call the relay cannot read is still relayed
        return ""
    for field in ("db_name", "dbname", "dbName", "name"):
        value = getattr(args, field, None)
        if isinstance(value, str):
            return value.lower()
    return ""


def _populate(address: tuple[str, int], key_file: Path) -> None:
    """TABLES tables straight into the metastore (every tenth one with 2 partitions), on 3 connections."""
    def some(start: int) -> None:
        with hms_connection(address, key_file=key_file) as ms:
            for n in range(start, TABLES, 3):
                sd = hms.StorageDescriptor(cols=[hms.FieldSchema("id", "bigint")], location=None,
                                           inputFormat="org.apache.hadoop.mapred.TextInputFormat",
                                           outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                                           serdeInfo=hms.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2."
                                                                   "lazy.LazySimpleSerDe", parameters={}),
                                           parameters={})
                keys = [hms.FieldSchema("ds", "string")] if n % 10 == 0 else []
                ms.create_table(hms.Table(tableName=f"t{n:03d}", dbName=BULK, sd=sd, partitionKeys=keys,
                                          parameters={}, tableType="MANAGED_TABLE"))
                if keys:
                    ms.add_partitions([hms.Partition(values=[str(p)], dbName=BULK, tableName=f"t{n:03d}",
                                                     sd=hms.StorageDescriptor(**{**sd.__dict__, "location": None}),
                                                     parameters={}) for p in range(2)])

    with ThreadPoolExecutor(3) as pool:
        list(pool.map(some, range(3)))


@pytest.fixture(scope="module")
def big(daemon: Any) -> Iterator[tuple[CallRecorder, tuple[str, int]]]:
    """The recorder in front of the session metastore, which holds ``cost_bulk``'s tables.

    The database is left in place: no other test names it, and its files go with the
    session's temporary directory. (Dropping it, a call per table, cost the suite 20 s.)
    """
    config = yaml.safe_load(daemon.config_path.read_text())
    port = next(c for c in config["catalogs"] if c["name"] == "main")["metastore-port"]
    address = ("127.0.0.1", port)
    key_file = metastore_key_file(daemon.data_dir)
    with hms_connection(address, key_file=key_file) as ms:
        ms.create_database(hms.Database(name=BULK, description="", parameters={}))
    _populate(address, key_file)
    recorder = CallRecorder(address, key_file)
    yield recorder, address
    recorder.close()


@pytest.fixture(scope="module")
def behind(big: tuple[CallRecorder, tuple[str, int]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A daemon whose catalog ``cost`` reaches the metastore through the recorder, its first pass done."""
    from .helpers import free_port, start_daemon, write_config

    recorder, _ = big
    root = tmp_path_factory.mktemp("cost")
    config = write_config(root / "catalogd.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
                          catalogs=[{"name": "cost", "type": "hive", "default": True,
                                     "connection": {"hive.metastore.uris": f"thrift://127.0.0.1:{recorder.port}"}}],
                          extra={"cache": {"ttl": "0s"}})
    proc = start_daemon(config, root / "data", root / "catalogd.log")
    try:
        with CatalogClient(proc.address) as c:
            c.create_database("cost.cost_probe")
        # The first pass read the tables (in batches of 100) and the partitioned ones' partitions.
        read = [c for c in recorder.since(0) if c[1] == BULK]
        assert sum(1 for m, _ in read if m == "get_table_objects_by_name") >= TABLES // 100
        assert sum(1 for m, _ in read if m == "get_partitions") >= TABLES // 10
        yield proc
    finally:
        proc.stop()


def _calls(recorder: CallRecorder, op: Any, setup: Any = None) -> list[tuple[str, str]]:
    """The metastore calls ``op`` made (after ``setup``, not counted); measured again (up to 3 times,
    each after its own setup) when a background pass came between."""
    for attempt in range(3):
        ready = setup(attempt) if setup is not None else None
        mark = recorder.mark()
        op(ready) if setup is not None else op()
        made = recorder.since(mark)
        if not _pass_came(made):
            return made
    pytest.fail("a background pass came between every measurement")


def _assert_per_object(made: list[tuple[str, str]], what: str, bound: int = BOUND) -> None:
    assert not [c for c in made if c[1] == BULK], f"{what} read the catalog's other tables: {made}"
    assert len(made) <= bound, f"{what} made {len(made)} metastore calls: {made}"


def test_thrift_api_writes_make_a_few_calls_whatever_the_catalog_holds(big, behind) -> None:
    recorder, _ = big
    names = iter(range(100))
    with CatalogClient(behind.address) as c:
        def create_drop() -> None:
            name = f"cost.cost_probe.t{next(names)}"
            c.create_table(name, "id bigint")
            c.drop_table(name)

        _assert_per_object(_calls(recorder, create_drop), "create+drop", 2 * BOUND)
        c.create_table("cost.cost_probe.p", "id bigint", partitioned_by="ds string")

        def partition() -> None:
            n = str(next(names))
            c.add_partition("cost.cost_probe.p", {"ds": n})
            c.drop_partition("cost.cost_probe.p", {"ds": n})

        _assert_per_object(_calls(recorder, partition), "add+drop partition", 2 * BOUND)


def test_endpoint_add_partitions_and_cascade_drop_cost_per_object(big, behind) -> None:
    recorder, _ = big
    with CatalogClient(behind.address) as c:
        def cascade(attempt: int) -> str:
            name = f"cost.cost_cascade_{attempt}"
            c.create_database(name)
            for n in range(10):
                c.create_table(f"{name}.t{n}", "id bigint")
            return name

        c.create_table("cost.cost_probe.many", "id bigint", partitioned_by="ds string")
        location = c.get_table("cost.cost_probe.many").location
        with hms_connection(behind.hms_address) as endpoint:
            tbl = endpoint.get_table("cost_probe", "many")

            def add_many(attempt: int) -> None:
                endpoint.add_partitions([
                    hms.Partition(values=[f"{attempt}_{p}"], dbName="cost_probe", tableName="many",
                                  sd=hms.StorageDescriptor(**{**tbl.sd.__dict__,
                                                              "location": f"{location}/ds={attempt}_{p}"}),
                                  parameters={}) for p in range(50)])

            made = _calls(recorder, add_many, lambda attempt: attempt)
        # 50 partitions, each claimed: the calls do not grow with them (nor with the catalog).
        _assert_per_object(made, "add_partitions of 50")
        made = _calls(recorder, lambda name: c.drop_database(name, cascade=True), cascade)
        # The 10 tables read in one call, then a drop each (and the last create read again).
        _assert_per_object(made, "cascade drop of 10 tables", 10 + BOUND)
        assert [m for m, _ in made].count("get_table") <= 1, made
