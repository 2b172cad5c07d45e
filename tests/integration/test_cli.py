"""The real ``catalogd`` console script against the session daemon."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from catalogd.model import Column

from .helpers import CATALOGD, clean_env

pytestmark = pytest.mark.integration

ERROR_LINE = re.compile(r"^error: (?P<kind>[a-z-]+): \S.*$")


def one_error(err: str, kind: str) -> str:
    """The single ``error: <kind>: ...`` line on stderr (and nothing else)."""
    lines = err.splitlines()
    assert len(lines) == 1, f"expected exactly one stderr line, got:\n{err}"
    match = ERROR_LINE.match(lines[0])
    assert match and match["kind"] == kind, lines[0]
    return lines[0]


# ---------------------------------------------------------------- catalogs

def test_catalog_list_human_is_an_aligned_table(run_cli):
    code, out, err = run_cli("catalog", "list")
    assert (code, err) == (0, "")
    lines = [line.rstrip() for line in out.splitlines() if line.strip()]
    header = lines[0]
    assert header.split()[:3] == ["name", "type", "default"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert {"main", "scratch", "ro"} <= set(rows)
    type_col = header.index("type")
    for name, kind in (("main", "hive"), ("scratch", "memory"), ("ro", "hive")):
        assert rows[name].index(kind, len(name)) == type_col, f"column 'type' not aligned:\n{out}"
    default_col = header.index("default")
    assert rows["main"][default_col:].startswith("yes")
    assert rows["ro"][header.index("read-only"):].startswith("yes")


def test_catalog_list_json(run_cli):
    code, out, err = run_cli("--json", "catalog", "list")
    assert (code, err) == (0, "")
    assert json.loads(out) == ["main", "ro", "scratch"]


def test_spark_conf_main(run_cli, client):
    code, out, err = run_cli("spark-conf", "main")
    assert (code, err) == (0, "")
    settings = dict(line.split("=", 1) for line in out.splitlines())
    assert all(re.fullmatch(r"spark\.[\w.]+=\S+", line) for line in out.splitlines()), out
    # Spark talks to catalogd's HMS endpoint, not to the backing metastore.
    assert settings["spark.hadoop.hive.metastore.uris"] == client.get_catalog("main").hms_endpoint
    assert settings["spark.hadoop.hive.metastore.uris"] != client.get_catalog("main").metastore
    assert settings["spark.hadoop.hive.metastore.uris"].startswith("thrift://127.0.0.1:")
    assert settings["spark.sql.catalogImplementation"] == "hive"
    assert settings["spark.sql.warehouse.dir"] == client.get_catalog("main").warehouse
    # And the catalog plugin: every catalog named natively, main the default, its jar built.
    assert settings["spark.sql.defaultCatalog"] == "main"
    for name in ("main", "ro", "scratch"):
        assert settings[f"spark.sql.catalog.{name}"] == "catalogd.spark.CatalogdCatalog"
        assert settings[f"spark.sql.catalog.{name}.address"] == client.address
    jar = settings["spark.jars"].split(",")[0]
    assert jar.endswith("/catalogd-spark.jar") and Path(jar).is_file()


def test_spark_conf_hms_only_is_the_endpoint_alone(run_cli, client):
    code, out, err = run_cli("spark-conf", "main", "--hms-only")
    assert (code, err) == (0, "")
    settings = dict(line.split("=", 1) for line in out.splitlines())
    assert settings["spark.hadoop.hive.metastore.uris"] == client.get_catalog("main").hms_endpoint
    assert not any(key.startswith(("spark.sql.catalog.", "spark.sql.defaultCatalog", "spark.sql.extensions"))
                   for key in settings)
    assert "catalogd-spark.jar" not in out


def test_spark_conf_memory_catalog_points_at_the_endpoint(run_cli, client):
    code, out, err = run_cli("spark-conf", "scratch", "--hms-only")
    assert (code, err) == (0, "")
    settings = dict(line.split("=", 1) for line in out.splitlines())
    assert settings["spark.hadoop.hive.metastore.uris"] == client.get_catalog("scratch").hms_endpoint
    assert "spark.sql.warehouse.dir" not in settings
    # With the plugin, scratch is the session's default catalog; the session catalog (where the
    # plugin writes stages) stays the endpoint, with the default catalog's warehouse.
    code, out, err = run_cli("spark-conf", "scratch")
    assert (code, err) == (0, "")
    settings = dict(line.split("=", 1) for line in out.splitlines())
    assert settings["spark.sql.defaultCatalog"] == "scratch"
    assert settings["spark.hadoop.hive.metastore.uris"] == client.get_catalog("scratch").hms_endpoint
    assert settings["spark.sql.warehouse.dir"] == client.get_catalog("main").warehouse


def test_spark_conf_never_prints_the_token(daemon):
    token = "not-to-be-printed-0123456789"
    done = subprocess.run([str(CATALOGD), "--server", daemon.address, "spark-conf", "main"], capture_output=True,
                          text=True, timeout=60, env={**clean_env(), "CATALOGD_TOKEN": token})
    assert done.returncode == 0, done.stderr
    assert token not in done.stdout + done.stderr
    assert not any("token" in line.split("=", 1)[0].lower() for line in done.stdout.splitlines())


# ---------------------------------------------------------------- databases

def test_db_lifecycle(run_cli, client, unique_name, tmp_path):
    name = unique_name("cli_db")
    full = f"main.{name}"
    # Inside main's warehouse: a location outside its allowed-locations is refused.
    location = f"{client.get_catalog('main').warehouse.rstrip('/')}/custom_{name}"
    try:
        code, out, err = run_cli("--json", "db", "create", full, "--comment", "from the CLI", "--location", location,
                                 "--property", "team=data", "--property", "tier=gold")
        assert (code, err) == (0, ""), err
        created = json.loads(out)
        assert (created["catalog"], created["name"], created["comment"]) == ("main", name, "from the CLI")
        assert created["properties"] == {"team": "data", "tier": "gold"}

        code, out, err = run_cli("--json", "db", "list", "main")
        assert code == 0
        assert name in json.loads(out)
        code, out, err = run_cli("db", "list", "main")
        assert code == 0
        assert out.split()[0] == "database"
        assert name in out.split()

        code, out, err = run_cli("db", "describe", full)
        assert code == 0
        assert "from the CLI" in out and "tier" in out and "gold" in out

        code, out, err = run_cli("--json", "db", "alter", full, "--property", "tier=silver", "--unset-property", "team")
        assert (code, err) == (0, ""), err
        assert json.loads(out)["properties"] == {"tier": "silver"}
        assert client.get_database(full).properties == {"tier": "silver"}

        code, out, err = run_cli("db", "create", full)
        assert (code, out) == (1, "")
        one_error(err, "already-exists")
        code, out, err = run_cli("db", "create", full, "--if-not-exists", "--comment", "ignored")
        assert code == 0
        assert client.get_database(full).comment == "from the CLI"

        code, out, err = run_cli("db", "drop", full)
        assert (code, err) == (0, ""), err
        assert not client.database_exists(full)
        code, out, err = run_cli("db", "drop", full)
        assert code == 1
        one_error(err, "not-found")
        code, out, err = run_cli("db", "drop", full, "--if-exists")
        assert code == 0
    finally:
        client.drop_database(full, if_exists=True, cascade=True)


def test_db_drop_non_empty(run_cli, client, main_db):
    client.create_table(f"{main_db}.t", "id int")
    code, out, err = run_cli("db", "drop", main_db)
    assert code == 1
    one_error(err, "not-empty")
    assert client.list_tables(main_db) == ["t"]
    code, out, err = run_cli("db", "drop", main_db, "--cascade")
    assert (code, out.strip(), err) == (0, f"dropped database {main_db}", "")
    assert not client.database_exists(main_db)


# ---------------------------------------------------------------- tables

TABLE_KEYS = {"catalog", "database", "name", "kind", "columns", "partition_keys", "format", "location",
              "properties", "comment"}


@pytest.mark.parametrize("catalog", ["main", "scratch"])
def test_table_lifecycle(run_cli, client, catalog, unique_name):
    db = f"{catalog}.{unique_name('cli')}"
    client.create_database(db)
    try:
        code, out, err = run_cli(
            "table", "create", f"{db}.orders",
            "--schema", "id bigint COMMENT 'order id', amount decimal(10,2)",
            "--partitioned-by", "ds string",
            "--format", "orc",
            "--comment", "orders by day",
            "--property", "team=data",
            "--property", "sla=1h",
        )
        assert (code, err) == (0, ""), err
        assert "orders" in out and "orc" in out

        code, out, err = run_cli("--json", "table", "describe", f"{db}.orders")
        assert (code, err) == (0, ""), err
        desc = json.loads(out)
        assert set(desc) >= TABLE_KEYS, set(desc)
        assert (desc["catalog"], desc["database"], desc["name"]) == (catalog, db.split(".")[1], "orders")
        assert desc["kind"] == "MANAGED"
        assert desc["columns"] == [
            {"name": "id", "type": "bigint", "comment": "order id"},
            {"name": "amount", "type": "decimal(10,2)", "comment": None},
        ]
        assert [{k: p[k] for k in ("name", "type")} for p in desc["partition_keys"]] == [
            {"name": "ds", "type": "string"}
        ]
        assert desc["format"] == "orc"
        assert desc["location"]
        assert desc["comment"] == "orders by day"
        assert {k: v for k, v in desc["properties"].items() if k != "transient_lastDdlTime"} == {
            "team": "data", "sla": "1h"
        }
        # What the CLI printed is what the API has.
        table = client.get_table(f"{db}.orders")
        assert table.columns == [Column("id", "bigint", "order id"), Column("amount", "decimal(10,2)")]
        assert table.location == desc["location"]

        code, out, err = run_cli("table", "describe", f"{db}.orders")
        assert code == 0
        assert re.search(r"^ds\s+string\s+partition key", out, re.MULTILINE), out

        code, out, err = run_cli("--json", "table", "alter", f"{db}.orders", "--add-columns", "note string",
                                 "--unset-property", "sla")
        assert (code, err) == (0, ""), err
        altered = json.loads(out)
        assert [c["name"] for c in altered["columns"]] == ["id", "amount", "note"]
        assert "sla" not in altered["properties"]

        code, out, err = run_cli("--json", "table", "list", db)
        assert (code, json.loads(out)) == (0, ["orders"])

        code, out, err = run_cli("table", "rename", f"{db}.orders", "sales")
        assert (code, err) == (0, ""), err
        code, out, err = run_cli("--json", "table", "list", db)
        assert json.loads(out) == ["sales"]

        code, out, err = run_cli("table", "describe", f"{db}.orders")
        assert (code, out) == (1, "")
        one_error(err, "not-found")

        code, out, err = run_cli("table", "create", f"{db}.sales", "--schema", "id int")
        assert code == 1
        one_error(err, "already-exists")

        code, out, err = run_cli("table", "drop", f"{db}.sales", "--purge")
        assert (code, err) == (0, ""), err
        code, out, err = run_cli("--json", "table", "list", db)
        assert json.loads(out) == []
        code, out, err = run_cli("table", "drop", f"{db}.sales")
        assert code == 1
        one_error(err, "not-found")
        code, out, err = run_cli("table", "drop", f"{db}.sales", "--if-exists")
        assert code == 0
    finally:
        client.drop_database(db, if_exists=True, cascade=True)


def test_table_create_external_and_bad_input(run_cli, client, main_db, tmp_path):
    code, out, err = run_cli("table", "create", f"{main_db}.ext", "--schema", "id int", "--external")
    assert code == 1
    one_error(err, "invalid-argument")
    code, out, err = run_cli("--json", "table", "create", f"{main_db}.ext", "--schema", "id int", "--external",
                             "--location", f"{client.get_database(main_db).location}/ext-data", "--format", "csv")
    assert (code, err) == (0, ""), err
    assert json.loads(out)["kind"] == "EXTERNAL"

    for args in (
        ["table", "create", f"{main_db}.t", "--schema", "id intx"],
        ["table", "create", f"{main_db}.t", "--schema", "id int, id string"],
        ["table", "create", f"{main_db}.1-bad", "--schema", "id int"],
        ["table", "create", "main.a..b.t", "--schema", "id int"],
    ):
        code, out, err = run_cli(*args)
        assert code == 1, args
        one_error(err, "invalid-argument")
    code, out, err = run_cli("table", "create", "nocatalog.db.t", "--schema", "id int")
    assert code == 1
    one_error(err, "not-found")
    assert client.list_tables(main_db) == ["ext"]


# ---------------------------------------------------------------- usage and config errors

@pytest.mark.parametrize(
    "args",
    [
        ["table", "create", "main.default.t", "--schema", "id int", "--bogus"],
        ["table", "create", "main.default.t"],  # --schema is required
        ["table", "create"],  # CATALOG.DB.T is missing
        ["db", "describe"],
        ["table", "create", "main.default.t", "--schema", "id int", "--format", "xls"],
        ["db", "create", "main.x", "--property", "no-equals-sign"],
        ["db", "alter", "main.default"],  # nothing to change
        ["no-such-command"],
    ],
)
def test_usage_errors_exit_2(run_cli, client, args):
    before = client.list_databases("main")
    code, out, err = run_cli(*args)
    assert code == 2, (args, out, err)
    line = one_error(err, "usage")
    assert line.startswith("error: usage: ")
    assert client.list_databases("main") == before
    assert not client.table_exists("main.default.t")


def test_server_unavailable(run_cli):
    code, out, err = run_cli("catalog", "list", server="127.0.0.1:1")
    assert (code, out) == (1, "")
    one_error(err, "server-unavailable")


GOOD_CONFIG = """\
server:
  port: 19190
  http-port: 19191
