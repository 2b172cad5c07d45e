"""Tests for catalogd.config.loading: the packaged default, the default path, YAML syntax and reading files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from config_cases import ONE_MEMORY, REPO, SRC, problems_of, td

from catalogd.config import default_config_path, load_config
from catalogd.config.loading import MAX_CONFIG_SIZE
from catalogd.errors import ConfigError

# --------------------------------------------------------------------------- default files


def test_packaged_default_is_identical_to_conf_file() -> None:
    packaged = REPO / "catalogd" / "default.yaml"
    assert packaged.read_bytes() == (REPO / "conf" / "catalogd.yaml").read_bytes()


def test_packaged_default_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CATALOGD_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    path = default_config_path()
    assert path == REPO / "catalogd" / "default.yaml"
    config = load_config(path)
    assert config.source == str(path)
    assert config.model_dump() == load_config(REPO / "conf" / "catalogd.yaml").model_dump()
    assert [c.name for c in config.catalogs] == ["main", "scratch"]
    main, scratch = config.catalogs
    assert config.default_catalog is main
    assert main.type == "hive" and main.is_embedded and main.default_database == "default"
    assert scratch.type == "memory" and not scratch.default and scratch.connection == {}
    assert (config.server.port, config.server.http_port) == (9190, 9191)
    assert config.server.data_dir == Path("~/.catalogd").expanduser()
    assert config.dynamic_tables.freshness_threshold == td(minutes=30)
    assert config.spark.master == "local[2]"
    assert (config.staging.lease, config.staging.janitor_interval) == (td(seconds=60), td(seconds=10))


def test_default_config_path_prefers_env_then_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CATALOGD_CONFIG", raising=False)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "catalogd.yaml").write_text(ONE_MEMORY)
    assert default_config_path().resolve() == (tmp_path / "conf" / "catalogd.yaml").resolve()
    monkeypatch.setenv("CATALOGD_CONFIG", str(tmp_path / "elsewhere.yaml"))
    assert default_config_path() == tmp_path / "elsewhere.yaml"


# --------------------------------------------------------------------------- YAML and files


def test_malformed_yaml_reports_line_and_column() -> None:
    problems = problems_of("server:\n  port: 9190\n  host: [unclosed\ncatalogs: []\n")
    assert len(problems) == 1
    assert problems[0].startswith(f"{SRC}: line 4, column ")
    assert "invalid YAML" in problems[0]


def test_duplicate_yaml_key() -> None:
    problems = problems_of("server:\n  port: 1\n  port: 2\n" + ONE_MEMORY)
    assert problems == [f"{SRC}: line 3: duplicate key 'port' (already given on line 2)"]


@pytest.mark.parametrize("text", ["", "\n\n", "# nothing but a comment\n", "---\n"])
def test_empty_file(text: str) -> None:
    problems = problems_of(text)
    assert len(problems) == 1
    assert problems[0].startswith(f"{SRC}: the configuration is empty")


def test_top_level_must_be_a_mapping() -> None:
    assert problems_of("- a\n- b\n") == [
        f"{SRC}: expected a mapping of sections at the top level, got a list"
    ]


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(missing)
    assert str(missing) in str(info.value)
    assert info.value.problems == [str(info.value)]


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="directory"):
        load_config(tmp_path)


def test_load_config_names_the_file_in_problems(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("catalogs:\n  - {name: a, type: memory, read-only: maybe}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.problems == [f"{path}: catalogs[0].read-only: expected a boolean, got 'maybe'"]


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    """Opening a FIFO for reading waits for a writer: the loader must not even try to read it."""
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"named pipe \(FIFO\), not a regular file"):
        load_config(fifo)


def test_a_device_is_refused() -> None:
    with pytest.raises(ConfigError, match="/dev/zero: is a character device, not a regular file"):
        load_config("/dev/zero")


def test_a_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as f:
        f.truncate(50 * 1024 * 1024)  # sparse: costs no disk
    with pytest.raises(ConfigError, match=f"is {50 * 1024 * 1024} bytes; a configuration file may have at most "
                                          f"{MAX_CONFIG_SIZE}"):
        load_config(huge)


def test_a_file_at_the_size_cap_is_read(tmp_path: Path) -> None:
    text = "catalogs:\n  - {name: a, type: memory}\n"
    path = tmp_path / "padded.yaml"
    path.write_text(text + "#" * (MAX_CONFIG_SIZE - len(text) - 1) + "\n")
    assert path.stat().st_size == MAX_CONFIG_SIZE
    assert load_config(path).catalogs[0].name == "a"
