"""The HTTP side of the daemon: /healthz, /readyz and /metrics (Prometheus)."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from catalogd.manager import CatalogManager
from catalogd.server.handler import Metrics

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
        else:
            self._json(404, {"error": f"no such endpoint {path}", "endpoints": ["/healthz", "/readyz", "/metrics"]})


class HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, manager: CatalogManager, metrics: Metrics) -> None:
        super().__init__((host, port), _Handler)
        self.manager = manager
        self.metrics = metrics
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
