"""The Spark catalog plugin's views, functions and dynamic-table statements in plain Spark SQL:
catalogd's views by their catalog names (``CREATE VIEW main.db.v``, read back from catalogd's
expanded text), catalogd's functions (Spark connector functions loaded from their jar resources,
Hive functions refused with the name that calls them), and the SQL extension
(``catalogd.spark.CatalogdExtensions``) that hands CREATE / ALTER / DROP / SHOW CREATE / DESCRIBE
DYNAMIC TABLE statements to catalogd.

Views and functions run on a session of the shared SparkSession's application with the plugin's
catalogs; the SQL extension is fixed when a session starts, so the dynamic-table test runs the
``spark-sql`` shell with the settings ``catalogd spark-conf main`` prints.
"""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from catalogd.client import CatalogClient
from catalogd.metastore.guard_classes import find_javac
from catalogd.metastore.jars import pyspark_jars_dir
from catalogd.model import RunStatus
from catalogd.spark.plugin import CATALOG_CLASS

from .conftest import CliResult, source_database
from .helpers import Daemon, clean_env

pytestmark = [pytest.mark.integration, pytest.mark.spark]

@pytest.fixture(scope="module")
def plugin_session(spark: Any, daemon: Daemon) -> Any:
    """A session of the shared SparkSession's application with the plugin's ``main`` and
    ``scratch`` catalogs (its own SQL conf and catalogs; the shared session's names stay as they were)."""
    session = spark.newSession()
    for name in ("main", "scratch"):
        session.conf.set(f"spark.sql.catalog.{name}", CATALOG_CLASS)
        session.conf.set(f"spark.sql.catalog.{name}.address", daemon.address)
    return session


@pytest.fixture
def src_db(client: CatalogClient, spark: Any, unique_name: Callable[[str], str]) -> Iterator[str]:
    """``main.<db>`` with ``src (id BIGINT, amount DOUBLE)`` of 5 rows (id, id * 1.5)."""
    with source_database(client, spark, unique_name("psql"), 5) as name:
        yield name


def rows(session: Any, query: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in session.sql(query).collect())


def test_a_view_made_in_spark_sql_is_catalogds_and_reads_through_its_expanded_text(
        plugin_session: Any, client: CatalogClient, src_db: str) -> None:
    from pyspark.errors import AnalysisException

    db = f"main.{src_db}"
    plugin_session.sql(f"CREATE VIEW {db}.v COMMENT 'doubled' AS "
                       f"SELECT id, amount * 2 AS dbl FROM {db}.src WHERE id > 1")
    view = client.get_view(f"{db}.v")
    assert view.comment == "doubled"
    assert [(c.name, c.type) for c in view.columns] == [("id", "bigint"), ("dbl", "double")]
    assert f"`{src_db}`.`src`" in (view.view_expanded_text or "")
    assert rows(plugin_session, f"SELECT * FROM {db}.v") == [(2, 6.0), (3, 9.0), (4, 12.0)]
    assert rows(plugin_session, f"SHOW VIEWS IN {db}") == [(src_db, "v", False)]
    with pytest.raises(AnalysisException, match="already exists"):
        plugin_session.sql(f"CREATE VIEW {db}.v AS SELECT id FROM {db}.src")

    # Replaced (catalogd expands the new query), renamed within its database, dropped.
    plugin_session.sql(f"CREATE OR REPLACE VIEW {db}.v AS SELECT id FROM {db}.src WHERE id < 2")
    assert rows(plugin_session, f"SELECT * FROM {db}.v") == [(0,), (1,)]
    plugin_session.sql(f"ALTER VIEW {db}.v RENAME TO {src_db}.w")
    assert client.list_views(db) == ["w"]
    assert rows(plugin_session, f"SELECT * FROM {db}.w") == [(0,), (1,)]
    plugin_session.sql(f"DROP VIEW {db}.w")
    assert client.list_views(db) == []
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        plugin_session.sql(f"SELECT * FROM {db}.w").collect()


TWICE = """\
package psqltest;

import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

public class Twice implements ScalarFunction<Long> {
    @Override public DataType[] inputTypes() { return new DataType[] {DataTypes.LongType}; }
    @Override public DataType resultType() { return DataTypes.LongType; }
    @Override public String name() { return "twice"; }
    public long invoke(long x) { return 2 * x; }
}
"""


