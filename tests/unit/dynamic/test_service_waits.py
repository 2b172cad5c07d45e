"""DynamicTables' long polls (catalogd.dynamic.service): this member's job is waited for on the event
loop, a job of the leader's is asked there with the wait (forwarded), and blocking waits are bounded
(MAX_BLOCKING_WAITS): beyond them a wait is asked as none. The service is built bare: only the
parts these methods use."""

from __future__ import annotations

import asyncio
import threading

from polling import wait_until

from catalogd.dynamic.run_events import MAX_WAIT
from catalogd.dynamic.runs import RunIndex
from catalogd.dynamic.service import MAX_BLOCKING_WAITS, DynamicTables
from catalogd.model import RefreshJob, RefreshRun, RunStatus


class Leader:
    """The leader's calls: answers ``get_job`` when released, and records the waits asked."""

    def __init__(self) -> None:
        self.waits: list[float] = []
        self.release = threading.Event()

    def get_job(self, job_id: str, wait: float = 0.0) -> RefreshJob:
        self.waits.append(wait)
        if wait > 0:
            self.release.wait(30.0)
        return RefreshJob(id=job_id, status=RunStatus.SUCCEEDED, runs=[])


def _service(leading: bool, leader: Leader | None = None) -> DynamicTables:
    service = DynamicTables.__new__(DynamicTables)
    service._runs = RunIndex("local[1]")
    service._leader = leader  # type: ignore[assignment]
    service._leading = lambda: leading
    service._blocking_waits = threading.BoundedSemaphore(MAX_BLOCKING_WAITS)
    return service


def test_a_follower_forwards_the_wait_and_bounds_the_threads_it_holds() -> None:
    leader = Leader()
    service = _service(False, leader)

    async def main() -> list[RefreshJob]:
        held = [asyncio.ensure_future(service.wait_job(f"job-{i}", 1e6)) for i in range(MAX_BLOCKING_WAITS)]
        while len(leader.waits) < MAX_BLOCKING_WAITS:
            await asyncio.sleep(0.01)
        # Every slot is held: one more is asked without a wait, and answers at once.
        extra = await service.wait_job("job-x", 10.0)
        leader.release.set()
        return [extra, *await asyncio.gather(*held)]

    answers = asyncio.run(main())
    assert [a.status for a in answers] == [RunStatus.SUCCEEDED] * (MAX_BLOCKING_WAITS + 1)
    assert sorted(leader.waits) == [0.0] + [MAX_WAIT] * MAX_BLOCKING_WAITS  # cut to the maximum
    # The slots are free again: a blocking wait (Thrift) is forwarded with its wait.
    assert service.get_job("job-y", 5.0).status is RunStatus.SUCCEEDED
    assert leader.waits[-1] == 5.0


def test_this_member_s_job_is_waited_for_on_the_event_loop() -> None:
    service = _service(True)
    run = RefreshRun(id="r1", table="main.db.t", trigger="api", status=RunStatus.RUNNING)
    service._runs.add(run)
    service._runs.add_job(RefreshJob(id="job", status=RunStatus.RUNNING, runs=[run]))

    def end() -> None:
        wait_until(lambda: service._runs.events.waiting() == 1, 30.0, "the waiter to subscribe")
        run.ended, run.status = 5.0, RunStatus.SUCCEEDED
        service._runs.ended(run.id)

    ender = threading.Thread(target=end)
    ender.start()
    job = asyncio.run(service.wait_job("job", 60.0))
    ender.join(30.0)
    assert job.status is RunStatus.SUCCEEDED and job.runs[0].ended == 5.0
