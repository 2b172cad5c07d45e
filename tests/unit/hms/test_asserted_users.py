"""Identity proven by default (issue 31 row 10): with auth on, a user only asserted by set_ugi is
refused unless auth.trust-asserted-users names a role, and then acts with its grants capped at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catalogd.auth.model import Authority, Role
from catalogd.config import parse_config
from catalogd.hms import methods
from catalogd.hms.policy import CallRecord, Policy
from catalogd.hms.refused import Refused
from catalogd.hms.server import ClientConnection
from catalogd.manager import CatalogManager


class Recorded:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def record(self, **line: Any) -> None:
        self.lines.append(line)


def _policy(tmp_path: Path, trust: str | None) -> Policy:
    auth = f"auth: {{trust-asserted-users: {trust}}}\n" if trust is not None else ""
    config = parse_config(f"server: {{data-dir: {tmp_path}}}\n{auth}catalogs:\n"
                          "  - {name: main, type: memory, default: true}\n")
    authority = Authority(True, names={"admin", "etl"}, grants={("admin", "*"): Role.ADMIN,
                                                              ("etl", "main"): Role.WRITER})
    return Policy(CatalogManager(config), authority, Recorded())  # type: ignore[arg-type]


def _authorize(policy: Policy, user: str, method: str, proven: str | None = None) -> str | None:
    conn = ClientConnection("127.0.0.1:7", identity=(user, ()), proven=proven)
    try:
        policy.authorize(conn, method, methods.kind(method), "main", CallRecord())
    except Refused as refused:
        return str(refused.exc.message)  # type: ignore[attr-defined]
    return None


def test_by_default_an_asserted_user_is_refused_even_as_admin(tmp_path: Path) -> None:
    policy = _policy(tmp_path, None)
    assert policy.manager.config.auth.trust_asserted_users == "none"
    for method in ("create_database", "get_all_databases", "drop_database", "lock"):
        message = _authorize(policy, "admin", method)
        assert message is not None and "user 'admin' is only asserted by set_ugi" in message, method
        assert "auth.trust-asserted-users (none)" in message and "Kerberos" in message
    # Audited as denials under the claimed name.
    audit = policy.audit
    assert {line["outcome"] for line in audit.lines} == {"denied"}  # type: ignore[union-attr]
    assert {line["principal"] for line in audit.lines} == {"admin"}  # type: ignore[union-attr]


def test_a_proven_user_is_not_affected(tmp_path: Path) -> None:
    policy = _policy(tmp_path, None)
    for proof in ("kerberos", "certificate", "delegation token"):
        assert _authorize(policy, "admin", "drop_database", proven=proof) is None


@pytest.mark.parametrize(("trust", "allowed"), [
    ("reader", {"get_all_databases"}),
    ("writer", {"get_all_databases", "create_table"}),
    ("admin", {"get_all_databases", "create_table", "grant_role"}),
])
def test_trust_caps_an_asserted_user_at_the_role_it_names(tmp_path: Path, trust: str, allowed: set[str]) -> None:
    policy = _policy(tmp_path, trust)
    for method in ("get_all_databases", "create_table", "grant_role"):
        message = _authorize(policy, "admin", method)
        assert (message is None) == (method in allowed), (trust, method, message)
        if message is not None:
            assert f"auth.trust-asserted-users caps it at {trust}" in message
    # The cap never raises a principal above its grants.
    assert _authorize(policy, "etl", "grant_role") is not None


def test_the_cap_is_a_role_ceiling_on_the_principal() -> None:
    authority = Authority(True, names={"a"}, grants={("a", "*"): Role.ADMIN})
    capped = authority.principal_named("a", Role.READER)
    assert capped is not None
    assert authority.role_of(capped, "main") is Role.READER
    assert authority.allows(capped, "main", Role.READER) and not authority.allows(capped, "main", Role.WRITER)


def test_the_setting_takes_only_a_role_or_none(tmp_path: Path) -> None:
    from catalogd.errors import ConfigError

    with pytest.raises(ConfigError, match="trust-asserted-users"):
        _policy(tmp_path, "everyone")
    assert _policy(tmp_path, "WRITER").manager.config.auth.trust_asserted_users == "writer"
