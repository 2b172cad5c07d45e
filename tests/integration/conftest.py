"""Fixtures of the integration tests: one real daemon (embedded HMS) for the session, its
client, the real ``catalogd`` command, and one local SparkSession.

The session daemon serves three catalogs:

* ``main``: hive on an embedded metastore (the default catalog);
* ``scratch``: memory;
* ``ro``: hive, ``read-only: true``, a *remote* catalog on main's embedded metastore
  (main gets a fixed ``metastore-port`` for that). It is a real hive catalog that sees
  main's databases, so reads through it are meaningful, and it costs no second metastore.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from catalogd.client import CatalogClient
from catalogd.config.models import DEFAULT_JDBC_DRIVER_JAR
from catalogd.metastore.access_key import file_key
from catalogd.metastore.client import MetastoreClient, parse_uris
from catalogd.spark.plugin import CATALOG_CLASS, EXTENSIONS_CLASS, plugin_jar

from .flink import FlinkSql, running_flink
from .helpers import (
    CATALOGD,
    SESSION_STAGE_SECRET,
    Daemon,
    clean_env,
    embedded_catalog,
    free_port,
    metastore_key_file,
    metastore_pids,
    spawn_daemon,
    start_daemon,
    write_config,
)
from .iceberg_spark import IcebergSpark, running_iceberg_spark
from .kdc import Kdc, running_kdc
from .pg_pair import PgPairs
from .postgres import PostgresServer, running_postgres
from .trino_server import TrinoServer, hive_catalog, iceberg_catalog, iceberg_rest_catalog, running_trino

# Spark's Python workers (in-process sessions here and every child process) run this venv's
# interpreter: with pandas installed pyspark plans Arrow-optimised UDFs, which a bare system
# python3 without pyarrow cannot run.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# Every JVM the tests start (metastores, Spark sessions, spark-submit jobs, through the daemons
# too) lives seconds to minutes on small data, on 2 shared cores: the C1 compiler alone and the
# serial collector halve the CPU a Spark start and first queries take (measured 22.5-26.3 s ->
# 11.4-13.6 s of JVM CPU) and change no result. An empty JAVA_TOOL_OPTIONS turns it off.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here carries the ``integration`` mark: ``make integration`` (``-m integration``)
    selects by it, so a module without ``pytestmark`` would silently never run there."""
    here = Path(__file__).parent
    unmarked = sorted({item.path.name for item in items
                       if item.path.is_relative_to(here) and item.get_closest_marker("integration") is None})
    if unmarked:
        raise pytest.UsageError(f"integration tests without the integration mark (pytestmark): {unmarked}")


@pytest.fixture(scope="session")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """The session's catalogd daemon (a real ``catalogd serve`` process)."""
    root = tmp_path_factory.mktemp("catalogd")
    data_dir = root / "data"
    metastore_port = free_port()
    config_path = write_config(
        root / "catalogd.yaml",
        port=free_port(),
        http_port=free_port(),
        data_dir=data_dir,
        catalogs=[
            embedded_catalog("main", metastore_port=metastore_port, **{"default-database": "default"}),
            {"name": "scratch", "type": "memory"},
            {
                "name": "ro",
                "type": "hive",
                "read-only": True,
                "connection": {"hive.metastore.uris": f"thrift://127.0.0.1:{metastore_port}"},
                # main's embedded metastore serves only connections that send its key first.
                "metastore-key-file": str(metastore_key_file(data_dir)),
            },
        ],
        # No metadata cache here: many test daemons write this daemon's metastore behind its back
        # (other daemons' commits, direct metastore writes) and read the result through it at once.
        # The cache and its TTL are tested with daemons of their own (test_cache.py).
        extra={"staging": {"secret": SESSION_STAGE_SECRET, "max-retired-versions": 3}, "cache": {"ttl": "0s"}},
    )
    proc = start_daemon(config_path, data_dir, root / "catalogd.log")
    yield proc
    code = proc.stop()
    assert code == 0, f"the session daemon exited with {code}; log:\n{proc.log()}"


