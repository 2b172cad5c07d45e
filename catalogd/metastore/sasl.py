"""Thrift's SASL transport as the Hive Metastore speaks it: the wire both sides share, and the
client side catalogd uses to reach a kerberized metastore with its own keytab.

The exchange (Thrift's ``TSaslTransport``): each negotiation message is a status byte (START,
OK, BAD, ERROR, COMPLETE), a 4-byte length and a payload. The client sends START with the
mechanism's name, then its initial response; the server answers OK with a challenge until it is
done, then COMPLETE. After it every Thrift message travels in frames of a 4-byte length and a
payload, wrapped (signed, or signed and sealed) when the negotiated quality of protection is
``auth-int`` or ``auth-conf``.

The server side (the HMS endpoint's) is ``catalogd.hms.sasl``. The client side here is GSSAPI
(RFC 4752, as Java's ``GssKrb5Client`` that Hive's metastore client uses does it), with
credentials taken from a keytab through the GSSAPI credential store (``client_keytab``, an
in-memory ticket cache of the process's own): no ``kinit``, no ``KRB5CCNAME`` for the daemon.
The client asks for the strongest security layer the server offers.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from thrift.transport.TTransport import CReadableTransport, TTransportBase, TTransportException

from catalogd.errors import ConfigError, MetastoreUnavailableError

__all__ = ["BAD", "COMPLETE", "ERROR", "MAX_BUFFER", "MAX_NEGOTIATION", "OK", "QOP_BITS", "START",
           "KerberosLogin", "MetastoreKerberos", "SaslChannel", "SaslClientTransport", "SaslError", "gss_reason",
           "read_exact", "read_message", "send_message", "service_principal"]

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
_HEADER = struct.Struct(">BI")
_FRAME = struct.Struct("!i")
#: The largest negotiation payload taken from a peer not yet authenticated (a Kerberos AP-REQ
#: with a PAC is a few KiB; Thrift's own clients allow 2 MiB).
MAX_NEGOTIATION = 256 * 1024
#: QOP names as the configuration spells them, and the RFC 4752 bit of each security layer.
QOP_BITS = {"auth": 1, "auth-int": 2, "auth-conf": 4}
#: The largest wrapped buffer taken (and offered): a call may be large, a frame not.
MAX_BUFFER = 0xFFFFFF

Read = Callable[[int], bytes]
Write = Callable[[bytes], None]


class SaslError(Exception):
    """A SASL negotiation failed (the message says why, without any secret)."""


def read_exact(read: Read, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = read(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def read_message(read: Read, status: int | None = None) -> tuple[int, bytes]:
    """One negotiation message (``status``: its first byte, already read)."""
    if status is None:
        status = read_exact(read, 1)[0]
    (length,) = struct.unpack(">I", read_exact(read, 4))
    if length > MAX_NEGOTIATION:
        raise SaslError(f"negotiation message of {length} bytes (at most {MAX_NEGOTIATION})")
    return status, read_exact(read, length) if length else b""


def send_message(write: Write, status: int, payload: bytes = b"") -> None:
    write(_HEADER.pack(status, len(payload)) + payload)


def gss_reason(error: Any) -> str:
    """A GSSAPI error's text on one line (no secret is in it)."""
    text = str(getattr(error, "gen_message", lambda: "")() or error)
    return " ".join(text.split())[:300]


def service_principal(principal: str, host: str) -> str:
    """``principal`` with ``_HOST`` replaced as Hadoop's ``SecurityUtil.getServerPrincipal`` does:
    by ``host`` in lower case (this machine's name when ``host`` is a wildcard or empty)."""
    if "_HOST" not in principal:
        return principal
    if host in ("", "0.0.0.0", "::"):
        host = socket.getfqdn()
    return principal.replace("_HOST", host.lower())


# ---------------------------------------------------------------- the client side

_ccache_ids = itertools.count(1)


