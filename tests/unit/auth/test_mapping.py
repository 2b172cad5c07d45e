"""Kerberos principals and certificate subjects mapped to catalogd principals by rules."""

from __future__ import annotations

from catalogd.auth.mapping import NameMapper, default_kerberos_rules


def test_the_default_kerberos_rule_takes_users_of_the_service_realm_only() -> None:
    mapper = NameMapper(default_kerberos_rules("catalogd/host.example.com@EXAMPLE.COM"))
    assert mapper.map("alice@EXAMPLE.COM") == "alice"
    assert mapper.map("alice@OTHER.COM") is None
    assert mapper.map("alice@EXAMPLEXCOM") is None
    assert mapper.map("hive/host@EXAMPLE.COM") is None


def test_rules_apply_in_order_and_map_services_too() -> None:
    mapper = NameMapper([r"([^/@]+)/[^@]+@EXAMPLE\.COM -> svc-\1", r"(.+)@PARTNER\.COM -> partner-\1",
                         r"nobody@.* -> "])
    assert mapper.map("spark/node1@EXAMPLE.COM") == "svc-spark"
    assert mapper.map("bob@PARTNER.COM") == "partner-bob"
    assert mapper.map("nobody@EXAMPLE.COM") is None
    assert mapper.map("carol@EXAMPLE.COM") is None


def test_certificate_subjects() -> None:
    mapper = NameMapper([r"CN=([^,]+).* -> \1"])
    assert mapper.map("CN=trino,O=Example") == "trino"
    assert mapper.map("O=Example") is None
