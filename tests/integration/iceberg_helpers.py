"""Helpers of the Iceberg REST door's tests: pyiceberg clients on a daemon, raw HTTP, namespaces."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pyiceberg.catalog.rest import RestCatalog

from .helpers import Daemon


def rest(daemon: Daemon, warehouse: str = "main", **props: str) -> RestCatalog:
    """pyiceberg's ``RestCatalog`` on the daemon's REST door, one warehouse (= catalogd catalog)."""
    return RestCatalog("rest", uri=f"{daemon.http}/iceberg", warehouse=warehouse, **props)


def unique(prefix: str = "ice") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@contextmanager
def rest_namespace(daemon: Daemon, warehouse: str = "main", **props: str) -> Iterator[str]:
    """A fresh namespace in ``warehouse``, dropped with its tables afterwards."""
    catalog = rest(daemon, warehouse, **props)
    name = unique()
    catalog.create_namespace(name)
    try:
        yield name
    finally:
        for ident in catalog.list_tables(name):
            catalog.drop_table(ident)
        catalog.drop_namespace(name)


class Answer:
    """An HTTP answer: status, lower-cased headers, body bytes."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def error(self) -> dict[str, Any]:
        """The spec's error model: {"message", "type", "code"}."""
        error: dict[str, Any] = self.json()["error"]
        return error

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body[:300]!r})"


def call(daemon: Daemon, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
         token: str | None = None) -> Answer:
    """One raw request to ``{daemon.http}/iceberg{path}`` (a JSON body when given)."""
    data = json.dumps(body).encode() if body is not None else None
    all_headers = {"Content-Type": "application/json"} if data is not None else {}
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    all_headers.update(headers or {})
    request = urllib.request.Request(f"{daemon.http}/iceberg{path}", data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return Answer(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
    except urllib.error.HTTPError as e:
        return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())


def tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (relative name -> bytes): to show a directory was left alone."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def local(uri: str) -> Path:
    """The local path of a ``file:`` URI (``file:/x`` or ``file:///x``) or a plain path."""
    if uri.startswith("file://"):
        return Path(uri[len("file://"):])
    if uri.startswith("file:"):
        return Path(uri[len("file:"):])
    return Path(uri)
