"""The console's cookie under TLS and its security headers (the integration test covers the rest on plain HTTP)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from http_fakes import FakeManager

from catalogd.server.console.app import ConsoleSources
from catalogd.server.console.sessions import COOKIE
from catalogd.server.http_app import create_app
from catalogd.server.metrics import Metrics
from catalogd.server.overview import HealthSources


class _Manager(FakeManager):
    def catalogs(self) -> dict[str, object]:
        return {"main": object()}


def test_the_session_cookie_is_secure_under_tls_and_pages_forbid_outside_scripts() -> None:
    manager = _Manager()
    app = create_app(manager, Metrics(), console=ConsoleSources(health=HealthSources(ping=manager.ping), tls=True))
    with TestClient(app, base_url="https://testserver") as client:
        page = client.get("/ui/health")
    assert page.status_code == 200 and "main" in page.text
    cookie = page.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "Secure" in cookie and "HttpOnly" in cookie
    assert "SameSite=strict" in cookie and "Path=/ui" in cookie
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["cache-control"] == "no-store"


def test_a_forged_action_without_a_session_is_refused() -> None:
    manager = _Manager()
    with TestClient(create_app(manager, Metrics(), console=ConsoleSources())) as client:
        answer = client.post("/ui/dynamic/main/db/t/suspend", data={"csrf": "x"})
    assert answer.status_code == 403 and "no console session" in answer.text


def test_the_spark_conf_shown_hides_secrets_but_not_where_they_are() -> None:
    from catalogd.server.console.app import _redacted

    shown = _redacted({"spark.hadoop.hive.metastore.truststore.password": "${env.CATALOGD_TRUSTSTORE_PASSWORD}",
                       "spark.hadoop.some.password": "pw-123456", "spark.sql.warehouse.dir": "/w"})
    assert shown == {"spark.hadoop.hive.metastore.truststore.password": "${env.CATALOGD_TRUSTSTORE_PASSWORD}",
                     "spark.hadoop.some.password": "(hidden)", "spark.sql.warehouse.dir": "/w"}
