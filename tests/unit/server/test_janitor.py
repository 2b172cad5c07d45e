"""The janitor's pass counter: a pass counts once it ran to its end, a fenced or failed one does not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from prometheus_client import generate_latest

from catalogd.manager import CatalogManager
from catalogd.server.janitor import Janitor
from catalogd.server.metrics import Metrics


class Sweeper:
    """Stands in for CatalogManager.janitor_pass: acts on ``acted`` stages, or raises when ``fails``."""

    def __init__(self) -> None:
        self.acted = 0
        self.fails = False

    def janitor_pass(self, startup: bool = False, fence: Callable[[], bool] | None = None) -> int:
        if self.fails:
            raise RuntimeError("the metastore went away")
        return self.acted


def _janitor(sweeper: Sweeper, fence: Callable[[], bool] | None = None) -> Janitor:
    return Janitor(cast(CatalogManager, sweeper), interval=3600, fence=fence)


def test_passes_that_ran_to_their_end_are_counted_and_exported() -> None:
    sweeper = Sweeper()
    janitor = _janitor(sweeper)
    metrics = Metrics()
    metrics.watch_janitor(lambda: janitor.passes)
    janitor.run_once(startup=True)
    sweeper.acted = 2
    assert janitor.run_once() == 2
    assert janitor.passes == 2
    assert "catalogd_janitor_passes_total 2.0" in generate_latest(metrics.registry).decode()


def test_a_failed_or_fenced_pass_is_not_counted() -> None:
    sweeper = Sweeper()
    leading: dict[str, Any] = {"now": False}
    janitor = _janitor(sweeper, fence=lambda: bool(leading["now"]))
    assert janitor.run_once() == 0  # not the leader: no pass
    leading["now"] = True
    sweeper.fails = True
    assert janitor.run_once() == 0  # logged, not counted
    assert janitor.passes == 0
