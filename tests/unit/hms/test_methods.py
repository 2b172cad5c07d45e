"""The HMS method table: every IDL method classified, every database name found and renamed both ways."""

from __future__ import annotations

import copy
import inspect
import re
from typing import Any

import pytest
from thrift.Thrift import TType

from catalogd.hive_idl import ThriftHiveMetastore, ttypes
from catalogd.hms import methods
from catalogd.hms.methods import PATTERN_METHODS, STRUCT_DB_FIELDS, Kind

IDL = sorted(n[:-5] for n in dir(ThriftHiveMetastore) if n.endswith("_args"))
STRUCTS = sorted(
    (c for c in vars(ttypes).values() if inspect.isclass(c) and getattr(c, "thrift_spec", None)),
    key=lambda c: c.__name__,
)
GLOBAL = (Kind.GLOBAL_READ, Kind.GLOBAL_WRITE)

# A field that holds a database name: "db" as a word part (dbName, db_name, pktable_db, ...).
DB_FIELD = re.compile(r"(^|_)db($|_)|db(name|_name)", re.IGNORECASE)
# Fields holding a database that do not look like one: Database.name; Hive 4's requests name it their own way.
EXTRA_DB_FIELDS = {(ttypes.Database, "name")} | {
    (getattr(ttypes, c), f) for c, f in (("CreateDatabaseRequest", "databaseName"), ("DropDatabaseRequest", "name"),
                                         ("GetDatabaseRequest", "name"), ("GetTablesExtRequest", "database"),
                                         ("WriteEventInfo", "database"))
    if hasattr(ttypes, c)
}
# Fields that look like one but are not: a remote database's name behind a data connector (Hive 4).
NOT_DB_FIELDS = {(getattr(ttypes, c), "remote_dbname") for c in ("Database", "CreateDatabaseRequest")
                 if hasattr(ttypes, c)}
# Direct args that name a database without "db" in their name.
EXTRA_DB_ARGS = {("get_database", "name"), ("drop_database", "name")}


def add(name: str) -> str:
    return "p__" + name


def strip(name: str) -> str:
    assert name.startswith("p__"), name
    return name[3:]


def fill_value(ttype: int, targs: Any, label: str, depth: int = 0, within: frozenset[type] = frozenset()) -> Any:
    """A value of a thrift type with every field set (strings = their field's name)."""
    if ttype == TType.STRING:
        return label
    if ttype == TType.BOOL:
        return True
    if ttype in (TType.BYTE, TType.I16, TType.I32, TType.I64):
        return 7
    if ttype == TType.DOUBLE:
        return 1.5
    if ttype == TType.STRUCT:
        return fill(targs[0], depth + 1, within)
    if ttype == TType.LIST:
        return [fill_value(targs[0], targs[1], label, depth, within)]
    if ttype == TType.SET:
        return {fill_value(targs[0], targs[1], label, depth, within)}
    if ttype == TType.MAP:
        key = fill_value(targs[0], targs[1], label + "_k", depth, within)
        return {tuple(key) if isinstance(key, list) else key: fill_value(targs[2], targs[3], label, depth, within)}
    raise AssertionError(f"unknown thrift type {ttype}")


def fill(cls: type, depth: int = 0, within: frozenset[type] = frozenset()) -> Any:
    """Every field set, but a struct inside itself (Hive 4's Table -> CreationMetadata -> SourceTable -> Table)."""
    assert depth < 12, f"recursive struct {cls}"
    obj = cls()
    for s in cls.thrift_spec or ():
        if s is not None:
            setattr(obj, s[2], None if _cycles(s[1], s[3], within | {cls}) else
                    fill_value(s[1], s[3], s[2], depth, within | {cls}))
    return obj


def _cycles(ttype: int, targs: Any, within: frozenset[type]) -> bool:
    if ttype == TType.STRUCT:
        return targs[0] in within
    if ttype in (TType.LIST, TType.SET):
        return _cycles(targs[0], targs[1], within)
    if ttype == TType.MAP:
        return _cycles(targs[0], targs[1], within) or _cycles(targs[2], targs[3], within)
    return False


def db_fields_of(cls: type) -> set[str]:
    names = {s[2] for s in cls.thrift_spec if s is not None and s[1] == TType.STRING and DB_FIELD.search(s[2])}
    return (names | {f for c, f in EXTRA_DB_FIELDS if c is cls}) - {f for c, f in NOT_DB_FIELDS if c is cls}


