"""Test certificates made with the openssl CLI: a CA, a server certificate for 127.0.0.1 and
localhost, a client certificate, a second CA nobody trusts, and a JKS truststore (keytool)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

TRUSTSTORE_PASSWORD = "changeit-truststore"


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    #: A client certificate signed by a CA the server does not know.
    stranger_cert: Path
    stranger_key: Path
    truststore: Path


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(directory: Path, name: str) -> None:
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
         "-keyout", f"{name}.key", "-out", f"{name}.pem",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         cwd=directory)


def _leaf(directory: Path, name: str, ca: str, extensions: str) -> None:
    (directory / f"{name}.ext").write_text(extensions)
    _run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
         "-out", f"{name}.csr", cwd=directory)
    _run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
         "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext", cwd=directory)
    (directory / f"{name}.key").chmod(0o600)


def make_certs(directory: Path, truststore: bool = False) -> Certs:
    """Everything in ``directory`` (made if missing); ``truststore``: also the JKS truststore."""
    directory.mkdir(parents=True, exist_ok=True)
    _ca(directory, "ca")
    _ca(directory, "stranger-ca")
    # Both purposes: a daemon's refresh jobs show its server certificate back under mutual TLS.
    _leaf(directory, "server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
          "extendedKeyUsage=serverAuth,clientAuth\n")
    _leaf(directory, "client", "ca", "extendedKeyUsage=clientAuth\n")
    _leaf(directory, "stranger", "stranger-ca", "extendedKeyUsage=clientAuth\n")
    store = directory / "truststore.jks"
    if truststore:
        _run("keytool", "-importcert", "-noprompt", "-alias", "catalogd-ca", "-file", "ca.pem", "-keystore",
             str(store), "-storetype", "JKS", "-storepass", TRUSTSTORE_PASSWORD, cwd=directory)
    return Certs(ca=directory / "ca.pem", server_cert=directory / "server.pem", server_key=directory / "server.key",
                 client_cert=directory / "client.pem", client_key=directory / "client.key",
                 stranger_cert=directory / "stranger.pem", stranger_key=directory / "stranger.key",
                 truststore=store)
