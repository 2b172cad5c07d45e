"""An hmsclient-style kerberized HMS client, run as its own process: Thrift's ``TSaslClientTransport``
(pure-sasl's GSSAPI over pykerberos, as Python HMS clients such as hmsclient and PyHive use it).

Its own process because the Kerberos library reads ``KRB5_CONFIG`` and the ticket cache
(``KRB5CCNAME``) from the environment: each test client runs with its own.

With QOP ``digest:TOKEN`` it authenticates with SASL DIGEST-MD5 and the delegation token TOKEN instead,
as Hadoop's clients do (user name: the token identifier in base64, password: its password in base64).

Usage: ``python -m tests.integration.kerberos_client HOST PORT SERVICE_HOST QOP STEPS_JSON [SERVICE [KEY_FILE]]``;
STEPS is a list of ``[method, args...]`` calls made in order on one connection; SERVICE is the service
principal's first part (``catalogd`` when not given; ``hive`` for a metastore); KEY_FILE: an embedded
metastore's key file, its key sent before SASL as catalogd's clients do. Prints one JSON line:
``{"open": error or null, "results": [[ok, value or error text], ...]}``.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from catalogd.hive_idl import ThriftHiveMetastore, ttypes


def _call(client: Any, step: list[Any]) -> Any:
    method, *args = step
    if method == "create_database":
        return client.create_database(ttypes.Database(name=args[0], description="", parameters={}))
    return getattr(client, method)(*args)


def main(argv: list[str]) -> dict[str, Any]:
    host, port, service_host, qop, steps = argv[0], int(argv[1]), argv[2], argv[3], json.loads(argv[4])
    service = argv[5] if len(argv) > 5 else "catalogd"
    sock = TSocket.TSocket(host, port)
    sock.setTimeout(60_000)
    transport: TTransport.TSaslClientTransport
    if qop.startswith("digest:"):
        from catalogd.auth.delegation import decode_token

        identifier, password, _ = decode_token(qop.removeprefix("digest:"))
        transport = TTransport.TSaslClientTransport(
            sock, "default", "", mechanism="DIGEST-MD5", username=base64.b64encode(identifier).decode(),
            password=base64.b64encode(password).decode())
    else:
        transport = TTransport.TSaslClientTransport(sock, service_host, service, mechanism="GSSAPI", qops=[qop])
    try:
        if len(argv) > 6:
            from pathlib import Path

            from catalogd.metastore.access_key import file_key, send_key

            sock.open()
            send_key(sock.handle, file_key(Path(argv[6])))
            # thrift's TSocket.isOpen() peeks, and closes a socket its peer has closed; the SASL
            # transport's open() then connects again, without the key (from this OS user, which
            # the metastore serves). A connection the key check refused must fail, not be remade.
            sock.isOpen = lambda: sock.handle is not None  # type: ignore[method-assign]
        transport.open()
    except Exception as e:
        return {"open": f"{type(e).__name__}: {e}", "results": []}
    client = ThriftHiveMetastore.Client(TBinaryProtocol(transport))
    results: list[list[Any]] = []
    try:
        for step in steps:
            try:
                value = _call(client, step)
                results.append([True, value if isinstance(value, str | list | int | type(None)) else str(value)])
            except ttypes.MetaException as e:
                results.append([False, e.message])
            except Exception as e:
                results.append([False, f"{type(e).__name__}: {e}"])
                break
    finally:
        transport.close()
    return {"open": None, "results": results}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
