"""Tests for catalogd.wire: model objects and errors <-> the generated Thrift types."""

from __future__ import annotations

import pytest
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAcceleratedFactory
from thrift.transport import TTransport

from catalogd import errors, wire
from catalogd.gen.catalogd_thrift import CatalogService
from catalogd.gen.catalogd_thrift import ttypes as t
from catalogd.model import (
    CatalogInfo,
    Column,
    Database,
    DatabaseUpdate,
    Table,
    TableFormat,
    TableKind,
    TableUpdate,
)
from catalogd.names import NamespacePath, ObjectPath

PROTOCOL = TBinaryProtocolAcceleratedFactory()


def over_the_wire(obj: object) -> object:
    """Serialize and deserialize a Thrift struct or exception, as the network would.

    The generated exceptions are immutable: their ``read`` is a classmethod that
    returns a new instance, while structs fill themselves in.
    """
    out = TTransport.TMemoryBuffer()
    obj.write(PROTOCOL.getProtocol(out))  # type: ignore[attr-defined]
    protocol = PROTOCOL.getProtocol(TTransport.TMemoryBuffer(out.getvalue()))
    if isinstance(obj, Exception):
        return type(obj).read(protocol)  # type: ignore[attr-defined]
    new = type(obj)()
    new.read(protocol)  # type: ignore[attr-defined]
    return new


def concrete_error_classes() -> list[type[errors.CatalogError]]:
    """Every error class catalogd defines, found by walking the hierarchy (so new ones are covered too)."""
    found: list[type[errors.CatalogError]] = []
    pending = [errors.CatalogError]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub.__module__ == errors.__name__:
                found.append(sub)
                pending.append(sub)
    return sorted(set(found), key=lambda c: c.__name__)


#: Errors that keep their class across the wire. ConfigError and UsageError are request
#: problems of the CLI side; they travel as InvalidArgument. ServerUnavailableError is
#: raised by the client itself and never sent. A full refresh queue is a conflict whose
#: message says when to retry.
SENT_AS = {
    errors.ConfigError: errors.InvalidArgumentError,
    errors.UsageError: errors.InvalidArgumentError,
    errors.ServerUnavailableError: errors.InternalError,
    errors.RefreshQueueFullError: errors.ConflictError,
}


@pytest.mark.parametrize("cls", concrete_error_classes(), ids=lambda c: c.__name__)
def test_every_error_class_round_trips(cls: type[errors.CatalogError]) -> None:
    message = f"something about {cls.__name__} went wrong: 'x', \"y\", ünïcode"
    exc = wire.error_to_thrift(cls(message))
    assert isinstance(exc, wire.THRIFT_ERRORS)
    back = wire.error_from_thrift(over_the_wire(exc))  # type: ignore[arg-type]
    assert type(back) is SENT_AS.get(cls, cls)
    assert back.message == message
    assert str(back) == message
    assert back.kind == SENT_AS.get(cls, cls).kind


def test_the_error_list_is_complete() -> None:
    """The parametrization above must see every error class (a guard against an empty walk)."""
    names = {c.__name__ for c in concrete_error_classes()}
    assert {"TableNotFoundError", "DatabaseAlreadyExistsError", "DatabaseNotEmptyError", "InternalError"} <= names
    assert set(errors.ERRORS_BY_KIND.values()) <= set(concrete_error_classes())


@pytest.mark.parametrize(
    ("error", "exc_type", "object_type"),
    [
        (errors.NotFoundError("x"), t.NotFound, "object"),
        (errors.CatalogNotFoundError("x"), t.NotFound, "catalog"),
        (errors.DatabaseNotFoundError("x"), t.NotFound, "database"),
        (errors.TableNotFoundError("x"), t.NotFound, "table"),
        (errors.AlreadyExistsError("x"), t.AlreadyExists, "object"),
        (errors.DatabaseAlreadyExistsError("x"), t.AlreadyExists, "database"),
        (errors.TableAlreadyExistsError("x"), t.AlreadyExists, "table"),
    ],
)
def test_not_found_and_already_exists_carry_the_object_type(
    error: errors.CatalogError, exc_type: type[Exception], object_type: str
) -> None:
    exc = wire.error_to_thrift(error)
    assert type(exc) is exc_type
    assert exc.objectType == object_type  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("error", "exc_type"),
    [
        (errors.DatabaseNotEmptyError("x"), t.NotEmpty),
        (errors.InvalidArgumentError("x"), t.InvalidArgument),
        (errors.UnsupportedError("x"), t.Unsupported),
        (errors.MetastoreUnavailableError("x"), t.MetastoreUnavailable),
        (errors.PermissionDeniedError("x"), t.PermissionDenied),
        (errors.ConflictError("x"), t.Conflict),
        (errors.InternalError("x"), t.InternalError),
        (errors.CatalogError("x"), t.InternalError),
    ],
)
def test_simple_errors_map_to_their_idl_exception(error: errors.CatalogError, exc_type: type[Exception]) -> None:
    assert type(wire.error_to_thrift(error)) is exc_type


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (t.NotFound(message="m", objectType="widget"), errors.NotFoundError),  # unknown object type
        (t.NotFound(message="m"), errors.NotFoundError),  # none given
        (t.AlreadyExists(message="m", objectType="widget"), errors.AlreadyExistsError),
        (t.AlreadyExists(message="m"), errors.AlreadyExistsError),
    ],
)
def test_unknown_object_types_fall_back_to_the_generic_error(exc: Exception, expected: type) -> None:
    back = wire.error_from_thrift(exc)
    assert type(back) is expected
    assert back.message == "m"


