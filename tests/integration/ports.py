"""Free TCP ports for the servers the tests start (one job: pick a port nobody is likely to take)."""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: Ports below the kernel's ephemeral range, from here up.
_LOWEST = 10_000


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


#: Ports this process handed out already.
_GIVEN: set[int] = set()
_PICK = random.SystemRandom()


def free_port() -> int:
    """A port free on 127.0.0.1 now, from below the kernel's ephemeral range.

    Not port 0's answer: that port is in the ephemeral range, which every outgoing
    connection and every port-0 listener (a JVM's, the other test process's) draws from,
    so it could be taken between this call and the server's bind (seen with two test
    processes: "port ... is already in use"). Below that range only explicit binds
    compete, and a random pick among some 20,000 ports makes a clash unlikely.
    """
    low = _ephemeral_low()
    if low - _LOWEST >= 1_000:
        for _ in range(50):
            # A system random: a test that seeds ``random`` must not make two picks alike.
            port = _PICK.randrange(_LOWEST, low)
            # Never the same port twice in one process: two picks for one config (its port
            # and http-port) are both free until the daemon binds the first.
            if port not in _GIVEN and _bindable(port):
                _GIVEN.add(port)
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


__all__ = ["free_port"]
