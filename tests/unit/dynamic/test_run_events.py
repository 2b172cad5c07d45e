"""The long polls' notifier (catalogd.dynamic.run_events): a run's end wakes its waiters (a blocking
one and one on the event loop), a lapsed wait answers the job as it is, the daemon's stop wakes
everyone, and nothing stays subscribed. No timing is asserted: a wait that was not woken would
answer at its (long) lapse with the job unfinished, and the tests would see that."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from polling import wait_until
from test_executor import Rig, _full

from catalogd.dynamic.run_events import MAX_WAIT, RunEvents, job_over, parse_wait
from catalogd.errors import InvalidArgumentError
from catalogd.model import RefreshJob, RefreshRun, RunStatus

#: Far longer than any test: a waiter that is not woken fails the test by answering unfinished.
LONG = 60.0


class Job:
    """One job of two runs whose state the test writes, as the executor would."""

    def __init__(self) -> None:
        self.runs = [RefreshRun(id=f"r{i}", table=f"main.db.t{i}", trigger="api", status=RunStatus.RUNNING)
                     for i in (1, 2)]
        self.reads = 0

    def get(self) -> RefreshJob:
        self.reads += 1
        return RefreshJob(id="job", status=RunStatus.RUNNING, runs=[RefreshRun(**r.__dict__) for r in self.runs])

    def end(self, events: RunEvents, index: int, status: RunStatus = RunStatus.SUCCEEDED) -> None:
        run = self.runs[index]
        run.ended, run.status = 10.0, status
        events.ended(run.id)


def test_parse_wait() -> None:
    assert parse_wait(None) == 0.0
    assert parse_wait("2.5") == 2.5
    assert parse_wait(0) == 0.0
    assert parse_wait("1e9") == MAX_WAIT
    for bad in ("-1", "soon", "nan", "inf", "", float("nan"), -0.5):
        with pytest.raises(InvalidArgumentError, match="wait must be a number of seconds"):
            parse_wait(bad)


def test_a_job_is_over_once_every_run_finished_with_its_end() -> None:
    job = Job()
    assert not job_over(job.get())
    job.runs[0].status = job.runs[1].status = RunStatus.SUCCEEDED
    assert not job_over(job.get())  # SUCCEEDED but no end time yet: not over
    job.runs[0].ended = job.runs[1].ended = 1.0
    assert job_over(job.get())


def test_a_blocking_wait_is_woken_by_the_last_run_s_end() -> None:
    events, job = RunEvents(), Job()
    answers: list[RefreshJob] = []
    waiter = threading.Thread(target=lambda: answers.append(events.wait(job.get, LONG)))
    waiter.start()
    wait_until(lambda: events.waiting() == 2, 30.0, "the waiter to subscribe to both runs")
    job.end(events, 0)
    # Woken by the first end, it looks again and waits on: one run still runs.
    wait_until(lambda: job.reads >= 3, 30.0, "the waiter to look again")
    assert not answers
    job.end(events, 1, RunStatus.FAILED)
    waiter.join(30.0)
    assert answers and job_over(answers[0])
    assert [r.status for r in answers[0].runs] == [RunStatus.SUCCEEDED, RunStatus.FAILED]
    assert events.waiting() == 0


def test_an_async_wait_is_woken_from_another_thread() -> None:
    events, job = RunEvents(), Job()

    async def main() -> RefreshJob:
        waiting = asyncio.ensure_future(events.wait_async(job.get, LONG))
        while events.waiting() < 2:
            await asyncio.sleep(0.01)
        # The runs end on the executor's threads.
        for index in (0, 1):
            threading.Thread(target=job.end, args=(events, index)).start()
        return await waiting

    answer = asyncio.run(main())
    assert job_over(answer)
    assert events.waiting() == 0


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_wait_that_lapses_answers_the_job_unfinished(asynchronous: bool) -> None:
    events, job = RunEvents(), Job()
    answer = asyncio.run(events.wait_async(job.get, 0.05)) if asynchronous else events.wait(job.get, 0.05)
    assert answer.runs[0].status is RunStatus.RUNNING and not job_over(answer)
    assert events.waiting() == 0


def test_a_job_over_already_or_no_wait_answers_at_once_without_subscribing() -> None:
    events, job = RunEvents(), Job()
    assert not job_over(events.wait(job.get, 0.0))
    job.end(events, 0)
    job.end(events, 1)
    assert job_over(events.wait(job.get, LONG))
    assert job_over(asyncio.run(events.wait_async(job.get, LONG)))
    assert events.waiting() == 0


def test_close_wakes_every_waiter_and_later_ones_do_not_wait() -> None:
    events, job = RunEvents(), Job()
    answers: list[RefreshJob] = []
    waiter = threading.Thread(target=lambda: answers.append(events.wait(job.get, LONG)))
    waiter.start()
    wait_until(lambda: events.waiting() == 2, 30.0, "the waiter to subscribe")
    events.close()
    waiter.join(30.0)
    assert answers and not job_over(answers[0])
    assert not job_over(events.wait(job.get, LONG))  # answered at once: the daemon stops
    assert events.waiting() == 0


def test_a_failing_waiter_does_not_keep_the_end_from_the_others() -> None:
    events = RunEvents()
    woken: list[str] = []

    def broken() -> None:
        raise RuntimeError("boom")

    events.subscribe(["r1"], broken)
    events.subscribe(["r1"], lambda: woken.append("second"))
    events.ended("r1")
    assert woken == ["second"]
    events.ended("r1")  # once only
    assert woken == ["second"] and events.waiting() == 0


def test_the_executor_wakes_a_waiter_when_the_run_ends(tmp_path: Path) -> None:
    a = _full("a")
    rig = Rig(tmp_path, a)
    job = rig.executor.submit([a], trigger="api")
    answers: list[RefreshJob] = []
    waiter = threading.Thread(target=lambda: answers.append(rig.runs.events.wait(
        lambda: rig.runs.get_job(job.id), LONG)))
    waiter.start()
    proc = rig.launched(1)[0]
    wait_until(lambda: rig.runs.events.waiting() == 1, 30.0, "the waiter to subscribe")
    rig.finish(proc, tmp_path)
    waiter.join(30.0)
    assert answers and answers[0].status is RunStatus.SUCCEEDED and answers[0].runs[0].ended is not None
    rig.executor.shutdown()


def test_a_run_cut_off_before_it_started_wakes_its_waiter(tmp_path: Path) -> None:
    a, b = _full("a"), _full("b")
    rig = Rig(tmp_path, a, b, max_concurrent=1)
    rig.executor.submit([a], trigger="api")
    queued = rig.executor.submit([b], trigger="api")
    rig.launched(1)
    answers: list[RefreshJob] = []
    waiter = threading.Thread(target=lambda: answers.append(rig.runs.events.wait(
        lambda: rig.runs.get_job(queued.id), LONG)))
    waiter.start()
    wait_until(lambda: rig.runs.events.waiting() == 1, 30.0, "the waiter to subscribe")
    rig.executor.stop_table("main.db.b")  # its run never starts: FAILED, and the waiter wakes
    waiter.join(30.0)
    assert answers and answers[0].status is RunStatus.FAILED and answers[0].runs[0].ended is not None
    rig.stopping.set()
    rig.executor.shutdown()
