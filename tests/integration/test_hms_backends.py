"""Hive's standalone metastores 4.0.1 and 3.1.3 as remote metastores behind catalogd.

HMS 4.0.1 no longer answers ``get_table`` / ``get_table_objects_by_name`` (HIVE-26537), which
unmodified Spark 4 (its built-in Hive 2.3 client) and catalogd's own client ask: through
catalogd's HMS endpoint Spark works on it all the same (``catalogd.hms.backend_dialect``).

One daemon for the module, two catalogs: ``h4`` (the default, on HMS 4.0.1) and ``h3`` (on
HMS 3.1.3, ``h3__<db>`` on the endpoint); one Spark application of its own (the session's
SparkSession is the session daemon's), driven over a pipe.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from catalogd.client import CatalogClient
from catalogd.dynamic.runner import with_tmp_dir
from catalogd.errors import DatabaseNotFoundError, PermissionDeniedError, TableNotFoundError
from catalogd.hive_idl import ttypes as hms_types
from catalogd.metastore.client import MetastoreClient
from catalogd.model import Column, StageState, TableFormat
from catalogd.spark.conf import spark_conf_for

from .helpers import (
    CATALOGD,
    Daemon,
    SparkChild,
    clean_env,
    free_port,
    local_path,
    log_text,
    start_daemon,
    write_config,
)
from .standalone_hms import StandaloneMetastore, running_metastore

pytestmark = [pytest.mark.integration, pytest.mark.spark]

#: The Spark child: each stdin line a JSON command, ``{"sql": ...}`` or an atomic CTAS through
#: catalogd.spark (``{"ctas": target, "query": ...}``), each answered with one JSON line.
CHILD = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from catalogd import spark as cspark
    from catalogd.client import CatalogClient
    builder = SparkSession.builder.master("local[1]").appName("hms-backends").enableHiveSupport()
    for key, value in json.loads(sys.argv[1]).items():
        builder = builder.config(key, value)
    spark = builder.config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    client = CatalogClient(sys.argv[2], timeout=240.0)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        try:
            if "sql" in command:
                print(json.dumps({"rows": [list(r) for r in spark.sql(command["sql"]).collect()]}), flush=True)
            else:
                stage = cspark.atomic_ctas(spark, command["ctas"], command["query"], client=client)
                print(json.dumps({"state": stage.state.name if stage else None}), flush=True)
        except Exception as e:
            print(json.dumps({"error": f"{type(e).__name__}: {e}"[:3000]}), flush=True)
""")


