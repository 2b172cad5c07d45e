"""SASL over Thrift on the HMS endpoint, as the Hive Metastore speaks it: GSSAPI (Kerberos).

The exchange is Thrift's ``TSaslTransport``: each negotiation message is a status byte (START,
OK, BAD, ERROR, COMPLETE), a 4-byte length and a payload. The client sends START with the
mechanism's name, then its initial response; the server answers OK with a challenge until it is
done, then COMPLETE. After it every Thrift message travels in frames of a 4-byte length and a
payload, wrapped (signed, or signed and sealed) when the negotiated quality of protection is
``auth-int`` or ``auth-conf``.

GSSAPI (RFC 4752, as Java's ``GssKrb5Server`` that the metastore uses does it): the client's
Kerberos AP-REQ is accepted with the service's key from its keytab; once the security context is
established the server offers, in a wrapped 4-byte message, the security layers it allows and
its largest buffer; the client answers, wrapped, with the layer it chose, its largest buffer and
an optional authorization id, which must be the authenticated principal itself (no one may act
for another here).
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import logging
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# The wire both sides share lives with the client side, below this package (catalogd.metastore).
from catalogd.metastore.sasl import (
    BAD,
    COMPLETE,
    ERROR,
    MAX_BUFFER,
    MAX_NEGOTIATION,
    OK,
    QOP_BITS,
    START,
    SaslError,
    gss_reason,
    read_exact,
    read_message,
    send_message,
)

__all__ = ["BAD", "COMPLETE", "ERROR", "MAX_NEGOTIATION", "OK", "START", "DigestAcceptor", "GssapiAcceptor",
           "SaslError", "SaslSession", "negotiate"]

logger = logging.getLogger(__name__)


@dataclass
class SaslSession:
    """An authenticated SASL connection: whom it proved and how its frames are wrapped."""

    #: The authenticated name, e.g. ``alice@EXAMPLE.COM``.
    name: str
    mechanism: str
    qop: str
    wrap: Callable[[bytes], bytes] | None = None
    unwrap: Callable[[bytes], bytes] | None = None


Read = Callable[[int], bytes]
Write = Callable[[bytes], None]
_read_message = read_message
_read_exact = read_exact
_send = send_message
_gss_reason = gss_reason


class GssapiAcceptor:
    """The service's Kerberos credentials (from its keytab), accepting GSSAPI exchanges.

    Args:
        principal: ``service/host@REALM``; ``_HOST`` is replaced by this machine's name.
        keytab: the keytab holding its key.
        qop: the qualities of protection offered, in order of preference.
    """

    def __init__(self, principal: str, keytab: str | os.PathLike[str], qop: Sequence[str]) -> None:
        from catalogd.errors import ConfigError

        try:
            import gssapi
            from gssapi.raw.misc import GSSError
        except ImportError:
            raise ConfigError("auth.kerberos needs the GSSAPI binding: pip install 'catalogd[kerberos]' "
                              "(built against libkrb5-dev)") from None
        self.principal = principal.replace("_HOST", socket.getfqdn().lower())
        self.keytab = str(keytab)
        self.qop = list(qop)
        try:
            name = gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
            # The keytab through the credential store: no KRB5_KTNAME for the whole process.
            self._creds = gssapi.Credentials(name=name, usage="accept", store={"keytab": self.keytab})
            # Fails now, not at the first client, when the keytab has no key of the principal.
            self._creds.inquire()
        except GSSError as e:
            raise ConfigError(f"auth.kerberos: cannot use the key of {self.principal} in {self.keytab}: "
                              f"{_gss_reason(e)}") from None

    @property
    def realm(self) -> str:
        return self.principal.rpartition("@")[2]

    def accept(self, read: Read, write: Write) -> SaslSession:
        """Run the server side of one negotiation on a connection (START already read)."""
        import gssapi
        from gssapi.exceptions import GeneralError
        from gssapi.raw.misc import GSSError

        context = gssapi.SecurityContext(creds=self._creds, usage="accept")
        try:
            status, token = _read_message(read)
            while not context.complete:
                if status not in (OK, COMPLETE):
                    raise SaslError(f"expected a GSSAPI token, got status {status}")
                out = context.step(token)
                if context.complete:
                    # The AP-REP (mutual authentication), or nothing: the client answers empty.
                    _send(write, OK, out or b"")
                    status, token = _read_message(read)
                    if token:
                        raise SaslError("the final GSSAPI handshake step carried data")
                    break
                _send(write, OK, out or b"")
                status, token = _read_message(read)
            name = str(context.initiator_name)
            offered = 0
            for offered_qop in self.qop:
                offered |= QOP_BITS[offered_qop]
            offer = bytes([offered]) + MAX_BUFFER.to_bytes(3, "big")
            _send(write, OK, context.wrap(offer, False).message)
            status, answer = _read_message(read)
            if status not in (OK, COMPLETE):
                raise SaslError(f"expected the security layer choice, got status {status}")
            chosen = context.unwrap(answer).message
        except (GSSError, GeneralError) as e:
            raise SaslError(f"Kerberos: {_gss_reason(e)}") from None
        if len(chosen) < 4:
            raise SaslError("the security layer choice is too short")
        layer = chosen[0]
        chosen_qop = next((q for q, bit in QOP_BITS.items() if bit == layer), None)
        if chosen_qop is None or not offered & layer:
            raise SaslError(f"security layer {layer} was not offered")
        qop = chosen_qop
        authzid = chosen[4:].decode("utf-8", "replace")
        if authzid and authzid != name:
            raise SaslError(f"{name} may not act as {authzid}")
        _send(write, COMPLETE)
        if qop == "auth":
            return SaslSession(name, "GSSAPI", qop)
        encrypt = qop == "auth-conf"

        def wrap(data: bytes) -> bytes:
            return bytes(context.wrap(data, encrypt).message)

        def unwrap(data: bytes) -> bytes:
            result = context.unwrap(data)
            if encrypt and not result.encrypted:
                raise SaslError("an unencrypted frame on an auth-conf connection")
            return bytes(result.message)

        return SaslSession(name, "GSSAPI", qop, wrap, unwrap)


#: DIGEST-MD5's realm, as Hadoop's ``SaslRpcServer.SASL_DEFAULT_REALM``.
DIGEST_REALM = "default"


class DigestAcceptor:
    """SASL DIGEST-MD5 (RFC 2831) with delegation tokens, as Hadoop's ``SaslDigestCallbackHandler``
    does it: the user name is the token identifier in base64, the password the token's password in
    base64; QOP ``auth`` only (Hive's clients use DIGEST-MD5 with ``auth`` by default).

    Args:
        lookup: the password (base64 text) and the authenticated name of a user name (the
            identifier in base64); raises SaslError when it is no live token.
    """

    def __init__(self, lookup: Callable[[str], tuple[str, str]]) -> None:
        self.lookup = lookup

    def accept(self, read: Read, write: Write) -> SaslSession:
        import hashlib

        _, initial = _read_message(read)
        if initial:
            raise SaslError("DIGEST-MD5 has no initial response")
        nonce = base64.b64encode(os.urandom(24)).decode()
        _send(write, OK, (f'realm="{DIGEST_REALM}",nonce="{nonce}",qop="auth",charset=utf-8,'
                          'algorithm=md5-sess').encode())
        status, response = _read_message(read)
        if status not in (OK, COMPLETE):
            raise SaslError(f"expected the DIGEST-MD5 response, got status {status}")
        fields = _parse_digest(response)
        for key in ("username", "nonce", "cnonce", "nc", "digest-uri", "response"):
            if key not in fields:
                raise SaslError(f"the DIGEST-MD5 response has no {key}")
        if fields["nonce"] != nonce:
            raise SaslError("the DIGEST-MD5 response is for another nonce")
        if fields.get("qop", "auth") != "auth":
            raise SaslError(f"DIGEST-MD5 qop {fields['qop']!r} was not offered (auth is)")
        realm = fields.get("realm", DIGEST_REALM)
        password, name = self.lookup(fields["username"])

        def md5(data: bytes) -> bytes:
            return hashlib.md5(data, usedforsecurity=False).digest()

        def hexmd5(data: bytes) -> str:
            return hashlib.md5(data, usedforsecurity=False).hexdigest()

        authzid = fields.get("authzid")
        a1 = md5(f"{fields['username']}:{realm}:{password}".encode()) + \
            f":{nonce}:{fields['cnonce']}".encode() + (f":{authzid}".encode() if authzid else b"")
        digest_uri = fields["digest-uri"]

        def response_for(a2: str) -> str:
            return hexmd5(f"{hexmd5(a1)}:{nonce}:{fields['nc']}:{fields['cnonce']}:auth:{hexmd5(a2.encode())}"
                          .encode())

        if not hmac.compare_digest(response_for(f"AUTHENTICATE:{digest_uri}"), fields["response"].lower()):
            raise SaslError("the DIGEST-MD5 response does not match the token's password")
        if authzid and authzid != fields["username"]:
            raise SaslError("a delegation token may not act as anyone else")
        _send(write, COMPLETE, f"rspauth={response_for(':' + digest_uri)}".encode())
        return SaslSession(name, "DIGEST-MD5", "auth")


def _parse_digest(data: bytes) -> dict[str, str]:
    """The ``key=value`` and ``key="value"`` fields of a DIGEST-MD5 message."""
    text = data.decode("utf-8", "replace")
    fields: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        while pos < len(text) and text[pos] in " ,\t":
            pos += 1
        eq = text.find("=", pos)
        if eq < 0:
            break
        key = text[pos:eq].strip().lower()
        pos = eq + 1
        if pos < len(text) and text[pos] == '"':
            pos += 1
            value = []
            while pos < len(text) and text[pos] != '"':
                if text[pos] == "\\" and pos + 1 < len(text):
                    pos += 1
                value.append(text[pos])
                pos += 1
            pos += 1
            fields[key] = "".join(value)
        else:
            end = text.find(",", pos)
            end = len(text) if end < 0 else end
            fields[key] = text[pos:end].strip()
            pos = end
    return fields


def negotiate(read: Read, write: Write, gssapi: GssapiAcceptor | None,
              digest: DigestAcceptor | None = None) -> SaslSession:
    """The server side of a Thrift SASL negotiation: START, then the mechanism's exchange.

    Raises:
        SaslError: the client did not authenticate (an ERROR or BAD message was sent to it
            when it could take one).
        EOFError: the client went away.
    """
    first = _read_exact(read, 1)
    if first[0] != START:
        # Not SASL: a plain Thrift client (0x80: a binary message) on a kerberized endpoint.
        raise SaslError("the client did not start a SASL negotiation (set hive.metastore.sasl.enabled=true)")
    _, mechanism_bytes = _read_message(read, first[0])
    mechanism = mechanism_bytes.decode("ascii", "replace")
    try:
        if mechanism == "GSSAPI" and gssapi is not None:
            return gssapi.accept(read, write)
        if mechanism == "DIGEST-MD5" and digest is not None:
            return digest.accept(read, write)
        offered = " and ".join(name for name, acceptor in (("GSSAPI", gssapi), ("DIGEST-MD5", digest)) if acceptor)
        raise SaslError(f"SASL mechanism {mechanism!r} is not offered ({offered or 'none'} is)")
    except SaslError as e:
        with contextlib.suppress(OSError):
            _send(write, BAD, str(e).encode())
        raise
