"""The ``auth`` section: principals with tokens (inline or 0600 files), grants of known principals and catalogs."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_cases import ONE_MEMORY, SRC, problems_of

from catalogd.config import parse_config
from catalogd.errors import ConfigError
from catalogd.server.daemon import _is_loopback, check_insecure

TOKEN = "tok-0123456789abcdef-secret"


def _auth(body: str) -> str:
    return "auth:\n" + body + ONE_MEMORY


def test_defaults_are_off() -> None:
    config = parse_config(ONE_MEMORY)
    assert (config.auth.enabled, config.auth.allow_insecure, config.auth.principals, config.auth.grants) == \
        (False, False, [], [])
    assert (config.auth.audit.max_bytes, config.auth.audit.backups) == (10 * 1024 * 1024, 5)
    assert parse_config("auth:\n" + ONE_MEMORY).auth == config.auth


def test_principals_grants_and_audit(tmp_path: Path) -> None:
    token_file = tmp_path / "analyst"
    token_file.write_text("file-token-0123456789abcdef\n")
    token_file.chmod(0o600)
    config = parse_config(_auth(f"""
  enabled: true
  principals:
    - {{name: etl, token: {TOKEN}}}
    - {{name: analyst, token-file: {token_file}}}
    - {{name: spark-user}}
  grants:
    - {{principal: etl, catalog: Scratch, role: Writer}}
    - {{principal: analyst, catalog: "*", role: reader}}
    - {{principal: spark-user, catalog: scratch, role: admin}}
  audit: {{max-bytes: 1000, backups: 0}}
"""))
    etl, analyst, spark = config.auth.principals
    assert etl.secret is not None and etl.secret.get_secret_value() == TOKEN
    assert analyst.secret is not None and analyst.secret.get_secret_value() == "file-token-0123456789abcdef"
    assert spark.secret is None
    assert [(g.principal, g.catalog, g.role) for g in config.auth.grants] == [
        ("etl", "scratch", "writer"), ("analyst", "*", "reader"), ("spark-user", "scratch", "admin")]
    assert (config.auth.audit.max_bytes, config.auth.audit.backups) == (1000, 0)
    # Never shown: not in the repr, not in a dump (the file's token neither).
    for shown in (repr(config), str(config), str(config.model_dump(mode="json")), str(config.model_dump())):
        assert TOKEN not in shown and "file-token" not in shown


def test_a_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATALOGD_ETL_TOKEN", TOKEN)
    config = parse_config(_auth("  principals: [{name: etl, token: ${CATALOGD_ETL_TOKEN}}]\n"))
    assert config.auth.principals[0].secret is not None
    assert config.auth.principals[0].secret.get_secret_value() == TOKEN


def test_short_tokens_are_refused_without_showing_them() -> None:
    problems = problems_of(_auth("  principals: [{name: etl, token: short-secret}]\n"))
    assert problems == [f"{SRC}: auth.principals[0].token: must be at least 16 characters "
                        "(e.g. the output of `openssl rand -hex 32`)"]
    assert "short-secret" not in str(problems)


def test_token_file_rules(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert problems_of(_auth(f"  principals: [{{name: etl, token-file: {missing}}}]\n")) == [
        f"{SRC}: auth.principals[0]: token file '{missing}' does not exist"]
    assert problems_of(_auth(f"  principals: [{{name: etl, token-file: {tmp_path}}}]\n")) == [
        f"{SRC}: auth.principals[0]: token file '{tmp_path}' is not a regular file"]
    open_file = tmp_path / "open"
    open_file.write_text(TOKEN)
    open_file.chmod(0o640)
    assert problems_of(_auth(f"  principals: [{{name: etl, token-file: {open_file}}}]\n")) == [
        f"{SRC}: auth.principals[0]: token file '{open_file}' is readable by group or others (mode 640): "
        "run chmod 600 on it"]
    short = tmp_path / "short"
    short.write_text("tiny\n")
    short.chmod(0o600)
    problems = problems_of(_auth(f"  principals: [{{name: etl, token-file: {short}}}]\n"))
    assert problems == [f"{SRC}: auth.principals[0]: the token in '{short}' must be at least 16 characters"]
    short.write_text(TOKEN)
    problems = problems_of(_auth(f"  principals: [{{name: etl, token: {TOKEN}, token-file: {short}}}]\n"))
    assert problems == [f"{SRC}: auth.principals[0]: give either token or token-file, not both"]
    assert TOKEN not in str(problems)


def test_principal_and_grant_rules() -> None:
    problems = problems_of(_auth(f"""
  principals:
    - {{name: etl, token: {TOKEN}}}
    - {{name: etl}}
  grants:
    - {{principal: elt, catalog: scratch, role: reader}}
