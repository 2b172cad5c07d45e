"""The Hive 3.1 / 4.x writes go through the rules of their Hive 2.3 equivalents: claims, moves, policy, refusals."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from catalogd.config import parse_config
from catalogd.hive_idl import ThriftHiveMetastore as T
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import rules
from catalogd.hms.claims import check_move, claims_of
from catalogd.hms.drops import Drops
from catalogd.hms.policy import Policy
from catalogd.hms.refused import Refused
from catalogd.hms.rules import WRITE_RULES, Rule
from catalogd.manager import CatalogManager

WAREHOUSE = "file:/w"


def same(name: str) -> str:
    return name


def table(name: str = "t", location: str = f"{WAREHOUSE}/db.db/t", partitioned: bool = False,
          **params: str) -> Any:
    return hms.Table(dbName="db", tableName=name, tableType="MANAGED_TABLE", parameters=dict(params),
                     sd=hms.StorageDescriptor(location=location),
                     partitionKeys=[hms.FieldSchema("ds", "string", None)] if partitioned else [])


def upstream_of(**answers: Any) -> Any:
    """A metastore answering each read method with the value given (None: NoSuchObjectException)."""
    def call(method: str, args: Any) -> Any:
        result = getattr(T, f"{method}_result")
        value = answers.get(method)
        if value is None:
            return result(o1=hms.NoSuchObjectException(message="none"))
        return result(success=value)

    return call


def refusal(call: Any) -> str:
    with pytest.raises(Refused) as caught:
        call()
    return str(caught.value.exc.message)


def test_the_new_writes_have_their_equivalents_rules() -> None:
    assert WRITE_RULES["create_table_req"] is WRITE_RULES["create_table"] is Rule.CLAIM
    assert WRITE_RULES["alter_table_req"] is WRITE_RULES["alter_table"] is Rule.CLAIM
    assert WRITE_RULES["drop_table_req"] is WRITE_RULES["drop_table"] is Rule.DROP
    assert WRITE_RULES["rename_partition_req"] is WRITE_RULES["rename_partition"] is Rule.MOVE
    assert WRITE_RULES["alter_partitions_req"] is Rule.CLAIM and WRITE_RULES["drop_partition_req"] is Rule.DROP
    assert WRITE_RULES["truncate_table"] is WRITE_RULES["truncate_table_req"] is Rule.DROP
    assert WRITE_RULES["create_database_req"] is Rule.CLAIM and WRITE_RULES["drop_database_req"] is Rule.DROP


def test_change_management_is_refused_however_it_is_classified() -> None:
    message = rules.refusal("cm_recycle")
    assert message is not None and "cm_recycle refused" in message and "any path" in message
    assert rules.refusal("get_valid_write_ids") is None and rules.refusal("allocate_table_write_ids") is None


def test_alter_table_req_claims_a_new_location_and_a_renamed_managed_tables_place() -> None:
    old = table()
    up = upstream_of(get_table=old, get_database=hms.Database(name="db", locationUri=f"{WAREHOUSE}/db.db"))
    moved = table(location="file:/victim")
    req = T.alter_table_req_args(req=hms.AlterTableRequest(dbName="db", tableName="t", table=moved))
    assert [(c.uri, c.own_table) for c in claims_of("alter_table_req", req, same, up)] == [
        ("file:/victim", ("db", "t"))]
    kept = T.alter_table_req_args(req=hms.AlterTableRequest(dbName="db", tableName="t", table=table(comment="x")))
    assert claims_of("alter_table_req", kept, same, up) == []
    renamed = T.alter_table_req_args(req=hms.AlterTableRequest(dbName="db", tableName="t", table=table("u")))
    renamed.req.table.sd.location = old.sd.location
    assert [c.uri for c in claims_of("alter_table_req", renamed, same, up)] == [
        f"{WAREHOUSE}/db.db/t", f"{WAREHOUSE}/db.db/u"]


def test_create_requests_claim_what_they_name() -> None:
    up = upstream_of(get_database=hms.Database(name="db", locationUri=f"{WAREHOUSE}/db.db"))
    create = T.create_table_req_args(request=hms.CreateTableRequest(table=table(location="file:/victim")))
    assert [c.uri for c in claims_of("create_table_req", create, same, up)] == ["file:/victim"]
    # The metastore's default place is claimed as create_table's is.
    create.request.table.sd.location = None
    assert [c.uri for c in claims_of("create_table_req", create, same, up)] == [f"{WAREHOUSE}/db.db/t"]
    database = T.create_database_req_args(createDatabaseRequest=hms.CreateDatabaseRequest(
        databaseName="db", locationUri=f"{WAREHOUSE}/db.db", managedLocationUri="file:/victim"))
    assert [c.uri for c in claims_of("create_database_req", database, same, up)] == [
        f"{WAREHOUSE}/db.db", "file:/victim"]
    alter = T.alter_database_req_args(alterDbReq=hms.AlterDatabaseRequest(oldDbName="db", newDb=hms.Database(
        name="db", locationUri=f"{WAREHOUSE}/db.db", managedLocationUri="file:/victim")))
    assert [c.uri for c in claims_of("alter_database_req", alter, same, up)] == ["file:/victim"]


def test_alter_partitions_req_claims_changed_partition_locations() -> None:
    part = hms.Partition(values=["1"], dbName="db", tableName="t", sd=hms.StorageDescriptor(location="file:/victim"))
    up = upstream_of(get_partition=hms.Partition(values=["1"], sd=hms.StorageDescriptor(
        location=f"{WAREHOUSE}/db.db/t/ds=1")))
    req = T.alter_partitions_req_args(req=hms.AlterPartitionsRequest(dbName="db", tableName="t", partitions=[part]))
    assert [c.uri for c in claims_of("alter_partitions_req", req, same, up)] == ["file:/victim"]


def test_rename_partition_req_never_moves_a_directory_outside_its_table() -> None:
    up = upstream_of(get_table=table(partitioned=True), get_partition=hms.Partition(
        values=["1"], sd=hms.StorageDescriptor(location="file:/victim")))
    req = T.rename_partition_req_args(req=hms.RenamePartitionRequest(
        dbName="db", tableName="t", partVals=["1"], newPart=hms.Partition(values=["2"])))
    assert "rename_partition_req refused" in refusal(lambda: check_move("rename_partition_req", req, same, up))
    inside = upstream_of(get_table=table(partitioned=True), get_partition=hms.Partition(
        values=["1"], sd=hms.StorageDescriptor(location=f"{WAREHOUSE}/db.db/t/ds=1")))
    check_move("rename_partition_req", req, same, inside)


@pytest.fixture
def policy(tmp_path: Path) -> Policy:
    config = parse_config(f"server: {{data-dir: {tmp_path}}}\ncatalogs:\n"
                          "  - {name: main, type: memory, default: true}\n")
    return Policy(CatalogManager(config))  # type: ignore[arg-type]


def test_the_policy_judges_the_new_writes_as_their_equivalents(policy: Policy) -> None:
    def none(database: str, table_name: str) -> None:
        return None

    reserved = T.create_table_req_args(request=hms.CreateTableRequest(table=table(**{"catalogd.x": "1"})))
    assert "catalogd's own" in refusal(lambda: policy.check_write("create_table_req", reserved, "main",
                                                                   [("db", "t")], none))
    dynamic = table(**{"catalogd.dt.query": "select 1"})
    alter = T.alter_table_req_args(req=hms.AlterTableRequest(dbName="db", tableName="t", table=table()))
    assert "dynamic table" in refusal(lambda: policy.check_write("alter_table_req", alter, "main", [("db", "t")],
                                                                  lambda d, t: dynamic))
    truncate = T.truncate_table_req_args(req=hms.TruncateTableRequest(dbName="db", tableName="t"))
    assert "dynamic table" in refusal(lambda: policy.check_write("truncate_table_req", truncate, "main",
                                                                  [("db", "t")], lambda d, t: dynamic))
    drop = T.drop_table_req_args(dropTableReq=hms.DropTableRequest(dbName="db", tableName="t"))
    policy.check_write("drop_table_req", drop, "main", [("db", "t")], lambda d, t: dynamic)
    staged = table(**{"catalogd.stage.x": "1"})
    assert "catalogd's own parameters" in refusal(lambda: policy.check_write("alter_table_req", alter, "main",
                                                                             [("db", "t")], lambda d, t: staged))
    database = T.create_database_req_args(createDatabaseRequest=hms.CreateDatabaseRequest(
        databaseName="db", parameters={"catalogd.x": "1"}))
    assert "catalogd's own" in refusal(lambda: policy.check_write("create_database_req", database, "main",
                                                                   [("db", "")], none))


class Target:
    """A relay target judging a truncate as the hive catalog's session does: here, by where the files lie."""

    def __init__(self) -> None:
        self.judged: list[tuple[Any, Any]] = []

    def files(self) -> Any:
        return nullcontext()

    def truncation_blocker(self, tbl: Any, parts: list[Any] | None = None) -> str | None:
        self.judged.append((tbl, parts))
        if (tbl.parameters or {}).get("EXTERNAL") == "TRUE":
            return "it is not a managed table"
        for obj in [tbl] if parts is None else parts:
            if not obj.sd.location.startswith(WAREHOUSE + "/"):
                return f"{obj.sd.location} is outside the allowed locations"
        return None