class Child(SparkChild):
    def run(self, **command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self.answer()

    def rows(self, statement: str) -> list[list[Any]]:
        answer = self.run(sql=statement)
        assert "rows" in answer, answer
        return answer["rows"]  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def hms4() -> Iterator[StandaloneMetastore]:
    """A Hive 4.0.1 standalone metastore for the session, started when a test first asks for it."""
    with running_metastore("4.0.1") as server:
        yield server


@pytest.fixture(scope="session")
def hms3() -> Iterator[StandaloneMetastore]:
    """A Hive 3.1.3 standalone metastore for the session, started when a test first asks for it."""
    with running_metastore("3.1.3") as server:
        yield server


def _catalog(name: str, server: StandaloneMetastore, default: bool = False) -> dict[str, Any]:
    return {
        "name": name, "type": "hive", "default": default,
        # The metastore's own warehouse (its default database's location): catalogd's allowed locations.
        "warehouse": server.warehouse.as_uri(),
        "connection": {"hive.metastore.uris": server.uri, "hive.metastore.connect.timeout": "10s"},
    }


@pytest.fixture(scope="module")
def backends(hms4: StandaloneMetastore, hms3: StandaloneMetastore,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("backends")
    config = write_config(root / "catalogd.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
                          # The metadata cache on, as by default: translated replies are cached like any.
                          catalogs=[_catalog("h4", hms4, default=True), _catalog("h3", hms3)])
    proc = start_daemon(config, root / "data", root / "catalogd.log")
    yield proc
    assert proc.stop() == 0, proc.log()


@pytest.fixture(scope="module")
def child(backends: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Child]:
    """Unmodified Spark 4 on the daemon's HMS endpoint (its built-in Hive 2.3 client), as
    ``catalogd spark-conf`` configures it."""
    root = tmp_path_factory.mktemp("backends-spark")
    with CatalogClient(backends.address) as c:
        conf = spark_conf_for(c.get_catalog("h4"))
    assert conf["spark.hadoop.hive.metastore.uris"] == backends.hms_uri
    java_tmp = root / "tmp"
    java_tmp.mkdir()
    conf = with_tmp_dir({**conf, "spark.sql.warehouse.dir": (root / "spark-warehouse").as_uri()}, java_tmp)
    script = root / "child.py"
    script.write_text(CHILD)
    proc = subprocess.Popen([sys.executable, str(script), json.dumps(conf), backends.address], cwd=root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=clean_env())
    spark = Child(proc)
    try:
        assert spark.answer() == {"ready": True}
        yield spark
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def client(backends: Daemon) -> Iterator[CatalogClient]:
    with CatalogClient(backends.address, timeout=120.0) as c:
        yield c


def _direct(server: StandaloneMetastore) -> MetastoreClient:
    return MetastoreClient([(server.host, server.port)], socket_timeout=60)


def _hms4_table(server: StandaloneMetastore, db: str, name: str) -> hms_types.Table | None:
    """The table as HMS 4 itself has it (its own dialect: get_table_req), None when it has none."""
    ms = _direct(server)
    try:
        return ms.call("get_table_req", hms_types.GetTableRequest(dbName=db, tblName=name)).table
    except hms_types.NoSuchObjectException:
        return None
    finally:
        ms.close()


def test_hms_4_has_no_get_table(hms4):
    """What this module is about: a Hive 2.3 client's get_table, asked of HMS 4.0.1 itself."""
    from thrift.Thrift import TApplicationException

    ms = _direct(hms4)
    try:
        with pytest.raises(TApplicationException, match="Invalid method name"):
            ms.call("get_table", "default", "anything")
    finally:
        ms.close()


def test_catalog_client_round_trip_on_hms_4(client, hms4, backends, unique_name):
    """catalogd's own client and CLI on a remote HMS 4: databases, tables, their alterations and drops."""
    db = f"h4.{unique_name('remote')}"
    info = client.get_catalog("h4")
    assert (info.type, info.metastore) == ("hive", hms4.uri)
    client.create_database(db, comment="on hive 4", properties={"k": "v"})
    try:
        got = client.get_database(db)
        assert (got.comment, got.properties.get("k")) == ("on hive 4", "v")
        assert got.name in client.list_databases("h4")

        client.create_table(f"{db}.t", "id bigint COMMENT 'key', amount decimal(10,2)",
                            partitioned_by="ds string", format="orc", comment="remote table",
                            properties={"team": "data"})
        table = client.get_table(f"{db}.t")
        assert table.columns == [Column("id", "bigint", "key"), Column("amount", "decimal(10,2)")]
        assert table.partition_keys == [Column("ds", "string")]
        assert table.format is TableFormat.ORC
        assert table.comment == "remote table"
        assert table.properties.get("team") == "data"
        assert client.list_tables(db) == ["t"]

        altered = client.alter_table(f"{db}.t", add_columns="note string", set_properties={"x": "1"})
        assert [c.name for c in altered.columns] == ["id", "amount", "note"]

        done = subprocess.run(
            [str(CATALOGD), "--server", backends.address, "--json", "table", "describe", f"{db}.t"],
            capture_output=True, text=True, timeout=60, env=clean_env(),
        )
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert json.loads(done.stdout)["format"] == "orc"

        client.drop_table(f"{db}.t", purge=True)
        with pytest.raises(TableNotFoundError):
            client.get_table(f"{db}.t")
    finally:
        client.drop_database(db, if_exists=True, cascade=True)
    with pytest.raises(DatabaseNotFoundError):
        client.get_database(db)


def test_spark_4_creates_inserts_reads_drops_on_hms_4(child, client, hms4, backends, unique_name):
    db = unique_name("h4db")
    assert child.rows(f"CREATE DATABASE {db}") == []
    assert child.rows(f"CREATE TABLE {db}.t (id BIGINT, name STRING) USING parquet") == []
    assert child.rows(f"INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b')") == []
    assert child.rows(f"SELECT id, name FROM {db}.t ORDER BY id") == [[1, "a"], [2, "b"]]
    assert child.rows(f"CREATE TABLE {db}.p (id BIGINT, ds STRING) USING orc PARTITIONED BY (ds)") == []
    assert child.rows(f"INSERT INTO {db}.p VALUES (1, 'x'), (2, 'y')") == []
    assert child.rows(f"SHOW PARTITIONS {db}.p") == [["ds=x"], ["ds=y"]]
    assert child.rows(f"SELECT count(*) FROM {db}.p WHERE ds = 'y'") == [[1]]
    assert sorted(r[1] for r in child.rows(f"SHOW TABLES IN {db}")) == ["p", "t"]

    # In HMS 4 itself, in its warehouse; and catalogd's own client reads it in HMS 4's dialect.
    stored = _hms4_table(hms4, db, "t")
    assert stored is not None
    assert local_path(stored.sd.location).is_relative_to(hms4.warehouse)
    assert [c.name for c in client.get_table(f"h4.{db}.t").columns] == ["id", "name"]
    assert client.list_tables(f"h4.{db}") == ["p", "t"]
    # A Hive 2.3 client's get_table on catalogd's endpoint: answered from HMS 4's get_table_req.
    endpoint = MetastoreClient([backends.hms_address], socket_timeout=60)
    try:
        assert endpoint.call("get_table", db, "t").tableName == "t"
        assert [t.tableName for t in endpoint.call("get_table_objects_by_name", db, ["t", "p"])] == ["t", "p"]
    finally:
        endpoint.close()
    assert "has no get_table; relaying it as get_table_req" in log_text(backends)

    data = local_path(stored.sd.location)
    assert child.rows(f"DROP TABLE {db}.t") == []
    assert _hms4_table(hms4, db, "t") is None
    assert not data.exists()
    with pytest.raises(TableNotFoundError):
        client.get_table(f"h4.{db}.t")
    assert child.rows(f"DROP DATABASE {db} CASCADE") == []
    assert db not in client.list_databases("h4")


def test_atomic_ctas_through_stages_commits_on_hms_4(child, client, hms4, unique_name):
    db = unique_name("h4ctas")
    client.create_database(f"h4.{db}")
    try:
        answer = child.run(ctas=f"h4.{db}.squares", query="SELECT id, id * id AS sq FROM range(5)")
        assert answer == {"state": StageState.COMMITTED.name}, answer
        assert child.rows(f"SELECT id, sq FROM {db}.squares ORDER BY id") == [[i, i * i] for i in range(5)]
        assert _hms4_table(hms4, db, "squares") is not None
        open_stages = [s.id for s in client.list_stages("h4")
                       if s.database == db and s.state is not StageState.COMMITTED]
        assert open_stages == []
        # No staging table left in HMS 4.
        ms = _direct(hms4)
        try:
            assert ms.call("get_all_tables", db) == ["squares"]
        finally:
            ms.close()
    finally:
        client.drop_database(f"h4.{db}", if_exists=True, cascade=True)


def test_a_victim_directory_is_refused_with_hms_4_behind(child, client, hms4, unique_name, tmp_path: Path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    db = unique_name("h4loc")
    client.create_database(f"h4.{db}")
    try:
        with pytest.raises(PermissionDeniedError, match="allowed locations"):
            client.create_table(f"h4.{db}.t", "id int", location=victim.as_uri())
        answer = child.run(sql=f"CREATE TABLE {db}.s (id INT) USING parquet LOCATION '{victim.as_uri()}'")
        assert "allowed locations" in str(answer.get("error")), answer
        assert _hms4_table(hms4, db, "t") is None and _hms4_table(hms4, db, "s") is None
        assert (victim / "precious.txt").read_text() == "keep me"
    finally:
        client.drop_database(f"h4.{db}", if_exists=True, cascade=True)


def test_spark_4_and_stages_on_hms_3(child, client, hms3, backends, unique_name):
    db = unique_name("h3db")
    spark_db = f"h3__{db}"
    assert child.rows(f"CREATE DATABASE {spark_db}") == []
    try:
        assert child.rows(f"CREATE TABLE {spark_db}.t (id BIGINT) USING parquet") == []
        assert child.rows(f"INSERT INTO {spark_db}.t VALUES (1), (2)") == []
        assert child.rows(f"SELECT sum(id) FROM {spark_db}.t") == [[3]]
        answer = child.run(ctas=f"h3.{db}.c", query="SELECT 7 AS id")
        assert answer == {"state": StageState.COMMITTED.name}, answer
        assert child.rows(f"SELECT id FROM {spark_db}.c") == [[7]]
        ms = _direct(hms3)
        try:
            assert sorted(ms.call("get_all_tables", db)) == ["c", "t"]
        finally:
            ms.close()
        assert child.rows(f"DROP TABLE {spark_db}.t") == []
        assert client.list_tables(f"h3.{db}") == ["c"]
        # HMS 3.1 still answers get_table: asked as the client asked it.
        assert "metastore of catalog h3 has no" not in log_text(backends)
    finally:
        client.drop_database(f"h3.{db}", if_exists=True, cascade=True)
