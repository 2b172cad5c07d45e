"""Values in words for people: durations in human units, times in UTC, why a dynamic table is outside its target.

Both output forms use these: the text form shows them, the JSON form adds them next to the
raw values (``freshness_lag`` stays seconds; ``freshness_lag_text`` says it in words).
"""

from __future__ import annotations

import datetime

from catalogd.model import DynamicTable, RunStatus

_DAY = 86400
#: (seconds, singular, plural): the largest two units that are not zero are shown.
_UNITS = ((365 * _DAY, "year", "years"), (_DAY, "day", "days"), (3600, "h", "h"), (60, "min", "min"),
          (1, "s", "s"))


def clock_time(ts: float | None) -> str:
    """Seconds since the epoch as ``2024-03-02 00:00:01Z`` (empty for None)."""
    if ts is None:
        return ""
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def human_duration(seconds: float) -> str:
    """``3.2 s``, ``12 min``, ``1 h 5 min``, ``2 years 265 days``: at most two units, the smaller cut off."""
    seconds = max(0.0, seconds)
    if round(seconds, 1) < 60:
        return f"{seconds:.1f} s"
    rest = round(seconds)
    parts: list[tuple[int, str, str]] = []
    for size, one, many in _UNITS:
        count, rest = divmod(rest, size)
        if parts or count:
            parts.append((count, one, many))
        if len(parts) == 2:
            break
    return " ".join(f"{count} {one if count == 1 else many}" for count, one, many in parts if count)


def lag_text(dt: DynamicTable) -> str | None:
    """``12 min (within the 1 DAY target)``; None when never refreshed."""
    if dt.freshness_lag is None:
        return None
    verdict = "within" if dt.within_target else "outside"
    return f"{human_duration(dt.freshness_lag)} ({verdict} the {dt.freshness} target)"


def within_target_reason(dt: DynamicTable) -> str | None:
    """Why a dynamic table is outside its freshness target (None when it is within, or never refreshed).

    The lag is measured from the time the data is current as of, which a partition run sets to
    its schedule time: a refresh for a schedule time long past leaves the table as old as that.
    """
    if dt.within_target is not False or dt.freshness_lag is None:
        return None
    if dt.data_time is None:  # a daemon that does not say as of when
        reason = f"the data is {human_duration(dt.freshness_lag)} old"
    else:
        reason = f"the data is as of {clock_time(dt.data_time)}"
    run = dt.data_time_run
    if run is not None:
        detail = ", ".join(p for p in (run.trigger, "/".join(f"{k}={v}" for k, v in run.partition.items())) if p)
        if run.partition:
            reason += f", the schedule time of run {run.id} ({detail})"
        else:
            reason += f", when run {run.id} ({detail}) started"
    last = dt.last_refresh
    if last is not None and last.status is RunStatus.FAILED:
        reason += f"; the last refresh, run {last.id}, failed"
    elif run is not None and run.partition:
        # docs/dynamic-tables.md's own example: a refresh for 2024-03-02 leaves data as of 2024-03-02.
        reason += "; refresh without --schedule-time to bring the whole table up to now"
    else:
        reason += "; no refresh has made it newer since"
    return reason
