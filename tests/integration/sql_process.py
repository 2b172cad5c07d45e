"""An engine's SQL session in a child process that takes one JSON statement per line on stdin
and answers each with one marked line of its stdout (the rest of its output goes to a log).

Flink (``flink.py``) and Spark with Iceberg's runtime (``iceberg_spark.py``) run this way: each
in a virtualenv of its own, one process a session, its whole process group killed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

from .helpers import tail

__all__ = ["SqlProcess"]


class SqlProcess:
    """A running driver: ``command`` started in ``work`` with ``env``; ``engine`` names it in
    errors; ``mark`` starts its answer lines; ``error`` is raised with a failed statement's message."""

    def __init__(self, command: list[str], work: Path, env: dict[str, str], log_path: Path, *, engine: str,
                 mark: str, error: type[Exception], start_timeout: float, started: str) -> None:
        self.work = work
        self.log_path = log_path
        self.engine = engine
        self.mark = mark
        self.error = error
        self._log: IO[str] = open(log_path, "a")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            command, cwd=work, env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            start_new_session=True,  # the driver and its JVM: one process group, killed together
        )
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._lock = threading.Lock()
        try:
            self.first = self._answer(start_timeout, started)
        except BaseException:
            self.close()  # a JVM that never answered is killed all the same
            raise

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(self.mark):
                self._answers.put(line[len(self.mark):])
            else:
                self._log.write(line)
                self._log.flush()
        self._answers.put(None)

    def _answer(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer from {self.engine} in {timeout:.0f}s ({what}); log:\n{self.log()}") \
                from None
        if line is None:
            raise AssertionError(f"{self.engine}'s process exited ({what}); log:\n{self.log()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def sql(self, statement: str, timeout: float) -> list[list[Any]]:
        """The rows of one statement, or ``self.error``."""
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(json.dumps(statement) + "\n")
            self.proc.stdin.flush()
            answer = self._answer(timeout, statement)
        if "error" in answer:
            raise self.error(answer["error"])
        rows: list[list[Any]] = answer["rows"]
        return rows

    def log(self, lines: int = 60) -> str:
        return tail(self.log_path, lines)

    def close(self) -> None:
        # SIGKILL to the group: the engine holds no state worth a clean stop (the catalogs' state
        # is catalogd's), and its own shutdown would wait on the JVM's.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        self._reader.join(timeout=10)  # it writes the process's last lines to the log
        if not self._log.closed:
            self._log.close()