@pytest.fixture(scope="session")
def kdc() -> Iterator[Kdc]:
    """A real MIT Kerberos KDC (realm CATALOGD.TEST) for the session, started when a test first asks for it."""
    with running_kdc() as server:
        yield server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the session, started when a test first asks for it (1-2 s), never before."""
    with running_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def pg_pairs(postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgPairs]:
    """Two cluster members on one PostgreSQL metastore database, shared by the modules that ask
    (tests/integration/pg_pair.py); started on first ``get()``."""
    pairs = PgPairs(postgres, tmp_path_factory)
    yield pairs
    pairs.close()


@pytest.fixture(scope="session")
def hms_address(daemon: Daemon) -> tuple[str, int]:
    """(host, port) of the session daemon's HMS endpoint."""
    return daemon.hms_address


@pytest.fixture
def client(daemon: Daemon) -> Iterator[CatalogClient]:
    with CatalogClient(daemon.address, timeout=60.0) as c:
        yield c


@pytest.fixture
def hms(client: CatalogClient, daemon: Daemon) -> Iterator[MetastoreClient]:
    """A plain HMS client on main's embedded metastore, not through catalogd: what catalogd does
    not see coming (another tool of catalogd's user, holding the metastore's key)."""
    ms = MetastoreClient(parse_uris(client.get_catalog("main").metastore),
                         key=file_key(metastore_key_file(daemon.data_dir)))
    yield ms
    ms.close()


