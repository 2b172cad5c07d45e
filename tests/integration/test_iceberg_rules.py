"""catalogd's rules on the Iceberg REST door, as on its other doors.

Victim directories (owned by the test, outside every allowed location, or another table's
directory) are refused as a table's location on create, register, ``set-location`` and
``write.metadata.path``, and as what a purge deletes: each refusal a 403/400 in the spec's error
model, the victim's files untouched and nothing written into it. The read-only catalog ``ro``
loads and refuses writes; staging tables are neither listed nor loadable. With auth on (a daemon
of its own, a memory catalog: no metastore JVM), a reader loads but cannot commit, a writer
commits, no token is a 401, a bad token meets the back-off, and the audit log has the REST writes.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from polling import wait_until
from pyiceberg.exceptions import (
    BadRequestError,
    ForbiddenError,
    NoSuchTableError,
    UnauthorizedError,
)

from catalogd.auth.audit import read_audit
from catalogd.auth.throttle import THROTTLED
from catalogd.client import CatalogClient
from catalogd.metastore.client import MetastoreClient
from catalogd.model import StageState

from .helpers import Daemon
from .iceberg_helpers import Answer, call, local, rest, rest_namespace, tree, unique

pytestmark = pytest.mark.integration

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A directory the test owns, outside the daemon's allowed locations, with a file in it."""
    path = tmp_path / "victim"
    (path / "metadata").mkdir(parents=True)
    (path / "precious.txt").write_text("keep me")
    return path


@pytest.fixture
def namespace(daemon: Daemon) -> Iterator[str]:
    with rest_namespace(daemon) as name:
        yield name


def refused(answer: Answer, status: int, kind: str) -> None:
    assert answer.status == status, answer
    assert answer.error["type"] == kind and answer.error["code"] == status, answer
    assert answer.error["message"]


def commit(daemon: Daemon, namespace: str, table: str, updates: list[dict[str, Any]],
           warehouse: str = "main", token: str | None = None) -> Answer:
    return call(daemon, "POST", f"/v1/{warehouse}/namespaces/{namespace}/tables/{table}",
                {"requirements": [], "updates": updates}, token=token)


# ---------------------------------------------------------------- victim directories

def test_a_victim_directory_is_refused_as_a_new_table_s_location(daemon: Daemon, namespace: str,
                                                                  victim: Path) -> None:
    before = tree(victim)
    catalog = rest(daemon)
    with pytest.raises(ForbiddenError, match="victim"):
        catalog.create_table(f"{namespace}.t", SCHEMA, location=victim.as_uri())
    with pytest.raises(ForbiddenError, match="victim"):
        catalog.create_table_transaction(f"{namespace}.staged", SCHEMA, location=(victim / "sub").as_uri())
    # Inside another table's directory.
    other = catalog.create_table(f"{namespace}.other", SCHEMA)
    other_files = tree(local(other.location()))
    with pytest.raises(ForbiddenError, match="directory of"):
        catalog.create_table(f"{namespace}.inside", SCHEMA, location=other.location() + "/data/nested")
    # write.metadata.path elsewhere: catalogd writes a table's metadata inside its location.
    with pytest.raises(BadRequestError, match="outside the table's location"):
        catalog.create_table(f"{namespace}.meta", SCHEMA, properties={"write.metadata.path": victim.as_uri()})
    assert tree(victim) == before
    assert tree(local(other.location())) == other_files
    assert [ident for ident in catalog.list_tables(namespace)] == [(namespace, "other")]


def _metadata_in(directory: Path, template: dict[str, Any], location: str, name: str) -> str:
    """A valid metadata file in ``directory`` naming ``location`` as its table's."""
    metadata = copy.deepcopy(template)
    metadata["location"] = location
    path = directory / "metadata" / f"00000-{name}.metadata.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(metadata))
    return path.as_uri()


def test_register_of_a_metadata_file_in_a_victim_directory_is_refused(daemon: Daemon, namespace: str,
                                                                       victim: Path) -> None:
    catalog = rest(daemon)
    real = catalog.create_table(f"{namespace}.real", SCHEMA)
    template = json.loads(local(real.metadata_location).read_text())
    # The file says the table lives in the victim directory: outside the allowed locations.
    forged = _metadata_in(victim, template, victim.as_uri(), "forged")
    before = tree(victim)
    with pytest.raises(ForbiddenError, match="victim"):
        catalog.register_table(f"{namespace}.reg", forged)
    # The file says the table lives in the warehouse: the file's own place is checked first.
    elsewhere = _metadata_in(victim, template, real.location() + "_twin", "twin")
    before = tree(victim)
    with pytest.raises(ForbiddenError, match="victim"):
        catalog.register_table(f"{namespace}.reg", elsewhere)
    # In the warehouse, but outside the location it names.
    loose = _metadata_in(local(real.location() + "_loose"), template, real.location() + "_twin", "loose")
    with pytest.raises(BadRequestError, match="outside its table's location"):
        catalog.register_table(f"{namespace}.reg", loose)
    shutil.rmtree(local(real.location() + "_loose"))
    # A file that is no metadata file at all, or a device: refused before the daemon reads it.
    with pytest.raises(ForbiddenError, match="outside the catalog's allowed locations"):
        catalog.register_table(f"{namespace}.reg", (victim / "precious.txt").as_uri())
    with pytest.raises(ForbiddenError, match="outside the catalog's allowed locations"):
        catalog.register_table(f"{namespace}.reg", "file:///dev/zero")
    assert tree(victim) == before
    assert not catalog.table_exists(f"{namespace}.reg")


