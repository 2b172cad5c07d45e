"""Login CSRF (issue 31 row 11): a console POST another site's page sent is told from the console's own."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from http_fakes import FakeManager

from catalogd.server.console.app import ConsoleSources
from catalogd.server.console.origin import foreign_origin
from catalogd.server.http_app import create_app
from catalogd.server.metrics import Metrics


@pytest.mark.parametrize("headers", [
    {"host": "console:9191", "origin": "http://console:9191", "sec-fetch-site": "same-origin"},
    {"host": "Console:9191", "origin": "https://console:9191"},  # the scheme is not compared (a TLS proxy)
    {"host": "console", "origin": "https://console"},  # default ports
    {"host": "console", "origin": "http://console:80"},
    {"host": "[::1]:9191", "origin": "http://[::1]:9191"},
    {"host": "console:9191", "referer": "http://console:9191/ui/login?next=/ui/dynamic"},
    {"host": "console:9191", "sec-fetch-site": "none"},  # typed by the user
    # The console's pages send no referrer: Chromium then posts their forms with Origin null.
    {"host": "console:9191", "sec-fetch-site": "same-origin", "origin": "null"},
    {"host": "console:9191"},  # no browser: curl, scripts
])
def test_the_console_s_own_posts_pass(headers: dict[str, str]) -> None:
    assert foreign_origin(headers) is None


@pytest.mark.parametrize(("headers", "why"), [
    ({"host": "console:9191", "origin": "http://evil.example"}, "Origin http://evil.example is not this console"),
    ({"host": "console:9191", "origin": "http://console:9192"}, "is not this console"),
    ({"host": "console", "origin": "http://console:8080"}, "is not this console"),
    ({"host": "console:9191", "origin": "null"}, "Origin is null"),
    ({"host": "console:9191", "origin": "garbage"}, "is no origin"),
    ({"host": "console:9191", "sec-fetch-site": "cross-site", "origin": "http://console:9191"}, "cross-site"),
    ({"host": "console:9191", "sec-fetch-site": "same-site"}, "same-site"),
    ({"host": "console:9191", "referer": "http://evil.example/page"}, "Referer http://evil.example"),
    ({"origin": "http://console:9191"}, "is not this console"),  # no Host: nothing to match
])
def test_a_post_from_another_site_is_told_apart(headers: dict[str, str], why: str) -> None:
    found = foreign_origin(headers)
    assert found is not None and why in found


def test_a_login_posted_from_another_site_is_refused_with_no_cookie() -> None:
    with TestClient(create_app(FakeManager(), Metrics(), console=ConsoleSources())) as client:
        answer = client.post("/ui/login", data={"token": "t" * 40, "next": "/ui/dynamic"},
                             headers={"origin": "http://evil.example"}, follow_redirects=False)
        assert answer.status_code == 403 and "sent from another site" in answer.text
        assert "set-cookie" not in answer.headers
        own = client.post("/ui/login", data={"next": "/ui/dynamic"}, headers={"origin": "http://testserver"},
                          follow_redirects=False)
        assert own.status_code == 303
