"""The HMS endpoint's listening socket, which a starting daemon binds before anything else.

A Spark session's metastore client gives up after its connect retries (``spark-conf`` prints
how many); a daemon's start takes many seconds (the imports, the embedded metastore's JVM).
Bound first, the port takes connections at once: the kernel completes them and queues them
(up to ``BACKLOG``) until the endpoint accepts, once the catalogs are open, so a client's call
waits for the answer (within its socket timeout) instead of being refused. If the start fails,
the socket closes and the queued connections are reset: their clients retry or fail as they
would have.

This module imports nothing of catalogd's, so that ``catalogd serve`` binds before importing the
daemon.
"""

from __future__ import annotations

import socket

__all__ = ["BACKLOG", "listen", "listen_early"]

#: Connections the kernel queues before the endpoint accepts them (a restart's waiting clients).
BACKLOG = 512


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (0: a free port).

    Raises:
        OSError: the address cannot be bound (e.g. the port is in use).
    """
    return socket.create_server((host, port), backlog=BACKLOG, reuse_port=False)


def listen_early(host: str, port: int) -> socket.socket | None:
    """``listen`` on a fixed port, or None: port 0 (a new port each start: no client waits on it)
    or the port cannot be bound now (the start reports that in its own words, later)."""
    if not port:
        return None
    try:
        return listen(host, port)
    except OSError:
        return None
