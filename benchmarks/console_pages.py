#!/usr/bin/env python3
"""How long each page of the web console takes with 1,000 tables, next to the API calls that fetch the same data.

One run starts a real ``catalogd serve`` daemon (one embedded hive catalog, auth off, the default
metadata cache), creates ``--databases`` databases of ``--tables`` 20-column tables each (1,000 in
all by default), then loads each console page ``--iterations`` times with one HTTP client (its
session cookie kept), alternating with the Thrift calls (``CatalogClient``) a CLI user makes for
the same data, so that both see the same machine and the same cache:

    catalogs      /ui/catalogs                       list_catalogs + list_databases
    search        /ui/catalogs?q=t_0999              list_tables + list_views + list_functions of every database
    database      /ui/catalogs/main/<db>             list_tables + list_views + list_functions of one database
    table         /ui/tables/main/<db>/<table>       get_table
    dynamic       /ui/dynamic                        list_dynamic_tables
    stages        /ui/stages                         list_stages
    health        /ui/health                         GET /readyz

    .venv/bin/python benchmarks/console_pages.py [--databases 10] [--tables 100] [--iterations 30] [--output FILE]

Prints one JSON document (and writes it to FILE). The daemon is stopped at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from catalog_ops import CATALOG, COLUMNS, Daemon, summary

from catalogd.client import CatalogClient


def populate(address: str, databases: list[str], tables: int) -> float:
    """Create the databases and their tables (4 clients at once); the seconds it took."""
    start = time.perf_counter()
    with CatalogClient(address, timeout=120.0) as client:
        for db in databases:
            client.create_database(f"{CATALOG}.{db}")

    def fill(db: str) -> None:
        with CatalogClient(address, timeout=120.0) as client:
            for i in range(tables):
                client.create_table(f"{CATALOG}.{db}.t_{databases.index(db) * tables + i:04d}", COLUMNS)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(fill, databases))
    return time.perf_counter() - start


def run(database_count: int, tables: int, iterations: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="catalogd-console-bench-") as tmp:
        daemon = Daemon(Path(tmp))
        try:
            daemon.start()
            address = f"127.0.0.1:{daemon.port}"
            databases = [f"bench_{i}" for i in range(database_count)]
            seconds = populate(address, databases, tables)
            last = f"t_{database_count * tables - 1:04d}"
            first_db = databases[0]
            http = httpx.Client(base_url=f"http://127.0.0.1:{daemon.http_port}", timeout=120.0)
            client = CatalogClient(address, timeout=120.0)

            def every_database() -> None:
                for db in client.list_databases(CATALOG):
                    client.list_tables(f"{CATALOG}.{db}")
                    client.list_views(f"{CATALOG}.{db}")
                    client.list_functions(f"{CATALOG}.{db}")

            def one_database() -> None:
                client.list_tables(f"{CATALOG}.{first_db}")
                client.list_views(f"{CATALOG}.{first_db}")
                client.list_functions(f"{CATALOG}.{first_db}")

            pages: dict[str, tuple[str, Callable[[], Any]]] = {
                "catalogs": ("/ui/catalogs", lambda: [client.list_databases(c.name) for c in client.list_catalogs()]),
                "search": (f"/ui/catalogs?q={last}", every_database),
                "database": (f"/ui/catalogs/{CATALOG}/{first_db}", one_database),
                "table": (f"/ui/tables/{CATALOG}/{first_db}/t_0000",
                          lambda: client.get_table(f"{CATALOG}.{first_db}.t_0000")),
                "dynamic": ("/ui/dynamic", lambda: client.list_dynamic_tables(CATALOG)),
                "stages": ("/ui/stages", lambda: client.list_stages(CATALOG)),
                "health": ("/ui/health", lambda: http.get("/readyz")),
            }
            http.get("/ui/catalogs")  # the session cookie
            results: dict[str, Any] = {}
            for name, (path, direct) in pages.items():
                page_ns: list[int] = []
                api_ns: list[int] = []
                answer = http.get(path)
                if answer.status_code != 200:
                    raise RuntimeError(f"{path}: {answer.status_code}\n{answer.text[:2000]}")
                if name == "search" and last not in answer.text:
                    raise RuntimeError(f"the search for {last} did not find it")
                direct()
                for i in range(iterations):
                    order = [("page", lambda p=path: http.get(p)), ("api", direct)]
                    for side, call in order if i % 2 == 0 else order[::-1]:
                        start = time.perf_counter_ns()
                        call()
                        (page_ns if side == "page" else api_ns).append(time.perf_counter_ns() - start)
                results[name] = {"path": path, "page": summary(page_ns), "api": summary(api_ns),
                                 "bytes": len(answer.content)}
            client.close()
            http.close()
            return {"benchmark": "console_pages", "tables": database_count * tables, "databases": database_count,
                    "iterations": iterations, "populate_seconds": round(seconds, 1),
                    "machine": {"python": platform.python_version(), "cpus": _cpus()}, "pages": results}
        finally:
            daemon.stop()


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--databases", type=int, default=10)
    parser.add_argument("--tables", type=int, default=100, help="tables per database")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    result = run(args.databases, args.tables, args.iterations)
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
