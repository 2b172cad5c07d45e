"""Kerberos on the HMS endpoint against a real MIT KDC: SASL GSSAPI clients act as their ticket's principal.

One daemon (a memory default catalog: no metastore to start) with ``auth.kerberos``; clients are
hmsclient-style Thrift SASL clients (``kerberos_client``), each in its own process with its own
ticket cache.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from catalogd.auth.audit import read_audit
from catalogd.auth.delegation import _vlong, decode_token, encode_token
from catalogd.hive_idl import ThriftHiveMetastore

from .helpers import CATALOGD, SparkChild, clean_env, free_port, start_daemon, write_config
from .kdc import Kdc

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "catalogd/localhost"
ALICE_TOKEN = "alice-token-0123456789abcdef-A1"


def _client(kdc: Kdc, ccache: Path, port: int, steps: list[list[Any]], qop: str = "auth") -> dict[str, Any]:
    env = {**clean_env(), **kdc.env(ccache)}
    done = subprocess.run([sys.executable, "-m", "tests.integration.kerberos_client", "127.0.0.1", str(port),
                           "localhost", qop, json.dumps(steps)], capture_output=True, text=True, timeout=120,
                          env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


@pytest.fixture(scope="module")
def kerberized(kdc: Kdc, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One kerberized daemon for the module's tests (each uses databases of its own)."""
    root = tmp_path_factory.mktemp("kerberized")
    keytab = root / "catalogd.keytab"
    kdc.add_principal(SERVICE, keytab)
    tickets = {}
    for user in ("alice", "bob", "mallory"):
        user_keytab = root / f"{user}.keytab"
        principal = kdc.add_principal(user, user_keytab)
        ccache = root / f"{user}.ccache"
        kdc.kinit(principal, user_keytab, ccache)
        tickets[user] = ccache
    auth = {"enabled": True,
            "principals": [{"name": "alice", "token": ALICE_TOKEN}, {"name": "bob"}],
            "grants": [{"principal": "alice", "catalog": "*", "role": "writer"},
                       {"principal": "bob", "catalog": "*", "role": "reader"}],
            "kerberos": {"principal": f"{SERVICE}@{kdc.realm}", "keytab": str(keytab)},
            # This module's clients all come from 127.0.0.1: the back-off is another test's.
            "throttle": {"free-attempts": 1000}}
    config = write_config(root / "krb.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
                          catalogs=[{"name": "scratch", "type": "memory", "default": True}], extra={"auth": auth})
    daemon = start_daemon(config, root / "data", root / "krb.log", env=kdc.env())
    try:
        yield {"daemon": daemon, "port": daemon.hms_address[1], "tickets": tickets, "keytabs": root}
    finally:
        daemon.stop()


