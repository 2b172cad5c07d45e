"""``auth.kerberos``, ``auth.certificate-rules`` and ``auth.throttle``: defaults and what is refused."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from config_cases import ONE_MEMORY

from catalogd.config import parse_config
from catalogd.errors import ConfigError


def _auth(body: str) -> str:
    return "auth:\n" + body + ONE_MEMORY


def test_defaults() -> None:
    auth = parse_config(ONE_MEMORY).auth
    assert auth.kerberos is None
    assert auth.certificate_rules == [r"CN=([^,]+).* -> \1"]
    throttle = auth.throttle
    assert (throttle.free_attempts, throttle.base_delay, throttle.max_delay, throttle.forget_after) == (
        5, datetime.timedelta(seconds=1), datetime.timedelta(minutes=1), datetime.timedelta(minutes=10))


def test_a_kerberos_section(tmp_path: Path) -> None:
    keytab = tmp_path / "catalogd.keytab"
    keytab.write_bytes(b"\x05\x02")
    keytab.chmod(0o600)
    auth = parse_config(_auth(f"""
  kerberos:
    principal: catalogd/_HOST@EXAMPLE.COM
    keytab: {keytab}
    principal-rules: ["([^/@]+)@EXAMPLE\\\\.COM -> \\\\1"]
    qop: [AUTH]
    delegation-tokens: {{renew-interval: 1h}}
  throttle: {{free-attempts: 2, base-delay: 0s}}
""")).auth
    assert auth.kerberos is not None
    assert (auth.kerberos.principal, auth.kerberos.keytab, auth.kerberos.qop) == (
        "catalogd/_HOST@EXAMPLE.COM", keytab, ["auth"])
    assert auth.kerberos.principal_rules == [r"([^/@]+)@EXAMPLE\.COM -> \1"]
    assert auth.kerberos.delegation_tokens.renew_interval == datetime.timedelta(hours=1)
    assert auth.kerberos.delegation_tokens.secret is None
    assert (auth.throttle.free_attempts, auth.throttle.base_delay) == (2, datetime.timedelta(0))


@pytest.mark.parametrize(("body", "says"), [
    ("  kerberos: {principal: catalogd, keytab: KEYTAB}\n", "invalid Kerberos principal"),
    ("  kerberos: {principal: catalogd/h@R, keytab: /nonexistent/keytab}\n", "does not exist"),
    ("  kerberos: {principal: catalogd/h@R, keytab: OPEN}\n", "readable by others"),
    ("  kerberos: {principal: catalogd/h@R, keytab: KEYTAB, principal-rules: [nonsense]}\n", "PATTERN -> REPLACEMENT"),
    ("  kerberos: {principal: catalogd/h@R, keytab: KEYTAB, qop: []}\n", "offer at least one"),
    ("  kerberos: {principal: catalogd/h@R, keytab: KEYTAB, qop: [privacy]}\n", "qop"),
    ("  certificate-rules: ['([ -> x']\n", "bad pattern"),
    ("  kerberos: {principal: catalogd/h@R, keytab: KEYTAB, delegation-tokens: {secret: short}}\n", "at least"),
])
def test_refused(tmp_path: Path, body: str, says: str) -> None:
    keytab = tmp_path / "k.keytab"
    keytab.write_bytes(b"\x05\x02")
    keytab.chmod(0o600)
    open_keytab = tmp_path / "open.keytab"
    open_keytab.write_bytes(b"\x05\x02")
    open_keytab.chmod(0o644)
    with pytest.raises(ConfigError) as raised:
        parse_config(_auth(body.replace("KEYTAB", str(keytab)).replace("OPEN", str(open_keytab))))
    assert says in str(raised.value)


# ---------------------------------------------------------------- a kerberized backing metastore

def _kerberized_catalog(connection: str, auth: str = "") -> str:
    return auth + f"""catalogs:
  - name: main
    type: hive
    connection: {{{connection}}}
"""


def test_a_kerberized_metastore_is_reached_with_catalogd_s_own_login(tmp_path: Path) -> None:
    keytab = tmp_path / "catalogd.keytab"
    keytab.write_bytes(b"\x05\x02")
    keytab.chmod(0o600)
    login = f"auth:\n  kerberos: {{principal: catalogd/_HOST@EXAMPLE.COM, keytab: {keytab}}}\n"
    remote = ("hive.metastore.uris: 'thrift://hms1:9083', hive.metastore.sasl.enabled: 'true', "
              "hive.metastore.kerberos.principal: hive/_HOST@EXAMPLE.COM")
    catalog = parse_config(_kerberized_catalog(remote, login)).catalogs[0]
    assert (catalog.sasl_enabled, catalog.metastore_principal) == (True, "hive/_HOST@EXAMPLE.COM")
    plain = parse_config(_kerberized_catalog("hive.metastore.uris: 'thrift://hms1:9083'")).catalogs[0]
    assert not plain.sasl_enabled
    embedded = ("hive.metastore.uris: embedded, hive.metastore.sasl.enabled: 'true', "
                f"hive.metastore.kerberos.principal: hive/localhost@EXAMPLE.COM, "
                f"hive.metastore.kerberos.keytab.file: {keytab}")
    assert parse_config(_kerberized_catalog(embedded, login)).catalogs[0].is_embedded

    def refused(connection: str, auth: str = login) -> str:
        with pytest.raises(ConfigError) as info:
            parse_config(_kerberized_catalog(connection, auth))
        return " ".join(info.value.problems)

    assert "set auth.kerberos" in refused(remote, auth="")
    assert "needs hive.metastore.kerberos.principal" in refused(
        "hive.metastore.uris: 'thrift://hms1:9083', hive.metastore.sasl.enabled: 'true'")
    assert "not true or false" in refused(remote.replace("'true'", "'yes'"))
    assert "invalid Kerberos principal" in refused(remote.replace("hive/_HOST@EXAMPLE.COM", "hive"))
    assert "needs hive.metastore.kerberos.keytab.file" in refused(embedded.rsplit(",", 1)[0])
    assert "only used by an embedded metastore" in refused(remote + f", hive.metastore.kerberos.keytab.file: {keytab}")
