"""The endpoint's policy on its own: read-only catalogs, reserved parameters, the dynamic-table guard, auth off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore as T
from hmsclient.genthrift.hive_metastore import ttypes as hms

from catalogd.auth.model import ANONYMOUS
from catalogd.config import parse_config
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
    with pytest.raises(Refused) as caught:
        call()
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
