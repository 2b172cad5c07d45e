"""TLS contexts for catalogd's servers (Thrift API, HTTP, HMS endpoint) and for its clients.

One place decides the protocol floor and options so that every port behaves alike: TLS 1.2
or newer, no renegotiation, and no TLS 1.3 session tickets from the servers (a ticket is
bytes the server sends unasked after the handshake; catalogd's client takes a readable idle
socket for one the daemon closed, and resumption buys nothing on long-lived connections).
"""

from __future__ import annotations

import logging
import os
import ssl
from pathlib import Path

from catalogd.errors import InvalidArgumentError

logger = logging.getLogger(__name__)

__all__ = ["ENV_CA", "ENV_CERT", "ENV_KEY", "client_context", "client_context_from_env", "server_context"]

#: Environment variables the client reads when no TLS argument is given.
ENV_CA = "CATALOGD_TLS_CA"
ENV_CERT = "CATALOGD_TLS_CERT"
ENV_KEY = "CATALOGD_TLS_KEY"


def server_context(cert: Path | str, key: Path | str, client_ca: Path | str | None = None) -> ssl.SSLContext:
    """A server-side context; with ``client_ca`` a client must present a certificate it signed.

    Raises:
        InvalidArgumentError: the certificate, key or CA file cannot be loaded (names the file).
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_RENEGOTIATION
    context.num_tickets = 0
    try:
        context.load_cert_chain(str(cert), str(key))
    except (ssl.SSLError, OSError) as e:
        raise InvalidArgumentError(f"cannot load the TLS certificate {cert} with its key {key}: {_reason(e)}") from None
    if client_ca is not None:
        _load_ca(context, client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def client_context(ca: Path | str | None = None, cert: Path | str | None = None, key: Path | str | None = None, *,
                   pinned: bool = False) -> ssl.SSLContext:
    """A client-side context trusting ``ca`` (the system's CAs when None), presenting ``cert`` if given.

    ``pinned``: ``ca`` is the server's own certificate (a daemon's refresh jobs trust exactly
    the certificate their daemon serves): it is accepted as a trust anchor though it is no CA,
    and the host name is not checked against it.

    Raises:
        InvalidArgumentError: a file cannot be loaded, or a key without a certificate.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the certificate and the host name
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca is None:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    else:
        _load_ca(context, ca)  # only this CA: a daemon's certificate is rarely from a public CA
    if pinned:
        context.check_hostname = False
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    if key is not None and cert is None:
        raise InvalidArgumentError("a TLS client key needs its certificate (--tls-cert / CATALOGD_TLS_CERT)")
    if cert is not None:
        try:
            context.load_cert_chain(str(cert), str(key) if key is not None else None)
        except (ssl.SSLError, OSError) as e:
            raise InvalidArgumentError(f"cannot load the TLS client certificate {cert}: {_reason(e)}") from None
    return context


def client_context_from_env(ca: str | None, cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """The client context for these arguments, each defaulting to its ``CATALOGD_TLS_*`` variable;
    None when none of them is set (plain TCP)."""
    ca = ca or os.environ.get(ENV_CA) or None
    cert = cert or os.environ.get(ENV_CERT) or None
    key = key or os.environ.get(ENV_KEY) or None
    if ca is None and cert is None and key is None:
        return None
    return client_context(ca, cert, key)


def _load_ca(context: ssl.SSLContext, ca: Path | str) -> None:
    try:
        context.load_verify_locations(cafile=str(ca))
    except (ssl.SSLError, OSError) as e:
        raise InvalidArgumentError(f"cannot load the TLS CA file {ca}: {_reason(e)}") from None


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(getattr(e, "reason", None) or e)
