"""How HiveCatalog turns Hive Metastore exceptions into catalogd errors.

The one place a fake stands in for HMS: the catalog's typed client runs its calls
on an object with the ``call(method, *args, idempotent=...)`` of MetastoreClient
that raises the real HMS exception classes. Everything else about HMS is tested against a
real metastore in tests/integration.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import pytest
from thrift.Thrift import TApplicationException

from catalogd.catalog.hive import HiveCatalog
from catalogd.catalog.hive_api import HiveClient
from catalogd.errors import (
    CatalogError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    MetastoreUnavailableError,
    NotFoundError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.hive_idl import ttypes as hms
from catalogd.model import Column, Database, DatabaseUpdate, Table, TableUpdate


class FakeMetastore:
    """Answers HMS calls from a table of method -> value or exception, and records the calls."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.answers = dict(answers or {})
        self.calls: list[tuple[str, tuple[Any, ...], bool]] = []

    def call(self, method: str, *args: Any, idempotent: bool = True) -> Any:
        self.calls.append((method, args, idempotent))
        if method not in self.answers:
            raise AssertionError(f"unexpected metastore call {method}{args}")
        answer = self.answers[method]
        if isinstance(answer, BaseException):
            raise answer
        return answer(*args) if callable(answer) else answer

    def methods(self) -> list[str]:
        return [method for method, _, _ in self.calls]

    def close(self) -> None:
        pass


def hive_catalog(answers: dict[str, Any] | None = None) -> tuple[HiveCatalog, FakeMetastore]:
    catalog = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    fake = FakeMetastore(answers)
    catalog.session.attach(HiveClient(fake))
    return catalog, fake


def hms_database(name: str = "sales") -> hms.Database:
    return hms.Database(name=name, description="d", locationUri=f"file:/w/{name}.db", parameters={}, ownerName="o")


TABLE = Table(name="orders", database="sales", catalog="main", columns=[Column("id", "bigint")])

UNKNOWN_METHOD = TApplicationException(TApplicationException.UNKNOWN_METHOD, "Invalid method name: 'get_x'")

# --------------------------------------------------------------------------- one case per mapping

#: (operation, the failing HMS method, the HMS exception, the catalogd error, words in its message)
Operation = Callable[[HiveCatalog], Any]
CASES: list[tuple[str, Operation, str, BaseException, type[CatalogError], str]] = [
    ("get_database missing", lambda c: c.get_database("sales"), "get_database",
     hms.NoSuchObjectException("sales not found"), DatabaseNotFoundError, "database main.sales does not exist"),
    ("get_table missing", lambda c: c.get_table("sales", "orders"), "get_table",
     hms.NoSuchObjectException("sales.orders table not found"), TableNotFoundError,
     "table main.sales.orders does not exist"),
    ("create_table exists", lambda c: c.create_table(TABLE), "create_table",
     hms.AlreadyExistsException("Table orders already exists"), TableAlreadyExistsError,
     "table main.sales.orders already exists"),
    ("create_database exists", lambda c: c.create_database(Database("sales")), "create_database",
     hms.AlreadyExistsException("Database sales already exists"), DatabaseAlreadyExistsError,
     "database main.sales already exists"),
    ("create_table invalid", lambda c: c.create_table(TABLE), "create_table",
     hms.InvalidObjectException("Invalid partition column"), InvalidArgumentError, "Invalid partition column"),
    ("alter_table invalid input", lambda c: c.alter_table("sales", "orders", TableUpdate(comment="x")),
     "alter_table_with_environment_context", hms.InvalidInputException("bad input"), InvalidArgumentError,
     "bad input"),
    ("drop_database not empty", lambda c: c.drop_database("sales", cascade=True), "drop_database",
     hms.InvalidOperationException("Database sales is not empty. One or more tables exist."),
     DatabaseNotEmptyError, "drop it with cascade"),
    ("alter_table invalid operation", lambda c: c.alter_table("sales", "orders", TableUpdate(comment="x")),
     "alter_table_with_environment_context", hms.InvalidOperationException("new table is invalid"),
     InvalidArgumentError, "new table is invalid"),
    ("create_table no privileges", lambda c: c.create_table(TABLE), "create_table",
     hms.MetaException("User alice does not have privileges for CREATETABLE"), PermissionDeniedError,
     "does not have privileges"),
    ("get_table permission denied", lambda c: c.get_table("sales", "orders"), "get_table",
     hms.MetaException("Permission denied: user=bob, access=READ, inode=/warehouse"), PermissionDeniedError,
     "Permission denied"),
    ("drop_table not authorized", lambda c: c.drop_table("sales", "orders"), "drop_table_with_environment_context",
     hms.MetaException("User bob is not authorized to perform this action"), PermissionDeniedError,
     "not authorized"),
    ("list_databases metastore failure", lambda c: c.list_databases(), "get_all_databases",
     hms.MetaException("java.sql.SQLException: Connection is not available"), MetastoreUnavailableError,
     "metastore error: java.sql.SQLException"),
    ("get_table metastore failure", lambda c: c.get_table("sales", "orders"), "get_table",
     hms.MetaException(None), MetastoreUnavailableError, "table main.sales.orders: metastore error"),
    ("drop default database", lambda c: c.drop_database("default", cascade=True), "drop_database",
     hms.MetaException("Can not drop default database"), InvalidArgumentError, "cannot be dropped"),
    ("alter_database missing via MetaException", lambda c: c.alter_database("sales", DatabaseUpdate(comment="c")),
     "get_database", hms.MetaException("database sales does not exist"), DatabaseNotFoundError,
     "database main.sales does not exist"),
    ("get_table unknown method", lambda c: c.get_table("sales", "orders"), "get_table", UNKNOWN_METHOD,
     UnsupportedError, "does not support the call"),
    ("drop_table unknown method", lambda c: c.drop_table("sales", "orders"), "drop_table_with_environment_context",
     UNKNOWN_METHOD, UnsupportedError, "Invalid method name"),
    ("get_table application error", lambda c: c.get_table("sales", "orders"), "get_table",
     TApplicationException(TApplicationException.INTERNAL_ERROR, "NullPointerException"),
     MetastoreUnavailableError, "metastore failed: NullPointerException"),
]


