"""The web console at ``/ui``: catalogs, dynamic tables, stages, audit and health, rendered on the server.

Pages are Jinja2 templates (autoescaped: a name, comment or SQL text is shown, never run) with
inline SVG plots (``plot``) and one small script (confirm dialogs, filtering a list as you type)
that the pages work without. Nothing is fetched from anywhere but the daemon.

Sessions (``sessions``): with auth on, ``/ui/login`` takes a token and answers with an HTTP-only,
SameSite=Strict cookie (Secure under TLS) naming a server-side session, unless the browser says the
form was posted from another site (``origin``: login CSRF); with auth off a session is opened on
the first visit. Every page checks the role the same data needs on the Thrift API
(``THRIFT_ROLES``: reader for reads, writer for a refresh, admin for suspend and resume, admin
daemon-wide for the audit log); every action is a POST that must carry the session's CSRF token.
Actions and denials are audited (surface ``http``) like the REST API's.
"""

from __future__ import annotations

import datetime
import logging
import re
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from catalogd.auth.audit import OUTCOMES, read_audit
from catalogd.auth.model import ANONYMOUS, Principal, Role
from catalogd.auth.operations import THRIFT_ROLES
from catalogd.catalog.base import RESERVED_PROPERTY_PREFIX
from catalogd.dynamic.store import FRESHNESS as DYNAMIC_MARK
from catalogd.errors import CatalogError, InvalidArgumentError, NotFoundError, PermissionDeniedError, UnsupportedError
from catalogd.model import DynamicTableChange, RunStatus
from catalogd.names import NamespacePath, ObjectPath, quote
from catalogd.server import overview
from catalogd.server.access import Access
from catalogd.server.console import plot
from catalogd.server.console.origin import foreign_origin
from catalogd.server.console.sessions import COOKIE, Session, Sessions
from catalogd.spark_common import spark_conf_for

if TYPE_CHECKING:
    from catalogd.dynamic.service import DynamicTables
    from catalogd.manager import CatalogManager

__all__ = ["PREFIX", "ConsoleSources", "console_router"]

logger = logging.getLogger(__name__)

PREFIX = "/ui"
HERE = Path(__file__).parent
#: Partitions shown on one page of a table.
PAGE_SIZE = 100
#: Runs of a dynamic table read for its page (its plots and run list).
HISTORY = 200
#: The largest form body read (a token and a CSRF field).
MAX_FORM = 16 * 1024
#: Audit lines shown at most.
AUDIT_LIMIT = 500
#: Properties folded away on a table page: catalogd's own and what Hive and Spark keep for themselves.
RESERVED = (RESERVED_PROPERTY_PREFIX, "spark.sql.", "transient_lastDdlTime", "numFiles", "numRows", "totalSize",
            "rawDataSize", "COLUMN_STATS_ACCURATE", "numFilesErasureCoded", "bucketing_version")
ACTIONS = {"refresh": Role.WRITER, "suspend": THRIFT_ROLES["alterDynamicTable"],
           "resume": THRIFT_ROLES["alterDynamicTable"]}
#: Content-Security-Policy of every page: its own script and style only, no frames, forms post here.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")


@dataclass
class ConsoleSources:
    """What the console reads beyond the API's manager and dynamic tables (all optional)."""

    health: overview.HealthSources | None = None
    #: The audit log's file (None: no audit page).
    audit_path: Path | None = None
    #: Whether the HTTP port serves TLS (the cookie is then ``Secure``).
    tls: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _fmt_time(epoch: float | int | None, millis: bool = False) -> str:
    if epoch is None:
        return ""
    seconds = epoch / 1000.0 if millis else float(epoch)
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 120:
        return f"{sign}{seconds:.1f}s"
    if seconds < 7200:
        return f"{sign}{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{sign}{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def _fmt_bytes(size: int | None) -> str:
    if size is None:
        return ""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(size)


def _dotted(*parts: str) -> str:
    return ".".join(quote(p) for p in parts)


