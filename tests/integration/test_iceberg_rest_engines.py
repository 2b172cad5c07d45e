"""Real Iceberg REST clients on catalogd's Iceberg REST door (``http://127.0.0.1:<http port>/iceberg``,
warehouse ``main``): Spark 4.1 with Iceberg's ``SparkCatalog`` (``type=rest``, the session's
``iceberg_spark``), DuckDB 1.5.5's iceberg extension (``ATTACH ... (TYPE iceberg, ENDPOINT ...)``) and
Trino 476's REST iceberg catalog (the session's ``trino``, catalog ``iceberg_rest``).

Each engine creates a namespace and a table through REST, writes and reads; then "same tables, both
doors": a table Spark writes through REST is read by DuckDB and Trino through REST and by pyiceberg's
``HiveCatalog`` through catalogd's HMS endpoint, and a table ``HiveCatalog`` creates on the HMS
endpoint is read (and written) by the REST clients, and Spark's REST commits and ``HiveCatalog``'s
HMS commits to one table at once lose none. Auth (Spark's and DuckDB's tokens, a daemon of the
module's own) and the memory catalog ``scratch`` too. With ``$CATALOGD_TEST_ICEBERG_REST`` (conftest)
the clients talk to another REST server instead (Iceberg's reference one) and the HMS half is skipped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from catalogd.client import CatalogClient

from .conftest import IcebergRest
from .duckdb_iceberg import EXTENSIONS, attach_rest, connect
from .helpers import Daemon, free_port, metastore_key_file, start_daemon, write_config
from .iceberg_spark import IcebergSpark, SparkSqlError
from .trino_server import TrinoServer

pytestmark = pytest.mark.integration

#: The rows every engine writes: (id, region, score); ``region`` is the partition column.
ROWS = [(1, "eu", 1.5), (2, "us", 2.5), (3, "eu", 3.5)]


def _rows(rows: Any) -> list[tuple[Any, ...]]:
    """Rows of any engine (lists, tuples) as sorted tuples."""
    return sorted(tuple(row) for row in rows)


def _values(rows: list[tuple[int, str, float]]) -> str:
    return ", ".join(f"({i}, '{r}', {s})" for i, r, s in rows)


def _rest_catalog(rest: IcebergRest) -> Any:
    from pyiceberg.catalog import load_catalog

    return load_catalog("rest", type="rest", uri=rest.uri, warehouse=rest.warehouse)


@pytest.fixture
def namespace(iceberg_rest: IcebergRest, client: CatalogClient, unique_name) -> Iterator[str]:
    """A fresh namespace name (the engine under test creates it), dropped with its tables afterwards:
    on catalogd through its API (a database of main), elsewhere through pyiceberg's REST catalog."""
    name: str = unique_name("rest")
    yield name
    if iceberg_rest.catalogd:
        client.drop_database(f"main.{name}", if_exists=True, cascade=True)
        return
    catalog = _rest_catalog(iceberg_rest)
    if (name,) in catalog.list_namespaces():
        for table in catalog.list_tables(name):
            catalog.purge_table(table)
        catalog.drop_namespace(name)


@pytest.fixture
def duckdb_rest(iceberg_rest: IcebergRest, tmp_path: Path) -> Iterator[Any]:
    """A DuckDB connection with the REST catalog attached as ``c``."""
    con = connect(tmp_path / "duckdb-extensions")
    attach_rest(con, "c", iceberg_rest.uri, iceberg_rest.warehouse)
    yield con
    con.close()


def _hive_catalog(daemon: Daemon) -> Any:
    from pyiceberg.catalog import load_catalog

    return load_catalog("hms", type="hive", uri=daemon.hms_uri)