def scalar_function_jar(tmp_path: Path) -> Path:
    """A jar with ``psqltest.Twice``, a Spark ScalarFunction, compiled against pyspark's jars."""
    javac = find_javac()
    if javac is None:
        pytest.skip("no javac")
    source = tmp_path / "src" / "psqltest" / "Twice.java"
    source.parent.mkdir(parents=True)
    source.write_text(TWICE)
    classes = tmp_path / "classes"
    subprocess.run([javac, "-d", str(classes), "-cp", f"{pyspark_jars_dir()}/*", str(source)], check=True,
                   capture_output=True, timeout=120)
    jar = tmp_path / "twice.jar"
    with zipfile.ZipFile(jar, "w") as z:
        for path in classes.rglob("*.class"):
            z.write(path, str(path.relative_to(classes)))
    return jar


def test_catalog_functions_are_called_by_their_catalog_names_or_refused_with_the_name_that_works(
        plugin_session: Any, client: CatalogClient, src_db: str, tmp_path: Path) -> None:
    from pyspark.errors import AnalysisException

    db = f"main.{src_db}"
    # A Spark connector function, its jar a resource: added to the session on first use.
    client.create_function(f"{db}.twice", "psqltest.Twice", resources=[f"jar:{scalar_function_jar(tmp_path).as_uri()}"])
    # A Hive GenericUDF, run by the plugin; a Hive aggregate and an old-style UDF are refused with
    # the call that works (Spark's session catalog, catalogd's HMS endpoint).
    client.create_function(f"{db}.up", "org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper")
    client.create_function(f"{db}.asc", "org.apache.hadoop.hive.ql.udf.UDFAscii")
    client.create_function(f"{db}.total", "org.apache.hadoop.hive.ql.udf.generic.GenericUDAFSum")
    client.create_function(f"{db}.gone", "com.example.Missing")

    assert rows(plugin_session, f"SHOW USER FUNCTIONS IN {db}") == [
        (f"{db}.{f}",) for f in ("asc", "gone", "total", "twice", "up")]
    assert rows(plugin_session, f"SELECT {db}.twice(id) FROM {db}.src") == [(0,), (2,), (4,), (6,), (8,)]
    assert rows(plugin_session, f"SELECT {db}.up('a'), {db}.up(NULL)") == [("A", None)]
    assert rows(plugin_session, f"SELECT {db}.up(CAST(id AS STRING)) FROM {db}.src WHERE id < 2") == [("0",), ("1",)]
    call = rf"call it as spark_catalog.`{src_db}`.total\(...\)"
    with pytest.raises(AnalysisException, match=rf"main\.{src_db}\.total is a Hive function .*{call}"):
        plugin_session.sql(f"SELECT {db}.total(id) FROM {db}.src").collect()
    assert rows(plugin_session, f"SELECT spark_catalog.`{src_db}`.total(id) FROM {db}.src") == [(10,)]
    with pytest.raises(AnalysisException, match=rf"UDFAscii\) that is not a GenericUDF.*spark_catalog.`{src_db}`.asc"):
        plugin_session.sql(f"SELECT {db}.asc('a')").collect()
    with pytest.raises(AnalysisException, match=r"argument 1 is array<string>; .* primitive types only"):
        plugin_session.sql(f"SELECT {db}.up(array('a'))").collect()
    with pytest.raises(AnalysisException, match=r"com\.example\.Missing is not on the driver's classpath"):
        plugin_session.sql(f"SELECT {db}.gone('a')").collect()
    with pytest.raises(AnalysisException, match="UNRESOLVED_ROUTINE"):
        plugin_session.sql(f"SELECT {db}.nope('a')").collect()


#: What the shell prints besides a statement's rows: its prompt, timings, progress bars, logs.
NOISE = re.compile(r"spark-sql|Time taken:|\[Stage |Picked up |WARNING:|Using |Setting |To adjust |Spark master:"
                   r"|\{\"ts\"|\d\d/\d\d/\d\d \d\d:\d\d:\d\d ")


