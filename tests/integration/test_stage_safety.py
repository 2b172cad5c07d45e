"""Stages are authentic, leases are capped, stage RPCs refuse with typed errors, replaced data is
bounded (issue 11): real daemons on the session daemon's embedded metastore, staging tables
forged straight into that metastore over victim directories the tests create.
"""

from __future__ import annotations

import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from polling import holds_for, wait_until

from catalogd.client import CatalogClient
from catalogd.errors import InvalidArgumentError, PermissionDeniedError, StageNotFoundError
from catalogd.model import Stage, StageState

from .helpers import Daemon, local_path, log_text, metastore_key_file

pytestmark = [pytest.mark.integration]

DEADLINE = 60.0
FORGED_WARNING = "was not created by this catalogd"


@pytest.fixture
def remote(client: CatalogClient, daemon: Daemon, daemon_factory: Callable[..., Daemon]) -> Callable[..., Daemon]:
    """``remote(name, staging={...})``: an extra daemon whose ``main`` is the session metastore."""
    uri = client.get_catalog("main").metastore

    def start(name: str, staging: dict[str, Any] | None = None, same_as: Daemon | None = None) -> Daemon:
        if same_as is not None:
            return daemon_factory(name=name, same_as=same_as)
        return daemon_factory(
            name=name,
            catalogs=[{"name": "main", "type": "hive", "connection": {"hive.metastore.uris": uri},
                       "metastore-key-file": str(metastore_key_file(daemon.data_dir))}],
            extra={"staging": {"janitor-interval": "0.5s", **(staging or {})}},
        )

    return start


def forge(hms: Any, database: str, key: str, state: str, location: Path, **params: str) -> str:
    """A staging table written straight into the metastore over ``location``; returns its stage id."""
    from catalogd.hive_idl import ttypes as t

    name = f"__catalogd_stage_{key}"
    parameters = {
        "catalogd.stage.id": f"main.{database}.{key}", "catalogd.stage.target": "t",
        "catalogd.stage.purpose": "REPLACE", "catalogd.stage.state": state,
        "catalogd.stage.lease-deadline": "0", "catalogd.stage.lease": "1000", "catalogd.stage.delete-after": "0",
        "catalogd.stage.commit-started": "0", "catalogd.stage.committer": "mallory:/nowhere",
        "catalogd.stage.old-location": f"file:{location}", "catalogd.stage.replaced.0": "{}", **params,
    }
    sd = t.StorageDescriptor(
        cols=[t.FieldSchema(name="id", type="bigint")], location=f"file:{location}",
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat", compressed=False,
        numBuckets=-1, bucketCols=[], sortCols=[], parameters={},
        serdeInfo=t.SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                              parameters={}),
    )
    hms.call("create_table", t.Table(tableName=name, dbName=database, owner="mallory", createTime=int(time.time()),
                                     lastAccessTime=0, retention=0, sd=sd, partitionKeys=[], parameters=parameters,
                                     tableType="MANAGED_TABLE"))
    return f"main.{database}.{key}"


def aborted(client: CatalogClient, stage_id: str) -> bool:
    """Whether the stage was aborted: an ABORTED tombstone, or gone altogether."""
    try:
        return client.get_stage(stage_id).state is StageState.ABORTED
    except StageNotFoundError:
        return True


def victim(root: Path, name: str) -> Path:
    """A directory of precious files that no catalogd may delete."""
    path = root / name
    path.mkdir(parents=True)
    (path / "precious.txt").write_text("keep me\n")
    return path


# ---------------------------------------------------------------- forged stages

