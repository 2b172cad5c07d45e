"""The operation -> role tables cover every RPC of the IDL, every HTTP route and every HMS method kind."""

from __future__ import annotations

import inspect

import pytest

from catalogd.auth.model import Role
from catalogd.auth.operations import JOB_STAGE_RPCS, OWNED_STAGE_RPCS, REST_ROLES, THRIFT_ROLES, hms_role
from catalogd.gen.catalogd_thrift import CatalogService
from catalogd.hms import methods
from catalogd.server.http_app import create_app
from catalogd.server.metrics import Metrics

#: HTTP routes open to every caller (/cluster/invalidations: signed with the deployment's key instead).
OPEN_ROUTES = {"GET /healthz", "GET /readyz", "POST /cluster/invalidations"}


def _rpcs() -> set[str]:
    return {name for name, _ in inspect.getmembers(CatalogService.Iface, inspect.isfunction)
            if not name.startswith("_")}


def test_every_rpc_of_the_idl_has_a_role() -> None:
    rpcs = _rpcs()
    assert rpcs, "no RPCs found in CatalogService"
    assert sorted(rpcs - set(THRIFT_ROLES)) == [], "RPCs without a role: add them to THRIFT_ROLES"
    assert sorted(set(THRIFT_ROLES) - rpcs) == [], "THRIFT_ROLES names RPCs the IDL does not have"


def test_the_issue_s_roles() -> None:
    for rpc in ("getTable", "listTables", "listStages", "getDynamicTable", "dynamicTableHistory", "ping"):
        assert THRIFT_ROLES[rpc] is Role.READER, rpc
    for rpc in ("createDatabase", "dropDatabase", "alterTable", "dropTable", "createView", "createFunction",
                "beginStage", "heartbeatStage", "commitStage", "abortStage", "createDynamicTable",
                "refreshDynamicTables"):
        assert THRIFT_ROLES[rpc] is Role.WRITER, rpc
    for rpc in ("reloadConfig", "alterDynamicTable", "dropDynamicTable"):
        assert THRIFT_ROLES[rpc] is Role.ADMIN, rpc
    assert {"heartbeatStage", "commitStage", "abortStage"} == OWNED_STAGE_RPCS
    assert OWNED_STAGE_RPCS <= JOB_STAGE_RPCS <= set(THRIFT_ROLES)


def test_every_http_route_has_a_role_or_is_open() -> None:
    app = create_app(manager=None, metrics=Metrics())  # type: ignore[arg-type]
    routes = {f"{method} {route.path}".replace("{jobId:path}", "{jobId}")
              for route in app.routes for method in getattr(route, "methods", None) or ()
              if method != "HEAD"}
    routes = {r for r in routes if not r.startswith(("GET /docs", "GET /redoc"))}
    assert sorted(routes - set(REST_ROLES) - OPEN_ROUTES) == [], "HTTP routes without a role: add them to REST_ROLES"
    assert sorted(set(REST_ROLES) - routes) == []


@pytest.mark.parametrize("kind", list(methods.Kind))
def test_every_hms_kind_has_a_role(kind: methods.Kind) -> None:
    assert isinstance(hms_role(kind.value), Role)


def test_hms_roles() -> None:
    assert hms_role("read", "get_table") is Role.READER
    assert hms_role("global-read", "get_all_functions") is Role.READER
    assert hms_role("write", "create_table") is Role.WRITER
    assert hms_role("write", "drop_database") is Role.WRITER
    # A reader's session takes locks and opens transactions while it reads.
    for method in ("lock", "check_lock", "unlock", "heartbeat", "open_txns", "show_locks"):
        assert hms_role("global-write", method) is Role.READER, method
    # The metastore's own roles, privileges and keys: admin.
    for method in ("grant_role", "create_role", "grant_privileges", "setMetaConf", "add_master_key"):
        assert hms_role(methods.kind(method).value if methods.kind(method) else None, method) is Role.ADMIN
    assert hms_role("global-write", "compact") is Role.WRITER
    # Unknown to the IDL: catalogd cannot tell whether it writes.
    assert hms_role(None, "get_catalogs") is Role.ADMIN


def test_hive4_roles() -> None:
    from catalogd.auth.operations import HMS_ADMIN_METHODS, HMS_READER_WRITES

    assert not (HMS_ADMIN_METHODS | HMS_READER_WRITES) - methods.IDL_METHODS  # every one a method of the IDL
    for method in ("refresh_privileges", "set_properties", "create_dataconnector_req", "create_resource_plan",
                   "scheduled_query_maintenance", "seed_write_id", "mark_cleaned"):
        assert hms_role(methods.kind(method).value, method) is Role.ADMIN, method  # type: ignore[union-attr]
    assert hms_role("global-write", "add_write_ids_to_min_history") is Role.READER
    assert hms_role("global-read", "get_valid_write_ids") is Role.READER
    assert hms_role("global-write", "allocate_table_write_ids") is Role.WRITER
    assert hms_role("write", "alter_table_req") is Role.WRITER
