"""The stage-key fingerprint: stable, different per key, and saying nothing about the key."""

from __future__ import annotations

from catalogd.stage_key import fingerprint


def test_the_fingerprint_is_stable_and_short() -> None:
    key = b"catalogd-integration-session-stage-secret"
    assert fingerprint(key) == fingerprint(key)
    assert fingerprint(key).startswith("v1:") and len(fingerprint(key)) == 3 + 16


def test_keys_have_different_fingerprints_that_do_not_show_them() -> None:
    a, b = b"a" * 32, b"b" * 32
    assert fingerprint(a) != fingerprint(b)
    assert "aaaa" not in fingerprint(a) and a.hex()[:8] not in fingerprint(a)
