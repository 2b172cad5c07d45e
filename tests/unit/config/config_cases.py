"""What the config tests share: a minimal valid config and a way to collect the problems of a bad one."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from catalogd.config import parse_config
from catalogd.errors import ConfigError

#: The repository (the folder with pyproject.toml), however deep this file sits under tests/.
REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
SRC = "conf/x.yaml"

ONE_MEMORY = """
catalogs:
  - name: scratch
    type: memory
"""


def problems_of(text: str) -> list[str]:
    """The problems parse_config reports for ``text`` (failing the test if it is accepted)."""
    with pytest.raises(ConfigError) as info:
        parse_config(text, source=SRC)
    return info.value.problems


def td(**kwargs: float) -> datetime.timedelta:
    return datetime.timedelta(**kwargs)
