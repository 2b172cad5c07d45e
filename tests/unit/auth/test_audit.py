"""The audit log: exact JSON lines, mode 0600 in a 0700 directory, rotation by size, safe across threads."""

from __future__ import annotations

import json
import re
import stat
import threading
from pathlib import Path

from catalogd.auth.audit import FIELDS, AuditLog, audit_path, read_audit

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_line_holds_exactly_the_fields_in_order(tmp_path: Path) -> None:
    path = audit_path(tmp_path / "data")
    assert path == tmp_path / "data" / "audit" / "audit.jsonl"
    log = AuditLog(path)
    log.record(principal="etl", surface="hms", client="127.0.0.1:40000", operation="create_table",
               object="main.sales.orders", outcome="ok")
    log.record(principal=None, surface="thrift", client="10.0.0.1:1", operation="reloadConfig", object=None,
               outcome="denied", detail="no token given")
    log.close()
    # Writes and denials each in their own file (their own rotation budget).
    (first,), (second,) = _lines(path), _lines(path.with_name("audit-denied.jsonl"))
    assert list(first) == list(FIELDS)
    assert TIME.match(str(first.pop("time"))) and TIME.match(str(second.pop("time")))
    assert first == {"principal": "etl", "surface": "hms", "client": "127.0.0.1:40000",
                     "operation": "create_table", "object": "main.sales.orders", "outcome": "ok", "detail": None}
    assert second == {"principal": None, "surface": "thrift", "client": "10.0.0.1:1", "operation": "reloadConfig",
                      "object": None, "outcome": "denied", "detail": "no token given"}


def test_the_file_is_0600_and_its_directory_0700(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    path.parent.mkdir(mode=0o755)
    path.write_text("")
    path.chmod(0o644)
    log = AuditLog(path)  # an existing, too open file and directory are tightened
    log.record(principal="a", surface="hms", client="c", operation="o", object=None, outcome="ok")
    log.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_rotation_by_size_keeps_the_newest_files(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, max_bytes=600, backups=2)
    for index in range(40):
        log.record(principal="p", surface="http", client="c", operation="op", object=f"o{index}", outcome="ok")
    log.close()
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    for file in path.parent.iterdir():
        assert file.stat().st_size <= 600
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
    objects = [e["object"] for f in ("audit.jsonl.2", "audit.jsonl.1", "audit.jsonl") for e in _lines(path.parent / f)]
    # The newest entries, in order, with none lost between the files kept.
    assert objects == [f"o{index}" for index in range(40 - len(objects), 40)]
    assert [e["object"] for e in read_audit(path, 5)] == ["o35", "o36", "o37", "o38", "o39"]
    assert len(read_audit(path, 1000)) == len(objects)


def test_no_backups_starts_over(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, max_bytes=300, backups=0)
    for index in range(10):
        log.record(principal="p", surface="http", client="c", operation="op", object=f"o{index}", outcome="ok")
    log.close()
    assert [p.name for p in path.parent.iterdir()] == ["audit.jsonl"]
    assert _lines(path)[-1]["object"] == "o9"


def test_threads_write_whole_lines(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path, max_bytes=20_000, backups=50)

    def write(thread: int) -> None:
        for index in range(200):
            log.record(principal=f"t{thread}", surface="thrift", client="c", operation="op",
                       object=f"{thread}-{index}", outcome="ok", detail="x" * (index % 50))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.close()
    entries = read_audit(path, 10_000)
    assert sorted(e["object"] for e in entries) == sorted(f"{t}-{i}" for t in range(8) for i in range(200))
    for thread in range(8):  # each thread's lines in the order it wrote them
        mine = [e["object"] for e in entries if e["principal"] == f"t{thread}"]
        assert mine == [f"{thread}-{index}" for index in range(200)]


def test_read_audit_filters_and_skips_broken_lines(tmp_path: Path) -> None:
    path = audit_path(tmp_path)
    log = AuditLog(path)
    log.record(principal="etl", surface="hms", client="c", operation="a", object=None, outcome="ok")
    log.record(principal="analyst", surface="hms", client="c", operation="b", object=None, outcome="denied")
    log.close()
    with path.open("a") as f:
        f.write('{"principal": "etl", "outcome": "ok", "operation": "c"}\nnot json\n[1]\n{"cut short\n')
    assert [e["operation"] for e in read_audit(path, 10)] == ["a", "b", "c"]
    assert [e["operation"] for e in read_audit(path, 10, principal="etl")] == ["a", "c"]
    assert [e["operation"] for e in read_audit(path, 10, denied=True)] == ["b"]
    assert read_audit(path, 10, principal="etl", denied=True) == []
    assert read_audit(tmp_path / "nothing" / "audit.jsonl", 10) == []
