"""Binary-protocol Thrift messages read whole off a byte stream and kept as the bytes that came.

The HMS endpoint relays most calls and replies untouched: it must find where a message ends
without decoding it (a newer client's fields, unknown to catalogd's IDL, must survive) and
cheaply (a 2,000-partition reply is over a megabyte). HMS clients use buffered transport,
which carries no length, so the end is found by walking the message: the header in Python,
the body with thrift's C decoder given a struct that declares no fields, so every field is
skipped in C. The bytes walked are kept and handed back as they arrived.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from thrift import TSerialization
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated, TBinaryProtocolAcceleratedFactory
from thrift.Thrift import TMessageType
from thrift.transport.TTransport import CReadableTransport, TTransportBase, TTransportException

__all__ = [
    "CALL",
    "EXCEPTION",
    "ONEWAY",
    "REPLY",
    "Message",
    "MessageStream",
    "ProtocolError",
    "decode",
    "encode",
    "header",
    "parse_message",
]

CALL, REPLY, EXCEPTION, ONEWAY = TMessageType.CALL, TMessageType.REPLY, TMessageType.EXCEPTION, TMessageType.ONEWAY

_VERSION_1 = 0x80010000
_VERSION_MASK = 0xFFFF0000
_I32 = struct.Struct("!i")
_U32 = struct.Struct("!I")
#: Longer method names are not Thrift calls (HMS's longest is under 50 characters).
_MAX_NAME = 256
_FACTORY = TBinaryProtocolAcceleratedFactory()


class ProtocolError(Exception):
    """The peer sent bytes that are not a binary-protocol Thrift message (or one too large)."""


class _Skip:
    """A struct with no fields: decoding it walks (and skips) a whole struct in C."""

    thrift_spec: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Message:
    """One Thrift message: its header fields and its bytes as they came (header and body)."""

    name: str
    type: int
    seqid: int
    raw: bytes
    header_size: int

    @property
    def body(self) -> bytes:
        """The encoded struct after the header (the call's args or the reply's result)."""
        return self.raw[self.header_size:]


def header(name: str, mtype: int, seqid: int) -> bytes:
    """A strict binary-protocol message header."""
    encoded = name.encode()
    return _U32.pack(_VERSION_1 | mtype) + _I32.pack(len(encoded)) + encoded + _I32.pack(seqid)


def encode(name: str, mtype: int, seqid: int, body: Any) -> bytes:
    """A whole message: header plus the struct ``body`` encoded."""
    encoded: bytes = TSerialization.serialize(body, _FACTORY)
    return header(name, mtype, seqid) + encoded


def decode(struct_obj: Any, body: bytes) -> Any:
    """Fill ``struct_obj`` from its encoded bytes and return it."""
    return TSerialization.deserialize(struct_obj, body, _FACTORY)


def _parse_header(data: bytes) -> tuple[str, int, int, int]:
    """(name, type, seqid, header size) of the message starting ``data``."""
    if len(data) < 12:
        raise ProtocolError("message shorter than a header")
    (word,) = _U32.unpack_from(data, 0)
    if word & _VERSION_MASK != _VERSION_1:
        raise ProtocolError(f"not a binary-protocol message (first word 0x{word:08x})")
    (size,) = _I32.unpack_from(data, 4)
    if not 0 < size <= _MAX_NAME or len(data) < 12 + size:
        raise ProtocolError(f"bad method name length {size}")
    try:
        name = data[8:8 + size].decode()
    except UnicodeDecodeError as e:
        raise ProtocolError("method name is not UTF-8") from e
    (seqid,) = _I32.unpack_from(data, 8 + size)
    return name, word & 0xFF, seqid, 12 + size


def parse_message(data: bytes) -> Message:
    """A message held whole in ``data`` (a frame of the framed transport)."""
    name, mtype, seqid, size = _parse_header(data)
    return Message(name, mtype, seqid, bytes(data), size)


class MessageStream(TTransportBase, CReadableTransport):
    """Reads whole messages off ``recv`` (a socket's ``recv``; ``b""`` at end of stream).

    Bytes read past a message's end are kept for the next one. ``max_size`` bounds one
    message (a peer announcing or sending more is a ``ProtocolError``).
    """

    def __init__(self, recv: Callable[[int], bytes], max_size: int, chunk: int = 256 * 1024) -> None:
        self._recv = recv
        self._max_size = max_size
        self._chunk = chunk
        self._buf = BytesIO(b"")
        self._captured: list[bytes] = []
        self._captured_size = 0
        self._mark = 0
        self._protocol = TBinaryProtocolAccelerated(self, string_length_limit=max_size,
                                                    container_length_limit=max_size)

    # ------------------------------------------------------------ CReadableTransport

    @property
    def cstringio_buf(self) -> BytesIO:
        return self._buf

    def cstringio_refill(self, partialread: bytes, reqlen: int) -> BytesIO:
        # The old buffer was read to its end; ``partialread`` is its tail, not yet used.
        with self._buf.getbuffer() as old:
            self._keep(bytes(old[self._mark:len(old) - len(partialread)]))
        data = bytearray(partialread)
        while len(data) < reqlen:
            if self._captured_size + len(data) > self._max_size:
                raise ProtocolError(f"message larger than {self._max_size} bytes")
            # Never more than a chunk at once: an announced length is no reason to allocate it.
            chunk = self._recv(self._chunk)
            if not chunk:
                raise EOFError("end of stream inside a message")
            data += chunk
        self._buf = BytesIO(data)
        self._mark = 0
        return self._buf

    def read(self, sz: int) -> bytes:
        data = self._buf.read(sz)
        if len(data) < sz:
            self.cstringio_refill(data, sz)
            data = self._buf.read(sz)
        return data

    def isOpen(self) -> bool:
        return True

    def close(self) -> None:
        """Drop what is buffered (the stream and its protocol form a reference cycle, which only
        the garbage collector would free, buffers included)."""
        self._buf = BytesIO(b"")
        self._captured = []
        self._captured_size = 0
        self._mark = 0

    # ------------------------------------------------------------ messages

    def _keep(self, data: bytes) -> None:
        if data:
            self._captured.append(data)
            self._captured_size += len(data)
            if self._captured_size > self._max_size:
                raise ProtocolError(f"message larger than {self._max_size} bytes")

    def buffered(self) -> int:
        """Bytes already read off the stream but not yet part of a message."""
        return len(self._buf.getbuffer()) - self._buf.tell()

    def first_byte(self) -> None:
        """Wait until the next message's first byte is here (the caller times the wait)."""
        if self.buffered() == 0:
            self.cstringio_refill(b"", 1)

    def read_message(self) -> Message:
        """The next whole message.

        Raises:
            ProtocolError: not a binary-protocol message, or larger than ``max_size``.
            EOFError: the stream ended (cleanly before a message, or inside one).
        """
        self._captured = []
        self._captured_size = 0
        self._mark = self._buf.tell()
        try:
            head = self.read(8)
            (word,) = _U32.unpack(head[:4])
            if word & _VERSION_MASK != _VERSION_1:
                raise ProtocolError(f"not a binary-protocol message (first word 0x{word:08x})")
            (size,) = _I32.unpack(head[4:])
            if not 0 < size <= _MAX_NAME:
                raise ProtocolError(f"bad method name length {size}")
            self.read(size + 4)
            self._protocol._fast_decode(_Skip(), self._protocol, [_Skip, ()])
        except TTransportException as e:
            raise ProtocolError(str(e)) from e
        except (struct.error, UnicodeDecodeError) as e:
            raise ProtocolError(str(e)) from e
        position = self._buf.tell()
        with self._buf.getbuffer() as view:
            self._keep(bytes(view[self._mark:position]))
            # Keep only the bytes past the message (usually none): the buffer that carried a
            # large call must not stay with the connection while it waits for its next one.
            rest = bytes(view[position:])
        self._buf = BytesIO(rest)
        self._mark = 0
        raw = self._captured[0] if len(self._captured) == 1 else b"".join(self._captured)
        self._captured = []
        self._captured_size = 0
        name, mtype, seqid, header_size = _parse_header(raw)
        return Message(name, mtype, seqid, raw, header_size)