catalogs:
  - name: main
    type: hive
    default: true
    connection:
      hive.metastore.uris: thrift://metastore.example:9083
  - name: scratch
    type: memory
"""

BAD_CONFIG = """\
server:
  port: 19190
  colour: blue
catalogs:
  - name: main
    type: memory
    default: true
  - name: main
    type: memory
"""


def test_config_check_good_file(run_cli, tmp_path, daemon):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD_CONFIG)
    for path in (good, daemon.config_path):
        code, out, err = run_cli("config", "check", str(path))
        assert (code, out.strip(), err) == (0, "ok", "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (BAD_CONFIG, ["unknown key 'colour'", "two catalogs named 'main'"]),
        ("catalogs: [\n  - name: main\n", ["invalid YAML"]),
        ("server:\n  port: lots\ncatalogs:\n  - name: m\n    type: memory\n", ["port", "integer"]),
    ],
    ids=["unknown-key-and-duplicate-catalog", "malformed-yaml", "wrong-type"],
)
def test_config_check_bad_file(run_cli, tmp_path, text, expected):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    code, out, err = run_cli("config", "check", str(bad))
    assert code == 2
    assert "ok" not in out.split()
    problems = (out + err).strip().splitlines()
    assert problems, "the problems must be printed"
    assert all(str(bad) in line for line in problems), problems
    for phrase in expected:
        assert any(phrase in line for line in problems), (phrase, problems)


def test_config_check_missing_file(run_cli, tmp_path):
    code, out, err = run_cli("config", "check", str(tmp_path / "absent.yaml"))
    assert code == 2
    assert str(tmp_path / "absent.yaml") in out + err


# ---------------------------------------------------------------- help for a new user (issue 14)

def test_catalogd_alone_prints_the_help(run_cli):
    bare = subprocess.run([str(CATALOGD)], capture_output=True, text=True, timeout=60, env=clean_env())
    for code, out, err in ((bare.returncode, bare.stdout, bare.stderr), run_cli()):
        assert (code, err) == (0, "")
        assert out.startswith("Usage: catalogd [OPTIONS] COMMAND")
        assert not [line for line in out.split("Commands:", 1)[1].splitlines() if line.endswith("...")], out


def test_a_typo_suggests_the_closest_name_without_metastore_text(run_cli, client, main_db):
    client.create_table(f"{main_db}.orders", "id bigint")
    code, out, err = run_cli("table", "describe", f"{main_db}.ordres")
    assert (code, out) == (1, "")
    assert one_error(err, "not-found") == (
        f"error: not-found: table {main_db}.ordres does not exist; did you mean {main_db}.orders?")
    # The same for a view and a dynamic-table lookup of that name, and nothing when nothing is close.
    for args in (("dt", "describe", f"{main_db}.ordrs"), ("dt", "refresh", f"{main_db}.ordrs")):
        code, _, err = run_cli(*args)
        assert code == 1 and one_error(err, "not-found").endswith(f"did you mean {main_db}.orders?"), args
    code, _, err = run_cli("table", "drop", f"{main_db}.zzzzzzzz")
    assert one_error(err, "not-found") == f"error: not-found: table {main_db}.zzzzzzzz does not exist"


def test_a_missing_database_is_reported_as_one(run_cli, main_db):
    typo = main_db[:-1]  # main.db_3f9c0a1b2d -> main.db_3f9c0a1b2
    for args in (("table", "describe", f"{typo}.orders"), ("table", "list", typo), ("db", "describe", typo),
                 ("view", "describe", f"{typo}.v"), ("function", "describe", f"{typo}.f")):
        code, out, err = run_cli(*args)
        assert (code, out) == (1, ""), args
        line = one_error(err, "not-found")
        assert line.startswith(f"error: not-found: database {typo} does not exist; did you mean "), line
        assert main_db in line, line


def test_table_describe_of_a_view_says_it_is_one(run_cli, client, main_db):
    client.create_table(f"{main_db}.orders", "id bigint")
    client.create_view(f"{main_db}.recent", "SELECT id FROM orders")
    code, out, err = run_cli("table", "describe", f"{main_db}.recent")
    assert (code, err) == (0, "")
    assert f"VIEW (its query: catalogd view describe {main_db}.recent)" in out
    assert "ANALYZE TABLE" not in out and "format" not in out.split("column", 1)[0]
    # JSON unchanged: kind VIEW, format null.
    data = json.loads(run_cli("--json", "table", "describe", f"{main_db}.recent").stdout)
    assert (data["kind"], data["format"]) == ("VIEW", None)


def test_a_memory_catalog_has_no_atomic_writes(run_cli):
    code, out, err = run_cli("--json", "catalog", "describe", "scratch")
    assert (code, err) == (0, "")
    assert json.loads(out)["atomic_writes"] is False
    assert json.loads(run_cli("--json", "catalog", "describe", "main").stdout)["atomic_writes"] is True
