"""A Hive 3.1-IDL client on catalogd's HMS endpoint, sending what Hive 3's ``HiveMetaStoreClient`` sends.

The client is ``pymetastore``'s generated ThriftHiveMetastore (the Hive 3.1 IDL, MIT; the PyPI
package ``hive-metastore-client`` pins thrift 0.13, which the project's thrift>=0.22 excludes).
Hive 3 clients spell a database ``@<catalog>#<db>`` (``@hive#`` for every database) or set
``catName`` beside a plain name; catalogd answers as a Hive 3 metastore would: ``hive`` is the view
a Hive 2.3 client has, any other catalogd catalog is reached by its own names.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest
from pymetastore.hive_metastore import ThriftHiveMetastore as h3
from pymetastore.hive_metastore import ttypes as t3

from .helpers import hms_connection

pytestmark = pytest.mark.integration


@pytest.fixture
def hive3(hms_address: tuple[str, int]) -> Iterator[Any]:
    """A Hive 3.1-IDL client connected to the session daemon's HMS endpoint."""
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    transport = TTransport.TBufferedTransport(TSocket.TSocket(*hms_address))
    client = h3.Client(TBinaryProtocol.TBinaryProtocol(transport))
    transport.open()
    with closing(transport):
        client.set_ugi("hive3", ["hive3"])
        yield client


def _table(db: str, name: str, catalog: str | None = None) -> Any:
    """A Hive 3 client's Table: plain dbName, the catalog in ``catName``."""
    sd = t3.StorageDescriptor(
        cols=[t3.FieldSchema("id", "int", None)], location=None,
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=t3.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", parameters={}),
        parameters={})
    return t3.Table(tableName=name, dbName=db, owner="hive3", sd=sd, partitionKeys=[], parameters={},
                    tableType="MANAGED_TABLE", catName=catalog)


def test_hive_is_the_view_a_hive_2_3_client_has(hive3, hms_address, unique_name) -> None:
    db = unique_name("h3db")
    # Created as Hive 3 creates: the catalog beside the name, and in the envelope.
    hive3.create_database(t3.Database(name=db, parameters={}, catalogName="hive"))
    try:
        hive3.create_table(_table(db, "t1", "hive"))
        # getAllDatabases(): every database of catalog hive, the other catalogs' under their prefixes.
        everything = hive3.get_databases("@hive#")
        assert {"default", db} <= set(everything)
        assert set(hive3.get_databases("@hive#*")) == set(everything)
        with hms_connection(hms_address) as h2:
            assert set(everything) == set(h2.get_all_databases())
        assert hive3.get_databases(f"@hive#{db}") == [db]
        found = hive3.get_database("@hive#default")
        assert found.name == "default"
        table = hive3.get_table(f"@hive#{db}", "t1")
        assert (table.dbName, table.tableName) == (db, "t1")
        assert found.catalogName == "hive" and table.catName == "hive"
        # Hive 3's getTable(): get_table_req with the catalog beside the name.
        req = hive3.get_table_req(t3.GetTableRequest(dbName=db, tblName="t1", catName="hive")).table
        assert (req.dbName, req.catName) == (db, "hive")
        assert hive3.get_tables(f"@hive#{db}", "*") == ["t1"]
        metas = hive3.get_table_meta(f"@hive#{db}", "*", None)
        assert [(m.dbName, m.tableName) for m in metas] == [(db, "t1")]
        # A 2.3 client sees what the Hive 3 client made.
        with hms_connection(hms_address) as h2:
            assert h2.get_table(db, "t1").sd.cols[0].name == "id"
    finally:
        hive3.drop_database(f"@hive#{db}", True, True)


def test_a_prefixed_name_through_hive_names_it_as_the_client_wrote_it(hive3, unique_name) -> None:
    name = f"scratch__{unique_name('nope')}"
    with pytest.raises(t3.NoSuchObjectException) as e:
        hive3.get_database(f"@hive#{name}")
    assert f"@hive#{name}" in e.value.message


def test_a_memory_catalog_natively(hive3, hms_address, unique_name) -> None:
    db = unique_name("h3tmp")
    hive3.create_database(t3.Database(name=f"@scratch#{db}", parameters={}))
    try:
        hive3.create_table(_table(f"@scratch#{db}", "t"))
        assert db in hive3.get_databases("@scratch#")
        assert hive3.get_database(f"@scratch#{db}").name == db
        table = hive3.get_table(f"@scratch#{db}", "t")
        assert (table.dbName, table.tableName) == (db, "t")
        assert hive3.get_tables(f"@scratch#{db}", "*") == ["t"]
        metas = hive3.get_table_meta(f"@scratch#{db}", "*", None)
        assert [(m.dbName, m.tableName) for m in metas] == [(db, "t")]
        # Through the default door and to a Hive 2.3 client: under the catalog's prefix.
        assert hive3.get_table(f"@hive#scratch__{db}", "t").dbName == f"scratch__{db}"
        with hms_connection(hms_address) as h2:
            assert f"scratch__{db}" in h2.get_all_databases()
            assert h2.get_table(f"scratch__{db}", "t").tableName == "t"
        # Hive 3's own spelling: a plain name, the catalog in catName.
        hive3.create_table(_table(db, "t2", "scratch"))
        made = hive3.get_table_req(t3.GetTableRequest(dbName=db, tblName="t2", catName="scratch")).table
        assert (made.dbName, made.catName) == (db, "scratch")
        with hms_connection(hms_address) as h2:
            assert sorted(h2.get_all_tables(f"scratch__{db}")) == ["t", "t2"]
    finally:
        hive3.drop_database(f"@scratch#{db}", True, True)


