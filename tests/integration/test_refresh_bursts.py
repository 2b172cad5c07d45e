"""Refresh requests in bursts disable no one (issue 31, row 8).

On main, 50 concurrent refresh POSTs of one table answered 33 of them 503 (each request asked the
metastore twice, and the catalog's metastore calls in flight are bounded); a 20-thread burst made
another client's Thrift reads fail "too many calls in flight (16)"; 200 POSTs each for another
partition queued 200 runs without a bound. Now a request for a partition already waiting or
running joins it (one run, one jobId, no refusal), a request makes no metastore call, and a
table's queue is bounded (429 with Retry-After once full); the reads beside the burst all succeed.
Tables taking turns for the workers is tested on the executor (tests/unit/dynamic).

On the session daemon: a FULL dynamic table that never refreshes on its own ('initialize' =
'on_schedule', a daily schedule); dropping it at the end stops its one run and cuts the queued off.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from catalogd.client import CatalogClient

from .helpers import Daemon

pytestmark = pytest.mark.integration

REFRESH = "/v3/dynamic-tables/refresh"
#: dynamic-tables.max-queued-refreshes-per-table's default.
MAX_QUEUED = 100


def _post(daemon: Daemon, body: dict[str, Any]) -> tuple[int, dict[str, Any], str | None]:
    request = urllib.request.Request(daemon.http + REFRESH, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read()), None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), e.headers.get("Retry-After")


def _in_threads(n: int, work: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(n)

    def run(index: int) -> None:
        try:
            start.wait(60)
            work(index)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    return errors


def test_refresh_bursts_are_joined_bounded_and_leave_reads_alone(daemon: Daemon, sc: CatalogClient,
                                                                  unique_name: Callable[[str], str]) -> None:
    db = unique_name("burst")
    sc.create_database(f"main.{db}")
    name = f"main.{db}.daily"
    try:
        sc.create_table(f"main.{db}.src", "id bigint, ds string")
        created = sc.sql(f"""CREATE DYNAMIC TABLE {name} PARTITIONED BY (ds)
            WITH ('initialize' = 'on_schedule') FRESHNESS = INTERVAL '1' DAY
            AS SELECT ds, count(*) AS n FROM main.{db}.src GROUP BY ds""")
        assert created.kind == "created", created.message

        # 50 concurrent requests of one partition: one run, one jobId, none refused.
        answers: list[tuple[int, dict[str, Any], str | None]] = []
        errors = _in_threads(50, lambda _: answers.append(_post(daemon, {"tables": [name],
                                                                         "partition": {"ds": "2024-01-01"}})))
        assert errors == []
        assert sorted({status for status, _, _ in answers}) == [200], [a for a in answers if a[0] != 200][:3]
        assert len({job["jobId"] for _, job, _ in answers}) == 1
        assert len({job["runs"][0]["id"] for _, job, _ in answers}) == 1

        # 20 threads, 200 requests each for another partition, beside another client's reads.
        reads: list[int] = []
        read_errors: list[BaseException] = []
        stop = threading.Event()

        def reader() -> None:
            with CatalogClient(daemon.address, timeout=120) as other:
                while not stop.is_set():
                    try:
                        other.get_table(f"main.{db}.src")
                        other.list_tables(f"main.{db}")
                        reads.append(1)
                    except Exception as e:  # every failure counts, whatever its type
                        read_errors.append(e)

        reading = threading.Thread(target=reader)
        reading.start()
        burst: list[tuple[int, dict[str, Any], str | None]] = []
        try:
            errors = _in_threads(20, lambda index: [
                burst.append(_post(daemon, {"tables": [name], "partition": {"ds": f"2024-02-{index:02d}-{n:02d}"}}))
                for n in range(10)])
        finally:
            stop.set()
            reading.join(120)
        assert errors == []
        statuses = sorted({status for status, _, _ in burst})
        assert statuses == [200, 429], statuses  # no 503: a request takes no metastore slot
        accepted = [body for status, body, _ in burst if status == 200]
        refused = [(body, retry) for status, body, retry in burst if status == 429]
        # The first run may have ended meanwhile: at most the bound waits, plus the one running.
        assert MAX_QUEUED - 1 <= len(accepted) <= MAX_QUEUED + 1, len(accepted)
        body, retry = refused[0]
        assert body["error"]["kind"] == "conflict" and "max-queued-refreshes-per-table" in body["error"]["message"]
        assert retry is not None and int(retry) >= 1
        # The reads beside the burst: every one answered.
        assert read_errors == [], read_errors[:3]
        assert reads
    finally:
        # Stops the running refresh and cuts off the queued ones.
        sc.drop_dynamic_table(name, if_exists=True)
        sc.drop_database(f"main.{db}", if_exists=True, cascade=True)
