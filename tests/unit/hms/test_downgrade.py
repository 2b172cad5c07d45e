"""How a Hive 3.1 / 4.x call is said in Hive 2.3 (catalogd.hms.downgrade), on the IDL overlay's structs."""

from __future__ import annotations

from typing import Any

import pytest
from thrift.Thrift import TApplicationException

from catalogd.hive_idl import ThriftHiveMetastore as T
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import downgrade, methods
from catalogd.metastore.messages import EXCEPTION, REPLY, decode, encode, parse_message

#: The Hive 2.3 IDL's methods (hmsclient's generated code before the overlay).
HIVE2 = frozenset({
    "get_database", "create_database", "alter_database", "drop_database", "create_table_with_constraints",
    "create_table_with_environment_context", "alter_table_with_environment_context",
    "drop_table_with_environment_context", "get_fields_with_environment_context",
    "get_schema_with_environment_context", "get_partitions", "get_partition_names", "get_partition",
    "get_partitions_by_names", "get_partitions_by_filter", "get_partition_names_ps", "get_partitions_ps_with_auth",
    "get_partitions_with_auth", "append_partition_with_environment_context",
    "append_partition_by_name_with_environment_context", "drop_partition_with_environment_context",
    "drop_partition_by_name_with_environment_context", "alter_partitions_with_environment_context",
    "append_partition", "append_partition_by_name", "drop_partition", "drop_partition_by_name",
    "rename_partition", "set_aggr_stats_for", "get_open_txns", "get_partitions_by_expr",
})


def args(method: str, **fields: Any) -> Any:
    return getattr(T, f"{method}_args")(**fields)


def result(method: str, **fields: Any) -> Any:
    return getattr(T, f"{method}_result")(**fields)


def table(db: str = "db", name: str = "t", **params: str) -> Any:
    return hms.Table(dbName=db, tableName=name, parameters=dict(params),
                     sd=hms.StorageDescriptor(location="file:/w/t"))


def test_every_equivalent_is_a_hive_2_3_call_of_a_classified_method() -> None:
    for method in downgrade.EQUIVALENTS:
        assert methods.kind(method) is not None, method
        assert method not in HIVE2


# ---------------------------------------------------------------- tables


def test_alter_table_req_is_alter_table_with_environment_context() -> None:
    new = table(comment="x")
    context = hms.EnvironmentContext(properties={"CASCADE": "true"})
    req = args("alter_table_req", req=hms.AlterTableRequest(catName="hive", dbName="db", tableName="t", table=new,
                                                             environmentContext=context, writeId=-1))
    method, said = downgrade.as_hive2("alter_table_req", req)
    assert method == "alter_table_with_environment_context"
    assert (said.dbname, said.tbl_name, said.new_tbl, said.environment_context) == ("db", "t", new, context)
    answer = downgrade.result_of("alter_table_req", req, result(method))
    assert isinstance(answer, T.alter_table_req_result) and answer.success == hms.AlterTableResponse()


def test_a_conditional_alter_cannot_be_said_in_2_3_but_is_judged_as_an_alter() -> None:
    req = args("alter_table_req", req=hms.AlterTableRequest(dbName="db", tableName="t", table=table(),
                                                             expectedParameterKey="metadata_location",
                                                             expectedParameterValue="s3://old"))
    assert downgrade.as_hive2("alter_table_req", req) is None
    method, said = downgrade.judged_as("alter_table_req", req)
    assert method == "alter_table_with_environment_context" and said.new_tbl is req.req.table


def test_errors_keep_their_type_in_the_new_result() -> None:
    req = args("alter_table_req", req=hms.AlterTableRequest(dbName="db", tableName="t", table=table()))
    failed = result("alter_table_with_environment_context", o1=hms.InvalidOperationException(message="no"))
    answer = downgrade.result_of("alter_table_req", req, failed)
    assert isinstance(answer.o1, hms.InvalidOperationException) and answer.o1.message == "no"
    failed = result("alter_table_with_environment_context", o2=hms.MetaException(message="down"))
    assert downgrade.result_of("alter_table_req", req, failed).o2.message == "down"


