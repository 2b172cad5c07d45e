"""The Iceberg REST catalog's route table under ``/iceberg`` (as Iceberg's ``RESTCatalogAdapter``).

Thin: each route reads its path, query and body, calls the ``IcebergDoor`` handler in the
thread pool (handlers take locks and talk to metastores), and answers its result or its error
in the spec's model. On the way: the caller's principal (the HTTP port's bearer tokens, the
same back-off), ``Idempotency-Key`` on mutations (``idempotency``), the ``ETag`` of a table
load with ``If-None-Match`` -> 304, and the requests counted in ``/metrics``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from prometheus_client import CollectorRegistry, Counter

from catalogd.auth.model import Principal
from catalogd.iceberg.door import IcebergDoor, Loaded
from catalogd.iceberg.door import Request as DoorRequest
from catalogd.iceberg.errors import IcebergError, error_body, translate
from catalogd.iceberg.idempotency import IdempotencyKeys

logger = logging.getLogger(__name__)

__all__ = ["PREFIX", "iceberg_router"]

PREFIX = "/iceberg"
_JSON = "application/json"
#: How long an Idempotency-Key's answer is replayed (advertised in /v1/config).
IDEMPOTENCY_LIFETIME = "PT30M"


def _peer(request: Request) -> str:
    return f"{request.client.host}:{request.client.port}" if request.client is not None else "?"


class _Counters:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.requests = Counter("catalogd_iceberg_requests", "Iceberg REST requests, by operation and status",
                                ["operation", "status"], registry=registry)
        self.reports = Counter("catalogd_iceberg_metrics_reports", "Iceberg metrics reports clients sent, by type",
                               ["type"], registry=registry)


def iceberg_router(door: IcebergDoor, caller: Callable[[Request], Awaitable[Principal]],
                   registry: CollectorRegistry | None = None) -> APIRouter:
    """The routes of the REST catalog, to include in the daemon's HTTP app."""
    router = APIRouter(prefix=PREFIX, include_in_schema=False)
    counters = _Counters(registry)
    keys = IdempotencyKeys(lifetime=30 * 60)

    def answer(operation: str, status: int, body: bytes | None, headers: dict[str, str] | None = None) -> Response:
        counters.requests.labels(operation, str(status)).inc()
        return Response(content=body or b"", status_code=status, media_type=_JSON if body else None,
                        headers=headers)

    def failed(operation: str, exc: BaseException) -> Response:
        err = translate(exc)
        return answer(operation, err.code, error_body(err.code, err.type, err.message))

    async def serve(request: Request, principal: Principal, operation: str, prefix: str | None,
                    handler: Callable[[DoorRequest, bytes], tuple[int, bytes | None, dict[str, str] | None]],
                    write: bool) -> Response:
        raw = await request.body() if request.method in ("POST", "PUT") else b""

        def run() -> tuple[int, bytes | None, dict[str, str] | None]:
            try:
                warehouse = door.warehouse(prefix)
                door.check_job_token(principal, write)
                return handler(DoorRequest(principal, _peer(request), warehouse), raw)
            except Exception as e:  # every failure answers in the spec's model
                err = translate(e)
                return err.code, error_body(err.code, err.type, err.message), None

        key = request.headers.get("idempotency-key") if write else None
        if key:
            scope = (principal.name, request.method, request.url.path, key)
            status, body, headers = await run_in_threadpool(keys.run, scope, raw, run)
        else:
            status, body, headers = await run_in_threadpool(run)
        return answer(operation, status, body, headers)

    def _json(value: Any) -> bytes:
        import json

        return json.dumps(value).encode()

    @router.get("/v1/config")
    async def config(request: Request, warehouse: str | None = None,
                     principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def run() -> Response:
            try:
                result = door.config(warehouse, principal)
                result["defaults"] = {**result["defaults"]}
                result["overrides"]["idempotency-key-lifetime"] = IDEMPOTENCY_LIFETIME
                return answer("config", 200, _json({**result, "idempotency-key-lifetime": IDEMPOTENCY_LIFETIME}))
            except Exception as e:
                return failed("config", e)
        return await run_in_threadpool(run)

    # ------------------------------------------------------------ namespaces

    @router.get("/v1/{prefix}/namespaces")
    async def list_namespaces(request: Request, prefix: str, parent: str | None = None,
                              principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        return await serve(request, principal, "listNamespaces", prefix,
                           lambda r, _: (200, _json(door.list_namespaces(r, parent)), None), write=False)

    @router.post("/v1/{prefix}/namespaces")
    async def create_namespace(request: Request, prefix: str,
                               principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        return await serve(request, principal, "createNamespace", prefix,
                           lambda r, raw: (200, _json(door.create_namespace(r, raw)), None), write=True)

    @router.get("/v1/{prefix}/namespaces/{namespace}")
    async def load_namespace(request: Request, prefix: str, namespace: str,
                             principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        return await serve(request, principal, "loadNamespace", prefix,
                           lambda r, _: (200, _json(door.load_namespace(r, namespace)), None), write=False)

    @router.head("/v1/{prefix}/namespaces/{namespace}")
    async def namespace_exists(request: Request, prefix: str, namespace: str,
                               principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def exists(r: DoorRequest, _: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            door.load_namespace(r, namespace)
            return 204, None, None
        response = await serve(request, principal, "namespaceExists", prefix, exists, write=False)
        return Response(status_code=response.status_code)

    @router.delete("/v1/{prefix}/namespaces/{namespace}")
    async def drop_namespace(request: Request, prefix: str, namespace: str,
                             principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def drop(r: DoorRequest, _: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            door.drop_namespace(r, namespace)
            return 204, None, None
        return await serve(request, principal, "dropNamespace", prefix, drop, write=True)

    @router.post("/v1/{prefix}/namespaces/{namespace}/properties")
    async def update_namespace(request: Request, prefix: str, namespace: str,
                               principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        return await serve(request, principal, "updateProperties", prefix,
                           lambda r, raw: (200, _json(door.update_namespace(r, namespace, raw)), None), write=True)

    # ------------------------------------------------------------ tables

    @router.get("/v1/{prefix}/namespaces/{namespace}/tables")
    async def list_tables(request: Request, prefix: str, namespace: str,
                          principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        return await serve(request, principal, "listTables", prefix,
                           lambda r, _: (200, _json(door.list_tables(r, namespace)), None), write=False)

    @router.post("/v1/{prefix}/namespaces/{namespace}/tables")
    async def create_table(request: Request, prefix: str, namespace: str,
                           principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def create(r: DoorRequest, raw: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            loaded = door.create_table(r, namespace, raw)
            return 200, loaded.body, ({"ETag": loaded.etag} if loaded.metadata_location else None)
        return await serve(request, principal, "createTable", prefix, create, write=True)

    @router.post("/v1/{prefix}/namespaces/{namespace}/register")
    async def register_table(request: Request, prefix: str, namespace: str,
                             principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def register(r: DoorRequest, raw: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            loaded = door.register_table(r, namespace, raw)
            return 200, loaded.body, {"ETag": loaded.etag}
        return await serve(request, principal, "registerTable", prefix, register, write=True)

    @router.get("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    async def load_table(request: Request, prefix: str, namespace: str, table: str,
                         principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        match = request.headers.get("if-none-match")

        def load(r: DoorRequest, _: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            loaded: Loaded = door.load_table(r, namespace, table)
            if match is not None and loaded.etag in {m.strip() for m in match.split(",")}:
                return 304, None, {"ETag": loaded.etag}
            return 200, loaded.body, {"ETag": loaded.etag}
        return await serve(request, principal, "loadTable", prefix, load, write=False)

    @router.head("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    async def table_exists(request: Request, prefix: str, namespace: str, table: str,
                           principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def exists(r: DoorRequest, _: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            door.load_table(r, namespace, table)
            return 204, None, None
        response = await serve(request, principal, "tableExists", prefix, exists, write=False)
        return Response(status_code=response.status_code)

    @router.post("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    async def commit_table(request: Request, prefix: str, namespace: str, table: str,
                           principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def commit(r: DoorRequest, raw: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            loaded = door.commit_table(r, namespace, table, raw)
            return 200, loaded.body, {"ETag": loaded.etag}
        return await serve(request, principal, "updateTable", prefix, commit, write=True)

    @router.delete("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    async def drop_table(request: Request, prefix: str, namespace: str, table: str,
                         purgeRequested: bool = False,
                         principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def drop(r: DoorRequest, _: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            door.drop_table(r, namespace, table, purgeRequested)
            return 204, None, None
        return await serve(request, principal, "dropTable", prefix, drop, write=True)

    @router.post("/v1/{prefix}/tables/rename")
    async def rename_table(request: Request, prefix: str,
                           principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def rename(r: DoorRequest, raw: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            door.rename_table(r, raw)
            return 204, None, None
        return await serve(request, principal, "renameTable", prefix, rename, write=True)

    @router.post("/v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics")
    async def report_metrics(request: Request, prefix: str, namespace: str, table: str,
                             principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def report(r: DoorRequest, raw: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            counters.reports.labels(door.report_metrics(r, namespace, table, raw)).inc()
            return 204, None, None
        return await serve(request, principal, "reportMetrics", prefix, report, write=False)

    @router.post("/v1/{prefix}/transactions/commit")
    async def commit_transaction(request: Request, prefix: str,
                                 principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def commit(r: DoorRequest, raw: bytes) -> tuple[int, bytes | None, dict[str, str] | None]:
            door.commit_transaction(r, raw)
            return 204, None, None
        return await serve(request, principal, "commitTransaction", prefix, commit, write=True)

    @router.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "DELETE", "HEAD"])
    async def unknown(request: Request, rest: str) -> Response:
        err = IcebergError(404, "NoSuchEndpointException" if rest.startswith("v1/") else "NotFoundException",
                           f"no such endpoint {request.method} {request.url.path} (see GET {PREFIX}/v1/config)")
        return answer("unknown", err.code, error_body(err.code, err.type, err.message))

    return router
