"""Keeps an embedded metastore running: reaps it when it dies and starts it again, with backoff, on the same port.

While it is down, :attr:`MetastoreSupervisor.problem` says so, so that calls can fail at
once with ``metastore-unavailable`` instead of each waiting for a connection to time out.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from catalogd.errors import CatalogError
from catalogd.metastore.embedded import EmbeddedMetastore

logger = logging.getLogger(__name__)


class MetastoreSupervisor:
    """A thread that watches one :class:`EmbeddedMetastore` and restarts it when it exits unasked.

    Args:
        metastore: started already (the first start's failure is the caller's to report).
        on_restart: called after each restart (the pool drops its connections to the dead process).
        backoff: seconds between the first failed restart and the next; doubled after each failure.
        max_backoff: the longest wait between attempts.
        start_timeout: how long one restart may take.
    """

    def __init__(
        self,
        metastore: EmbeddedMetastore,
        on_restart: Callable[[], None] | None = None,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        start_timeout: float = 180.0,
    ) -> None:
        self.metastore = metastore
        self._on_restart = on_restart
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._start_timeout = start_timeout
        self._stopping = threading.Event()
        self._problem: str | None = None
        #: How many times the metastore was restarted.
        self.restarts = 0
        self._thread = threading.Thread(target=self._run, name=f"metastore-supervisor-{metastore.name}", daemon=True)

    @property
    def problem(self) -> str | None:
        """None while the metastore serves; else why it does not (it is being restarted)."""
        return self._problem

    def start(self) -> None:
        self._thread.start()

    def stop(self, grace: float | None = None) -> None:
        """Stop watching and stop the metastore (also one a restart is starting right now)."""
        self._stopping.set()
        while self._thread.is_alive():
            # A restart in progress fails as soon as its process is gone; no new one begins.
            self.metastore.stop(grace)
            self._thread.join(0.5)
        self.metastore.stop(grace)

    def _run(self) -> None:
        while not self._stopping.is_set():
            code = self.metastore.wait_exit(0.5)  # reaps the process: no zombie is left
            if code is None or self._stopping.is_set():
                continue
            since = time.strftime("%H:%M:%S")
            self._problem = (
                f"the embedded metastore of catalog {self.metastore.name!r} exited (code {code}) at {since}; "
                "it is being restarted"
            )
            logger.error("%s; last log lines:\n%s", self._problem, self.metastore.log_tail())
            self._restart()

    def _restart(self) -> None:
        # The first attempt at once (a crash is usually a one-off); then 1s, 2s, 4s ... up to max_backoff.
        delay = 0.0
        attempt = 0
        while not self._stopping.wait(delay):
            attempt += 1
            delay = self._backoff if attempt == 1 else min(delay * 2, self._max_backoff)
            try:
                self.metastore.start(self._start_timeout)
            except Exception as e:
                if self._stopping.is_set():
                    return
                reason = e.message if isinstance(e, CatalogError) else repr(e)
                logger.error("restart %d of the embedded metastore of catalog %s failed: %s; next try in %.0fs",
                             attempt, self.metastore.name, reason, delay)
                continue
            self.restarts += 1
            if self._on_restart is not None:
                self._on_restart()
            self._problem = None
            logger.info("the embedded metastore of catalog %s serves again (restart %d)", self.metastore.name,
                        self.restarts)
            return