"""))
    assert problems == [
        f"{SRC}: auth.principals[1].name: two principals named 'etl' (principals[0] and principals[1])",
        f"{SRC}: auth.grants[0].principal: unknown principal 'elt': declare it under auth.principals "
        "(did you mean 'etl'?)",
    ]
    assert problems_of(_auth("  principals: [{name: etl}]\n  grants: [{principal: etl, catalog: scrach, "
                             "role: reader}]\n")) == [
        f"{SRC}: auth.grants[0].catalog: unknown catalog 'scrach': name a configured catalog or '*' "
        "(did you mean 'scratch'?)"]
    assert problems_of(_auth("  principals: [{name: etl}]\n  grants: [{principal: etl, catalog: '*', "
                             "role: owner}]\n")) == [
        f"{SRC}: auth.grants[0].role: expected 'reader', 'writer' or 'admin', got 'owner'"]
    for name in ("anonymous", "job:main.db.t", "has space", ""):
        assert len(problems_of(_auth(f"  principals: [{{name: '{name}'}}]\n"))) == 1, name
    assert problems_of(_auth("  enabled: true\n")) == [
        f"{SRC}: auth.principals: auth is enabled but no principals are declared: nobody could do anything; "
        "add principals or set enabled: false"]
    assert problems_of(_auth("  audit: {max-bytes: 0, backups: -1}\n")) == [
        f"{SRC}: auth.audit.max-bytes: must be at least 1, got 0",
        f"{SRC}: auth.audit.backups: must be 0 or more, got -1"]


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts(host: str) -> None:
    assert _is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "192.168.0.1", "no-such-host.invalid"])
def test_non_loopback_hosts(host: str) -> None:
    assert not _is_loopback(host)


def test_auth_off_on_a_non_loopback_host_needs_allow_insecure() -> None:
    exposed = "server: {host: 0.0.0.0}\n"
    with pytest.raises(ConfigError) as refused:
        check_insecure(parse_config(exposed + ONE_MEMORY, source=SRC))
    assert refused.value.exit_code == 2
    assert "auth.allow-insecure" in refused.value.message and SRC in refused.value.message
    check_insecure(parse_config(exposed + "auth: {allow-insecure: true}\n" + ONE_MEMORY))
    check_insecure(parse_config(exposed + f"auth: {{enabled: true, principals: [{{name: a, token: {TOKEN}}}]}}\n"
                                + ONE_MEMORY))
    check_insecure(parse_config(ONE_MEMORY))  # 127.0.0.1, the default


def test_asserted_users_are_not_trusted_unless_a_role_is_named() -> None:
    assert parse_config(ONE_MEMORY).auth.trust_asserted_users == "none"
    for role in ("none", "reader", "writer", "admin"):
        assert parse_config(_auth(f"  trust-asserted-users: {role.upper()}\n")).auth.trust_asserted_users == role
    with pytest.raises(ConfigError, match="trust-asserted-users"):
        parse_config(_auth("  trust-asserted-users: everyone\n"))


def test_the_per_host_lock_bound_is_refused_with_the_way_out() -> None:
    with pytest.raises(ConfigError, match="hms-max-locks-per-connection and hms-max-locks-per-principal"):
        parse_config("server:\n  hms-max-locks-per-client: 10\n" + ONE_MEMORY)
    server = parse_config("server:\n  hms-max-locks-per-connection: 10\n  hms-max-locks-per-principal: 20\n"
                          "  hms-max-locks: 30\n" + ONE_MEMORY).server
    assert (server.hms_max_locks_per_connection, server.hms_max_locks_per_principal, server.hms_max_locks) == \
        (10, 20, 30)