def all_strings(value: Any, path: str = "") -> dict[str, str]:
    """Every string in a filled value by its path (dict keys and set members included)."""
    out: dict[str, str] = {}
    if isinstance(value, str):
        out[path] = value
    elif isinstance(value, (list, set, tuple)):
        for i, v in enumerate(value):
            out.update(all_strings(v, f"{path}[{i}]"))
    elif isinstance(value, dict):
        for i, (k, v) in enumerate(value.items()):
            out.update(all_strings(k, f"{path}<key{i}>"))
            out.update(all_strings(v, f"{path}{{{i}}}"))
    elif getattr(value, "thrift_spec", None) is not None:
        for s in value.thrift_spec:
            if s is not None:
                out.update(all_strings(getattr(value, s[2]), f"{path}.{type(value).__name__}.{s[2]}"))
    return out


def expected_renamed(value: Any) -> set[str]:
    """Paths of ``all_strings(value)`` that hold a database name (a db field of its struct)."""
    paths = set()
    for path in all_strings(value):
        parts = path.rsplit(".", 2)
        if len(parts) == 3 and re.fullmatch(r"\w+", parts[2]):
            cls = getattr(ttypes, parts[1], None)
            if cls is not None and parts[2] in db_fields_of(cls):
                paths.add(path)
    return paths


# ---------------------------------------------------------------- classification


def test_the_idl_has_hive_2_3_s_153_methods_and_hive_4_s():
    # Hive 2.3's 153 (hmsclient's generated code), and with the IDL overlay Hive 4.0.1's 135 more.
    assert len(IDL) == (288 if hasattr(ThriftHiveMetastore, "alter_table_req_args") else 153)
    assert frozenset(IDL) == methods.IDL_METHODS


@pytest.mark.parametrize("method", IDL)
def test_every_idl_method_is_classified(method):
    assert isinstance(methods.kind(method), Kind), f"{method} is not in the method table"


def test_the_table_names_only_idl_methods():
    assert set(methods._SPECS) == set(IDL)


def test_unknown_methods_have_no_kind():
    assert methods.kind("get_table_req_v2") is None
    assert methods.kind("getVersion") is None  # fb303's, relayed untouched
    assert methods.is_global("getVersion")
    assert methods.databases_in_args("getVersion", object()) == []


WRITE_WORDS = re.compile(
    r"^(create|alter|drop|add|append|rename|exchange|update|delete|set_aggr|markPartition|truncate|grant|revoke"
    r"|open|abort|commit|lock|unlock|heartbeat|compact|put|clear|cache|remove|cancel|renew|setMetaConf|fire|flush"
    # Hive 3.1 / 4.x
    r"|allocate|seed|repl_tbl|mark_|set_hadoop|scheduled_query_(maintenance|progress)|map_schema|set_schema"
    r"|set_properties|submit|cm_recycle|refresh)"
)
#: Calls named as reads that change state (Hive 3.1 / 4.x): a lock taken, a compaction or a query execution claimed.
READS_THAT_WRITE = ("get_lock_materialization_rebuild", "find_next_compact", "find_next_compact2",
                    "scheduled_query_poll")


@pytest.mark.parametrize("method", IDL)
def test_writes_and_reads_follow_the_verbs(method):
    k = methods.kind(method)
    if method in ("get_delegation_token", "check_lock"):
        # Issuing a token stores it; checking a waiting lock may acquire it.
        assert k is Kind.GLOBAL_WRITE
    elif method in READS_THAT_WRITE:
        assert k is Kind.GLOBAL_WRITE
    elif WRITE_WORDS.match(method):
        assert k in (Kind.WRITE, Kind.GLOBAL_WRITE), method
    else:
        assert k in (Kind.READ, Kind.GLOBAL_READ), method


GLOBAL_WORDS = re.compile(
    r"txn|lock|heartbeat|compact|notification|token|master_key|role|privilege|MetaConf|config_value|file_metadata"
    r"|_type|^set_ugi$|^flushCache$|^get_all_functions$|^partition_name_|^add_dynamic_partitions$"
    # Hive 3.1 / 4.x: catalogs, data connectors, workload management, write ids, replication, scheduled queries, ...
    r"|catalog|dataconnector|resource_?plan|wm_|write_?id|write_event|write_notification|Compactions|transaction"
    r"|materialization|materialized_view_objects|runtime_stats|replication|scheduled_query|^(add|get)_serde$"
    r"|schemas_by_cols|_properties$|metastore_db_uuid|cm_recycle|^mark_|find_next|find_columns_with_stats"
    r"|^seed_|set_hadoop_jobid|submit_for_cleanup"
)


@pytest.mark.parametrize("method", IDL)
def test_locks_txns_roles_tokens_config_are_global(method):
    if GLOBAL_WORDS.search(method) and method != "get_tables_by_type":
        assert methods.kind(method) in GLOBAL, method
    else:
        assert methods.kind(method) in (Kind.READ, Kind.WRITE), method


