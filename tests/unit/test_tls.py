"""TLS on the Thrift server and the HMS endpoint's server, in-process, with certificates made by openssl.

Real sockets throughout: a TLS client, a plaintext client against the TLS port, a client that
connects and never starts its handshake, mutual TLS with and without a client certificate.
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from certs import Certs, make_certs
from polling import wait_until
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport import TSocket, TSSLSocket, TTransport

from catalogd.client import CatalogClient
from catalogd.config import TlsConfig
from catalogd.errors import InvalidArgumentError, ServerUnavailableError
from catalogd.gen.catalogd_thrift import CatalogService
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hms.server import ClientConnection, HmsServer
from catalogd.metastore.messages import REPLY, Message, encode
from catalogd.server.thrift_server import ThriftServer
from catalogd.tls import client_context, server_context

DEADLINE = 30.0


class Echo:
    def ping(self) -> str:
        return "pong"

    def listDatabases(self, catalog: str) -> list[str]:  # the generated interface names it so
        if catalog == "big":
            return [f"database_{i:08d}" for i in range(100_000)]  # a reply of MiBs: many TLS records
        return [catalog]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def thrift(certs: Certs) -> Iterator[Any]:
    started: list[ThriftServer] = []

    def start(client_ca: Path | None = None, **limits: Any) -> ThriftServer:
        context = server_context(certs.server_cert, certs.server_key, client_ca)
        server = ThriftServer(CatalogService.Processor(Echo()), "127.0.0.1", 0, 4 << 20, 4, ssl_context=context,
                              **limits)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.shutdown(grace=2)


def _alive(sock: socket.socket) -> bool:
    sock.settimeout(DEADLINE)
    try:
        return sock.recv(1) != b""
    except OSError:
        return False


# ---------------------------------------------------------------- the Thrift API


def test_calls_over_tls_share_one_connection_and_carry_large_frames(thrift, certs: Certs) -> None:
    server = thrift()
    with CatalogClient(f"127.0.0.1:{server.port}", timeout=DEADLINE, tls_ca=str(certs.ca)) as client:
        assert client.ping() == "pong"
        first = client._socket
        big_name = "x" * 300_000  # a request frame of many TLS records: read past what select sees
        assert client._call(lambda c: c.listDatabases(big_name)) == [big_name]
        assert len(client._call(lambda c: c.listDatabases("big"))) == 100_000
        for _ in range(20):
            assert client.ping() == "pong"
        assert client._socket is first  # never taken for closed (no session ticket arrives unasked)
    wait_until(lambda: server.stats()["connections"] == 0, DEADLINE, what="the connection to close")


def test_a_plaintext_client_is_closed_and_the_server_serves_on(thrift, certs: Certs) -> None:
    server = thrift()
    with CatalogClient(f"127.0.0.1:{server.port}", timeout=DEADLINE) as plain, \
            pytest.raises(ServerUnavailableError):
        plain.ping()
    with CatalogClient(f"127.0.0.1:{server.port}", timeout=DEADLINE, tls_ca=str(certs.ca)) as client:
        assert client.ping() == "pong"


def test_a_server_certificate_from_another_ca_is_refused_by_the_client(thrift, certs: Certs) -> None:
    server = thrift()
    address = f"127.0.0.1:{server.port}"
    with CatalogClient(address, timeout=DEADLINE, tls_ca=str(certs.stranger_cert)) as client, \
            pytest.raises(ServerUnavailableError, match="TLS handshake failed"):
        client.ping()


def test_a_handshake_must_finish_within_the_frame_timeout(thrift) -> None:
    server = thrift(frame_timeout=0.5, idle_timeout=300.0)
    with socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE) as sock:
        assert not _alive(sock)  # closed by the server long before the idle timeout


def test_mutual_tls_refuses_a_client_without_a_certificate_or_with_a_stranger(thrift, certs: Certs) -> None:
    server = thrift(client_ca=certs.ca)
    address = f"127.0.0.1:{server.port}"
    for extra in ({}, {"tls_cert": str(certs.stranger_cert), "tls_key": str(certs.stranger_key)}):
        with CatalogClient(address, timeout=DEADLINE, tls_ca=str(certs.ca), **extra) as client, \
                pytest.raises(ServerUnavailableError):
            client.ping()
    with CatalogClient(address, timeout=DEADLINE, tls_ca=str(certs.ca), tls_cert=str(certs.client_cert),
                       tls_key=str(certs.client_key)) as client:
        assert client.ping() == "pong"


def test_the_client_reads_its_tls_files_from_the_environment(thrift, certs: Certs,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    server = thrift(client_ca=certs.ca)
    monkeypatch.setenv("CATALOGD_TLS_CA", str(certs.ca))
    monkeypatch.setenv("CATALOGD_TLS_CERT", str(certs.client_cert))
    monkeypatch.setenv("CATALOGD_TLS_KEY", str(certs.client_key))
    with CatalogClient(f"127.0.0.1:{server.port}", timeout=DEADLINE) as client:
        assert client.ping() == "pong"


def test_a_refresh_job_trusts_exactly_its_daemons_certificate(thrift, certs: Certs) -> None:
    server = thrift(client_ca=certs.ca)
    # As catalogd.dynamic.job builds it: the server certificate pinned, and shown back as the client's.
    context = client_context(certs.server_cert, certs.server_cert, certs.server_key, pinned=True)
    with CatalogClient(f"localhost:{server.port}", timeout=DEADLINE, tls_context=context) as client:
        assert client.ping() == "pong"


def test_bad_tls_files_are_clear_errors(certs: Certs, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="cannot load the TLS certificate"):
        server_context(certs.ca, certs.server_key)  # the CA's certificate with the server's key
    with pytest.raises(InvalidArgumentError, match="needs its certificate"):
        client_context(certs.ca, None, certs.client_key)
    with pytest.raises(InvalidArgumentError, match="CA file"):
        client_context(tmp_path / "missing.pem")


# ---------------------------------------------------------------- config


def test_the_config_checks_the_files(certs: Certs, tmp_path: Path) -> None:
    TlsConfig.model_validate({"cert": str(certs.server_cert), "key": str(certs.server_key),
                              "client-ca": str(certs.ca)})
    with pytest.raises(ValueError, match=r"missing\.pem"):
        TlsConfig.model_validate({"cert": str(tmp_path / "missing.pem"), "key": str(certs.server_key)})
    open_key = tmp_path / "open.key"
    open_key.write_bytes(certs.server_key.read_bytes())
    open_key.chmod(0o644)
    with pytest.raises(ValueError, match="readable by group or others"):
        TlsConfig.model_validate({"cert": str(certs.server_cert), "key": str(open_key)})
    if os.geteuid() != 0:  # root reads any file
        unreadable = tmp_path / "unreadable.pem"
        unreadable.write_bytes(certs.ca.read_bytes())
        unreadable.chmod(0)
        with pytest.raises(ValueError, match="cannot be read"):
            TlsConfig.model_validate({"cert": str(certs.server_cert), "key": str(certs.server_key),
                                      "client-ca": str(unreadable)})


def test_the_config_names_where_the_truststore_password_is_and_never_holds_it(certs: Certs) -> None:
    files = {"cert": str(certs.server_cert), "key": str(certs.server_key)}
    assert TlsConfig.model_validate(files).truststore_password_env == "CATALOGD_TRUSTSTORE_PASSWORD"
    assert TlsConfig.model_validate({**files, "truststore-password-env": "TS_PW"}).truststore_password_env == "TS_PW"
    with pytest.raises(ValueError, match="truststore-password-env"):
        TlsConfig.model_validate({**files, "truststore-password-env": "not a name"})
    # The key of the first release is refused with the way out, and the password is not echoed.
    with pytest.raises(ValueError, match="no longer read") as refused:
        TlsConfig.model_validate({**files, "truststore-password": "pw-123456"})
    assert "pw-123456" not in str(refused.value)


# ---------------------------------------------------------------- the HMS endpoint's server


def _answer(conn: ClientConnection, message: Message) -> bytes:
    return encode(message.name, REPLY, message.seqid,
                  ThriftHiveMetastore.get_all_databases_result(success=["framed" if conn.framed else "buffered"]))


@pytest.fixture
def hms(certs: Certs) -> Iterator[HmsServer]:
    server = HmsServer(_answer, "127.0.0.1", 0, idle_timeout=300.0, frame_timeout=0.5,
                       ssl_context=server_context(certs.server_cert, certs.server_key))
    server.start()
    yield server
    server.shutdown(2.0)


def _hms_client(port: int, certs: Certs, framed: bool) -> tuple[Any, TTransport.TTransportBase]:
    context = ssl.create_default_context(cafile=str(certs.ca))
    sock = TSSLSocket.TSSLSocket("127.0.0.1", port, ssl_context=context, server_hostname="127.0.0.1")
    sock.setTimeout(DEADLINE * 1000)
    transport = TTransport.TFramedTransport(sock) if framed else TTransport.TBufferedTransport(sock)
    transport.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol(transport)), transport


def test_the_hms_server_serves_buffered_and_framed_clients_over_tls(hms: HmsServer, certs: Certs) -> None:
    for framed in (False, True):
        client, transport = _hms_client(hms.port, certs, framed)
        try:
            for _ in range(3):
                assert client.get_all_databases() == ["framed" if framed else "buffered"]
        finally:
            transport.close()


def test_the_hms_server_closes_a_plaintext_or_silent_client_and_serves_on(hms: HmsServer, certs: Certs) -> None:
    sock = TSocket.TSocket("127.0.0.1", hms.port)
    sock.setTimeout(DEADLINE * 1000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        with pytest.raises((TTransport.TTransportException, OSError, EOFError)):
            ThriftHiveMetastore.Client(TBinaryProtocol(transport)).get_all_databases()
    finally:
        transport.close()
    with socket.create_connection(("127.0.0.1", hms.port), timeout=DEADLINE) as silent:
        assert not _alive(silent)  # no handshake within the frame timeout
    client, transport = _hms_client(hms.port, certs, framed=False)
    try:
        assert client.get_all_databases() == ["buffered"]
    finally:
        transport.close()


# ---------------------------------------------------------------- what Spark is told


def test_spark_conf_has_the_hive_ssl_settings_when_the_endpoint_uses_tls() -> None:
    from catalogd import wire
    from catalogd.model import CatalogInfo
    from catalogd.spark.conf import spark_conf_for

    plain = CatalogInfo("main", "hive", hms_endpoint="thrift://h:9083")
    assert not any("SSL" in key or "truststore" in key for key in spark_conf_for(plain))
    info = CatalogInfo("main", "hive", hms_endpoint="thrift://h:9083", hms_tls=True,
                       hms_truststore="/etc/catalogd/truststore.jks", hms_truststore_password_env="TS_PASSWORD")
    info = wire.catalog_from_thrift(wire.catalog_to_thrift(info))  # as it travels to the CLI
    conf = spark_conf_for(info)
    assert conf["spark.hadoop.hive.metastore.use.SSL"] == "true"
    assert conf["spark.hadoop.hive.metastore.truststore.path"] == "/etc/catalogd/truststore.jks"
    # Where the password is, for Hadoop's Configuration to expand in the client: never the password.
    assert conf["spark.hadoop.hive.metastore.truststore.password"] == "${env.TS_PASSWORD}"