class SparkSqlShell:
    """The ``spark-sql`` shell shipped in pyspark, fed one statement at a time on its standard
    input (as a user types them); each statement's output is read up to a marker query's row."""

    def __init__(self, properties: Path, local: Path) -> None:
        import pyspark

        shell = Path(pyspark.__file__).parent / "bin" / "spark-sql"
        self.proc = subprocess.Popen(
            [str(shell), "--properties-file", str(properties), "--master", "local[1]",
             "--conf", "spark.ui.enabled=false", "--conf", "spark.ui.showConsoleProgress=false",
             "--conf", "spark.sql.shuffle.partitions=2",
             "--conf", f"spark.local.dir={local}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
            env=clean_env())
        self.lines: queue.Queue[str] = queue.Queue()
        self.marks = 0
        assert self.proc.stdout is not None
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stdout or []],
                         daemon=True).start()

    def run(self, statement: str, timeout: float = 300.0, raw: bool = False) -> list[str]:
        """The rows ``statement`` printed, tab-separated (``raw``: every line, logs and errors too)."""
        assert self.proc.stdin is not None
        self.marks += 1
        mark = f"mark_{self.marks}"
        self.proc.stdin.write(f"{statement};\nSELECT '{mark}';\n")
        self.proc.stdin.flush()
        out: list[str] = []
        while True:
            line = self.lines.get(timeout=timeout).rstrip("\n")
            if line.strip() == mark:
                if raw:
                    return out
                # The shell echoes the statement first, wrapped at 80 columns: up to its ';'.
                echoed = next((i for i, x in enumerate(out) if x.rstrip().endswith(";")), -1)
                return [x for x in out[echoed + 1:] if x.strip() and not NOISE.match(x)]
            out.append(line)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(120)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def one(lines: list[str]) -> str:
    assert len(lines) == 1, lines
    return lines[0]


def test_dynamic_table_created_refreshed_suspended_and_dropped_in_spark_sql(
        sc: CatalogClient, src_db: str, tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    conf = run_cli("spark-conf", "main")
    assert conf.code == 0, conf.stderr
    assert "spark.sql.extensions=catalogd.spark.CatalogdExtensions" in conf.stdout
    properties = tmp_path / "spark-defaults.conf"
    properties.write_text(conf.stdout)
    local = tmp_path / "local"
    local.mkdir()
    shell = SparkSqlShell(properties, local)
    name = f"main.{src_db}.dt"
    try:
        shell.run("SELECT 'started'")  # what the shell prints as it starts goes with this one
        # Two parts: the session's current catalog (main, the default catalog spark-conf sets).
        created = one(shell.run(f"CREATE DYNAMIC TABLE {src_db}.dt WITH ('initialize' = 'on_schedule') "
                              "FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = FULL AS SELECT id, amount FROM src"))
        assert created.split("\t")[::2] == ["created", name], created
        refreshing = one(shell.run(f"ALTER MATERIALIZED TABLE {name} REFRESH"))
        kind, _, _, job = refreshing.split("\t")
        assert kind == "refreshing", refreshing
        assert sc.wait_refresh_job(job, timeout=300, poll=0.25).status is RunStatus.SUCCEEDED
        assert shell.run(f"SELECT id, amount FROM {name} ORDER BY id") == [f"{i}\t{i * 1.5}" for i in range(5)]
        assert shell.run(f"ALTER DYNAMIC TABLE {name} SUSPEND") == [f"suspended\t{name} is SUSPENDED\t{name}\tNULL"]
        described = dict(line.split("\t", 1) for line in shell.run(f"DESCRIBE DYNAMIC TABLE {name}"))
        assert (described["state"], described["refresh_mode"]) == ("SUSPENDED", "FULL"), described
        assert described["last_refresh"].endswith("SUCCEEDED"), described
        shown = shell.run(f"SHOW CREATE DYNAMIC TABLE {name}")
        assert shown[0] == f"show-create\tCREATE DYNAMIC TABLE {name}", shown
        assert shell.run("SELECT 1 AS one") == ["1"]  # every other statement is Spark's
        bad = "\n".join(shell.run(f"CREATE DYNAMIC TABLE {name}2 AS SELEC", raw=True))
        assert "catalogd invalid argument:" in bad, bad
        dropped = shell.run(f"/* gone */ DROP DYNAMIC TABLE {name}")
        assert dropped == [f"dropped\tdropped dynamic table {name}\tNULL\tNULL"], dropped
        assert not sc.table_exists(name)
    finally:
        assert shell.close() == 0
