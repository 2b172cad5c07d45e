"""Guessing is slow: failed authentications from one address lock it out on every port, checked guesses are
bounded by the back-off, other addresses are not slowed, and a burst is audited in a few lines."""

from __future__ import annotations

import http.client
import time
from pathlib import Path
from typing import Any

import pytest

from catalogd.auth.audit import read_audit
from catalogd.auth.throttle import THROTTLED
from catalogd.client import CatalogClient
from catalogd.errors import PermissionDeniedError

from .helpers import wait_until

pytestmark = pytest.mark.integration

TOKEN = "etl-token-0123456789abcdef-A1"
#: Needs a token: a refresh job's status.
ROUTE = "/v3/dynamic-tables/refresh/nope"


def _get(daemon: Any, token: str, source: str = "127.0.0.1", path: str = ROUTE) -> tuple[int, str]:
    host, port = daemon.http.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30, source_address=(source, 0))
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_failed_authentications_back_off_per_address_on_every_port(daemon_factory, tmp_path: Path) -> None:
    auth = {"enabled": True, "principals": [{"name": "etl", "token": TOKEN}],
            "grants": [{"principal": "etl", "catalog": "*", "role": "reader"}],
            "throttle": {"free-attempts": 3, "base-delay": "500ms", "max-delay": "2s"},
            "audit": {"denial-window": "1 min"}}
    daemon = daemon_factory(name="throttle", catalogs=[{"name": "scratch", "type": "memory", "default": True}],
                            extra={"auth": auth})
    assert _get(daemon, TOKEN)[0] == 404  # the token is good: the job is just not there

    # Three wrong tokens are checked; then the address is locked out and even the right token is
    # refused unchecked, on HTTP and on the Thrift API alike.
    for _ in range(3):
        status, body = _get(daemon, "wrong-token-0123456789abcdef")
        assert status == 401 and "the token is not valid" in body
    assert _get(daemon, "wrong-token-0123456789abcdef")[0] == 401  # starts the back-off
    status, body = _get(daemon, TOKEN)
    if status == 401:  # a busy machine may have taken the whole back-off already
        assert THROTTLED in body
    with CatalogClient(daemon.address, timeout=60, token=TOKEN) as client:
        try:
            client.ping()
        except PermissionDeniedError as e:
            assert THROTTLED in e.message

    # Another address is not slowed.
    assert _get(daemon, TOKEN, source="127.0.0.2")[0] == 404

    # Guessing flat out for a while: only a few guesses are checked (each back-off lets one through).
    started = time.monotonic()
    checked = refused = 0
    while time.monotonic() - started < 3.0:
        status, body = _get(daemon, "wrong-token-0123456789abcdef")
        assert status == 401
        if THROTTLED in body:
            refused += 1
        else:
            checked += 1
    elapsed = time.monotonic() - started
    # At most one checked guess per back-off (500 ms, doubling to 2 s): a few in 3 s, not hundreds.
    assert checked <= 2 + elapsed / 0.5, (checked, refused)
    assert refused > checked, (checked, refused)

    # The right token is taken again once the back-off is over (a deadline, not a timing).
    wait_until(lambda: _get(daemon, TOKEN)[0] == 404, 30, "the back-off to end", every=0.5)

    # The metrics count it; the audit log has the burst as a few lines with counts, not a line each.
    body = _get(daemon, TOKEN, path="/metrics")[1]
    failures = next(float(line.split()[-1]) for line in body.splitlines()
                    if line.startswith("catalogd_auth_failures_total"))
    assert failures >= 4 + checked
    assert "catalogd_auth_throttled_total" in body
    denied = read_audit(daemon.data_dir / "audit" / "audit.jsonl", 10_000, denied=True)
    throttled = [e for e in denied if THROTTLED in (e["detail"] or "")]
    assert throttled and len(throttled) <= 4, throttled
    assert TOKEN not in (daemon.data_dir / "audit" / "audit-denied.jsonl").read_text()
