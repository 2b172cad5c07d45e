"""CatalogClient with several members (``a:9190,b:9190``): the address list, and calls moving to the
next member when one is down, against real ThriftServers in this process and a fake socket server."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from catalogd import client as client_module
from catalogd.client import CatalogClient, parse_addresses
from catalogd.errors import CatalogError, InvalidArgumentError, ServerUnavailableError
from catalogd.gen.catalogd_thrift import CatalogService
from catalogd.manager import CatalogManager
from catalogd.server.handler import CatalogHandler
from catalogd.server.metrics import Metrics
from catalogd.server.thrift_server import ThriftServer


def test_one_address_is_a_list_of_one() -> None:
    assert parse_addresses("localhost:9190") == [("localhost", 9190)]


def test_a_list_keeps_its_order_and_drops_repeats() -> None:
    assert parse_addresses(" a:9190, b:9191 ,a:9190,[::1]:9192") == [("a", 9190), ("b", 9191), ("::1", 9192)]


@pytest.mark.parametrize("bad", ["", ",", "a:9190,", "a:9190,,b:9190", "a:9190,b", "a:x"])
def test_bad_lists_are_refused(bad: str) -> None:
    with pytest.raises(InvalidArgumentError, match="bad server address"):
        parse_addresses(bad)


def test_the_client_keeps_the_address_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATALOGD_SERVER", "a:1,b:2")
    client = CatalogClient()
    assert (client.address, client.members, client.host, client.port) == ("a:1,b:2", [("a", 1), ("b", 2)], "a", 1)


def _server(manager: CatalogManager) -> ThriftServer:
    srv = ThriftServer(CatalogService.Processor(CatalogHandler(manager, Metrics())), "127.0.0.1", 0, 1 << 20, 2)
    srv.start()
    return srv


@pytest.fixture
def servers(memory_manager: Callable[[str], CatalogManager]) -> Iterator[list[ThriftServer]]:
    started = [_server(memory_manager("  - {name: main, type: memory}\n")),
               _server(memory_manager("  - {name: other, type: memory}\n"))]
    yield started
    for srv in started:
        srv.shutdown(grace=1.0)


def _dead_port() -> int:
    """A port nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _names(client: CatalogClient) -> list[str]:
    return [c.name for c in client.list_catalogs()]


def test_a_refused_first_member_is_skipped(servers: list[ThriftServer]) -> None:
    with CatalogClient(f"127.0.0.1:{_dead_port()},127.0.0.1:{servers[1].port}") as client:
        assert _names(client) == ["other"]
        assert client.port == servers[1].port


def test_an_idempotent_call_moves_when_its_member_dies(servers: list[ThriftServer]) -> None:
    with CatalogClient(f"127.0.0.1:{servers[0].port},127.0.0.1:{servers[1].port}") as client:
        assert _names(client) == ["main"]
        servers[0].shutdown(grace=0.0)
        assert _names(client) == ["other"]
        assert client.ping().startswith("catalogd ")  # stays on the member that answers


def test_a_write_is_not_resent_to_another_member(servers: list[ThriftServer]) -> None:
    """Sent and then lost: it may have happened, so the caller is told rather than the call moved."""
    dropper = _Dropper()
    try:
        with CatalogClient(f"127.0.0.1:{dropper.port},127.0.0.1:{servers[1].port}", timeout=5.0) as client:
            lost = f"lost connection to catalogd at 127.0.0.1:{dropper.port}"
            with pytest.raises(ServerUnavailableError, match=lost):
                client.create_database("sales")
            assert not client.database_exists("other.sales")  # never sent to the second member
    finally:
        dropper.close()


def test_a_read_moves_past_a_member_that_drops_every_call(servers: list[ThriftServer]) -> None:
    dropper = _Dropper()
    try:
        with CatalogClient(f"127.0.0.1:{dropper.port},127.0.0.1:{servers[1].port}", timeout=5.0) as client:
            assert _names(client) == ["other"]
            client.create_database("sales")  # now on a member that answers: writes go there
            assert client.database_exists("other.sales")
    finally:
        dropper.close()


def test_stage_heartbeat_commit_and_abort_move_but_begin_does_not(servers: list[ThriftServer]) -> None:
    """The stage calls documented as safe to retry reach the next member (whose typed answer comes
    back: it has no such stage); begin, lost after it was sent, is not resent."""
    dropper = _Dropper()
    stage_id = "other.default.0123456789abcdef"
    try:
        for call in (lambda c: c.heartbeat_stage(stage_id), lambda c: c.commit_stage(stage_id),
                     lambda c: c.abort_stage(stage_id, writer_stopped=True)):
            with CatalogClient(f"127.0.0.1:{dropper.port},127.0.0.1:{servers[1].port}", timeout=5.0) as client:
                with pytest.raises(CatalogError) as info:
                    call(client)
                assert not isinstance(info.value, ServerUnavailableError), info.value
                assert client.port == servers[1].port
        with CatalogClient(f"127.0.0.1:{dropper.port},127.0.0.1:{servers[1].port}", timeout=5.0) as client, \
                pytest.raises(ServerUnavailableError, match="lost connection"):
            client.begin_stage("other.default.t", "id bigint")
    finally:
        dropper.close()


def test_a_member_that_never_answers_is_given_up_on_sooner(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TLS handshake nobody answers: with other members to try, the member connect timeout
    bounds it, not the client's (long) reply timeout."""
    monkeypatch.setattr(client_module, "MEMBER_CONNECT_TIMEOUT", 0.5)
    silent = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    context = ssl.create_default_context()
    started = time.monotonic()
    try:
        with CatalogClient(f"127.0.0.1:{silent.getsockname()[1]},127.0.0.1:{_dead_port()}", timeout=60.0,
                           tls_context=context) as client, pytest.raises(ServerUnavailableError):
            client.ping()
    finally:
        silent.close()
    assert 0.4 < time.monotonic() - started < 4.0


def test_no_member_answering_names_each_one() -> None:
    a, b = _dead_port(), _dead_port()
    with CatalogClient(f"127.0.0.1:{a},127.0.0.1:{b}", timeout=5.0) as client, \
            pytest.raises(ServerUnavailableError, match=f"127.0.0.1:{a}.*127.0.0.1:{b}"):
        client.ping()


def test_one_dead_member_keeps_the_old_message() -> None:
    port = _dead_port()
    with CatalogClient(f"127.0.0.1:{port}", timeout=5.0) as client, \
            pytest.raises(ServerUnavailableError, match=f"^cannot reach catalogd at 127.0.0.1:{port}: "):
        client.ping()


class _Dropper:
    """A fake member: accepts each connection, reads what arrives, and closes it unanswered."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5.0)
                with contextlib.suppress(OSError):
                    conn.recv(65536)

    def close(self) -> None:
        self._listener.close()