def test_a_commit_cannot_move_a_table_into_a_victim_directory(daemon: Daemon, namespace: str,
                                                               victim: Path) -> None:
    catalog = rest(daemon)
    table = catalog.create_table(f"{namespace}.t", SCHEMA)
    table.append(pa.table({"id": [1]}, schema=SCHEMA))
    other = catalog.create_table(f"{namespace}.other", SCHEMA)
    metadata_location = catalog.load_table(f"{namespace}.t").metadata_location
    before, other_files = tree(victim), tree(local(other.location()))

    refused(commit(daemon, namespace, "t", [{"action": "set-location", "location": victim.as_uri()}]),
            403, "ForbiddenException")
    refused(commit(daemon, namespace, "t", [{"action": "set-location", "location": other.location()}]),
            403, "ForbiddenException")
    refused(commit(daemon, namespace, "t", [{"action": "set-location", "location": other.location() + "/x"}]),
            403, "ForbiddenException")
    refused(commit(daemon, namespace, "t", [{"action": "set-properties",
                                             "updates": {"write.metadata.path": victim.as_uri()}}]),
            400, "BadRequestException")
    assert tree(victim) == before
    assert tree(local(other.location())) == other_files
    after = catalog.load_table(f"{namespace}.t")
    assert after.metadata_location == metadata_location
    assert after.scan().to_arrow().column("id").to_pylist() == [1]


def test_a_purge_of_a_table_on_another_table_s_directory_deletes_nothing(daemon: Daemon, namespace: str,
                                                                          hms: MetastoreClient) -> None:
    catalog = rest(daemon)
    owner = catalog.create_table(f"{namespace}.owner", SCHEMA)
    owner.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    files = tree(local(owner.location()))
    # Another tool writes the metastore behind catalogd: a second table on the owner's directory.
    alias = hms.call("get_table", namespace, "owner")
    alias.tableName = "alias"
    hms.call("create_table", alias, idempotent=False)
    answer = call(daemon, "DELETE", f"/v1/main/namespaces/{namespace}/tables/alias?purgeRequested=true")
    refused(answer, 403, "ForbiddenException")
    assert "purge" in answer.error["message"]
    assert catalog.table_exists(f"{namespace}.alias")  # nothing dropped
    assert tree(local(owner.location())) == files
    assert catalog.load_table(f"{namespace}.owner").scan().to_arrow().num_rows == 2
    hms.call("drop_table", namespace, "alias", False)


def test_a_memory_catalog_keeps_each_table_s_directory_its_own(daemon: Daemon) -> None:
    """``scratch`` has no allowed-locations (anywhere goes), but another table's directory does not."""
    catalog = rest(daemon, "scratch")
    with rest_namespace(daemon, "scratch") as ns:
        other = catalog.create_table(f"{ns}.other", SCHEMA)
        other.append(pa.table({"id": [1]}, schema=SCHEMA))
        files = tree(local(other.location()))
        with pytest.raises(ForbiddenError):
            catalog.create_table(f"{ns}.inside", SCHEMA, location=other.location() + "/nested")
        with pytest.raises(ForbiddenError):
            catalog.create_table(f"{ns}.same", SCHEMA, location=other.location())
        catalog.create_table(f"{ns}.t", SCHEMA)
        refused(commit(daemon, ns, "t", [{"action": "set-location", "location": other.location()}], "scratch"),
                403, "ForbiddenException")
        assert tree(local(other.location())) == files
        assert sorted(t for _, t in catalog.list_tables(ns)) == ["other", "t"]


# ---------------------------------------------------------------- read-only catalog, stages

def test_the_read_only_catalog_loads_and_refuses_writes(daemon: Daemon, namespace: str) -> None:
    made = rest(daemon).create_table(f"{namespace}.t", SCHEMA)
    made.append(pa.table({"id": [7]}, schema=SCHEMA))
    metadata_dir = local(made.location()) / "metadata"
    metadata_files = sorted(metadata_dir.glob("*.metadata.json"))
    ro = rest(daemon, "ro")
    loaded = ro.load_table(f"{namespace}.t")
    assert loaded.scan().to_arrow().column("id").to_pylist() == [7]
    assert (namespace, "t") in ro.list_tables(namespace)
    with pytest.raises(ForbiddenError):
        ro.create_table(f"{namespace}.new", SCHEMA)
    with pytest.raises(ForbiddenError):
        loaded.append(pa.table({"id": [8]}, schema=SCHEMA))
    with pytest.raises(ForbiddenError):
        ro.drop_table(f"{namespace}.t")
    with pytest.raises(ForbiddenError):
        ro.create_namespace(unique("rons"))
    refused(commit(daemon, namespace, "t", [{"action": "set-properties", "updates": {"a": "b"}}], "ro"),
            403, "ForbiddenException")
    assert rest(daemon).load_table(f"{namespace}.t").scan().to_arrow().num_rows == 1
    # No metadata file written by a refused commit (the client's append wrote its own data file
    # and manifests before it asked: those are the client's).
    assert sorted(metadata_dir.glob("*.metadata.json")) == metadata_files


