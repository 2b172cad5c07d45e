"""The cluster's cache invalidations: signing, what a receiver accepts, delivery with retries."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml
from polling import wait_until

from catalogd.catalog.hms_cache import MetadataCache
from catalogd.config import parse_config
from catalogd.errors import InvalidArgumentError, PermissionDeniedError
from catalogd.server.cache_peers import (
    INVALIDATIONS,
    MAX_SKEW,
    SIGNATURE_HEADER,
    CachePeers,
    decode,
    encode,
    invalidation_key,
    sign,
)

KEY = b"a deployment's stage key"


def _config(port: int, peer_http: int, ttl: str = "60s", wait: str = "500ms") -> Any:
    members = [{"host": "127.0.0.1", "port": 9190, "hms-port": 9083, "http-port": 9191},
               {"host": "127.0.0.1", "port": 9290, "hms-port": 9283, "http-port": peer_http}]
    return parse_config(yaml.safe_dump({
        "server": {"host": "127.0.0.1", "port": 9190, "hms-port": 9083, "http-port": 9191},
        "catalogs": [{"name": "main", "type": "memory"}],
        "cluster": {"members": members, "invalidation-wait": wait}, "cache": {"ttl": ttl}}))


def _peers(applied: list[tuple[str, str, str]], peer_http: int = 1, ttl: str = "60s",
           wait: str = "500ms") -> CachePeers:
    return CachePeers(_config(9190, peer_http, ttl, wait), KEY, lambda c, d, t: applied.append((c, d, t)),
                      lambda: ["main"])


def test_the_signing_key_is_derived_not_the_stage_key() -> None:
    assert invalidation_key(KEY) != KEY
    assert sign(invalidation_key(KEY), b"x") != sign(invalidation_key(b"other"), b"x")


def test_this_daemon_is_not_its_own_peer() -> None:
    peers = _peers([], peer_http=9391)
    assert peers.peers == ["127.0.0.1:9391"]


def test_a_signed_message_is_applied_to_known_catalogs_only() -> None:
    applied: list[tuple[str, str, str]] = []
    peers = _peers(applied)
    body = encode("other", [("main", "db", "t"), ("elsewhere", "db", "t")], time.time())
    assert peers.receive(body, sign(invalidation_key(KEY), body)) == 1
    assert applied == [("main", "db", "t")]
    assert peers.stats()["received"] == 1


def test_an_unsigned_forged_or_replayed_message_changes_nothing() -> None:
    applied: list[tuple[str, str, str]] = []
    peers = _peers(applied)
    body = encode("other", [("main", "db", "t")], time.time())
    with pytest.raises(PermissionDeniedError):
        peers.receive(body, None)
    with pytest.raises(PermissionDeniedError):
        peers.receive(body, sign(invalidation_key(b"another key"), body))
    old = encode("other", [("main", "db", "t")], time.time() - MAX_SKEW - 5)
    with pytest.raises(InvalidArgumentError, match="replay"):
        peers.receive(old, sign(invalidation_key(KEY), old))
    assert applied == []
    assert peers.stats()["rejected"] == 3


@pytest.mark.parametrize("message", [
    b"not json", b"[]", b'{"v": 2}', b'{"v": 1, "from": "x", "sent": "now", "scopes": []}',
    b'{"v": 1, "from": "x", "sent": 0, "scopes": [["main", "db"]]}',
    b'{"v": 1, "from": "x", "sent": 0, "scopes": [["", "db", "t"]]}',
    b'{"v": 1, "from": "x", "sent": 0, "scopes": [["main", 1, "t"]]}',
])
def test_a_message_of_the_wrong_shape_is_refused(message: bytes) -> None:
    with pytest.raises(InvalidArgumentError):
        decode(message.replace(b'"sent": 0', f'"sent": {time.time()}'.encode()), time.time())


def test_its_own_messages_are_ignored() -> None:
    applied: list[tuple[str, str, str]] = []
    peers = _peers(applied)
    body = encode(peers.sender, [("main", "db", "t")], time.time())
    assert peers.receive(body, sign(invalidation_key(KEY), body)) == 0
    assert applied == []


def test_the_cache_announces_its_own_invalidations_not_received_ones() -> None:
    cache = MetadataCache(10.0, 100, 10_000)
    told: list[tuple[str, str, str]] = []
    cache.announce(lambda c, d, t: told.append((c, d, t)))
    cache.invalidate("main", "db", "t")
    cache.invalidate("main", "db", "u", announce=False)
    cache.clear()
    assert told == [("main", "db", "t")]


class _Receiver:
    """A peer's HTTP port: records what arrives; answers ``status``, once ``answering`` is set."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.status = 204
        self.answering = threading.Event()
        self.answering.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                receiver.answering.wait(30)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                assert self.path == INVALIDATIONS
                assert self.headers[SIGNATURE_HEADER] == sign(invalidation_key(KEY), body)
                if receiver.status // 100 == 2:
                    receiver.bodies.append(body)
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def scopes(self) -> list[list[str]]:
        return [s for body in self.bodies for s in json.loads(body)["scopes"]]


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    r = _Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def test_invalidations_reach_the_peer(receiver: _Receiver) -> None:
    peers = _peers([], peer_http=receiver.port)
    peers.start()
    try:
        peers.announce("main", "db", "t")
        wait_until(lambda: receiver.scopes() == [["main", "db", "t"]], 10, what="the invalidation at the peer")
        assert peers.stats()["sent"] == 1
    finally:
        peers.stop()


