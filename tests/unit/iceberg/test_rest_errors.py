"""What the REST door raises, in the Iceberg REST spec's error model."""

from __future__ import annotations

import json

import pytest
from pyiceberg import exceptions as ice

from catalogd import errors as cd
from catalogd.hms.refused import meta_error
from catalogd.hms.router import LAST_ERROR
from catalogd.iceberg.errors import CONNECTION, error_body, translate
from catalogd.iceberg.loopback import connection


@pytest.mark.parametrize(("exc", "code", "kind"), [
    (ice.NoSuchTableError("t"), 404, "NoSuchTableException"),
    (ice.NoSuchNamespaceError("n"), 404, "NoSuchNamespaceException"),
    (ice.TableAlreadyExistsError("t"), 409, "AlreadyExistsException"),
    (ice.NamespaceNotEmptyError("n"), 409, "NamespaceNotEmptyException"),
    (ice.CommitFailedException("c"), 409, "CommitFailedException"),
    (cd.PermissionDeniedError("no"), 403, "ForbiddenException"),
    (cd.CatalogNotFoundError("c"), 404, "NoSuchWarehouseException"),
    (cd.DatabaseNotFoundError("d"), 404, "NoSuchNamespaceException"),
    (cd.InvalidArgumentError("bad"), 400, "BadRequestException"),
    (cd.MetastoreUnavailableError("down"), 503, "ServiceUnavailableException"),
    (ValueError("bad value"), 400, "BadRequestException"),
])
def test_errors_map_to_the_spec(exc: Exception, code: int, kind: str) -> None:
    err = translate(exc)
    assert (err.code, err.type) == (code, kind)


def test_a_refusal_of_catalogd_s_rules_is_answered_as_its_typed_error() -> None:
    conn = connection("alice", "127.0.0.1:1")
    conn.state[LAST_ERROR] = meta_error("catalogd: permission denied: user 'alice' needs role writer on catalog main",
                                        cd.PermissionDeniedError)
    token = CONNECTION.set(conn)
    try:
        # pyiceberg's HiveCatalog would have turned the MetaException into "no such namespace".
        err = translate(ice.NoSuchNamespaceError("Database does not exists: x"))
    finally:
        CONNECTION.reset(token)
    assert (err.code, err.type) == (403, "ForbiddenException")
    assert err.message.startswith("permission denied")


def test_a_metastore_s_own_answer_carries_no_kind_of_catalogd_s() -> None:
    # Relayed as the metastore said it: its text is not read for a kind (it may say "refused").
    conn = connection("alice", "127.0.0.1:1")
    conn.state[LAST_ERROR] = meta_error("metastore: the lock was refused")
    token = CONNECTION.set(conn)
    try:
        err = translate(ice.NoSuchNamespaceError("Database does not exists: x"))
    finally:
        CONNECTION.reset(token)
    assert (err.code, err.type) == (404, "NoSuchNamespaceException")


def test_error_body_is_the_spec_s_model() -> None:
    assert json.loads(error_body(404, "NoSuchTableException", "m")) == {
        "error": {"message": "m", "type": "NoSuchTableException", "code": 404}}


@pytest.mark.parametrize(("exc", "message"), [
    # pyiceberg's HiveCatalog's words -> Iceberg's (CatalogHandlers), which clients and the RCK match.
    (ice.NoSuchNamespaceError("Database does not exists: ns"), "Namespace does not exist: ns"),
    (ice.NoSuchNamespaceError("Database does not exists: @scratch#ns"), "Namespace does not exist: ns"),
    (ice.NamespaceAlreadyExistsError("Database @scratch#newdb already exists"), "Namespace already exists: newdb"),
    (ice.TableAlreadyExistsError("Table ns.t already exists"), "Table already exists: ns.t"),
    # pyiceberg's requirement checks -> Iceberg's UpdateRequirement.
    (ice.CommitFailedException("Table already exists"), "Requirement failed: table already exists"),
    (ice.CommitFailedException("db.t: Table already exists"), "db.t: Requirement failed: table already exists"),
    (ice.CommitFailedException("Table UUID does not match: a != b"),
     "Requirement failed: UUID does not match: expected b != a"),
    (ice.CommitFailedException("Requirement failed: current schema id has changed: expected 0, found 1"),
     "Requirement failed: current schema changed: expected id 0 != 1"),
    (ice.CommitFailedException("Requirement failed: last assigned field id has changed: expected 1, found 3"),
     "Requirement failed: last assigned field id changed: expected id 1 != 3"),
    (ice.CommitFailedException("Requirement failed: last assigned partition id has changed: expected 999, found 1000"),
     "Requirement failed: last assigned partition id changed: expected id 999 != 1000"),
    (ice.CommitFailedException("Requirement failed: default spec id has changed: expected 0, found 1"),
     "Requirement failed: default partition spec changed: expected id 0 != 1"),
    (ice.CommitFailedException("Requirement failed: default sort order id has changed: expected 0, found 1"),
     "Requirement failed: default sort order changed: expected id 0 != 1"),
    (ice.CommitFailedException("Requirement failed: branch main has changed: expected id 1, found 2"),
     "Requirement failed: branch main has changed: expected id 1 != 2"),
    # Anything else keeps its words.
    (ice.NoSuchTableError("Table does not exist: ns.t"), "Table does not exist: ns.t"),
    (ice.CommitFailedException("could not lock db.t: WAITING"), "could not lock db.t: WAITING"),
])
def test_messages_are_in_iceberg_s_words(exc: Exception, message: str) -> None:
    assert translate(exc).message == message


@pytest.mark.parametrize("exc", [
    FileNotFoundError("Cannot open file, does not exist: file:/w/t/metadata/1.json"),
    FileNotFoundError("Cannot get file info, file not found: file:/w/t/metadata/1.json"),
    FileNotFoundError(2, "No such file or directory", "file:/w/t/metadata/1.json"),
])
def test_a_missing_file_is_iceberg_s_not_found(exc: Exception) -> None:
    err = translate(exc)
    assert (err.code, err.type) == (404, "NotFoundException")
    assert err.message == "Failed to open input stream for file: file:/w/t/metadata/1.json"
