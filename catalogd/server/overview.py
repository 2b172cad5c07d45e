"""What an operator reads first, computed once for the REST API and the web console alike.

A dynamic table's status (within target or why not), the freshness lag over time rebuilt from
its run history, the open stages with their lease left, and the daemon's health (metastores,
cache, connections, cluster). Pure functions of what the manager and the dynamic-table service
answer: the REST routes and the console's pages show the same numbers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from catalogd.dynamic.freshness import parse_freshness
from catalogd.errors import CatalogError, UnsupportedError
from catalogd.model import DynamicTable, RefreshRun, RefreshState, RunStatus, Stage, StageState

__all__ = ["HealthSources", "dynamic_tables_of", "health", "lag_points", "lease_left", "open_stages", "stages_of",
           "target_seconds", "why_not_fresh"]


def target_seconds(dt: DynamicTable) -> float | None:
    """The freshness target in seconds (None: a freshness this daemon cannot read)."""
    try:
        return float(parse_freshness(dt.freshness).seconds)
    except CatalogError:
        return None


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def dynamic_tables_of(service: Any, catalog: str, database: str | None = None) -> list[DynamicTable]:
    """The dynamic tables of a catalog (or one database), none for a catalog that cannot hold any (memory)."""
    try:
        found: list[DynamicTable] = service.list_tables(catalog, database)
    except UnsupportedError:
        return []
    return found


def why_not_fresh(dt: DynamicTable) -> str | None:
    """Why ``dt`` is not within its target (None when it is, or when it cannot be told)."""
    if dt.within_target:
        return None
    last = dt.last_refresh
    reasons: list[str] = []
    if dt.state is RefreshState.SUSPENDED:
        reasons.append("suspended")
    if dt.freshness_lag is None:
        reasons.append("never refreshed")
    if last is not None and last.status is RunStatus.FAILED:
        reasons.append(f"last run failed: {(last.error or 'no message').splitlines()[0][:200]}")
    elif last is not None and not last.status.finished:
        reasons.append(f"a run is {last.status.value.lower()} ({last.phase or 'starting'})")
    if dt.freshness_lag is not None:
        target = target_seconds(dt)
        if target is not None and dt.freshness_lag > target:
            reasons.append(f"lag {_duration(dt.freshness_lag)} is over the target {_duration(target)}")
    if dt.within_target is None and not reasons:
        return None
    return "; ".join(reasons) or "not within target"


def lag_points(runs: list[RefreshRun], now: float | None = None) -> list[tuple[float, float]]:
    """(time, freshness lag in seconds) over the span of ``runs`` (any order), ending at ``now``.

    A successful run makes the data current as of its start (as the executor records it), from
    its end on: the lag grows by one second a second between successes and drops at each end.
    The first point is the first success's end; without one there is no lag to draw.
    """
    now = time.time() if now is None else now
    done = sorted((r for r in runs if r.status is RunStatus.SUCCEEDED and r.ended is not None),
                  key=lambda r: r.ended or 0.0)
    points: list[tuple[float, float]] = []
    fresh_as_of: float | None = None
    for run in done:
        ended = run.ended or 0.0
        data_time = run.started or ended
        if fresh_as_of is not None:
            points.append((ended, max(0.0, ended - fresh_as_of)))
        fresh_as_of = max(fresh_as_of or 0.0, data_time)
        points.append((ended, max(0.0, ended - fresh_as_of)))
    if fresh_as_of is not None and now > points[-1][0]:
        points.append((now, max(0.0, now - fresh_as_of)))
    return points


def lease_left(stage: Stage, now: float | None = None) -> float | None:
    """Seconds until the stage's lease runs out (negative: overdue; None: no lease)."""
    if stage.lease_deadline is None:
        return None
    now = time.time() if now is None else now
    return stage.lease_deadline / 1000.0 - now


def open_stages(stages: list[Stage]) -> list[Stage]:
    """The stages still in flight (open or committing), oldest first."""
    live = [s for s in stages if s.state in (StageState.OPEN, StageState.COMMITTING)]
    return sorted(live, key=lambda s: (s.created or 0, s.id))


def stages_of(manager: Any, catalog: str) -> list[Stage]:
    """The open stages of a catalog, none for one that stages nothing (memory)."""
    try:
        return open_stages(manager.list_stages(catalog))
    except UnsupportedError:
        return []


@dataclass
class HealthSources:
    """Where the health report reads its numbers (each optional: a daemon part that is absent shows as absent).

    ``cluster`` gives the configured members (``host:port``) and, once leadership exists, the
    leader; today a member is known from the config only.
    """

    ping: Callable[[], Mapping[str, str | None]]
    cache: Callable[[], Mapping[str, Any]] | None = None
    connections: dict[str, Callable[[], Mapping[str, int]]] = field(default_factory=dict)
    cluster: Callable[[], Mapping[str, Any]] | None = None


def health(sources: HealthSources) -> dict[str, Any]:
    """``{"metastores": {catalog: "up"|problem}, "cache": {...}, "connections": {...}, "cluster": {...}}``."""
    metastores = {name: "up" if problem is None else problem for name, problem in sources.ping().items()}
    cache: dict[str, Any] = {}
    if sources.cache is not None:
        stats = sources.cache()
        hits, misses = int(stats.get("hits", 0)), int(stats.get("misses", 0))
        cache = {"enabled": bool(stats.get("enabled")), "hits": hits, "misses": misses,
                 "hit_rate": hits / (hits + misses) if hits + misses else None,
                 "entries": int(stats.get("entries", 0)), "bytes": int(stats.get("bytes", 0))}
    connections = {name: dict(read()) for name, read in sources.connections.items()}
    cluster = dict(sources.cluster()) if sources.cluster is not None else {"members": [], "leader": None}
    return {"metastores": metastores, "cache": cache, "connections": connections, "cluster": cluster}
