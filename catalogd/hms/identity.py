"""Who an HMS connection is, proven before its first call: a Kerberos ticket (SASL GSSAPI) or a client certificate.

Without either configured the endpoint believes ``set_ugi`` (as the Hive Metastore does without
SASL). With ``server.tls.client-ca`` a connection must present a certificate the CA signed (the
TLS handshake refuses it otherwise) and its subject, mapped by ``auth.certificate-rules``, is the
connection's principal. With ``auth.kerberos`` a connection must complete a SASL GSSAPI exchange;
the Kerberos principal, mapped by ``auth.kerberos.principal-rules``, is the connection's
principal (it takes precedence over a certificate's). Either way set_ugi cannot change it.

Every failure is throttled per client address (``catalogd.auth.throttle``) and audited (the
audit log coalesces a burst into one line); a connection from an address in its back-off is
closed before its exchange is even read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from catalogd.auth.mapping import NameMapper, default_kerberos_rules
from catalogd.auth.throttle import THROTTLED
from catalogd.hms.sasl import GssapiAcceptor, SaslError, SaslSession, negotiate

if TYPE_CHECKING:
    from catalogd.auth.audit import AuditLog
    from catalogd.auth.throttle import Throttle
    from catalogd.config import Config
    from catalogd.hms.server import ClientConnection

logger = logging.getLogger(__name__)

__all__ = ["EndpointAuth", "certificate_subject"]


def certificate_subject(cert: dict[str, object]) -> str:
    """A peer certificate's subject as ``CN=name,O=org`` (``ssl.getpeercert``'s nested tuples)."""
    parts: list[str] = []
    subject = cert.get("subject") or ()
    for rdn in subject if isinstance(subject, tuple) else ():
        for key, value in rdn:
            short = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
                     "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
                     "emailAddress": "emailAddress"}.get(key, key)
            parts.append(f"{short}={value}")
    return ",".join(parts)


class EndpointAuth:
    """The endpoint's ``Authenticator`` (see ``catalogd.hms.server``).

    Args:
        config: ``auth`` and ``server.tls`` say what a connection must prove.
        known: whether a name is a configured principal (a proof of someone else is refused).
        throttle: the back-off of failed authentications (None: none).
        audit: where failures go (None: nowhere).
    """

    def __init__(self, config: Config, known: Callable[[str], bool], throttle: Throttle | None = None,
                 audit: AuditLog | None = None) -> None:
        auth = config.auth
        tls = config.server.tls
        self.kerberos: GssapiAcceptor | None = None
        self.kerberos_names: NameMapper | None = None
        if auth.kerberos is not None:
            krb = auth.kerberos
            self.kerberos = GssapiAcceptor(krb.principal, krb.keytab, krb.qop)
            self.kerberos_names = NameMapper(krb.principal_rules or default_kerberos_rules(self.kerberos.principal))
        self.certificates: NameMapper | None = None
        if tls is not None and tls.client_ca is not None:
            self.certificates = NameMapper(auth.certificate_rules)
        self.enabled = auth.enabled
        self._known = known
        self.throttle = throttle
        self.audit = audit

    @property
    def active(self) -> bool:
        """Whether connections must prove anything (otherwise set_ugi is believed, as before)."""
        return self.kerberos is not None or self.certificates is not None

    def __call__(self, conn: ClientConnection, cert: dict[str, object] | None, read: Callable[[int], bytes],
                 write: Callable[[bytes], None]) -> SaslSession | None:
        throttle = self.throttle
        if throttle is not None and throttle.wait(conn.peer) > 0:
            self._denied(conn, None, "connect", f"{THROTTLED} (at most {throttle.max_delay:g}s)")
            raise SaslError(THROTTLED)
        if self.certificates is not None and cert is not None:
            subject = certificate_subject(cert)
            self._prove(conn, "certificate", subject, self.certificates.map(subject))
        session: SaslSession | None = None
        if self.kerberos is not None:
            assert self.kerberos_names is not None
            try:
                session = negotiate(read, write, self.kerberos)
            except SaslError as e:
                self._failed(conn, None, f"Kerberos (SASL GSSAPI) authentication failed: {e}")
                raise
            self._prove(conn, "kerberos", session.name, self.kerberos_names.map(session.name))
        if throttle is not None:
            throttle.succeeded(conn.peer)
        return session

    def _prove(self, conn: ClientConnection, how: str, name: str, mapped: str | None) -> None:
        what = {"kerberos": "Kerberos principal", "certificate": "certificate subject"}[how]
        if mapped is None:
            self._failed(conn, None, f"{what} {name!r} maps to no principal (no rule matches it)")
            raise SaslError(f"{what} {name!r} maps to no principal")
        if self.enabled and not self._known(mapped):
            self._failed(conn, mapped, f"{what} {name!r} maps to {mapped!r}, not a configured principal")
            raise SaslError(f"{mapped!r} is not a configured principal")
        conn.identity = (mapped, ())
        conn.proven = how
        conn.proven_name = name
        logger.debug("HMS endpoint: %s is %s by %s %s", conn.peer, mapped, how, name)

    def _failed(self, conn: ClientConnection, principal: str | None, detail: str) -> None:
        if self.throttle is not None:
            self.throttle.failed(conn.peer)
        self._denied(conn, principal, "authenticate", detail)

    def _denied(self, conn: ClientConnection, principal: str | None, operation: str, detail: str) -> None:
        if self.audit is not None:
            self.audit.record(principal=principal, surface="hms", client=conn.peer, operation=operation,
                              object=None, outcome="denied", detail=detail)