def test_spark_creates_writes_and_reads_a_table_through_rest(iceberg_spark: IcebergSpark, namespace: str):
    table = f"rest.{namespace}.spark_t"
    iceberg_spark.sql(f"CREATE NAMESPACE rest.{namespace}")
    assert [namespace] in iceberg_spark.sql("SHOW NAMESPACES IN rest")
    iceberg_spark.sql(f"CREATE TABLE {table} (id bigint, region string, score double) USING iceberg "
                      "PARTITIONED BY (region)")
    iceberg_spark.sql(f"INSERT INTO {table} VALUES {_values(ROWS[:2])}")
    iceberg_spark.sql(f"INSERT INTO {table} VALUES {_values(ROWS[2:])}")
    assert _rows(iceberg_spark.sql(f"SELECT * FROM {table}")) == _rows(ROWS)
    # A row-level delete (a commit that replaces a data file) and a schema change.
    iceberg_spark.sql(f"DELETE FROM {table} WHERE id = 1")
    iceberg_spark.sql(f"ALTER TABLE {table} ADD COLUMN note string")
    assert _rows(iceberg_spark.sql(f"SELECT * FROM {table}")) == _rows([(*r, None) for r in ROWS[1:]])
    # One snapshot per write: two appends and the delete.
    assert iceberg_spark.sql(f"SELECT count(*) FROM {table}.snapshots") == [[3]]
    assert [namespace, "spark_t", False] in iceberg_spark.sql(f"SHOW TABLES IN rest.{namespace}")


def test_duckdb_attaches_creates_inserts_and_reads_through_rest(duckdb_rest: Any, tmp_path: Path, namespace: str):
    con = duckdb_rest
    # The extensions are the PyPI packages' files, installed into the test's own folder.
    loaded = dict(con.execute("SELECT extension_name, install_path FROM duckdb_extensions() WHERE loaded").fetchall())
    for name in EXTENSIONS:
        assert Path(loaded[name]).is_relative_to(tmp_path), loaded
    con.execute(f"CREATE SCHEMA c.{namespace}")
    con.execute(f"CREATE TABLE c.{namespace}.duck_t (id BIGINT, region VARCHAR, score DOUBLE)")
    con.execute(f"INSERT INTO c.{namespace}.duck_t VALUES {_values(ROWS[:2])}")
    con.execute(f"INSERT INTO c.{namespace}.duck_t VALUES {_values(ROWS[2:])}")
    assert _rows(con.execute(f"SELECT * FROM c.{namespace}.duck_t").fetchall()) == _rows(ROWS)
    tables = con.execute("SELECT database, schema, name FROM (SHOW ALL TABLES) WHERE database = 'c'").fetchall()
    assert ("c", namespace, "duck_t") in tables


def test_trino_creates_writes_and_reads_a_table_through_rest(trino: TrinoServer, namespace: str):
    def q(statement: str) -> list[tuple[Any, ...]]:
        return trino.query(statement, catalog="iceberg_rest")

    q(f"CREATE SCHEMA {namespace}")
    assert (namespace,) in q("SHOW SCHEMAS")
    q(f"CREATE TABLE {namespace}.trino_t (id bigint, region varchar, score double) "
      "WITH (partitioning = ARRAY['region'])")
    q(f"INSERT INTO {namespace}.trino_t VALUES {_values(ROWS[:2])}")
    q(f"INSERT INTO {namespace}.trino_t VALUES {_values(ROWS[2:])}")
    assert _rows(q(f"SELECT * FROM {namespace}.trino_t")) == _rows(ROWS)
    q(f"DELETE FROM {namespace}.trino_t WHERE region = 'us'")
    assert _rows(q(f"SELECT * FROM {namespace}.trino_t")) == _rows([ROWS[0], ROWS[2]])
    assert q(f"SHOW TABLES FROM {namespace}") == [("trino_t",)]


