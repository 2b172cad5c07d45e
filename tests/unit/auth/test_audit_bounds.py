"""The audit log under abuse: fields cut with a marker, repeated denials one line with a count, and
writes kept on their own budget however many denials arrive."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from catalogd.auth.audit import (
    CUT_MARKER,
    FIELD_LIMITS,
    MAX_PENDING_DENIALS,
    AuditLog,
    audit_path,
    denied_path,
    read_audit,
)
from catalogd.cli.results import AuditEntries
from catalogd.cli.text_form import show_text


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _deny(log: AuditLog, client: str = "10.0.0.9:4000", principal: str | None = None,
          detail: str = "the token is not valid") -> None:
    log.record(principal=principal, surface="http", client=client, operation="POST /v3/dynamic-tables/refresh",
               object=None, outcome="denied", detail=detail)


def test_a_4_mib_user_name_is_cut_with_a_marker(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, max_bytes=64 * 1024, backups=1)
    huge = "u" * (4 * 1024 * 1024)
    log.record(principal=huge, surface="hms", client="10.0.0.7:39000", operation="create_table",
               object="main." + huge, outcome="denied", detail=f"catalogd: permission denied: user {huge!r} ...")
    log.record(principal="etl", surface="hms", client="10.0.0.7:39001", operation="create_table", object="main.db.t",
               outcome="ok")
    log.close()
    (entry,) = _lines(denied_path(path))
    marker = CUT_MARKER.format(length=len(huge))
    assert entry["principal"] == "u" * FIELD_LIMITS["principal"] + marker
    assert entry["object"].endswith(CUT_MARKER.format(length=len(huge) + 5))
    assert len(entry["detail"]) < FIELD_LIMITS["detail"] + 100 and "[cut: " in entry["detail"]
    assert denied_path(path).stat().st_size < 8 * 1024  # the name was never written whole
    assert [e["object"] for e in _lines(path)] == ["main.db.t"]  # and the write is where it was


def test_a_name_that_is_not_utf8_is_written_not_raised(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path)
    log.record(principal="bad\udcff", surface="hms", client="c:1", operation="set_ugi", object=None,
               outcome="denied", detail=None)
    log.close()
    assert _lines(denied_path(path))[0]["principal"].startswith("bad")


def test_repeated_denials_are_one_line_at_once_then_one_summary_when_the_window_ends(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    clock = Clock()
    log = AuditLog(path, denial_window=10, clock=clock)
    for port in range(5000):  # a new connection each time: still one client
        _deny(log, client=f"10.0.0.9:{10000 + port}")
    assert len(_lines(denied_path(path))) == 1  # the first at once, the rest counted
    clock.now += 11
    log.flush()
    first, summary = _lines(denied_path(path))
    assert "count" not in first and first["client"] == "10.0.0.9:10000"
    assert summary["count"] == 4999 and summary["outcome"] == "denied"
    assert summary["detail"] == "the token is not valid" and summary["first"] <= summary["last"] <= summary["time"]
    _deny(log)  # a new window: written at once again
    log.close()
    assert len(_lines(denied_path(path))) == 3
    assert sum(e.get("count", 1) for e in _lines(denied_path(path))) == 5001  # every denial accounted for


def test_close_writes_every_open_summary_so_no_denial_is_lost(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, denial_window=3600, clock=Clock())
    for index in range(300):
        _deny(log, client=f"10.0.0.{index % 3}:1")
    log.close()
    lines = _lines(denied_path(path))
    assert len(lines) == 6  # per client: the first and one summary
    assert sum(e.get("count", 1) for e in lines) == 300


def test_different_denials_are_not_merged(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, denial_window=10, clock=Clock())
    _deny(log, principal="a")
    _deny(log, principal="b")
    _deny(log, principal="a", detail="another message")
    _deny(log, client="10.0.0.8:1", principal="a")
    log.close()
    assert len(_lines(denied_path(path))) == 4


def test_a_window_of_0s_writes_every_denial(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, denial_window=0)
    for _ in range(10):
        _deny(log)
    log.close()
    assert len(_lines(denied_path(path))) == 10


def test_the_summary_thread_writes_when_the_window_ends(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, denial_window=0.05)
    try:
        for _ in range(3):
            _deny(log)
        done = threading.Event()
        for _ in range(200):  # deadline, not a timing assertion: at most 10 s
            if len(_lines(denied_path(path))) == 2:
                done.set()
                break
            threading.Event().wait(0.05)
        assert done.is_set(), _lines(denied_path(path))
        assert _lines(denied_path(path))[1]["count"] == 2
    finally:
        log.close()


def test_pending_denials_are_bounded(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, denial_window=3600, clock=Clock())
    for index in range(MAX_PENDING_DENIALS + 50):
        _deny(log, principal=f"p{index}")
        _deny(log, principal=f"p{index}")
    assert len(log._repeats) <= MAX_PENDING_DENIALS
    log.close()
    assert sum(e.get("count", 1) for e in _lines(denied_path(path))) == 2 * (MAX_PENDING_DENIALS + 50)


def test_a_denial_flood_never_rotates_a_write_away(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, max_bytes=4096, backups=1, denied_max_bytes=4096, denied_backups=1, denial_window=0)
    log.record(principal="etl", surface="thrift", client="10.0.0.1:1", operation="createDatabase",
               object="main.marker", outcome="ok")
    for index in range(5_000):  # distinct, so none coalesce: each a line
        _deny(log, principal=f"intruder{index}", detail="x" * 500)
    log.close()
    assert [e["object"] for e in _lines(path)] == ["main.marker"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["audit-denied.jsonl", "audit-denied.jsonl.1",
                                                             "audit.jsonl"]
    assert all(p.stat().st_size <= 4096 for p in path.parent.iterdir())
    assert read_audit(path, 1, principal="etl")[0]["object"] == "main.marker"


def test_tail_merges_both_files_in_time_order_and_shows_the_count(tmp_path: Path, capsys: Any) -> None:
    path = audit_path(tmp_path)
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"time": f"2026-11-24T10:00:0{n}.000Z", "principal": "etl", "outcome": "ok",
                                        "operation": f"w{n}"}) + "\n" for n in (1, 4)))
    denied_path(path).write_text(
        json.dumps({"time": "2026-11-24T10:00:02.000Z", "principal": None, "outcome": "denied", "operation": "d2",
                    "detail": "the token is not valid"}) + "\n"
        + json.dumps({"time": "2026-11-24T10:00:05.000Z", "principal": None, "outcome": "denied", "operation": "d2",
                      "detail": "the token is not valid", "count": 41, "first": "2026-11-24T10:00:02.100Z",
                      "last": "2026-11-24T10:00:04.900Z"}) + "\n")
    entries = read_audit(path, 10)
    assert [e["operation"] for e in entries] == ["w1", "d2", "w4", "d2"]
    assert [e["operation"] for e in read_audit(path, 2)] == ["w4", "d2"]
    assert [e["operation"] for e in read_audit(path, 10, denied=True)] == ["d2", "d2"]
    show_text(AuditEntries(entries))
    out = capsys.readouterr().out
    assert "the token is not valid (repeated 41 times, 2026-11-24T10:00:02.100Z to 2026-11-24T10:00:04.900Z)" in out
