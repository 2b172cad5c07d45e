"""catalogd in front of a kerberized Hive Metastore, against a real MIT KDC.

One secure HMS 2.3 for the module, started by catalogd's own launcher (``EmbeddedMetastore``
with ``hive.metastore.sasl.enabled``, its keytab and principal) and reached as a remote
``type: hive`` catalog: catalogd logs in with its ``auth.kerberos`` keytab, for its own calls
and for the calls its HMS endpoint relays; the metastore's audit log names catalogd's principal.
Without a good keytab catalogd fails with a typed error instead of hanging.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.metastore.embedded import EmbeddedMetastore

from .helpers import CATALOGD, clean_env, free_port, spawn_daemon, write_config
from .kdc import Kdc

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
HIVE = "hive/localhost"
CATALOGD_PRINCIPAL = "catalogd/localhost"
#: A daemon that cannot reach its metastore exits; this is how long it may take at most.
EXIT_DEADLINE = 180


@pytest.fixture(scope="module")
def secure_hms(kdc: Kdc, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A kerberized HMS 2.3 (SASL GSSAPI) on 127.0.0.1, and catalogd's keytab for it."""
    root = tmp_path_factory.mktemp("secure-hms")
    hive_keytab, catalogd_keytab = root / "hive.keytab", root / "catalogd.keytab"
    service = kdc.add_principal(HIVE, hive_keytab)
    kdc.add_principal(CATALOGD_PRINCIPAL, catalogd_keytab)
    hms = EmbeddedMetastore("secure", root / "hms", hive_conf={
        "hive.metastore.sasl.enabled": "true", "hive.metastore.kerberos.keytab.file": str(hive_keytab),
        "hive.metastore.kerberos.principal": service})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KRB5_CONFIG", str(kdc.krb5_conf))  # the launcher hands it to the JVM
        hms.start()
    try:
        yield {"hms": hms, "service": service, "keytab": catalogd_keytab, "root": root}
    finally:
        hms.stop()


def _catalog(secure_hms: dict[str, Any], sasl: bool = True) -> dict[str, Any]:
    connection = {"hive.metastore.uris": secure_hms["hms"].uri, "hive.metastore.connect.timeout": "10s",
                  "hive.metastore.client.socket.timeout": "30s"}
    if sasl:
        connection.update({"hive.metastore.sasl.enabled": "true",
                           "hive.metastore.kerberos.principal": secure_hms["service"]})
    # The embedded metastore serves only connections that send its key first (Kerberos or not).
    return {"name": "secure", "type": "hive", "default": True, "connection": connection,
            "metastore-key-file": str(secure_hms["hms"].key_path)}


def _kerberos(kdc: Kdc, principal: str, keytab: Path) -> dict[str, Any]:
    # auth stays off (everyone may do everything): this module is about catalogd's own identity.
    return {"auth": {"kerberos": {"principal": f"{principal}@{kdc.realm}", "keytab": str(keytab)},
                     "throttle": {"free-attempts": 1000}}}


