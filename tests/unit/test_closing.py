"""A server's last answer reaches its client although the client's bytes were still unread at the close."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from polling import wait_until

from catalogd import closing


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(the server's end, the client's end) of a real TCP connection on loopback."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname(), timeout=10)
        server, _ = listener.accept()
    yield server, client
    server.close()
    client.close()


def read_to_eof(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _answer_with_unread_bytes(server: socket.socket, client: socket.socket) -> None:
    client.sendall(b"x" * 1000)  # a call the server never reads (it refused the client)
    wait_until(lambda: server.recv(1, socket.MSG_PEEK) == b"x", 10, what="the client's bytes to arrive")
    server.sendall(b"refused\n")


def test_a_plain_close_over_unread_bytes_resets_the_answer(pair: tuple[socket.socket, socket.socket]) -> None:
    """What the helper is for: without it the client reads a reset, not the answer then EOF."""
    server, client = pair
    _answer_with_unread_bytes(server, client)
    server.close()
    with pytest.raises(ConnectionResetError):
        read_to_eof(client)


def test_the_answer_then_eof_reach_the_client(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    _answer_with_unread_bytes(server, client)
    closing.hand_off(server)
    assert server.fileno() == -1, "the caller's socket is closed for it"
    # The client may go on sending until it reads the answer: still no reset.
    client.sendall(b"y" * 5000)
    assert read_to_eof(client) == b"refused\n"


def test_a_client_that_never_closes_is_closed_at_the_linger_deadline(
        pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch) -> None:
    server, client = pair
    lingerer = closing._Lingerer(linger=0.3)
    monkeypatch.setattr(closing, "_lingerer", lingerer)
    closing.hand_off(server)
    assert read_to_eof(client) == b""  # the FIN
    wait_until(lambda: lingerer.lingering() == 0, 10, what="the lingering socket to be closed")


def test_a_client_sending_past_the_drain_limit_is_closed(
        pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch) -> None:
    server, client = pair
    lingerer = closing._Lingerer(linger=60.0, limit=10_000)
    monkeypatch.setattr(closing, "_lingerer", lingerer)
    closing.hand_off(server)
    client.settimeout(0.2)
    with pytest.raises(OSError):  # reset once the server stopped reading (or a full buffer: timeout)
        for _ in range(10_000):
            client.sendall(b"z" * 4096)
    wait_until(lambda: lingerer.lingering() == 0, 10, what="the flooding socket to be closed")


def test_past_the_cap_a_socket_is_closed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    lingerer = closing._Lingerer(linger=60.0, capacity=2)
    monkeypatch.setattr(closing, "_lingerer", lingerer)
    clients = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        for _ in range(3):
            clients.append(socket.create_connection(listener.getsockname(), timeout=10))
            closing.hand_off(listener.accept()[0])
    assert lingerer.lingering() == 2 and lingerer.overflowed == 1
    for client in clients:
        client.close()
    wait_until(lambda: lingerer.lingering() == 0, 10, what="the closed clients' sockets to go")
