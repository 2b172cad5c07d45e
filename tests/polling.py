"""The one way a test waits: poll a probe until it answers or a deadline passes.

A busy 2-core machine can make anything slow, so no test asserts how long something
takes; it waits, with a generous deadline, for the state it expects. Fixed sleeps are
only for proving that something does *not* happen (``holds_for``).

Import it as ``from polling import wait_until`` (``tests/`` is on ``sys.path`` through
``tests/conftest.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(probe: Callable[[], T], timeout: float, what: str = "condition", every: float = 0.2) -> T:
    """Call ``probe`` until it returns something truthy; return that.

    An exception from ``probe`` counts as "not yet" (a daemon still starting, a table
    not there yet). When ``timeout`` seconds pass, fail with ``what``, the last value
    and the last exception, so a failure says what it was waiting for.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    error: BaseException | None = None
    while True:
        try:
            last = probe()
            error = None
            if last:
                return last  # type: ignore[return-value]
        except Exception as exc:  # "not yet", reported on timeout
            error = exc
        if time.monotonic() >= deadline:
            detail = f"; last error: {error!r}" if error is not None else f"; last value: {last!r}"
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(every)


def holds_for(probe: Callable[[], object], seconds: float, what: str = "condition", every: float = 0.2) -> None:
    """Fail as soon as ``probe`` is falsy (or raises) within ``seconds``: proof that something does not happen."""
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        assert value, f"{what} stopped holding (value {value!r})"
        if time.monotonic() >= deadline:
            return
        time.sleep(every)
