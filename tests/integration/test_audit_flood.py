"""A flood of denials cannot flush the audit log: a real daemon with 4 KiB audit budgets takes
thousands of denials through HTTP (wrong tokens, one client) and the HMS endpoint (a new set_ugi
name each time, so none coalesce, and one huge name), and the marker write made before is still
there, every identical denial is accounted for by a count, and no line is larger than its bounds."""

from __future__ import annotations

import http.client
import json
import subprocess
from pathlib import Path
from typing import Any

import hmsclient
import pytest
from thrift.Thrift import TException

from catalogd.auth.audit import read_audit
from catalogd.client import CatalogClient
from catalogd.hive_idl import ttypes

from .helpers import CATALOGD, clean_env

pytestmark = pytest.mark.integration

ETL_TOKEN = "etl-token-flood-0123456789abcdef"
#: Wrong-token requests on HTTP, all from this test's one address.
HTTP_DENIALS = 4000
#: HMS calls each under a new set_ugi name: distinct denials, each its own line.
HMS_DENIALS = 1000
BUDGET = 4096


def _files(data_dir: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (data_dir / "audit").iterdir()}


def test_a_marker_write_survives_a_denial_flood(daemon_factory) -> None:
    auth = {"enabled": True, "principals": [{"name": "etl", "token": ETL_TOKEN}],
            "grants": [{"principal": "etl", "catalog": "main", "role": "writer"}],
            "audit": {"max-bytes": BUDGET, "backups": 1, "denied-max-bytes": BUDGET, "denied-backups": 1,
                      "denial-window": "1 h"},
            # The flood is from one address; the back-off (test_auth_throttle) would refuse most of
            # it unchecked. Off here: this test is about the audit log under every denial.
            "throttle": {"base-delay": "0s"}}
    proc = daemon_factory(catalogs=[{"name": "main", "type": "memory"}], extra={"auth": auth}, name="flood")
    with CatalogClient(proc.address, token=ETL_TOKEN) as etl:
        etl.create_database("main.audit_marker")

    # Distinct denials on the HMS endpoint: one line each, rotating the denials' file again and again.
    host, port = proc.hms_address
    hms = hmsclient.HMSClient(host=host, port=port)
    hms.open()
    try:
        for index in range(HMS_DENIALS):
            hms.set_ugi(f"intruder{index}", [])
            with pytest.raises(ttypes.MetaException):
                hms.create_database(ttypes.Database(name=f"x{index}", parameters={}))
    finally:
        hms.close()
    # One set_ugi name of 1 MiB: refused (by its role, or by a bound on names); never written whole.
    huge = hmsclient.HMSClient(host=host, port=port)
    huge.open()
    try:
        huge.set_ugi("u" * (1 << 20), [])
        with pytest.raises(TException):
            huge.create_database(ttypes.Database(name="huge", parameters={}))
    except TException:
        pass  # the endpoint may refuse the name itself (or close the connection): also no line of 1 MiB
    finally:
        huge.close()

    # Identical denials from one client on HTTP, over keep-alive connections as a scanner would send them.
    http_host, http_port = proc.http.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(http_host, int(http_port), timeout=30)
    try:
        for _ in range(HTTP_DENIALS):
            conn.request("GET", "/metrics", headers={"Authorization": "Bearer not-the-token-at-all"})
            response = conn.getresponse()
            response.read()
            assert response.status == 401
    finally:
        conn.close()

    assert proc.stop() == 0  # the open window's summary is written at shutdown
    audit = proc.data_dir / "audit"
    files = _files(proc.data_dir)
    assert set(files) == {"audit.jsonl", "audit-denied.jsonl", "audit-denied.jsonl.1"}, files
    assert all(size <= BUDGET for size in files.values()), files
    # The write is still there: the flood rotated only denials.
    writes = [json.loads(line) for line in (audit / "audit.jsonl").read_text().splitlines()]
    assert [(e["principal"], e["operation"], e["object"], e["outcome"]) for e in writes] == [
        ("etl", "createDatabase", "main.audit_marker", "ok")]
    # Every wrong token is accounted for: the first line and the summary's count.
    denials = read_audit(audit / "audit.jsonl", 10_000, denied=True)
    wrong = [e for e in denials if e["surface"] == "http" and e["detail"] == "the token is not valid"]
    assert [e.get("count", 1) for e in wrong] == [1, HTTP_DENIALS - 1], wrong
    assert wrong[1]["first"] <= wrong[1]["last"] <= wrong[1]["time"]
    # `audit tail` shows both files merged in time order, the marker among the denials.
    done = subprocess.run([str(CATALOGD), "--json", "audit", "tail", "-n", "1000", "--config", str(proc.config_path)],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    assert done.returncode == 0, done.stderr
    tail: list[dict[str, Any]] = json.loads(done.stdout)
    assert [e["time"] for e in tail] == sorted(e["time"] for e in tail)
    assert any(e["object"] == "main.audit_marker" for e in tail)
    assert tail[-1].get("count") == HTTP_DENIALS - 1