def test_create_table_req_with_2_3_constraints_and_without() -> None:
    plain = args("create_table_req", request=hms.CreateTableRequest(table=table()))
    assert downgrade.as_hive2("create_table_req", plain)[0] == "create_table_with_environment_context"
    key = hms.SQLPrimaryKey(table_db="db", table_name="t", column_name="id", key_seq=1)
    keyed = args("create_table_req", request=hms.CreateTableRequest(table=table(), primaryKeys=[key]))
    method, said = downgrade.as_hive2("create_table_req", keyed)
    assert method == "create_table_with_constraints" and said.primaryKeys == [key] and said.foreignKeys == []
    unique = hms.SQLUniqueConstraint(table_db="db", table_name="t", column_name="id", key_seq=1)
    hive3 = args("create_table_req", request=hms.CreateTableRequest(table=table(), uniqueConstraints=[unique]))
    assert downgrade.as_hive2("create_table_req", hive3) is None  # 2.3 has no unique constraints
    # ... but its table is judged as any create's.
    assert downgrade.judged_as("create_table_req", hive3)[1].tbl is hive3.request.table


def test_drop_table_req_and_its_default_delete() -> None:
    req = args("drop_table_req", dropTableReq=hms.DropTableRequest(catalogName="hive", dbName="db", tableName="t"))
    method, said = downgrade.as_hive2("drop_table_req", req)
    assert method == "drop_table_with_environment_context"
    assert (said.dbname, said.name, said.deleteData) == ("db", "t", True)
    keep = args("drop_table_req", dropTableReq=hms.DropTableRequest(dbName="db", tableName="t", deleteData=False,
                                                                     dropPartitions=False))
    assert downgrade.as_hive2("drop_table_req", keep) is None


@pytest.mark.parametrize(("method", "field", "hive2", "response"), [
    ("get_fields_req", "req", "get_fields_with_environment_context", hms.GetFieldsResponse),
    ("get_schema_req", "req", "get_schema_with_environment_context", hms.GetSchemaResponse),
])
def test_fields_and_schema(method: str, field: str, hive2: str, response: type) -> None:
    request = (hms.GetFieldsRequest if method == "get_fields_req" else hms.GetSchemaRequest)(dbName="db",
                                                                                            tblName="t")
    call = args(method, **{field: request})
    said_method, said = downgrade.as_hive2(method, call)
    assert said_method == hive2 and (said.db_name, said.table_name) == ("db", "t")
    cols = [hms.FieldSchema("id", "int", None)]
    assert downgrade.result_of(method, call, result(hive2, success=cols)).success == response(fields=cols)


# ---------------------------------------------------------------- databases


def test_database_requests() -> None:
    get = args("get_database_req", request=hms.GetDatabaseRequest(name="db", catalogName="hive"))
    assert downgrade.as_hive2("get_database_req", get)[1].name == "db"
    found = hms.Database(name="db")
    assert downgrade.result_of("get_database_req", get, result("get_database", success=found)).success is found

    create = args("create_database_req", createDatabaseRequest=hms.CreateDatabaseRequest(
        databaseName="db", locationUri="file:/w/db.db", parameters={"a": "b"}))
    method, said = downgrade.as_hive2("create_database_req", create)
    assert method == "create_database"
    assert (said.database.name, said.database.locationUri, said.database.parameters) == (
        "db", "file:/w/db.db", {"a": "b"})
    managed = args("create_database_req", createDatabaseRequest=hms.CreateDatabaseRequest(
        databaseName="db", managedLocationUri="file:/w/managed"))
    assert downgrade.as_hive2("create_database_req", managed) is None  # 2.3 has one location
    judged = downgrade.judged_as("create_database_req", managed)[1]
    assert judged.database.managedLocationUri == "file:/w/managed"  # claimed as the other location is

    alter = args("alter_database_req", alterDbReq=hms.AlterDatabaseRequest(oldDbName="db", newDb=found))
    assert downgrade.as_hive2("alter_database_req", alter)[1].db is found

    drop = args("drop_database_req", req=hms.DropDatabaseRequest(name="db", ignoreUnknownDb=True, cascade=True))
    method, said = downgrade.as_hive2("drop_database_req", drop)
    assert (method, said.name, said.deleteData, said.cascade) == ("drop_database", "db", True, True)
    missing = result("drop_database", o1=hms.NoSuchObjectException(message="gone"))
    assert downgrade.result_of("drop_database_req", drop, missing) == T.drop_database_req_result()
    strict = args("drop_database_req", req=hms.DropDatabaseRequest(name="db"))
    assert downgrade.result_of("drop_database_req", strict, missing).o1.message == "gone"
    soft = args("drop_database_req", req=hms.DropDatabaseRequest(name="db", softDelete=True))
    assert downgrade.as_hive2("drop_database_req", soft) is None