def test_spark_methods_are_classified_as_expected():
    reads = "get_database get_databases get_table get_tables get_all_tables get_partitions get_partitions_by_filter"
    writes = (
        "create_database drop_database create_table_with_environment_context alter_table_with_environment_context"
        " drop_table_with_environment_context add_partitions_req alter_partitions"
        " drop_partition_with_environment_context create_function drop_function"
    )
    assert all(methods.kind(m) is Kind.READ for m in reads.split())
    assert all(methods.kind(m) is Kind.WRITE for m in writes.split())
    assert methods.kind("get_partitions_ps_with_auth") is Kind.READ
    assert methods.kind("get_partition_names") is Kind.READ
    assert methods.kind("get_function") is Kind.READ
    assert methods.kind("set_ugi") is Kind.GLOBAL_READ


def test_pattern_methods_name_real_args_fields():
    assert set(PATTERN_METHODS) == {"get_databases", "get_all_databases", "get_table_meta"}
    for method, field in PATTERN_METHODS.items():
        spec = getattr(ThriftHiveMetastore, f"{method}_args").thrift_spec
        fields = [s[2] for s in spec if s is not None]
        assert field in fields if field is not None else fields == []


# ---------------------------------------------------------------- struct table


@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: c.__name__)
def test_every_struct_field_holding_a_database_is_in_the_table(cls):
    assert set(STRUCT_DB_FIELDS.get(cls, ())) == db_fields_of(cls)