def _answers_for(failing: str, error: BaseException) -> dict[str, Any]:
    """Answers under which the operation reaches ``failing``, which then raises ``error``."""
    raw = hms.Table(
        tableName="orders", dbName="sales", tableType="MANAGED_TABLE", parameters={}, partitionKeys=[],
        sd=hms.StorageDescriptor(cols=[hms.FieldSchema("id", "bigint", None)], location="file:/w/sales.db/orders",
                                 serdeInfo=hms.SerDeInfo(parameters={})),
    )
    answers: dict[str, Any] = {
        "get_database": hms_database(),
        "get_all_databases": ["default", "sales"],
        "get_all_tables": [],
        "get_table": raw,
        # What catalogd reads to decide where files may go and what a drop may delete.
        "get_config_value": "file:/w",
        "get_table_objects_by_name": [],
        "get_partitions": [],
        "get_functions": [],
        "create_table": None,
        "create_database": None,
        "drop_database": None,
        "drop_table_with_environment_context": None,
        "alter_table_with_environment_context": None,
        "alter_database": None,
        "alter_table": None,
    }
    answers[failing] = error
    return answers


@pytest.mark.parametrize(
    ("operation", "failing", "error", "expected", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_hms_exceptions_map_to_catalogd_errors(
    operation: Operation, failing: str, error: BaseException, expected: type[CatalogError], words: str
) -> None:
    catalog, fake = hive_catalog(_answers_for(failing, error))
    with pytest.raises(CatalogError) as info:
        operation(catalog)
    assert type(info.value) is expected
    assert words in info.value.message
    assert info.value.__cause__ is error  # `raise ... from e`: the HMS exception stays reachable
    assert failing in fake.methods()


def test_every_catalogd_error_of_the_brief_is_covered() -> None:
    covered = {case[4] for case in CASES}
    assert {
        DatabaseNotFoundError, TableNotFoundError, TableAlreadyExistsError, DatabaseAlreadyExistsError,
        InvalidArgumentError, DatabaseNotEmptyError, PermissionDeniedError, MetastoreUnavailableError,
        UnsupportedError,
    } <= covered


@pytest.mark.parametrize(
    "error",
    [
        MetastoreUnavailableError("no metastore reachable: thrift://h:9083: refused"),
        PermissionDeniedError("read-only"),
    ],
)
def test_catalogd_errors_pass_through_untouched(error: CatalogError) -> None:
    catalog, _ = hive_catalog({"get_table": error})
    with pytest.raises(type(error)) as info:
        catalog.get_table("sales", "orders")
    assert info.value is error


def test_unexpected_exceptions_are_not_swallowed() -> None:
    """A bug (not an HMS answer) must surface as itself, for the handler to log as internal."""
    catalog, _ = hive_catalog({"get_table": KeyError("bug")})
    with pytest.raises(KeyError):
        catalog.get_table("sales", "orders")


def test_a_catalog_that_is_not_open() -> None:
    catalog = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    with pytest.raises(MetastoreUnavailableError, match="catalog main is not open"):
        catalog.get_table("sales", "orders")


def test_a_catalog_needs_uris_or_an_embedded_metastore() -> None:
    with pytest.raises(InvalidArgumentError, match="give metastore URIs or an embedded metastore"):
        HiveCatalog("main")


# --------------------------------------------------------------------------- flags and checks before HMS


def test_ignore_if_exists_swallows_already_exists() -> None:
    catalog, fake = hive_catalog({"create_database": hms.AlreadyExistsException("exists"),
                                  "get_database": hms.NoSuchObjectException("sales"),
                                  "get_config_value": "file:/w", "get_all_databases": []})
    catalog.create_database(Database("sales"), ignore_if_exists=True)
    # Its location is checked first (reads only); the one write is the create, whose refusal is swallowed.
    assert [m for m in fake.methods() if m.startswith(("create", "drop", "alter"))] == ["create_database"]


def test_ignore_if_not_exists_swallows_a_missing_table() -> None:
    catalog, _ = hive_catalog({"get_table": hms.NoSuchObjectException("gone"),
                               "drop_table_with_environment_context": hms.NoSuchObjectException("gone")})
    catalog.drop_table("sales", "orders", ignore_if_not_exists=True)
    with pytest.raises(TableNotFoundError):
        catalog.drop_table("sales", "orders")


def test_ignore_if_not_exists_swallows_a_missing_database() -> None:
    catalog, fake = hive_catalog({"get_database": hms.NoSuchObjectException("gone")})
    catalog.drop_database("sales", ignore_if_not_exists=True)
    assert "drop_database" not in fake.methods()


def test_create_table_in_a_missing_database() -> None:
    catalog, fake = hive_catalog({"get_database": hms.NoSuchObjectException("sales")})
    with pytest.raises(DatabaseNotFoundError, match=re.escape("database main.sales does not exist")):
        catalog.create_table(TABLE)
    assert "create_table" not in fake.methods()


def test_drop_database_without_cascade_refuses_a_database_with_tables() -> None:
    catalog, fake = hive_catalog({"get_database": hms_database(), "get_all_tables": ["orders"]})
    with pytest.raises(DatabaseNotEmptyError, match="not empty"):
        catalog.drop_database("sales")
    assert "drop_database" not in fake.methods()


def test_writes_are_not_retried_by_the_client() -> None:
    """Writes go out with idempotent=False: a broken connection must not run them twice."""
    catalog, fake = hive_catalog(_answers_for("alter_table", None))  # type: ignore[arg-type]
    catalog.create_database(Database("sales"))
    catalog.create_table(TABLE)
    catalog.drop_table("sales", "orders")
    catalog.drop_database("sales", cascade=True)
    flags = {method: idempotent for method, _, idempotent in fake.calls}
    for write in ("create_database", "create_table", "drop_table_with_environment_context", "drop_database"):
        assert flags[write] is False, write
    for read in ("get_database", "get_table"):
        assert flags[read] is True, read


def test_list_tables_of_a_missing_database() -> None:
    catalog, _ = hive_catalog({"get_all_tables": [], "get_database": hms.NoSuchObjectException("sales")})
    with pytest.raises(DatabaseNotFoundError) as info:
        catalog.list_tables("sales")
    assert isinstance(info.value.__cause__, hms.NoSuchObjectException)


def test_list_tables_of_an_empty_database() -> None:
    catalog, fake = hive_catalog({"get_all_tables": [], "get_database": hms_database()})
    assert catalog.list_tables("sales") == []
    assert fake.methods() == ["get_all_tables", "get_database"]


def test_list_tables_leaves_views_out_and_needs_no_database_lookup() -> None:
    catalog, fake = hive_catalog({"get_all_tables": ["b", "v", "a"], "get_tables_by_type": ["v"]})
    assert catalog.list_tables("sales") == ["a", "b"]
    assert "get_database" not in fake.methods()


def test_not_found_defaults_to_the_generic_error() -> None:
    """Where no specific class is given the generic NotFoundError is raised (list_databases has none)."""
    catalog, _ = hive_catalog({"get_all_databases": hms.NoSuchObjectException("?")})
    with pytest.raises(NotFoundError) as info:
        catalog.list_databases()
    assert type(info.value) is NotFoundError


def test_not_found_keeps_the_metastore_words_in_the_log_only(caplog: pytest.LogCaptureFixture) -> None:
    """``(sales.ordres table not found)`` repeats what the message says: only the daemon log keeps it."""
    catalog, _ = hive_catalog({"get_table": hms.NoSuchObjectException("sales.ordres table not found")})
    caplog.set_level(logging.DEBUG, logger="catalogd.catalog.hive_client")
    with pytest.raises(TableNotFoundError) as info:
        catalog.get_table("sales", "ordres")
    assert str(info.value) == "table main.sales.ordres does not exist"
    assert any("sales.ordres table not found" in r.getMessage() and r.levelno == logging.DEBUG
               for r in caplog.records)


def test_tables_of_a_database_gone_since_it_was_listed_read_as_a_missing_database() -> None:
    # HMS 2.3 answers get_table_objects_by_name on a dropped database with no result at all.
    missing = TApplicationException(TApplicationException.MISSING_RESULT,
                                    "get_table_objects_by_name failed: unknown result")
    gone = FakeMetastore({"get_table_objects_by_name": missing,
                          "get_database": hms.NoSuchObjectException("db: not found")})
    with pytest.raises(hms.NoSuchObjectException):
        HiveClient(gone).get_table_objects_by_name("db", ["t"])
    assert gone.methods() == ["get_table_objects_by_name", "get_database"]
    # The database is there: the metastore's failure stands.
    there = FakeMetastore({"get_table_objects_by_name": missing, "get_database": hms.Database(name="db")})
    with pytest.raises(TApplicationException):
        HiveClient(there).get_table_objects_by_name("db", ["t"])