def test_an_unknown_exception_becomes_internal() -> None:
    back = wire.error_from_thrift(ValueError("strange"))
    assert type(back) is errors.InternalError
    assert back.message == "strange"


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    "path", [ObjectPath(None, None, "t"), ObjectPath(None, "db", "t"), ObjectPath("c", "db", "t")]
)
def test_object_paths_round_trip(path: ObjectPath) -> None:
    assert wire.object_from_thrift(over_the_wire(wire.object_to_thrift(path))) == path  # type: ignore[arg-type]


@pytest.mark.parametrize("path", [NamespacePath(None, "db"), NamespacePath("c", "db")])
def test_namespace_paths_round_trip(path: NamespacePath) -> None:
    assert wire.namespace_from_thrift(over_the_wire(wire.namespace_to_thrift(path))) == path  # type: ignore[arg-type]


def test_empty_parts_from_the_wire_mean_defaults() -> None:
    assert wire.object_from_thrift(t.ObjectPath(catalog="", database="", name="t")) == ObjectPath(None, None, "t")
    assert wire.namespace_from_thrift(t.NamespacePath(catalog="", database="db")) == NamespacePath(None, "db")


@pytest.mark.parametrize("path", [None, t.ObjectPath(catalog="c", database="d", name=""), t.ObjectPath()])
def test_an_object_path_needs_a_name(path: t.ObjectPath | None) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="object name is required"):
        wire.object_from_thrift(path)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", [None, t.NamespacePath(catalog="c", database=""), t.NamespacePath()])
def test_a_namespace_path_needs_a_database(path: t.NamespacePath | None) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="database name is required"):
        wire.namespace_from_thrift(path)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- objects

TABLES = [
    Table(name="t", database="db"),
    Table(
        name="orders",
        database="sales",
        catalog="main",
        columns=[
            Column("id", "bigint", "the key"),
            Column("amount", "decimal(10,2)"),
            Column("tags", "map<string,array<struct<a:int,b:string>>>", "ünïcode, \"quotes\""),
        ],
        partition_keys=[Column("dt", "date", "load date"), Column("region", "string")],
        format=TableFormat.ORC,
        location="s3a://bucket/sales/orders",
        kind=TableKind.EXTERNAL,
        comment="all orders",
        properties={"owner.team": "sales", "empty": ""},
        owner="alice",
        created=1_700_000_000,
    ),
    Table(name="v", database="db", catalog="c", columns=[Column("x", "int")], format=None, kind=TableKind.VIEW),
    *[Table(name=f"f_{fmt.value}", database="db", catalog="c", columns=[Column("x", "int")], format=fmt)
      for fmt in TableFormat],
    *[Table(name=f"k_{kind.value}", database="db", catalog="c", kind=kind) for kind in TableKind],
]


@pytest.mark.parametrize("table", TABLES, ids=lambda tb: tb.name)
def test_tables_round_trip(table: Table) -> None:
    back = wire.table_from_thrift(over_the_wire(wire.table_to_thrift(table)))  # type: ignore[arg-type]
    assert back == table


def test_table_fields_arrive_in_the_idl_names() -> None:
    thrift_table = wire.table_to_thrift(TABLES[1])
    assert thrift_table.partitionKeys[0].name == "dt"
    assert thrift_table.kind == t.TableKind.EXTERNAL
    assert thrift_table.format == "orc"
    assert thrift_table.catalog == "main"


def test_a_table_from_an_older_client_gets_defaults() -> None:
    """Optional fields left unset on the wire become the model's defaults."""
    back = wire.table_from_thrift(t.Table(name="t", database="db", kind=None))
    assert back == Table(name="t", database="db", format=None)


