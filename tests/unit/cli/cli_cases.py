"""Every CLI command, in text and in JSON, run against the fake client: what it asked and what it printed.

``golden_output.json`` holds what the CLI printed for each case before the CLI became a package
(the original ``cli.py``/``cli_dt.py``); ``test_commands.py`` checks the CLI still prints exactly that.
After an intended change of output, write it again with the CLI that prints the new output:

    PYTHONPATH=. python tests/unit/cli/cli_cases.py --write
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden_output.json"
#: ``audit tail`` reads the data dir of ``audit_fixture/catalogd.yaml``, which is relative to here.
os.environ["CATALOGD_TEST_CLI_DIR"] = str(HERE)
AUDIT_CONFIG = str(HERE / "audit_fixture" / "catalogd.yaml")

#: (argv, method of the fake that fails, kind of its error)
Case = tuple[list[str], str | None, str | None]

#: ``spark-conf``'s ``spark.jars`` names the plugin's jar, whose path differs per clone (and whose
#: build is ``tests/unit/spark/test_plugin.py``'s): the cases see this instead.
PLUGIN_JAR = "/<catalogd>/jars/catalogd-spark.jar"

REJECTED = ("configuration rejected: 2 problems\n"
            "/etc/c.yaml: unknown key 'colour'\n/etc/c.yaml: two catalogs named 'main'")

_COMMANDS: list[Case] = [
    (["catalog", "list"], None, None),
    (["catalog", "describe", "main"], None, None),
    (["catalog", "describe", "ro"], None, None),
    (["catalog", "describe", "scratch"], None, None),
    (["catalog", "describe", "missing"], None, None),
    (["spark-conf", "main"], None, None),
    (["spark-conf", "ro"], None, None),
    (["spark-conf", "scratch"], None, None),
    (["spark-conf", "main", "--hms-only"], None, None),
    (["spark-conf", "ro", "--hms-only"], None, None),
    (["spark-conf", "scratch", "--hms-only"], None, None),
    (["iceberg-conf", "main"], None, None),
    (["iceberg-conf", "scratch", "--name", "s"], None, None),
    (["iceberg-conf", "main", "--auth", "--token-env", "MY_TOKEN"], None, None),
    (["iceberg-conf", "main", "--name", "9lives"], None, None),
    (["iceberg-conf", "missing"], None, None),
    (["config", "check", "/nonexistent/catalogd.yaml"], None, None),
    (["config", "reload"], None, None),
    (["config", "reload"], "reload_config", "rejected"),
    (["config", "reload"], "reload_config", "invalid"),
    (["cluster", "status"], None, None),
    (["cluster", "status"], "cluster_status", "permission-denied"),
    (["db", "list"], None, None),
    (["db", "list", "main"], None, None),
    (["db", "create", "main.sales", "--comment", "Sales data", "--location", "file:///wh/sales.db",
      "--property", "tier=gold", "--property", "team = data", "--if-not-exists"], None, None),
    (["db", "create", "main.x", "--property", "novalue"], None, None),
    (["db", "describe", "main.sales"], None, None),
    (["db", "describe", "scratch.bare"], None, None),
    (["db", "describe", "main.missing"], None, None),
    (["db", "alter", "main.sales", "--comment", "c", "--property", "a=1", "--unset-property", "team"], None, None),
    (["db", "alter", "main.sales"], None, None),
    (["db", "rename", "scratch.bare", "bare2", "--if-exists"], None, None),
    (["db", "rename", "main.sales", "s2"], "rename_database", "unsupported"),
    (["db", "drop", "main.sales", "--cascade", "--if-exists"], None, None),
    (["db", "drop", "main.sales"], "drop_database", "not-empty"),
    (["table", "list", "main.sales"], None, None),
    (["table", "create", "main.sales.orders", "--schema", "id bigint COMMENT 'order id', amount decimal(10,2)",
      "--partitioned-by", "ds string", "--format", "ORC", "--location", "file:///x", "--external",
      "--comment", "orders by day", "--property", "sla=1h", "--if-not-exists"], None, None),
    (["table", "create", "main.sales.orders", "--schema", "id int"], "create_table", "already-exists"),
    (["table", "describe", "main.sales.orders"], None, None),
    (["table", "describe", "main.sales.raw"], None, None),
    (["table", "describe", "main.sales.daily"], None, None),
    (["table", "describe", "main.sales.daily", "--all"], None, None),
    (["table", "describe", "main.sales.recent"], None, None),
    (["table", "alter", "main.sales.orders", "--add-columns", "note string", "--unset-property", "sla"], None, None),
    (["table", "alter", "main.sales.orders"], None, None),
    (["table", "rename", "main.sales.orders", "sales", "--if-exists"], None, None),
    (["table", "drop", "main.sales.orders", "--purge"], None, None),
    (["table", "drop", "main.sales.missing"], None, None),
    (["table", "partitions", "main.sales.orders", "--filter", "ds >= '2024-03-01'"], None, None),
    (["table", "partition", "describe", "main.sales.orders", "ds=2024-03-01", "hr=01"], None, None),
    (["table", "partition", "describe", "main.sales.orders", "ds"], None, None),
    (["table", "partition", "add", "main.sales.orders", "ds=2024-03-02/hr=00", "--location", "file:///p",
      "--if-not-exists"], None, None),
    (["table", "partition", "drop", "main.sales.orders", "ds=2024-03-01", "HR=01", "--if-exists", "--purge"],
     None, None),
    (["view", "list", "main.sales"], None, None),
    (["view", "create", "main.sales.recent", "--query", "SELECT id, amount FROM orders", "--comment", "last week",
      "--property", "k=v"], None, None),
    (["view", "describe", "main.sales.recent"], None, None),
    (["view", "alter", "main.sales.recent", "--query", "SELECT 1"], None, None),
    (["view", "alter", "main.sales.recent"], None, None),
    (["view", "rename", "main.sales.recent", "old"], None, None),
    (["view", "drop", "main.sales.recent", "--if-exists"], None, None),
    (["function", "list", "main.sales"], None, None),
    (["function", "create", "main.sales.to_eur", "--class", "com.example.ToEur", "--language", "Scala",
      "--resource", "file:///udfs/eur.jar", "--resource", "archive:s3a://b/env"], None, None),
    (["function", "describe", "main.sales.to_eur"], None, None),
    (["function", "describe", "main.sales.clean"], None, None),
    (["function", "alter", "main.sales.to_eur", "--class", "com.example.ToUsd"], None, None),
    (["function", "alter", "main.sales.to_eur", "--no-resources"], None, None),
    (["function", "alter", "main.sales.to_eur", "--resource", "x.jar", "--no-resources"], None, None),
    (["function", "alter", "main.sales.to_eur"], None, None),
    (["function", "rename", "main.sales.to_eur", "to_usd"], None, None),
    (["function", "drop", "main.sales.to_eur"], None, None),
    (["stage", "list"], None, None),
    (["stage", "list", "main"], None, None),
    (["stage", "describe", "st1"], None, None),
    (["stage", "describe", "st2"], None, None),
    (["stage", "begin", "main.sales.orders", "--schema", "id bigint", "--partitioned-by", "ds string",
      "--format", "orc", "--purpose", "replace", "--lease", "5 min", "--comment", "c", "--property", "a=b"],
     None, None),
    (["stage", "begin", "main.sales.orders", "--lease", "0s"], None, None),
    (["stage", "begin", "main.sales.orders", "--lease", "soon"], None, None),
    (["stage", "heartbeat", "st1", "--lease", "90s"], None, None),
    (["stage", "heartbeat", "st1"], None, None),
    (["stage", "commit", "st2"], None, None),
    (["stage", "commit", "st3"], None, None),
    (["stage", "commit", "st4"], None, None),
    (["stage", "abort", "st4", "--writer-stopped"], None, None),
    (["stage", "abort", "st1"], "abort_stage", "conflict"),
    (["sql", "CREATE DYNAMIC TABLE main.sales.daily FRESHNESS = INTERVAL '1' DAY AS SELECT 1"], None, None),
    (["sql", "ALTER DYNAMIC TABLE main.sales.daily REFRESH"], None, None),
    (["sql", "DROP DYNAMIC TABLE main.sales.daily"], None, None),
    (["dt", "create", "main.sales.daily", "--query", "SELECT 1", "--freshness", "1 day", "--partitioned-by", "ds, hr",
      "--partitioned-by", "x", "--option", "partition.fields.ds.date-formatter=yyyy-MM-dd", "--refresh-mode", "FULL",
      "--comment", "c", "--if-not-exists"], None, None),
    (["dt", "list"], None, None),
    (["dt", "list", "main.sales"], None, None),
    (["dt", "describe", "main.sales.daily"], None, None),
    (["dt", "describe", "main.sales.live"], None, None),
    (["dt", "describe", "main.sales.late"], None, None),
    (["dt", "describe", "main.sales.old"], None, None),
    (["dt", "refresh", "main.sales.daily", "--partition", "ds=2024-03-01", "--schedule-time", "2024-03-02 00:00:00",
      "--conf", "spark.executor.memory=2g"], None, None),
    (["dt", "refresh", "main.sales.daily", "--wait", "--timeout", "30"], None, None),
    (["dt", "refresh", "main.sales.late", "--wait"], None, None),
    (["dt", "refresh", "main.sales.late"], None, None),
    (["dt", "job", "job-1"], None, None),
    (["dt", "job", "job-2"], None, None),
    (["dt", "suspend", "main.sales.daily"], None, None),
    (["dt", "resume", "main.sales.live"], None, None),
    (["dt", "alter", "main.sales.daily", "--freshness", "1 hour", "--refresh-mode", "continuous"], None, None),
    (["dt", "alter", "main.sales.daily"], None, None),
    (["dt", "drop", "main.sales.daily", "--if-exists"], None, None),
    (["dt", "history", "main.sales.daily", "--limit", "0"], None, None),
    (["dt", "history", "main.sales.daily", "--limit", "-1"], None, None),
    (["audit", "tail", "--config", AUDIT_CONFIG], None, None),
    (["audit", "tail", "-n", "2", "--config", AUDIT_CONFIG], None, None),
    (["audit", "tail", "--denied", "--config", AUDIT_CONFIG], None, None),
    (["audit", "tail", "--principal", "etl", "-n", "1", "--config", AUDIT_CONFIG], None, None),
    (["audit", "tail", "--principal", "nobody", "--config", AUDIT_CONFIG], None, None),
    (["audit", "tail", "-n", "0", "--config", AUDIT_CONFIG], None, None),
    (["table", "bogus"], None, None),
    ([], None, None),
]


def cases() -> list[Case]:
    """Each command as written, and again with ``--json`` (at the end: the CLI moves it to the front)."""
    return [c for argv, method, kind in _COMMANDS for c in ((argv, method, kind), ([*argv, "--json"], method, kind))]


def case_id(case: Case) -> str:
    argv, method, kind = case
    # The fixture's absolute path differs per clone: not part of a case's name.
    return " ".join(argv).replace(AUDIT_CONFIG, "<audit config>") + (f" [{method}: {kind}]" if method else "")


def _error(kind: str) -> Exception:
    from catalogd import errors

    if kind == "rejected":
        return errors.InvalidArgumentError(REJECTED)
    if kind == "invalid":
        return errors.InvalidArgumentError("the daemon was started without a configuration file")
    return errors.error_for(kind, f"the fake says {kind}")


_CLOCK = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ ", re.MULTILINE)


def _call_text(call: tuple[str, tuple[Any, ...], dict[str, Any]]) -> str:
    """``repr`` of a recorded call, with callables (a progress callback) as ``<callable>``."""
    method, args, kwargs = call

    def show(value: Any) -> str:
        return "<callable>" if callable(value) else repr(value)

    return f"{method}({', '.join([*map(show, args), *(f'{k}={show(v)}' for k, v in kwargs.items())])})"


def run_case(case: Case) -> dict[str, Any]:
    """Run one case in this process against a fresh fake client."""
    from fake_client import FakeClient

    import catalogd.client
    import catalogd.spark.catalogs
    from catalogd.cli import main

    argv, method, kind = case
    fake = FakeClient({method: _error(kind)} if method and kind else None)  # type: ignore[dict-item]
    original = catalogd.client.CatalogClient
    original_jar = catalogd.spark.catalogs.plugin_jar
    catalogd.client.CatalogClient = lambda *a, **k: fake  # type: ignore[assignment,misc]
    catalogd.spark.catalogs.plugin_jar = lambda: Path(PLUGIN_JAR)
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = main(list(argv))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
    finally:
        catalogd.client.CatalogClient = original  # type: ignore[misc]
        catalogd.spark.catalogs.plugin_jar = original_jar
    return {
        "code": code,
        "stdout": stdout.getvalue(),
        # Progress lines start with the wall clock.
        "stderr": _CLOCK.sub("<now> ", stderr.getvalue()),
        "calls": [_call_text(call) for call in fake.calls],
    }


def run_all() -> dict[str, dict[str, Any]]:
    return {case_id(c): run_case(c) for c in cases()}


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    results = run_all()
    if sys.argv[1:] == ["--write"]:
        GOLDEN.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {len(results)} cases to {GOLDEN}")
    else:
        print(json.dumps(results, indent=1, ensure_ascii=False))
