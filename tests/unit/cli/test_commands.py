"""Every command prints what the CLI printed before it became a package, in text and in JSON.

The cases and the fake daemon are in ``cli_cases.py`` and ``fake_client.py``; the expected
output (exit code, stdout, stderr, the calls made) is ``golden_output.json``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_cases import GOLDEN, Case, case_id, cases, run_case

EXPECTED: dict[str, dict[str, Any]] = json.loads(GOLDEN.read_text())


def test_every_case_has_its_expected_output() -> None:
    assert sorted(EXPECTED) == sorted(case_id(c) for c in cases())


@pytest.mark.parametrize("case", cases(), ids=case_id)
def test_a_command_prints_what_it_printed_before(case: Case) -> None:
    assert run_case(case) == EXPECTED[case_id(case)]