def test_a_read_only_catalog_natively(hive3, hms_address) -> None:
    """``ro`` is main's metastore again, read-only: its databases by their own names, writes refused."""
    found = hive3.get_database("@ro#default")
    assert (found.name, found.catalogName) == ("default", "ro")
    assert "default" in hive3.get_databases("@ro#")
    with pytest.raises(t3.MetaException) as e:
        hive3.create_table(_table("default", "h3_refused", "ro"))
    assert "read-only" in e.value.message
    with hms_connection(hms_address) as h2:
        assert "h3_refused" not in h2.get_all_tables("ro__default")


@pytest.mark.parametrize(("name", "error", "text"), [
    ("@x#../", "NoSuchObjectException", "no catalog 'x'"),
    ("@#", "MetaException", "empty catalog part"),
    ("@#default", "MetaException", "empty catalog part"),
])
def test_bad_catalog_parts_are_clear_errors_and_change_nothing(hive3, name, error, text) -> None:
    before = hive3.get_databases("@hive#")
    with pytest.raises(getattr(t3, error)) as e:
        hive3.get_database(name)
    assert text in e.value.message
    with pytest.raises((t3.InvalidObjectException, t3.MetaException)) as made:
        hive3.create_database(t3.Database(name=name, parameters={}))
    assert text in made.value.message
    assert hive3.get_databases("@hive#") == before


def test_an_invalid_database_part_is_refused_as_a_plain_one_is(hive3, hms_address) -> None:
    with pytest.raises(t3.NoSuchObjectException):
        hive3.get_database("@scratch#../")
    with hms_connection(hms_address) as h2, pytest.raises(Exception) as plain:
        h2.get_database("scratch__../")
    assert type(plain.value).__name__ == "NoSuchObjectException"


def test_the_catalogs(hive3, daemon) -> None:
    assert set(hive3.get_catalogs().names) >= {"main", "scratch", "ro"}
    hive = hive3.get_catalog(t3.GetCatalogRequest(name="hive")).catalog
    assert hive.name == "hive" and "default catalog 'main' (hive)" in hive.description
    assert hive.locationUri
    scratch = hive3.get_catalog(t3.GetCatalogRequest(name="scratch")).catalog
    assert "(memory)" in scratch.description
    assert scratch.locationUri.endswith("/scratch-warehouse/scratch")
    with pytest.raises(t3.NoSuchObjectException, match="no catalog 'x'"):
        hive3.get_catalog(t3.GetCatalogRequest(name="x"))
    before = hive3.get_catalogs().names
    with pytest.raises(t3.MetaException, match="catalogs are configured in catalogd's YAML"):
        hive3.create_catalog(t3.CreateCatalogRequest(t3.Catalog(name="x", locationUri="file:///tmp/x")))
    with pytest.raises(t3.MetaException, match="catalogs are configured in catalogd's YAML"):
        hive3.drop_catalog(t3.DropCatalogRequest(name="scratch"))
    with pytest.raises(t3.MetaException, match="catalogs are configured in catalogd's YAML"):
        hive3.alter_catalog(t3.AlterCatalogRequest(name="scratch", newCat=t3.Catalog(name="scratch")))
    assert hive3.get_catalogs().names == before


def test_hive_3_calls_a_2_3_metastore_does_not_have(hive3) -> None:
    from thrift.Thrift import TApplicationException

    with pytest.raises(TApplicationException) as e:
        hive3.get_valid_write_ids(t3.GetValidWriteIdsRequest(fullTableNames=["default.t"], validTxnList=""))
    assert e.value.type == TApplicationException.UNKNOWN_METHOD


def test_the_cache_answers_each_spelling_in_its_own(daemon_factory, unique_name) -> None:
    """With the metadata cache on, a Hive 3 read is cached in its client's spelling: the 2.3
    client's answer and error for the same call stay the 2.3 ones, and a write invalidates both."""
    from catalogd.client import CatalogClient

    from .helpers import embedded_catalog, free_port
    from .test_cache import metric

    cached = daemon_factory(catalogs=[embedded_catalog("main", metastore_port=free_port())], name="h3cache",
                            extra={"cache": {"ttl": "30s"}})
    db = unique_name("h3c")
    with CatalogClient(cached.address, timeout=60.0) as client:
        client.create_database(f"main.{db}")
        client.create_table(f"main.{db}.t", "id bigint")
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    transport = TTransport.TBufferedTransport(TSocket.TSocket(*cached.hms_address))
    hive3 = h3.Client(TBinaryProtocol.TBinaryProtocol(transport))
    transport.open()
    with closing(transport), hms_connection(cached.hms_address) as h2:
        for _ in range(2):
            assert hive3.get_table(f"@hive#{db}", "t").dbName == db
            assert h2.get_table(db, "t").dbName == db
            with pytest.raises(t3.NoSuchObjectException) as e:
                hive3.get_database(f"@hive#{db}_no")
            assert f"@hive#{db}_no" in e.value.message
            with pytest.raises(Exception) as plain:
                h2.get_database(f"{db}_no")
            assert "@hive#" not in str(plain.value)
        assert metric(cached, "catalogd_cache_hits_total", '{catalog="main"}') >= 4
        # A write through either spelling invalidates what both read.
        table = hive3.get_table(f"@hive#{db}", "t")
        table.parameters["h3"] = "yes"
        hive3.alter_table(f"@hive#{db}", "t", table)
        assert h2.get_table(db, "t").parameters.get("h3") == "yes"
        assert hive3.get_table(f"@hive#{db}", "t").parameters.get("h3") == "yes"
