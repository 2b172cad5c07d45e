"""The Hive 4 IDL overlay on hmsclient's 2.3 classes (catalogd.hive_idl)."""

from __future__ import annotations

from typing import Any

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TTransport

from catalogd.hive_idl import NEW_METHODS, ThriftHiveMetastore, ttypes
from catalogd.metastore.messages import CALL, REPLY, decode, encode, header


def _plain_round_trip(value: Any) -> Any:
    buf = TTransport.TMemoryBuffer()
    value.write(TBinaryProtocol.TBinaryProtocol(buf))
    out = type(value)()
    out.read(TBinaryProtocol.TBinaryProtocol(TTransport.TMemoryBuffer(buf.getvalue())))
    return out


def _accelerated_round_trip(method: str, value: Any, mtype: int = CALL) -> Any:
    message = encode(method, mtype, 7, value)
    return decode(type(value)(), message[len(header(method, mtype, 7)):])


def test_hive_4_fields_survive_both_codecs() -> None:
    args = ThriftHiveMetastore.get_table_req_args(
        req=ttypes.GetTableRequest(dbName="d", tblName="t", catName="spark", validWriteIdList="w:1"))
    for out in (_plain_round_trip(args), _accelerated_round_trip("get_table_req", args)):
        assert out.req.catName == "spark"
        assert out.req.validWriteIdList == "w:1"
        assert out == args


def test_nested_structs_use_the_grown_specs() -> None:
    table = ttypes.Table(tableName="t", dbName="d", catName="c",
                         sd=ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("a", "int", "")]))
    result = ThriftHiveMetastore.get_table_req_result(success=ttypes.GetTableResult(table=table))
    out = _accelerated_round_trip("get_table_req", result, REPLY)
    assert out.success.table.catName == "c"
    assert out.success.table.sd.cols[0].name == "a"


def test_a_2_3_message_decodes_as_before() -> None:
    # A Hive 2.3 client's get_table_args carry two strings; nothing new appears but the defaults.
    args = ThriftHiveMetastore.get_table_args(dbname="db", tbl_name="t")
    out = _accelerated_round_trip("get_table", args)
    assert (out.dbname, out.tbl_name) == ("db", "t")


def test_hive_4_methods_and_structs_exist() -> None:
    for method in ("get_catalogs", "get_catalog", "alter_table_req", "truncate_table_req",
                   "get_valid_write_ids", "get_partitions_by_names_req", "get_database_req"):
        assert method in NEW_METHODS
        assert hasattr(ThriftHiveMetastore, f"{method}_args")
        assert callable(getattr(ThriftHiveMetastore.Client, method))
    response = ttypes.GetCatalogsResponse(names=["hive"])
    out = _accelerated_round_trip("get_catalogs", ThriftHiveMetastore.get_catalogs_result(success=response), REPLY)
    assert out.success.names == ["hive"]
    # Methods Hive 4 removed stay, as 2.3 defined them.
    assert hasattr(ThriftHiveMetastore, "get_table_args")
    assert hasattr(ThriftHiveMetastore, "get_table_objects_by_name_args")


def test_new_exceptions_are_exceptions() -> None:
    error = ttypes.NoSuchCompactionException(message="gone")
    assert isinstance(error, Exception)
    with pytest.raises(ttypes.NoSuchCompactionException):
        raise error


def test_constructed_equals_decoded_and_bad_keywords_are_refused() -> None:
    built = ttypes.Database(name="d", catalogName="hive")
    assert _plain_round_trip(built) == built
    with pytest.raises(TypeError):
        ttypes.GetCatalogsResponse(nope=1)
