"""The staging janitor: aborts stages whose lease lapsed, finishes interrupted commits,
deletes the data replaced by commits once its retention is over."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from catalogd.manager import CatalogManager

logger = logging.getLogger(__name__)


class Janitor:
    """Runs ``CatalogManager.janitor_pass`` every ``interval`` seconds on a daemon thread.

    ``fence``: whether this daemon may act now (in a cluster: while it leads); asked before each stage.
    """

    def __init__(self, manager: CatalogManager, interval: float, fence: Callable[[], bool] | None = None) -> None:
        self.manager = manager
        self.interval = interval
        self.fence = fence
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        #: Passes that ran to their end (not fenced off, not failed): ``catalogd_janitor_passes_total``,
        #: so a test or an operator can wait for "a pass since then" instead of guessing its timing.
        self.passes = 0

    def run_once(self, startup: bool = False) -> int:
        try:
            if self.fence is not None and not self.fence():
                return 0
            acted = self.manager.janitor_pass(startup, self.fence)
        except Exception:
            logger.exception("janitor pass failed")
            return 0
        self.passes += 1  # one thread runs passes (the loop, or start-up before it): no lock needed
        if acted:
            logger.info("janitor: acted on %d stage(s)", acted)
        return acted

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="catalogd-janitor", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Run a pass now (this member just took up the lead)."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stop.is_set():
                break
            self.run_once()

    def stop(self, grace: float = 30.0) -> None:
        """Stop the loop; a pass in progress gets ``grace`` seconds to end."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=grace)
            self._thread = None
