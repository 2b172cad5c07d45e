"""The endpoint's policy on its own: read-only catalogs, reserved parameters, the dynamic-table guard, auth off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catalogd.auth.model import ANONYMOUS
from catalogd.config import parse_config
from catalogd.errors import PermissionDeniedError
from catalogd.hive_idl import ThriftHiveMetastore as T
from catalogd.hive_idl import ttypes as hms
from catalogd.hms import methods
from catalogd.hms.policy import CallRecord, Policy
from catalogd.hms.refused import Refused
from catalogd.manager import CatalogManager


class Conn:
    peer = "127.0.0.1:1"
    identity = None


@pytest.fixture
def policy(tmp_path: Path) -> Policy:
    config = parse_config(f"server: {{data-dir: {tmp_path}}}\ncatalogs:\n"
                          "  - {name: main, type: memory, default: true}\n"
                          "  - {name: ro, type: memory, read-only: true}\n")
    return Policy(CatalogManager(config))  # type: ignore[arg-type]


def refusal(call: Any) -> str:
    """The refusal's message; a rule of catalogd's carries its typed error too (the REST door answers it)."""
    with pytest.raises(Refused) as caught:
        call()
    assert isinstance(caught.value.error, PermissionDeniedError)
    assert caught.value.error.message == str(caught.value.exc.message).removeprefix("catalogd: ")
    return str(caught.value.exc.message)


def test_without_auth_everyone_may_call_and_nothing_is_audited(policy: Policy) -> None:
    call = CallRecord()
    policy.authorize(Conn(), "create_table", methods.Kind.WRITE, "main", call)  # type: ignore[arg-type]
    assert call.principal is ANONYMOUS and not call.audited
    assert policy.readable(None, "main")


def test_a_read_only_catalog_refuses_writes(policy: Policy) -> None:
    policy.check_writable("main", "create_table")
    assert "read-only" in refusal(lambda: policy.check_writable("ro", "create_table"))


def test_reserved_parameters_and_dynamic_tables_are_catalogds_own(policy: Policy) -> None:
    def none(database: str, table: str) -> None:
        return None

    create = T.create_table_args(tbl=hms.Table(dbName="db", tableName="t", parameters={"catalogd.x": "1"}))
    assert "catalogd's own" in refusal(lambda: policy.check_write("create_table", create, "main", [("db", "t")],
                                                                   none))
    dynamic = hms.Table(dbName="db", tableName="t", parameters={"catalogd.dt.query": "select 1"})
    alter = T.alter_table_args(dbname="db", tbl_name="t", new_tbl=hms.Table(dbName="db", tableName="t"))
    assert "dynamic table" in refusal(lambda: policy.check_write("alter_table", alter, "main", [("db", "t")],
                                                                  lambda d, t: dynamic))
    drop = T.drop_table_args(dbname="db", name="t", deleteData=True)
    policy.check_write("drop_table", drop, "main", [("db", "t")], lambda d, t: dynamic)
    plain = hms.Table(dbName="db", tableName="t", parameters={"catalogd.stage.x": "1"})
    assert "catalogd's own parameters" in refusal(lambda: policy.check_write("alter_table", alter, "main",
                                                                             [("db", "t")], lambda d, t: plain))


# ---------------------------------------------------------------- stages belong to their owners

STAGE = "__catalogd_stage_3f2a"
SECRET = b"unit-test-stage-secret"


class Ugi:
    """A connection whose set_ugi named ``user``."""

    peer = "127.0.0.1:2"
    surface = "hms"
    internal = False

    def __init__(self, user: str, proven: str | None = None) -> None:
        self.identity = (user, (user,))
        #: None: only asserted by set_ugi (the fixtures here trust that up to admin).
        self.proven = proven


class Recorded:
    """An audit log that keeps its lines."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def record(self, **line: Any) -> None:
        self.lines.append(line)


def _stage_table(owner: str, signed: bool = True) -> hms.Table:
    from catalogd.catalog.hive_staging import OWNER, SIGNATURE, stage_signature

    tbl = hms.Table(dbName="db", tableName=STAGE, sd=hms.StorageDescriptor(location="file:/w/db/s"),
                    parameters={OWNER: owner, "catalogd.stage.id": "3f2a", "numFiles": "1"})
    if signed:
        tbl.parameters[SIGNATURE] = stage_signature(SECRET, "db", STAGE, "file:/w/db/s", tbl.parameters)
    return tbl


def _owner(tbl: Any) -> str | None:
    from catalogd.catalog.hive_staging import signed_owner

    return signed_owner(SECRET, tbl)


@pytest.fixture
def guarded(tmp_path: Path) -> tuple[Policy, Recorded]:
    from catalogd.auth.model import Authority, Role

    # The set_ugi users here stand for proven ones: trusted up to admin (their own rules are
    # tested in test_asserted_users.py).
    config = parse_config(f"server: {{data-dir: {tmp_path}}}\nauth: {{trust-asserted-users: admin}}\ncatalogs:\n"
                          "  - {name: main, type: memory, default: true}\n  - {name: other, type: memory}\n")
    grants = {("etl", "main"): Role.WRITER, ("etl2", "main"): Role.WRITER, ("ops", "main"): Role.ADMIN,
              ("boss", "other"): Role.ADMIN, ("boss", "main"): Role.WRITER}
    audit = Recorded()
    authority = Authority(True, names={"etl", "etl2", "ops", "boss"}, grants=grants)
    return Policy(CatalogManager(config), authority, audit), audit  # type: ignore[arg-type]


