"""HMS 3's ``@catalog#db`` names: the grammar, and the endpoint's router answering them (memory catalogs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catalogd.config import parse_config
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.catalog_names import CatalogNames, Door, join, split
from catalogd.hms.federation import Federation
from catalogd.hms.memory import MemoryMetastore
from catalogd.hms.refused import Refused
from catalogd.hms.router import Router
from catalogd.hms.server import ClientConnection
from catalogd.manager import CatalogManager
from catalogd.metastore.messages import CALL, REPLY, decode, encode, parse_message

# ---------------------------------------------------------------- the grammar


@pytest.mark.parametrize(("name", "parts"), [
    ("db", (None, "db")),
    ("@hive#db", ("hive", "db")),
    ("@hive#", ("hive", None)),
    ("@hive#!", ("hive", "")),
    ("@scratch#scratch__x", ("scratch", "scratch__x")),
    ("@#db", ("", "db")),
    ("@#", ("", None)),
    ("@x#a#b", ("x", "a#b")),
])
def test_split_reads_names_as_hms3_does(name: str, parts: tuple[str | None, str | None]) -> None:
    assert split(name) == parts
    if parts[0] is not None:
        assert join(parts[0], parts[1]) == name or "#" in (parts[1] or "")


def test_a_catalog_mark_without_a_separator_is_a_meta_exception() -> None:
    with pytest.raises(Refused) as e:
        split("@hive")
    assert isinstance(e.value.exc, hms.MetaException)
    assert "catalog marker" in e.value.exc.message


@pytest.fixture
def grammar() -> CatalogNames:
    federation = Federation({"main": "", "scratch": "scratch__", "lake": "lake__"}, "main")
    return CatalogNames(federation, ["main", "scratch", "lake"])


def test_hive_and_the_default_catalog_are_the_default_door(grammar: CatalogNames) -> None:
    assert grammar.door("hive") == Door("hive", None)
    assert grammar.door("HIVE") == Door("hive", None)
    assert grammar.door("main") == Door("main", None)
    assert grammar.door("Scratch") == Door("scratch", "scratch")
    # The default door is the 2.3 view; a native door adds the catalog's prefix.
    assert grammar.plain(Door("hive", None), "scratch__x") == "scratch__x"
    assert grammar.plain(Door("scratch", "scratch"), "tmp") == "scratch__tmp"
    assert grammar.plain(Door("scratch", "scratch"), "scratch__x") == "scratch__scratch__x"
    assert grammar.shown(Door("scratch", "scratch"))("scratch__scratch__x") == "scratch__x"


@pytest.mark.parametrize(("part", "exc", "text"), [
    ("x", hms.NoSuchObjectException, "no catalog 'x' (in '@x#../')"),
    ("", hms.MetaException, "empty catalog part"),
    ("  ", hms.MetaException, "empty catalog part"),
])
def test_bad_catalog_parts_are_clear_errors(grammar: CatalogNames, part: str, exc: type, text: str) -> None:
    with pytest.raises(Refused) as e:
        grammar.door(part, f"@{part}#../")
    assert isinstance(e.value.exc, exc)
    assert text in e.value.exc.message


def test_unwrap_rewrites_envelopes_and_catalog_fields(grammar: CatalogNames) -> None:
    args = ThriftHiveMetastore.get_table_args(dbname="@scratch#tmp", tbl_name="t")
    spelling = grammar.unwrap("get_table", args)
    assert spelling is not None and args.dbname == "scratch__tmp"
    assert spelling.door == Door("scratch", "scratch")
    plain = ThriftHiveMetastore.get_table_args(dbname="tmp", tbl_name="t")
    assert grammar.unwrap("get_table", plain) is None and plain.dbname == "tmp"
    # A struct's catName beside a plain name.
    table = hms.Table(dbName="tmp", tableName="t", catName="scratch")
    create = ThriftHiveMetastore.create_table_args(tbl=table)
    spelling = grammar.unwrap("create_table", create)
    assert spelling is not None and table.dbName == "scratch__tmp" and table.catName is None
    # Two doors in one call: refused.
    mixed = ThriftHiveMetastore.alter_table_args(dbname="@hive#scratch__tmp", tbl_name="t",
                                                 new_tbl=hms.Table(dbName="@scratch#tmp", tableName="t"))
    with pytest.raises(Refused, match="two catalog parts"):
        grammar.unwrap("alter_table", mixed)
    # hive and the default catalog's name are one door.
    same = ThriftHiveMetastore.alter_table_args(dbname="@hive#d", tbl_name="t",
                                                new_tbl=hms.Table(dbName="@MAIN#d", tableName="t"))
    spelling = grammar.unwrap("alter_table", same)
    assert spelling is not None and spelling.door == Door("hive", None) and same.new_tbl.dbName == "d"
    # "@cat#" where a database is needed.
    with pytest.raises(Refused, match="names no database"):
        grammar.unwrap("get_database", ThriftHiveMetastore.get_database_args(name="@hive#"))


def test_names_in_calls_that_go_to_the_default_catalog_are_unwrapped_too(grammar: CatalogNames) -> None:
    ref = hms.HiveObjectRef(objectType=hms.HiveObjectType.TABLE, dbName="@scratch#tmp", objectName="t")
    bag = hms.PrivilegeBag(privileges=[hms.HiveObjectPrivilege(hiveObject=ref, principalName="u")])
    spelling = grammar.unwrap("grant_privileges", ThriftHiveMetastore.grant_privileges_args(privileges=bag))
    assert spelling is not None and ref.dbName == "scratch__tmp"


def test_errors_name_the_database_as_the_client_wrote_it(grammar: CatalogNames) -> None:
    args = ThriftHiveMetastore.get_database_args(name="@hive#scratch__x")
    spelling = grammar.unwrap("get_database", args)
    assert spelling is not None and args.name == "scratch__x"
    # Whether the catalog said the 2.3 name or its own.
    for said in ("database x does not exist", "scratch__x"):
        exc = spelling.error(hms.NoSuchObjectException(message=said))
        assert "@hive#scratch__x" in exc.message  # type: ignore[attr-defined]
    kept = spelling.error(hms.NoSuchObjectException(message="table x.x2 not found"))
    assert kept.message == "table @hive#scratch__x.x2 not found"  # type: ignore[attr-defined]


# ---------------------------------------------------------------- through the router


class Endpoint:
    """A router over two memory catalogs: ``main`` (default) and ``scratch`` (``scratch__``)."""

    def __init__(self, tmp_path: Path) -> None:
        config = parse_config(f"server: {{data-dir: {tmp_path}}}\ncatalogs:\n"
                              "  - {name: main, type: memory, default: true}\n  - {name: scratch, type: memory}\n")
        manager = CatalogManager(config)
        manager.open()
        stores: dict[str, MemoryMetastore] = {}

        def store(name: str) -> MemoryMetastore:
            if name not in stores:
                stores[name] = MemoryMetastore(manager.catalogs()[name], tmp_path / "wh" / name,  # type: ignore[arg-type]
                                               root=tmp_path)
            return stores[name]

        self.router = Router(manager, memory_store=store)
        self.conn = ClientConnection("127.0.0.1:9", identity=("u", ()))

    def call(self, method: str, **args: Any) -> Any:
        request = getattr(ThriftHiveMetastore, f"{method}_args")(**args)
        reply = self.router.handle(self.conn, parse_message(encode(method, CALL, 1, request)))
        assert reply is not None
        answer = parse_message(reply)
        assert answer.type == REPLY, method
        result = decode(getattr(ThriftHiveMetastore, f"{method}_result")(), answer.body)
        failure = next((v for k, v in vars(result).items() if k != "success" and v is not None), None)
        if failure is not None:
            raise failure
        return getattr(result, "success", None)


def _table(db: str, name: str, catalog: str | None = None) -> hms.Table:
    sd = hms.StorageDescriptor(cols=[hms.FieldSchema("id", "int")], serdeInfo=hms.SerDeInfo(parameters={}),
                               inputFormat="org.apache.hadoop.mapred.TextInputFormat",
                               outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat")
    return hms.Table(dbName=db, tableName=name, sd=sd, tableType="MANAGED_TABLE", parameters={}, partitionKeys=[],
                     catName=catalog)


def test_the_default_door_and_a_native_door_through_the_router(tmp_path: Path) -> None:
    e = Endpoint(tmp_path)
    e.call("create_database", database=hms.Database(name="@hive#d1", parameters={}))
    e.call("create_database", database=hms.Database(name="@scratch#tmp", parameters={}))
    e.call("create_table", tbl=_table("@scratch#tmp", "t1"))
    # A 2.3 client sees both, the memory catalog's under its prefix.
    assert {"d1", "scratch__tmp"} <= set(e.call("get_all_databases"))
    # The default door: the 2.3 view.
    assert {"d1", "scratch__tmp"} <= set(e.call("get_databases", pattern="@hive#"))
    assert e.call("get_databases", pattern="@hive#scratch__t*") == ["scratch__tmp"]
    assert e.call("get_database", name="@hive#d1").name == "d1"
    assert e.call("get_table", dbname="@hive#scratch__tmp", tbl_name="t1").dbName == "scratch__tmp"
    # The native door: the catalog's own names.
    assert e.call("get_databases", pattern="@scratch#") == ["default", "tmp"]
    assert e.call("get_databases", pattern="@scratch#t*") == ["tmp"]
    assert e.call("get_database", name="@scratch#tmp").name == "tmp"
    assert e.call("get_table", dbname="@scratch#tmp", tbl_name="t1").dbName == "tmp"
    assert e.call("get_tables", db_name="@scratch#tmp", pattern="*") == ["t1"]
    metas = e.call("get_table_meta", db_patterns="@scratch#", tbl_patterns="*", tbl_types=None)
    assert [(m.dbName, m.tableName) for m in metas] == [("tmp", "t1")]
    metas = e.call("get_table_meta", db_patterns="@hive#scratch__*", tbl_patterns="*", tbl_types=None)
    assert [(m.dbName, m.tableName) for m in metas] == [("scratch__tmp", "t1")]
    # Errors name the database as the client wrote it.
    with pytest.raises(hms.NoSuchObjectException, match="@hive#scratch__nope"):
        e.call("get_database", name="@hive#scratch__nope")
    with pytest.raises(hms.NoSuchObjectException, match="@scratch#nope"):
        e.call("get_database", name="@scratch#nope")


@pytest.mark.parametrize(("name", "exc", "text"), [
    ("@x#../", hms.NoSuchObjectException, "no catalog 'x'"),
    ("@#", hms.MetaException, "empty catalog part"),
    ("@#db", hms.MetaException, "empty catalog part"),
])
def test_bad_names_change_nothing(tmp_path: Path, name: str, exc: type, text: str) -> None:
    e = Endpoint(tmp_path)
    before = e.call("get_all_databases")
    # create_database declares no NoSuchObjectException: HMS 3 says InvalidObjectException there.
    with pytest.raises(hms.InvalidObjectException if exc is hms.NoSuchObjectException else exc, match=text):
        e.call("create_database", database=hms.Database(name=name, parameters={}))
    with pytest.raises(exc, match=text):
        e.call("get_database", name=name)
    # get_databases declares only MetaException.
    with pytest.raises(hms.MetaException, match=text):
        e.call("get_databases", pattern=name)
    assert e.call("get_all_databases") == before


def test_catalog_fields_route_and_come_back_set(tmp_path: Path) -> None:
    e = Endpoint(tmp_path)
    e.call("create_database", database=hms.Database(name="tmp", parameters={}, catalogName="scratch"))
    e.call("create_table", tbl=_table("tmp", "t1", catalog="scratch"))
    assert "scratch__tmp" in e.call("get_all_databases")
    found = e.call("get_table_req", req=hms.GetTableRequest(dbName="tmp", tblName="t1", catName="scratch")).table
    assert (found.dbName, found.catName) == ("tmp", "scratch")
    through_hive = e.call("get_table_req", req=hms.GetTableRequest(dbName="scratch__tmp", tblName="t1",
                                                                      catName="hive")).table
    assert (through_hive.dbName, through_hive.catName) == ("scratch__tmp", "hive")
    assert e.call("get_database", name="@SCRATCH#tmp").catalogName == "scratch"
    metas = e.call("get_table_meta", db_patterns="@scratch#", tbl_patterns="*", tbl_types=None)
    assert [(m.catName, m.dbName) for m in metas] == [("scratch", "tmp")]
    # A 2.3 client's answer carries no catalog (as HMS 2.3's).
    assert e.call("get_table", dbname="scratch__tmp", tbl_name="t1").catName is None


def test_the_catalog_calls_through_the_router(tmp_path: Path) -> None:
    e = Endpoint(tmp_path)
    assert e.call("get_catalogs").names == ["main", "scratch"]
    hive = e.call("get_catalog", catName=hms.GetCatalogRequest(name="hive")).catalog
    assert hive.name == "hive" and "'main' (memory)" in hive.description
    assert hive.locationUri == (tmp_path / "scratch-warehouse" / "main").as_uri()
    with pytest.raises(hms.NoSuchObjectException, match="no catalog 'x'"):
        e.call("get_catalog", catName=hms.GetCatalogRequest(name="x"))
    with pytest.raises(hms.MetaException, match="catalogs are configured in catalogd's YAML"):
        e.call("create_catalog", catalog=hms.CreateCatalogRequest(catalog=hms.Catalog(name="x", locationUri="/x")))
    with pytest.raises(hms.MetaException, match="catalogs are configured"):
        e.call("drop_catalog", catName=hms.DropCatalogRequest(name="scratch"))
    with pytest.raises(hms.MetaException, match="catalogs are configured"):
        e.call("alter_catalog", rqst=hms.AlterCatalogRequest(name="scratch", newCat=hms.Catalog(name="scratch")))
    assert e.call("get_catalogs").names == ["main", "scratch"]
