"""A flood of unsigned cache invalidations at a cluster member's HTTP port: each is refused (401) and
counted in /metrics, but the member's log gets one line, not one a message (5.1 MB in 10 s before).

One member of its own (a memory catalog, no metastore JVM: a few seconds); the other member it
lists never answers, which no refusal depends on.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from catalogd.server.cache_peers import INVALIDATIONS, SIGNATURE_HEADER

from .helpers import free_port

pytestmark = pytest.mark.integration

#: Messages sent: far more than one interval's worth of lines.
FLOOD = 300


def _post(daemon: Any, body: bytes, signature: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if signature is not None:
        headers[SIGNATURE_HEADER] = signature
    request = urllib.request.Request(daemon.http + INVALIDATIONS, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def _metric(daemon: Any, prefix: str) -> float:
    with urllib.request.urlopen(f"{daemon.http}/metrics", timeout=30) as response:
        text = response.read().decode()
    values = [float(line.split()[-1]) for line in text.splitlines() if line.startswith(prefix)]
    assert values, f"{prefix} not in /metrics"
    return values[0]


def test_refused_peer_messages_are_logged_at_a_bounded_rate_and_counted(daemon_factory: Any) -> None:
    port, hms_port, http_port = free_port(), free_port(), free_port()
    members = [{"host": "127.0.0.1", "port": port, "hms-port": hms_port, "http-port": http_port},
               {"host": "127.0.0.1", "port": free_port(), "hms-port": free_port(), "http-port": free_port()}]
    member = daemon_factory(name="peer-log", catalogs=[{"name": "scratch", "type": "memory", "default": True}],
                            extra={"server": {"port": port, "hms-port": hms_port, "http-port": http_port},
                                   "cluster": {"members": members},
                                   "staging": {"secret": "a deployment's stage key, long enough"}})
    log_before = member.log_path.stat().st_size
    rejected_before = _metric(member, 'catalogd_cache_invalidations_total{outcome="rejected"}')
    body = json.dumps({"v": 1, "from": "x", "sent": time.time(), "scopes": [["main", "db", "t"]]}).encode()
    for n in range(FLOOD):
        assert _post(member, body, None if n % 2 else f"v1={n:064x}") == 401
    with member.log_path.open("rb") as log:
        log.seek(log_before)
        lines = [line for line in log.read().decode(errors="replace").splitlines()
                 if "refused cache invalidations" in line]
    # The first at once; one per message, 300, before.
    assert len(lines) == 1, lines[:5]
    assert _metric(member, 'catalogd_cache_invalidations_total{outcome="rejected"}') - rejected_before == FLOOD
    assert _metric(member, 'catalogd_logged_events_total{kind="refused-peer-message"}') >= FLOOD
