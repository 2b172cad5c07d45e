"""The Hive 3.1 / 4.x method set on catalogd's HMS endpoint, backed by the embedded Hive 2.3 metastore.

A Hive 3 client (``pymetastore``'s Hive 3.1 IDL, the one tests/integration/test_hms_hive3_client.py
uses) and Hive 4's calls (sent with the IDL overlay's structs, as Hive 4's ``HiveMetaStoreClient``
sends them): reads and writes a 2.3 metastore does not know are answered through their 2.3
equivalents (``catalogd.hms.downgrade``), writes go through the location rules as their 2.3
equivalents do (victim directories under ``tmp_path``, outside ``main``'s warehouse), and what 2.3
cannot do at all is ``UNKNOWN_METHOD``, as an HMS 2.3 server answers it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest
from pymetastore.hive_metastore import ThriftHiveMetastore as h3
from pymetastore.hive_metastore import ttypes as t3
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType
from thrift.transport import TSocket, TTransport

from catalogd.client import CatalogClient
from catalogd.hive_idl import ThriftHiveMetastore as T4
from catalogd.hive_idl import ttypes as t4

from .helpers import hms_connection
from .test_write_rules import direct_partition, direct_table, intact, make_victim

pytestmark = pytest.mark.integration


class Hive4:
    """Sends any call of the IDL overlay (Hive 4.0.1's methods) and reads its result struct."""

    def __init__(self, protocol: Any) -> None:
        self.protocol = protocol
        self.seqid = 0

    def call(self, method: str, **fields: Any) -> Any:
        """The call's success value; its HMS exception raised; a TApplicationException raised."""
        self.seqid += 1
        out = self.protocol
        out.writeMessageBegin(method, TMessageType.CALL, self.seqid)
        getattr(T4, f"{method}_args")(**fields).write(out)
        out.writeMessageEnd()
        out.trans.flush()
        _, mtype, _ = out.readMessageBegin()
        if mtype == TMessageType.EXCEPTION:
            error = TApplicationException()
            error.read(out)
            out.readMessageEnd()
            raise error
        result = getattr(T4, f"{method}_result")()
        result.read(out)
        out.readMessageEnd()
        failure = next((v for k, v in vars(result).items() if k != "success" and v is not None), None)
        if failure is not None:
            raise failure
        return getattr(result, "success", None)


@pytest.fixture
def clients(hms_address: tuple[str, int]) -> Iterator[tuple[Any, Hive4]]:
    """A Hive 3.1-IDL client and a Hive 4 caller on one connection to the session daemon's endpoint."""
    transport = TTransport.TBufferedTransport(TSocket.TSocket(*hms_address))
    protocol = TBinaryProtocol.TBinaryProtocol(transport)
    hive3 = h3.Client(protocol)
    transport.open()
    with closing(transport):
        hive3.set_ugi("hive4", ["hive4"])
        yield hive3, Hive4(protocol)


def _message(call: Any) -> str:
    try:
        call()
    except (t4.MetaException, t4.InvalidOperationException, t3.MetaException, t3.InvalidOperationException) as e:
        return str(e.message)
    raise AssertionError("not refused")


def test_hive4_reads_are_answered_through_their_2_3_equivalents(clients, client, main_db, hms_address) -> None:
    hive3, hive4 = clients
    db = main_db.split(".")[1]
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    with hms_connection(hms_address) as c:
        c.append_partition(db, "p", ["1"])
        c.append_partition(db, "p", ["2"])
    # Hive 3's get_table_req with its catalog: a 2.3 metastore reads past the field it does not know.
    table = hive3.get_table_req(t3.GetTableRequest(dbName=db, tblName="p", catName="hive")).table
    assert (table.dbName, table.tableName) == (db, "p")
    found = hive4.call("get_database_req", request=t4.GetDatabaseRequest(name=db, catalogName="hive"))
    assert found.name == db
    by_names = t4.GetPartitionsByNamesRequest(db_name=db, tbl_name="p", names=["ds=1", "ds=2"])
    for _ in range(2):  # the second from the cache
        parts = hive4.call("get_partitions_by_names_req", req=by_names).partitions
        assert sorted(p.values for p in parts) == [["1"], ["2"]]
    every = hive4.call("get_partitions_req", req=t4.PartitionsRequest(dbName=db, tblName="p"))
    assert len(every.partitions) == 2
    one = hive4.call("get_partition_req", req=t4.GetPartitionRequest(dbName=db, tblName="p", partVals=["2"]))
    assert one.partition.values == ["2"]
    fields = hive4.call("get_fields_req", req=t4.GetFieldsRequest(dbName=db, tblName="p"))
    assert [f.name for f in fields.fields] == ["id"]
    names = hive4.call("fetch_partition_names_req", partitionReq=t4.PartitionsRequest(dbName=db, tblName="p"))
    assert sorted(names) == ["ds=1", "ds=2"]
    # Asked with what 2.3 cannot give (statistics with the partitions): as a 2.3 server answers.
    with pytest.raises(TApplicationException) as unknown:
        hive4.call("get_partitions_by_names_req", req=t4.GetPartitionsByNamesRequest(
            db_name=db, tbl_name="p", names=["ds=1"], get_col_stats=True, engine="hive"))
    assert unknown.value.type == TApplicationException.UNKNOWN_METHOD
    # A write through the new methods invalidates the cached answer.
    part = parts[0]
    part.parameters = {**(part.parameters or {}), "k": "v"}
    hive4.call("alter_partitions_req", req=t4.AlterPartitionsRequest(dbName=db, tableName="p", partitions=[part]))
    again = hive4.call("get_partitions_by_names_req", req=by_names).partitions
    assert {p.values[0]: (p.parameters or {}).get("k") for p in again}[part.values[0]] == "v"
    with pytest.raises(t4.NoSuchObjectException):
        hive4.call("get_database_req", request=t4.GetDatabaseRequest(name=f"{db}_none"))
    # Transactions: what 2.3's TxnHandler has is answered by it; write ids it does not have are
    # UNKNOWN_METHOD, as an HMS 2.3 server answers them (Hive 3 clients and Trino handle that).
    txns = hive4.call("get_open_txns_req", getOpenTxnsRequest=t4.GetOpenTxnsRequest(excludeTxnTypes=[]))
    assert txns.txn_high_water_mark is not None
    with pytest.raises(TApplicationException) as unknown:
        hive4.call("get_valid_write_ids", rqst=t4.GetValidWriteIdsRequest(fullTableNames=[f"{db}.p"],
                                                                          validTxnList=""))
    assert unknown.value.type == TApplicationException.UNKNOWN_METHOD


def test_hive4_writes_are_made_and_judged_as_their_2_3_equivalents(clients, client, main_db, hms, tmp_path) -> None:
    hive3, hive4 = clients
    db = main_db.split(".")[1]
    victim = make_victim(tmp_path)
    made = client.create_table(f"{main_db}.t", "id bigint")
    # Hive 3's alter_table_req: made as alter_table_with_environment_context.
    table = hive3.get_table(db, "t")
    table.parameters = {**(table.parameters or {}), "made.by": "hive 3"}
    hive3.alter_table_req(t3.AlterTableRequest(catName="hive", dbName=db, tableName="t", table=table))
    assert hms.call("get_table", db, "t").parameters.get("made.by") == "hive 3"
    # ... and judged as one: a move onto a victim is refused, the table stays where it is.
    table.sd.location = victim.as_uri()
    assert "alter_table_req refused" in _message(lambda: hive3.alter_table_req(
        t3.AlterTableRequest(dbName=db, tableName="t", table=table)))
    assert client.get_table(f"{main_db}.t").location == made.location
    # catalogd's own parameters stay its own.
    table.sd.location = made.location
    table.parameters["catalogd.stage.x"] = "1"
    assert "catalogd's own" in _message(lambda: hive3.alter_table_req(
        t3.AlterTableRequest(dbName=db, tableName="t", table=table)))
    # Hive 4's create_table_req on a victim: refused as create_table is.
    new = hive3.get_table(db, "t")
    new.tableName, new.sd.location = "v", victim.as_uri()
    assert "create_table_req refused" in _message(lambda: hive4.call(
        "create_table_req", request=t4.CreateTableRequest(table=_as_hive4(new))))
    assert "v" not in client.list_tables(main_db)
    # A drop_table_req of a table made on a victim behind catalogd's back deletes nothing there.
    direct_table(hms, db, "d", victim.as_uri())
    hive4.call("drop_table_req", dropTableReq=t4.DropTableRequest(dbName=db, tableName="d", deleteData=True))
    assert "d" not in client.list_tables(main_db)
    assert intact(victim)


def test_partition_renames_and_truncates_are_confined(clients, client, main_db, hms, tmp_path) -> None:
    hive3, hive4 = clients
    db = main_db.split(".")[1]
    victim = make_victim(tmp_path)
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    direct_partition(hms, db, "p", "1", victim.as_uri())
    part = hms.call("get_partition", db, "p", ["1"])
    part.values = ["2"]
    assert "outside its table" in _message(lambda: hive4.call("rename_partition_req", req=t4.RenamePartitionRequest(
        dbName=db, tableName="p", partVals=["1"], newPart=_as_hive4(part))))
    # A truncate of a partition on a victim: refused before any metastore sees it (Hive 3's and 4's).
    assert "truncate_table of table" in _message(lambda: hive3.truncate_table(db, "p", ["ds=1"]))
    assert "truncate_table_req of table" in _message(lambda: hive4.call(
        "truncate_table_req", req=t4.TruncateTableRequest(dbName=db, tableName="p", partNames=["ds=1"])))
    # Inside its table, a partition is renamed through rename_partition.
    hive4.call("append_partition_req", appendPartitionsReq=t4.AppendPartitionsRequest(
        dbName=db, tableName="p", partVals=["3"]))
    own = hms.call("get_partition", db, "p", ["3"])
    own.values = ["4"]
    hive4.call("rename_partition_req", req=t4.RenamePartitionRequest(dbName=db, tableName="p", partVals=["3"],
                                                                     newPart=own))
    assert sorted(hms.call("get_partition_names", db, "p", -1)) == ["ds=1", "ds=4"]
    # An external table's files are never truncated; a managed table's own directory passes the rules,
    # and a Hive 2.3 metastore, which has no truncate, answers as an HMS 2.3 server does.
    ext = hms.call("get_table", db, "p")
    ext.tableName, ext.tableType, ext.partitionKeys = "x", "EXTERNAL_TABLE", []
    ext.parameters, ext.sd.location = {"EXTERNAL": "TRUE"}, victim.as_uri()
    hms.call("create_table", ext, idempotent=False)
    assert "not a managed table" in _message(lambda: hive3.truncate_table(db, "x", None))
    client.create_table(f"{main_db}.m", "id bigint")
    with pytest.raises(TApplicationException) as unknown:
        hive4.call("truncate_table_req", req=t4.TruncateTableRequest(dbName=db, tableName="m"))
    assert unknown.value.type == TApplicationException.UNKNOWN_METHOD
    # Change management moves or deletes any path it is given: never relayed.
    assert "cm_recycle refused" in _message(lambda: hive3.cm_recycle(
        t3.CmRecycleRequest(dataPath=victim.as_uri(), purge=True)))
    assert intact(victim)


def _as_hive4(struct: Any) -> Any:
    """A struct of the Hive 3.1 IDL (pymetastore's) or the daemon's embedded client as the overlay's."""
    from thrift.TSerialization import deserialize, serialize

    return deserialize(getattr(t4, type(struct).__name__)(), serialize(struct))


def test_memory_and_read_only_catalogs_answer_hive4_calls_as_their_2_3_equivalents(clients, main_db,
                                                                                    unique_name) -> None:
    hive3, hive4 = clients
    db = f"scratch__{unique_name('h4')}"
    hive3.create_database(t3.Database(name=db, parameters={}))
    try:
        new = t4.Table(tableName="t", dbName=db, tableType="MANAGED_TABLE", parameters={}, partitionKeys=[
            t4.FieldSchema("ds", "string", None)], sd=t4.StorageDescriptor(
            cols=[t4.FieldSchema("id", "int", None)], serdeInfo=t4.SerDeInfo(parameters={}), parameters={}))
        # A memory catalog answers the 2.3 IDL: each call is said there.
        hive4.call("create_table_req", request=t4.CreateTableRequest(table=new))
        assert hive4.call("get_database_req", request=t4.GetDatabaseRequest(name=db)).name == db
        hive4.call("append_partition_req", appendPartitionsReq=t4.AppendPartitionsRequest(
            dbName=db, tableName="t", partVals=["1"]))
        parts = hive4.call("get_partitions_by_names_req", req=t4.GetPartitionsByNamesRequest(
            db_name=db, tbl_name="t", names=["ds=1"])).partitions
        assert [(p.dbName, p.values) for p in parts] == [(db, ["1"])]
        table = hive3.get_table(db, "t")
        table.parameters = {**(table.parameters or {}), "made.by": "hive 4"}
        hive4.call("alter_table_req", req=t4.AlterTableRequest(dbName=db, tableName="t", table=_as_hive4(table)))
        assert hive3.get_table(db, "t").parameters["made.by"] == "hive 4"
        hive4.call("drop_table_req", dropTableReq=t4.DropTableRequest(dbName=db, tableName="t"))
        assert hive3.get_all_tables(db) == []
    finally:
        hive3.drop_database(db, True, True)
    # A read-only catalog refuses the new writes as it refuses the old.
    ro = f"ro__{main_db.split('.')[1]}"
    assert "read-only" in _message(lambda: hive4.call("truncate_table_req", req=t4.TruncateTableRequest(
        dbName=ro, tableName="t")))
    assert "read-only" in _message(lambda: hive3.alter_table_req(t3.AlterTableRequest(
        dbName=ro, tableName="t", table=t3.Table(dbName=ro, tableName="t"))))


def test_hive4_reads_share_the_cache_and_hive4_writes_invalidate_it(daemon_factory) -> None:
    from .helpers import embedded_catalog, free_port, metastore_key_file
    from .test_cache import backing, metric

    cached = daemon_factory(catalogs=[embedded_catalog("main", metastore_port=free_port())], name="h4cache",
                            extra={"cache": {"ttl": "30s"}})
    with CatalogClient(cached.address, timeout=60.0) as client, hms_connection(cached.hms_address) as endpoint:
        client.create_database("main.shop")
        client.create_table("main.shop.orders", "id bigint", partitioned_by="ds string")
        client.add_partition("main.shop.orders", {"ds": "1"})
        hive4 = Hive4(endpoint._oprot)
        by_names = t4.GetPartitionsByNamesRequest(db_name="shop", tbl_name="orders", names=["ds=1"])

        def params() -> dict[str, str]:
            return hive4.call("get_partitions_by_names_req", req=by_names).partitions[0].parameters or {}

        assert "behind" not in params()  # cached now
        hits = metric(cached, "catalogd_cache_hits_total", '{catalog="main"}')
        with hms_connection(backing(cached), key_file=metastore_key_file(cached.data_dir)) as direct:
            part = direct.get_partition("shop", "orders", ["1"])
            part.parameters["behind"] = "yes"
            direct.alter_partition("shop", "orders", part)
        # Within the TTL the Hive 4 read answers from the cache, as get_partitions_by_names does.
        assert "behind" not in params()
        assert metric(cached, "catalogd_cache_hits_total", '{catalog="main"}') >= hits + 1
        # A Hive 4 write through the endpoint invalidates the table's entries: both changes show.
        mine = endpoint.get_partition("shop", "orders", ["1"])
        mine.parameters["mine"] = "1"
        hive4.call("alter_partitions_req", req=t4.AlterPartitionsRequest(dbName="shop", tableName="orders",
                                                                         partitions=[mine]))
        assert (params().get("behind"), params().get("mine")) == ("yes", "1")
        fields = t4.GetFieldsRequest(dbName="shop", tblName="orders")
        assert [f.name for f in hive4.call("get_fields_req", req=fields).fields] == ["id"]
        table = endpoint.get_table("shop", "orders")
        table.sd.cols = [*table.sd.cols, t4.FieldSchema("name", "string", None)]
        hive4.call("alter_table_req", req=t4.AlterTableRequest(dbName="shop", tableName="orders", table=table))
        assert [f.name for f in hive4.call("get_fields_req", req=fields).fields] == ["id", "name"]
