"""What makes a jdbc stage catalogd's own: its signature over the stage fields, schema and table."""

from __future__ import annotations

import pytest

from catalogd.catalog.jdbc_staging import PARAM, check_key, new_key, signature
from catalogd.errors import InvalidArgumentError

KEY = b"0123456789abcdef-stage-key"


def test_the_signature_covers_every_stage_field_and_the_place() -> None:
    meta = {PARAM + "target": "orders", PARAM + "owner": "etl", PARAM + "lease-deadline": 1}
    signed = signature(KEY, "sales", "__catalogd_stage_0123456789abcdef", meta)
    assert signed.startswith("v1:")
    # The signature field itself is left out, so a signed table verifies.
    assert signature(KEY, "sales", "__catalogd_stage_0123456789abcdef", {**meta, PARAM + "signature": signed}) == signed
    for changed in ({**meta, PARAM + "owner": "mallory"}, {**meta, PARAM + "target": "other"},
                    {**meta, PARAM + "lease-deadline": 2}):
        assert signature(KEY, "sales", "__catalogd_stage_0123456789abcdef", changed) != signed
    assert signature(KEY, "other", "__catalogd_stage_0123456789abcdef", meta) != signed
    assert signature(b"another key of enough length", "sales", "__catalogd_stage_0123456789abcdef", meta) != signed


def test_stage_keys() -> None:
    key = new_key()
    assert check_key(key) == key and len(key) == 16
    with pytest.raises(InvalidArgumentError):
        check_key("../etc")
