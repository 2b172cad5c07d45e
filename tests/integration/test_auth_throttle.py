"""Guessing is slow: failed authentications from one address start a back-off that every port keeps,
checked guesses are bounded by it, other addresses are not slowed, and a burst is audited in a few lines."""

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
WRONG = "wrong-token-0123456789abcdef"
THROTTLE: dict[str, Any] = {"free-attempts": 3, "base-delay": "500ms", "max-delay": "2s"}
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


def _thrift_refusal(daemon: Any, token: str) -> str:
    """The Thrift API's refusal of ``token``: a ping must be refused (its message)."""
    with CatalogClient(daemon.address, timeout=60, token=token) as client, \
            pytest.raises(PermissionDeniedError) as refused:
        client.ping()
    return refused.value.message


def test_failed_authentications_back_off_per_address_on_every_port(daemon_factory, tmp_path: Path) -> None:
    auth = {"enabled": True, "principals": [{"name": "etl", "token": TOKEN}],
            "grants": [{"principal": "etl", "catalog": "*", "role": "reader"}],
            "throttle": THROTTLE,
            "audit": {"denial-window": "1 min"}}
    daemon = daemon_factory(name="throttle", catalogs=[{"name": "scratch", "type": "memory", "default": True}],
                            extra={"auth": auth})
    assert _get(daemon, TOKEN)[0] == 404  # the token is good: the job is just not there

    # Three wrong tokens are checked, the fourth starts the back-off of what it claimed from where.
    for _ in range(4):
        status, body = _get(daemon, WRONG)
        assert status == 401 and "the token is not valid" in body
    # One back-off covers every port: the Thrift API refuses the same guess unchecked. A busy
    # machine may let a back-off (500 ms, then 1 s, 2 s) end before the call lands: then that call
    # is checked, fails, and starts the next, longer one. A Thrift API with a back-off of its own
    # would check all of these tries (its first free failures), so THROTTLED can only come from the
    # back-off HTTP started.
    answers = []
    for _ in range(THROTTLE["free-attempts"]):
        answers.append(_thrift_refusal(daemon, WRONG))
        if THROTTLED in answers[-1]:
            break
    assert THROTTLED in answers[-1], answers
    assert all("the token is not valid" in answer for answer in answers[:-1]), answers

    # Another address is not slowed.
    assert _get(daemon, TOKEN, source="127.0.0.2")[0] == 404

    # Guessing flat out for a while: only a few guesses are checked (each back-off lets one through).
    started = time.monotonic()
    checked = refused = 0
    while time.monotonic() - started < 3.0:
        status, body = _get(daemon, WRONG)
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
