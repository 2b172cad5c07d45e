"""No client disables another by failing to authenticate (issue 31, row 5).

A flood of wrong tokens from 127.0.0.1 (every refresh job of a daemon runs there) once locked the
address out on every port: the refresh job's own token was refused ("too many failed
authentications") and the refresh failed; eight wrong console sign-ins from anywhere ended an
admin's session and refused the admin's token. The back-off is now per address and token (or
certificate) tried: during the flood a correct token is taken on the Thrift API and HTTP, a client
certificate on the HMS endpoint, an admin's console session goes on and the admin can sign in
again, while one wrong token sent again and again from the flooding address is still held back.

One daemon of its own (a memory catalog: no metastore JVM, a few seconds), with mutual TLS so that
the HMS endpoint proves a connection's principal by its certificate.
"""

from __future__ import annotations

import http.client
import ssl
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from certs import Certs, make_certs
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport import TSSLSocket, TTransport

from catalogd.auth.throttle import THROTTLED
from catalogd.client import CatalogClient
from catalogd.errors import PermissionDeniedError
from catalogd.hive_idl import ThriftHiveMetastore

pytestmark = pytest.mark.integration

ETL = "etl-token-0123456789abcdef-B2"
ADMIN = "admin-token-0123456789abcdef-C3"
#: Needs a token: a refresh job's status (404: the token was taken, the job is just not there).
ROUTE = "/v3/dynamic-tables/refresh/nope"
#: Wrong tokens sent to each of HTTP, the console and the Thrift API.
FLOOD = 30


def _context(certs: Certs) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs.ca))
    context.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    return context


def _request(daemon: Any, context: ssl.SSLContext, method: str, path: str, headers: dict[str, str] | None = None,
             body: str | None = None) -> tuple[int, str, dict[str, str]]:
    host, port = daemon.http.removeprefix("https://").rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), timeout=60, context=context)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read().decode(), {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def _get(daemon: Any, context: ssl.SSLContext, token: str) -> tuple[int, str]:
    status, body, _ = _request(daemon, context, "GET", ROUTE, {"Authorization": f"Bearer {token}"})
    return status, body


def _sign_in(daemon: Any, context: ssl.SSLContext, token: str) -> tuple[int, str | None]:
    """The status of a console sign-in, and the session cookie it set."""
    form = urllib.parse.urlencode({"token": token, "next": "/ui/health"})
    status, _, headers = _request(daemon, context, "POST", "/ui/login",
                                  {"Content-Type": "application/x-www-form-urlencoded"}, form)
    cookie = headers.get("set-cookie")
    return status, cookie.split(";", 1)[0] if cookie else None


def _thrift(daemon: Any, certs: Certs, token: str) -> CatalogClient:
    return CatalogClient(daemon.address, timeout=60, token=token, tls_ca=str(certs.ca),
                         tls_cert=str(certs.client_cert), tls_key=str(certs.client_key))


def _hms_databases(daemon: Any, context: ssl.SSLContext) -> list[str]:
    sock = TSSLSocket.TSSLSocket("127.0.0.1", daemon.hms_address[1], ssl_context=context,
                                 server_hostname="127.0.0.1")
    sock.setTimeout(60_000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        return list(ThriftHiveMetastore.Client(TBinaryProtocol(transport)).get_all_databases())
    finally:
        transport.close()


def test_a_flood_of_wrong_tokens_refuses_no_correct_credential_on_any_port(daemon_factory, tmp_path: Path) -> None:
    certs = make_certs(tmp_path / "certs")
    auth = {"enabled": True,
            "principals": [{"name": "etl", "token": ETL}, {"name": "admin", "token": ADMIN}, {"name": "client"}],
            "grants": [{"principal": "etl", "catalog": "*", "role": "writer"},
                       {"principal": "admin", "catalog": "*", "role": "admin"},
                       {"principal": "client", "catalog": "*", "role": "reader"}],
            # A back-off far longer than the test: on main, a correct token refused during the
            # flood stays refused until the end.
            "throttle": {"free-attempts": 3, "base-delay": "1min", "max-delay": "10min"},
            "audit": {"denial-window": "1 min"}}
    tls = {"cert": str(certs.server_cert), "key": str(certs.server_key), "client-ca": str(certs.ca)}
    daemon = daemon_factory(name="backoff", catalogs=[{"name": "scratch", "type": "memory", "default": True}],
                            extra={"auth": auth, "server": {"tls": tls}})
    context = _context(certs)
    with _thrift(daemon, certs, ADMIN) as admin_client:
        admin_client.create_database("scratch.backoff_db")
    status, admin_cookie = _sign_in(daemon, context, ADMIN)
    assert status == 303 and admin_cookie

    # The flood, all from 127.0.0.1: distinct wrong tokens on HTTP, the console and the Thrift API.
    for n in range(FLOOD):
        assert _get(daemon, context, f"wrong-token-{n:020d}")[0] == 401
        assert _sign_in(daemon, context, f"wrong-console-{n:020d}") == (401, None)
        with pytest.raises(PermissionDeniedError), _thrift(daemon, certs, f"wrong-thrift-{n:020d}") as c:
            c.ping()

    # Correct credentials from the same address, during the flood: taken on every port.
    assert _get(daemon, context, ETL)[0] == 404
    with _thrift(daemon, certs, ETL) as etl:
        assert etl.ping()
        assert "backoff_db" in etl.list_databases("scratch")
    assert "backoff_db" in _hms_databases(daemon, context)  # the certificate's principal, "client"
    status, body, _ = _request(daemon, context, "GET", "/ui/health", {"Cookie": admin_cookie})
    assert status == 200, body[:300]  # the admin's console session goes on
    assert _sign_in(daemon, context, ADMIN)[0] == 303  # and the admin can sign in again

    # One wrong token sent again and again from that address is still held back, unchecked.
    answers = [_get(daemon, context, "the-same-guess-0123456789") for _ in range(5)]
    assert all(status == 401 for status, _ in answers)
    assert THROTTLED in answers[-1][1], answers
    assert _get(daemon, context, ETL)[0] == 404  # and still does not hold back the right one

    log = daemon.log_path.read_text()
    assert ETL not in log and ADMIN not in log