@pytest.mark.parametrize("cls", sorted(STRUCT_DB_FIELDS, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_rename_round_trips_on_every_struct_holding_a_database(cls):
    original = fill(cls)
    value = copy.deepcopy(original)
    methods._walk_struct(value, methods._renamer(add, None))
    for field in STRUCT_DB_FIELDS[cls]:
        assert getattr(value, field) == "p__" + getattr(original, field)
    changed = {p for p, v in all_strings(value).items() if v != all_strings(original)[p]}
    assert changed == expected_renamed(original)
    methods._walk_struct(value, methods._renamer(strip, None))
    assert value == original


# ---------------------------------------------------------------- args


def args_of(method: str) -> Any:
    return fill(getattr(ThriftHiveMetastore, f"{method}_args"))


def direct_db_args(method: str) -> set[str]:
    spec = getattr(ThriftHiveMetastore, f"{method}_args").thrift_spec
    return {
        s[2]
        for s in spec
        if s is not None
        and s[1] == TType.STRING
        and (DB_FIELD.search(s[2]) or (method, s[2]) in EXTRA_DB_ARGS)
        and PATTERN_METHODS.get(method) != s[2]
    }


@pytest.mark.parametrize("method", IDL)
def test_rename_args_renames_every_database_and_round_trips(method):
    original = args_of(method)
    args = copy.deepcopy(original)
    methods.rename_args(method, args, add)
    before, after = all_strings(original), all_strings(args)
    changed = {p for p in before if before[p] != after[p]}
    expected = expected_renamed(original) | {f".{type(original).__name__}.{f}" for f in direct_db_args(method)}
    assert changed == expected
    methods.rename_args(method, args, strip)
    assert args == original


@pytest.mark.parametrize("method", IDL)
def test_databases_in_args_lists_every_database_name(method):
    args = args_of(method)
    found = methods.databases_in_args(method, args)
    if methods.kind(method) in GLOBAL or method in PATTERN_METHODS:
        assert found == []
        return
    names = {v for p, v in all_strings(args).items() if p in expected_renamed(args)}
    names |= {getattr(args, f) for f in direct_db_args(method)}
    assert set(found) == names
    assert found, f"{method} names no database"
    assert len(found) == len(set(found))


@pytest.mark.parametrize("method", IDL)
def test_targets_name_databases_the_call_names(method):
    args = args_of(method)
    targets = methods.target_in_args(method, args)
    if methods.kind(method) in GLOBAL or method in PATTERN_METHODS:
        assert targets == []
        return
    assert targets, f"{method} has no target"
    dbs = set(methods.databases_in_args(method, args))
    assert {db for db, _ in targets} <= dbs


def test_targets_of_table_calls():
    T = ThriftHiveMetastore
    assert methods.target_in_args("get_table", T.get_table_args(dbname="p__a", tbl_name="t")) == [("p__a", "t")]
    assert methods.target_in_args("get_database", T.get_database_args(name="p__a")) == [("p__a", "")]
    assert methods.target_in_args("drop_database", T.drop_database_args(name="a", cascade=True)) == [("a", "")]
    tables = T.get_table_objects_by_name_args(dbname="a", tbl_names=["x", "y"])
    assert methods.target_in_args("get_table_objects_by_name", tables) == [("a", "x"), ("a", "y")]
    req = T.get_table_objects_by_name_req_args(req=ttypes.GetTablesRequest(dbName="a"))
    assert methods.target_in_args("get_table_objects_by_name_req", req) == [("a", "")]
    rename = T.alter_table_with_environment_context_args(
        dbname="a", tbl_name="t", new_tbl=ttypes.Table(dbName="b", tableName="u")
    )
    assert methods.target_in_args("alter_table_with_environment_context", rename) == [("a", "t"), ("b", "u")]
    assert methods.databases_in_args("alter_table_with_environment_context", rename) == ["a", "b"]
    exchange = T.exchange_partition_args(
        partitionSpecs={"ds": "1"}, source_db="s", source_table_name="x", dest_db="d", dest_table_name="y"
    )
    assert methods.target_in_args("exchange_partition", exchange) == [("s", "x"), ("d", "y")]
    parts = T.add_partitions_args(
        new_parts=[ttypes.Partition(dbName="a", tableName="t", values=[str(i)]) for i in "12"]
    )
    assert methods.target_in_args("add_partitions", parts) == [("a", "t")]
    stats = T.update_table_column_statistics_args(
        stats_obj=ttypes.ColumnStatistics(statsDesc=ttypes.ColumnStatisticsDesc(dbName="a", tableName="t"))
    )
    assert methods.target_in_args("update_table_column_statistics", stats) == [("a", "t")]
    fk = T.add_foreign_key_args(
        req=ttypes.AddForeignKeyRequest(
            foreignKeyCols=[ttypes.SQLForeignKey(pktable_db="p", pktable_name="pk", fktable_db="f", fktable_name="fk")]
        )
    )
    assert methods.target_in_args("add_foreign_key", fk) == [("f", "fk")]
    assert methods.databases_in_args("add_foreign_key", fk) == ["p", "f"]
    func = T.create_function_args(func=ttypes.Function(functionName="f", dbName="a"))
    assert methods.target_in_args("create_function", func) == [("a", "")]


def test_none_fields_are_skipped():
    args = ThriftHiveMetastore.get_table_args(dbname=None, tbl_name="t")
    assert methods.databases_in_args("get_table", args) == []
    assert methods.target_in_args("get_table", args) == []
    methods.rename_args("get_table", args, add)
    assert args.dbname is None


def test_hive3_catalog_envelope_is_kept():
    args = ThriftHiveMetastore.get_table_args(dbname="@hive#p__sales", tbl_name="t")
    assert methods.databases_in_args("get_table", args) == ["p__sales"]
    assert methods.target_in_args("get_table", args) == [("p__sales", "t")]
    methods.rename_args("get_table", args, strip)
    assert args.dbname == "@hive#sales"
    empty = ThriftHiveMetastore.get_table_args(dbname="@hive#!", tbl_name="t")
    methods.rename_args("get_table", empty, add)
    assert empty.dbname == "@hive#!"


def test_patterns_are_not_renamed():
    args = ThriftHiveMetastore.get_table_meta_args(db_patterns="p__*", tbl_patterns="*", tbl_types=None)
    methods.rename_args("get_table_meta", args, strip)
    assert args.db_patterns == "p__*"
    args = ThriftHiveMetastore.get_databases_args(pattern="p__*")
    methods.rename_args("get_databases", args, strip)
    assert args.pattern == "p__*"


# ---------------------------------------------------------------- results


def success_spec(method: str) -> Any:
    spec = getattr(ThriftHiveMetastore, f"{method}_result").thrift_spec
    return spec[0] if spec and spec[0] is not None and spec[0][2] == "success" else None


@pytest.mark.parametrize("method", IDL)
def test_rename_result_renames_every_database_and_round_trips(method):
    s = success_spec(method)
    if s is None:
        assert methods.rename_result(method, None, add) is None
        return
    original = fill_value(s[1], s[3], "success")
    value = copy.deepcopy(original)
    value = methods.rename_result(method, value, add)
    before, after = all_strings(original), all_strings(value)
    changed = {p for p in before if before[p] != after[p]}
    if method in ("get_databases", "get_all_databases"):
        assert value == ["p__success"]
    else:
        assert changed == expected_renamed(original)
    assert methods.rename_result(method, value, strip) == original


def test_rename_result_of_spark_reads():
    table = ttypes.Table(dbName="sales", tableName="t", sd=ttypes.StorageDescriptor(cols=[ttypes.FieldSchema("c")]))
    assert methods.rename_result("get_table", table, add).dbName == "p__sales"
    parts = [ttypes.Partition(dbName="sales", tableName="t", values=[str(i)]) for i in range(3)]
    assert [p.dbName for p in methods.rename_result("get_partitions", parts, add)] == ["p__sales"] * 3
    assert methods.rename_result("get_all_databases", ["a", "b"], add) == ["p__a", "p__b"]
    assert methods.rename_result("get_all_tables", ["a", "b"], add) == ["a", "b"]
    meta = [ttypes.TableMeta(dbName="a", tableName="t", tableType="MANAGED_TABLE")]
    assert methods.rename_result("get_table_meta", meta, add)[0].dbName == "p__a"
    result = ttypes.GetTableResult(table=ttypes.Table(dbName="a"))
    assert methods.rename_result("get_table_req", result, add).table.dbName == "p__a"


def test_on_table_sees_every_table_before_its_rename():
    seen: list[str] = []
    tables = [ttypes.Table(dbName="a", tableName="x"), ttypes.Table(dbName="b", tableName="y")]
    methods.rename_result("get_table_objects_by_name", tables, add, on_table=lambda t: seen.append(t.dbName))
    assert seen == ["a", "b"]
    assert [t.dbName for t in tables] == ["p__a", "p__b"]
    seen.clear()
    args = ThriftHiveMetastore.create_table_args(tbl=ttypes.Table(dbName="p__a", tableName="v"))
    methods.rename_args("create_table", args, strip, on_table=lambda t: seen.append(t.dbName))
    assert seen == ["p__a"]
    assert args.tbl.dbName == "a"
    assert [t.tableName for t in methods.tables_in(ttypes.GetTablesResult(tables=tables))] == ["x", "y"]


# ---------------------------------------------------------------- errors


def test_error_result_puts_the_exception_in_the_field_that_fits():
    missing = ttypes.NoSuchObjectException(message="no table t")
    result = methods.error_result("get_table", missing)
    assert isinstance(result, ThriftHiveMetastore.get_table_result)
    assert result.o2 is missing and result.o1 is None and result.success is None


def test_error_result_falls_back_to_meta_exception():
    result = methods.error_result("create_table", ValueError("catalogd: catalog ro is read-only"))
    assert result.o3 == ttypes.MetaException(message="catalogd: catalog ro is read-only")
    # get_partitions_by_filter declares no InvalidOperationException.
    result = methods.error_result("get_partitions_by_filter", ttypes.InvalidOperationException(message="gone"))
    assert result.o1 == ttypes.MetaException(message="gone")


def test_error_result_is_none_without_a_field():
    assert methods.error_result("compact", ttypes.MetaException(message="x")) is None
    assert methods.error_result("get_all_token_identifiers", ValueError("x")) is None
    # abort_txn declares only NoSuchTxnException.
    assert methods.error_result("abort_txn", ValueError("x")) is None
    assert methods.error_result("abort_txn", ttypes.NoSuchTxnException(message="x")).o1.message == "x"
    assert methods.error_result("getVersion", ValueError("x")) is None


@pytest.mark.parametrize("method", IDL)
def test_error_result_for_every_method_declaring_meta_exception(method):
    spec = getattr(ThriftHiveMetastore, f"{method}_result").thrift_spec
    declares = any(s is not None and s[1] == TType.STRUCT and s[3][0] is ttypes.MetaException for s in spec)
    result = methods.error_result(method, RuntimeError("boom"))
    assert (result is not None) == declares


def test_database_patterns():
    T = ThriftHiveMetastore
    assert methods.database_pattern("get_databases", T.get_databases_args(pattern="p__*|x")) == "p__*|x"
    assert methods.database_pattern("get_all_databases", T.get_all_databases_args()) == "*"
    meta = T.get_table_meta_args(db_patterns="sales*", tbl_patterns="*", tbl_types=None)
    assert methods.database_pattern("get_table_meta", meta) == "sales*"
    assert methods.database_pattern("get_table_meta", T.get_table_meta_args(db_patterns=None)) == "*"
    assert methods.database_pattern("get_table", T.get_table_args(dbname="a", tbl_name="t")) is None


def test_add_index_writes_the_index_table_too():
    args = ThriftHiveMetastore.add_index_args(
        new_index=ttypes.Index(indexName="i", dbName="a", origTableName="t", indexTableName="a__t_i__"),
        index_table=ttypes.Table(dbName="a", tableName="a__t_i__"),
    )
    assert methods.target_in_args("add_index", args) == [("a", "t"), ("a", "a__t_i__")]
