"""Shared by unit and integration tests: keep it small."""

from __future__ import annotations

import socket
import uuid

import pytest


def unique(prefix: str) -> str:
    """A name no other test (or earlier run against the same metastore) uses."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def unique_name():
    """``unique_name("db")`` -> ``"db_3f9c0a1b2d"``."""
    return unique


@pytest.fixture
def closed_port() -> int:
    """A local port nothing listens on (bound for a moment, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
