"""Wakes whoever waits for refresh runs to end: the long polls of ``POST /v3/dynamic-tables/refresh?wait=``,
``GET .../refresh/{jobId}?wait=`` and Thrift's ``getRefreshJob(jobId, waitSeconds)``.

The executor (and the supervisor, for streaming runs) calls ``ended(run_id)`` right after it
wrote a run's final state (status and end time) into the run; a waiter subscribed to that run
is woken then, looks at its job again and answers once every run of it has ended, or when its
wait lapses. Nothing sleeps in a loop: a waiter with nothing to wake it costs no CPU, and an
async waiter (the REST routes) holds no thread while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable

from catalogd.errors import InvalidArgumentError
from catalogd.model import RefreshJob

logger = logging.getLogger(__name__)

#: The longest one wait, seconds; a longer one asked for is cut to it (the client asks again).
MAX_WAIT = 300.0


def parse_wait(value: str | float | None) -> float:
    """The seconds of a ``wait`` parameter, cut to ``MAX_WAIT`` (None: no wait, 0).

    Raises:
        InvalidArgumentError: not a number, negative, or not finite.
    """
    if value is None:
        return 0.0
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"wait must be a number of seconds (0 to {MAX_WAIT:g}), not {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise InvalidArgumentError(f"wait must be a number of seconds (0 to {MAX_WAIT:g}), not {value!r}")
    return min(seconds, MAX_WAIT)


def job_over(job: RefreshJob) -> bool:
    """Whether every run of ``job`` has ended: finished and its end time set (a waiter never
    answers SUCCEEDED without the end)."""
    return all(r.status.finished and r.ended is not None for r in job.runs)


class RunEvents:
    """Callbacks per run id, called (once) when that run ends; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, list[Callable[[], None]]] = {}
        self._closed = False

    def subscribe(self, run_ids: Iterable[str], wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` when any of ``run_ids`` ends (at once if the events are closed); the
        answer unsubscribes. ``wake`` runs on the thread that ends the run: it must not block."""
        ids = list(run_ids)
        with self._lock:
            closed = self._closed
            if not closed:
                for run_id in ids:
                    self._waiters.setdefault(run_id, []).append(wake)
        if closed:
            wake()

        def unsubscribe() -> None:
            with self._lock:
                for run_id in ids:
                    waiting = self._waiters.get(run_id)
                    if waiting is None:
                        continue
                    if wake in waiting:
                        waiting.remove(wake)
                    if not waiting:
                        del self._waiters[run_id]

        return unsubscribe

    def ended(self, run_id: str) -> None:
        """``run_id`` ended (its final state is written): wake its waiters."""
        with self._lock:
            waiting = self._waiters.pop(run_id, [])
        for wake in waiting:
            _call(wake)

    def close(self) -> None:
        """The daemon stops: wake every waiter, and let no new one wait."""
        with self._lock:
            self._closed = True
            waiting = [wake for wakes in self._waiters.values() for wake in wakes]
            self._waiters.clear()
        for wake in waiting:
            _call(wake)

    def waiting(self) -> int:
        """Subscriptions not yet woken (for the tests)."""
        with self._lock:
            return sum(len(w) for w in self._waiters.values())

    def wait(self, get: Callable[[], RefreshJob], timeout: float) -> RefreshJob:
        """``get()`` once every run of the job has ended, or when ``timeout`` seconds passed
        (the job as it is then); blocks the calling thread."""
        job = get()
        if timeout <= 0 or job_over(job):
            return job
        deadline = time.monotonic() + timeout
        woken = threading.Event()
        unsubscribe = self.subscribe([r.id for r in job.runs], woken.set)
        try:
            while True:
                # Looked at after subscribing: a run that ended in between is seen here.
                job = get()
                left = deadline - time.monotonic()
                if job_over(job) or left <= 0 or self._closed:
                    return job
                woken.wait(left)
                woken.clear()
        finally:
            unsubscribe()

    async def wait_async(self, get: Callable[[], RefreshJob], timeout: float) -> RefreshJob:
        """As ``wait``, on the event loop: the run's thread resolves a future through
        ``call_soon_threadsafe``, so no thread is held while the job runs. ``get`` must not
        block (``RunIndex.get_job``: a copy from memory under a short lock)."""
        job = get()
        if timeout <= 0 or job_over(job):
            return job
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        woken = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(woken.set)

        unsubscribe = self.subscribe([r.id for r in job.runs], wake)
        try:
            while True:
                job = get()
                left = deadline - loop.time()
                if job_over(job) or left <= 0 or self._closed:
                    return job
                woken.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), left)
        finally:
            unsubscribe()


def _call(wake: Callable[[], None]) -> None:
    try:
        wake()
    except Exception:  # one waiter's failure must not keep the run's end from the others
        logger.exception("waking a refresh job's waiter failed")
