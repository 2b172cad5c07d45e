"""Tests for catalogd.metastore.access_key: the key file and the bytes each connection sends first."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from catalogd.errors import MetastoreUnavailableError
from catalogd.metastore.access_key import MAGIC, file_key, new_key, preamble, send_key
from catalogd.metastore.client import MetastoreClient
from catalogd.metastore.relay import RelayPool

JAVA_SOURCE = (Path(__file__).resolve().parents[3] / "jvm" / "metastore-guard" / "src" / "catalogd" / "guard"
               / "KeyCheckingTransportFactory.java")


def test_a_new_key_is_64_hex_digits_and_never_the_same() -> None:
    keys = {new_key() for _ in range(50)}
    assert len(keys) == 50
    assert all(len(k) == 64 and int(k, 16) >= 0 and k == k.lower() for k in keys)
    assert preamble("ab" * 32) == MAGIC + b"ab" * 32


def test_the_magic_is_the_java_check_s() -> None:
    assert f'MAGIC = "{MAGIC.decode()}"' in JAVA_SOURCE.read_text()


def _key_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "metastore.key"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_key_file_is_read_at_each_connection(tmp_path: Path) -> None:
    first, second = new_key(), new_key()
    path = _key_file(tmp_path, first + "\n")
    read = file_key(path)
    assert read() == preamble(first)
    path.write_text(second)  # the metastore's daemon restarted with a new key
    assert read() == preamble(second)


@pytest.mark.parametrize(("text", "mode", "message"), [
    ("ab" * 32, 0o644, "mode 0600"),
    ("not a key", 0o600, "does not hold a metastore key"),
    ("AB" * 32, 0o600, "does not hold a metastore key"),
])
def test_a_bad_key_file_is_metastore_unavailable(tmp_path: Path, text: str, mode: int, message: str) -> None:
    with pytest.raises(MetastoreUnavailableError, match=message):
        file_key(_key_file(tmp_path, text, mode))()


def test_a_missing_key_file_says_when_it_is_written(tmp_path: Path) -> None:
    with pytest.raises(MetastoreUnavailableError, match="written when its catalogd starts the metastore"):
        file_key(tmp_path / "absent.key")()


class _FirstBytes:
    """A server that records what each connection sends first, then hangs up."""

    def __init__(self, size: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.seen: list[bytes] = []
        self._size = size
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                data = b""
                try:
                    while len(data) < self._size and (chunk := conn.recv(self._size - len(data))):
                        data += chunk
                except OSError:
                    pass
                self.seen.append(data)

    def close(self) -> None:
        self.listener.close()


def test_catalogd_s_clients_send_the_key_before_anything_else() -> None:
    key = preamble(new_key())
    server = _FirstBytes(len(key) + 4)
    try:
        pool = MetastoreClient([("127.0.0.1", server.port)], connect_timeout=2, socket_timeout=2, key=lambda: key)
        with pytest.raises(MetastoreUnavailableError):
            pool.call("get_all_databases", idempotent=False)
        relay = RelayPool("test", lambda: [("127.0.0.1", server.port)], connect_timeout=2, socket_timeout=2,
                          key=lambda: key)
        with pytest.raises(MetastoreUnavailableError):
            relay.call(None, b"\x80\x01\x00\x01" + b"\x00" * 20, retry=False)
        assert len(server.seen) == 2
        # The key, then the first bytes of a binary-protocol Thrift message.
        assert all(first == key + b"\x80\x01\x00\x01" for first in server.seen), server.seen
    finally:
        server.close()


def test_no_key_sends_nothing() -> None:
    a, b = socket.socketpair()
    with a, b:
        send_key(a, None)
        send_key(a, lambda: None)
        b.setblocking(False)
        with pytest.raises(BlockingIOError):
            b.recv(1)
