"""The README's walk-through and the docs' dynamic-tables example, run as a new user runs them.

The commands are read from the text itself (the ``sh`` blocks of README.md's walk-through,
which the docs' Getting started page includes, and of docs/dynamic-tables.md's complete
example), so this test breaks when the documentation drifts from what works. They run in
bash, in a directory whose ``.venv`` is this environment, against a daemon of their own
that serves ``conf/catalogd.yaml`` (what ``make run`` serves) on free ports: the only edits
to the text are those ports. No output (the commands', the Spark scripts', the daemon's)
may hold a stack trace.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from .helpers import Daemon, clean_env

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DYNAMIC_TABLES = REPO / "docs" / "dynamic-tables.md"
MARK = "@@readme-step "

# A stack trace: Java frames, a Java exception line, a Python traceback.
_FRAME = re.compile(r"^\s*(at [\w$.<>]+\(|\.\.\. \d+ more$|Caused by: )")
_EXCEPTION = re.compile(r"^([a-z_$][\w$]*\.)+[\w$]*(Exception|Error)(: |$)")
_ALARMING = re.compile(r"\b(WARN|WARNING|ERROR|FATAL|SEVERE)\b")


def section(title: str, page: Path = README) -> str:
    """The text of the section ``## title`` of ``page`` (up to the next ``## ``)."""
    text = page.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)


