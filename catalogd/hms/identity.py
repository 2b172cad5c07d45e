"""Who an HMS connection is, proven before its first call: a Kerberos ticket (SASL GSSAPI) or a client certificate.

Without either configured, a connection's user is only what ``set_ugi`` asserts: with auth on it
is refused unless ``auth.trust-asserted-users`` trusts such users, up to the role it names
(``catalogd.hms.policy``); with auth off everyone may do everything anyway. With
``server.tls.client-ca`` a connection must present a certificate the CA signed (the TLS
handshake refuses it otherwise) and its subject, mapped by ``auth.certificate-rules``, is the
connection's principal. With ``auth.kerberos`` a connection must complete a SASL GSSAPI exchange;
the Kerberos principal, mapped by ``auth.kerberos.principal-rules``, is the connection's
principal (it takes precedence over a certificate's). Either way set_ugi cannot change it.
With Kerberos, a connection may instead authenticate with SASL DIGEST-MD5 and a delegation token
this endpoint (or a replica sharing its secret) issued: it is then the token's owner.

Every failure is throttled per client address and what it claimed (``catalogd.auth.throttle``)
and audited (the audit log coalesces a burst into one line): a certificate subject that failed
too often from an address is closed before its exchange is read; so is, from an address whose
SASL exchanges failed too often without naming anyone, a connection that has no certificate to
name it. Wrong tokens on the other ports never close a connection here.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from catalogd.auth.delegation import DelegationTokens, TokenIdentifier
from catalogd.auth.mapping import NameMapper, default_kerberos_rules
from catalogd.auth.throttle import THROTTLED, claim_of_name
from catalogd.errors import PermissionDeniedError
from catalogd.hms.sasl import DigestAcceptor, GssapiAcceptor, SaslError, SaslSession, negotiate
from catalogd.keys import load_key

if TYPE_CHECKING:
    from catalogd.auth.audit import AuditLog
    from catalogd.auth.throttle import Throttle
    from catalogd.config import Config
    from catalogd.hms.server import ClientConnection

logger = logging.getLogger(__name__)

__all__ = ["DELEGATION_KEY", "EndpointAuth", "certificate_subject"]

#: Under <data-dir>/secrets/: the generated key of delegation tokens (no secret configured).
DELEGATION_KEY = "delegation.key"


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
        self.tokens: DelegationTokens | None = None
        self.digest: DigestAcceptor | None = None
        if auth.kerberos is not None:
            krb = auth.kerberos
            self.kerberos = GssapiAcceptor(krb.principal, krb.keytab, krb.qop)
            self.kerberos_names = NameMapper(krb.principal_rules or default_kerberos_rules(self.kerberos.principal))
            conf = krb.delegation_tokens
            secret = (conf.secret.get_secret_value().strip().encode() if conf.secret is not None
                      else load_key(config.server.data_dir, DELEGATION_KEY))
            self.tokens = DelegationTokens(secret, conf.renew_interval.total_seconds(),
                                           conf.max_lifetime.total_seconds())
            self.digest = DigestAcceptor(self._token_password)
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
        subject = certificate_subject(cert) if self.certificates is not None and cert is not None else None
        # What the connection claims before its exchange: its certificate's subject; without one,
        # nothing (the key of SASL exchanges that failed without naming anyone).
        claim = claim_of_name("certificate", subject) if subject is not None else None
        if throttle is not None and throttle.wait(conn.peer, claim) > 0:
            self._denied(conn, None, "connect", f"{THROTTLED} (at most {throttle.max_delay:g}s)")
            raise SaslError(THROTTLED)
        if subject is not None:
            assert self.certificates is not None
            self._prove(conn, "certificate", subject, self.certificates.map(subject), claim)
        session: SaslSession | None = None
        if self.kerberos is not None:
            assert self.kerberos_names is not None
            try:
                session = negotiate(read, write, self.kerberos, self.digest)
            except SaslError as e:
                self._failed(conn, None, f"SASL authentication failed: {e}", claim)
                raise
            how = "kerberos" if session.mechanism == "GSSAPI" else "delegation token"
            # A proven name that maps to no one is that name's failure, not the address's: a
            # misconfigured client must not hold back the others' SASL connections from its host.
            self._prove(conn, how, session.name, self.kerberos_names.map(session.name),
                        claim if claim is not None else claim_of_name(how, session.name))
        if throttle is not None:
            throttle.succeeded(conn.peer, claim)
        return session

    def _prove(self, conn: ClientConnection, how: str, name: str, mapped: str | None, claim: str | None) -> None:
        what = {"kerberos": "Kerberos principal", "certificate": "certificate subject",
                "delegation token": "the delegation token of"}[how]
        if mapped is None:
            self._failed(conn, None, f"{what} {name!r} maps to no principal (no rule matches it)", claim)
            raise SaslError(f"{what} {name!r} maps to no principal")
        if self.enabled and not self._known(mapped):
            self._failed(conn, mapped, f"{what} {name!r} maps to {mapped!r}, not a configured principal", claim)
            raise SaslError(f"{mapped!r} is not a configured principal")
        conn.identity = (mapped, ())
        conn.proven = how
        conn.proven_name = name
        logger.debug("HMS endpoint: %s is %s by %s %s", conn.peer, mapped, how, name)

    def _token_password(self, username: str) -> tuple[str, str]:
        """DIGEST-MD5's password (base64) and the owner of the token whose identifier is ``username``."""
        assert self.tokens is not None
        try:
            identifier = base64.b64decode(username, validate=True)
            ident, password = self.tokens.verify(identifier)
        except (binascii.Error, ValueError):
            raise SaslError("the DIGEST-MD5 user name is not a delegation token identifier") from None
        except PermissionDeniedError as e:
            raise SaslError(e.message) from None
        return base64.b64encode(password).decode(), ident.owner

    # ------------------------------------------------------------ delegation token calls

    def _names(self, conn: ClientConnection) -> set[str]:
        """The names the connection answers to: its principal and the Kerberos name it proved."""
        names = {conn.identity[0]} if conn.identity else set()
        if conn.proven_name:
            names.add(conn.proven_name)
        return names

    def _mapped(self, name: str) -> str | None:
        return self.kerberos_names.map(name) if self.kerberos_names is not None else None

    def get_delegation_token(self, conn: ClientConnection, owner: str, renewer: str) -> str:
        """A token for ``owner`` (the caller itself), renewable by ``renewer``; only over Kerberos
        (a token does not beget tokens, as in Hadoop)."""
        if self.tokens is None:
            raise PermissionDeniedError("delegation tokens are issued only with auth.kerberos configured")
        if conn.proven != "kerberos":
            raise PermissionDeniedError("a delegation token is issued only to a Kerberos-authenticated connection")
        names = self._names(conn)
        if owner and owner not in names and self._mapped(owner) not in names:
            raise PermissionDeniedError(f"{conn.proven_name} may not get a delegation token for {owner!r}")
        # The owner as the Kerberos name (as the metastore records it): mapped again on use.
        return self.tokens.issue(conn.proven_name or owner, renewer or "")

    def renew_delegation_token(self, conn: ClientConnection, token: str) -> int:
        if self.tokens is None:
            raise PermissionDeniedError("no delegation tokens are issued here")
        names = self._names(conn)
        return self.tokens.renew(token, lambda renewer: renewer in names or self._mapped(renewer) in names
                                 or renewer.partition("/")[0].partition("@")[0] in names)

    def cancel_delegation_token(self, conn: ClientConnection, token: str) -> None:
        if self.tokens is None:
            raise PermissionDeniedError("no delegation tokens are issued here")
        names = self._names(conn)

        def allowed(ident: TokenIdentifier) -> bool:
            return any(n in names or self._mapped(n) in names or n.partition("/")[0].partition("@")[0] in names
                       for n in (ident.owner, ident.renewer) if n)

        self.tokens.cancel(token, allowed)

    def _failed(self, conn: ClientConnection, principal: str | None, detail: str, claim: str | None) -> None:
        if self.throttle is not None:
            self.throttle.failed(conn.peer, claim)
        self._denied(conn, principal, "authenticate", detail)

    def _denied(self, conn: ClientConnection, principal: str | None, operation: str, detail: str) -> None:
        if self.audit is not None:
            self.audit.record(principal=principal, surface="hms", client=conn.peer, operation=operation,
                              object=None, outcome="denied", detail=detail)