class CliResult(NamedTuple):
    code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(daemon: Daemon) -> Callable[..., CliResult]:
    """``run_cli("--json", "db", "list", "main")`` runs ``catalogd --server ADDR --json db list main``."""

    def run(*args: str, server: str | None = None, timeout: float = 60.0) -> CliResult:
        cmd = [str(CATALOGD), "--server", server or daemon.address, *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=clean_env())
        return CliResult(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture(scope="session")
def spark(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local SparkSession on main's metastore for the whole session."""
    from pyspark.sql import SparkSession

    from catalogd.spark.conf import spark_conf_for

    local_dir = tmp_path_factory.mktemp("spark-local")
    # The JVM's temporary files (Hive's <uuid>_resources, native libraries) in the session's tmp dir.
    java_tmp = tmp_path_factory.mktemp("spark-tmp")
    with CatalogClient(daemon.address) as c:
        settings = spark_conf_for(c.get_catalog("main"))
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("catalogd-integration")
        .enableHiveSupport()
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.local.dir", str(local_dir))
        .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={java_tmp}")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in settings.items():
        builder = builder.config(key, value)
    # Spark's classpath is fixed when the session starts: the catalog plugin's jar (the
    # plugin_spark fixture's catalogs load from it), and the PostgreSQL JDBC driver
    # (libpostgresql-jdbc-java), as session_builder adds a jdbc catalog's driver-jar.
    jars = [str(plugin_jar())]
    if DEFAULT_JDBC_DRIVER_JAR.is_file():
        jars.append(str(DEFAULT_JDBC_DRIVER_JAR))
    builder = builder.config("spark.jars", ",".join(jars))
    # The plugin's SQL extension, as `catalogd spark-conf` configures it (a static setting): its
    # rules apply to the plugin's tables only (plugin_spark's dynamic partition overwrites), its
    # parser takes only dynamic-table statements (every other statement is Spark's).
    builder = builder.config("spark.sql.extensions", EXTENSIONS_CLASS)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    session.conf.set("hive.exec.dynamic.partition.mode", "nonstrict")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def flink(hms_address: tuple[str, int], tmp_path_factory: pytest.TempPathFactory) -> Iterator[FlinkSql]:
    """Flink SQL for the session (pyflink's local mini cluster, batch mode), started when a test
    first asks for it: catalog ``c`` is Flink's ``HiveCatalog`` (Hive 3.1.3 client) on the session
    daemon's HMS endpoint, and the current catalog."""
    host, port = hms_address
    with running_flink(tmp_path_factory.mktemp("flink"), host, port) as session:
        yield session


@pytest.fixture(scope="session")
def plugin_spark(spark: Any, daemon: Daemon) -> Any:
    """A session of the shared SparkSession's application with the catalog plugin's catalogs
    ``main`` and ``scratch`` (``catalogd.spark.CatalogdCatalog`` on the session daemon), so that
    ``main.db.t`` is catalogd's main natively, and ``main`` the default catalog.

    A session of its own (``newSession()``: same JVM, SparkContext, metastore and jars, its own
    SQL conf and catalog manager) rather than the shared one: Spark resolves the first part of a
    multi-part name as a catalog once a catalog of that name is registered, and a loaded catalog
    stays loaded whatever the conf says later, so the shared session's names stay as they were.
    """
    session = spark.newSession()
    for name in ("main", "scratch"):
        session.conf.set(f"spark.sql.catalog.{name}", CATALOG_CLASS)
        session.conf.set(f"spark.sql.catalog.{name}.address", daemon.address)
    # main the default catalog, as `catalogd spark-conf main` makes it: the plugin's writes name
    # the session catalog explicitly (its stages), which must work when it is not the current one.
    session.conf.set("spark.sql.defaultCatalog", "main")
    return session


@pytest.fixture(autouse=True)
def _shared_spark_session_stays_active(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test that used the shared SparkSession (or a session of it, ``plugin_spark``),
    make the shared one the active session again. PySpark's ``createDataFrame`` makes its
    session the JVM's active one for the calling thread, and Spark resolves some names outside
    a session's own scope with the active session's conf (``DataFrameWriter.insertInto``'s
    current catalog, from ``spark.sql.defaultCatalog``): a ``plugin_spark`` left active made the
    next modules' two-part names resolve in the plugin's ``main``."""
    yield
    if "spark" not in request.fixturenames:
        return
    from pyspark.sql import SparkSession

    shared = request.getfixturevalue("spark")
    SparkSession._activeSession = shared
    shared._jvm.SparkSession.setActiveSession(shared._jsparkSession)


# ---------------------------------------------------------------- per-test objects

@pytest.fixture
def sc(daemon: Daemon) -> Iterator[CatalogClient]:
    """A client of the session daemon that waits long: a dynamic-table statement's Spark analysis
    is slow on a busy machine (the analyzer may still be warming up when the first one comes)."""
    with CatalogClient(daemon.address, timeout=240.0) as c:
        yield c


@contextlib.contextmanager
def source_database(client: CatalogClient, spark: Any, name: str, rows: int) -> Iterator[str]:
    """Database ``main.<name>`` with a parquet table ``src (id, amount = id * 1.5)`` of ``rows``
    rows; its dynamic tables, then itself, dropped afterwards."""
    client.create_database(f"main.{name}")
    spark.sql(f"CREATE TABLE {name}.src (id BIGINT, amount DOUBLE) USING parquet")
    spark.sql(f"INSERT INTO {name}.src SELECT id, id * 1.5 FROM range({rows})")
    try:
        yield name
    finally:
        for dt in client.list_dynamic_tables("main", name):
            client.drop_dynamic_table(f"main.{name}.{dt.name}", if_exists=True)
        client.drop_database(f"main.{name}", if_exists=True, cascade=True)


@pytest.fixture(params=["main", "scratch"])
def catalog(request: pytest.FixtureRequest) -> str:
    """Each backend in turn: ``main`` (hive) and ``scratch`` (memory)."""
    return request.param


@pytest.fixture
def db(client: CatalogClient, catalog: str, unique_name: Callable[[str], str]) -> Iterator[str]:
    """A fresh database ``<catalog>.<db_...>``, dropped with its tables afterwards."""
    name = f"{catalog}.{unique_name('db')}"
    client.create_database(name)
    yield name
    client.drop_database(name, if_exists=True, cascade=True)


@pytest.fixture
def main_db(client: CatalogClient, unique_name: Callable[[str], str]) -> Iterator[str]:
    """A fresh database in ``main`` (``main.<db_...>``), dropped with its tables afterwards."""
    name = f"main.{unique_name('db')}"
    client.create_database(name)
    yield name
    client.drop_database(name, if_exists=True, cascade=True)


@pytest.fixture
def daemon_factory(tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    """Start extra short-lived daemons (own ports); every one is stopped at the end of the test."""
    started: list[Daemon] = []

    def factory(data_dir: Path | None = None, catalogs: list[dict[str, Any]] | None = None,
                wait: bool = True, name: str = "extra", same_as: Daemon | None = None,
                extra: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Daemon:
        """A daemon with its own data dir and ports, or (``same_as``) a restart of an earlier one.

        ``extra`` adds config sections (e.g. ``staging``), ``env`` environment variables.
        """
        n = len(started)
        log_path = tmp_path / f"{name}-{n}.log"
        if same_as is not None:
            config_path, data_dir = same_as.config_path, same_as.data_dir
        else:
            data_dir = data_dir or tmp_path / f"{name}-data"
            config_path = write_config(
                tmp_path / f"{name}-{n}.yaml",
                port=free_port(),
                http_port=free_port(),
                data_dir=data_dir,
                catalogs=catalogs or [embedded_catalog("main")],
                extra=extra,
            )
        if wait:
            proc = start_daemon(config_path, data_dir, log_path, env=env)
        else:
            proc = spawn_daemon(config_path, data_dir, log_path, env)
        started.append(proc)
        return proc

    yield factory
    for proc in started:
        proc.stop()
    # A metastore left behind by a failed test (e.g. one that outlived a killed daemon).
    for data_dir in {proc.data_dir for proc in started}:
        for pid in metastore_pids(data_dir):
            os.kill(pid, signal.SIGKILL)


class IcebergRest(NamedTuple):
    """The Iceberg REST catalog the REST clients' tests talk to: its URI and warehouse."""

    uri: str
    warehouse: str
    #: The session daemon's own door (``/iceberg`` on its HTTP port): its tables are the HMS
    #: endpoint's too. False when ``$CATALOGD_TEST_ICEBERG_REST`` points the clients elsewhere.
    catalogd: bool


#: ``URI`` or ``URI|WAREHOUSE``: the REST clients' tests (and Trino's ``iceberg_rest`` catalog) on
#: another REST server, such as Iceberg's reference one, to tell a client's trouble from catalogd's.
REST_OVERRIDE = "CATALOGD_TEST_ICEBERG_REST"


def iceberg_rest_of(daemon: Daemon) -> IcebergRest:
    """The session daemon's Iceberg REST door (warehouse ``main``: its default catalog), or the override."""
    override = os.environ.get(REST_OVERRIDE)
    if override:
        uri, _, warehouse = override.partition("|")
        return IcebergRest(uri, warehouse, catalogd=False)
    return IcebergRest(f"{daemon.http}/iceberg", "main", catalogd=True)


@pytest.fixture(scope="session")
def iceberg_rest(daemon: Daemon) -> IcebergRest:
    """The REST catalog the REST clients' tests use (:func:`iceberg_rest_of`)."""
    return iceberg_rest_of(daemon)


@pytest.fixture(scope="session")
def iceberg_spark(iceberg_rest: IcebergRest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IcebergSpark]:
    """Spark 4.1 with Iceberg's Spark runtime for the session (its own venv, Java 17, one local
    driver), started when a test first asks for it: catalog ``rest`` is Iceberg's ``SparkCatalog``
    with ``type=rest`` on :func:`iceberg_rest`."""
    with running_iceberg_spark(tmp_path_factory.mktemp("iceberg-spark")) as session:
        session.add_catalog("rest", iceberg_rest.uri, iceberg_rest.warehouse)
        yield session


@pytest.fixture(scope="session")
def trino(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TrinoServer]:
    """One real Trino 476 server for the session (tests/integration/trino_server.py), started when a
    test first asks for it: catalog ``hive`` (Hive connector) and ``iceberg`` (Iceberg connector,
    ``iceberg.catalog.type=hive_metastore``), both on the session daemon's HMS endpoint,
    ``scratch_native`` (Hive connector with ``hive.metastore.thrift.catalog-name=scratch``), and
    ``iceberg_rest`` (Iceberg connector, ``iceberg.catalog.type=rest``) on the daemon's Iceberg REST
    door, warehouse ``main`` (Trino loads it at its first query, so the other catalogs never wait on it)."""
    rest = iceberg_rest_of(daemon)
    catalogs = {"hive": hive_catalog(daemon.hms_uri), "iceberg": iceberg_catalog(daemon.hms_uri),
                # Trino's Hive 3+ names: `@scratch#db` and catName, catalogd's memory catalog natively.
                "scratch_native": {**hive_catalog(daemon.hms_uri), "hive.metastore.thrift.catalog-name": "scratch"},
                "iceberg_rest": iceberg_rest_catalog(rest.uri, rest.warehouse)}
    with running_trino(tmp_path_factory.mktemp("trino"), catalogs) as server:
        yield server
