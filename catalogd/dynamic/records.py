"""What the daemon writes into a driven table's HMS parameters: the RefreshJobHandler
(mode, state, live job detail), the run history, and single parameter updates."""

from __future__ import annotations

import logging
from typing import Any

from catalogd.config import Config
from catalogd.dynamic import runner as spark_runner
from catalogd.dynamic import store
from catalogd.dynamic.freshness import cron_expression
from catalogd.dynamic.jobspec import JobFactory, trigger_seconds
from catalogd.dynamic.registry import Entry, Stream
from catalogd.errors import TableNotFoundError
from catalogd.manager import CatalogManager
from catalogd.model import RefreshMode, RefreshRun, RefreshState

logger = logging.getLogger(__name__)


class Records:
    """Reads and writes one driven table's parameters through its catalog."""

    def __init__(self, manager: CatalogManager, config: Config, jobs: JobFactory) -> None:
        self.manager = manager
        self.config = config
        self.jobs = jobs

    def update(self, entry: Entry, set: dict[str, str], remove: tuple[str, ...] = ()) -> dict[str, str]:
        """Set (and remove, by prefix) parameters in one read-modify-write; all of them afterwards."""
        catalog = self.manager.catalog(entry.catalog)
        return catalog.update_table_parameters(entry.database, entry.name, set, remove)

    def set_handler(self, entry: Entry, detail: dict[str, Any] | None = None) -> None:
        """Write the handler as the entry is now."""
        with entry.lock:
            if detail is None:
                detail = self.detail(entry)
            self.update(entry, store.handler_params(entry.mode, entry.state, detail))

    def detail(self, entry: Entry) -> dict[str, Any]:
        """The handler's job detail: the schedule of a FULL table, the job of a CONTINUOUS one."""
        detail: dict[str, Any] = {"freshness": str(entry.freshness), **self.refresh_way(entry)}
        if entry.source_catalog:
            detail["sourceCatalog"] = entry.source_catalog
        if entry.mode is RefreshMode.FULL:
            detail["schedule"] = cron_expression(entry.freshness)
            detail["timeZone"] = self.config.dynamic_tables.time_zone
            if entry.next_fire is not None and entry.state is RefreshState.RUNNING:
                detail["nextRefresh"] = entry.next_fire.isoformat(sep=" ")
            if entry.formatters:
                detail["partitionFormatters"] = entry.formatters
        else:
            stream = entry.stream or Stream()
            detail.update({
                "trigger": f"{trigger_seconds(entry.freshness)} seconds",
                "checkpoint": str(self.jobs.checkpoint(entry)),
                "applicationId": stream.application_id,
                "pid": stream.proc.pid if stream.proc is not None and stream.proc.poll() is None else None,
                "restarts": stream.restarts,
                "master": self.config.spark.master,
            })
            if stream.work_dir is not None and stream.proc is not None:
                last = spark_runner.read_json(stream.work_dir / "status.json").get("last_trigger")
                if last:  # an incremental job's last commit: what it read and wrote
                    detail["lastTrigger"] = {k: last.get(k) for k in ("batch", "mode", "why", "rows",
                                                                     "input_files", "source_files")}
        return detail

    def refresh_way(self, entry: Entry) -> dict[str, str]:
        """Where and how the table refreshes, and why (``dt describe`` shows it)."""
        spark = self.config.spark
        connect = spark.engine == "connect" and (entry.mode is RefreshMode.FULL or spark.remote is None)
        engine = "connect" if connect else "submit"
        if entry.mode is RefreshMode.FULL:
            why = "FULL: each run recomputes the query (or the one partition its schedule time picks)"
            return {"engine": engine, "refresh": "recompute", "refreshWhy": why}
        running = entry.stream.refresh_way if entry.stream is not None and entry.stream.proc is not None else None
        if running is not None:  # what the job runs (its spec), not what a new one would
            refresh, reason = running["refresh"], running["refreshWhy"]
        else:
            plan = self.jobs.refresh_plan(entry)
            refresh, reason = plan.refresh, plan.why
        if refresh == "incremental":
            why = f"CONTINUOUS, incremental: {reason}"
        else:
            why = f"CONTINUOUS, recomputed by a trigger that sees the sources' files changed: {reason}"
        return {"engine": engine, "refresh": refresh, "refreshWhy": why}

    def record(self, entry: Entry, run: RefreshRun, extra: dict[str, str] | None = None) -> None:
        """Put the run (new or updated) at its place in the table's history."""
        limit = self.config.dynamic_tables.history_size
        # Fresh: the history is read, changed and written back whole.
        catalog = self.manager.catalog(entry.catalog).fresh()
        try:
            with entry.lock:
                params = catalog.get_table(entry.database, entry.name).properties
                runs = [r for r in store.history(params) if r.id != run.id]
                runs = [RefreshRun(**run.__dict__), *runs][:limit]
                runs.sort(key=lambda r: r.submitted or 0.0, reverse=True)
                extra = dict(extra or {})
                for key in (store.LAST_SCHEDULED, store.DATA_TIME):
                    # Runs end out of order: these only move forward.
                    if key in extra:
                        extra[key] = str(max(float(extra[key]), store.float_param(params, key) or 0.0))
                self.update(entry, {**store.history_params(runs), **extra}, (store.HISTORY + ".",))
        except TableNotFoundError:
            logger.info("dynamic table %s is gone; run %s not recorded", entry.full_name, run.id)