def test_kerberized_clients_act_as_their_principal_and_no_one_else(kdc: Kdc, kerberized: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    port, tickets, daemon = kerberized["port"], kerberized["tickets"], kerberized["daemon"]

    # alice (writer) writes, over each quality of protection; set_ugi to herself is harmless,
    # to bob refused, and she stays alice.
    alice = _client(kdc, tickets["alice"], port, [
        ["set_ugi", "alice", []], ["create_database", "krb_alice"], ["get_all_databases"],
        ["set_ugi", "bob", []], ["create_database", "krb_still_alice"]])
    assert alice["open"] is None, alice
    results = alice["results"]
    assert results[0] == [True, []]
    assert results[1][0] is True
    assert "krb_alice" in results[2][1]
    assert results[3][0] is False and "set_ugi cannot make it 'bob'" in results[3][1]
    assert results[4][0] is True
    for qop in ("auth-int", "auth-conf"):
        sealed = _client(kdc, tickets["alice"], port, [["get_all_databases"]], qop=qop)
        assert sealed["open"] is None and sealed["results"][0][0] is True, (qop, sealed)

    # bob (reader) reads and may not write; set_ugi to alice does not make him a writer.
    bob = _client(kdc, tickets["bob"], port, [["get_all_databases"], ["create_database", "krb_bob"],
                                             ["set_ugi", "alice", []], ["create_database", "krb_bob"]])
    assert bob["open"] is None
    assert bob["results"][0][0] is True
    assert bob["results"][1][0] is False and "user 'bob' needs role writer" in bob["results"][1][1]
    assert bob["results"][2][0] is False
    assert bob["results"][3][0] is False and "user 'bob'" in bob["results"][3][1]

    # A ticket of a principal catalogd does not know, no ticket at all, or no SASL: refused.
    mallory_line = "Kerberos principal 'mallory@CATALOGD.TEST' maps to 'mallory', not a configured principal"
    deadline = time.monotonic() + 90
    while True:
        mallory = _client(kdc, tickets["mallory"], port, [["get_all_databases"]])
        assert mallory["open"] is not None or mallory["results"][0][0] is False, mallory
        denied = read_audit(daemon.data_dir / "audit" / "audit.jsonl", 1000, denied=True)
        # Once in a full suite run the client failed before it reached the endpoint (nothing to
        # audit); what is asserted is the endpoint's answer to a ticket that reaches it.
        if any(mallory_line in (e["detail"] or "") for e in denied) or time.monotonic() > deadline:
            break
        time.sleep(1)
    nobody = _client(kdc, tmp_path / "empty.ccache", port, [["get_all_databases"]])
    assert nobody["open"] is not None, nobody
    sock = TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(30_000)
    transport = TTransport.TBufferedTransport(sock)
    transport.open()
    try:
        plain = ThriftHiveMetastore.Client(TBinaryProtocol(transport))
        with pytest.raises((TTransport.TTransportException, OSError, EOFError)):
            plain.set_ugi("alice", [])
            plain.get_all_databases()
    finally:
        transport.close()

    # A forged GSSAPI token: refused (BAD), audited, no internal error.
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        raw.sendall(struct.pack(">BI", 1, 6) + b"GSSAPI" + struct.pack(">BI", 2, 12) + b"not-a-ticket")
        assert raw.recv(1) == b"\x03"

    # The audit log: alice's writes under her name; the refusals, mallory's by her mapped name.
    writes = read_audit(daemon.data_dir / "audit" / "audit.jsonl", 1000)
    created = [e for e in writes if e["operation"] == "create_database" and e["outcome"] == "ok"]
    assert {e["principal"] for e in created} == {"alice"}
    expected = [mallory_line, "set_ugi cannot make it 'bob'", "did not start a SASL negotiation",
                "SASL authentication failed: Kerberos:"]

    def audited() -> list[str]:
        # The endpoint answers BAD before it writes the refusal's audit entry: waited for, not raced.
        details = [e["detail"] or "" for e in read_audit(daemon.data_dir / "audit" / "audit.jsonl", 1000,
                                                         denied=True)]
        return [line for line in expected if not any(line in d for d in details)]

    with contextlib.suppress(AssertionError):
        wait_until(lambda: not audited(), 30, what="every refusal in the audit log")
    assert audited() == [], mallory
    assert daemon.proc.poll() is None
    assert "Traceback" not in daemon.log_path.read_text()


def test_unmodified_spark_with_a_keytab_reads_and_writes_as_its_principal(kdc: Kdc, kerberized: dict[str, Any],
                                                                           tmp_path: Path) -> None:
    daemon = kerberized["daemon"]
    done = subprocess.run([str(CATALOGD), "--server", daemon.address, "spark-conf", "scratch", "--hms-only"],
                          capture_output=True, text=True, timeout=120,
                          env={**clean_env(), "CATALOGD_TOKEN": ALICE_TOKEN})
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert ALICE_TOKEN not in done.stdout
    conf = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert conf["spark.hadoop.hive.metastore.sasl.enabled"] == "true"
    assert conf["spark.hadoop.hive.metastore.kerberos.principal"] == f"{SERVICE}@{kdc.realm}"
    assert conf["spark.hadoop.hadoop.security.authentication"] == "kerberos"

    # A kerberized Hadoop client configuration, as a secured cluster's; Spark logs in with the keytab.
    hadoop_conf = tmp_path / "hadoop-conf"
    hadoop_conf.mkdir()
    (hadoop_conf / "core-site.xml").write_text(
        "<configuration><property><name>hadoop.security.authentication</name><value>kerberos</value></property>"
        "</configuration>")
    keytab = kerberized["keytabs"] / "alice.keytab"
    conf.update({"spark.kerberos.principal": f"alice@{kdc.realm}", "spark.kerberos.keytab": str(keytab),
                 "spark.driver.extraJavaOptions": f"-Djava.security.krb5.conf={kdc.krb5_conf}",
                 "spark.hadoop.hive.metastore.connect.retries": "1"})
    env = {**clean_env(), **kdc.env(tmp_path / "spark.ccache"), "HADOOP_CONF_DIR": str(hadoop_conf)}
    child = SparkChild.start(tmp_path / "child.py", conf, env=env)
    try:
        assert child.answer() == {"ready": True}
        assert child.sql("CREATE DATABASE krb_spark") == {"rows": []}
        assert child.sql("CREATE TABLE krb_spark.t (id INT) USING parquet") == {"rows": []}
        assert child.sql("INSERT INTO krb_spark.t VALUES (1), (2)") == {"rows": []}
        assert child.sql("SELECT count(*) FROM krb_spark.t") == {"rows": [[2]]}
    finally:
        child.proc.kill()
        child.proc.wait()
    writes = read_audit(daemon.data_dir / "audit" / "audit.jsonl", 1000)
    assert {e["principal"] for e in writes if e["object"] and "krb_spark" in e["object"]} == {"alice"}


def test_a_delegation_token_authenticates_without_a_ticket_until_it_is_cancelled(kdc: Kdc, kerberized: dict[str, Any],
                                                                                 tmp_path: Path) -> None:
    port, tickets, daemon = kerberized["port"], kerberized["tickets"], kerberized["daemon"]
    # The driver (alice, with a ticket) gets a token she may renew herself.
    got = _client(kdc, tickets["alice"], port, [["get_delegation_token", f"alice@{kdc.realm}", "alice"],
                                               ["get_delegation_token", "bob", "alice"]])
    assert got["open"] is None and got["results"][0][0] is True, got
    token = got["results"][0][1]
    assert got["results"][1][0] is False and "may not get a delegation token for 'bob'" in got["results"][1][1]

    # An executor with no ticket at all authenticates with the token (DIGEST-MD5) and is alice.
    no_ticket = tmp_path / "none.ccache"
    executor = _client(kdc, no_ticket, port, [["create_database", "krb_token_db"], ["set_ugi", "bob", []],
                                              ["get_delegation_token", "alice", "alice"]], qop=f"digest:{token}")
    assert executor["open"] is None, executor
    assert executor["results"][0][0] is True, executor
    assert executor["results"][1][0] is False
    assert executor["results"][2][0] is False and "only to a Kerberos-authenticated" in executor["results"][2][1]

    # Renewal by its renewer only; a tampered token is nobody's.
    renewals = _client(kdc, tickets["bob"], port, [["renew_delegation_token", token]])
    assert renewals["results"][0][0] is False and "renewer" in renewals["results"][0][1]
    renewed = _client(kdc, tickets["alice"], port, [["renew_delegation_token", token]])
    assert renewed["results"][0][0] is True and renewed["results"][0][1] > 0
    identifier, password, _ = decode_token(token)
    tampered = encode_token(identifier, bytes([password[0] ^ 1]) + password[1:])
    forged = _client(kdc, no_ticket, port, [["get_all_databases"]], qop=f"digest:{tampered}")
    assert forged["open"] is not None or forged["results"][0][0] is False

    # Cancelled: the token no longer authenticates.
    cancelled = _client(kdc, tickets["alice"], port, [["cancel_delegation_token", token]])
    assert cancelled["results"][0] == [True, None], cancelled
    after = _client(kdc, no_ticket, port, [["get_all_databases"]], qop=f"digest:{token}")
    assert after["open"] is not None, after

    denied = read_audit(daemon.data_dir / "audit" / "audit.jsonl", 1000, denied=True)
    assert any("the delegation token was cancelled" in (e["detail"] or "") for e in denied), denied
    writes = read_audit(daemon.data_dir / "audit" / "audit.jsonl", 1000)
    assert [e["principal"] for e in writes if e["operation"] == "create_database"
            and e["object"] and "krb_token_db" in e["object"]] == ["alice"]
    assert token not in (daemon.data_dir / "audit" / "audit.jsonl").read_text()


def _token_file(path: Path, token: str) -> Path:
    """A Hadoop credentials file (``HDTS``, Writable format) holding ``token``: what a cluster
    hands a container through ``HADOOP_TOKEN_FILE_LOCATION``."""
    identifier, password, kind = decode_token(token)

    def text(value: bytes) -> bytes:
        return _vlong(len(value)) + value

    stored = text(identifier) + text(password) + text(kind.encode()) + text(b"")
    path.write_bytes(b"HDTS\x00" + _vlong(1) + text(b"hive.metastore.delegation.token") + stored + _vlong(0))
    path.chmod(0o600)
    return path


def test_unmodified_spark_without_a_ticket_uses_a_delegation_token_until_it_is_cancelled(
        kdc: Kdc, kerberized: dict[str, Any], tmp_path: Path) -> None:
    port, tickets, daemon = kerberized["port"], kerberized["tickets"], kerberized["daemon"]
    got = _client(kdc, tickets["alice"], port, [["get_delegation_token", f"alice@{kdc.realm}", "alice"],
                                               ["create_database", "krb_dt"]])
    token = got["results"][0][1]
    done = subprocess.run([str(CATALOGD), "--server", daemon.address, "spark-conf", "scratch", "--hms-only"],
                          capture_output=True, text=True, timeout=120,
                          env={**clean_env(), "CATALOGD_TOKEN": ALICE_TOKEN})
    conf = dict(line.split("=", 1) for line in done.stdout.splitlines())
    conf.update({"spark.driver.extraJavaOptions": f"-Djava.security.krb5.conf={kdc.krb5_conf}",
                 "spark.hadoop.hive.metastore.connect.retries": "1",
                 # Hive's client opens a new connection before a call once its connection is a
                 # second old (Hive's own setting): the one application shows the token working,
                 # then, after the cancel, refused on its next connection -- one Spark launch, not two.
                 "spark.hadoop.hive.metastore.client.socket.lifetime": "1s"})
    hadoop_conf = tmp_path / "hadoop-conf"
    hadoop_conf.mkdir()
    (hadoop_conf / "core-site.xml").write_text(
        "<configuration><property><name>hadoop.security.authentication</name><value>kerberos</value></property>"
        "</configuration>")
    # No ticket cache and no keytab: only the token, as an executor or a cluster-mode driver has it.
    env = {**clean_env(), **kdc.env(tmp_path / "no-ticket.ccache"), "HADOOP_CONF_DIR": str(hadoop_conf),
           "HADOOP_TOKEN_FILE_LOCATION": str(_token_file(tmp_path / "tokens", token))}

    child = SparkChild.start(tmp_path / "child.py", conf, env=env)
    try:
        assert child.answer() == {"ready": True}
        answers = [child.sql(statement) for statement in
                   ("CREATE TABLE krb_dt.t (id INT) USING parquet", "INSERT INTO krb_dt.t VALUES (7)",
                    "SELECT id FROM krb_dt.t")]
        assert answers == [{"rows": []}, {"rows": []}, {"rows": [[7]]}], answers
        writes = read_audit(daemon.data_dir / "audit" / "audit.jsonl", 1000)
        assert {e["principal"] for e in writes if e["object"] and "krb_dt.t" in e["object"]} == {"alice"}

        refusals = _cancelled_token_refusals(daemon)
        assert _client(kdc, tickets["alice"], port, [["cancel_delegation_token", token]])["results"][0][0] is True

        def refused() -> dict[str, object] | None:
            # Its next call on a connection older than the lifetime reconnects with the cancelled token.
            answer = child.sql("SHOW TABLES IN krb_dt")
            return answer if "error" in answer else None

        after = wait_until(refused, 60, what="the Spark application to be refused with the cancelled token")
    finally:
        child.proc.kill()
        child.proc.wait()
    # Refused by the endpoint for the cancel, not for anything else.
    wait_until(lambda: _cancelled_token_refusals(daemon) > refusals, 30,
               what=f"the endpoint to audit the cancelled token's refusal (Spark: {after})")


def _cancelled_token_refusals(daemon: Any) -> int:
    denied = read_audit(daemon.data_dir / "audit" / "audit.jsonl", 1000, denied=True)
    return sum("the delegation token was cancelled" in (e["detail"] or "") for e in denied)
