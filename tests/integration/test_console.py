"""The web console at /ui of a real daemon with auth on: sessions, roles, CSRF, escaping, and a real browser.

The module's daemon (``consoled``) has ``auth.enabled: true``; its ``main`` catalog is a remote
catalog on the session daemon's metastore (it starts in seconds), where the session SparkSession
writes the source of one dynamic table. Principals: ``ops`` admin everywhere, ``etl`` writer on
main, ``ana`` reader everywhere.

The browser is Debian's ``chromium`` driven by Playwright (``make chromium`` installs it).
Screenshots of each page land in ``build/console-screenshots/`` to look at.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.model import Column, RefreshState

from .conftest import CliResult
from .helpers import CATALOGD, Daemon, clean_env, free_port, metastore_key_file, start_daemon, write_config

pytestmark = pytest.mark.integration

TOKENS = {"ops": "ops-console-token-9c8b7a6d5e4f", "etl": "etl-console-token-1a2b3c4d5e6f",
          "ana": "ana-console-token-0f1e2d3c4b5a"}
SPARK = {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "512m",
                                        "spark.sql.session.timeZone": "UTC"}}
SHOTS = Path(__file__).resolve().parents[2] / "build" / "console-screenshots"
HOSTILE = "<script>alert('owned')</script>"
JOB_TIMEOUT = 240.0


def _env_name(principal: str) -> str:
    return f"CATALOGD_TEST_CONSOLE_{principal.upper()}_TOKEN"


@pytest.fixture(scope="module")
def consoled(daemon: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with CatalogClient(daemon.address) as c:
        metastore = c.get_catalog("main").metastore
    root = tmp_path_factory.mktemp("consoled")
    auth = {"enabled": True,
            "principals": [{"name": name, "token": f"${{{_env_name(name)}}}"} for name in TOKENS],
            "grants": [{"principal": "ops", "catalog": "*", "role": "admin"},
                       {"principal": "etl", "catalog": "main", "role": "writer"},
                       {"principal": "ana", "catalog": "*", "role": "reader"}]}
    config = write_config(root / "consoled.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
                          catalogs=[{"name": "main", "type": "hive", "default": True,
                                     "connection": {"hive.metastore.uris": metastore},
                                     "metastore-key-file": str(metastore_key_file(daemon.data_dir))},
                                    {"name": "scratch", "type": "memory"}],
                          extra={"auth": auth, "spark": SPARK})
    proc = start_daemon(config, root / "data", root / "consoled.log",
                        env={_env_name(name): token for name, token in TOKENS.items()})
    yield proc
    code = proc.stop()
    assert code == 0, proc.log()


@pytest.fixture(scope="module")
def ops(consoled: Daemon) -> Iterator[CatalogClient]:
    # CREATE DYNAMIC TABLE checks its query with Spark: slow on a busy machine.
    with CatalogClient(consoled.address, timeout=300.0, token=TOKENS["ops"]) as c:
        yield c


@pytest.fixture(scope="module")
def objects(consoled: Daemon, ops: CatalogClient, spark: Any) -> Iterator[dict[str, str]]:
    """A database with a source, a dynamic table over it (not refreshed yet) and a table with hostile text."""
    db = f"console_{uuid.uuid4().hex[:8]}"
    ops.create_database(f"main.{db}")
    spark.sql(f"CREATE TABLE {db}.orders (id BIGINT, amount DOUBLE) USING parquet")
    spark.sql(f"INSERT INTO {db}.orders SELECT id, id * 1.5 FROM range(20)")
    dt = f"main.{db}.totals"
    ops.sql(f"CREATE DYNAMIC TABLE {dt} WITH ('initialize' = 'on_schedule') FRESHNESS = INTERVAL '1' HOUR "
            f"AS SELECT count(*) AS n, sum(amount) AS total FROM {db}.orders")
    ops.create_table(f"main.{db}.hostile", [Column("id", "bigint", HOSTILE)], comment=HOSTILE,
                     properties={"note": HOSTILE})
    ops.create_view(f"main.{db}.big_orders", f"SELECT id FROM {db}.orders WHERE amount > 10")
    yield {"db": db, "dt": dt}
    ops.drop_dynamic_table(dt, if_exists=True)
    ops.drop_database(f"main.{db}", if_exists=True, cascade=True)


def _path(name: str) -> str:
    return "/".join(name.split("."))


def _login(consoled: Daemon, principal: str) -> httpx.Client:
    client = httpx.Client(base_url=consoled.http, timeout=60.0)
    answer = client.post("/ui/login", data={"token": TOKENS[principal], "next": "/ui/catalogs"})
    assert answer.status_code == 303, answer.text
    return client


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html
    return found.group(1)


def _cli(consoled: Daemon, *args: str) -> CliResult:
    done = subprocess.run([str(CATALOGD), "--server", consoled.address, "--token", TOKENS["ops"], *args],
                          capture_output=True, text=True, timeout=120, env=clean_env())
    return CliResult(done.returncode, done.stdout, done.stderr)


def test_a_sign_in_posted_from_another_site_gets_no_session(consoled: Daemon) -> None:
    """Issue 31 row 11 (login CSRF): a page on another site posts its own principal's valid token
    to /ui/login from the victim's browser; the browser was signed in as that principal."""
    form = {"token": TOKENS["ana"], "next": "/ui/catalogs"}
    with httpx.Client(base_url=consoled.http, timeout=60.0) as browser:
        for headers in ({"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
                        {"Origin": "http://evil.example"}, {"Origin": "null"},
                        {"Referer": "http://evil.example/page.html"}, {"Sec-Fetch-Site": "same-site"}):
            answer = browser.post("/ui/login", data=form, headers=headers)
            assert answer.status_code == 403 and "sent from another site" in answer.text, headers
            assert "set-cookie" not in answer.headers and not browser.cookies, headers
        # The console's own form (the browser names the console's origin) signs in; its page lets
        # a browser name it (Chromium posts a no-referrer page's form with Origin: null).
        assert browser.get("/ui/login").headers["referrer-policy"] == "same-origin"
        own = browser.post("/ui/login", data=form, headers={"Origin": consoled.http, "Sec-Fetch-Site": "same-origin"})
        assert own.status_code == 303 and own.headers["set-cookie"].startswith("catalogd_console=")


def test_sessions_roles_csrf_and_escaping(consoled: Daemon, ops: CatalogClient, objects: dict[str, str]) -> None:
    dt_page = f"/ui/dynamic/{_path(objects['dt'])}"
    suspend = f"{dt_page}/suspend"
    with httpx.Client(base_url=consoled.http, timeout=60.0) as anonymous:
        # No session: every page sends to the login form; a bad token is refused and gets no cookie.
        answer = anonymous.get(dt_page)
        assert answer.status_code == 303 and answer.headers["location"].startswith("/ui/login?next=")
        bad = anonymous.post("/ui/login", data={"token": "not-a-token", "next": dt_page})
        assert bad.status_code == 401 and "set-cookie" not in bad.headers
        # A forged action without the session cookie (another site's form) changes nothing.
        forged = anonymous.post(suspend, data={"csrf": "guess"})
        assert forged.status_code == 403

    good = httpx.Client(base_url=consoled.http, timeout=60.0).post(
        "/ui/login", data={"token": TOKENS["ana"], "next": dt_page})
    assert good.status_code == 303 and good.headers["location"] == dt_page
    cookie = good.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    assert "Secure" not in cookie  # plain HTTP here; under TLS it is Secure
    assert TOKENS["ana"] not in cookie

    ana, etl, admin = (_login(consoled, name) for name in ("ana", "etl", "ops"))
    try:
        page = ana.get(dt_page)
        assert page.status_code == 200 and objects["dt"] in page.text
        assert "default-src 'none'" in page.headers["content-security-policy"]
        assert 'id="action-' not in page.text  # a reader gets no buttons...
        assert ana.post(suspend, data={"csrf": _csrf(page.text)}).status_code == 403  # ...nor the action
        assert ana.get("/ui/audit").status_code == 403
        writer = etl.get(dt_page).text
        assert 'id="action-refresh"' in writer and 'id="action-suspend"' not in writer  # suspend is admin's
        assert admin.post(suspend, data={}).status_code == 403  # a session without its CSRF token
        assert admin.post(suspend, data={"csrf": _csrf(writer)}).status_code == 403  # another session's token
        assert ops.get_dynamic_table(objects["dt"]).state is RefreshState.RUNNING
        for client in (ana, etl, admin):
            for path in ("/ui/catalogs", "/ui/dynamic", "/ui/stages", "/ui/health", dt_page):
                assert all(token not in client.get(path).text for token in TOKENS.values())

        # Hostile text in a comment, a column comment, a property and a search renders inert.
        table = admin.get(f"/ui/tables/main/{objects['db']}/hostile")
        search = admin.get("/ui/catalogs", params={"q": HOSTILE})
        for html in (table.text, search.text):
            assert "<script>alert" not in html
        assert table.text.count("&lt;script&gt;alert(") == 3
        assert "Matches for" in search.text

        # A view's SQL as written and expanded; the catalog's spark-conf lines.
        view = ana.get(f"/ui/tables/main/{objects['db']}/big_orders").text
        assert "WHERE amount &gt; 10" in view and f"`{objects['db']}`.`orders`" in view
        catalog = ana.get("/ui/catalogs/main").text
        assert "spark.hadoop.hive.metastore.uris thrift://" in catalog

        audit = admin.get("/ui/audit", params={"outcome": "denied", "operation": "suspend"})
        assert audit.status_code == 200
        assert "POST /ui/dynamic/{table}/suspend" in audit.text and "ana may not suspend" in audit.text
    finally:
        for client in (ana, etl, admin):
            client.close()

    # The REST routes the console shares.
    bearer = {"Authorization": f"Bearer {TOKENS['ana']}"}
    listed = httpx.get(f"{consoled.http}/v3/dynamic-tables", headers=bearer, timeout=30).json()
    mine = [t for t in listed["tables"] if t["name"] == objects["dt"]]
    assert mine and mine[0]["withinTarget"] is not True and mine[0]["reason"] == "never refreshed"
    runs = httpx.get(f"{consoled.http}/v3/dynamic-tables/{objects['dt']}/runs", headers=bearer, timeout=30)
    assert runs.status_code == 200 and runs.json()["targetSeconds"] == 3600
    assert httpx.get(f"{consoled.http}/v3/stages", headers=bearer, timeout=30).status_code == 200
    health = httpx.get(f"{consoled.http}/v3/health", headers=bearer, timeout=30).json()
    assert health["metastores"]["main"] == "up"
    assert httpx.get(f"{consoled.http}/v3/health", timeout=30).status_code == 401


def test_a_browser_signs_in_browses_refreshes_and_suspends(consoled: Daemon, objects: dict[str, str]) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is needed: make chromium"
    SHOTS.mkdir(parents=True, exist_ok=True)
    db, dt = objects["db"], objects["dt"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("dialog", lambda dialog: dialog.accept())
            page.goto(f"{consoled.http}/ui/catalogs")
            assert "/ui/login" in page.url
            page.screenshot(path=str(SHOTS / "login.png"))
            page.fill("#token", TOKENS["ops"])
            page.click("#sign-in")
            page.wait_for_selector("#tree")
            assert page.inner_text("#principal") == "ops"
            page.screenshot(path=str(SHOTS / "catalogs.png"), full_page=True)
            page.click(f"#tree a:text-is('{db}')")
            page.click("a:text-is('orders')")
            assert page.inner_text("#table-name") == f"main.{db}.orders"
            assert "amount" in page.inner_text("#columns")
            page.screenshot(path=str(SHOTS / "table.png"), full_page=True)

            page.goto(f"{consoled.http}/ui/dynamic")
            page.screenshot(path=str(SHOTS / "dynamic-tables.png"), full_page=True)
            page.click(f"a:text-is('{dt}')")
            page.click("#action-refresh")  # confirmed in the dialog
            assert "refresh started" in page.inner_text("#notice")

            def refreshed() -> bool:
                page.reload()
                return "SUCCEEDED" in page.inner_text("#runs")

            wait_until(refreshed, JOB_TIMEOUT, "the refresh started from the page to succeed", every=0.5)
            assert "manual" in page.inner_text("#runs")
            points = page.locator("#lag-plot svg circle").count()
            assert points >= 2, page.inner_html("#lag-plot")
            assert page.locator("#lag-plot svg line.target").count() == 1
            assert page.locator("#duration-plot svg circle").count() == 1
            page.screenshot(path=str(SHOTS / "dynamic-table.png"), full_page=True)

            page.click("#action-suspend")
            assert page.inner_text("#state") == "SUSPENDED"
            described = _cli(consoled, "--json", "dt", "describe", dt)
            assert described.code == 0, described.stderr
            assert json.loads(described.stdout)["state"] == "SUSPENDED"
            page.click("#action-resume")
            assert page.inner_text("#state") == "RUNNING"

            for name in ("stages", "audit", "health"):
                page.goto(f"{consoled.http}/ui/{name}")
                page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
            assert "up" in page.inner_text("#metastores")
        finally:
            browser.close()
