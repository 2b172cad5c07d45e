"""Whether a console POST comes from the console's own pages (login CSRF, issue 31 row 11).

Every form after login carries the session's CSRF token; the login form cannot (there is no
session yet), so a page on another site could post its own attacker's token to ``/ui/login``
and the victim's browser would be signed in as the attacker (login CSRF). A browser says where
a request comes from: ``Sec-Fetch-Site`` (``same-origin``, or ``none`` for one the user typed),
``Origin`` on every cross-origin POST (``null`` from a sandbox or a ``data:`` page) and, for
older browsers, ``Referer``. ``Sec-Fetch-Site`` decides when the browser sends it; otherwise a POST is
refused when ``Origin`` (else ``Referer``) names another origin than the one the request was
sent to (its ``Host``; the scheme is not compared, so a TLS-terminating proxy in front changes
nothing). The sign-in page's referrer policy is ``same-origin``, so that a browser without
``Sec-Fetch-Site`` names the console as the origin of its own form (``no-referrer``, the other
pages' policy, makes it send ``Origin: null``, which is refused). A request with none of them
comes from no browser (curl, the tests), which no other site can make a victim send.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

__all__ = ["foreign_origin"]

_DEFAULT_PORTS = {"http": "80", "https": "443"}


def foreign_origin(headers: Mapping[str, str]) -> str | None:
    """Why a POST with ``headers`` comes from another site than the console; None when it does not."""
    site = headers.get("sec-fetch-site")
    if site is not None:
        # Set by the browser itself (no page can forge it) and not hidden by a referrer policy:
        # it decides when sent. (The console's pages send no referrer, so a browser posting its
        # own form may send ``Origin: null``.)
        if site.strip().lower() in ("same-origin", "none"):
            return None
        return f"Sec-Fetch-Site is {site.strip()!r}"
    host = _split(headers.get("host") or "")
    for name in ("origin", "referer"):
        value = headers.get(name)
        if value is None:
            continue
        if value.strip().lower() == "null":
            return f"{name.capitalize()} is null"
        parsed = urllib.parse.urlsplit(value.strip())
        if not parsed.scheme or not parsed.netloc:
            return f"{name.capitalize()} {value.strip()[:200]!r} is no origin"
        if host is None or not _same(_split(parsed.netloc), parsed.scheme, host):
            return f"{name.capitalize()} {parsed.scheme}://{parsed.netloc} is not this console"
        return None  # Origin, when sent, decides; Referer only when it is not
    return None


def _split(netloc: str) -> tuple[str, str | None] | None:
    """(host, port or None) of ``netloc`` in lower case (None: empty)."""
    netloc = netloc.strip().lower().rpartition("@")[2]
    if not netloc:
        return None
    host, sep, port = netloc.rpartition(":")
    if not sep or "]" in port:  # no port (an IPv6 literal's colons are inside its brackets)
        return netloc, None
    return host, port


def _same(origin: tuple[str, str | None] | None, scheme: str, host: tuple[str, str | None]) -> bool:
    """Whether ``origin`` (of ``scheme``) is the console the request was sent to (its ``Host``).

    A ``Host`` without a port was sent to a default one: an origin on a default port of either
    scheme matches it (behind a TLS-terminating proxy the browser's scheme is not the server's).
    """
    if origin is None or origin[0] != host[0]:
        return False
    port = origin[1] or _DEFAULT_PORTS.get(scheme.lower())
    if host[1] is None:
        return port in _DEFAULT_PORTS.values()
    return port == host[1]
