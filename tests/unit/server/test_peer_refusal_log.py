"""Unsigned cache invalidations are refused (401) and logged at a bounded rate, each one counted for /metrics."""

from __future__ import annotations

import json
import logging
import time

import pytest
import yaml
from fastapi.testclient import TestClient
from http_fakes import FakeManager

from catalogd.config import parse_config
from catalogd.ratelog import counts
from catalogd.server.cache_peers import INVALIDATIONS, SIGNATURE_HEADER, CachePeers
from catalogd.server.http_app import create_app
from catalogd.server.metrics import Metrics


def _peers() -> CachePeers:
    members = [{"host": "127.0.0.1", "port": 9190, "hms-port": 9083, "http-port": 9191},
               {"host": "127.0.0.1", "port": 9290, "hms-port": 9283, "http-port": 9291}]
    config = parse_config(yaml.safe_dump({
        "server": {"host": "127.0.0.1", "port": 9190, "hms-port": 9083, "http-port": 9191},
        "catalogs": [{"name": "main", "type": "memory"}], "cluster": {"members": members}}))
    return CachePeers(config, b"a deployment's stage key", lambda c, d, t: None, lambda: ["main"])


def test_a_flood_of_unsigned_invalidations_is_one_log_line_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    peers = _peers()
    metrics = Metrics()
    metrics.watch_cache_peers(peers.stats)
    metrics.watch_bounded_logs(counts)
    before = counts().get("refused-peer-message", (0, 0))[0]
    body = json.dumps({"v": 1, "from": "x", "sent": time.time(), "scopes": [["main", "db", "t"]]}).encode()
    with caplog.at_level(logging.INFO, logger="catalogd"), \
            TestClient(create_app(FakeManager(), metrics, peers=peers)) as http:
        for n in range(300):
            headers = {SIGNATURE_HEADER: f"v1={n:064x}"} if n % 2 else {}
            assert http.post(INVALIDATIONS, content=body, headers=headers).status_code == 401
    refused = [r for r in caplog.records if "refused cache invalidations" in r.getMessage()]
    assert len(refused) == 1, len(refused)  # 300 on main: one WARNING line each
    assert peers.stats()["rejected"] == 300
    assert counts()["refused-peer-message"][0] - before == 300
    from prometheus_client import generate_latest

    text = generate_latest(metrics.registry).decode()
    assert 'catalogd_log_lines_suppressed_total{kind="refused-peer-message"}' in text
    assert 'catalogd_cache_invalidations_total{outcome="rejected"} 300.0' in text
