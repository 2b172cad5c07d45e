"""Each client connection's ``set_ugi`` user is what the backing metastore sees for that
connection's calls, never another client's.

A recording relay sits between catalogd and a real metastore (the session daemon's embedded
one): it notes, for every metastore connection catalogd opens, the ``set_ugi`` user and the
tables asked for on it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.metastore.access_key import file_key, send_key
from catalogd.metastore.messages import MessageStream, decode

from .helpers import hms_connection, metastore_key_file

pytestmark = pytest.mark.integration


class Recorder:
    """A TCP relay to ``upstream`` recording, per connection, its set_ugi user and get_table names."""

    def __init__(self, upstream: tuple[str, int], key_file: Path) -> None:
        self.upstream = upstream
        #: The embedded metastore serves a connection only after its key (sent as catalogd sends it).
        self.key = file_key(key_file)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        #: One entry per connection: {"user": str | None, "tables": [name, ...]}.
        self.connections: list[dict[str, object]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        record: dict[str, object] = {"user": None, "tables": []}
        with self._lock:
            self.connections.append(record)
        upstream = socket.create_connection(self.upstream)
        send_key(upstream, self.key)
        calls = MessageStream(client.recv, 64 * 1024 * 1024)
        replies = MessageStream(upstream.recv, 256 * 1024 * 1024)
        with contextlib.suppress(OSError, EOFError), client, upstream:
            while True:
                call = calls.read_message()
                if call.name == "set_ugi":
                    record["user"] = decode(ThriftHiveMetastore.set_ugi_args(), call.body).user_name
                elif call.name == "get_table":
                    args = decode(ThriftHiveMetastore.get_table_args(), call.body)
                    record["tables"].append(args.tbl_name)  # type: ignore[union-attr]
                upstream.sendall(call.raw)
                client.sendall(replies.read_message().raw)

    def users_asking_for(self, table: str) -> set[object]:
        with self._lock:
            return {r["user"] for r in self.connections if table in r["tables"]}  # type: ignore[operator]

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def recorder(daemon) -> Iterator[Recorder]:
    config = yaml.safe_load(daemon.config_path.read_text())
    port = next(c for c in config["catalogs"] if c["name"] == "main")["metastore-port"]
    rec = Recorder(("127.0.0.1", port), metastore_key_file(daemon.data_dir))
    yield rec
    rec.close()


def test_each_connection_is_seen_as_its_own_user(daemon_factory, recorder, client, main_db):
    database = main_db.split(".")[1]
    for name in ("for_alice", "for_nobody", "for_bob"):
        client.create_table(f"{main_db}.{name}", "id int")
    behind = daemon_factory(name="ugi", catalogs=[{
        "name": "main", "type": "hive", "default": True,
        "connection": {"hive.metastore.uris": f"thrift://127.0.0.1:{recorder.port}"},
    }], extra={"cache": {"ttl": "0s"}})
    address = behind.hms_address
    with hms_connection(address, user="alice") as alice, hms_connection(address) as nobody, \
            hms_connection(address, user="bob") as bob:
        # Interleaved, so that one upstream connection could serve them all if identities mixed.
        for _ in range(3):
            alice.get_table(database, "for_alice")
            nobody.get_table(database, "for_nobody")
            bob.get_table(database, "for_bob")
    wait_until(lambda: recorder.users_asking_for("for_bob"), 10, "the recorder to see bob's calls")
    assert recorder.users_asking_for("for_alice") == {"alice"}
    assert recorder.users_asking_for("for_bob") == {"bob"}
    # A client that never called set_ugi gets a connection on which nobody did.
    assert recorder.users_asking_for("for_nobody") == {None}
    with CatalogClient(behind.address) as c:
        assert c.table_exists(f"main.{database}.for_alice")