def test_a_write_returns_once_the_peer_has_its_invalidation(receiver: _Receiver) -> None:
    peers = _peers([], peer_http=receiver.port, wait="10s")
    peers.start()
    try:
        for table in ("t", "u", "v"):
            peers.announce("main", "db", table)
            # No polling: when announce returns (the write is acknowledged) the peer has it.
            assert receiver.scopes()[-1] == ["main", "db", table]
        assert peers.stats()["unconfirmed"] == 0
    finally:
        peers.stop()


def test_a_peer_that_hangs_holds_a_write_up_only_to_the_wait_and_then_not_at_all(receiver: _Receiver) -> None:
    receiver.answering.clear()  # accepts the connection, answers nothing (a SIGSTOPped member)
    peers = _peers([], peer_http=receiver.port, wait="200ms")
    peers.start()
    try:
        peers.announce("main", "db", "t")
        # Returned although the peer has not answered: counted as unconfirmed.
        assert receiver.bodies == [] and peers.stats()["unconfirmed"] == 1
        # Its send fails (the timeout); then writes no longer wait for it.
        wait_until(lambda: peers.stats()["failed"] >= 1, 30, what="the send to the hung peer to fail")
        peers.announce("main", "db", "u")
        assert peers.stats()["unconfirmed"] == 1
        receiver.answering.set()
        wait_until(lambda: ["main", "db", "u"] in receiver.scopes(), 30, what="the invalidations once it answers")
    finally:
        receiver.answering.set()
        peers.stop()


def test_a_refused_send_is_retried_until_it_arrives(receiver: _Receiver) -> None:
    receiver.status = 503
    peers = _peers([], peer_http=receiver.port)
    peers.start()
    try:
        peers.announce("main", "db", "t")
        wait_until(lambda: peers.stats()["failed"] >= 2, 10, what="failed sends")
        assert peers.stats()["pending"] == 1
        receiver.status = 204
        wait_until(lambda: receiver.scopes() == [["main", "db", "t"]], 10, what="the retried invalidation")
        wait_until(lambda: peers.stats()["pending"] == 0, 10, what="nothing pending")
    finally:
        peers.stop()


def test_past_the_ttl_an_undelivered_invalidation_is_dropped(receiver: _Receiver) -> None:
    receiver.status = 503
    peers = _peers([], peer_http=receiver.port, ttl="1s")
    peers.start()
    try:
        peers.announce("main", "db", "t")
        wait_until(lambda: peers.stats()["dropped"] == 1, 20, what="the invalidation dropped after cache.ttl")
        assert peers.stats()["pending"] == 0
    finally:
        peers.stop()


def test_the_http_route_answers_by_what_the_receiver_says() -> None:
    from fastapi.testclient import TestClient
    from http_fakes import FakeManager

    from catalogd.server.http_app import create_app
    from catalogd.server.metrics import Metrics

    applied: list[tuple[str, str, str]] = []
    peers = _peers(applied)
    body = encode("other", [("main", "db", "t")], time.time())
    good = {SIGNATURE_HEADER: sign(invalidation_key(KEY), body)}
    with TestClient(create_app(FakeManager(), Metrics(), peers=peers)) as http:
        assert http.post(INVALIDATIONS, content=body, headers=good).status_code == 204
        assert applied == [("main", "db", "t")]
        refused = http.post(INVALIDATIONS, content=body, headers={SIGNATURE_HEADER: "v1=00"})
        assert refused.status_code == 401 and refused.json()["error"]["kind"] == "permission-denied"
        assert http.post(INVALIDATIONS, content=b"[]", headers={
            SIGNATURE_HEADER: sign(invalidation_key(KEY), b"[]")}).status_code == 400
    assert applied == [("main", "db", "t")]
    with TestClient(create_app(FakeManager(), Metrics())) as http:
        assert http.post(INVALIDATIONS, content=body, headers=good).status_code == 501
