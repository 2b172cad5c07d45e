"""CatalogClient.wait_refresh_job long-polls (catalogd.client): each call asks the daemon to wait,
nothing sleeps between calls that waited, a daemon that did not wait (older, or busy) is asked
again after ``poll`` seconds, and ``progress`` sees every answer. The daemon is faked at
``get_refresh_job``; the Thrift reply timeout is checked on ``_call``."""

from __future__ import annotations

from typing import Any

import pytest

import catalogd.client as client_module
from catalogd.client import LONG_POLL, LONG_POLL_MARGIN, CatalogClient
from catalogd.model import RefreshJob, RunStatus


class Clock:
    """time.monotonic and time.sleep of the client, advanced by the fake daemon's waits."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(client_module.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(client_module.time, "sleep", clock.sleep)
    return clock


def _job(status: RunStatus) -> RefreshJob:
    return RefreshJob(id="job", status=status, runs=[])


def _daemon(client: CatalogClient, clock: Clock, answers: list[RunStatus], waits: bool,
            monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Answers in turn; a daemon that ``waits`` takes the whole wait for an unfinished answer."""
    asked: list[float] = []

    def get_refresh_job(job_id: str, wait: float = 0.0) -> RefreshJob:
        asked.append(wait)
        status = answers.pop(0)
        if waits and not status.finished:
            clock.now += wait
        return _job(status)

    monkeypatch.setattr(client, "get_refresh_job", get_refresh_job)
    return asked


def test_each_call_is_a_long_poll_and_nothing_sleeps(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    client = CatalogClient("localhost:1")
    asked = _daemon(client, clock, [RunStatus.RUNNING, RunStatus.SUCCEEDED], True, monkeypatch)
    assert client.wait_refresh_job("job").status is RunStatus.SUCCEEDED
    assert asked == [LONG_POLL, LONG_POLL] and clock.slept == []


def test_progress_sees_every_answer_at_least_every_poll(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    client = CatalogClient("localhost:1")
    asked = _daemon(client, clock, [RunStatus.PENDING, RunStatus.RUNNING, RunStatus.FAILED], True, monkeypatch)
    seen: list[RunStatus] = []
    assert client.wait_refresh_job("job", poll=0.5, progress=lambda j: seen.append(j.status)).status \
        is RunStatus.FAILED
    assert seen == [RunStatus.PENDING, RunStatus.RUNNING, RunStatus.FAILED]
    assert asked == [0.5, 0.5, 0.5] and clock.slept == []


def test_a_daemon_that_does_not_wait_is_asked_again_after_poll(clock: Clock,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    client = CatalogClient("localhost:1")
    _daemon(client, clock, [RunStatus.RUNNING, RunStatus.RUNNING, RunStatus.SUCCEEDED], False, monkeypatch)
    assert client.wait_refresh_job("job", poll=2.0).status is RunStatus.SUCCEEDED
    assert clock.slept == [2.0, 2.0]


def test_the_timeout_bounds_the_waits(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    client = CatalogClient("localhost:1")
    asked = _daemon(client, clock, [RunStatus.RUNNING] * 3, True, monkeypatch)
    assert client.wait_refresh_job("job", timeout=90.0).status is RunStatus.RUNNING
    assert asked == [LONG_POLL, 30.0]


def test_a_long_poll_s_reply_may_take_longer_than_the_client_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    client = CatalogClient("localhost:1", timeout=5.0)
    calls: list[tuple[Any, ...]] = []

    def call(fn: Any, idempotent: bool = True, reply_timeout: float | None = None) -> Any:
        calls.append((idempotent, reply_timeout))
        raise RuntimeError("stop here")

    monkeypatch.setattr(client, "_call", call)
    for wait in (0.0, 20.0):
        with pytest.raises(RuntimeError):
            client.get_refresh_job("job", wait=wait)
    assert calls == [(True, None), (True, 20.0 + LONG_POLL_MARGIN)]
