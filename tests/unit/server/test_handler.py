"""Tests for catalogd.server.handler: RPCs -> manager calls, errors -> IDL exceptions, metrics.

The handler runs on a CatalogManager with memory catalogs only (no metastore).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from catalogd import errors, wire
from catalogd.gen.catalogd_thrift import ttypes as t
from catalogd.manager import CatalogManager
from catalogd.model import Column, Table
from catalogd.server.handler import CatalogHandler
from catalogd.server.metrics import Metrics

HANDLER_LOGGER = "catalogd.server.handler"


@pytest.fixture
def manager(memory_manager: Callable[[str], CatalogManager]) -> CatalogManager:
    return memory_manager(
        """\
  - name: main
    type: memory
    default: true
  - name: archive
    type: memory
    read-only: true
    default-database: base
"""
    )


@pytest.fixture
def handler(manager: CatalogManager) -> CatalogHandler:
    return CatalogHandler(manager, Metrics())


def requests(handler: CatalogHandler, rpc: str, outcome: str) -> float:
    value = handler.metrics.registry.get_sample_value("catalogd_rpc_requests_total", {"rpc": rpc, "outcome": outcome})
    return value or 0.0


def latency_count(handler: CatalogHandler, rpc: str) -> float:
    value = handler.metrics.registry.get_sample_value("catalogd_rpc_duration_seconds_count", {"rpc": rpc})
    return value or 0.0


def obj(name: str, database: str | None = None, catalog: str | None = None) -> t.ObjectPath:
    return t.ObjectPath(catalog=catalog, database=database, name=name)


def ns(database: str, catalog: str | None = None) -> t.NamespacePath:
    return t.NamespacePath(catalog=catalog, database=database)


def thrift_table(name: str, database: str = "default", catalog: str | None = None) -> t.Table:
    return wire.table_to_thrift(
        Table(name=name, database=database, catalog=catalog or "",
              columns=[Column("id", "bigint"), Column("v", "string")])
    )


# --------------------------------------------------------------------------- the happy path


def test_rpcs_reach_the_manager_with_defaults_filled_in(handler: CatalogHandler) -> None:
    handler.createDatabase(t.Database(name="Sales"), False)
    created = handler.createTable(thrift_table("Orders", database="sales"), False)
    assert (created.catalog, created.database, created.name) == ("main", "sales", "orders")
    assert handler.listTables(ns("sales")) == ["orders"]
    assert handler.getTable(obj("orders", "sales", "main")).columns[0] == t.Column(name="id", type="bigint")
    assert handler.tableExists(obj("orders", "SALES"))
    # A name without a database goes to the catalog's default database.
    handler.createTable(thrift_table("t1", database=""), False)
    assert handler.listTables(ns("default")) == ["t1"]
    assert handler.getTable(obj("t1")).database == "default"
    assert handler.listDatabases("") == ["default", "sales"]
    assert handler.listDatabases("archive") == ["base"]
    assert handler.getCatalog("").name == "main"
    assert [c.name for c in handler.listCatalogs()] == ["archive", "main"]
    assert handler.ping().startswith("catalogd ")


def test_a_memory_catalog_has_no_atomic_writes(handler: CatalogHandler) -> None:
    """Nothing to stage (no data files): ``atomic-writes`` (true by default) does not make it so."""
    info = wire.catalog_from_thrift(handler.getCatalog("main"))
    assert (info.type, info.atomic_writes) == ("memory", False)


def test_successes_are_counted_as_ok(handler: CatalogHandler) -> None:
    handler.listDatabases("")
    handler.listDatabases("")
    handler.getDatabase(ns("default"))
    assert requests(handler, "listDatabases", "ok") == 2
    assert requests(handler, "getDatabase", "ok") == 1
    assert latency_count(handler, "listDatabases") == 2


# --------------------------------------------------------------------------- catalogd errors


def test_a_missing_table_is_not_found_with_its_type(handler: CatalogHandler, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=HANDLER_LOGGER)
    with pytest.raises(t.NotFound) as info:
        handler.getTable(obj("nope", "default"))
    assert info.value.objectType == "table"
    assert "main.default.nope" in info.value.message
    assert isinstance(info.value.__cause__, errors.TableNotFoundError)
    assert requests(handler, "getTable", "not-found") == 1
    assert requests(handler, "getTable", "ok") == 0
    assert latency_count(handler, "getTable") == 1
    # An expected failure is no bug: logged at debug, never as an error.
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("getTable" in r.getMessage() and r.levelno == logging.DEBUG for r in caplog.records)


@pytest.mark.parametrize(
    ("call", "exc_type", "object_type", "outcome"),
    [
        (lambda h: h.getCatalog("nope"), t.NotFound, "catalog", "not-found"),
        (lambda h: h.getDatabase(ns("nope")), t.NotFound, "database", "not-found"),
        (lambda h: h.dropTable(obj("nope"), False, False), t.NotFound, "table", "not-found"),
        (lambda h: h.createDatabase(t.Database(name="default"), False), t.AlreadyExists, "database", "already-exists"),
        (lambda h: h.createTable(thrift_table("t"), False), t.AlreadyExists, "table", "already-exists"),
        (lambda h: h.renameTable(obj("t"), "t", False), t.AlreadyExists, "table", "already-exists"),
    ],
)
def test_not_found_and_already_exists(
    handler: CatalogHandler, call: object, exc_type: type[Exception], object_type: str, outcome: str
) -> None:
    handler.createTable(thrift_table("t"), False)
    with pytest.raises(exc_type) as info:
        call(handler)  # type: ignore[operator]
    assert info.value.objectType == object_type  # type: ignore[attr-defined]
    # The error comes back as the same catalogd class on the client side.
    back = wire.error_from_thrift(info.value)
    assert isinstance(back, errors.NotFoundError | errors.AlreadyExistsError)
    assert back.object_type == object_type
    assert sum(
        requests(handler, rpc, outcome)
        for rpc in ("getCatalog", "getDatabase", "dropTable", "createDatabase", "createTable", "renameTable")
    ) == 1


def test_a_database_with_tables_is_not_empty(handler: CatalogHandler) -> None:
    handler.createDatabase(t.Database(name="sales"), False)
    handler.createTable(thrift_table("t", "sales"), False)
    with pytest.raises(t.NotEmpty, match="not empty"):
        handler.dropDatabase(ns("sales"), False, False)
    assert requests(handler, "dropDatabase", "not-empty") == 1
    handler.dropDatabase(ns("sales"), False, True)
    assert requests(handler, "dropDatabase", "ok") == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda h: h.getTable(obj("a.b")),
        lambda h: h.getTable(obj("bad name")),
        lambda h: h.getTable(obj("t", "x..y")),
        lambda h: h.getTable(obj("")),
        lambda h: h.getTable(None),
        lambda h: h.getDatabase(ns("")),
        lambda h: h.listDatabases("a.b"),
        lambda h: h.renameTable(obj("t"), "other.t", False),
        lambda h: h.createTable(t.Table(name="x", database="default", columns=[t.Column(name="a", type="strng")]),
                                False),
        lambda h: h.createTable(t.Table(name="x", database="default", columns=[]), False),
    ],
)
def test_bad_requests_are_invalid_arguments(handler: CatalogHandler, call: object) -> None:
    with pytest.raises(t.InvalidArgument):
        call(handler)  # type: ignore[operator]
    assert sum(v for v in _outcomes(handler, "invalid-argument")) == 1


def _outcomes(handler: CatalogHandler, outcome: str) -> list[float]:
    return [
        sample.value
        for metric in handler.metrics.registry.collect()
        for sample in metric.samples
        if sample.name == "catalogd_rpc_requests_total" and sample.labels.get("outcome") == outcome
    ]


def test_a_read_only_catalog_refuses_writes(handler: CatalogHandler) -> None:
    with pytest.raises(t.PermissionDenied, match="read-only"):
        handler.createTable(thrift_table("t", "base", "archive"), False)
    with pytest.raises(t.PermissionDenied):
        handler.dropDatabase(ns("base", "archive"), False, True)
    assert requests(handler, "createTable", "permission-denied") == 1
    assert requests(handler, "dropDatabase", "permission-denied") == 1
    assert handler.listTables(ns("base", "archive")) == []  # reads still work


@pytest.mark.parametrize(
    ("error", "exc_type"),
    [
        (errors.MetastoreUnavailableError("no metastore reachable"), t.MetastoreUnavailable),
        (errors.UnsupportedError("cannot rename databases"), t.Unsupported),
        (errors.ConflictError("changed meanwhile"), t.Conflict),
        (errors.PermissionDeniedError("no"), t.PermissionDenied),
        (errors.DatabaseNotEmptyError("has tables"), t.NotEmpty),
        (errors.InternalError("known bug"), t.InternalError),
    ],
)
def test_catalog_errors_from_the_manager_become_their_idl_exception(
    handler: CatalogHandler, monkeypatch: pytest.MonkeyPatch, error: errors.CatalogError, exc_type: type[Exception]
) -> None:
    def fail(*args: object) -> None:
        raise error

    monkeypatch.setattr(handler.manager, "list_tables", fail)
    with pytest.raises(exc_type) as info:
        handler.listTables(ns("default"))
    assert info.value.message == error.message  # type: ignore[attr-defined]
    assert info.value.__cause__ is error
    assert requests(handler, "listTables", error.kind) == 1


# --------------------------------------------------------------------------- bugs


def test_an_unexpected_exception_becomes_internal_error_and_is_logged(
    handler: CatalogHandler, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("boom in the manager")

    monkeypatch.setattr(handler.manager, "get_table", broken)
    with caplog.at_level(logging.ERROR, logger=HANDLER_LOGGER), pytest.raises(t.InternalError) as info:
        handler.getTable(obj("t"))
    message = info.value.message
    assert "getTable" in message
    assert "RuntimeError" in message
    assert "boom in the manager" in message
    assert "daemon log" in message
    assert isinstance(info.value.__cause__, RuntimeError)
    (record,) = [r for r in caplog.records if r.name == HANDLER_LOGGER and r.levelno == logging.ERROR]
    assert "getTable" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError  # the traceback is in the log
    assert requests(handler, "getTable", "internal") == 1
    assert latency_count(handler, "getTable") == 1
    # The client sees it as catalogd's InternalError.
    assert type(wire.error_from_thrift(info.value)) is errors.InternalError


def test_the_handler_keeps_serving_after_a_bug(handler: CatalogHandler, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real = handler.manager.list_databases

    def flaky(catalog: str | None) -> list[str]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ZeroDivisionError("once")
        return real(catalog)

    monkeypatch.setattr(handler.manager, "list_databases", flaky)
    with pytest.raises(t.InternalError):
        handler.listDatabases("")
    assert handler.listDatabases("") == ["default"]
    assert requests(handler, "listDatabases", "internal") == 1
    assert requests(handler, "listDatabases", "ok") == 1


def test_metrics_of_two_handlers_are_separate(manager: CatalogManager) -> None:
    first, second = CatalogHandler(manager, Metrics()), CatalogHandler(manager, Metrics())
    first.listDatabases("")
    assert requests(first, "listDatabases", "ok") == 1
    assert requests(second, "listDatabases", "ok") == 0


# --------------------------------------------------------------------------- stage RPCs (issue 11)

_STAGE_WRITES = ("beginStage", "heartbeatStage", "commitStage", "abortStage")
_STAGE_READS = ("getStage", "listStages")


def declared_errors(rpc: str) -> set[type]:
    """The IDL exceptions ``rpc`` declares in its ``throws`` clause (others reach a client as
    Thrift's bare "Internal error")."""
    from catalogd.gen.catalogd_thrift import CatalogService

    spec = getattr(CatalogService, f"{rpc}_result").thrift_spec
    return {entry[3][0] for entry in spec if entry is not None and entry[0] != 0}


@pytest.mark.parametrize("rpc", _STAGE_WRITES + _STAGE_READS)
def test_every_refusal_of_a_stage_rpc_is_declared_in_the_idl(rpc: str) -> None:
    wanted = {t.NotFound, t.InvalidArgument, t.MetastoreUnavailable, t.PermissionDenied, t.Unsupported,
              t.InternalError}
    if rpc in _STAGE_WRITES:
        wanted.add(t.Conflict)
    assert wanted <= declared_errors(rpc)


def test_stage_writes_on_a_read_only_catalog_are_permission_denied(handler: CatalogHandler) -> None:
    stage_id = "archive.base.0123456789abcdef"
    for call in (lambda: handler.heartbeatStage(stage_id, 0), lambda: handler.commitStage(stage_id),
                 lambda: handler.abortStage(stage_id, False),
                 lambda: handler.beginStage(t.StageRequest(target=obj("t", "base", "archive"),
                                                           purpose=t.StagePurpose.CREATE))):
        with pytest.raises(t.PermissionDenied, match="read-only"):
            call()
    assert requests(handler, "heartbeatStage", "permission-denied") == 1