def test_a_truncate_is_relayed_only_when_the_session_may_empty_its_directories() -> None:
    drops = Drops(None, None)  # type: ignore[arg-type]
    target = Target()

    def truncate(found: Any, parts: list[str] | None = None, answers: Any = None) -> Any:
        req = T.truncate_table_req_args(req=hms.TruncateTableRequest(dbName="db", tableName="T", partNames=parts))
        return drops.drop("truncate_table_req", req, None, target, same,  # type: ignore[arg-type]
                          lambda d, t: found, answers or upstream_of())

    mine = table()
    assert truncate(mine) is None  # judged: relayed
    assert target.judged == [(mine, None)]
    assert "outside the allowed locations" in refusal(lambda: truncate(table(location="file:/victim")))
    assert "not a managed table" in refusal(lambda: truncate(table(EXTERNAL="TRUE")))
    assert "not found" in refusal(lambda: truncate(None))
    outside = hms.Partition(values=["1"], sd=hms.StorageDescriptor(location="file:/victim"))
    parts = upstream_of(get_partitions_by_names=[outside])
    assert "truncate_table_req of table db.t refused" in refusal(
        lambda: truncate(table(partitioned=True), ["ds=1"], parts))
    assert target.judged[-1][1] == [outside]
    old = T.truncate_table_args(dbName="db", tableName="t", partNames=None)
    assert "truncate_table of table db.t refused" in refusal(lambda: drops.drop(
        "truncate_table", old, None, target, same,  # type: ignore[arg-type]
        lambda d, t: table(location="file:/victim"), upstream_of()))


def test_a_drop_2_3_cannot_say_is_refused_not_relayed() -> None:
    drops = Drops(None, None)  # type: ignore[arg-type]
    soft = T.drop_database_req_args(req=hms.DropDatabaseRequest(name="db", softDelete=True))
    assert "drop_database_req refused" in refusal(lambda: drops.drop(
        "drop_database_req", soft, None, Target(), same, lambda d, t: None))  # type: ignore[arg-type]
