"""``cluster.members``: the daemons of one deployment, this one among them."""

from __future__ import annotations

from pathlib import Path

from config_cases import ONE_MEMORY, SRC, problems_of

from catalogd.config import parse_config

TWO = """
cluster:
  members:
    - {host: a.example, port: 9190, hms-port: 9083, http-port: 9191}
    - {host: b.example, port: 9290, hms-port: 9183, http-port: 9291}
"""


def test_no_cluster_by_default() -> None:
    config = parse_config(ONE_MEMORY, source=SRC)
    assert config.cluster.members == []
    assert config.cluster.hms_uris == ""


def test_members_give_every_uri_and_address_in_order() -> None:
    cluster = parse_config(ONE_MEMORY + TWO, source=SRC).cluster
    assert cluster.hms_uris == "thrift://a.example:9083,thrift://b.example:9183"
    assert cluster.addresses == "a.example:9190,b.example:9290"


def test_member_ports_default_like_the_server() -> None:
    cluster = parse_config(ONE_MEMORY + "cluster: {members: [{host: a}, {host: b}]}\n", source=SRC).cluster
    assert cluster.hms_uris == "thrift://a:9083,thrift://b:9083"


def test_empty_cluster_section_means_none() -> None:
    assert parse_config(ONE_MEMORY + "cluster:\n", source=SRC).cluster.members == []


def test_this_daemon_must_be_a_member() -> None:
    problems = problems_of(ONE_MEMORY + "server: {port: 9390}\n" + TWO)
    assert problems == [f"{SRC}: cluster.members: no member has this daemon's ports (port 9390, hms-port 9083, "
                        "http-port 9191): list this daemon too"]


def test_members_need_fixed_ports() -> None:
    problems = problems_of(ONE_MEMORY + "server: {hms-port: 0}\n" + TWO)
    assert any("server.hms-port is 0" in p for p in problems)
    problems = problems_of(ONE_MEMORY + "cluster: {members: [{host: a, port: 0}]}\n")
    assert any("cluster.members[0]" in p and "port is 0" in p for p in problems)


def test_unknown_keys_and_repeats_are_refused() -> None:
    problems = problems_of(ONE_MEMORY + "cluster: {members: [{host: a, hms_prot: 1}], leader: a}\n")
    assert any(p.startswith(f"{SRC}: cluster.members[0]: unknown key 'hms_prot'") for p in problems)
    assert any("unknown key 'leader'" in p for p in problems)
    problems = problems_of(ONE_MEMORY + "cluster: {members: [{host: a}, {host: A}]}\n")
    assert any("A:9190 is listed twice" in p for p in problems)


def test_a_changed_cluster_applies_at_the_next_start(tmp_path: Path) -> None:
    from catalogd.manager import CatalogManager

    base = f"server: {{data-dir: {tmp_path}}}\n" + ONE_MEMORY
    manager = CatalogManager(parse_config(base, source=SRC))
    manager.open()
    try:
        changed = parse_config(base + "cluster: {members: [{host: a}, {host: b}]}\n", source=SRC)
        result = manager.reload(changed, grace=0)
        assert "cluster" in result.restart_needed
        assert manager.config.cluster.members == []  # the running daemon's members, until a restart
    finally:
        manager.close()