def commands(block: str) -> list[str]:
    """A shell block split into its commands (continued lines, open quotes and here-documents
    kept together); comment lines dropped."""
    found: list[str] = []
    current: list[str] = []
    heredoc: str | None = None
    for line in block.splitlines():
        if heredoc is not None:
            current.append(line)
            if line.strip() == heredoc:
                heredoc = None
                found.append("\n".join(current))
                current = []
            continue
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current.append(line)
        opened = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if opened:
            heredoc = opened.group(1)
            continue
        text = "\n".join(current)
        if text.endswith("\\"):
            continue
        try:
            shlex.split(text, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        found.append(text)
        current = []
    assert not current and heredoc is None, f"an unfinished command in the README block:\n{block}"
    return found


def stack_traces(output: str) -> list[str]:
    """Each stack trace in ``output``, with the log line it belongs to."""
    traces = []
    record = ""
    for line in output.splitlines():
        if line.startswith("Traceback (most recent call last)"):
            traces.append(f"{record}\n{line}" if record else line)
        elif _FRAME.match(line) or _EXCEPTION.match(line):
            # A trace under a WARN or ERROR record: what a user takes for something gone wrong.
            if _ALARMING.search(record) and (not traces or not traces[-1].startswith(record)):
                traces.append(f"{record}\n{line}")
        elif line.strip():
            record = line
    return traces


class Session:
    """A bash session a new user would have: cwd with ``.venv``, the daemon's address."""

    def __init__(self, root: Path, daemon: Daemon, ports: dict[str, str]) -> None:
        self.root = root
        self.ports = ports
        (root / ".venv").symlink_to(sys.prefix)
        self.env = {**clean_env(), "CATALOGD_SERVER": daemon.address}
        # The tests' JVM options (conftest.py) are not a new user's; a JVM would print them.
        self.env.pop("JAVA_TOOL_OPTIONS", None)
        # Keep this checkout's code first, as the test itself runs it.
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)

    def run(self, block: list[str], timeout: float) -> list[tuple[str, str]]:
        """Run the commands in one bash (``set -euo pipefail``); (command, output) of each
        command that ran, the failing one last."""
        lines = ["set -euo pipefail", "exec 2>&1"]
        for n, command in enumerate(block):
            lines.append(f"echo '{MARK}{n}'")
            lines.append(self._local(command))
        script = self.root / "readme-part.sh"
        script.write_text("\n".join(lines) + "\n")
        try:
            done = subprocess.run(["bash", str(script)], cwd=self.root, env=self.env, capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            raise AssertionError(f"the README commands took over {timeout:.0f}s; output:\n{out[-6000:]}") from None
        parts = re.split(rf"^{re.escape(MARK)}(\d+)\n", done.stdout, flags=re.M)
        ran = [(block[int(n)], out) for n, out in zip(parts[1::2], parts[2::2], strict=True)]
        if done.returncode != 0:
            command, out = ran[-1] if ran else ("(before the first command)", parts[0])
            raise AssertionError(f"README command failed with exit code {done.returncode}:\n{command}\n"
                                 f"output:\n{out[-6000:]}")
        return ran

    def _local(self, command: str) -> str:
        for readme, ours in self.ports.items():
            command = command.replace(readme, ours)
        return command


def output_of(ran: list[tuple[str, str]], start: str) -> str:
    """The output of the (first) command that starts with ``start``."""
    for command, out in ran:
        if command.lstrip().startswith(start):
            return out
    raise AssertionError(f"the README no longer runs a command starting with {start!r}: "
                         f"{[c.splitlines()[0] for c, _ in ran]}")


def no_stack_traces(ran: list[tuple[str, str]]) -> None:
    for command, out in ran:
        traces = stack_traces(out)
        assert not traces, f"stack trace in the output of\n{command}\n---\n" + "\n---\n".join(traces)


@pytest.mark.timeout(1200)
def test_readme_walk_through_and_dynamic_tables_example(daemon_factory: Callable[..., Daemon],
                                                        tmp_path: Path) -> None:
    # What `make run` serves, on ports of the test's own.
    config: dict[str, Any] = yaml.safe_load((REPO / "conf" / "catalogd.yaml").read_text())
    readme_server = config.pop("server")
    daemon = daemon_factory(catalogs=config.pop("catalogs"), extra=config, name="readme")
    http_port = daemon.http.rsplit(":", 1)[1]
    user = tmp_path / "user"
    user.mkdir()
    session = Session(user, daemon, {f"localhost:{readme_server['http-port']}": f"127.0.0.1:{http_port}"})

    # The line a user gets when the daemon is ready.
    ready = [line for line in daemon.log_path.read_text().splitlines() if line.startswith("catalogd is ready.")]
    assert len(ready) == 1, daemon.log()
    assert f"catalogd --server {daemon.address} catalog list" in ready[0]
    assert "spark-conf main" in ready[0] and f"{daemon.http}/healthz" in ready[0]

    # The walk-through: the CLI part, then the Spark part (a separate Python process).
    walk = section("Walk-through")
    cli_block, spark_block = (commands(b) for b in sh_blocks(walk))
    assert cli_block[0] == ". .venv/bin/activate"
    ran = session.run(cli_block, timeout=300)
    assert {"main", "scratch"} <= set(output_of(ran, "catalogd catalog list").split())
    described = output_of(ran, "catalogd table describe")
    assert all(word in described for word in ("amount", "decimal(10,2)", "EUR", "customer", "ds"))
    table = json.loads(output_of(ran, "catalogd --json table describe"))
    assert [c["name"] for c in table["columns"]] == ["id", "amount", "customer"]
    assert [k["name"] for k in table["partition_keys"]] == ["ds"]
    spark_conf = output_of(ran, "catalogd spark-conf")
    # The catalog plugin for every catalog, main the default, the session catalog on the endpoint.
    assert "spark.hadoop.hive.metastore.uris=" + daemon.hms_uri in spark_conf
    for line in ("spark.sql.catalog.main=catalogd.spark.CatalogdCatalog",
                 "spark.sql.catalog.scratch=catalogd.spark.CatalogdCatalog", "spark.sql.defaultCatalog=main"):
        assert line in spark_conf.splitlines(), spark_conf
    no_stack_traces(ran)

    # The Spark part is plain Spark SQL on the plugin's native names: no catalogd helper.
    spark_script, listing = spark_block
    assert "from catalogd.spark import session_builder\n" in spark_script
    assert not re.search(r"atomic_ctas|insert_into|insert_overwrite|staged_table|write_atomic|\bsql\(spark",
                         spark_script), spark_script
    assert "main.sales.orders" in spark_script and "scratch.tmp.big" in spark_script
    ran_spark = session.run([". .venv/bin/activate", spark_script, listing], timeout=600)
    shown = ran_spark[-2][1]
    assert "ada" in shown and "bob" in shown and "19.99" in shown, shown
    assert re.search(r"^\|\s*tmp\s*\|$", shown, flags=re.M), shown  # SHOW NAMESPACES IN scratch
    # Through the plugin the same session wrote into the memory catalog scratch.
    assert shown.count("19.99") == 2, shown  # main.sales.orders, then scratch.tmp.big
    assert ran_spark[-1][1].split() == ["table", "big"], ran_spark[-1]
    no_stack_traces(ran_spark)

    cleanup = re.search(r"Clean up with `([^`]+)`", walk)
    assert cleanup is not None, "the walk-through no longer says how to clean up"
    no_stack_traces(session.run([". .venv/bin/activate", cleanup.group(1)], timeout=120))

    # The dynamic-tables example, the whole block: source by CTAS, CREATE DYNAMIC TABLE,
    # a refresh over REST, history, partitions, clean-up.
    example = section("A complete example", DYNAMIC_TABLES)
    dynamic_block = commands(sh_blocks(example)[0])
    ran_dt = session.run(dynamic_block, timeout=900)
    job = json.loads(output_of(ran_dt, "curl -s localhost:9191/v3/dynamic-tables/refresh/$JOB"))
    assert job["status"] == "SUCCEEDED", job
    assert "SUCCEEDED" in output_of(ran_dt, "catalogd dt history")
    partitions = output_of(ran_dt, "catalogd table partitions")
    assert "ds=2024-03-01" in partitions and "ds=2024-02-29" not in partitions and "ds=2024-03-02" not in partitions
    no_stack_traces(ran_dt)

    # The first create found the analyzer the daemon started in the background.
    log = daemon.log_path.read_text()
    assert log.count("starting the Spark analyzer helper") == 1, daemon.log(80)
    assert "the Spark analyzer helper of catalog main is ready" in log
    traces = stack_traces(log)
    assert not traces, "stack trace in the daemon's log:\n" + "\n---\n".join(traces)
    assert daemon.stop() == 0, daemon.log()
