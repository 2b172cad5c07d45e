"""How a dynamic table is kept in its HMS table's parameters (all under ``catalogd.dt.``).

The table itself is an ordinary managed table that Spark reads. Its parameters carry
the definition (original and expanded query, freshness, the declared mode, the WITH
options), the RefreshJobHandler (actual mode, state, JSON job detail) and the last
runs. Long values are split over ``key.0``, ``key.1``... so that any metastore schema
holds them. A REPLACE through a stage keeps every ``catalogd.dt.`` parameter.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from catalogd.model import Column, DynamicTable, RefreshMode, RefreshRun, RefreshState

PREFIX = "catalogd.dt."
FRESHNESS = PREFIX + "freshness"
DECLARED_MODE = PREFIX + "declared-mode"
HANDLER = PREFIX + "handler"
OPTIONS = PREFIX + "options"
CREATED = PREFIX + "created"
#: Epoch seconds up to which the table's data is current (lag = now - this).
DATA_TIME = PREFIX + "data-time"
#: The schedule time of the last scheduled run that ended: a restart catches up after it.
LAST_SCHEDULED = PREFIX + "last-scheduled"
#: When the table was last resumed: fires missed while it was suspended are not caught up.
RESUMED = PREFIX + "resumed"
QUERY = PREFIX + "query"
EXPANDED = PREFIX + "expanded-query"
SOURCES = PREFIX + "sources"
#: The hive catalog the query reads, when it is not the table's own (a table in a jdbc catalog).
SOURCE_CATALOG = PREFIX + "source-catalog"
HISTORY = PREFIX + "history"
#: catalogd's signature over the definition (``catalogd.dynamic.signing``): none, or a wrong one, is never run.
SIGNATURE = PREFIX + "signature"
CHUNKED = (QUERY, EXPANDED, HISTORY)
_CHUNK = 3000


def chunks(key: str, text: str) -> dict[str, str]:
    """``key.0``, ``key.1``... for ``text`` (an empty text is one empty chunk)."""
    return {f"{key}.{i}": text[pos:pos + _CHUNK] for i, pos in enumerate(range(0, max(len(text), 1), _CHUNK))}


def unchunk(params: dict[str, str], key: str) -> str | None:
    if f"{key}.0" not in params:
        return None
    parts, index = [], 0
    while f"{key}.{index}" in params:
        parts.append(params[f"{key}.{index}"])
        index += 1
    return "".join(parts)


def is_dynamic(params: dict[str, str] | None) -> bool:
    return FRESHNESS in (params or {})


def handler_params(mode: RefreshMode, state: RefreshState, detail: dict[str, Any]) -> dict[str, str]:
    return {HANDLER: json.dumps({"mode": mode.value, "state": state.value, "detail": detail}, sort_keys=True)}


def definition_params(dt: DynamicTable, sources: list[str], created: float,
                      source_catalog: str | None = None) -> dict[str, str]:
    """Every parameter of a new dynamic table (the handler starts INITIALIZING)."""
    return {
        **({SOURCE_CATALOG: source_catalog} if source_catalog else {}),
        FRESHNESS: dt.freshness,
        DECLARED_MODE: dt.declared_mode.value if dt.declared_mode else "",
        OPTIONS: json.dumps(dt.options, sort_keys=True),
        CREATED: str(created),
        SOURCES: ",".join(sources),
        **chunks(QUERY, dt.query),
        **chunks(EXPANDED, dt.expanded_query),
        **chunks(HISTORY, "[]"),
        **handler_params(dt.refresh_mode, dt.state, dt.job_detail),
    }


def history(params: dict[str, str]) -> list[RefreshRun]:
    """The recorded runs, newest first."""
    text = unchunk(params, HISTORY)
    try:
        return [RefreshRun.from_json(entry) for entry in json.loads(text or "[]")]
    except (ValueError, TypeError):
        return []


def history_params(runs: list[RefreshRun]) -> dict[str, str]:
    return chunks(HISTORY, json.dumps([r.to_json() for r in runs]))


def decode(catalog: str, database: str, name: str, params: dict[str, str],
           columns: list[Column] | None = None, partition_keys: list[Column] | None = None,
           comment: str | None = None, created: int | None = None) -> DynamicTable:
    """A DynamicTable from its parameters (lag and last refresh are left to the caller)."""
    handler: dict[str, Any] = {}
    with contextlib.suppress(ValueError):
        handler = json.loads(params.get(HANDLER) or "{}")
    try:
        options = json.loads(params.get(OPTIONS) or "{}")
    except ValueError:
        options = {}
    declared = params.get(DECLARED_MODE) or None
    return DynamicTable(
        catalog=catalog, database=database, name=name,
        query=unchunk(params, QUERY) or "",
        freshness=params.get(FRESHNESS, ""),
        expanded_query=unchunk(params, EXPANDED) or "",
        declared_mode=RefreshMode(declared) if declared else None,
        refresh_mode=RefreshMode(handler.get("mode", RefreshMode.FULL.value)),
        state=RefreshState(handler.get("state", RefreshState.INITIALIZING.value)),
        job_detail=handler.get("detail") or {},
        columns=list(columns or []), partition_keys=list(partition_keys or []),
        options=options, comment=comment, created=created,
    )


def sources(params: dict[str, str]) -> list[str]:
    return [s for s in (params.get(SOURCES) or "").split(",") if s]


def float_param(params: dict[str, str], key: str) -> float | None:
    try:
        return float(params[key]) if params.get(key) else None
    except ValueError:
        return None