def test_a_table_spark_writes_through_rest_is_read_by_duckdb_trino_and_hivecatalog(
        iceberg_spark: IcebergSpark, trino: TrinoServer, duckdb_rest: Any, iceberg_rest: IcebergRest,
        daemon: Daemon, namespace: str):
    """Same tables, both doors: Spark's REST commits are what DuckDB and Trino load through REST and
    what pyiceberg's ``HiveCatalog`` loads from catalogd's HMS endpoint; a DuckDB append through
    REST is seen by all of them."""
    table = f"{namespace}.shared"
    iceberg_spark.sql(f"CREATE NAMESPACE rest.{namespace}")
    iceberg_spark.sql(f"CREATE TABLE rest.{table} (id bigint, region string, score double) USING iceberg")
    iceberg_spark.sql(f"INSERT INTO rest.{table} VALUES {_values(ROWS)}")

    assert _rows(duckdb_rest.execute(f"SELECT * FROM c.{table}").fetchall()) == _rows(ROWS)
    assert _rows(trino.query(f"SELECT * FROM {table}", catalog="iceberg_rest")) == _rows(ROWS)
    if iceberg_rest.catalogd:
        hive_table = _hive_catalog(daemon).load_table(table)
        assert _rows(tuple(r.values()) for r in hive_table.scan().to_arrow().to_pylist()) == _rows(ROWS)
        # The same metadata file behind both doors.
        assert hive_table.metadata_location == _rest_catalog(iceberg_rest).load_table(table).metadata_location

    # Another engine's commit through REST: everyone sees it.
    extra = (4, "ap", 4.5)
    duckdb_rest.execute(f"INSERT INTO c.{table} VALUES {_values([extra])}")
    expected = _rows([*ROWS, extra])
    assert _rows(iceberg_spark.sql(f"SELECT * FROM rest.{table}")) == expected
    assert _rows(trino.query(f"SELECT * FROM {table}", catalog="iceberg_rest")) == expected
    if iceberg_rest.catalogd:
        rows = _hive_catalog(daemon).load_table(table).scan().to_arrow().to_pylist()
        assert _rows(tuple(r.values()) for r in rows) == expected


def test_a_table_hivecatalog_creates_on_the_hms_endpoint_is_read_and_written_by_the_rest_clients(
        iceberg_spark: IcebergSpark, trino: TrinoServer, duckdb_rest: Any, iceberg_rest: IcebergRest,
        daemon: Daemon, namespace: str):
    """The other way round: pyiceberg's ``HiveCatalog`` on catalogd's HMS endpoint creates and
    appends; Spark, DuckDB and Trino read it through REST, Trino appends through REST, and the
    ``HiveCatalog`` reads Trino's rows."""
    if not iceberg_rest.catalogd:
        pytest.skip("the HMS endpoint is catalogd's: not with another REST server")
    import pyarrow as pa

    hive = _hive_catalog(daemon)
    hive.create_namespace(namespace)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("region", pa.string()), pa.field("score", pa.float64())])
    table = f"{namespace}.from_hms"
    created = hive.create_table(table, schema=schema)
    created.append(pa.table({"id": [r[0] for r in ROWS], "region": [r[1] for r in ROWS],
                             "score": [r[2] for r in ROWS]}, schema=schema))

    assert _rows(iceberg_spark.sql(f"SELECT * FROM rest.{table}")) == _rows(ROWS)
    assert _rows(duckdb_rest.execute(f"SELECT * FROM c.{table}").fetchall()) == _rows(ROWS)
    assert _rows(trino.query(f"SELECT * FROM {table}", catalog="iceberg_rest")) == _rows(ROWS)

    extra = (5, "sa", 5.5)
    trino.query(f"INSERT INTO {table} VALUES {_values([extra])}", catalog="iceberg_rest")
    rows = hive.load_table(table).scan().to_arrow().to_pylist()
    assert _rows(tuple(r.values()) for r in rows) == _rows([*ROWS, extra])


