"""Remote metastore URIs: connect timeouts and failover to the next URI, on a real HMS."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from catalogd.catalog.hive import HiveCatalog
from catalogd.errors import MetastoreUnavailableError
from catalogd.metastore.embedded import EmbeddedMetastore, free_port
from catalogd.model import Database

from .helpers import answer_within, metastore_key_file

pytestmark = pytest.mark.integration

#: The configured 1s timeouts, a retry and a busy machine fit; the defaults (5s connect, 60s
#: socket) and a hang do not.
GIVES_UP_WITHIN = 20.0


@pytest.fixture(scope="module")
def metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedMetastore]:
    hms = EmbeddedMetastore("failover", tmp_path_factory.mktemp("failover"))
    hms.start()
    yield hms
    hms.stop()


def _silent_port() -> tuple[socket.socket, int]:
    """A port that accepts TCP connections into a full backlog and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(0)
    return sock, sock.getsockname()[1]


def test_dead_first_uri_fails_over_to_the_next(metastore: EmbeddedMetastore) -> None:
    dead = free_port()
    catalog = HiveCatalog("f", uris=[("127.0.0.1", dead), ("127.0.0.1", metastore.port)], connect_timeout=2,
                          key=metastore.key)
    catalog.open()
    try:
        catalog.create_database(Database("failover_db"), ignore_if_exists=True)
        assert "failover_db" in catalog.list_databases()
        # The URI that answered is remembered and tried first from now on.
        assert catalog.info().metastore.startswith(f"thrift://127.0.0.1:{dead},")
        pool = catalog.session.pool
        assert pool is not None and pool.uris[pool._preferred][1] == metastore.port
    finally:
        catalog.close()


def test_all_uris_down_is_metastore_unavailable_naming_each(tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    catalog = HiveCatalog("down", uris=[("127.0.0.1", p) for p in ports], connect_timeout=1)
    with pytest.raises(MetastoreUnavailableError) as info:
        answer_within(GIVES_UP_WITHIN, catalog.open)
    for port in ports:
        assert f"127.0.0.1:{port}" in str(info.value)


def test_unanswering_metastore_times_out(metastore: EmbeddedMetastore) -> None:
    sock, port = _silent_port()
    try:
        catalog = HiveCatalog("slow", uris=[("127.0.0.1", port)], connect_timeout=1, socket_timeout=1)
        with pytest.raises(MetastoreUnavailableError):
            answer_within(GIVES_UP_WITHIN, catalog.open)
    finally:
        sock.close()


def test_restarted_metastore_is_reconnected(tmp_path: Path) -> None:
    """A pooled connection to a metastore that restarted is noticed and replaced."""
    hms = EmbeddedMetastore("restart", tmp_path, port=free_port())
    hms.start()
    catalog = HiveCatalog("r", uris=[("127.0.0.1", hms.port)], key=hms.key)
    try:
        catalog.open()
        catalog.create_database(Database("before_restart"))
        hms.stop()
        with pytest.raises(MetastoreUnavailableError):
            catalog.list_databases()
        hms.start()
        # A write on the first call after the restart must not hit the stale socket.
        catalog.create_database(Database("after_restart"))
        assert {"before_restart", "after_restart"} <= set(catalog.list_databases())
    finally:
        catalog.close()
        hms.stop()


def test_a_declared_metastore_error_keeps_the_connection(client, daemon):
    """NoSuchObject & co. are answers, not broken connections: the next call reuses the socket."""
    from catalogd.hive_idl import ttypes as hms
    from catalogd.metastore.access_key import file_key
    from catalogd.metastore.client import MetastoreClient, parse_uris

    ms = MetastoreClient(parse_uris(client.get_catalog("main").metastore),
                         key=file_key(metastore_key_file(daemon.data_dir)))
    try:
        ms.call("get_all_databases")
        pooled = ms._idle.queue[-1]
        with pytest.raises(hms.NoSuchObjectException):
            ms.call("get_table", "default", "no_such_table_anywhere")
        assert list(ms._idle.queue) == [pooled]
        ms.call("get_all_databases")
        assert list(ms._idle.queue) == [pooled]
    finally:
        ms.close()
