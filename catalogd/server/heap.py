"""The daemon's Python heap once it is ready: what start-up made is set aside from the collector.

Start-up leaves about 160,000 long-lived objects (modules, Thrift and pydantic classes, the
configuration, the catalogs). CPython's collector walks every one of them on each full
(generation 2) collection, which a busy endpoint triggers now and then: on a loaded 2-core
machine such a walk was measured at 0.8-1.4 s of wall time, a pause every cached HMS read in
flight waits through (the p99 of ``benchmarks/hms_endpoint.py``). ``gc.freeze`` moves them to a
permanent generation the collector skips; objects made later are collected as before, so
nothing is kept alive that would otherwise be freed, except a cycle made at start-up and
dropped later (a few, if any: a start-up that failed does not get here).
"""

from __future__ import annotations

import gc

__all__ = ["freeze_startup_heap"]


def freeze_startup_heap() -> int:
    """Collect once, then freeze what is left; returns how many objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
