"""catalogd's rules on what a lock names: catalogs, grants, read-only catalogs, staging tables, names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catalogd.auth.model import Authority, Role
from catalogd.config import parse_config
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.federation import Federation
from catalogd.hms.lock_rules import check_components, locked_scopes, lower_names, visible_locks
from catalogd.hms.policy import CallRecord, Policy
from catalogd.hms.refused import Refused
from catalogd.manager import CatalogManager

SR, SW, EX = hms.LockType.SHARED_READ, hms.LockType.SHARED_WRITE, hms.LockType.EXCLUSIVE


class Ugi:
    peer = "127.0.0.1:1"

    def __init__(self, user: str) -> None:
        self.identity = (user, ())


def _config(tmp_path: Path) -> Any:
    return parse_config(f"server: {{data-dir: {tmp_path}}}\ncatalogs:\n"
                        "  - {name: main, type: memory, default: true}\n"
                        "  - {name: ro, type: memory, read-only: true}\n"
                        "  - {name: other, type: memory}\n")


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Policy, Federation]:
    config = _config(tmp_path)
    grants = {("reader", "main"): Role.READER, ("writer", "main"): Role.WRITER,
              ("writer", "ro"): Role.WRITER, ("writer", "other"): Role.READER}
    authority = Authority(True, names={"reader", "writer"}, grants=grants)
    return Policy(CatalogManager(config), authority), Federation.from_config(config)  # type: ignore[arg-type]


def _request(*components: tuple[int, str, str | None]) -> hms.LockRequest:
    return hms.LockRequest(component=[
        hms.LockComponent(type=kind, level=hms.LockLevel.TABLE if table else hms.LockLevel.DB, dbname=db,
                          tablename=table) for kind, db, table in components], txnid=0, user="u", hostname="h")


def _check(setup: tuple[Policy, Federation], user: str, request: hms.LockRequest, limit: int = 100) -> str | None:
    policy, federation = setup
    conn = Ugi(user)
    # What the router's authorize (a reader of any catalog) found.
    call = CallRecord(principal=policy.authority.principal_named(user))  # type: ignore[union-attr]
    try:
        check_components(request, federation, policy, conn, call, limit)  # type: ignore[arg-type]
    except Refused as refused:
        return str(refused.exc.message)
    return None


def test_readers_take_read_locks_and_writers_write_locks(setup: tuple[Policy, Federation]) -> None:
    assert _check(setup, "reader", _request((SR, "db", "t"))) is None
    assert "needs role writer on catalog main to lock db.t" in str(_check(setup, "reader", _request((EX, "db", "t"))))
    assert _check(setup, "writer", _request((EX, "db", "t"), (SW, "db", None))) is None
    # Each component is judged by its own catalog (other__ is catalog other's prefix).
    assert "on catalog other" in str(_check(setup, "writer", _request((EX, "db", "t"), (EX, "other__db", "t"))))
    assert _check(setup, "writer", _request((SR, "other__db", "t"))) is None


def test_read_only_catalogs_take_read_locks_only(setup: tuple[Policy, Federation]) -> None:
    assert _check(setup, "writer", _request((SR, "ro__db", "t"))) is None
    assert "catalog 'ro' is read-only: exclusive lock on ro__db.t refused" in str(
        _check(setup, "writer", _request((EX, "ro__db", "t"))))


def test_staging_tables_and_oversized_requests_are_refused(setup: tuple[Policy, Federation]) -> None:
    assert "staging table" in str(_check(setup, "writer", _request((SR, "db", "__catalogd_stage_abc"))))
    many = _request(*[(SR, "db", f"t{i}") for i in range(5)])
    assert "server.hms-max-lock-components" in str(_check(setup, "writer", many, limit=4))


def test_names_are_lowered_and_scoped_like_the_cache(setup: tuple[Policy, Federation]) -> None:
    request = _request((EX, "DB", "T"), (SR, "Other__X", None))
    request.component[0].partitionname = "ds=A"
    lower_names(request)
    assert [(c.dbname, c.tablename, c.partitionname) for c in request.component] == [
        ("db", "t", "ds=A"), ("other__x", None, None)]
    assert locked_scopes(request, setup[1]) == [("main", "db", "t"), ("other", "x", "")]
    shown = hms.ShowLocksRequest(dbname="DB", tablename="T")
    lower_names(shown)
    assert (shown.dbname, shown.tablename) == ("db", "t")


def test_show_locks_hides_staging_tables_and_unreadable_catalogs(setup: tuple[Policy, Federation]) -> None:
    policy, federation = setup
    result = type("R", (), {})()
    result.success = hms.ShowLocksResponse(locks=[
        hms.ShowLocksResponseElement(lockid=1, dbname="db", tablename="t"),
        hms.ShowLocksResponseElement(lockid=2, dbname="db", tablename="__catalogd_stage_x"),
        hms.ShowLocksResponseElement(lockid=3, dbname="ro__db", tablename="t"),
    ])
    reader = policy.authority.principal_named("reader")  # type: ignore[union-attr]
    visible_locks(result, federation, policy, reader)
    assert [e.lockid for e in result.success.locks] == [1]
