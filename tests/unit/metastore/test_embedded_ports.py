"""The embedded metastore's port: a free one, never one the daemon is about to listen on."""

from __future__ import annotations

import socket

from catalogd.metastore import embedded
from catalogd.metastore.embedded import free_port


def test_a_free_port_is_never_one_to_avoid(monkeypatch) -> None:
    # The system hands out the daemon's configured (not yet bound) port first, then another.
    handed = iter([9190, 9191, 40001])
    real = socket.socket

    class Socket(real):  # type: ignore[misc, valid-type]
        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", next(handed))

    monkeypatch.setattr(embedded.socket, "socket", Socket)
    assert free_port("127.0.0.1", avoid=(9190, 9191, 9083)) == 40001