def test_forged_stages_are_left_alone_with_their_files(client, main_db, hms, remote, tmp_path):
    """Staging tables forged in the metastore in every state, over victim directories: the janitor
    (every 0.5s) never touches them, commit/abort/heartbeat through catalogd are refused, and the
    warning is logged once per table."""
    database = main_db.split(".", 1)[1]
    extra = remote("janitor", staging={"lease": "2s"})
    victims = {}
    forged = {}
    for n, state in enumerate(["OPEN", "ABORTED", "COMMITTING", "RETIRING"]):
        victims[state] = victim(tmp_path, f"victim-{state.lower()}")
        forged[state] = forge(hms, database, f"{n:016x}", state, victims[state])
    # A signature of the right shape, made with another key, is no better than none.
    victims["SIGNED"] = victim(tmp_path, "victim-signed")
    forged["SIGNED"] = forge(hms, database, "00000000000000ff", "OPEN", victims["SIGNED"],
                             **{"catalogd.stage.signature": "v1:" + "0" * 64})
    with CatalogClient(extra.address, timeout=60) as own:
        # A genuine stage whose lease lapses: its abort proves the janitor is at work.
        genuine = own.begin_stage(f"{main_db}.g", "id bigint", lease=1)
        wait_until(lambda: aborted(own, genuine.id), DEADLINE,
                   what="the janitor aborts the genuine lapsed stage", every=0.2)

        def untouched() -> bool:
            names = set(hms.call("get_all_tables", database))
            return (all(f"__catalogd_stage_{sid.rsplit('.', 1)[1]}" in names for sid in forged.values())
                    and all((v / "precious.txt").exists() for v in victims.values()))

        # Several janitor passes (every 0.5s): nothing forged is acted on.
        holds_for(untouched, 3.0, what="the forged stages and their victim directories are left alone")
        for stage_id in forged.values():
            for call, args in ((own.commit_stage, ()), (own.abort_stage, ()), (own.abort_stage, (True,)),
                               (own.heartbeat_stage, ())):
                with pytest.raises(PermissionDeniedError, match="not created by this catalogd"):
                    call(stage_id, *args)
            assert "not created by this catalogd" in (own.get_stage(stage_id).message or "")
        # Dropping a table of the forged stages' target purges nothing forged either.
        own.create_table(f"{main_db}.t", "id bigint")
        own.drop_table(f"{main_db}.t")
    assert untouched()
    log = log_text(extra)
    for stage_id in forged.values():
        table = f"__catalogd_stage_{stage_id.rsplit('.', 1)[1]}"
        warned = [line for line in log.splitlines() if table in line and FORGED_WARNING in line]
        assert len(warned) == 1, (table, warned)
    # Cleaned up without deleting the victims (a plain drop would delete a managed table's files).
    for stage_id in forged.values():
        hms.call("drop_table", database, f"__catalogd_stage_{stage_id.rsplit('.', 1)[1]}", False)


# ---------------------------------------------------------------- genuine stages: restart, shared key

def test_genuine_stages_survive_a_restart_and_another_key_leaves_them_alone(client, main_db, remote):
    """The generated key is kept (0600 in a 0700 dir), so a restarted daemon still owns its stages;
    a daemon with another key neither commits nor cleans them; one given the same key does."""
    first = remote("owner", staging={"replaced-data-retention": "0s"})
    key_file = first.data_dir / "secrets" / "stage.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    key = key_file.read_text().strip()
    assert key not in log_text(first)
    # Retention 0 with dynamic tables enabled: a warning at start.
    assert "staging.replaced-data-retention is 0s" in log_text(first)
    with CatalogClient(first.address, timeout=60) as own:
        kept = own.begin_stage(f"{main_db}.kept", "id bigint", lease=600)
        lapsing = own.begin_stage(f"{main_db}.lapsing", "id bigint", lease=2)
    assert first.stop() == 0

    stranger = remote("stranger")  # its own generated key
    with CatalogClient(stranger.address, timeout=60) as other:
        for call in (lambda: other.commit_stage(kept.id), lambda: other.heartbeat_stage(kept.id),
                     lambda: other.abort_stage(lapsing.id, writer_stopped=True)):
            with pytest.raises(PermissionDeniedError):
                call()
        # Lapsed, but not the stranger's (nor the session daemon's) to abort.
        holds_for(lambda: other.get_stage(lapsing.id).state is StageState.OPEN, 3.0,
                  what="the lapsed stage of another key stays open")
    assert f"__catalogd_stage_{lapsing.id.rsplit('.', 1)[1]}" in log_text(stranger)

    again = remote("owner", same_as=first)
    with CatalogClient(again.address, timeout=60) as own:
        assert own.commit_stage(kept.id).state is StageState.COMMITTED
        assert own.get_table(f"{main_db}.kept").name == "kept"
        # Its janitor (at start) knows the lapsed stage as its own and aborts it.
        wait_until(lambda: aborted(own, lapsing.id), DEADLINE, every=0.2,
                   what="the restarted daemon aborts its own lapsed stage")

    # Daemons sharing a metastore share the key: copied into staging.secret, it is the same owner.
    shared = remote("shared", staging={"secret": key})
    with CatalogClient(again.address, timeout=60) as own, CatalogClient(shared.address, timeout=60) as other:
        stage = own.begin_stage(f"{main_db}.both", "id bigint", lease=600)
        assert other.heartbeat_stage(stage.id, 60).state is StageState.OPEN
        assert other.commit_stage(stage.id).state is StageState.COMMITTED
        assert own.get_table(f"{main_db}.both").name == "both"
    assert key not in log_text(shared)


