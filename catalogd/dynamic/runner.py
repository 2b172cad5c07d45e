"""Launching refresh jobs with ``spark-submit``, stopping them, reading what they report."""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from catalogd.dynamic.lockdown import locked_conf, locked_env
from catalogd.errors import InternalError

logger = logging.getLogger(__name__)

JOB_SCRIPT = Path(__file__).with_name("job.py")
_PR_SET_PDEATHSIG = 1
#: How long a SIGKILLed job may take to go (after the grace its SIGTERM had).
KILL_WAIT = 10.0


class Process(Protocol):
    """What the daemon needs of a job's process (``subprocess.Popen``; a fake in tests)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | Any: ...

    def poll(self) -> int | None: ...


class JobRunner(Protocol):
    """What the service needs to run jobs: this module (or a fake in tests)."""

    def spark_submit_path(self) -> Path: ...

    def launch(self, master: str, conf: dict[str, str], spec: dict[str, Any], work_dir: Path,
               env: dict[str, str] | None = None) -> Process: ...

    def stop(self, proc: Process, grace: float) -> None: ...

    def stop_all(self, procs: Iterable[Process], grace: float) -> None: ...

    def read_json(self, path: Path) -> dict[str, Any]: ...

    def log_tail(self, work_dir: Path, lines: int = 5) -> str: ...


def spark_submit_path() -> Path:
    """``$SPARK_HOME/bin/spark-submit``, else the one the pyspark wheel installed next to Python."""
    home = os.environ.get("SPARK_HOME")
    candidates = [Path(home) / "bin" / "spark-submit"] if home else []
    candidates.append(Path(sys.executable).parent / "spark-submit")
    try:
        import pyspark

        candidates.append(Path(pyspark.__file__).parent / "bin" / "spark-submit")
    except ImportError:
        pass
    for path in candidates:
        if path.exists():
            return path
    raise InternalError("spark-submit not found: install pyspark or set SPARK_HOME")


def _spark_home(submit: Path) -> Path:
    if submit.parent.parent.joinpath("jars").is_dir():
        return submit.parent.parent
    import pyspark

    return Path(pyspark.__file__).parent


def _die_with_daemon() -> None:
    """A job must not outlive a daemon killed with SIGKILL: its successor starts its own
    (two continuous jobs would write one table)."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def launch(master: str, conf: dict[str, str], spec: dict[str, Any], work_dir: Path,
           env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``spark-submit job.py spec.json``; its output goes to ``work_dir/job.log``.

    ``env`` adds to the daemon's environment: the job's token goes there, where only its own
    user can read it, never in a file or on the command line.

    Must be called from a thread that lives as long as the job (the parent-death
    signal follows the thread that started the process).
    """
    own_dir(work_dir)
    spec_path = work_dir / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=2))
    return _submit(master, conf, work_dir, [str(JOB_SCRIPT), str(spec_path)], env)


def launch_class(master: str, conf: dict[str, str], main_class: str, name: str, work_dir: Path,
                 env: dict[str, str] | None = None, jar: Path | None = None) -> subprocess.Popen[bytes]:
    """Start ``spark-submit --class main_class`` (a JVM application: of Spark's own jars, such
    as Spark's Connect server, or of ``jar``); as ``launch`` for its log, settings, environment
    and thread."""
    own_dir(work_dir)
    return _submit(master, conf, work_dir, ["--class", main_class, "--name", name, *([str(jar)] if jar else [])], env)


def own_dir(work_dir: Path) -> None:
    """Create a job's directory, only ours (0700), or refuse one others can read."""
    # The job's Spark settings may hold secrets: its directory is only ours (0700) from its creation.
    work_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    if work_dir.stat().st_mode & 0o077:
        raise OSError(f"{work_dir} is open to other users (mode {work_dir.stat().st_mode & 0o777:o}); "
                      "it would hold the job's secrets")


def with_tmp_dir(conf: dict[str, str], tmp: Path) -> dict[str, str]:
    """``conf`` with the driver JVM's ``java.io.tmpdir`` in ``tmp``: Spark's local dirs (its
    default ``spark.local.dir``), Hive's session directories (``<uuid>_resources``), native
    libraries and artifacts go there, not to the machine's /tmp, which a killed job never cleans.
    An ``-Djava.io.tmpdir`` already in ``spark.driver.extraJavaOptions`` comes later and wins."""
    path = str(tmp)
    if any(c.isspace() or c in "\\\"'" for c in path):  # quoted as Spark's launcher splits options
        path = '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
    options = " ".join(filter(None, [f"-Djava.io.tmpdir={path}", conf.get("spark.driver.extraJavaOptions", "")]))
    return {**conf, "spark.driver.extraJavaOptions": options}


def _submit(master: str, conf: dict[str, str], work_dir: Path, app_args: list[str],
            env: dict[str, str] | None) -> subprocess.Popen[bytes]:
    # The job's temporary files stay in its directory; a predecessor's there (killed before it
    # could clean up) are removed first.
    tmp = work_dir / "tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o700)
    # On a local master its ports listen on loopback and ask for Spark's authentication (lockdown.py).
    conf = with_tmp_dir(locked_conf(master, conf), tmp)
    # Settings go in a file only we can read, not on the command line, where any
    # user's `ps` would show a secret key.
    props = work_dir / "spark.properties"
    fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.writelines(f"{key} {_escape(value)}\n" for key, value in conf.items())
    submit = spark_submit_path()
    args = [str(submit), "--master", master, "--properties-file", str(props), "--load-spark-defaults", *app_args]
    # A token the daemon's own environment holds is not the job's: it gets its own, or none.
    inherited = {k: v for k, v in os.environ.items() if k != "CATALOGD_TOKEN"}
    env = {**inherited, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           **locked_env(master), **(env or {})}
    # pip's spark-submit looks for pyspark with whatever `python` is first on PATH.
    env.setdefault("SPARK_HOME", str(_spark_home(submit)))
    log = open(work_dir / "job.log", "ab")  # noqa: SIM115 - the child keeps it
    try:
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True, preexec_fn=_die_with_daemon)
    finally:
        log.close()


def _escape(value: str) -> str:
    """A java.util.Properties value: backslashes and line breaks escaped."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def stop(proc: Process, grace: float) -> None:
    """SIGTERM the job's process group, SIGKILL it after ``grace`` seconds."""
    stop_all([proc], grace)


def stop_all(procs: Iterable[Process], grace: float) -> None:
    """Stop several jobs at once: SIGTERM every process group, SIGKILL those still there
    after ``grace`` seconds (so N jobs take one grace, not N)."""
    going = [p for p in procs if p.poll() is None]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, KILL_WAIT)):
        for proc in going:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
        deadline = time.monotonic() + wait
        while True:
            going = [p for p in going if p.poll() is None]
            if not going or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        if not going:
            return
    for proc in going:
        logger.warning("job process %d did not stop", proc.pid)


def log_tail(work_dir: Path, lines: int = 5) -> str:
    """The last error-looking lines of a job's log (for a run that left no result)."""
    try:
        text = (work_dir / "job.log").read_text(errors="replace").splitlines()
    except OSError:
        return ""
    errors = [line for line in text if "Error" in line or "Exception" in line]
    return " | ".join((errors or text)[-lines:])[:1000]


def read_json(path: Path) -> dict[str, Any]:
    try:
        loaded: dict[str, Any] = json.loads(path.read_text())
        return loaded
    except (OSError, ValueError):
        return {}
