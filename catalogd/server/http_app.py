"""The daemon's HTTP API as a FastAPI app: health, readiness, metrics and the REST API of dynamic tables.

    GET  /healthz                            the process is up
    GET  /readyz                             every catalog's metastore answers (else 503)
    GET  /metrics                            Prometheus
    POST /v3/dynamic-tables/refresh          {"tables": [...], "scheduleTime": "...", "configuration": {...}}
    GET  /v3/dynamic-tables/refresh/{jobId}  (both: ?wait=<seconds> answers once the job's runs ended)
    GET  /v3/dynamic-tables                  every dynamic table: freshness target, lag, within target or why not
    GET  /v3/dynamic-tables/{table}/runs     a table's run history and its freshness lag over time
    GET  /v3/stages                          open stages: target, owner, purpose, lease left
    GET  /v3/health                          metastores, metadata cache, connections, cluster
    GET  /v3/openapi.json                    generated from the models in ``http_models``
    GET  /ui/...                             the web console (``catalogd.server.console``)
    POST /cluster/invalidations              another member's cache invalidations (``cache_peers``)

Errors are ``{"error": {"kind", "message"}}`` with the status of the catalogd error kind.
Calls that take locks or talk to a metastore run in the threadpool, never on the event loop.
A long poll (``?wait=``) waits on the event loop for its job's runs to end, holding no thread
(``DynamicTables.wait_job``).

With auth on, every route but ``/healthz``, ``/readyz`` and ``/cluster/invalidations`` (signed
with the deployment's key instead: ``cache_peers``) needs ``Authorization: Bearer
<token>`` (401 with ``WWW-Authenticate: Bearer`` without a valid one) and the route's role
(``catalogd.auth.operations.REST_ROLES``; 403 without it): a refresh on the catalog of each
table, the others on any catalog. Writes and denials are audited (surface ``http``).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import Depends, FastAPI, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from catalogd import __version__, model
from catalogd.auth.model import ANONYMOUS, Principal
from catalogd.auth.operations import REST_ROLES
from catalogd.dynamic.run_events import MAX_WAIT, parse_wait
from catalogd.errors import (
    CatalogError,
    InvalidArgumentError,
    PermissionDeniedError,
    RefreshQueueFullError,
    UnsupportedError,
)
from catalogd.names import parse_object
from catalogd.ratelog import BoundedLog
from catalogd.server import overview
from catalogd.server.access import Access
from catalogd.server.cache_peers import INVALIDATIONS, SIGNATURE_HEADER
from catalogd.server.console.app import PREFIX as CONSOLE
from catalogd.server.console.app import ConsoleSources, console_router
from catalogd.server.http_models import (
    DynamicTableList,
    DynamicTableStatus,
    Error,
    Health,
    HealthReport,
    Readiness,
    RefreshJob,
    RefreshRequest,
    RefreshRun,
    RunHistory,
    StageList,
    StageStatus,
)
from catalogd.server.metrics import Metrics

if TYPE_CHECKING:
    from catalogd.iceberg.door import IcebergDoor

logger = logging.getLogger(__name__)

REFRESH = "/v3/dynamic-tables/refresh"
OPENAPI = "/v3/openapi.json"
#: The Iceberg REST catalog's prefix (``catalogd.iceberg.routes``): errors there in its model.
ICEBERG = "/iceberg"
#: The largest request body read (a refresh request is a few hundred bytes).
MAX_BODY = 1 << 20
#: HTTP status of each catalogd error kind; others are 500.
STATUS = {"invalid-argument": 400, "usage": 400, "not-found": 404, "already-exists": 409, "conflict": 409,
          "permission-denied": 403, "unsupported": 501, "metastore-unavailable": 503}
DYNAMIC = "/v3/dynamic-tables"
ENDPOINTS = ["/healthz", "/readyz", "/metrics", OPENAPI, f"POST {REFRESH}", f"GET {REFRESH}/{{jobId}}",
             f"GET {DYNAMIC}", f"GET {DYNAMIC}/{{table}}/runs", "GET /v3/stages", "GET /v3/health", f"GET {CONSOLE}"]
#: Runs a history answer holds at most.
MAX_RUNS = 1000


class Pinger(Protocol):
    """What /readyz needs of the CatalogManager."""

    def ping(self) -> dict[str, str | None]: ...


class PeerReceiver(Protocol):
    """What /cluster/invalidations needs: ``CachePeers.receive``."""

    def receive(self, body: bytes, signature: str | None) -> int: ...


class RefreshService(Protocol):
    """What the REST API needs of the dynamic-table service."""

    def refresh(self, tables: list[str], schedule_time: str | None = None, partition: dict[str, str] | None = None,
                configuration: dict[str, str] | None = None, trigger: str = "manual") -> model.RefreshJob: ...

    def get_job(self, job_id: str, wait: float = 0.0) -> model.RefreshJob: ...

    async def wait_job(self, job_id: str, wait: float) -> model.RefreshJob: ...


class PrettyJSON(JSONResponse):
    """JSON as the daemon always wrote it: indented, one trailing newline (``grep '"status": "..."'`` works)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, indent=2).encode() + b"\n"


