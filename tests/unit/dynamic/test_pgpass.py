"""The Connect server's PostgreSQL password file (issue 31, row 12)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from catalogd.dynamic.pgpass import PasswordFile, lines


def test_one_line_per_host_any_database_escaped() -> None:
    assert lines("jdbc:postgresql://db:5433/x?sslmode=require", "etl", "a:b\\c") == ["db:5433:*:etl:a\\:b\\\\c"]
    assert lines("jdbc:postgresql://h1,h2:6000/x", "etl", "p") == ["h1:5432:*:etl:p", "h2:6000:*:etl:p"]
    assert lines("jdbc:postgresql://[::1]:7000/x", None, "p") == ["\\:\\:1:7000:*:*:p"]
    assert lines("jdbc:postgresql:x", "etl", "p") == ["*:*:*:etl:p"]


def test_the_file_is_the_owner_s_only_and_holds_each_catalog_once(tmp_path: Path) -> None:
    path = tmp_path / "server" / "pgpass"
    passwords = PasswordFile(path)
    passwords.give("jdbc:postgresql://first/x", "etl", "1")  # before the server's start: kept for it
    assert not path.parent.exists()
    path.parent.mkdir(mode=0o700)
    passwords.create()
    assert path.read_text() == "first:5432:*:etl:1\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    passwords.give("jdbc:postgresql://db/x", "etl", "old")
    passwords.give("jdbc:postgresql://other:5433/y", "etl", "o")
    passwords.give("jdbc:postgresql://db/x", "etl", "new")  # a reload changed it
    assert path.read_text().splitlines() == ["first:5432:*:etl:1", "db:5432:*:etl:new", "other:5433:*:etl:o"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and not list(path.parent.glob("*.tmp"))
    passwords.remove()
    assert not path.exists()
