"""Calls a member that does not lead sends to the leader: whom it calls, as whom, and when it gives up."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogd.config import Config, parse_config
from catalogd.errors import ServerUnavailableError
from catalogd.server.forwarding import LeaderForwarding, forward_token
from catalogd.server.leader import MEMBER, Leadership

CLUSTER = """
server: {{data-dir: {data}, port: 9190, hms-port: 9083, http-port: 9191}}
catalogs: [{{name: main, type: memory}}]
cluster:
  members:
    - {{host: a, port: 9190}}
    - {{host: b, port: 9190}}
"""


class OneTerm:
    """A store holding one term of ``holder`` (None: no term yet)."""

    where = "memory"

    def __init__(self, holder: str | None) -> None:
        self.holder = holder

    def epochs(self) -> list[int]:
        return [1] if self.holder else []

    def read(self, epoch: int) -> dict[str, str] | None:
        return {MEMBER: self.holder, "catalogd.leader.heartbeat": "1:0"} if self.holder else None

    def claim(self, epoch: int, params: dict[str, str]) -> bool:
        return False  # another member always wins

    def renew(self, epoch: int, params: dict[str, str]) -> None:
        raise AssertionError("never the holder")

    def drop(self, epoch: int) -> None:
        raise AssertionError("never the holder")


def _config(tmp_path: Path, auth: str = "") -> Config:
    return parse_config(CLUSTER.format(data=tmp_path) + auth, source="test.yaml")


def test_the_token_is_an_admin_of_every_catalog(tmp_path: Path) -> None:
    assert forward_token(_config(tmp_path)) is None
    auth = """
auth:
  enabled: true
  principals:
    - {name: reader, token: reader-token-0123456789abcdef}
    - {name: ops, token: ops-token-0123456789abcdef01}
  grants:
    - {principal: reader, catalog: '*', role: reader}
    - {principal: ops, catalog: main, role: admin}
    - {principal: ops, catalog: '*', role: admin}
"""
    assert forward_token(_config(tmp_path, auth)) == "ops-token-0123456789abcdef01"


def test_calls_go_to_the_member_the_lease_names(tmp_path: Path) -> None:
    leadership = Leadership(OneTerm("b:9190"), "a:9190")
    leadership.step()
    forwarding = LeaderForwarding(leadership, _config(tmp_path), lambda: "127.0.0.1:1", wait=0.5)
    assert forwarding._leader_address(deadline=0.0) == "b:9190"


def test_without_a_leader_a_call_fails_as_unavailable(tmp_path: Path) -> None:
    leadership = Leadership(OneTerm(None), "a:9190")
    forwarding = LeaderForwarding(leadership, _config(tmp_path), lambda: "127.0.0.1:1", wait=0.3)
    with pytest.raises(ServerUnavailableError, match="no leader"):
        forwarding.get_job("0123456789abcdef")
