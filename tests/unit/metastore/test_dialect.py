"""catalogd.metastore.dialect: typed calls an HMS 4 lacks are made as their ``*_req`` calls, learnt once."""

from __future__ import annotations

from typing import Any

import pytest
from thrift.Thrift import TApplicationException

from catalogd.catalog.hive_api import HiveClient
from catalogd.hive_idl import ttypes as hms
from catalogd.metastore.dialect import Dialect, typed_call


class Hms4Pool:
    """A pool whose metastore answers like HMS 4.0.1: no get_table, no get_table_objects_by_name."""

    def __init__(self, tables: dict[tuple[str, str], hms.Table], databases: set[str]) -> None:
        self.tables = tables
        self.databases = databases
        self.calls: list[str] = []

    def call(self, method: str, *args: Any, idempotent: bool = True) -> Any:
        self.calls.append(method)
        if method in ("get_table", "get_table_objects_by_name"):
            raise TApplicationException(TApplicationException.UNKNOWN_METHOD, f"Invalid method name: '{method}'")
        if method == "get_table_req":
            request = args[0]
            table = self.tables.get((request.dbName, request.tblName))
            if table is None:
                raise hms.NoSuchObjectException(message=f"hive.{request.dbName}.{request.tblName} table not found")
            return hms.GetTableResult(table=table)
        if method == "get_table_objects_by_name_req":
            request = args[0]
            if request.dbName not in self.databases:
                raise hms.UnknownDBException(message=f"{request.dbName} not found")
            return hms.GetTablesResult(tables=[self.tables[(request.dbName, n)] for n in request.tblNames
                                               if (request.dbName, n) in self.tables])
        if method == "get_database":
            if args[0] not in self.databases:
                raise hms.NoSuchObjectException(message=f"{args[0]} not found")
            return hms.Database(name=args[0])
        raise AssertionError(method)

    def close(self) -> None:
        pass


def _table(db: str, name: str) -> hms.Table:
    return hms.Table(dbName=db, tableName=name, tableType="MANAGED_TABLE")


def test_a_backend_that_has_the_call_is_asked_it() -> None:
    dialect = Dialect()
    calls: list[str] = []

    def call(method: str, *args: Any) -> Any:
        calls.append(method)
        return _table(*args)

    assert typed_call(dialect, call, "get_table", ("d", "t")).tableName == "t"
    assert calls == ["get_table"]
    assert dialect.lacking == frozenset()


def test_hive_client_learns_once_that_get_table_is_gone() -> None:
    pool = Hms4Pool({("d", "t"): _table("d", "t"), ("d", "u"): _table("d", "u")}, {"d"})
    client = HiveClient(pool)
    assert client.get_table("d", "t").tableName == "t"
    assert client.get_table("d", "u").tableName == "u"
    # One refused old call, then only the new one.
    assert pool.calls == ["get_table", "get_table_req", "get_table_req"]
    assert [t.tableName for t in client.get_table_objects_by_name("d", ["t", "u", "x"])] == ["t", "u"]
    assert client.dialect.lacking == {"get_table", "get_table_objects_by_name"}


def test_the_new_calls_errors_come_as_the_old_ones_did() -> None:
    pool = Hms4Pool({}, {"d"})
    client = HiveClient(pool)
    with pytest.raises(hms.NoSuchObjectException):
        client.get_table("d", "missing")
    # A database that is gone: NoSuchObjectException from get_database, as callers expect of HMS 2.3.
    with pytest.raises(hms.NoSuchObjectException):
        client.get_table_objects_by_name("gone", ["t"])


def test_other_application_errors_are_not_taken_for_a_dialect() -> None:
    dialect = Dialect()

    def call(method: str, *args: Any) -> Any:
        raise TApplicationException(TApplicationException.INTERNAL_ERROR, "boom")

    with pytest.raises(TApplicationException):
        typed_call(dialect, call, "get_table", ("d", "t"))
    assert dialect.lacking == frozenset()