def test_an_unknown_format_from_the_wire_is_refused() -> None:
    with pytest.raises(errors.InvalidArgumentError, match="unknown format 'delta'"):
        wire.table_from_thrift(t.Table(name="t", database="db", format="delta"))


def test_table_conversion_copies_mutable_fields() -> None:
    table = Table(name="t", database="db", properties={"a": "1"}, columns=[Column("x", "int")])
    thrift_table = wire.table_to_thrift(table)
    thrift_table.properties["b"] = "2"
    thrift_table.columns.append(t.Column(name="y", type="int"))
    assert table.properties == {"a": "1"}
    assert table.columns == [Column("x", "int")]


DATABASES = [
    Database(name="db"),
    Database(name="sales", catalog="main", comment="sales data", location="hdfs://nn/warehouse/sales.db",
             properties={"k": "v", "x.y": "z"}, owner="bob"),
]


@pytest.mark.parametrize("database", DATABASES, ids=lambda d: d.name)
def test_databases_round_trip(database: Database) -> None:
    back = wire.database_from_thrift(over_the_wire(wire.database_to_thrift(database)))  # type: ignore[arg-type]
    assert back == database


CATALOGS = [
    CatalogInfo(name="scratch", type="memory"),
    CatalogInfo(name="main", type="hive", default=True, default_database="sales", read_only=True,
                metastore="thrift://h1:9083,thrift://h2:9083", warehouse="s3a://bucket/warehouse",
                iceberg_uri="https://h1:9191/iceberg"),
]


@pytest.mark.parametrize("info", CATALOGS, ids=lambda c: c.name)
def test_catalog_infos_round_trip(info: CatalogInfo) -> None:
    back = wire.catalog_from_thrift(over_the_wire(wire.catalog_to_thrift(info)))  # type: ignore[arg-type]
    assert back == info


@pytest.mark.parametrize(
    "update",
    [
        DatabaseUpdate(),
        DatabaseUpdate(comment=""),
        DatabaseUpdate(comment="new", set_properties={"a": "1", "b": ""}, unset_properties=["c", "d"]),
    ],
)
def test_database_updates_round_trip(update: DatabaseUpdate) -> None:
    thrift_update = over_the_wire(wire.database_update_to_thrift(update))
    assert wire.database_update_from_thrift(thrift_update) == update  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "update",
    [
        TableUpdate(),
        TableUpdate(comment=""),
        TableUpdate(comment="c", set_properties={"a": "1"}, unset_properties=["b"],
                    add_columns=[Column("n", "int", "new"), Column("m", "array<string>")]),
    ],
)
def test_table_updates_round_trip(update: TableUpdate) -> None:
    thrift_update = over_the_wire(wire.table_update_to_thrift(update))
    assert wire.table_update_from_thrift(thrift_update) == update  # type: ignore[arg-type]


def test_missing_updates_mean_no_change() -> None:
    assert wire.database_update_from_thrift(None) == DatabaseUpdate()
    assert wire.table_update_from_thrift(None).is_empty()
    assert wire.table_update_from_thrift(t.TableUpdate()).is_empty()
    assert wire.database_update_from_thrift(t.DatabaseUpdate()) == DatabaseUpdate()


def test_an_error_inside_an_rpc_result_round_trips() -> None:
    """The way a client really receives an error: as a field of the RPC's result struct."""
    sent = wire.error_to_thrift(errors.TableNotFoundError("table main.db.t does not exist"))
    result = over_the_wire(CatalogService.getTable_result(notFound=sent))
    assert result.success is None  # type: ignore[attr-defined]
    back = wire.error_from_thrift(result.notFound)  # type: ignore[attr-defined]
    assert type(back) is errors.TableNotFoundError
    assert back.message == "table main.db.t does not exist"


def test_a_refresh_request_crosses_the_wire_whole() -> None:
    partition, configuration = {"ds": "2024-03-01"}, {"spark.executor.memory": "2g"}
    request = wire.refresh_request_to_thrift(["main.db.dt"], "2024-03-02 00:00:00", partition, configuration, "manual")
    back = over_the_wire(request)
    assert isinstance(back, t.RefreshRequest)
    assert (back.tables, back.scheduleTime, back.partition, back.configuration, back.trigger) == (
        ["main.db.dt"], "2024-03-02 00:00:00", partition, configuration, "manual")
    # The caller's dicts are copied, not shared with the request.
    assert request.partition is not partition and request.configuration is not configuration