# ---------------------------------------------------------------- partitions


def test_get_partitions_by_names_req() -> None:
    req = args("get_partitions_by_names_req", req=hms.GetPartitionsByNamesRequest(
        db_name="db", tbl_name="t", names=["ds=1"], processorCapabilities=["HIVEFULLACIDREAD"]))
    method, said = downgrade.as_hive2("get_partitions_by_names_req", req)
    assert (method, said.db_name, said.tbl_name, said.names) == ("get_partitions_by_names", "db", "t", ["ds=1"])
    parts = [hms.Partition(values=["1"], dbName="db", tableName="t")]
    answer = downgrade.result_of("get_partitions_by_names_req", req, result(method, success=parts))
    assert answer.success == hms.GetPartitionsByNamesResult(partitions=parts)
    # Statistics with the partitions: 2.3 has none to give; never an answer without them.
    stats = args("get_partitions_by_names_req", req=hms.GetPartitionsByNamesRequest(
        db_name="db", tbl_name="t", names=["ds=1"], get_col_stats=True))
    assert downgrade.as_hive2("get_partitions_by_names_req", stats) is None


def test_partition_reads() -> None:
    get = args("get_partitions_req", req=hms.PartitionsRequest(dbName="db", tblName="t"))
    assert downgrade.as_hive2("get_partitions_req", get)[1].max_parts == -1
    parts = [hms.Partition(values=["1"])]
    assert downgrade.result_of("get_partitions_req", get, result("get_partitions", success=parts)).success == \
        hms.PartitionsResponse(partitions=parts)
    projected = args("get_partitions_req", req=hms.PartitionsRequest(dbName="db", tblName="t",
                                                                     skipColumnSchemaForPartition=True))
    assert downgrade.as_hive2("get_partitions_req", projected) is None
    one = args("get_partition_req", req=hms.GetPartitionRequest(dbName="db", tblName="t", partVals=["1"]))
    assert downgrade.as_hive2("get_partition_req", one)[1].part_vals == ["1"]
    assert downgrade.result_of("get_partition_req", one, result("get_partition", success=parts[0])).success == \
        hms.GetPartitionResponse(partition=parts[0])
    names = args("fetch_partition_names_req", partitionReq=hms.PartitionsRequest(dbName="db", tblName="t",
                                                                                 maxParts=10))
    assert downgrade.as_hive2("fetch_partition_names_req", names)[0] == "get_partition_names"
    ps = args("get_partitions_ps_with_auth_req", req=hms.GetPartitionsPsWithAuthRequest(
        dbName="db", tblName="t", userName="u", groupNames=["g"]))
    assert downgrade.as_hive2("get_partitions_ps_with_auth_req", ps)[0] == "get_partitions_with_auth"
    ps.req.partVals = ["1"]
    assert downgrade.as_hive2("get_partitions_ps_with_auth_req", ps)[0] == "get_partitions_ps_with_auth"
    filtered = args("get_partitions_by_filter_req", req=hms.GetPartitionsByFilterRequest(
        dbName="db", tblName="t", filter="ds > '1'", maxParts=5))
    said = downgrade.as_hive2("get_partitions_by_filter_req", filtered)[1]
    assert (said.filter, said.max_parts) == ("ds > '1'", 5)


