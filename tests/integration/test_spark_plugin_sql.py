"""The Spark catalog plugin's views, functions and dynamic-table statements in plain Spark SQL:
catalogd's views by their catalog names (``CREATE VIEW main.db.v``, read back from catalogd's
expanded text), catalogd's functions (Spark connector functions loaded from their jar resources,
Hive functions refused with the name that calls them), and the SQL extension
(``catalogd.spark.CatalogdExtensions``) that hands CREATE / ALTER / DROP / SHOW CREATE / DESCRIBE
DYNAMIC TABLE statements to catalogd.

Views and functions run on a session of the shared SparkSession's application with the plugin's
catalogs; the SQL extension is fixed when a session starts, so the dynamic-table test runs one
child PySpark driver configured as ``catalogd spark-conf main`` configures one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
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

from .conftest import source_database
from .helpers import Daemon, clean_env

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TESTS = Path(__file__).resolve().parents[1]


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
    # A Hive function: Spark calls those through its session catalog only (catalogd's HMS endpoint).
    client.create_function(f"{db}.up", "org.apache.hadoop.hive.ql.udf.generic.GenericUDFUpper")
    client.create_function(f"{db}.gone", "com.example.Missing")

    assert rows(plugin_session, f"SHOW USER FUNCTIONS IN {db}") == [(f"{db}.gone",), (f"{db}.twice",), (f"{db}.up",)]
    assert rows(plugin_session, f"SELECT {db}.twice(id) FROM {db}.src") == [(0,), (2,), (4,), (6,), (8,)]
    with pytest.raises(AnalysisException, match=rf"main\.{src_db}\.up is a Hive function .* call it as "
                                                rf"spark_catalog.`{src_db}`.up\(...\)"):
        plugin_session.sql(f"SELECT {db}.up('a')").collect()
    assert rows(plugin_session, f"SELECT spark_catalog.`{src_db}`.up('a')") == [("A",)]
    with pytest.raises(AnalysisException, match=r"com\.example\.Missing is not on the driver's classpath"):
        plugin_session.sql(f"SELECT {db}.gone('a')").collect()
    with pytest.raises(AnalysisException, match="UNRESOLVED_ROUTINE"):
        plugin_session.sql(f"SELECT {db}.nope('a')").collect()


# The child driver: catalogd's statements through spark.sql, as spark-sql and notebooks send them.
DRIVER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[4])
    from polling import wait_until
    from catalogd.client import CatalogClient
    from catalogd.spark import session_builder

    address, db, local = sys.argv[1:4]
    with CatalogClient(address) as client:
        builder = session_builder("main", client)
    spark = (builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.local.dir", local).getOrCreate())

    def run(sql):
        try:
            return [list(r) for r in spark.sql(sql).collect()]
        except Exception as e:
            return {"error": type(e).__name__, "message": str(e).splitlines()[0]}

    def describe(name):
        return {k: v for k, v in run(f"DESCRIBE DYNAMIC TABLE {name}")}

    name = f"main.{db}.dt"
    out = {"current": run("SELECT current_catalog()")}
    # Two parts: the session's current catalog (main, the default catalog spark-conf sets).
    out["create"] = run(f"CREATE DYNAMIC TABLE {db}.dt WITH ('initialize' = 'on_schedule') "
                        "FRESHNESS = INTERVAL '1' HOUR REFRESH_MODE = FULL AS SELECT id, amount FROM src")
    out["refresh"] = run(f"ALTER MATERIALIZED TABLE {name} REFRESH")
    out["refreshed"] = wait_until(
        lambda: (d := describe(name)).get("last_refresh", "") and not d["last_refresh"].endswith("RUNNING")
        and not d["last_refresh"].endswith("PENDING") and d, 300, "the refresh to end", every=1.0)
    out["rows"] = sorted(run(f"SELECT id, amount FROM {name}"))
    out["suspend"] = run(f"ALTER DYNAMIC TABLE {name} SUSPEND")
    out["state"] = describe(name)["state"]
    out["show"] = run(f"SHOW CREATE DYNAMIC TABLE {name}")
    out["spark"] = run("SELECT 1 AS one")
    out["bad"] = run(f"CREATE DYNAMIC TABLE main.{db}.bad AS SELEC")
    out["drop"] = run(f"/* dropped */ DROP DYNAMIC TABLE {name}")
    out["gone"] = run(f"DESCRIBE DYNAMIC TABLE {name}")
    print("RESULT " + json.dumps(out))
    spark.stop()
""")


def test_dynamic_table_created_refreshed_suspended_and_dropped_in_spark_sql(
        daemon: Daemon, sc: CatalogClient, src_db: str, tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    local = tmp_path / "local"
    local.mkdir()
    done = subprocess.run([sys.executable, str(script), daemon.address, src_db, str(local), str(TESTS)],
                          capture_output=True, text=True, timeout=600, env=clean_env())
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"{done.stdout}\n{done.stderr[-4000:]}"
    out = json.loads(lines[-1][len("RESULT "):])
    name = f"main.{src_db}.dt"

    assert out["current"] == [["main"]]
    [[kind, message, table, _]] = out["create"]
    assert (kind, table) == ("created", name), message
    [[kind, message, _, job]] = out["refresh"]
    assert kind == "refreshing" and job, message
    assert out["refreshed"]["last_refresh"].endswith("SUCCEEDED"), out["refreshed"]
    assert sc.get_refresh_job(job).status is RunStatus.SUCCEEDED
    assert out["rows"] == [[i, i * 1.5] for i in range(5)]
    assert out["suspend"][0][:2] == ["suspended", f"{name} is SUSPENDED"]
    assert out["state"] == "SUSPENDED"
    assert out["show"][0][0] == "show-create" and out["show"][0][1].startswith(f"CREATE DYNAMIC TABLE {name}\n")
    assert out["spark"] == [[1]]
    assert out["bad"]["error"] == "AnalysisException"
    assert out["bad"]["message"].startswith("catalogd invalid argument:"), out["bad"]
    assert out["drop"][0][:2] == ["dropped", f"dropped dynamic table {name}"]
    assert out["gone"]["message"].startswith("catalogd not found:"), out["gone"]
    assert not sc.table_exists(name)
