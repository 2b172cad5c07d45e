"""The HMS endpoint with auth on: the set_ugi user (where auth.trust-asserted-users trusts it) is the
principal, its grants decide, writes and denials are audited, no token lands in any file; and a
daemon bound to a non-loopback address with auth off does not start."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from catalogd.auth.audit import read_audit
from catalogd.hive_idl import ThriftHiveMetastore, ttypes

from .helpers import (
    CATALOGD,
    SparkChild,
    clean_env,
    embedded_catalog,
    free_port,
    hms_connection,
    metastore_pids,
    write_config,
)

pytestmark = pytest.mark.integration

ETL_TOKEN = "etl-token-0123456789abcdef-A1"
ANALYST_TOKEN = "analyst-token-0123456789abcdef-A1"


def _audit(data_dir: Path) -> list[dict[str, Any]]:
    """Writes and denials (each in its own file), in time order."""
    return read_audit(data_dir / "audit" / "audit.jsonl", 100_000)


def _without_time_and_port(entry: dict[str, Any]) -> dict[str, Any]:
    shown = {k: v for k, v in entry.items() if k != "time"}
    shown["client"] = shown["client"].rsplit(":", 1)[0]
    return shown


def test_the_set_ugi_user_needs_its_role_on_the_call_s_catalog(daemon_factory, tmp_path: Path) -> None:
    token_file = tmp_path / "analyst.token"
    token_file.write_text(ANALYST_TOKEN + "\n")
    token_file.chmod(0o600)
    # Users named by set_ugi alone are refused unless trusted (issue 31; test_auth_api has the
    # default): trusted here up to writer, the most any grant of this test gives.
    auth = {"enabled": True, "trust-asserted-users": "writer",
            "principals": [{"name": "etl", "token": ETL_TOKEN}, {"name": "analyst", "token-file": str(token_file)},
                           {"name": "scratchy"}],
            "grants": [{"principal": "etl", "catalog": "main", "role": "writer"},
                       {"principal": "analyst", "catalog": "*", "role": "reader"},
                       {"principal": "scratchy", "catalog": "scratch", "role": "writer"}]}
    proc = daemon_factory(catalogs=[embedded_catalog("main"), {"name": "scratch", "type": "memory"}],
                          extra={"auth": auth}, name="auth")
    address = proc.hms_address
    denied = ttypes.MetaException

    # No set_ugi, or a user who is no principal: refused, the message naming the role.
    with hms_connection(address) as anonymous, \
            pytest.raises(denied, match="a connection without set_ugi needs role reader on catalog main "
                                        "for get_database"):
        anonymous.get_database("default")
    with hms_connection(address, "mallory") as stranger:
        with pytest.raises(denied, match=r"user 'mallory' \(not a configured principal\) needs role reader "
                                         r"on any catalog for get_all_databases"):
            stranger.get_all_databases()
        with pytest.raises(denied, match="needs role writer on catalog main for create_database"):
            stranger.create_database(ttypes.Database(name="by_mallory", parameters={}))

    # A reader reads and cannot write.
    with hms_connection(address, "analyst") as analyst:
        assert "default" in analyst.get_all_databases()
        assert analyst.get_database("default").name == "default"
        with pytest.raises(denied, match="user 'analyst' needs role writer on catalog main for create_database"):
            analyst.create_database(ttypes.Database(name="by_analyst", parameters={}))
        with pytest.raises(denied, match="needs role writer on catalog main for drop_database"):
            analyst.drop_database("default", True, True)

    # A writer writes on its catalog, and only there.
    with hms_connection(address, "etl") as etl:
        etl.create_database(ttypes.Database(name="by_etl", description="made by etl", parameters={}))
        assert etl.get_database("by_etl").description == "made by etl"
        with pytest.raises(ttypes.NoSuchObjectException):
            etl.get_database("by_analyst")  # the reader's create changed nothing
        with pytest.raises(ttypes.NoSuchObjectException):
            etl.get_database("by_mallory")
        with pytest.raises(denied, match="user 'etl' needs role writer on catalog scratch for create_database"):
            etl.create_database(ttypes.Database(name="scratch__by_etl", parameters={}))
        with pytest.raises(ttypes.AlreadyExistsException):
            etl.create_database(ttypes.Database(name="by_etl", parameters={}))  # audited as an error

    # A principal granted one catalog lists only that catalog's databases.
    with hms_connection(address, "scratchy") as scratchy:
        scratchy.create_database(ttypes.Database(name="scratch__mine", parameters={}))
        assert scratchy.get_all_databases() == ["scratch__default", "scratch__mine"]
        with pytest.raises(denied, match="user 'scratchy' needs role reader on catalog main for get_database"):
            scratchy.get_database("default")

    entries = [_without_time_and_port(e) for e in _audit(proc.data_dir)]
    hms = {"surface": "hms", "client": "127.0.0.1"}
    assert {**hms, "principal": None, "operation": "get_database", "object": "main.default", "outcome": "denied",
            "detail": "catalogd: permission denied: a connection without set_ugi needs role reader on catalog main "
                      "for get_database"} in entries
    # The principal of a denial is the user the client asserted, even one that is no principal.
    assert {**hms, "principal": "mallory", "operation": "create_database", "object": "main.by_mallory",
            "outcome": "denied",
            "detail": "catalogd: permission denied: user 'mallory' (not a configured principal) needs role writer "
                      "on catalog main for create_database"} in entries
    assert {**hms, "principal": "analyst", "operation": "create_database", "object": "main.by_analyst",
            "outcome": "denied", "detail": "catalogd: permission denied: user 'analyst' needs role writer on "
                                           "catalog main for create_database"} in entries
    assert {**hms, "principal": "etl", "operation": "create_database", "object": "main.by_etl", "outcome": "ok",
            "detail": None} in entries
    assert {**hms, "principal": "scratchy", "operation": "create_database", "object": "scratch.mine",
            "outcome": "ok", "detail": None} in entries
    errors = [e for e in entries if e["outcome"] == "error"]
    assert len(errors) == 1 and errors[0]["principal"] == "etl" and errors[0]["object"] == "main.by_etl"
    # Reads are not audited; every denial is.
    assert not [e for e in entries if e["outcome"] == "ok" and e["operation"].startswith("get_")]
    assert sum(e["outcome"] == "denied" for e in entries) == 7
    audit_file = proc.data_dir / "audit" / "audit.jsonl"
    assert audit_file.stat().st_mode & 0o777 == 0o600
    assert audit_file.parent.stat().st_mode & 0o777 == 0o700

    assert proc.stop() == 0
    # No token in any file the daemon wrote (its log, the audit log, its state, the metastore's files).
    for path in [proc.log_path, *proc.data_dir.rglob("*")]:
        if path.is_file():
            data = path.read_bytes()
            assert ETL_TOKEN.encode() not in data and ANALYST_TOKEN.encode() not in data, path


def _serve(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CATALOGD), "serve", "--config", str(config)], capture_output=True, text=True,
                          timeout=60, env=clean_env())


def test_auth_off_on_a_non_loopback_address_does_not_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    config = write_config(tmp_path / "c.yaml", port=free_port(), http_port=free_port(), data_dir=data_dir,
                          catalogs=[embedded_catalog("main")])
    text = yaml.safe_load(config.read_text())
    text["server"]["host"] = "0.0.0.0"
    config.write_text(yaml.safe_dump(text))
    done = _serve(config)
    assert done.returncode == 2, done.stderr
    error = done.stderr.splitlines()[-1]
    assert error.startswith("error: config: ") and "auth.allow-insecure" in error, done.stderr
    assert metastore_pids(data_dir) == []
    assert not (data_dir / "catalogs").exists(), "no metastore was started"


def test_unmodified_spark_is_refused_without_a_grant_and_reads_but_cannot_write_as_a_reader(
        daemon_factory, tmp_path: Path) -> None:
    """Spark (its own JVM, settings from `catalogd spark-conf --hms-only`) names its user with set_ugi:
    the OS user, or HADOOP_USER_NAME."""
    from catalogd.client import CatalogClient
    from catalogd.spark.conf import spark_conf_for

    # Spark's set_ugi user is only asserted: trusted here up to reader, viewer's grant.
    auth = {"enabled": True, "trust-asserted-users": "reader",
            "principals": [{"name": "admin", "token": ETL_TOKEN}, {"name": "viewer"}],
            "grants": [{"principal": "admin", "catalog": "*", "role": "admin"},
                       {"principal": "viewer", "catalog": "main", "role": "reader"}]}
    proc = daemon_factory(catalogs=[embedded_catalog("main")], extra={"auth": auth}, name="spark-auth")
    with CatalogClient(proc.address, token=ETL_TOKEN) as c:
        c.create_database("main.shop")
        c.create_table("main.shop.t", "id int")
        conf = spark_conf_for(c.get_catalog("main"))

    def spark_as(user: str) -> SparkChild:
        """Spark as ``user``, started (not yet ready: ``ready`` waits)."""
        env = {**clean_env(), "HADOOP_USER_NAME": user}
        return SparkChild.start(tmp_path / f"child-{user}.py", conf, env)

    def ready(child: SparkChild) -> SparkChild:
        assert child.answer() == {"ready": True}
        return child

    def done(child: SparkChild) -> None:
        assert child.proc.stdin is not None
        child.proc.stdin.close()
        try:
            child.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.proc.kill()
            child.proc.wait()

    # Both applications start at once (their JVMs' start is most of this test), each its own JVM.
    stranger = spark_as("mallory")
    try:
        viewer = spark_as("viewer")
        try:
            refused = ready(stranger).sql("SELECT * FROM shop.t")
            assert "needs role reader" in str(refused.get("error")), refused
            assert ready(viewer).sql("SELECT count(*) FROM shop.t") == {"rows": [[0]]}
            written = viewer.sql("CREATE TABLE shop.u (id INT)")
            assert "needs role writer on catalog main" in str(written.get("error")), written
        finally:
            done(viewer)
    finally:
        done(stranger)
    with CatalogClient(proc.address, token=ETL_TOKEN) as c:
        assert c.list_tables("main.shop") == ["t"]
    denials = [e for e in _audit(proc.data_dir) if e["outcome"] == "denied" and e["surface"] == "hms"]
    assert {e["principal"] for e in denials} >= {"mallory", "viewer"}


def test_a_stage_s_table_is_written_through_the_endpoint_only_by_its_owner_or_an_admin(daemon_factory) -> None:
    """Issue 21's measured attack: a client claiming another writer through set_ugi altered and
    dropped that writer's staging table, and the owner's commit then found no stage."""
    from catalogd.client import CatalogClient
    from catalogd.errors import StageNotFoundError
    from catalogd.model import StageState

    tokens = {"etl": ETL_TOKEN, "etl2": "etl2-token-0123456789abcdef-A1", "ops": "ops-token-0123456789abcdef-A1"}
    # The set_ugi users stand for proven ones (the attack is one writer claiming another): trusted
    # up to admin, so that ops's admin path is exercised too.
    auth = {"enabled": True, "trust-asserted-users": "admin",
            "principals": [{"name": name, "token": token} for name, token in tokens.items()],
            "grants": [{"principal": "etl", "catalog": "main", "role": "writer"},
                       {"principal": "etl2", "catalog": "main", "role": "writer"},
                       {"principal": "ops", "catalog": "*", "role": "admin"}]}
    proc = daemon_factory(catalogs=[embedded_catalog("main")], extra={"auth": auth}, name="stage-owners")
    address = proc.hms_address
    denied = ttypes.MetaException
    with CatalogClient(proc.address, token=tokens["etl"]) as etl:
        etl.create_database("main.owned")
        stage = etl.begin_stage("main.owned.daily", schema="id bigint", partitioned_by="ds string")
        assert stage.owner == "etl"
        staging = stage.staging_table

        def partition(tbl: Any, ds: str) -> ttypes.Partition:
            sd = ttypes.StorageDescriptor(**vars(tbl.sd))
            sd.location = f"{tbl.sd.location}/ds={ds}"
            return ttypes.Partition(dbName="owned", tableName=staging, values=[ds], sd=sd, parameters={})

        # Another writer, claiming its own name or the owner's through set_ugi, reads the table
        # but writes nothing of it.
        with hms_connection(address, "etl2") as other:
            tbl = other.get_table("owned", staging)
            changed = ttypes.Table(**vars(tbl))
            changed.parameters = {**tbl.parameters, "comment": "by etl2"}
            owner_only = rf"user 'etl2' needs role admin on catalog main for {{}} of staging table " \
                         rf"owned\.{staging} \(stage {re.escape(stage.id)}\), which etl began"
            with pytest.raises(denied, match=owner_only.format("alter_table")):
                other.alter_table("owned", staging, changed)
            with pytest.raises(denied, match=owner_only.format("drop_table")):
                other.drop_table("owned", staging, True)
            with pytest.raises(denied, match=owner_only.format("add_partitions")):
                other.add_partitions([partition(tbl, "2026-01-01")])
            with pytest.raises(denied, match=owner_only.format("add_partition")):
                # The IDL's add_partition (hmsclient's own add_partition takes other arguments).
                ThriftHiveMetastore.Client.add_partition(other, partition(tbl, "2026-01-01"))
            with pytest.raises(denied, match=owner_only.format("drop_partition")):
                other.drop_partition("owned", staging, ["2026-01-01"], True)
        assert etl.get_stage(stage.id).state is StageState.OPEN
        # The owner writes into its stage through the endpoint (as Spark does, as its set_ugi user).
        with hms_connection(address, "etl") as owner:
            tbl = owner.get_table("owned", staging)
            assert tbl.parameters.get("comment") != "by etl2"
            owner.add_partitions([partition(tbl, "2026-01-02")])
            changed = ttypes.Table(**vars(tbl))
            changed.parameters = {**tbl.parameters, "written-by": "etl"}
            owner.alter_table("owned", staging, changed)
        committed = etl.commit_stage(stage.id)
        assert committed.state is StageState.COMMITTED
        assert [p.values for p in etl.list_partitions("main.owned.daily")] == [["2026-01-02"]]

        # An admin may drop another principal's staging table (its stage then is gone).
        second = etl.begin_stage("main.owned.weekly", schema="id bigint")
        with hms_connection(address, "ops") as ops:
            ops.drop_table("owned", second.staging_table, True)
            with pytest.raises(ttypes.NoSuchObjectException):
                ops.get_table("owned", second.staging_table)
        with pytest.raises(StageNotFoundError):
            etl.commit_stage(second.id)

    denials = [e for e in _audit(proc.data_dir) if e["outcome"] == "denied" and e["principal"] == "etl2"]
    assert {(e["operation"], e["object"]) for e in denials} == {
        (method, f"main.owned.{staging}") for method in ("alter_table", "drop_table", "add_partitions", "add_partition",
                                                           "drop_partition")}
