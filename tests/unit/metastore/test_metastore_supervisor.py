"""MetastoreSupervisor with a fake metastore: a death is noticed, calls are told why, restarts back off."""

from __future__ import annotations

import threading

from polling import wait_until

from catalogd.errors import ConflictError
from catalogd.metastore.supervisor import MetastoreSupervisor


class FakeMetastore:
    name = "main"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.dead = threading.Event()
        self.starts = 0
        self.stops = 0
        self.release = threading.Event()

    def wait_exit(self, timeout: float) -> int | None:
        if self.dead.wait(timeout):
            self.dead.clear()
            return -9
        return None

    def start(self, timeout: float = 0) -> None:
        self.release.wait(10)
        self.starts += 1
        if self.starts <= self.failures:
            raise ConflictError("port taken")

    def stop(self, timeout: float | None = None) -> None:
        self.stops += 1

    def log_tail(self) -> str:
        return "(log)"


def test_a_dead_metastore_is_restarted_and_calls_are_told_meanwhile() -> None:
    fake = FakeMetastore(failures=2)
    restarted: list[int] = []
    supervisor = MetastoreSupervisor(fake, on_restart=lambda: restarted.append(1), backoff=0.01,  # type: ignore[arg-type]
                                     max_backoff=0.02)
    supervisor.start()
    try:
        assert supervisor.problem is None
        fake.dead.set()
        problem = wait_until(lambda: supervisor.problem, 10, "the death to be noticed")
        assert "catalog 'main' exited (code -9)" in problem and "being restarted" in problem
        fake.release.set()
        wait_until(lambda: supervisor.problem is None, 10, "the metastore to serve again")
        assert fake.starts == 3 and supervisor.restarts == 1 and restarted == [1]
    finally:
        supervisor.stop()
    assert fake.stops >= 1


def test_stop_ends_a_restart_in_progress() -> None:
    fake = FakeMetastore(failures=1000)
    fake.release.set()
    supervisor = MetastoreSupervisor(fake, backoff=0.01, max_backoff=0.01)  # type: ignore[arg-type]
    supervisor.start()
    fake.dead.set()
    wait_until(lambda: fake.starts >= 3, 10, "restarts to be attempted")
    supervisor.stop()
    starts = fake.starts
    assert not supervisor._thread.is_alive()
    assert fake.starts == starts
