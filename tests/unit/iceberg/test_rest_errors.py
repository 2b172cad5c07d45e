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
    conn.state[LAST_ERROR] = meta_error("catalogd: permission denied: user 'alice' needs role writer on catalog main")
    token = CONNECTION.set(conn)
    try:
        # pyiceberg's HiveCatalog would have turned the MetaException into "no such namespace".
        err = translate(ice.NoSuchNamespaceError("Database does not exists: x"))
    finally:
        CONNECTION.reset(token)
    assert (err.code, err.type) == (403, "ForbiddenException")
    assert err.message.startswith("permission denied")


def test_error_body_is_the_spec_s_model() -> None:
    assert json.loads(error_body(404, "NoSuchTableException", "m")) == {
        "error": {"message": "m", "type": "NoSuchTableException", "code": 404}}