class KerberosLogin:
    """catalogd's own Kerberos identity as a client: a principal and the keytab with its key.

    The credentials are acquired on first use and kept (the GSSAPI library gets a new ticket
    from the keytab when the one it holds expires), in an in-memory ticket cache of their own.

    Raises (at first use): MetastoreUnavailableError when the keytab has no key of the principal or
    the KDC refuses it.
    """

    def __init__(self, principal: str, keytab: str | os.PathLike[str]) -> None:
        self.principal = service_principal(principal, "")
        self.keytab = str(keytab)
        self._creds: Any = None
        self._lock = threading.Lock()
        self._ccache = f"MEMORY:catalogd-client-{os.getpid()}-{next(_ccache_ids)}"

    def credentials(self) -> Any:
        try:
            import gssapi
            from gssapi.raw.misc import GSSError
        except ImportError:
            raise ConfigError("a kerberized metastore needs the GSSAPI binding: pip install 'catalogd[kerberos]' "
                              "(built against libkrb5-dev)") from None
        with self._lock:
            if self._creds is None:
                try:
                    name = gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
                    creds = gssapi.Credentials(name=name, usage="initiate",
                                               store={"client_keytab": self.keytab, "ccache": self._ccache})
                    creds.inquire()
                except GSSError as e:
                    raise MetastoreUnavailableError(f"cannot log in to Kerberos as {self.principal} with the keytab "
                                                    f"{self.keytab}: {gss_reason(e)}") from None
                self._creds = creds
            return self._creds


@dataclass(frozen=True)
class MetastoreKerberos:
    """How catalogd reaches one kerberized metastore: as ``login``, to the service ``principal``
    (``hive.metastore.kerberos.principal``; ``_HOST`` is the host of the URI connected to)."""

    login: KerberosLogin
    principal: str

    def service_for(self, host: str) -> str:
        return service_principal(self.principal, host)


class _Gssapi:
    """The client side of one SASL GSSAPI exchange (RFC 4752)."""

    def __init__(self, login: KerberosLogin, service: str) -> None:
        import gssapi

        self.service = service
        target = gssapi.Name(service, gssapi.NameType.kerberos_principal)
        flags = (gssapi.RequirementFlag.mutual_authentication | gssapi.RequirementFlag.integrity
                 | gssapi.RequirementFlag.confidentiality)
        self.context = gssapi.SecurityContext(name=target, creds=login.credentials(), usage="initiate", flags=flags)
        self.qop = ""

    def negotiate(self, read: Read, write: Write) -> None:
        from gssapi.exceptions import GeneralError
        from gssapi.raw.misc import GSSError

        try:
            send_message(write, START, b"GSSAPI")
            send_message(write, OK, self.context.step(None) or b"")
            while True:
                status, challenge = read_message(read)
                if status == COMPLETE:
                    if not self.qop:
                        raise SaslError("the metastore ended the negotiation before a security layer was chosen")
                    return
                if status != OK:
                    reason = challenge.decode("utf-8", "replace")[:300] or f"status {status}"
                    raise SaslError(f"the metastore refused the SASL negotiation: {reason}")
                if not self.context.complete:
                    send_message(write, OK, self.context.step(challenge) or b"")
                else:
                    send_message(write, OK, self._choose_layer(challenge))
        except (GSSError, GeneralError) as e:
            raise SaslError(f"Kerberos: {gss_reason(e)}") from None

    def _choose_layer(self, challenge: bytes) -> bytes:
        offer = self.context.unwrap(challenge).message
        if len(offer) < 4:
            raise SaslError("the metastore's security layer offer is too short")
        layers = offer[0]
        # The strongest layer offered: privacy, then integrity, then authentication only.
        self.qop = next((qop for qop in ("auth-conf", "auth-int", "auth") if layers & QOP_BITS[qop]), "")
        if not self.qop:
            raise SaslError(f"the metastore offered no known security layer ({layers})")
        # No authorization id: the metastore takes the authenticated principal itself.
        answer = bytes([QOP_BITS[self.qop]]) + MAX_BUFFER.to_bytes(3, "big")
        return bytes(self.context.wrap(answer, False).message)

    def wrap(self, data: bytes) -> bytes:
        if self.qop == "auth":
            return data
        return bytes(self.context.wrap(data, self.qop == "auth-conf").message)

    def unwrap(self, data: bytes) -> bytes:
        if self.qop == "auth":
            return data
        return bytes(self.context.unwrap(data).message)