def test_spark_through_rest_and_hivecatalog_through_hms_append_at_once_and_lose_no_commit(
        iceberg_spark: IcebergSpark, iceberg_rest: IcebergRest, daemon: Daemon, namespace: str):
    """Spark's REST commits and pyiceberg's ``HiveCatalog`` commits on the HMS endpoint, on one table
    at once: each commit either lands or is refused (409 through REST, which Iceberg's Java client
    retries on fresh metadata; ``CommitFailedException`` to ``HiveCatalog``, which retries here),
    and every commit a writer was told succeeded is in the table at the end."""
    if not iceberg_rest.catalogd:
        pytest.skip("the HMS endpoint is catalogd's: not with another REST server")
    import pyarrow as pa
    from pyiceberg.exceptions import CommitFailedException

    table = f"{namespace}.commits"
    iceberg_spark.sql(f"CREATE NAMESPACE rest.{namespace}")
    iceberg_spark.sql(f"CREATE TABLE rest.{table} (writer string, n int) USING iceberg "
                      "TBLPROPERTIES ('commit.retry.num-retries'='50', 'commit.retry.min-wait-ms'='20')")
    commits = 3
    done: dict[str, list[int]] = {"spark": [], "hive": []}
    errors: list[BaseException] = []

    def spark_writer() -> None:
        for n in range(commits):
            iceberg_spark.sql(f"INSERT INTO rest.{table} VALUES ('spark', {n})")
            done["spark"].append(n)

    def hive_writer() -> None:
        from pyiceberg.catalog import load_catalog

        catalog = load_catalog("hms", type="hive", uri=daemon.hms_uri,
                               **{"lock-check-retries": "50", "lock-check-max-wait-time": "2"})
        for n in range(commits):
            while True:
                loaded = catalog.load_table(table)
                try:
                    loaded.append(pa.table({"writer": pa.array(["hive"]), "n": pa.array([n], pa.int32())}))
                    break
                except CommitFailedException:  # the other door committed first: reload, retry
                    continue
            done["hive"].append(n)

    def run(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(w,)) for w in (spark_writer, hive_writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    assert done == {"spark": list(range(commits)), "hive": list(range(commits))}
    expected = sorted([("spark", n) for n in range(commits)] + [("hive", n) for n in range(commits)])
    assert _rows(iceberg_spark.sql(f"SELECT * FROM rest.{table}")) == expected
    assert iceberg_spark.sql(f"SELECT count(*) FROM rest.{table}.snapshots") == [[2 * commits]]


def test_spark_and_duckdb_share_a_table_of_the_memory_catalog(
        iceberg_spark: IcebergSpark, iceberg_rest: IcebergRest, tmp_path: Path, client: CatalogClient, unique_name):
    """Warehouse ``scratch``, the session daemon's memory catalog: Spark creates and writes a table
    through REST, DuckDB reads it and appends, Spark reads DuckDB's row."""
    if not iceberg_rest.catalogd:
        pytest.skip("warehouse scratch is catalogd's memory catalog")
    namespace = unique_name("restmem")
    table = f"{namespace}.t"
    iceberg_spark.add_catalog("rest_scratch", iceberg_rest.uri, "scratch")
    con = connect(tmp_path / "duckdb-extensions")
    try:
        iceberg_spark.sql(f"CREATE NAMESPACE rest_scratch.{namespace}")
        iceberg_spark.sql(f"CREATE TABLE rest_scratch.{table} (id bigint, region string, score double) USING iceberg")
        iceberg_spark.sql(f"INSERT INTO rest_scratch.{table} VALUES {_values(ROWS)}")
        attach_rest(con, "s", iceberg_rest.uri, "scratch")
        assert _rows(con.execute(f"SELECT * FROM s.{table}").fetchall()) == _rows(ROWS)
        extra = (6, "af", 6.5)
        con.execute(f"INSERT INTO s.{table} VALUES {_values([extra])}")
        assert _rows(iceberg_spark.sql(f"SELECT * FROM rest_scratch.{table}")) == _rows([*ROWS, extra])
    finally:
        con.close()
        client.drop_database(f"scratch.{namespace}", if_exists=True, cascade=True)


#: The auth daemon's principals: a writer and a reader of ``main``.
TOKENS = {"etl": "rest-etl-token-6b1f0c9e2d", "ana": "rest-ana-token-3e8a5d7c1f"}


@pytest.fixture(scope="module")
def rest_authd(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon with auth on whose ``main`` is the session daemon's metastore (as a remote catalog):
    ``etl`` writes main, ``ana`` reads it."""
    with CatalogClient(daemon.address) as c:
        metastore = c.get_catalog("main").metastore
    root = tmp_path_factory.mktemp("rest-authd")
    env = {f"CATALOGD_TEST_REST_{name.upper()}_TOKEN": token for name, token in TOKENS.items()}
    auth = {
        "enabled": True,
        "principals": [{"name": name, "token": f"${{CATALOGD_TEST_REST_{name.upper()}_TOKEN}}"} for name in TOKENS],
        "grants": [{"principal": "etl", "catalog": "main", "role": "writer"},
                   {"principal": "ana", "catalog": "main", "role": "reader"}],
        # The refusals below are on purpose; the back-off has its own tests.
        "throttle": {"base-delay": "0s"},
    }
    config = write_config(root / "authd.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
                          catalogs=[{"name": "main", "type": "hive", "default": True,
                                     "connection": {"hive.metastore.uris": metastore},
                                     "metastore-key-file": str(metastore_key_file(daemon.data_dir))}],
                          extra={"auth": auth})
    proc = start_daemon(config, root / "data", root / "authd.log", env=env)
    yield proc
    code = proc.stop()
    assert code == 0, proc.log()


def test_spark_and_duckdb_send_catalogd_tokens_and_get_their_principals_roles(
        rest_authd: Daemon, iceberg_spark: IcebergSpark, client: CatalogClient, tmp_path: Path, unique_name):
    """With auth on, Spark's ``token`` and DuckDB's iceberg secret are catalogd tokens: the writer
    creates and appends, the reader reads and is refused a write, no token is refused outright."""
    uri = f"{rest_authd.http}/iceberg"
    namespace = unique_name("restauth")
    table = f"{namespace}.t"
    iceberg_spark.add_catalog("rest_etl", uri, "main", token=TOKENS["etl"])
    iceberg_spark.add_catalog("rest_ana", uri, "main", token=TOKENS["ana"])
    iceberg_spark.add_catalog("rest_anon", uri, "main")
    try:
        iceberg_spark.sql(f"CREATE NAMESPACE rest_etl.{namespace}")
        iceberg_spark.sql(f"CREATE TABLE rest_etl.{table} (id bigint, region string, score double) USING iceberg")
        iceberg_spark.sql(f"INSERT INTO rest_etl.{table} VALUES {_values(ROWS)}")
        assert _rows(iceberg_spark.sql(f"SELECT * FROM rest_ana.{table}")) == _rows(ROWS)
        with pytest.raises(SparkSqlError, match="Forbidden"):
            iceberg_spark.sql(f"INSERT INTO rest_ana.{table} VALUES (9, 'xx', 9.5)")
        with pytest.raises(SparkSqlError, match=r"Not authorized|NotAuthorized"):
            iceberg_spark.sql("SHOW NAMESPACES IN rest_anon")

        con = connect(tmp_path / "duckdb-extensions")
        try:
            attach_rest(con, "ana", uri, "main", token=TOKENS["ana"])
            assert _rows(con.execute(f"SELECT * FROM ana.{table}").fetchall()) == _rows(ROWS)
            with pytest.raises(Exception, match=r"403|Forbidden|forbidden"):
                con.execute(f"INSERT INTO ana.{table} VALUES (9, 'xx', 9.5)")
            with pytest.raises(Exception, match=r"401|[Uu]nauthori[sz]ed|[Nn]ot authorized"):
                attach_rest(con, "anon", uri, "main")
        finally:
            con.close()
        # Nothing the reader or no one tried was written.
        assert _rows(iceberg_spark.sql(f"SELECT * FROM rest_etl.{table}")) == _rows(ROWS)
    finally:
        client.drop_database(f"main.{namespace}", if_exists=True, cascade=True)
