"""The auth model: tokens compared in constant time against every principal, roles per catalog, job tokens."""

from __future__ import annotations

import hmac

import pytest

from catalogd.auth import model
from catalogd.auth.model import ANONYMOUS, Authority, Principal, Role
from catalogd.config import parse_config
from catalogd.errors import PermissionDeniedError

ETL_TOKEN = "etl-0123456789abcdef"
ANALYST_TOKEN = "analyst-0123456789abcdef"
OPS_TOKEN = "ops-0123456789abcdef"

CONFIG = f"""
auth:
  enabled: true
  principals:
    - {{name: etl, token: {ETL_TOKEN}}}
    - {{name: analyst, token: {ANALYST_TOKEN}}}
    - {{name: ops, token: {OPS_TOKEN}}}
    - {{name: spark}}
  grants:
    - {{principal: etl, catalog: main, role: writer}}
    - {{principal: etl, catalog: "*", role: reader}}
    - {{principal: analyst, catalog: "*", role: reader}}
    - {{principal: ops, catalog: "*", role: admin}}
    - {{principal: spark, catalog: scratch, role: reader}}
catalogs:
  - {{name: main, type: memory, default: true}}
  - {{name: scratch, type: memory}}
"""


@pytest.fixture
def authority() -> Authority:
    return Authority.from_config(parse_config(CONFIG))


def test_auth_off_everyone_is_anonymous_and_everything_passes() -> None:
    off = Authority.from_config(parse_config("catalogs: [{name: main, type: memory}]"))
    assert not off.enabled
    assert off.authenticate(None) is ANONYMOUS
    assert off.authenticate("whatever") is ANONYMOUS
    assert off.principal_named("anyone") is ANONYMOUS
    off.require(ANONYMOUS, None, Role.ADMIN, "reloadConfig")
    off.require(ANONYMOUS, "main", Role.ADMIN, "dropDynamicTable")


def test_a_token_authenticates_its_principal(authority: Authority) -> None:
    assert authority.authenticate(ETL_TOKEN) == Principal("etl")
    assert authority.authenticate(ANALYST_TOKEN) == Principal("analyst")
    assert authority.authenticate(OPS_TOKEN) == Principal("ops")


@pytest.mark.parametrize("token", [None, ""])
def test_no_token_is_denied(authority: Authority, token: str | None) -> None:
    with pytest.raises(PermissionDeniedError, match="no token given"):
        authority.authenticate(token)


@pytest.mark.parametrize("token", [ETL_TOKEN[:-1], ETL_TOKEN + "x", ETL_TOKEN.upper(), "x" * 40, "spark"])
def test_a_wrong_token_is_denied_without_showing_it(authority: Authority, token: str) -> None:
    with pytest.raises(PermissionDeniedError) as denied:
        authority.authenticate(token)
    assert denied.value.message == "the token is not valid"
    assert token not in str(denied.value)


