"""catalogd.hms.backend_dialect: a relayed get_table / get_table_objects_by_name said as an HMS 4 hears it."""

from __future__ import annotations

from thrift.Thrift import TApplicationException

from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.backend_dialect import relay_in_dialect
from catalogd.metastore.dialect import Dialect
from catalogd.metastore.messages import CALL, EXCEPTION, REPLY, Message, decode, encode, parse_message


class Hms4:
    """Answers call messages as HMS 4.0.1 would (only what these tests send)."""

    def __init__(self, has_old_calls: bool = False) -> None:
        self.has_old_calls = has_old_calls
        self.sent: list[str] = []

    def __call__(self, request: bytes) -> Message:
        call = parse_message(request)
        self.sent.append(call.name)
        if call.name == "get_table" and self.has_old_calls:
            result = ThriftHiveMetastore.get_table_result(success=hms.Table(dbName="d", tableName="t"))
            return parse_message(encode(call.name, REPLY, call.seqid, result))
        if call.name in ("get_table", "get_table_objects_by_name"):
            error = TApplicationException(TApplicationException.UNKNOWN_METHOD, f"Invalid method name: '{call.name}'")
            return parse_message(encode(call.name, EXCEPTION, call.seqid, error))
        if call.name == "get_table_req":
            req = decode(ThriftHiveMetastore.get_table_req_args(), call.body).req
            if req.tblName == "missing":
                result = ThriftHiveMetastore.get_table_req_result(o2=hms.NoSuchObjectException(message="not found"))
            else:
                table = hms.Table(dbName=req.dbName, tableName=req.tblName, tableType="EXTERNAL_TABLE")
                result = ThriftHiveMetastore.get_table_req_result(success=hms.GetTableResult(table=table))
            return parse_message(encode(call.name, REPLY, call.seqid, result))
        if call.name == "get_table_objects_by_name_req":
            req = decode(ThriftHiveMetastore.get_table_objects_by_name_req_args(), call.body).req
            if req.dbName == "gone":
                result = ThriftHiveMetastore.get_table_objects_by_name_req_result(
                    o3=hms.UnknownDBException(message="gone not found"))
            else:
                tables = [hms.Table(dbName=req.dbName, tableName=n) for n in req.tblNames]
                result = ThriftHiveMetastore.get_table_objects_by_name_req_result(
                    success=hms.GetTablesResult(tables=tables))
            return parse_message(encode(call.name, REPLY, call.seqid, result))
        raise AssertionError(call.name)


def _get_table(table: str, seqid: int) -> bytes:
    return encode("get_table", CALL, seqid, ThriftHiveMetastore.get_table_args(dbname="d", tbl_name=table))


def test_get_table_is_relayed_as_get_table_req_and_answered_as_get_table() -> None:
    backend, dialect = Hms4(), Dialect()
    reply = relay_in_dialect(dialect, backend, _get_table("t", 7), "catalog h4")
    assert (reply.name, reply.type, reply.seqid) == ("get_table", REPLY, 7)
    result = decode(ThriftHiveMetastore.get_table_result(), reply.body)
    assert (result.success.dbName, result.success.tableName) == ("d", "t")
    # Learnt: the next call goes straight to get_table_req.
    missing = relay_in_dialect(dialect, backend, _get_table("missing", 8), "catalog h4")
    assert backend.sent == ["get_table", "get_table_req", "get_table_req"]
    answer = decode(ThriftHiveMetastore.get_table_result(), missing.body)
    assert (missing.seqid, answer.success, answer.o2.message) == (8, None, "not found")


def test_a_backend_with_the_old_call_gets_the_bytes_as_sent() -> None:
    backend, dialect = Hms4(has_old_calls=True), Dialect()
    request = _get_table("t", 3)
    reply = relay_in_dialect(dialect, backend, request, "catalog h3")
    assert backend.sent == ["get_table"]
    assert decode(ThriftHiveMetastore.get_table_result(), reply.body).success.tableName == "t"
    assert dialect.lacking == frozenset()


def test_get_table_objects_by_name_and_its_undeclared_errors() -> None:
    backend, dialect = Hms4(), Dialect()
    args = ThriftHiveMetastore.get_table_objects_by_name_args(dbname="d", tbl_names=["a", "b"])
    reply = relay_in_dialect(dialect, backend, encode("get_table_objects_by_name", CALL, 5, args), "catalog h4")
    assert (reply.name, reply.type, reply.seqid) == ("get_table_objects_by_name", REPLY, 5)
    found = decode(ThriftHiveMetastore.get_table_objects_by_name_result(), reply.body).success
    assert [t.tableName for t in found] == ["a", "b"]
    # HMS 2.3's call declares no exception: the backend's UnknownDBException comes as an application error.
    gone = ThriftHiveMetastore.get_table_objects_by_name_args(dbname="gone", tbl_names=["a"])
    reply = relay_in_dialect(dialect, backend, encode("get_table_objects_by_name", CALL, 6, gone), "catalog h4")
    assert (reply.name, reply.type, reply.seqid) == ("get_table_objects_by_name", EXCEPTION, 6)
    error = decode(TApplicationException(), reply.body)
    assert "UnknownDBException: gone not found" in error.message


def test_other_calls_pass_untouched() -> None:
    sent: list[bytes] = []

    def send(request: bytes) -> Message:
        sent.append(request)
        return parse_message(encode("get_all_databases", REPLY, 1,
                                    ThriftHiveMetastore.get_all_databases_result(success=["default"])))

    request = encode("get_all_databases", CALL, 1, ThriftHiveMetastore.get_all_databases_args())
    relay_in_dialect(Dialect(), send, request, "catalog h4")
    assert sent == [request]