def _url(*parts: str) -> str:
    """A console path whose name parts are URL-quoted (``/`` included)."""
    return PREFIX + "/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(time=_fmt_time, duration=_fmt_duration, bytes=_fmt_bytes)
    env.globals.update(url=_url, dotted=_dotted, prefix=PREFIX)
    return env


def console_router(manager: CatalogManager | Any, dynamic: DynamicTables | Any | None, access: Access | None,
                   sources: ConsoleSources | None = None, sessions: Sessions | None = None) -> APIRouter:
    """The console's routes, for the daemon's FastAPI app."""
    sources = sources or ConsoleSources()
    sessions = sessions or Sessions()
    env = _environment()
    router = APIRouter(prefix=PREFIX, include_in_schema=False)
    auth_on = access is not None and access.enabled

    # ------------------------------------------------------------ who is asking

    def client_of(request: Request) -> str:
        return f"{request.client.host}:{request.client.port}" if request.client is not None else "?"

    def principal_of(session: Session) -> Principal:
        """The session's principal, authenticated again (a token a reload removed ends the session)."""
        if not auth_on:
            return ANONYMOUS
        assert access is not None
        # The token was proven at sign-in: checked again (a reload may have removed it), but
        # never held back by others' failed sign-ins, nor counted as a guess.
        return access.authenticate(session.token, throttled=False)

    def allows(principal: Principal, catalog: str | None, needed: Role) -> bool:
        if not auth_on:
            return True
        assert access is not None and access.authority is not None
        if catalog is None:
            return access.authority.allows(principal, None, needed)
        return access.allows(principal, catalog, needed)

    def require(principal: Principal, catalog: str | None, needed: Role, operation: str, request: Request,
                target: str | None = None) -> None:
        """The role on ``catalog`` (None: daemon-wide); a denial is audited and raised."""
        if not auth_on:
            return
        assert access is not None
        try:
            access.require(principal, catalog, needed, operation)
        except PermissionDeniedError as e:
            access.record(principal=principal.name, surface="http", client=client_of(request),
                          operation=f"{request.method} {request.url.path}", object=target, outcome="denied",
                          detail=e.message)
            raise

    def readable(principal: Principal) -> list[str]:
        return [name for name in sorted(manager.catalogs()) if allows(principal, name, Role.READER)]

    def render(request: Request, session: Session, principal: Principal, template: str, status: int = 200,
               **context: Any) -> HTMLResponse:
        is_admin = allows(principal, None, Role.ADMIN)
        html = env.get_template(template).render(
            request=request, session=session, principal=principal, auth_on=auth_on, csrf=session.csrf,
            is_admin=is_admin, audit_on=sources.audit_path is not None, **context)
        response = HTMLResponse(html, status_code=status)
        _secure(response)
        set_cookie(request, response, session)
        return response

    def set_cookie(request: Request, response: Response, session: Session) -> None:
        response.set_cookie(COOKIE, session.id, httponly=True, samesite="strict", path=PREFIX,
                            secure=sources.tls or request.url.scheme == "https")

    def session_of(request: Request) -> Session | None:
        """The request's session; with auth off one is opened for a first visit."""
        found = sessions.get(request.cookies.get(COOKIE))
        if found is None and not auth_on:
            found = sessions.open(None)
        return found

    def login_redirect(request: Request) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"{PREFIX}/login?next={urllib.parse.quote(target, safe='')}", status_code=303)

    async def page(request: Request, build: Callable[[Session, Principal], Any]) -> Response:
        """Run ``build`` (in the threadpool: it talks to metastores) for a signed-in session; errors as a page."""
        session = session_of(request)
        if session is None:
            return login_redirect(request)
        try:
            principal = principal_of(session)
        except PermissionDeniedError:
            sessions.close(session.id)
            return login_redirect(request)
        try:
            result = await run_in_threadpool(build, session, principal)
        except CatalogError as e:
            status = {"not-found": 404, "permission-denied": 403, "invalid-argument": 400,
                      "metastore-unavailable": 503}.get(e.kind, 500)
            return render(request, session, principal, "error.html", status=status, kind=e.kind, message=e.message)
        if isinstance(result, Response):
            return result
        template, context = result
        return render(request, session, principal, template, **context)

    # ------------------------------------------------------------ login

    @router.get("", response_class=HTMLResponse)
    @router.get("/", response_class=HTMLResponse)
    async def home() -> Response:
        return RedirectResponse(f"{PREFIX}/dynamic", status_code=303)

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        files = {"console.css": "text/css", "console.js": "text/javascript"}
        if name not in files:
            return Response(status_code=404)
        return FileResponse(HERE / "static" / name, media_type=files[name],
                            headers={"Cache-Control": "max-age=300", "X-Content-Type-Options": "nosniff"})

    @router.get("/login", response_class=HTMLResponse)
    async def login_form(request: Request, next: str = "") -> Response:
        if not auth_on:
            return RedirectResponse(_safe_next(next), status_code=303)
        html = env.get_template("login.html").render(next=_safe_next(next), error=None, auth_on=True,
                                                     principal=None, session=None)
        response = HTMLResponse(html)
        _secure(response)
        # Its form's post must name the console as its origin (``origin``): no-referrer would
        # make a browser without Sec-Fetch-Site send ``Origin: null``.
        response.headers["Referrer-Policy"] = "same-origin"
        return response

    @router.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        # Login CSRF: another site's page must not sign the browser in (as the site's own
        # principal). Checked before the form is read: a refused post gets no session and no cookie.
        foreign = foreign_origin(request.headers)
        if foreign is not None:
            if access is not None:
                access.record(principal=None, surface="http", client=client_of(request), operation="POST /ui/login",
                              object=None, outcome="denied", detail=f"sign-in from another site refused: {foreign}")
            html = env.get_template("login.html").render(
                next=f"{PREFIX}/dynamic", error="This sign-in was sent from another site: refused. Sign in here.",
                auth_on=True, principal=None, session=None)
            refused = HTMLResponse(html, status_code=403)
            _secure(refused)
            return refused
        form = await _form(request)
        token = str(form.get("token") or "").strip()
        target = _safe_next(str(form.get("next") or ""))
        if not auth_on:
            return RedirectResponse(target, status_code=303)
        assert access is not None
        try:
            # Keyed by the token tried and the address it came from: others' wrong tokens do not
            # refuse this one (see catalogd.auth.throttle).
            principal = access.authenticate(token or None, client_of(request))
        except PermissionDeniedError as e:
            access.record(principal=None, surface="http", client=client_of(request), operation="POST /ui/login",
                          object=None, outcome="denied", detail=e.message)
            html = env.get_template("login.html").render(next=target, error="That token is not valid here.",
                                                         auth_on=True, principal=None, session=None)
            refused = HTMLResponse(html, status_code=401)
            _secure(refused)
            return refused
        session = sessions.open(token)
        logger.info("console: %s signed in from %s", principal.name, client_of(request))
        response = RedirectResponse(target, status_code=303)
        set_cookie(request, response, session)
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        session = sessions.get(request.cookies.get(COOKIE))
        form = await _form(request)
        if session is not None and session.csrf_ok(str(form.get("csrf") or "")):
            sessions.close(session.id)
        response = RedirectResponse(f"{PREFIX}/login" if auth_on else f"{PREFIX}/dynamic", status_code=303)
        response.delete_cookie(COOKIE, path=PREFIX)
        return response

    # ------------------------------------------------------------ catalogs

    @router.get("/catalogs", response_class=HTMLResponse)
    async def catalogs(request: Request, q: str = "") -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            needle = q.strip().lower()
            tree: list[dict[str, Any]] = []
            matches: list[dict[str, str]] = []
            for name in readable(principal):
                info = manager.catalog_info(name)
                databases: list[str] = []
                problem = None
                try:
                    databases = manager.list_databases(name)
                except CatalogError as e:
                    problem = e.message
                tree.append({"info": info, "databases": databases, "problem": problem})
                if needle:
                    for database in databases:
                        matches.extend(_search(manager, name, database, needle))
            return "catalogs.html", {"tree": tree, "q": q, "matches": matches}

        return await page(request, build)

    @router.get("/catalogs/{catalog}", response_class=HTMLResponse)
    async def catalog_page(request: Request, catalog: str) -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            require(principal, catalog, Role.READER, "getCatalog", request, catalog)
            info = manager.catalog_info(catalog)
            conf_problem: str | None = None
            try:
                conf = _redacted(spark_conf_for(info))
            except CatalogError as e:
                conf, conf_problem = {}, e.message
            return "catalog.html", {"info": info, "databases": manager.list_databases(catalog), "conf": conf,
                                    "conf_problem": conf_problem}

        return await page(request, build)

    @router.get("/catalogs/{catalog}/{database}", response_class=HTMLResponse)
    async def database_page(request: Request, catalog: str, database: str) -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            require(principal, catalog, Role.READER, "listTables", request, f"{catalog}.{database}")
            ns = NamespacePath(catalog, database)
            views = set(manager.list_views(ns))
            tables = [t for t in manager.list_tables(ns) if t not in views]
            # The tables this daemon drives, from memory: listing dynamic tables reads every table's
            # parameters from the metastore (seconds with a thousand tables).
            prefix = f"{catalog}.{database}."
            dynamic_names = {name[len(prefix):] for name, _, _ in (dynamic.lags() if dynamic is not None else [])
                             if name.startswith(prefix)}
            return "database.html", {"catalog": catalog, "database": manager.get_database(ns), "tables": tables,
                                     "views": sorted(views), "functions": manager.list_functions(ns),
                                     "dynamic": dynamic_names}

        return await page(request, build)

    @router.get("/tables/{catalog}/{database}/{name}", response_class=HTMLResponse)
    async def table_page(request: Request, catalog: str, database: str, name: str,
                         page_no: int = Query(1, alias="page")) -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            require(principal, catalog, Role.READER, "getTable", request, f"{catalog}.{database}.{name}")
            path = ObjectPath(catalog, database, name)
            table = manager.get_table(path)
            if table.view_text is not None:
                return "view.html", {"table": table}
            partitions: list[Any] = []
            partition_problem = None
            if table.partition_keys:
                try:
                    partitions = manager.list_partitions(path)
                except UnsupportedError as e:
                    partition_problem = e.message
            pages = max(1, -(-len(partitions) // PAGE_SIZE))
            current = min(max(page_no, 1), pages)
            props = sorted(table.properties.items())
            is_dynamic = DYNAMIC_MARK in table.properties
            return "table.html", {
                "table": table, "partitions": partitions[(current - 1) * PAGE_SIZE: current * PAGE_SIZE],
                "partition_count": len(partitions), "page": current, "pages": pages,
                "properties": [(k, v) for k, v in props if not k.startswith(RESERVED)],
                "reserved": [(k, v) for k, v in props if k.startswith(RESERVED)], "is_dynamic": is_dynamic,
                "partition_problem": partition_problem}

        return await page(request, build)

    @router.get("/functions/{catalog}/{database}/{name}", response_class=HTMLResponse)
    async def function_page(request: Request, catalog: str, database: str, name: str) -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            require(principal, catalog, Role.READER, "getFunction", request, f"{catalog}.{database}.{name}")
            return "function.html", {"function": manager.get_function(ObjectPath(catalog, database, name))}

        return await page(request, build)

    # ------------------------------------------------------------ dynamic tables

    def service() -> DynamicTables | Any:
        if dynamic is None:
            raise NotFoundError("dynamic tables are not served by this daemon")
        return dynamic

    @router.get("/dynamic", response_class=HTMLResponse)
    async def dynamic_list(request: Request) -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            rows = []
            for catalog in readable(principal):
                for dt in overview.dynamic_tables_of(service(), catalog):
                    rows.append({"dt": dt, "target": overview.target_seconds(dt),
                                 "reason": overview.why_not_fresh(dt)})
            return "dynamic_list.html", {"rows": rows}

        return await page(request, build)

    @router.get("/dynamic/{catalog}/{database}/{name}", response_class=HTMLResponse)
    async def dynamic_page(request: Request, catalog: str, database: str, name: str) -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            full = f"{catalog}.{database}.{name}"
            require(principal, catalog, Role.READER, "getDynamicTable", request, full)
            path = ObjectPath(catalog, database, name)
            dt = service().get(path)
            runs = service().history(path, HISTORY)
            target = overview.target_seconds(dt)
            durations = [(r.started, r.ended - r.started, r.status is RunStatus.SUCCEEDED) for r in runs
                         if r.started is not None and r.ended is not None]
            actions = {action: allows(principal, catalog, role) for action, role in ACTIONS.items()}
            return "dynamic.html", {
                "dt": dt, "runs": runs, "target": target, "reason": overview.why_not_fresh(dt),
                "lag_plot": plot.lag_plot(overview.lag_points(runs), target),
                "duration_plot": plot.bars(sorted(durations), "run durations"),
                "actions": actions, "message": request.query_params.get("done")}

        return await page(request, build)

    @router.post("/dynamic/{catalog}/{database}/{name}/{action}")
    async def dynamic_action(request: Request, catalog: str, database: str, name: str, action: str) -> Response:
        full = f"{catalog}.{database}.{name}"
        operation = f"POST {PREFIX}/dynamic/{{table}}/{action}"
        session = sessions.get(request.cookies.get(COOKIE))
        form = await _form(request)

        def refuse(principal: str | None, why: str) -> Response:
            if access is not None:
                access.record(principal=principal, surface="http", client=client_of(request), operation=operation,
                              object=full, outcome="denied", detail=why)
            response = HTMLResponse(env.get_template("refused.html").render(message=why, auth_on=auth_on,
                                                                           principal=None, session=None),
                                    status_code=403)
            _secure(response)
            return response

        if session is None:
            return refuse(None, "no console session: sign in and use the page's buttons")
        if not session.csrf_ok(str(form.get("csrf") or "")):
            try:
                who: str | None = principal_of(session).name
            except PermissionDeniedError:
                who = None
            return refuse(who, "the form's CSRF token is missing or wrong: reload the page and try again")
        if action not in ACTIONS:
            return Response(status_code=404)
        try:
            principal = principal_of(session)
        except PermissionDeniedError:
            sessions.close(session.id)
            return login_redirect(request)
        if not allows(principal, catalog, ACTIONS[action]):
            return refuse(principal.name, f"{principal.name} may not {action} {full}: it needs "
                                          f"{ACTIONS[action].name.lower()} on catalog {catalog}")

        def act() -> str:
            path = ObjectPath(catalog, database, name)
            if action == "refresh":
                job = service().refresh([full], trigger="manual")
                return f"refresh started: job {job.id}"
            service().alter(path, DynamicTableChange(action=action.upper()))
            return f"{action}ed" if action != "suspend" else "suspended"

        try:
            message = await run_in_threadpool(act)
            outcome, detail = "ok", None
        except CatalogError as e:
            message, outcome, detail = f"{action} failed: {e.kind}: {e.message}", "error", f"{e.kind}: {e.message}"
        if access is not None:
            access.record(principal=principal.name, surface="http", client=client_of(request), operation=operation,
                          object=full, outcome=outcome, detail=detail)
        back = _url("dynamic", catalog, database, name) + "?" + urllib.parse.urlencode({"done": message})
        return RedirectResponse(back, status_code=303)

    # ------------------------------------------------------------ stages, audit, health

    @router.get("/stages", response_class=HTMLResponse)
    async def stages(request: Request) -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            rows: list[dict[str, Any]] = []
            problems: list[str] = []
            now = time.time()
            for catalog in readable(principal):
                try:
                    found = overview.stages_of(manager, catalog)
                except CatalogError as e:
                    problems.append(f"{catalog}: {e.message}")
                    continue
                rows.extend({"stage": s, "lease_left": overview.lease_left(s, now)} for s in found)
            return "stages.html", {"rows": rows, "problems": problems}

        return await page(request, build)

    @router.get("/audit", response_class=HTMLResponse)
    async def audit(request: Request, principal_filter: str = Query("", alias="principal"),
                    operation: str = "", outcome: str = "") -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            require(principal, None, Role.ADMIN, "audit", request)
            if sources.audit_path is None:
                raise NotFoundError("this daemon keeps no audit log")
            if outcome and outcome not in OUTCOMES:
                raise InvalidArgumentError(f"outcome {outcome!r}: use one of {', '.join(OUTCOMES)}")
            entries = read_audit(sources.audit_path, AUDIT_LIMIT * 4, principal_filter.strip() or None,
                                 denied=outcome == "denied")
            entries = [e for e in entries if (not outcome or e.get("outcome") == outcome)
                       and (not operation or operation.lower() in str(e.get("operation", "")).lower())]
            return "audit.html", {"entries": entries[-AUDIT_LIMIT:][::-1], "principal_filter": principal_filter,
                                  "operation": operation, "outcome": outcome, "outcomes": OUTCOMES}

        return await page(request, build)

    @router.get("/health", response_class=HTMLResponse)
    async def health_page(request: Request) -> Response:
        def build(session: Session, principal: Principal) -> tuple[str, dict[str, Any]]:
            if not readable(principal):
                require(principal, None, Role.READER, "health", request)
            report = overview.health(sources.health) if sources.health is not None else None
            return "health.html", {"report": report}

        return await page(request, build)

    return router


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form's fields (the first value of each); none past ``MAX_FORM`` bytes.

    Read here rather than with Starlette's ``request.form()``, which needs python-multipart for
    what these small forms never send.
    """
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            return {}  # no honest form is this large: as if empty (no token, no CSRF field)
    fields = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in fields.items()}


def _secure(response: Response) -> None:
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"


def _safe_next(target: str) -> str:
    """Where to go after login: a console path only (never another site)."""
    if target.startswith(PREFIX + "/") and not target.startswith("//") and "\\" not in target:
        return target
    return f"{PREFIX}/dynamic"


def _redacted(conf: dict[str, str]) -> dict[str, str]:
    # A reference to where a secret is (${env.NAME}, as spark-conf prints the truststore's
    # password) is shown: it is what to copy; anything else under a secret's name is not.
    return {k: ("(hidden)" if ("password" in k.lower() or "secret" in k.lower()) and not _is_reference(v) else v)
            for k, v in conf.items()}


def _is_reference(value: str) -> bool:
    return re.fullmatch(r"\$\{env\.[A-Za-z_][A-Za-z0-9_]*\}", value) is not None


def _search(manager: Any, catalog: str, database: str, needle: str) -> Iterable[dict[str, str]]:
    """Tables, views and functions of one database whose name holds ``needle``."""
    ns = NamespacePath(catalog, database)
    if needle in database.lower():
        yield {"kind": "database", "name": _dotted(catalog, database), "url": _url("catalogs", catalog, database)}
    try:
        views = set(manager.list_views(ns))
        for table in manager.list_tables(ns):
            if needle in table.lower():
                kind = "view" if table in views else "table"
                yield {"kind": kind, "name": _dotted(catalog, database, table),
                       "url": _url("tables", catalog, database, table)}
        for function in manager.list_functions(ns):
            if needle in function.lower():
                yield {"kind": "function", "name": _dotted(catalog, database, function),
                       "url": _url("functions", catalog, database, function)}
    except CatalogError:
        return