def test_partitions_by_expression_as_a_spec() -> None:
    req = args("get_partitions_spec_by_expr", req=hms.PartitionsByExprRequest(
        dbName="db", tblName="t", expr=b"\x01", defaultPartitionName="__HIVE_DEFAULT_PARTITION__", maxParts=-1,
        catName="hive"))
    method, said = downgrade.as_hive2("get_partitions_spec_by_expr", req)
    assert method == "get_partitions_by_expr" and (said.req.expr, said.req.tblName) == (b"\x01", "t")
    parts = [hms.Partition(values=["1"], dbName="db", tableName="t")]
    answer = downgrade.result_of("get_partitions_spec_by_expr", req, result(method, success=hms.PartitionsByExprResult(
        partitions=parts, hasUnknownPartitions=False)))
    spec = answer.success.partitionsSpec
    assert [(s.dbName, s.tableName, s.partitionList.partitions) for s in spec] == [("db", "t", parts)]
    assert answer.success.hasUnknownPartitions is False
    req.req.order = "ds desc"  # an order 2.3 would not keep
    assert downgrade.as_hive2("get_partitions_spec_by_expr", req) is None


def test_partition_writes() -> None:
    part = hms.Partition(values=["2"], dbName="db", tableName="t")
    rename = args("rename_partition_req", req=hms.RenamePartitionRequest(dbName="db", tableName="t", partVals=["1"],
                                                                          newPart=part))
    method, said = downgrade.as_hive2("rename_partition_req", rename)
    assert (method, said.part_vals, said.new_part) == ("rename_partition", ["1"], part)
    assert downgrade.result_of("rename_partition_req", rename, result(method)).success == \
        hms.RenamePartitionResponse()
    rename.req.clonePart = True
    assert downgrade.as_hive2("rename_partition_req", rename) is None
    assert downgrade.judged_as("rename_partition_req", rename)[0] == "rename_partition"

    by_name = args("drop_partition_req", dropPartitionReq=hms.DropPartitionRequest(dbName="db", tblName="t",
                                                                                    partName="ds=1"))
    method, said = downgrade.as_hive2("drop_partition_req", by_name)
    assert (method, said.part_name, said.deleteData) == ("drop_partition_by_name", "ds=1", True)
    assert downgrade.result_of("drop_partition_req", by_name, result(method, success=True)).success is True
    by_name.dropPartitionReq.environmentContext = hms.EnvironmentContext(properties={"ifPurge": "true"})
    assert downgrade.as_hive2("drop_partition_req", by_name)[0] == "drop_partition_by_name_with_environment_context"
    by_values = args("drop_partition_req", dropPartitionReq=hms.DropPartitionRequest(dbName="db", tblName="t",
                                                                                      partVals=["1"]))
    assert downgrade.as_hive2("drop_partition_req", by_values)[1].part_vals == ["1"]
    append = args("append_partition_req", appendPartitionsReq=hms.AppendPartitionsRequest(
        dbName="db", tableName="t", partVals=["1"]))
    assert downgrade.as_hive2("append_partition_req", append)[0] == "append_partition"
    append.appendPartitionsReq.environmentContext = hms.EnvironmentContext(properties={})
    assert downgrade.as_hive2("append_partition_req", append)[0] == "append_partition_with_environment_context"
    append.appendPartitionsReq.name = "ds=1"
    assert downgrade.as_hive2("append_partition_req", append)[0] == \
        "append_partition_by_name_with_environment_context"
    alter = args("alter_partitions_req", req=hms.AlterPartitionsRequest(dbName="db", tableName="t",
                                                                         partitions=[part]))
    method, said = downgrade.as_hive2("alter_partitions_req", alter)
    assert (method, said.new_parts) == ("alter_partitions_with_environment_context", [part])


def test_statistics_and_open_transactions() -> None:
    stats = hms.ColumnStatistics(statsDesc=hms.ColumnStatisticsDesc(isTblLevel=True, dbName="db", tableName="t"),
                                 statsObj=[])
    req = args("update_table_column_statistics_req", req=hms.SetPartitionsStatsRequest(colStats=[stats],
                                                                                      engine="hive"))
    method, said = downgrade.as_hive2("update_table_column_statistics_req", req)
    assert method == "set_aggr_stats_for" and said.request.colStats == [stats]
    assert downgrade.result_of("update_table_column_statistics_req", req,
                               result(method, success=True)).success == hms.SetPartitionsStatsResponse(result=True)
    txns = args("get_open_txns_req", getOpenTxnsRequest=hms.GetOpenTxnsRequest(excludeTxnTypes=[]))
    assert downgrade.as_hive2("get_open_txns_req", txns)[0] == "get_open_txns"