def test_every_principal_token_is_compared_in_constant_time(authority: Authority,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The first token matching does not stop the comparisons: the time tells nothing of which matched."""
    compared: list[bytes] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        compared.append(b)
        return real(a, b)

    monkeypatch.setattr(model.hmac, "compare_digest", counting)
    assert authority.authenticate(ETL_TOKEN).name == "etl"  # the first principal
    assert sorted(compared) == sorted(t.encode() for t in (ETL_TOKEN, ANALYST_TOKEN, OPS_TOKEN))
    compared.clear()
    with pytest.raises(PermissionDeniedError):
        authority.authenticate("not-a-token-of-anyone")
    assert len(compared) == 3


def test_roles_per_catalog_and_on_every_catalog(authority: Authority) -> None:
    etl, analyst, ops, spark = (Principal(n) for n in ("etl", "analyst", "ops", "spark"))
    assert authority.role_of(etl, "main") is Role.WRITER  # the higher of its two grants
    assert authority.role_of(etl, "scratch") is Role.READER
    assert authority.role_of(analyst, "main") is Role.READER
    assert authority.role_of(ops, "scratch") is Role.ADMIN
    assert authority.role_of(spark, "scratch") is Role.READER
    assert authority.role_of(spark, "main") is None
    assert authority.role_of(Principal("stranger"), "main") is None
    # Daemon-wide: only grants on "*" count.
    assert authority.role_of(ops, None) is Role.ADMIN
    assert authority.role_of(spark, None) is None
    assert authority.allows(etl, "main", Role.READER) and authority.allows(etl, "main", Role.WRITER)
    assert not authority.allows(etl, "main", Role.ADMIN)


def test_require_names_the_principal_the_role_the_catalog_and_the_operation(authority: Authority) -> None:
    with pytest.raises(PermissionDeniedError) as denied:
        authority.require(Principal("analyst"), "main", Role.WRITER, "createTable")
    assert denied.value.message == "analyst needs role writer on catalog main for createTable"
    with pytest.raises(PermissionDeniedError) as denied:
        authority.require(Principal("etl"), None, Role.ADMIN, "reloadConfig")
    assert denied.value.message == "etl needs role admin on catalog * for reloadConfig"
    with pytest.raises(PermissionDeniedError, match="spark needs role reader on catalog main for getTable"):
        authority.require(Principal("spark"), "main", Role.READER, "getTable")
    authority.require(Principal("ops"), None, Role.ADMIN, "reloadConfig")
    authority.require(Principal("etl"), "main", Role.WRITER, "createTable")


def test_principal_named_knows_principals_with_and_without_tokens(authority: Authority) -> None:
    assert authority.principal_named("etl") == Principal("etl")
    assert authority.principal_named("spark") == Principal("spark")
    assert authority.principal_named("root") is None
    assert authority.principal_named("ETL") is None  # user names are case-sensitive


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_job_tokens_are_scoped_to_one_table_and_expire() -> None:
    clock = Clock()
    authority = Authority(True, {"etl": ETL_TOKEN}, grants={("etl", "main"): Role.WRITER}, clock=clock)
    token = authority.mint_job_token("main", "Sales", "Daily", ttl=60)
    other = authority.mint_job_token("main", "sales", "weekly", ttl=60)
    assert token != other and len(token) >= 32
    job = authority.authenticate(token)
    assert job.job_scope == ("main", "sales", "daily") and job.name == "job:main.sales.daily"
    assert authority.in_job_scope(job, "main", "sales", "daily")
    assert not authority.in_job_scope(job, "main", "sales", "weekly")
    assert authority.in_job_scope(Principal("etl"), "main", "sales", "weekly")
    # Writer on its own catalog (the stage RPCs check the table), reader elsewhere, never admin.
    assert authority.allows(job, "main", Role.WRITER)
    assert not authority.allows(job, "main", Role.ADMIN)
    assert not authority.allows(job, "scratch", Role.WRITER) and authority.allows(job, "scratch", Role.READER)
    assert not authority.allows(job, None, Role.ADMIN)
    clock.now += 61
    with pytest.raises(PermissionDeniedError, match="the token is not valid"):
        authority.authenticate(token)
    fresh = authority.mint_job_token("main", "sales", "daily", ttl=60)
    authority.revoke_job_token(fresh)
    with pytest.raises(PermissionDeniedError):
        authority.authenticate(fresh)
    authority.revoke_job_token("never-minted")


def test_reload_swaps_principals_and_grants(authority: Authority) -> None:
    job = authority.mint_job_token("main", "sales", "daily", ttl=60)
    authority.reload(parse_config(CONFIG.replace("{principal: analyst, catalog: \"*\", role: reader}",
                                                 "{principal: analyst, catalog: main, role: writer}")))
    assert authority.role_of(Principal("analyst"), "main") is Role.WRITER
    assert authority.role_of(Principal("analyst"), "scratch") is None
    assert authority.authenticate(job).job_scope == ("main", "sales", "daily")
    authority.reload(parse_config("catalogs: [{name: main, type: memory}]"))
    assert authority.authenticate(None) is ANONYMOUS
