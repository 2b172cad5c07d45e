"""CatalogClient's token against a real ThriftServer in this process: authenticate on connect and on
every reconnect, CATALOGD_TOKEN, the principal kept per connection, refusals as PermissionDeniedError."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from polling import wait_until

from catalogd.auth.model import Authority, Role
from catalogd.client import CatalogClient
from catalogd.errors import PermissionDeniedError
from catalogd.gen.catalogd_thrift import CatalogService
from catalogd.manager import CatalogManager
from catalogd.server.access import Access
from catalogd.server.handler import CatalogHandler
from catalogd.server.metrics import Metrics
from catalogd.server.thrift_server import ThriftServer

TOKENS = {"ana": "reader-token-0123456789", "etl": "writer-token-0123456789"}


@pytest.fixture
def server(memory_manager: Callable[[str], CatalogManager]) -> Iterator[ThriftServer]:
    manager = memory_manager("  - {name: main, type: memory}\n")
    authority = Authority(True, dict(TOKENS), set(TOKENS), {("ana", "*"): Role.READER, ("etl", "*"): Role.WRITER})
    access = Access(authority, None, lambda: manager.default_catalog, manager.catalogs)
    handler = CatalogHandler(manager, Metrics(), access=access)
    srv = ThriftServer(CatalogService.Processor(handler), "127.0.0.1", 0, 1 << 20, 2, idle_timeout=0.5)
    srv.start()
    yield srv
    srv.shutdown(grace=1.0)


def address(server: ThriftServer) -> str:
    return f"127.0.0.1:{server.port}"


def test_no_token_is_refused_but_ping_answers(server: ThriftServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CATALOGD_TOKEN", raising=False)
    with CatalogClient(address(server)) as client:
        assert client.ping().startswith("catalogd ")
        with pytest.raises(PermissionDeniedError, match="authenticate first: no token given"):
            client.list_databases()


def test_a_wrong_token_is_refused_at_connect(server: ThriftServer) -> None:
    with CatalogClient(address(server), token="wrong-token-0123456789") as client, \
            pytest.raises(PermissionDeniedError, match="the token is not valid"):
        client.list_databases()


def test_each_connection_has_its_own_principal(server: ThriftServer) -> None:
    with CatalogClient(address(server), token=TOKENS["etl"]) as etl, \
            CatalogClient(address(server), token=TOKENS["ana"]) as ana:
        etl.create_database("sales")
        assert "sales" in ana.list_databases()
        assert (etl.principal, ana.principal) == ("etl", "ana")
        with pytest.raises(PermissionDeniedError, match="ana needs role writer on catalog main for createDatabase"):
            ana.create_database("nope")
        etl.create_database("more")  # the reader's refusal did not touch the writer's connection


def test_the_token_comes_from_the_environment_and_is_sent_again_on_reconnect(
        server: ThriftServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATALOGD_TOKEN", TOKENS["etl"])
    with CatalogClient(address(server)) as client:
        client.create_database("first")
        assert TOKENS["etl"] not in repr(client)
        # The server closes the idle connection; the next call connects and authenticates anew.
        wait_until(lambda: server.stats()["connections"] == 0, 30.0, "the idle connection to be closed")
        client.create_database("second")
        assert {"first", "second"} <= set(client.list_databases())
