"""The HMS endpoint's proof of a client certificate is not refused by wrong tokens sent to the other ports
from the same address (one Throttle serves every port); a certificate that keeps failing is held back."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from catalogd.auth.model import Authority
from catalogd.auth.throttle import Throttle
from catalogd.errors import PermissionDeniedError
from catalogd.hms.identity import EndpointAuth
from catalogd.hms.sasl import SaslError
from catalogd.hms.server import ClientConnection
from catalogd.server.access import Access


def _config() -> Any:
    auth = SimpleNamespace(kerberos=None, certificate_rules=[r"CN=([^,]+).* -> \1"], enabled=True)
    return SimpleNamespace(auth=auth, server=SimpleNamespace(tls=SimpleNamespace(client_ca="ca.pem")))


def _cert(name: str) -> dict[str, object]:
    return {"subject": ((("commonName", name),),)}


def _no_io(_: int) -> bytes:
    raise AssertionError("no SASL without Kerberos")


def test_a_certificate_is_proven_while_wrong_tokens_flood_the_other_ports_from_its_address() -> None:
    throttle = Throttle(free=2, base=60.0, max_delay=600.0)
    access = Access(Authority(True, {"etl": "etl-token-0123456789abcdef"}), None, lambda: "main", lambda: ["main"],
                    throttle=throttle)
    for n in range(50):
        with pytest.raises(PermissionDeniedError):
            access.authenticate(f"wrong-token-{n:020d}", f"127.0.0.1:{30000 + n}")
    auth = EndpointAuth(_config(), lambda name: name in {"client", "etl"}, throttle=throttle)
    conn = ClientConnection(peer="127.0.0.1:40000")
    assert auth(conn, _cert("client"), _no_io, lambda _: None) is None
    assert conn.identity == ("client", ()) and conn.proven == "certificate"


def test_a_certificate_of_no_known_principal_is_held_back_after_its_free_failures() -> None:
    throttle = Throttle(free=2, base=60.0, max_delay=600.0)
    auth = EndpointAuth(_config(), lambda name: name == "client", throttle=throttle)
    for _ in range(3):
        with pytest.raises(SaslError, match="not a configured principal"):
            auth(ClientConnection(peer="10.0.0.9:1"), _cert("mallory"), _no_io, lambda _: None)
    with pytest.raises(SaslError, match="too many failed authentications"):
        auth(ClientConnection(peer="10.0.0.9:2"), _cert("mallory"), _no_io, lambda _: None)
    conn = ClientConnection(peer="10.0.0.9:3")
    auth(conn, _cert("client"), _no_io, lambda _: None)
    assert conn.identity == ("client", ())