def _write_as(policy: Policy, user: str, method: str, args: Any, found: Any,
              targets: list[tuple[str, str]] | None = None) -> None:
    conn = Ugi(user)
    call = CallRecord()
    # The object as the router names it (catalog.database.table).
    policy.authorize(conn, method, methods.Kind.WRITE, "main", call,  # type: ignore[arg-type]
                     lambda: f"main.{'.'.join((targets or [('db', STAGE)])[0])}")
    policy.check_write(method, args, "main", targets or [("db", STAGE)], lambda d, t: found,
                       conn, call, _owner)  # type: ignore[arg-type]


ALTER = T.alter_table_args(dbname="db", tbl_name=STAGE, new_tbl=_stage_table("etl"))
DROP = T.drop_table_args(dbname="db", name=STAGE, deleteData=True)
ADD_PARTITION = T.add_partition_args(new_part=hms.Partition(dbName="db", tableName=STAGE, values=["1"]))


@pytest.mark.parametrize("method,args", [("alter_table", ALTER), ("drop_table", DROP),
                                         ("add_partition", ADD_PARTITION)])
def test_only_the_stage_s_owner_or_an_admin_writes_its_staging_table(
        guarded: tuple[Policy, Recorded], method: str, args: Any) -> None:
    policy, audit = guarded
    tbl = _stage_table("etl")
    _write_as(policy, "etl", method, args, tbl)  # the owner (Spark writing into its stage)
    _write_as(policy, "ops", method, args, tbl)  # an admin of the catalog
    text = refusal(lambda: _write_as(policy, "etl2", method, args, tbl))
    assert text == (f"catalogd: permission denied: user 'etl2' needs role admin on catalog main for {method} of "
                    f"staging table db.{STAGE} (stage main.db.3f2a), which etl began")
    # An admin of another catalog is no admin here.
    assert "which etl began" in refusal(lambda: _write_as(policy, "boss", method, args, tbl))
    denials = [line for line in audit.lines if line["outcome"] == "denied"]
    assert [(d["principal"], d["operation"], d["object"]) for d in denials] == [
        ("etl2", method, f"main.db.{STAGE}"), ("boss", method, f"main.db.{STAGE}")]


def test_an_unsigned_staging_table_has_no_owner_but_an_admin(guarded: tuple[Policy, Recorded]) -> None:
    policy, _ = guarded
    forged = _stage_table("etl2", signed=False)  # its owner parameter is anyone's claim
    assert "which catalogd did not sign" in refusal(lambda: _write_as(policy, "etl2", "drop_table", DROP, forged))
    _write_as(policy, "ops", "drop_table", DROP, forged)
    # A stage whose writer named no one (begun with auth off) is an admin's.
    assert "which another principal began" in refusal(
        lambda: _write_as(policy, "etl", "drop_table", DROP, _stage_table("")))


def test_every_staging_table_a_write_names_is_checked(guarded: tuple[Policy, Recorded]) -> None:
    """exchange_partition names two tables; a rename names the old and the new one."""
    policy, _ = guarded
    plain = hms.Table(dbName="db", tableName="t", parameters={})
    mine, theirs = _stage_table("etl2"), _stage_table("etl")

    def found(database: str, table: str) -> Any:
        return theirs if table == STAGE else plain

    conn, call = Ugi("etl2"), CallRecord()
    policy.authorize(conn, "exchange_partition", methods.Kind.WRITE, "main", call)  # type: ignore[arg-type]
    exchange = T.exchange_partition_args(partitionSpecs={"p": "1"}, source_db="db", source_table_name=STAGE,
                                         dest_db="db", dest_table_name="t")
    assert "which etl began" in refusal(lambda: policy.check_write(
        "exchange_partition", exchange, "main", [("db", STAGE), ("db", "t")], found, conn, call,
        _owner))  # type: ignore[arg-type]
    _write_as(policy, "etl2", "exchange_partition", exchange, mine, [("db", STAGE), ("db", "t")])
    # A plain table is not a stage: any writer writes it.
    _write_as(policy, "etl2", "drop_table", T.drop_table_args(dbname="db", name="t"), plain, [("db", "t")])


def test_a_staging_table_that_cannot_be_read_is_refused_and_a_missing_one_is_left_to_the_metastore(
        guarded: tuple[Policy, Recorded]) -> None:
    from catalogd.hms.refused import meta_error

    policy, _ = guarded

    def broken(database: str, table: str) -> Any:
        raise meta_error("metastore trouble")

    def missing(database: str, table: str) -> Any:
        raise Refused(hms.NoSuchObjectException(message="no such table"))

    conn, call = Ugi("etl"), CallRecord()
    policy.authorize(conn, "drop_table", methods.Kind.WRITE, "main", call)  # type: ignore[arg-type]
    assert "to tell whose stage it is (metastore trouble)" in refusal(lambda: policy.check_write(
        "drop_table", DROP, "main", [("db", STAGE)], broken, conn, call, _owner))  # type: ignore[arg-type]
    policy.check_write("drop_table", DROP, "main", [("db", STAGE)], missing, conn, call,
                       _owner)  # type: ignore[arg-type]


def test_with_auth_off_anyone_writes_any_staging_table(policy: Policy) -> None:
    conn, call = Ugi("whoever"), CallRecord()
    policy.authorize(conn, "drop_table", methods.Kind.WRITE, "main", call)  # type: ignore[arg-type]
    policy.check_write("drop_table", DROP, "main", [("db", STAGE)], lambda d, t: _stage_table("etl"), conn, call,
                       _owner)  # type: ignore[arg-type]
    # Callers that pass no connection (the rules every client obeys) are not asked about owners.
    policy.check_write("drop_table", DROP, "main", [("db", STAGE)], lambda d, t: _stage_table("etl"))