# ---------------------------------------------------------------- leases and read-only catalogs

def test_leases_are_capped_by_staging_max_lease(client, main_db):
    with pytest.raises(InvalidArgumentError, match=r"staging\.max-lease \(1 h\)"):
        client.begin_stage(f"{main_db}.t", "id bigint", lease=2 * 3600)
    assert not client.table_exists(f"{main_db}.t")
    assert [s for s in client.list_stages("main") if s.database == main_db.split(".")[1]] == []
    stage = client.begin_stage(f"{main_db}.t", "id bigint", lease=60)
    with pytest.raises(InvalidArgumentError, match=r"staging\.max-lease"):
        client.heartbeat_stage(stage.id, 1e13)
    assert client.get_stage(stage.id).lease_deadline == stage.lease_deadline
    assert client.heartbeat_stage(stage.id, 3600).state is StageState.OPEN
    client.abort_stage(stage.id, writer_stopped=True)


def test_stage_rpcs_on_a_read_only_catalog_are_permission_denied(client, main_db, run_cli):
    """``ro`` is main's metastore, read-only: a stage of main seen through it cannot be written."""
    stage = client.begin_stage(f"{main_db}.t", "id bigint", lease=60)
    via_ro = "ro." + stage.id.split(".", 1)[1]
    for args in (["stage", "heartbeat", via_ro], ["stage", "commit", via_ro], ["stage", "abort", via_ro],
                 ["stage", "begin", f"ro.{main_db.split('.')[1]}.t2", "--schema", "id bigint"]):
        done = run_cli(*args)
        assert done.code == 1, (args, done)
        assert done.stderr.startswith("error: permission-denied: "), (args, done.stderr)
        assert "read-only" in done.stderr and "Internal error" not in done.stderr
    assert client.get_stage(stage.id).state is StageState.OPEN
    assert client.commit_stage(stage.id).state is StageState.COMMITTED


# ---------------------------------------------------------------- retired versions

def test_at_most_max_retired_versions_are_kept_per_table(client, main_db):
    """Five REPLACEs in a row (session daemon: retention 10 min, max-retired-versions 3): the three newest
    replaced versions are kept for readers, the older two deleted at once, the rest on drop."""
    target = f"{main_db}.t"
    database = main_db.split(".", 1)[1]
    locations = [local_path(client.create_table(target, "id bigint").location)]
    for _ in range(5):
        stage = client.begin_stage(target, "id bigint", purpose="replace", lease=60)
        assert client.commit_stage(stage.id).state is StageState.COMMITTED
        locations.append(local_path(client.get_table(target).location))

    def retired_versions() -> list[Stage]:
        return [s for s in client.list_stages("main") if s.database == database and s.target == "t"]

    # The oldest go right after the commits, on the daemon's housekeeping worker.
    wait_until(lambda: sorted(local_path(s.location or "") for s in retired_versions()) == sorted(locations[2:5]),
               60, what="the two oldest replaced versions to be deleted")
    retired = retired_versions()
    assert all(s.state is StageState.COMMITTED and "deleted after" in (s.message or "") for s in retired)
    assert [p.exists() for p in locations] == [False, False, True, True, True, True]
    client.drop_table(target)
    assert [s for s in client.list_stages("main") if s.database == database] == []
    assert not any(p.exists() for p in locations)
    with pytest.raises(StageNotFoundError):
        client.commit_stage(f"main.{database}.0123456789abcdef")
