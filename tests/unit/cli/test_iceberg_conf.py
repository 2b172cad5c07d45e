"""``catalogd iceberg-conf``: auth as the daemon answered the CLI's token, and the token never printed.

The plain cases (text and JSON, a missing catalog, a bad ``--name``) are ``cli_cases.py``'s.
"""

from __future__ import annotations

import json

import pytest
from fake_client import ICEBERG_URI, FakeClient

import catalogd.client
from catalogd.cli import main

SECRET = "s3cret-token-value"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    client = FakeClient()
    monkeypatch.setattr(catalogd.client, "CatalogClient", lambda *a, **k: client)
    return client


def test_a_token_the_daemon_took_means_auth_and_is_never_printed(fake: FakeClient,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    fake.principal = "etl"  # the daemon named a principal: auth is on
    assert main(["--token", SECRET, "iceberg-conf", "main", "--json"]) == 0
    out = capsys.readouterr().out
    settings = json.loads(out)
    assert settings["auth"] is True and settings["uri"] == ICEBERG_URI and settings["warehouse"] == "main"
    assert settings["spark"]["spark.sql.catalog.main.token"] == "<your token>"
    assert settings["trino"]["iceberg.rest-catalog.oauth2.token"] == "${ENV:CATALOGD_TOKEN}"
    assert SECRET not in out
    assert main(["--token", SECRET, "iceberg-conf", "main"]) == 0
    out, err = capsys.readouterr()
    assert "token" in out and SECRET not in out + err


def test_a_daemon_with_auth_off_answers_anonymous_and_no_token_is_asked_for(
        fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    fake.principal = "anonymous"
    assert main(["--token", SECRET, "iceberg-conf", "scratch", "--json"]) == 0
    settings = json.loads(capsys.readouterr().out)
    assert settings["auth"] is False and settings["token_env"] is None
    assert "token" not in settings["pyiceberg"] and settings["warehouse"] == "scratch"
    # --auth says so whatever the daemon answered.
    assert main(["iceberg-conf", "scratch", "--auth", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pyiceberg"]["token"] == "<your token>"


def test_a_bad_client_name_is_refused_before_the_daemon_is_asked(fake: FakeClient,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["iceberg-conf", "main", "--name", "a-b"]) == 1
    assert capsys.readouterr().err.startswith("error: invalid-argument: client catalog name 'a-b'")
    assert fake.calls == []