class SaslChannel:
    """A socket on which a SASL GSSAPI negotiation was made: whole messages go out as frames
    (``sendall``), bytes come in unwrapped (``recv``)."""

    def __init__(self, sock: socket.socket, login: KerberosLogin, service: str, max_frame: int = 256 << 20) -> None:
        self.sock = sock
        self.max_frame = max_frame
        self._mechanism = _Gssapi(login, service)
        self._unread = b""
        self._mechanism.negotiate(sock.recv, sock.sendall)

    @property
    def qop(self) -> str:
        return self._mechanism.qop

    def sendall(self, data: bytes) -> None:
        wrapped = self._mechanism.wrap(data)
        self.sock.sendall(_FRAME.pack(len(wrapped)) + wrapped)

    def recv(self, size: int) -> bytes:
        if not self._unread:
            (length,) = _FRAME.unpack(read_exact(self.sock.recv, 4))
            if not 0 < length <= self.max_frame:
                raise EOFError(f"SASL frame of {length} bytes")
            self._unread = self._mechanism.unwrap(read_exact(self.sock.recv, length))
        data, self._unread = self._unread[:size], self._unread[size:]
        return data


class SaslClientTransport(TTransportBase, CReadableTransport):
    """A Thrift transport over a ``SaslChannel`` (what ``hive.metastore.sasl.enabled`` clients use).

    Args:
        sock: a connected socket (its timeout bounds the negotiation and every read).
    """

    def __init__(self, sock: socket.socket, login: KerberosLogin, service: str) -> None:
        self._sock = sock
        self._login = login
        self._service = service
        self._channel: SaslChannel | None = None
        self._wbuf = BytesIO()
        self._rbuf = BytesIO(b"")

    def open(self) -> None:
        try:
            self._channel = SaslChannel(self._sock, self._login, self._service)
        except (SaslError, EOFError, OSError) as e:
            raise TTransportException(TTransportException.NOT_OPEN, f"SASL GSSAPI as {self._login.principal} "
                                                                    f"to {self._service}: {e or 'connection closed'}"
                                      ) from None

    def isOpen(self) -> bool:
        return self._channel is not None

    def close(self) -> None:
        self._channel = None
        with contextlib.suppress(OSError):
            self._sock.close()

    def read(self, sz: int) -> bytes:
        data = self._rbuf.read(sz)
        if data:
            return data
        self._refill()
        return self._rbuf.read(sz)

    def _refill(self) -> None:
        assert self._channel is not None
        try:
            self._rbuf = BytesIO(self._channel.recv(MAX_BUFFER << 4))
        except EOFError as e:
            raise TTransportException(TTransportException.END_OF_FILE, str(e) or "connection closed") from None

    def write(self, buf: bytes) -> None:
        self._wbuf.write(buf)

    def flush(self) -> None:
        assert self._channel is not None
        data, self._wbuf = self._wbuf.getvalue(), BytesIO()
        self._channel.sendall(data)

    # CReadableTransport: lets the accelerated binary protocol read from the buffer directly.
    @property
    def cstringio_buf(self) -> BytesIO:
        return self._rbuf

    def cstringio_refill(self, partialread: bytes, reqlen: int) -> BytesIO:
        prefix = partialread
        while len(prefix) < reqlen:
            self._refill()
            prefix += self._rbuf.getvalue()
        self._rbuf = BytesIO(prefix)
        return self._rbuf