def test_catalogd_reaches_a_kerberized_metastore_as_its_own_principal(kdc: Kdc, secure_hms: dict[str, Any],
                                                                     daemon_factory, tmp_path: Path) -> None:
    daemon = daemon_factory(name="krb-hms", catalogs=[_catalog(secure_hms)],
                            extra=_kerberos(kdc, CATALOGD_PRINCIPAL, secure_hms["keytab"]), env=kdc.env())
    with CatalogClient(daemon.address, timeout=120) as client:
        client.create_database("secure.krb_db")
        client.create_table("secure.krb_db.t", "id int")
        assert client.list_tables("secure.krb_db") == ["t"]

    # A kerberized HMS client of catalogd's endpoint: its calls are relayed to the metastore
    # on catalogd's own Kerberos connections.
    user_keytab = tmp_path / "alice.keytab"
    alice = kdc.add_principal("alice", user_keytab)
    env = {**clean_env(), **kdc.kinit(alice, user_keytab, tmp_path / "alice.ccache")}
    steps = [["get_all_databases"], ["get_table", "krb_db", "t"]]
    done = subprocess.run([sys.executable, "-m", "tests.integration.kerberos_client", "127.0.0.1",
                           str(daemon.hms_address[1]), "localhost", "auth", json.dumps(steps)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["open"] is None, answer
    (listed_ok, listed), (table_ok, table) = answer["results"]
    assert listed_ok and "krb_db" in listed, answer
    assert table_ok and "tableName='t'" in table, answer

    with CatalogClient(daemon.address, timeout=120) as client:
        client.drop_table("secure.krb_db.t")
        client.drop_database("secure.krb_db")
        assert "krb_db" not in client.list_databases("secure")

    # The metastore authenticated catalogd's principal for every call (its audit lines), never alice's.
    hive_log = secure_hms["hms"].hive_log_path
    ugi = f"ugi={CATALOGD_PRINCIPAL}@{kdc.realm}"

    def audited() -> list[str]:
        lines = [line for line in hive_log.read_text(errors="replace").splitlines() if "HiveMetaStore.audit" in line]
        commands = {line.split("cmd=", 1)[1].split(":")[0].strip() for line in lines if ugi in line}
        return lines if {"create_database", "create_table", "get_table", "drop_table", "drop_database"} <= commands \
            else []

    lines = wait_until(audited, 60, "the metastore's audit lines of catalogd's calls")
    assert not [line for line in lines if "ugi=alice" in line]
    assert daemon.proc.poll() is None
    assert "Traceback" not in daemon.log_path.read_text()


def test_without_a_good_keytab_catalogd_fails_clearly(kdc: Kdc, secure_hms: dict[str, Any], tmp_path: Path) -> None:
    # No Kerberos identity of its own configured: a config error, before anything starts.
    config = write_config(tmp_path / "no-login.yaml", port=free_port(), http_port=free_port(),
                          data_dir=tmp_path / "no-login", catalogs=[_catalog(secure_hms)])
    done = subprocess.run([str(CATALOGD), "config", "check", str(config)], capture_output=True, text=True,
                          timeout=120, env=clean_env())
    assert done.returncode == 2, done
    assert "set auth.kerberos" in done.stdout + done.stderr

    # A keytab whose key the KDC no longer has (the principal's key was changed since), and a
    # plain client against the kerberized metastore: the daemon exits with metastore-unavailable.
    stale_keytab = tmp_path / "stale.keytab"
    stale = kdc.add_principal("catalogd/stale", stale_keytab)
    subprocess.run([kdc.programs["kadmin.local"], "-r", kdc.realm, "-q", f"cpw -randkey {stale}"],
                   check=True, capture_output=True, timeout=60, env={**os.environ, **kdc.env()})
    cases = {"stale": ([_catalog(secure_hms)], _kerberos(kdc, "catalogd/stale", stale_keytab), "Kerberos"),
             "plain": ([_catalog(secure_hms, sasl=False)], {}, "if it is kerberized, set hive.metastore.sasl.enabled")}
    daemons = {}
    for name, (catalogs, extra, _) in cases.items():
        config = write_config(tmp_path / f"{name}.yaml", port=free_port(), http_port=free_port(),
                              data_dir=tmp_path / name, catalogs=catalogs, extra=extra)
        daemons[name] = spawn_daemon(config, tmp_path / name, tmp_path / f"{name}.log", env=kdc.env())
    try:
        for name, daemon in daemons.items():
            code = wait_until(lambda d=daemon: d.proc.poll(), EXIT_DEADLINE, f"the {name} daemon to exit")
            log = daemon.log_path.read_text()
            assert code == 1, log
            assert "error: metastore-unavailable: " in log and cases[name][2] in log, log
    finally:
        for daemon in daemons.values():
            daemon.stop()


def test_a_principal_of_the_realm_with_a_wrong_key_cannot_call_the_metastore(
        kdc: Kdc, secure_hms: dict[str, Any], tmp_path: Path) -> None:
    """Kerberos proves who calls, not that it is catalogd: any user of the realm (every Spark user)
    holds a ticket for the metastore's service. The key (or catalogd's own OS user, which this test
    runs as: test_metastore_access runs another user) is checked before SASL, so a ticket with a
    wrong key opens nothing (issue 31, row 2)."""
    user_keytab = tmp_path / "mallory.keytab"
    mallory = kdc.add_principal("mallory", user_keytab)
    env = {**clean_env(), **kdc.kinit(mallory, user_keytab, tmp_path / "mallory.ccache")}
    hms = secure_hms["hms"]

    def call(*key_file: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "tests.integration.kerberos_client", hms.host, str(hms.port),
                               "localhost", "auth", json.dumps([["get_all_databases"]]), "hive", *key_file],
                              capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
        answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return answer

    wrong = tmp_path / "wrong.key"
    wrong.write_text("0" * 64)
    wrong.chmod(0o600)
    refused = call(str(wrong))
    assert refused["open"] is not None and refused["results"] == [], refused
    # The same ticket with the key (which only catalogd's user can read) is served: the key made the difference.
    served = call(str(hms.key_path))
    assert served["open"] is None and served["results"][0][0] is True, served
