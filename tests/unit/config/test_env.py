"""Tests for catalogd.config.env: ``${VAR}`` expansion, seen through parse_config."""

from __future__ import annotations

import pytest
from config_cases import ONE_MEMORY, SRC, problems_of

from catalogd.config import parse_config


def test_env_variables_are_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATALOGD_TEST_PORT", "9300")
    monkeypatch.setenv("CATALOGD_TEST_NAME", "from_env")
    monkeypatch.delenv("CATALOGD_TEST_UNSET", raising=False)
    config = parse_config(
        """
server:
  port: ${CATALOGD_TEST_PORT}
  host: ${CATALOGD_TEST_UNSET:-0.0.0.0}
catalogs:
  - name: ${CATALOGD_TEST_NAME:-ignored}
    type: memory
"""
    )
    assert config.server.port == 9300
    assert config.server.host == "0.0.0.0"
    assert config.catalogs[0].name == "from_env"


def test_unset_env_variable_without_default_is_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CATALOGD_TEST_UNSET", raising=False)
    problems = problems_of("\ncatalogs:\n  - name: ${CATALOGD_TEST_UNSET}\n    type: memory\n")
    assert len(problems) == 1
    # The key it is under, then its line.
    assert problems[0].startswith(f"{SRC}: catalogs[0].name: line 3: ")
    assert "'CATALOGD_TEST_UNSET' is not set" in problems[0]


def test_literal_dollar_brace_and_comments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CATALOGD_TEST_UNSET", raising=False)
    config = parse_config(
        "# mentions ${CATALOGD_TEST_UNSET} in a comment\n"
        + ONE_MEMORY
        + 'spark:\n  conf:\n    spark.x: "$${HOME}"\n'
    )
    assert config.spark.conf == {"spark.x": "${HOME}"}
