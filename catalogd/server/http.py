"""The HTTP side of the daemon: /healthz, /readyz, /metrics (Prometheus) and the REST API
for workflow schedulers (FLIP-435's gateway): refresh dynamic tables, look up a job.

    POST /v3/dynamic-tables/refresh          {"tables": [...], "scheduleTime": "...", "configuration": {...}}
    GET  /v3/dynamic-tables/refresh/{jobId}
    GET  /v3/openapi.json
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from catalogd.errors import CatalogError, InvalidArgumentError, UnsupportedError
from catalogd.manager import CatalogManager
from catalogd.model import RefreshJob
from catalogd.server.handler import Metrics
from catalogd.server.openapi import OPENAPI

if TYPE_CHECKING:
    from catalogd.dynamic.service import DynamicTables

logger = logging.getLogger(__name__)


class _Handler(BaseHTTPRequestHandler):
    server: HttpServer

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("http %s - %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload, indent=2).encode() + b"\n", "application/json")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._json(200, {"status": "ok"})
        elif path == "/readyz":
            problems = self.server.manager.ping()
            ready = all(p is None for p in problems.values())
            catalogs = {name: "ok" if p is None else p for name, p in problems.items()}
            self._json(200 if ready else 503, {"status": "ready" if ready else "not ready", "catalogs": catalogs})
        elif path == "/metrics":
            self._send(200, generate_latest(self.server.metrics.registry), CONTENT_TYPE_LATEST)
        elif path in ("/v3/openapi.json", "/openapi.json"):
            self._json(200, OPENAPI)
        elif path.startswith(_REFRESH + "/"):
            job_id = path[len(_REFRESH) + 1:]
            self._rest(lambda dynamic: _job_json(dynamic.get_job(job_id)))
        else:
            self._not_found(path)

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path != _REFRESH:
            self._not_found(path)
            return

        def refresh(dynamic: DynamicTables) -> dict[str, Any]:
            body = self._body()
            tables = body.get("tables")
            if not isinstance(tables, list) or not tables or not all(isinstance(x, str) for x in tables):
                raise InvalidArgumentError('"tables" must be a non-empty list of dynamic table names')
            schedule = body.get("scheduleTime")
            configuration = body.get("configuration") or {}
            partition = body.get("partition") or None
            if schedule is not None and not isinstance(schedule, str):
                raise InvalidArgumentError('"scheduleTime" must be a string like "2024-03-02 00:00:00"')
            for key, value in (("configuration", configuration), ("partition", partition or {})):
                if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                    raise InvalidArgumentError(f'"{key}" must be an object of strings')
            unknown = sorted(set(body) - {"tables", "scheduleTime", "configuration", "partition"})
            if unknown:
                raise InvalidArgumentError(f"unknown field(s) {unknown}: use tables, scheduleTime, configuration, "
                                           "partition")
            return _job_json(dynamic.refresh(tables, schedule, partition, configuration, trigger="api"))

        self._rest(refresh)

    def _body(self) -> dict[str, Any]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError as e:
            raise InvalidArgumentError(f"Content-Length is not a number: {self.headers.get('Content-Length')!r}") from e
        if length < 0:
            raise InvalidArgumentError(f"Content-Length is negative: {length}")
        if length > _MAX_BODY:
            raise InvalidArgumentError(f"request body over {_MAX_BODY} bytes")
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as e:
            raise InvalidArgumentError(f"the body is not JSON: {e}") from e
        if not isinstance(body, dict):
            raise InvalidArgumentError("the body must be a JSON object")
        return body

    def _rest(self, call: Any) -> None:
        """Run a REST call; a catalogd error becomes {"error": {"kind", "message"}} with its HTTP status."""
        try:
            dynamic = self.server.dynamic
            if dynamic is None:
                raise UnsupportedError("dynamic tables are not served here")
            self._json(200, call(dynamic))
        except CatalogError as e:
            self._json(_STATUS.get(e.kind, 500), {"error": {"kind": e.kind, "message": e.message}})
        except Exception as e:  # the client gets a 500, the log the details
            logger.exception("REST %s %s", self.command, self.path)
            self._json(500, {"error": {"kind": "internal", "message": f"{type(e).__name__}: {e}"}})

    def _not_found(self, path: str) -> None:
        self._json(404, {"error": {"kind": "not-found", "message": f"no such endpoint {path}"},
                         "endpoints": ["/healthz", "/readyz", "/metrics", "/v3/openapi.json",
                                       f"POST {_REFRESH}", f"GET {_REFRESH}/{{jobId}}"]})


_REFRESH = "/v3/dynamic-tables/refresh"
_MAX_BODY = 1 << 20
_STATUS = {"invalid-argument": 400, "usage": 400, "not-found": 404, "already-exists": 409, "conflict": 409,
           "permission-denied": 403, "unsupported": 501, "metastore-unavailable": 503}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p.title() for p in rest)


def _job_json(job: RefreshJob) -> dict[str, Any]:
    return {
        "jobId": job.id, "status": job.status.value, "error": job.error, "clusterInfo": job.cluster_info,
        "runs": [{_camel(k): v for k, v in run.to_json().items()} for run in job.runs],
    }


class HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, manager: CatalogManager, metrics: Metrics,
                 dynamic: DynamicTables | None = None) -> None:
        super().__init__((host, port), _Handler)
        self.manager = manager
        self.metrics = metrics
        self.dynamic = dynamic
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.25},
                                        name="http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