@pytest.mark.parametrize(("method", "request_type", "response", "field"), [
    ("get_not_null_constraints", "NotNullConstraintsRequest", "NotNullConstraintsResponse", "notNullConstraints"),
    ("get_unique_constraints", "UniqueConstraintsRequest", "UniqueConstraintsResponse", "uniqueConstraints"),
    ("get_check_constraints", "CheckConstraintsRequest", "CheckConstraintsResponse", "checkConstraints"),
    ("get_default_constraints", "DefaultConstraintsRequest", "DefaultConstraintsResponse", "defaultConstraints"),
])
def test_hive_3_constraints_of_a_2_3_table_are_none(method: str, request_type: str, response: str,
                                                    field: str) -> None:
    # Flink's Hive 3.1 shim asks get_not_null_constraints of every table it opens and fails on
    # any error: a 2.3 table has no such constraints, and a missing table stays missing.
    req = args(method, request=getattr(hms, request_type)(catName="hive", db_name="db", tbl_name="t"))
    hive2, said = downgrade.as_hive2(method, req)
    assert hive2 == "get_table" and (said.dbname, said.tbl_name) == ("db", "t")
    answer = downgrade.result_of(method, req, result(hive2, success=table()))
    assert answer.success == getattr(hms, response)(**{field: []})
    missing = downgrade.result_of(method, req, result(hive2, o2=hms.NoSuchObjectException(message="db.t")))
    assert missing.success is None and missing.o2 == hms.NoSuchObjectException(message="db.t")


# ---------------------------------------------------------------- the reply


def test_answer_makes_the_2_3_call_and_replies_as_the_new_method() -> None:
    calls: list[tuple[str, Any]] = []

    def call(method: str, hive2: Any) -> Any:
        calls.append((method, hive2))
        return result(method, success=[hms.Partition(values=["1"])])

    req = args("get_partitions_by_names_req", req=hms.GetPartitionsByNamesRequest(db_name="db", tbl_name="t",
                                                                                 names=["ds=1"]))
    reply = parse_message(downgrade.answer("get_partitions_by_names_req", 7, req, call))
    assert (reply.name, reply.type, reply.seqid) == ("get_partitions_by_names_req", REPLY, 7)
    decoded = decode(T.get_partitions_by_names_req_result(), reply.body)
    assert [p.values for p in decoded.success.partitions] == [["1"]]
    assert [m for m, _ in calls] == ["get_partitions_by_names"]
    assert downgrade.answer("truncate_table_req", 1, args("truncate_table_req"), call) is None
    assert downgrade.answer("get_partition_names_req", 1, args("get_partition_names_req"), call) is None


def test_an_error_with_no_place_in_the_new_result_is_an_application_exception() -> None:
    req = args("get_open_txns_req", getOpenTxnsRequest=hms.GetOpenTxnsRequest())

    def call(method: str, hive2: Any) -> Any:
        return result("get_partitions", o1=hms.NoSuchObjectException(message="odd"))

    reply = parse_message(downgrade.answer("get_open_txns_req", 3, req, call))
    assert reply.type == EXCEPTION and "odd" in decode(TApplicationException(), reply.body).message


def test_unknown_method_is_told_from_other_exceptions() -> None:
    unknown = TApplicationException(TApplicationException.UNKNOWN_METHOD, "Invalid method name: 'x'")
    assert downgrade.is_unknown_method(parse_message(encode("x", EXCEPTION, 1, unknown)))
    internal = TApplicationException(TApplicationException.INTERNAL_ERROR, "boom")
    assert not downgrade.is_unknown_method(parse_message(encode("x", EXCEPTION, 1, internal)))
    assert not downgrade.is_unknown_method(parse_message(encode("get_open_txns", REPLY, 1, result("get_open_txns"))))
