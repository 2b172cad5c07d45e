"""Shared by unit and integration tests: keep it small."""

from __future__ import annotations

import uuid

import pytest


def unique(prefix: str) -> str:
    """A name no other test (or earlier run against the same metastore) uses."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def unique_name():
    """``unique_name("db")`` -> ``"db_3f9c0a1b2d"``."""
    return unique