def test_a_staging_table_is_neither_listed_nor_loadable(daemon: Daemon, client: CatalogClient,
                                                        namespace: str) -> None:
    stage = client.begin_stage(f"main.{namespace}.target", "id bigint")
    try:
        hidden = stage.staging_table
        assert hidden and hidden.startswith("__catalogd_stage_")
        catalog = rest(daemon)
        assert catalog.list_tables(namespace) == []
        with pytest.raises(NoSuchTableError):
            catalog.load_table(f"{namespace}.{hidden}")
        assert call(daemon, "GET", f"/v1/main/namespaces/{namespace}/tables/{hidden}").status == 404
        with pytest.raises(NoSuchTableError):
            catalog.drop_table(f"{namespace}.{hidden}")
        with pytest.raises(NoSuchTableError):
            catalog.rename_table(f"{namespace}.{hidden}", f"{namespace}.taken")
        assert client.get_stage(stage.id).state is StageState.OPEN  # untouched
    finally:
        client.abort_stage(stage.id, writer_stopped=True)


# ---------------------------------------------------------------- auth

WRITER = "iceberg-writer-token-5f0d6c1e9a2b4c"
READER = "iceberg-reader-token-0c9b8a7d6e5f4a"


@pytest.fixture
def authd(daemon_factory: Callable[..., Daemon]) -> Daemon:
    auth = {"enabled": True,
            "principals": [{"name": "writer", "token": WRITER}, {"name": "reader", "token": READER}],
            "grants": [{"principal": "writer", "catalog": "*", "role": "writer"},
                       {"principal": "reader", "catalog": "*", "role": "reader"}],
            # A back-off far longer than the test: a repeated wrong token stays held back.
            "throttle": {"free-attempts": 3, "base-delay": "1min", "max-delay": "10min"}}
    return daemon_factory(name="iceauth", catalogs=[{"name": "scratch", "type": "memory", "default": True}],
                          extra={"auth": auth})


def test_auth_reader_loads_writer_commits_no_token_is_401(authd: Daemon) -> None:
    writer = rest(authd, "scratch", token=WRITER)
    ns = unique()
    writer.create_namespace(ns)
    table = writer.create_table(f"{ns}.t", SCHEMA)
    table.append(pa.table({"id": [1]}, schema=SCHEMA))

    reader = rest(authd, "scratch", token=READER)
    seen = reader.load_table(f"{ns}.t")
    assert seen.scan().to_arrow().num_rows == 1
    with pytest.raises(ForbiddenError, match="reader needs role writer"):
        seen.append(pa.table({"id": [2]}, schema=SCHEMA))
    with pytest.raises(ForbiddenError):
        reader.create_table(f"{ns}.mine", SCHEMA)
    with pytest.raises(ForbiddenError):
        reader.drop_table(f"{ns}.t")

    with pytest.raises(UnauthorizedError):
        rest(authd, "scratch")
    answer = call(authd, "GET", f"/v1/scratch/namespaces/{ns}/tables/t")
    refused(answer, 401, "NotAuthorizedException")
    assert answer.headers.get("www-authenticate") == "Bearer"

    # One wrong token again and again meets the back-off; the right ones are still taken.
    answers = [call(authd, "GET", f"/v1/scratch/namespaces/{ns}/tables/t", token="a-wrong-guess-0123456789")
               for _ in range(6)]
    assert all(a.status == 401 for a in answers)
    assert THROTTLED in answers[-1].error["message"], answers[-1]
    assert call(authd, "GET", f"/v1/scratch/namespaces/{ns}/tables/t", token=READER).status == 200
    assert writer.load_table(f"{ns}.t").scan().to_arrow().num_rows == 1

    def audited() -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        entries = read_audit(authd.data_dir / "audit" / "audit.jsonl", 100_000)
        wrote = [e for e in entries if e.get("surface") == "iceberg" and e["principal"] == "writer"
                 and e["outcome"] == "ok"]
        denied = [e for e in entries if e.get("surface") == "iceberg" and e["principal"] == "reader"
                  and e["outcome"] == "denied"]
        return (wrote, denied) if wrote and denied else None

    wrote, denied = wait_until(audited, 30.0, "the REST writes and denials in the audit log")
    assert any(e["operation"].startswith("create_table") and f"{ns}.t" in str(e.get("object")) for e in wrote), \
        wrote
    assert denied[-1]["detail"] == "reader needs role writer on catalog scratch for iceberg write", denied
    log = authd.log_path.read_text()
    assert WRITER not in log and READER not in log
