"""Tests for catalogd.server.http_app through its test client: every path, status and error body."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient
from http_fakes import FakeDynamic, FakeManager
from prometheus_client import CONTENT_TYPE_LATEST

from catalogd.dynamic.jobconf import REQUEST_SETTINGS
from catalogd.errors import (
    CatalogError,
    ConflictError,
    MetastoreUnavailableError,
    PermissionDeniedError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.model import TRIGGERS, RunStatus
from catalogd.server.http_app import MAX_BODY, REFRESH, create_app
from catalogd.server.metrics import Metrics


@pytest.fixture
def manager() -> FakeManager:
    return FakeManager()


@pytest.fixture
def dynamic() -> FakeDynamic:
    return FakeDynamic()


@pytest.fixture
def metrics() -> Metrics:
    metrics = Metrics()
    metrics.watch_dynamic_tables(lambda: [("main.sales.daily", 12.5, True), ("main.sales.never", None, None)])
    return metrics


@pytest.fixture
def client(manager: FakeManager, metrics: Metrics, dynamic: FakeDynamic) -> TestClient:
    return TestClient(create_app(manager, metrics, dynamic), raise_server_exceptions=True)


def post(client: TestClient, body: Any, **kwargs: Any) -> Any:
    return client.post(REFRESH, content=json.dumps(body).encode(), **kwargs)


def error_of(response: Any, status: int, kind: str = "invalid-argument") -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"]["kind"] == kind, body
    return str(body["error"]["message"])


# ---------------------------------------------------------------- health, readiness, metrics

def test_healthz_is_indented_json_with_a_newline(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.text == '{\n  "status": "ok"\n}\n'


def test_readyz_lists_catalogs(client: TestClient, manager: FakeManager) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "catalogs": {"main": "ok", "scratch": "ok"}}
    manager.problems["scratch"] = "metastore down"
    response = client.get("/readyz?verbose=1")
    assert response.status_code == 503
    assert response.json() == {"status": "not ready", "catalogs": {"main": "ok", "scratch": "metastore down"}}


def test_metrics_are_prometheus_text_with_the_lags(client: TestClient, metrics: Metrics) -> None:
    metrics.requests.labels("listDatabases", "ok").inc()
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"] == CONTENT_TYPE_LATEST
    text = response.text
    assert 'catalogd_rpc_requests_total{outcome="ok",rpc="listDatabases"} 1.0' in text
    assert 'catalogd_dynamic_table_freshness_lag_seconds{table="main.sales.daily"} 12.5' in text
    assert 'catalogd_dynamic_table_within_target{table="main.sales.daily"} 1.0' in text
    assert 'catalogd_dynamic_table_within_target{table="main.sales.never"} 0.0' in text
    assert 'freshness_lag_seconds{table="main.sales.never"}' not in text


# ---------------------------------------------------------------- POST refresh

def test_refresh_answers_the_job_in_camel_case(client: TestClient, dynamic: FakeDynamic) -> None:
    response = post(client, {"tables": ["main.sales.daily"], "scheduleTime": "2024-03-02 00:00:00",
                             "configuration": {"spark.executor.memory": "2g"}, "partition": {"ds": "2024-03-01"}})
    assert response.status_code == 200, response.text
    assert response.text.endswith("}\n") and '"status": "PENDING"' in response.text
    assert response.json() == {
        "jobId": "job-1", "status": "PENDING", "error": None, "clusterInfo": {"master": "local[1]"},
        "runs": [{"id": "r1", "table": "main.sales.daily", "trigger": "api", "status": "SUCCEEDED",
                  "scheduleTime": "2024-03-02 00:00:00+00:00", "partition": {"ds": "2024-03-01"},
                  "submitted": 1.5, "started": 2.5, "ended": 3.5, "error": None, "rows": 7,
                  "applicationId": "app-1", "inputFiles": 2, "sourcePartitions": ["ds=2024-03-01"],
                  "phase": None, "fired": 1.0}],
    }
    assert dynamic.calls == [("refresh", ["main.sales.daily"], "2024-03-02 00:00:00", {"ds": "2024-03-01"},
                              {"spark.executor.memory": "2g"}, "api")]


def test_refresh_defaults_and_empty_values(client: TestClient, dynamic: FakeDynamic) -> None:
    assert post(client, {"tables": ["a"]}).status_code == 200
    assert post(client, {"tables": ["a"], "configuration": None, "partition": {}, "scheduleTime": None}).status_code \
        == 200
    assert [c[2:] for c in dynamic.calls] == [(None, None, {}, "api"), (None, None, {}, "api")]


def test_refresh_reads_json_whatever_the_content_type(client: TestClient, dynamic: FakeDynamic) -> None:
    # curl -d sends application/x-www-form-urlencoded.
    response = client.post(REFRESH, content=b'{"tables": ["a"]}',
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 200, response.text
    assert dynamic.calls[0][1] == ["a"]


@pytest.mark.parametrize(("body", "expected"), [
    ({}, '"tables" must be a non-empty list'),
    ({"tables": []}, '"tables" must be a non-empty list'),
    ({"tables": "main.a.b"}, '"tables" must be a non-empty list'),
    ({"tables": ["a", 1]}, '"tables" must be a non-empty list'),
    ({"tables": ["a"], "scheduleTime": 20240302}, '"scheduleTime" must be a string'),
    ({"tables": ["a"], "configuration": {"k": 1}}, '"configuration" must be an object of strings'),
    ({"tables": ["a"], "configuration": ["k"]}, '"configuration" must be an object of strings'),
    ({"tables": ["a"], "partition": {"ds": None}}, '"partition" must be an object of strings'),
    ({"tables": ["a"], "when": "now"}, "unknown field(s) ['when']: use tables, scheduleTime"),
    ({"tables": ["a"], "schedule_time": "x"}, "unknown field(s) ['schedule_time']"),
    ({"tables": [], "when": "now"}, '"tables" must be a non-empty list'),
    ([1, 2], "the body must be a JSON object"),
])
def test_refresh_refuses_a_bad_body(client: TestClient, dynamic: FakeDynamic, body: Any, expected: str) -> None:
    assert expected in error_of(post(client, body), 400)
    assert dynamic.calls == []


def test_refresh_refuses_what_is_not_json(client: TestClient) -> None:
    assert "the body is not JSON" in error_of(client.post(REFRESH, content=b"{nope"), 400)
    assert "the body is not JSON" in error_of(client.post(REFRESH, content=b"\xff\xfe\x00"), 400)


def test_a_deeply_nested_body_is_a_400_not_a_500(client: TestClient) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    assert "nested too deeply" in error_of(client.post(REFRESH, content=deep), 400)
    deep_object = b'{"tables": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert "nested too deeply" in error_of(client.post(REFRESH, content=deep_object), 400)


def test_a_body_over_the_limit_is_refused(client: TestClient, dynamic: FakeDynamic) -> None:
    big = json.dumps({"tables": ["a"], "configuration": {"x": "y" * MAX_BODY}}).encode()
    assert f"request body over {MAX_BODY} bytes" in error_of(client.post(REFRESH, content=big), 400)

    def chunks() -> Any:  # no Content-Length: counted while read
        yield b'{"tables": ["a"], "configuration": {"x": "'
        for _ in range(MAX_BODY // 65536 + 1):
            yield b"y" * 65536
        yield b'"}}'

    assert f"request body over {MAX_BODY} bytes" in error_of(client.post(REFRESH, content=chunks()), 400)
    assert dynamic.calls == []


@pytest.mark.parametrize(("error", "status"), [
    (TableNotFoundError("main.a.b is not a dynamic table"), 404),
    (ConflictError("busy"), 409),
    (PermissionDeniedError("catalog 'ro' is read-only"), 403),
    (UnsupportedError("not driven by this daemon"), 501),
    (MetastoreUnavailableError("hms down"), 503),
])
def test_catalogd_errors_have_their_status(client: TestClient, dynamic: FakeDynamic, error: CatalogError,
                                           status: int) -> None:
    dynamic.error = error
    assert error_of(post(client, {"tables": ["a"]}), status, error.kind) == error.message
    assert error_of(client.get(f"{REFRESH}/job-1"), status, error.kind) == error.message


def test_a_bug_is_a_500_and_logged(client: TestClient, dynamic: FakeDynamic,
                                   caplog: pytest.LogCaptureFixture) -> None:
    dynamic.error = KeyError("oops")
    with caplog.at_level(logging.ERROR, logger="catalogd.server.http_app"):
        assert error_of(post(client, {"tables": ["a"]}), 500, "internal") == "KeyError: 'oops'"
    assert [r.exc_info is not None for r in caplog.records] == [True]


def test_without_dynamic_tables_the_rest_api_is_501(manager: FakeManager, metrics: Metrics) -> None:
    client = TestClient(create_app(manager, metrics, None))
    assert "not served here" in error_of(client.post(REFRESH, content=b"{nope"), 501, "unsupported")
    assert "not served here" in error_of(client.get(f"{REFRESH}/job-1"), 501, "unsupported")
    assert client.get("/healthz").status_code == 200


def test_refresh_with_wait_answers_the_waited_job(client: TestClient, dynamic: FakeDynamic) -> None:
    response = client.post(f"{REFRESH}?wait=2.5", json={"tables": ["a"]})
    assert response.status_code == 200, response.text
    # The job the refresh started, waited for (the fake's job-1 as get_job answers it).
    assert response.json()["status"] == "FAILED"
    assert [c[0] for c in dynamic.calls] == ["refresh", "wait_job"] and dynamic.calls[1][1:] == ("job-1", 2.5)


def test_a_wait_above_the_maximum_is_cut_to_it(client: TestClient, dynamic: FakeDynamic) -> None:
    assert client.post(f"{REFRESH}?wait=86400", json={"tables": ["a"]}).status_code == 200
    assert client.get(f"{REFRESH}/job-1?wait=1e9").status_code == 200
    assert [c[2] for c in dynamic.calls if c[0] == "wait_job"] == [300.0, 300.0]


@pytest.mark.parametrize("query", ["wait=-1", "wait=soon", "wait=nan", "wait=inf", "wait=", "wait=1&wait=2"])
def test_a_bad_wait_is_refused_and_starts_nothing(client: TestClient, dynamic: FakeDynamic, query: str) -> None:
    assert "wait" in error_of(client.post(f"{REFRESH}?{query}", json={"tables": ["a"]}), 400, "invalid-argument")
    assert "wait" in error_of(client.get(f"{REFRESH}/job-1?{query}"), 400, "invalid-argument")
    assert dynamic.calls == []


def test_without_wait_or_with_zero_nothing_waits(client: TestClient, dynamic: FakeDynamic) -> None:
    assert client.post(f"{REFRESH}?wait=0", json={"tables": ["a"]}).status_code == 200
    assert client.get(f"{REFRESH}/job-1?wait=0").status_code == 200
    assert [c[0] for c in dynamic.calls] == ["refresh", "get_job"]

def test_get_job(client: TestClient, dynamic: FakeDynamic) -> None:
    response = client.get(f"{REFRESH}/job-1")
    assert response.status_code == 200
    body = response.json()
    assert (body["jobId"], body["status"], body["error"]) == ("job-1", "FAILED", "main.sales.daily: boom")
    assert body["runs"][0]["applicationId"] == "app-1"
    assert "no refresh job 'feedbeef'" in error_of(client.get(f"{REFRESH}/feedbeef"), 404, "not-found")
    # Whatever follows the prefix is the id, as it always was.
    error_of(client.get(f"{REFRESH}/a/b"), 404, "not-found")
    error_of(client.get(f"{REFRESH}/"), 404, "not-found")
    assert [c[1] for c in dynamic.calls] == ["job-1", "feedbeef", "a/b", ""]


# ---------------------------------------------------------------- unknown paths and methods

def test_an_unknown_path_is_404_with_the_endpoints(client: TestClient) -> None:
    for response in (client.get("/nope"), client.post("/nope", content=b"{}"), client.get("/healthz/")):
        assert "no such endpoint" in error_of(response, 404, "not-found")
        assert f"POST {REFRESH}" in response.json()["endpoints"]


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("GET", REFRESH, "POST"),
    ("PUT", REFRESH, "POST"),
    ("POST", "/healthz", "GET"),
    ("DELETE", f"{REFRESH}/job-1", "GET"),
    ("POST", "/metrics", "GET"),
])
def test_a_wrong_method_is_405_with_allow(client: TestClient, method: str, path: str, allowed: str) -> None:
    response = client.request(method, path)
    assert f"use {allowed}" in error_of(response, 405, "method-not-allowed")
    assert response.headers["allow"] == allowed


# ---------------------------------------------------------------- OpenAPI

def test_openapi_is_generated_from_the_models(client: TestClient) -> None:
    doc = client.get("/v3/openapi.json").json()
    assert client.get("/openapi.json").json() == doc
    assert doc["openapi"].startswith("3.")
    assert doc["info"]["title"] == "catalogd REST API"
    schemas = doc["components"]["schemas"]
    assert schemas["RunStatus"]["enum"] == [s.value for s in RunStatus]
    assert schemas["RefreshRun"]["properties"]["trigger"]["enum"] == list(TRIGGERS)
    assert set(schemas["RefreshJob"]["required"]) == {"jobId", "status", "clusterInfo", "runs"}
    assert {"applicationId", "inputFiles", "sourcePartitions", "scheduleTime"} <= set(
        schemas["RefreshRun"]["properties"])
    request = schemas["RefreshRequest"]
    assert set(request["properties"]) == {"tables", "scheduleTime", "configuration", "partition"}
    assert request["required"] == ["tables"] and request["additionalProperties"] is False
    # A REST client can read which settings a request may give.
    configuration = request["properties"]["configuration"]["description"]
    assert all(key in configuration for key in REQUEST_SETTINGS)
    assert set(schemas["Error"]["properties"]) == {"error"}
    assert "HTTPValidationError" not in schemas
    post_op = doc["paths"][REFRESH]["post"]
    assert post_op["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RefreshRequest"}
    assert post_op["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RefreshJob"}
    assert [p["name"] for p in doc["paths"][f"{REFRESH}/{{jobId}}"]["get"]["parameters"]] == ["jobId", "wait"]
    # Both refresh routes take the long poll's wait, a number of seconds with its maximum.
    for op in (post_op, doc["paths"][f"{REFRESH}/{{jobId}}"]["get"]):
        (wait,) = [p for p in op["parameters"] if p["name"] == "wait"]
        assert wait["in"] == "query" and wait["schema"]["type"] == "number" and wait["schema"]["maximum"] == 300


def test_openapi_lists_every_status_with_its_own_description(client: TestClient) -> None:
    doc = client.get("/v3/openapi.json").json()
    operations = [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()]
    assert {(path, method) for path, method, _ in operations} == {
        ("/healthz", "get"), ("/readyz", "get"), ("/metrics", "get"), (REFRESH, "post"),
        (f"{REFRESH}/{{jobId}}", "get"), ("/v3/dynamic-tables", "get"), ("/v3/dynamic-tables/{table}/runs", "get"),
        ("/v3/stages", "get"), ("/v3/health", "get")}
    ids = [op["operationId"] for _, _, op in operations]
    assert len(set(ids)) == len(ids) == len(operations)
    for _, _, op in operations:
        descriptions = [r["description"] for r in op["responses"].values()]
        assert len(set(descriptions)) == len(descriptions), op
        assert "422" not in op["responses"]
    refresh = doc["paths"][REFRESH]["post"]["responses"]
    assert {"200", "400", "404", "409", "501", "503"} <= set(refresh)
    for status in ("400", "404", "409", "501", "503"):
        assert refresh[status]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    assert {"200", "404", "501"} <= set(doc["paths"][f"{REFRESH}/{{jobId}}"]["get"]["responses"])
    assert set(doc["paths"]["/readyz"]["get"]["responses"]) == {"200", "503"}
