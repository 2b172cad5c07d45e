"""Shared by the catalog tests."""

from __future__ import annotations

import pytest
from fake_hms import FakeHms


@pytest.fixture
def fake() -> FakeHms:
    """An empty in-memory HMS client (fake_hms.py) for a hive catalog to attach."""
    return FakeHms()
