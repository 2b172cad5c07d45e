"""The analyzer handle's warm start, against real stand-in helper processes (small Python
scripts speaking the helper's JSON-lines protocol): a failed background start is logged
once and the next query starts the helper on demand; a close during a start ends it."""

from __future__ import annotations

import logging
import os
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from polling import wait_until

from catalogd.dynamic.analyzer import Analyzer, Analyzers
from catalogd.errors import InternalError

#: A stand-in helper: reads the settings line, answers ready, then one column per query.
#: ``FAIL_FIRST`` (a file path) makes the first start fail (the file marks that it did);
#: ``HANG`` makes it never answer ready; ``PID_FILE`` gets its pid.
HELPER = textwrap.dedent("""
    import json, os, sys, time
    settings = json.loads(sys.stdin.readline())
    with open(os.environ["PID_FILE"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    marker = os.environ.get("FAIL_FIRST")
    if marker and not os.path.exists(marker):
        open(marker, "w").close()
        print(json.dumps({"ready": False, "error": "no JVM today"}), flush=True)
        sys.exit(1)
    if os.environ.get("HANG"):
        time.sleep(600)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        query = json.loads(line)["query"]
        print(json.dumps({"columns": [{"name": "q", "type": "string", "comment": query}]}), flush=True)
""")


@pytest.fixture
def helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    script = tmp_path / "helper.py"
    script.write_text(HELPER)
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("PID_FILE", str(pid_file))
    return [sys.executable, str(script)], pid_file


def _pids(pid_file: Path) -> list[int]:
    return [int(p) for p in pid_file.read_text().split()] if pid_file.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose; Popen.wait reaps it.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_warm_start_makes_the_first_query_use_the_running_helper(helper: tuple[list[str], Path]) -> None:
    command, pid_file = helper
    analyzer = Analyzer({"k": "v"}, name="main", command=command)
    try:
        analyzer.warm().join(60)
        assert len(_pids(pid_file)) == 1
        columns = analyzer.analyze("SELECT 1")
        assert [(c.name, c.comment) for c in columns] == [("q", "SELECT 1")]
        assert len(_pids(pid_file)) == 1, "the query started a second helper"
        analyzer.warm().join(60)  # a helper is running: nothing to start
        assert len(_pids(pid_file)) == 1
    finally:
        analyzer.close()
    assert not any(_alive(p) for p in _pids(pid_file))


def test_a_failed_warm_start_is_logged_once_and_the_query_starts_it(
        helper: tuple[list[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    command, pid_file = helper
    monkeypatch.setenv("FAIL_FIRST", str(tmp_path / "failed-once"))
    analyzer = Analyzer({}, name="main", command=command)
    try:
        with caplog.at_level(logging.INFO, logger="catalogd.dynamic.analyzer"):
            analyzer.warm().join(60)
            columns = analyzer.analyze("SELECT 2")
        assert [c.comment for c in columns] == ["SELECT 2"]
        failures = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(failures) == 1 and "no JVM today" in failures[0].getMessage()
        assert len(_pids(pid_file)) == 2
    finally:
        analyzer.close()


def test_close_ends_a_helper_that_is_still_starting(helper: tuple[list[str], Path],
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    command, pid_file = helper
    monkeypatch.setenv("HANG", "1")
    analyzer = Analyzer({}, name="main", command=command)
    warming = analyzer.warm()
    [pid] = wait_until(lambda: _pids(pid_file), 60, "the helper to start")
    closing = threading.Thread(target=analyzer.close)
    with caplog.at_level(logging.WARNING, logger="catalogd.dynamic.analyzer"):
        closing.start()
        # Far below the helper's 180 s start timeout: close did not wait for the start.
        wait_until(lambda: not closing.is_alive() and not warming.is_alive(), 60, "close to return")
    assert not _alive(pid)
    assert not caplog.records, "a start ended by close is no failure to report"
    with pytest.raises(InternalError, match="closed"):
        analyzer.analyze("SELECT 3")
    assert _pids(pid_file) == [pid], "a closed analyzer started a helper"


def test_a_helper_s_jvm_keeps_its_temporary_files_in_the_data_dir(tmp_path: Path) -> None:
    """The helper is killed when its daemon stops: what its JVM put in /tmp would stay there."""
    left = tmp_path / "analyzer" / "main" / "left-by-a-killed-helper"
    left.mkdir(parents=True)
    analyzers = Analyzers(tmp_dir=tmp_path / "analyzer")
    analyzer = analyzers.get("main", lambda: {"spark.driver.extraJavaOptions": "-Dx=1"})
    assert isinstance(analyzer, Analyzer)  # made, not started
    tmp = tmp_path / "analyzer" / "main"
    assert analyzer.spark_conf["spark.driver.extraJavaOptions"] == f"-Djava.io.tmpdir={tmp} -Dx=1"
    assert list(tmp.iterdir()) == []
