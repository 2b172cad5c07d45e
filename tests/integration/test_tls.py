"""TLS on every port of a real daemon, with certificates the test makes (openssl, keytool).

Mutual TLS on the Thrift API (client and CLI) and HTTP; a plaintext client against a TLS port
fails and the daemon serves on; the HMS endpoint over TLS for hmsclient (thrift's TSSLSocket)
and for a Spark application of its own (a second JVM) configured by ``catalogd spark-conf --hms-only``.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import time
import urllib.error
from pathlib import Path
from typing import Any

import pytest
from certs import TRUSTSTORE_PASSWORD, Certs, make_certs
from polling import wait_until
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport import TSocket, TSSLSocket, TTransport
from thrift.transport.TTransport import TTransportException

from catalogd.client import CatalogClient
from catalogd.errors import ServerUnavailableError
from catalogd.hive_idl import ThriftHiveMetastore

from .helpers import CATALOGD, SparkChild, clean_env, closed_by_server, http_get, metastore_key_file

pytestmark = pytest.mark.integration

MEMORY = [{"name": "scratch", "type": "memory", "default": True}]


def _tls(certs: Certs, mutual: bool) -> dict[str, Any]:
    section: dict[str, Any] = {"cert": str(certs.server_cert), "key": str(certs.server_key),
                               "truststore": str(certs.truststore)}
    if mutual:
        section["client-ca"] = str(certs.ca)
    return {"server": {"tls": section}}


def _cli(daemon: Any, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CATALOGD), "--server", daemon.address, *args], capture_output=True, text=True,
                          timeout=120, env={**clean_env(), **(env or {})})


def _hms(port: int, certs: Certs | None, client_cert: bool = False) -> tuple[Any, TTransport.TTransportBase]:
    if certs is None:
        sock: TSocket.TSocket = TSocket.TSocket("127.0.0.1", port)
    else:
        context = ssl.create_default_context(cafile=str(certs.ca))
        if client_cert:
            context.load_cert_chain(str(certs.client_cert), str(certs.client_key))
        sock = TSSLSocket.TSSLSocket("127.0.0.1", port, ssl_context=context, server_hostname="127.0.0.1")
    sock.setTimeout(60_000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol(transport)), transport


def test_mutual_tls_on_the_api_and_http_and_tls_on_the_hms_endpoint(daemon_factory, tmp_path: Path):
    certs = make_certs(tmp_path / "certs", truststore=True)
    daemon = daemon_factory(name="mtls", catalogs=MEMORY, extra=_tls(certs, mutual=True))
    mine = {"tls_ca": str(certs.ca), "tls_cert": str(certs.client_cert), "tls_key": str(certs.client_key)}

    with CatalogClient(daemon.address, timeout=60, **mine) as client:
        client.create_database("scratch.tls_db")
        assert "tls_db" in client.list_databases("scratch")

    # No client certificate, one from a CA the daemon does not trust, or no TLS at all: refused.
    for kwargs in ({"tls_ca": str(certs.ca)},
                   {"tls_ca": str(certs.ca), "tls_cert": str(certs.stranger_cert), "tls_key": str(certs.stranger_key)},
                   {}):
        with CatalogClient(daemon.address, timeout=60, **kwargs) as client, pytest.raises(ServerUnavailableError):
            client.ping()
    assert daemon.proc.poll() is None

    # The CLI: flags, or the environment.
    flags = ["--tls-ca", str(certs.ca), "--tls-cert", str(certs.client_cert), "--tls-key", str(certs.client_key)]
    done = _cli(daemon, *flags, "db", "list", "scratch")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "tls_db" in done.stdout
    env = {"CATALOGD_TLS_CA": str(certs.ca), "CATALOGD_TLS_CERT": str(certs.client_cert),
           "CATALOGD_TLS_KEY": str(certs.client_key)}
    assert _cli(daemon, "db", "list", "scratch", env=env).returncode == 0
    refused = _cli(daemon, "--tls-ca", str(certs.ca), "db", "list", "scratch")
    assert refused.returncode == 1 and refused.stderr.startswith("error: server-unavailable: "), refused.stderr

    # HTTP: https with a client certificate; without one, or plain http, no answer.
    assert daemon.http.startswith("https://")
    with_cert = ssl.create_default_context(cafile=str(certs.ca))
    with_cert.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    assert http_get(f"{daemon.http}/healthz", context=with_cert)[0] == 200
    status, body = http_get(f"{daemon.http}/metrics", context=with_cert)
    assert status == 200 and "catalogd_" in body
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        http_get(f"{daemon.http}/healthz", context=ssl.create_default_context(cafile=str(certs.ca)))
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        http_get(daemon.http.replace("https://", "http://") + "/healthz")

    # The HMS endpoint, like the other ports: a client certificate is required (its subject is
    # the connection's principal); without one, or without TLS, refused.
    port = daemon.hms_address[1]
    hms, transport = _hms(port, certs, client_cert=True)
    try:
        assert "tls_db" in hms.get_all_databases()  # the default catalog's databases keep their names
    finally:
        transport.close()
    for refused_certs in (certs, None):
        refused_hms, transport = _hms(port, refused_certs)
        try:
            with pytest.raises((TTransport.TTransportException, OSError, EOFError, ssl.SSLError)):
                refused_hms.get_all_databases()
        finally:
            transport.close()

    # Still serving after every refusal.
    with CatalogClient(daemon.address, timeout=60, **mine) as client:
        assert client.ping()
        client.drop_database("scratch.tls_db")
    assert daemon.proc.poll() is None
    log = daemon.log_path.read_text()
    assert "Traceback" not in log  # refusals are not bugs
    assert "PRIVATE KEY" not in log and TRUSTSTORE_PASSWORD not in log


def test_spark_through_the_hms_endpoint_over_tls(daemon_factory, tmp_path: Path, spark):
    certs = make_certs(tmp_path / "certs", truststore=True)
    daemon = daemon_factory(name="tls-spark", extra=_tls(certs, mutual=False))
    with CatalogClient(daemon.address, timeout=120, tls_ca=str(certs.ca)) as client:
        client.create_database("main.tls_spark")
        client.create_table("main.tls_spark.t", "id int")

    # The catalog plugin talks to catalogd's API over TLS too, verifying it with the same CA.
    done = _cli(daemon, "--tls-ca", str(certs.ca), "spark-conf", "main")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    conf = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert conf["spark.sql.catalog.main"] == "catalogd.spark.CatalogdCatalog"
    assert (conf["spark.sql.catalog.main.tls"], conf["spark.sql.catalog.main.truststore"]) == ("true", str(certs.ca))
    assert TRUSTSTORE_PASSWORD not in done.stdout
    # ... and the plugin verifies catalogd's certificate with that PEM file (the shared Spark
    # application, a session of its own with the printed options).
    plugin = spark.newSession()
    plugin.conf.set("spark.sql.catalog.tls_main", conf["spark.sql.catalog.main"])
    plugin.conf.set("spark.sql.catalog.tls_main.catalog", "main")
    for option in ("address", "tls", "truststore"):
        plugin.conf.set(f"spark.sql.catalog.tls_main.{option}", conf[f"spark.sql.catalog.main.{option}"])
    assert [row[1] for row in plugin.sql("SHOW TABLES IN tls_main.tls_spark").collect()] == ["t"]

    # Unmodified Spark on the endpoint: the HMS settings alone.
    done = _cli(daemon, "--tls-ca", str(certs.ca), "spark-conf", "main", "--hms-only")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    conf = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert conf["spark.hadoop.hive.metastore.uris"] == daemon.hms_uri
    assert conf["spark.hadoop.hive.metastore.use.SSL"] == "true"
    assert conf["spark.hadoop.hive.metastore.truststore.path"] == str(certs.truststore)
    # Not the password (the daemon never has it): where the client finds it, which Hadoop's
    # Configuration expands in Spark's driver from its environment.
    assert conf["spark.hadoop.hive.metastore.truststore.password"] == "${env.CATALOGD_TRUSTSTORE_PASSWORD}"
    assert TRUSTSTORE_PASSWORD not in done.stdout

    # Without the SSL settings the same Spark configuration cannot talk to the endpoint. Both
    # applications start at once (their JVMs' start is most of this test), each its own JVM.
    plain = {k: v for k, v in conf.items() if "SSL" not in k and "truststore" not in k}
    plain["spark.hadoop.hive.metastore.connect.retries"] = "1"
    plain["spark.hadoop.hive.metastore.client.socket.timeout"] = "10s"
    child = SparkChild.start(tmp_path / "child.py", conf,
                             env={**clean_env(), "CATALOGD_TRUSTSTORE_PASSWORD": TRUSTSTORE_PASSWORD})
    try:
        plain_child = SparkChild.start(tmp_path / "plain-child.py", plain)
        try:
            assert child.answer() == {"ready": True}
            assert child.sql("INSERT INTO tls_spark.t VALUES (1), (2)") == {"rows": []}
            assert child.sql("SELECT count(*) FROM tls_spark.t") == {"rows": [[2]]}
            assert child.sql("SHOW TABLES IN tls_spark")["rows"] == [["tls_spark", "t", False]]

            assert plain_child.answer() == {"ready": True}
            assert "error" in plain_child.sql("SELECT count(*) FROM tls_spark.t")
        finally:
            plain_child.proc.kill()
            plain_child.proc.wait()
    finally:
        child.proc.kill()
        child.proc.wait()
    assert daemon.proc.poll() is None


def test_a_refresh_job_reaches_its_daemon_under_mutual_tls(daemon_factory, daemon, unique_name, tmp_path: Path):
    from catalogd.model import RunStatus

    certs = make_certs(tmp_path / "certs", truststore=True)
    # Its catalog is a remote one on the session daemon's metastore: what is under test is the
    # job's way back to its daemon (API and HMS endpoint, both mutual TLS), not a metastore of
    # its own (test_spark_through_the_hms_endpoint_over_tls runs an embedded one behind TLS).
    with CatalogClient(daemon.address) as session:
        metastore = session.get_catalog("main").metastore or ""
    main = {"name": "main", "type": "hive", "default": True, "connection": {"hive.metastore.uris": metastore},
            "metastore-key-file": str(metastore_key_file(daemon.data_dir))}
    tls_daemon = daemon_factory(name="tls-dt", catalogs=[main], extra=_tls(certs, mutual=True))
    mine = {"tls_ca": str(certs.ca), "tls_cert": str(certs.client_cert), "tls_key": str(certs.client_key)}
    db = unique_name("tls_dt")
    with CatalogClient(tls_daemon.address, timeout=300, **mine) as client:
        client.create_database(f"main.{db}")
        client.create_table(f"main.{db}.src", "id int")
        client.create_dynamic_table(f"main.{db}.copy", f"SELECT id FROM {db}.src", "1 day")
        # The initial refresh runs at once, in a job that talks to the daemon over TLS.
        history = wait_until(lambda: [r for r in client.dynamic_table_history(f"main.{db}.copy") if r.status.finished],
                             600, "the initial refresh", every=0.25)
        assert history[0].status is RunStatus.SUCCEEDED, history[0]
        client.drop_dynamic_table(f"main.{db}.copy")
        client.drop_database(f"main.{db}", cascade=True)


def test_a_client_certificate_is_the_hms_connection_s_principal(daemon_factory, tmp_path: Path):
    from catalogd.auth.audit import read_audit
    from catalogd.hive_idl import ttypes

    certs = make_certs(tmp_path / "certs", truststore=True)
    extra = _tls(certs, mutual=True)
    extra["auth"] = {"enabled": True, "principals": [{"name": "client"}, {"name": "ops"}],
                     "grants": [{"principal": "client", "catalog": "*", "role": "writer"},
                                {"principal": "ops", "catalog": "*", "role": "admin"}]}
    daemon = daemon_factory(name="mtls-id", catalogs=MEMORY, extra=extra)
    hms, transport = _hms(daemon.hms_address[1], certs, client_cert=True)
    try:
        hms.create_database(ttypes.Database(name="cert_db", description="", parameters={}))
        # set_ugi to oneself is harmless; to ops (admin) refused, and the connection stays "client".
        assert hms.set_ugi("client", []) == []
        with pytest.raises(ttypes.MetaException, match="set_ugi cannot make it 'ops'"):
            hms.set_ugi("ops", [])
        with pytest.raises(ttypes.MetaException, match="user 'client' needs role admin"):
            hms.grant_role("admin", "x", ttypes.PrincipalType.USER, "client", ttypes.PrincipalType.USER, False)
    finally:
        transport.close()
    writes = read_audit(daemon.data_dir / "audit" / "audit.jsonl", 100)
    assert [(e["principal"], e["operation"]) for e in writes if e["operation"] == "create_database"] == [
        ("client", "create_database")]


# ---------------------------------------------------------------- handshakes and the connection cap

#: server.max-connections of the daemon below: each port holds this many connections at most.
CAP = 8


def test_stalled_tls_handshakes_count_against_the_cap_and_are_closed_first(daemon_factory, tmp_path: Path):
    certs = make_certs(tmp_path / "certs")
    # The frame timeout (which would close a stalled handshake anyway) is far beyond the test:
    # what closes the stalled connections here is the cap.
    extra = {"server": {"tls": {"cert": str(certs.server_cert), "key": str(certs.server_key)},
                        "max-connections": CAP, "frame-timeout": "1 h"}}
    daemon = daemon_factory(name="tls-cap", catalogs=MEMORY, extra=extra)
    host, api_port = daemon.address.rsplit(":", 1)
    hms_port = daemon.hms_address[1]
    many = 3 * CAP  # raw TCP connections that never send a ClientHello, per port

    with contextlib.ExitStack() as stack:
        # An established client on each port first: idle and the oldest connection, it would be
        # the one closed at the cap if handshakes were not closed first.
        api = stack.enter_context(CatalogClient(daemon.address, timeout=60, tls_ca=str(certs.ca)))
        assert api.ping()
        hms, transport = _hms(hms_port, certs)
        stack.callback(transport.close)
        assert hms.get_all_databases() == ["default"]

        for port in (int(api_port), hms_port):
            stalled = [stack.enter_context(socket.create_connection((host, port), timeout=60)) for _ in range(many)]
            # A real client still gets in: the cap closes a stalled handshake to make room.
            if port == hms_port:
                # As Hive's client does (hive.metastore.connect.retries), a connection the server
                # closed is tried again: once in a full run the first attempt was the one closed.
                deadline = time.monotonic() + 60
                while True:
                    try:
                        fresh, fresh_transport = _hms(hms_port, certs)
                        try:
                            databases = fresh.get_all_databases()
                        finally:
                            fresh_transport.close()
                        break
                    except (TTransportException, OSError):
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.5)
                assert databases == ["default"]
            else:
                with CatalogClient(daemon.address, timeout=60, tls_ca=str(certs.ca)) as fresh_api:
                    assert fresh_api.ping()
            # Handshakes count against the cap: with the established client and the newest
            # stalled ones holding it, every earlier stalled connection was closed, oldest first.
            for sock in stalled[:many - (CAP - 2)]:
                assert closed_by_server(sock, 60)

        # The established clients were not the ones closed.
        assert api.ping()
        assert hms.get_all_databases() == ["default"]
    assert daemon.proc.poll() is None
    assert "Traceback" not in daemon.log_path.read_text()