def _json(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> PrettyJSON:
    if hasattr(payload, "model_dump"):
        payload = payload.model_dump(mode="json", by_alias=True)
    return PrettyJSON(payload, status_code=status, headers=headers)


def _error(status: int, kind: str, message: str, headers: Mapping[str, str] | None = None) -> PrettyJSON:
    return _json(status, Error.of(kind, message), headers)


def error_response(e: CatalogError) -> PrettyJSON:
    """A catalogd error as its REST answer."""
    if isinstance(e, RefreshQueueFullError):
        # A table's refresh queue is full: not a conflict of the request's own, a "come back later".
        return _error(429, e.kind, e.message, {"Retry-After": str(max(1, math.ceil(e.retry_after)))})
    return _error(STATUS.get(e.kind, 500), e.kind, e.message)


def _doc(description: str) -> dict[str, Any]:
    return {"model": Error, "description": description}


_INTERNAL = _doc("a bug in the daemon (details in its log)")
_UNAUTHENTICATED = _doc("auth is enabled and the request has no valid Authorization: Bearer <token>")
_NO_ROLE = _doc("the token's principal lacks the role the route needs")
_NOT_SERVED = _doc("dynamic tables are not served by this daemon")
_REFRESH_ERRORS: dict[int | str, dict[str, Any]] = {
    400: _doc("bad request: not JSON, an unknown field, a bad time, partition, table name, setting or wait"),
    401: _UNAUTHENTICATED,
    403: _doc("the table's catalog is read-only, or the principal is not a writer there"),
    404: _doc("no such catalog, database or dynamic table"),
    409: _doc("the request conflicts with the table's state"),
    429: _doc("a table has dynamic-tables.max-queued-refreshes-per-table refreshes waiting already: retry "
              "after the Retry-After header's seconds"),
    500: _INTERNAL,
    501: _doc("the table is not driven by this daemon, or dynamic tables are not served here"),
    503: _doc("the metastore is unavailable"),
}
_JOB_ERRORS: dict[int | str, dict[str, Any]] = {
    400: _doc("a bad wait: not a number, negative or not finite"),
    401: _UNAUTHENTICATED,
    403: _NO_ROLE,
    404: _doc("no such job (this daemon keeps the last ones; older runs are in `catalogd dt history`)"),
    500: _INTERNAL,
    501: _NOT_SERVED,
}


#: The ``wait`` query parameter of both refresh routes, as the OpenAPI document shows it.
_WAIT_PARAMETER = {
    "name": "wait", "in": "query", "required": False,
    "schema": {"type": "number", "minimum": 0, "maximum": MAX_WAIT, "default": 0},
    "description": f"A long poll: answer once every run of the job has ended (status SUCCEEDED or FAILED and "
                   f"`ended` set), or when this many seconds lapse, with the job as it is then (ask again). "
                   f"Waits longer than {MAX_WAIT:g} s are cut to {MAX_WAIT:g} s. Absent or 0: answer at once. "
                   f"Not a number, negative or not finite: 400 invalid-argument (a refresh is not started).",
}


def _wait(request: Request) -> float:
    """The request's ``wait`` seconds (0: none), cut to ``MAX_WAIT``.

    Raises:
        InvalidArgumentError: a bad value, or more than one.
    """
    values = request.query_params.getlist("wait")
    if len(values) > 1:
        raise InvalidArgumentError(f"wait is given {len(values)} times: give it once")
    return parse_wait(values[0] if values else None)


class _App(FastAPI):
    def openapi(self) -> dict[str, Any]:
        """The generated document, plus the refresh request's model, minus FastAPI's 422s.

        The refresh endpoint reads its body itself (JSON whatever the Content-Type, the first bad
        field named as it always was, deep nesting a 400), so FastAPI does not see the model.
        """
        if self.openapi_schema:
            return self.openapi_schema
        doc = get_openapi(title=self.title, version=self.version, description=self.description,
                          routes=self.routes)
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        schemas["RefreshRequest"] = RefreshRequest.model_json_schema(
            by_alias=True, ref_template="#/components/schemas/{model}")
        # No request is validated by FastAPI (a str path parameter cannot fail), so no 422 is ever sent.
        for item in doc.get("paths", {}).values():
            for operation in item.values():
                operation.get("responses", {}).pop("422", None)
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        self.openapi_schema = doc
        return doc


class _Unauthenticated(Exception):
    """No valid bearer token: answered 401 with ``WWW-Authenticate: Bearer``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _bearer(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    scheme, _, value = (request.headers.get("authorization") or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


def _client(request: Request) -> str:
    return f"{request.client.host}:{request.client.port}" if request.client is not None else "?"


def _route(request: Request) -> str:
    """The ``REST_ROLES`` key of a request: method and route template."""
    path = request.url.path
    if request.method == "GET" and path.startswith(REFRESH + "/"):
        path = REFRESH + "/{jobId}"
    elif request.method == "GET" and path.startswith(DYNAMIC + "/") and path.endswith("/runs"):
        path = DYNAMIC + "/{table}/runs"
    return f"{request.method} {path}"


def create_app(manager: Pinger, metrics: Metrics, dynamic: RefreshService | None = None,
               access: Access | None = None, console: ConsoleSources | None = None,
               peers: PeerReceiver | None = None, iceberg: IcebergDoor | None = None) -> FastAPI:
    """The HTTP API of one daemon (``access``: auth and audit; None: open to everyone, unaudited).

    ``console``: serve the web console at ``/ui`` too. The read routes it shares with REST
    (dynamic tables, runs, stages, health) need the daemon's ``CatalogManager`` as ``manager``
    and its ``DynamicTables`` as ``dynamic``. ``peers``: the cluster's cache invalidations
    (None: no cluster). ``iceberg``: the Iceberg REST catalog under ``/iceberg`` (None: not served).
    """
    app = _App(title="catalogd REST API", version=__version__,
               description="Refresh dynamic tables from workflow schedulers (FLIP-435's gateway API); "
                           "health, readiness and metrics of the daemon.",
               openapi_url=None, docs_url=None, redoc_url=None, redirect_slashes=False,
               default_response_class=PrettyJSON)

    refused_peer = BoundedLog(logger, "refused-peer-message")

    async def caller(request: Request) -> Principal:
        """The request's principal (a FastAPI dependency); ``_Unauthenticated`` without a valid token."""
        if access is None or not access.enabled:
            return ANONYMOUS
        token = _bearer(request)
        try:
            if token is None:
                raise PermissionDeniedError("no token given: send the header Authorization: Bearer <token>")
            return access.authenticate(token, _client(request))
        except PermissionDeniedError as e:
            access.record(principal=None, surface="http", client=_client(request), operation=_route(request),
                          object=None, outcome="denied", detail=e.message)
            raise _Unauthenticated(e.message) from None

    def check(principal: Principal, request: Request, catalogs: list[str] | None = None,
              target: str | None = None) -> None:
        """The route's role on each of ``catalogs`` (None: on any catalog); a denial is audited."""
        if access is None or not access.enabled:
            return
        route = _route(request)
        needed = REST_ROLES[route]
        try:
            if catalogs is None:
                access.require_any(principal, needed, route)
            for catalog in catalogs or []:
                access.require(principal, catalog, needed, route)
        except PermissionDeniedError as e:
            access.record(principal=principal.name, surface="http", client=_client(request), operation=route,
                          object=target, outcome="denied", detail=e.message)
            raise

    async def rest(call: Callable[[RefreshService], Awaitable[model.RefreshJob]]) -> PrettyJSON:
        try:
            if dynamic is None:
                raise UnsupportedError("dynamic tables are not served here")
            return _json(200, RefreshJob.of(await call(dynamic)))
        except CatalogError as e:
            return error_response(e)

    @app.get("/healthz", operation_id="health", response_model=Health, tags=["daemon"],
             summary="The process is up",
             response_description="the process is up")
    async def healthz() -> PrettyJSON:
        # async: answered on the event loop even when every worker thread is busy.
        return _json(200, Health(status="ok"))

    @app.get("/readyz", operation_id="readiness", response_model=Readiness, tags=["daemon"],
             summary="Every catalog's metastore answers",
             response_description="every catalog's metastore answers",
             responses={503: {"model": Readiness, "description": "a catalog's metastore does not answer"}})
    def readyz() -> PrettyJSON:
        problems = manager.ping()
        ready = all(p is None for p in problems.values())
        catalogs = {name: "ok" if p is None else p for name, p in problems.items()}
        return _json(200 if ready else 503, Readiness(status="ready" if ready else "not ready", catalogs=catalogs))

    @app.get("/metrics", operation_id="metrics", tags=["daemon"], summary="Prometheus metrics",
             response_class=Response,
             responses={200: {"description": "the Prometheus text format",
                              "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}},
                        401: _UNAUTHENTICATED, 403: _NO_ROLE})
    def prometheus(request: Request, principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        try:
            check(principal, request)
        except CatalogError as e:
            return error_response(e)
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get(OPENAPI, include_in_schema=False)
    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(request: Request, principal: Principal = Depends(caller)) -> PrettyJSON:  # noqa: B008
        try:
            check(principal, request)
        except CatalogError as e:
            return error_response(e)
        return _json(200, app.openapi())

    @app.post(REFRESH, operation_id="refreshDynamicTables", response_model=RefreshJob, tags=["dynamic tables"],
              summary="Refresh dynamic tables now", response_description="the job: its runs, started or joined",
              description="Starts one refresh per table; a refresh already waiting or running for the same "
                          "table and partition is joined, not repeated (a request that only joins one run "
                          "answers that run's jobId). The request returns once its runs are queued; tables "
                          "take turns for the refresh workers. Works while a table is suspended. With "
                          "scheduleTime, a table with partition.fields.<col>.date-formatter refreshes only "
                          "the partition format(scheduleTime - freshness). With wait, the answer comes once "
                          "the job's runs have ended (or the wait lapsed): one request for a refresh and "
                          "its outcome.",
              responses=_REFRESH_ERRORS,
              openapi_extra={"parameters": [_WAIT_PARAMETER],
                             "requestBody": {"required": True, "content": {"application/json": {
                                 "schema": {"$ref": "#/components/schemas/RefreshRequest"}}}}})
    async def refresh(request: Request, principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        tables: list[str] = []
        denied: list[bool] = []

        async def call(service: RefreshService) -> model.RefreshJob:
            wait = _wait(request)  # a bad one starts nothing
            body = RefreshRequest.parse(_decode(await _read_body(request)))
            tables.extend(body.tables)
            if access is not None and access.enabled:
                catalogs = sorted({access.catalog(parse_object(t).catalog) for t in body.tables})
                try:
                    check(principal, request, catalogs, ", ".join(body.tables))
                except PermissionDeniedError:
                    denied.append(True)  # audited by check
                    raise
            job = await run_in_threadpool(service.refresh, body.tables, body.schedule_time,
                                          body.partition or None, body.configuration or {}, trigger="api")
            if wait <= 0:
                return job
            return await service.wait_job(job.id, wait)

        try:
            response = await rest(call)
        except ClientDisconnect:
            # The client left (or was cut for being slow) mid-body: nobody to answer.
            return Response(status_code=400)
        if access is not None and access.audit is not None and not denied:
            ok = response.status_code == 200
            detail = None if ok else json.loads(bytes(response.body)).get("error", {}).get("message")
            access.record(principal=principal.name, surface="http", client=_client(request),
                          operation=_route(request), object=", ".join(tables) or None,
                          outcome="ok" if ok else "error", detail=detail)
        return response

    @app.get(REFRESH + "/{jobId:path}", operation_id="getRefreshJob", response_model=RefreshJob,
             tags=["dynamic tables"], summary="A refresh job's status", responses=_JOB_ERRORS,
             response_description="the job with its current status (with wait: once its runs ended, or "
                                  "the wait lapsed)",
             openapi_extra={"parameters": [_WAIT_PARAMETER]})
    # The annotations are strings (PEP 563) that FastAPI resolves in the module: a dependency
    # defined in here can only be named in a default.
    async def job(request: Request, job_id: str = Path(alias="jobId", description="the jobId a refresh answered"),
                  principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        try:
            check(principal, request)
        except CatalogError as e:
            return error_response(e)
        try:
            wait = _wait(request)
        except CatalogError as e:
            return error_response(e)
        if wait <= 0:
            return await rest(lambda service: run_in_threadpool(service.get_job, job_id))
        return await rest(lambda service: service.wait_job(job_id, wait))

    @app.post(INVALIDATIONS, include_in_schema=False)
    async def invalidations(request: Request) -> Response:
        # Between members only (not part of the REST API): signed with the deployment's key, no token.
        try:
            if peers is None:
                raise UnsupportedError("this daemon is no member of a cluster (cluster.members)")
            body = await _read_body(request)
            await run_in_threadpool(peers.receive, body, request.headers.get(SIGNATURE_HEADER))
        except ClientDisconnect:
            return Response(status_code=400)
        except PermissionDeniedError as e:
            # Anyone who reaches the port can send these: the first is logged, then a count a minute.
            refused_peer.log("refused cache invalidations from %s: %s", _client(request), e.message)
            return _error(401, e.kind, e.message)
        except CatalogError as e:
            return error_response(e)
        return Response(status_code=204)

    _overview_routes(app, manager, dynamic, access, console or ConsoleSources(), caller, check)
    if iceberg is not None:
        from catalogd.iceberg.routes import iceberg_router  # pyiceberg is loaded only where it serves

        app.include_router(iceberg_router(iceberg, caller, metrics.registry))
    if console is not None:
        app.include_router(console_router(manager, dynamic, access, console))

    @app.exception_handler(_Unauthenticated)
    async def unauthenticated(request: Request, e: _Unauthenticated) -> Response:
        if request.url.path.startswith(ICEBERG + "/"):
            body = json.dumps({"error": {"message": e.message, "type": "NotAuthorizedException", "code": 401}})
            return Response(body, status_code=401,
                            media_type="application/json", headers={"WWW-Authenticate": "Bearer"})
        return _error(401, "permission-denied", e.message, {"WWW-Authenticate": "Bearer"})

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, e: HTTPException) -> Response:
        if e.status_code == 404:
            return _json(404, {**Error.of("not-found", f"no such endpoint {request.url.path}").model_dump(),
                               "endpoints": ENDPOINTS})
        if e.status_code == 405:
            allowed = (e.headers or {}).get("Allow", "")
            return _error(405, "method-not-allowed",
                          f"{request.method} is not allowed on {request.url.path}: use {allowed}", e.headers)
        return _error(e.status_code, "invalid-argument" if e.status_code < 500 else "internal", str(e.detail),
                      e.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError) -> Response:
        return error_response(InvalidArgumentError(f"bad request: {e.errors()}"))

    app.add_middleware(_Bugs)
    return app


def _overview_routes(app: FastAPI, manager: Any, dynamic: Any, access: Access | None, console: ConsoleSources,
                     caller: Callable[[Request], Awaitable[Principal]],
                     check: Callable[..., None]) -> None:
    """The read routes the console shares with REST: dynamic tables' status and runs, stages, health."""

    def readable(principal: Principal) -> list[str]:
        names = sorted(manager.catalogs())
        if access is None or not access.enabled:
            return names
        return [n for n in names if access.allows(principal, n, REST_ROLES[f"GET {DYNAMIC}"])]

    def served() -> Any:
        if dynamic is None:
            raise UnsupportedError("dynamic tables are not served here")
        return dynamic

    async def answer(request: Request, principal: Principal, build: Callable[[], Any],
                     catalogs: list[str] | None = None, target: str | None = None) -> Response:
        try:
            check(principal, request, catalogs, target)
            return _json(200, await run_in_threadpool(build))
        except CatalogError as e:
            return error_response(e)

    errors: dict[int | str, dict[str, Any]] = {401: _UNAUTHENTICATED, 403: _NO_ROLE, 500: _INTERNAL}

    @app.get(DYNAMIC, operation_id="listDynamicTables", response_model=DynamicTableList, tags=["dynamic tables"],
             summary="Every dynamic table with its freshness", responses={**errors, 501: _NOT_SERVED},
             response_description="the tables of every catalog the caller reads, by name")
    async def list_dynamic(request: Request, principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        return await answer(request, principal, lambda: DynamicTableList(tables=[
            DynamicTableStatus.of(dt) for catalog in readable(principal)
            for dt in overview.dynamic_tables_of(served(), catalog)]))

    @app.get(DYNAMIC + "/{table}/runs", operation_id="dynamicTableRuns", response_model=RunHistory,
             tags=["dynamic tables"], summary="A dynamic table's runs and its freshness lag over time",
             responses={**errors, 400: _doc("a bad table name or limit"), 404: _doc("no such dynamic table"),
                        501: _NOT_SERVED},
             response_description="the runs, newest first, and [time, lag] points rebuilt from them")
    async def runs(request: Request, table: str = Path(description="catalog.database.table"),
                   limit: int = 100, principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        try:
            path = parse_object(table)
            if not 0 < limit <= MAX_RUNS:
                raise InvalidArgumentError(f"limit {limit}: use 1 to {MAX_RUNS}")
        except CatalogError as e:
            return error_response(e)
        catalog = access.catalog(path.catalog) if access is not None else (path.catalog or "")

        def build() -> RunHistory:
            service = served()
            dt = service.get(path)
            history = service.history(path, limit)
            return RunHistory(table=dt.full_name, target_seconds=overview.target_seconds(dt),
                              runs=[RefreshRun.of(r) for r in history], lag=overview.lag_points(history))

        return await answer(request, principal, build, [catalog] if access is not None else None, table)

    @app.get("/v3/stages", operation_id="listOpenStages", response_model=StageList, tags=["stages"],
             summary="Open stages with their lease left", responses=errors,
             response_description="the open and committing stages of every catalog the caller reads")
    async def stages(request: Request, principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        def build() -> StageList:
            found = []
            for catalog in readable(principal):
                for s in overview.stages_of(manager, catalog):
                    found.append(StageStatus(id=s.id, target=f"{s.catalog}.{s.database}.{s.target}",
                                             purpose=s.purpose.value, state=s.state.value, owner=s.owner,
                                             created=s.created, lease_left_seconds=overview.lease_left(s)))
            return StageList(stages=found)

        return await answer(request, principal, build)

    @app.get("/v3/health", operation_id="healthReport", response_model=HealthReport, tags=["daemon"],
             summary="Metastores, cache, connections and cluster", responses=errors,
             response_description="the daemon at a glance")
    async def health(request: Request, principal: Principal = Depends(caller)) -> Response:  # noqa: B008
        sources = console.health or overview.HealthSources(ping=manager.ping)
        return await answer(request, principal, lambda: HealthReport.model_validate(overview.health(sources)))


class _Bugs:
    """A bug answers 500 ``{"error": {"kind": "internal"}}`` and is logged once, here.

    Not an ``exception_handler(Exception)``: Starlette re-raises after that one, and the server
    would log the traceback a second time.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as e:
            # The client gets a 500, the log the details.
            logger.error("HTTP %s %s", scope.get("method"), scope.get("path"), exc_info=e)
            if not started:
                await _error(500, "internal", f"{type(e).__name__}: {e}")(scope, receive, send)


async def _read_body(request: Request) -> bytes:
    """The body, refused before reading when it is too large or its length is not a number."""
    header = request.headers.get("content-length")
    if header is not None:
        # The HTTP parser has already refused a length that is not a non-negative number.
        try:
            length = int(header)
        except ValueError as e:
            raise InvalidArgumentError(f"Content-Length is not a number: {header!r}") from e
        if length < 0:
            raise InvalidArgumentError(f"Content-Length is negative: {length}")
        if length > MAX_BODY:
            raise InvalidArgumentError(f"request body over {MAX_BODY} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise InvalidArgumentError(f"request body over {MAX_BODY} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _decode(raw: bytes) -> object:
    """The JSON in a body (an empty body is ``{}``), whatever its Content-Type says (curl -d sends a form's)."""
    try:
        return json.loads(raw or b"{}")
    except RecursionError:
        raise InvalidArgumentError("the body is not JSON this server reads: it is nested too deeply") from None
    except ValueError as e:
        raise InvalidArgumentError(f"the body is not JSON: {e}") from e
