"""What the Spark processes catalogd starts listen on, and whether a stranger is served there.

``listening_sockets`` reads the kernel's tables (``/proc/net/tcp{,6}``) for the sockets a
process tree holds open in LISTEN state; ``unauthenticated_block_request`` asks a Spark port,
as a client without Spark's authentication would, for a block (``OpenBlocks``, the request a
block fetch starts with) in Spark's own frame format, and returns what came back.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from pathlib import Path

#: Spark network frames (org.apache.spark.network.protocol): frame length (8 bytes, itself
#: included), message type (1 byte), then the message.
RPC_REQUEST, RPC_RESPONSE, RPC_FAILURE = 3, 4, 5
_LISTEN = "0A"


def process_tree(pid: int) -> set[int]:
    """``pid`` and its descendants still running."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name may hold spaces and parentheses: the fields follow the last ")".
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, grew = {pid}, True
    while grew:
        children = {p for p, parent in parents.items() if parent in tree} - tree
        tree |= children
        grew = bool(children)
    return tree


def _socket_inodes(pids: set[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    return inodes


def _address(hex_address: str) -> tuple[str, int]:
    """A ``/proc/net/tcp*`` address (host-order 32-bit words, hex) as (ip, port); an
    IPv4-mapped IPv6 address as its IPv4 one."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(raw)
    mapped = getattr(ip, "ipv4_mapped", None)
    return str(mapped or ip), int(port, 16)


def listening_sockets(pids: set[int]) -> list[tuple[str, int]]:
    """The (address, port) of each TCP socket in LISTEN state that ``pids`` hold."""
    inodes = _socket_inodes(pids)
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == _LISTEN and fields[9] in inodes:
                    found.append(_address(fields[1]))
    return sorted(found)


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">i", len(data)) + data


def open_blocks_frame(request_id: int = 7, block: str = "broadcast_0_piece0") -> bytes:
    """An ``RpcRequest`` whose body is the block transfer message ``OpenBlocks`` (type 0: app id,
    executor id, block ids): what a client sends first to fetch blocks."""
    body = b"\x00" + _string("catalogd-test") + _string("driver") + struct.pack(">i", 1) + _string(block)
    return struct.pack(">qbqi", 8 + 1 + 12 + len(body), RPC_REQUEST, request_id, len(body)) + body


def unauthenticated_block_request(host: str, port: int, timeout: float = 10.0) -> tuple[int | None, str]:
    """Send ``open_blocks_frame`` with no authentication; the answer's message type and text (an
    ``RpcFailure``'s error; None and "" when no whole frame came back within ``timeout``, as from a
    port that speaks another protocol)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(open_blocks_frame())
        data = b""
        while len(data) < 8 or len(data) < struct.unpack(">q", data[:8])[0]:
            try:
                chunk = s.recv(65536)
            except OSError:  # reset, or nothing more within the timeout
                break
            if not chunk:
                break
            data += chunk
        if len(data) >= 8 and len(data) < struct.unpack(">q", data[:8])[0]:
            return None, ""
    if len(data) < 9:
        return None, ""
    kind, message = data[8], data[9:]
    if kind == RPC_FAILURE and len(message) >= 12:  # request id (8 bytes), then the error as a string
        (length,) = struct.unpack(">i", message[8:12])
        return kind, message[12:12 + length].decode(errors="replace")
    return kind, message.decode(errors="replace")


def block_request_answers(sockets: list[tuple[str, int]]) -> dict[int, str]:
    """Each port's answer to ``unauthenticated_block_request``: ``sasl`` (Spark asks for its
    authentication first), ``served`` (Spark took the request: a block, or "not found"), or
    ``none`` (no Spark frame came back: another protocol, or the connection was closed)."""
    answers = {}
    for host, port in sockets:
        kind, text = unauthenticated_block_request(host, port)
        if kind == RPC_FAILURE and "Expected SaslMessage" in text.splitlines()[0]:
            answers[port] = "sasl"
        elif kind in (RPC_RESPONSE, RPC_FAILURE):
            answers[port] = "served"
        else:
            answers[port] = "none"
    return answers
