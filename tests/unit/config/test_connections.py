"""Tests for the Thrift connection limits in catalogd.config.models.ServerConfig (issue 11, item 4)."""

from __future__ import annotations

import datetime

import pytest
from config_cases import ONE_MEMORY, SRC

from catalogd.config import parse_config
from catalogd.errors import ConfigError


def test_defaults() -> None:
    server = parse_config(ONE_MEMORY).server
    assert server.workers == 32
    assert server.max_connections == 1000
    assert server.idle_timeout == datetime.timedelta(minutes=5)
    assert server.frame_timeout == datetime.timedelta(seconds=30)
    assert server.max_buffered_bytes == 64 * 1024 * 1024


def test_keys_are_read() -> None:
    server = parse_config("server: {max-connections: 5000, idle-timeout: 1 min, frame-timeout: 5s,"
                          " max-buffered-bytes: 33554432}\n" + ONE_MEMORY).server
    assert server.max_connections == 5000
    assert server.idle_timeout == datetime.timedelta(minutes=1)
    assert server.frame_timeout == datetime.timedelta(seconds=5)
    assert server.max_buffered_bytes == 32 * 1024 * 1024


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("server: {max-connections: 0}", "server.max-connections: must be at least 1, got 0"),
        ("server: {idle-timeout: 0s}", "server.idle-timeout: must be longer than zero"),
        ("server: {frame-timeout: soon}", "server.frame-timeout: invalid duration 'soon'"),
        ("server: {max-buffered-bytes: -1}", "server.max-buffered-bytes: must be at least 1"),
        ("server: {max-buffered-bytes: 1000, max-frame-size: 2000}",
         "server: max-buffered-bytes (1000) is smaller than max-frame-size (2000)"),
    ],
)
def test_problems(snippet: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(snippet + "\n" + ONE_MEMORY, source=SRC)
    problems = info.value.problems
    assert len(problems) == 1
    assert problems[0].startswith(f"{SRC}: {expected}"), problems
