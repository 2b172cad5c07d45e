"""Tests for auth on catalogd.server.http_app: bearer tokens (401), roles (403), open health routes, audit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from http_fakes import FakeDynamic, FakeManager

from catalogd.auth.audit import AuditLog, read_audit
from catalogd.auth.model import Authority, Role
from catalogd.server.access import Access
from catalogd.server.http_app import REFRESH, create_app
from catalogd.server.metrics import Metrics

TOKENS = {"ana": "reader-token-0123456789", "etl": "writer-token-0123456789"}
GRANTS = {("ana", "*"): Role.READER, ("etl", "main"): Role.WRITER}


class Rig:
    def __init__(self, tmp_path: Path, enabled: bool = True) -> None:
        self.authority = Authority(enabled, dict(TOKENS), set(TOKENS), dict(GRANTS))
        self.audit_path = tmp_path / "audit.jsonl"
        self.audit = AuditLog(self.audit_path)
        access = Access(self.authority, self.audit, lambda: "main", lambda: ["main", "other"])
        self.dynamic = FakeDynamic()
        self.client = TestClient(create_app(FakeManager(), Metrics(), self.dynamic, access))

    def lines(self) -> list[dict[str, Any]]:
        """Writes and denials (each in its own file), in time order."""
        return read_audit(self.audit_path, 100_000)

    def text(self) -> str:
        denials = self.audit_path.with_name("audit-denied.jsonl")
        return self.audit_path.read_text() + (denials.read_text() if denials.exists() else "")


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    r = Rig(tmp_path)
    yield r
    r.audit.close()


def bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


def refresh(rig: Rig, tables: list[str], headers: dict[str, str] | None = None) -> Any:
    return rig.client.post(REFRESH, content=json.dumps({"tables": tables}).encode(), headers=headers or {})


def test_health_and_readiness_stay_open(rig: Rig) -> None:
    assert rig.client.get("/healthz").status_code == 200
    assert rig.client.get("/readyz").status_code == 200


@pytest.mark.parametrize("path", ["/metrics", "/v3/openapi.json", f"{REFRESH}/job-1"])
def test_without_a_valid_token_every_other_route_is_401_with_the_bearer_challenge(rig: Rig, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": "Basic abc"}):
        response = rig.client.get(path, headers=headers)
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"]["kind"] == "permission-denied"
        assert "wrong-token" not in response.text
    assert rig.client.get(path, headers=bearer("ana")).status_code == 200


def test_a_refresh_needs_a_writer_on_each_table_s_catalog(rig: Rig) -> None:
    response = refresh(rig, ["main.db.t"])
    assert response.status_code == 401
    response = refresh(rig, ["main.db.t"], bearer("ana"))
    assert response.status_code == 403
    assert response.json()["error"]["message"] == (
        "ana needs role writer on catalog main for POST /v3/dynamic-tables/refresh")
    assert refresh(rig, ["other.db.t"], bearer("etl")).status_code == 403
    assert rig.dynamic.calls == []  # nothing was started
    response = refresh(rig, ["main.db.t", "db.u"], bearer("etl"))
    assert response.status_code == 200, response.text
    assert [c[1] for c in rig.dynamic.calls] == [["main.db.t", "db.u"]]
    lines = [(e["principal"], e["surface"], e["operation"], e["object"], e["outcome"]) for e in rig.lines()]
    post = "POST /v3/dynamic-tables/refresh"
    assert lines == [(None, "http", post, None, "denied"), ("ana", "http", post, "main.db.t", "denied"),
                     ("etl", "http", post, "other.db.t", "denied"), ("etl", "http", post, "main.db.t, db.u", "ok")]
    assert all(e["client"] for e in rig.lines())
    text = rig.text()
    assert not any(token in text for token in TOKENS.values())


def test_a_job_token_cannot_start_refreshes(rig: Rig) -> None:
    token = rig.authority.mint_job_token("main", "db", "t", 60.0)
    response = refresh(rig, ["main.db.t"], {"Authorization": f"Bearer {token}"})
    assert response.status_code == 403
    assert "refresh job's token" in response.json()["error"]["message"]


def test_auth_off_needs_no_token(tmp_path: Path) -> None:
    rig = Rig(tmp_path, enabled=False)
    assert rig.client.get("/metrics").status_code == 200
    assert refresh(rig, ["other.db.t"]).status_code == 200
    assert [(e["principal"], e["outcome"]) for e in rig.lines()] == [("anonymous", "ok")]
    rig.audit.close()
