"""The line the daemon prints once it is ready: how to reach it from the CLI, Spark and HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalogd.model import CatalogInfo
from catalogd.server.daemon import next_steps

CATALOGS = [CatalogInfo("main", "hive", default=True, metastore="thrift://127.0.0.1:1"),
            CatalogInfo("scratch", "memory")]


@pytest.fixture
def venv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A venv-shaped directory, with the cwd above it (as `make run` has it)."""
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "activate").write_text("")
    (tmp_path / ".venv" / "bin" / "catalogd").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path / ".venv"


def test_make_run_line_names_the_activation_spark_conf_and_health(venv: Path) -> None:
    line = next_steps("127.0.0.1:9190", "127.0.0.1:9191", CATALOGS, prefix=str(venv), on_path="")
    assert line == ("catalogd is ready. CLI: . .venv/bin/activate; catalogd catalog list  |  "
                    "Spark conf: catalogd spark-conf main  |  HTTP: http://127.0.0.1:9191/healthz  |  "
                    "Console: http://127.0.0.1:9191/ui")
    assert "\n" not in line


def test_an_activated_venv_needs_no_activation(venv: Path) -> None:
    line = next_steps("localhost:9190", "localhost:9191", CATALOGS, prefix=str(venv),
                      on_path=str(venv / "bin" / "catalogd"))
    assert "CLI: catalogd catalog list  |" in line


def test_another_port_is_named_and_a_memory_default_points_spark_at_a_hive_catalog(venv: Path) -> None:
    catalogs = [CatalogInfo("scratch", "memory", default=True), CatalogInfo("lake", "hive")]
    line = next_steps("127.0.0.1:9290", "127.0.0.1:9291", catalogs, prefix=str(venv),
                      on_path=str(venv / "bin" / "catalogd"))
    assert "CLI: catalogd --server 127.0.0.1:9290 catalog list" in line
    assert "Spark conf: catalogd --server 127.0.0.1:9290 spark-conf lake" in line


def test_no_hive_catalog_no_spark(venv: Path) -> None:
    line = next_steps("127.0.0.1:9190", "127.0.0.1:9191", [CatalogInfo("scratch", "memory", default=True)],
                      prefix=str(venv), on_path=str(venv / "bin" / "catalogd"))
    assert "Spark" not in line and line.endswith("HTTP: http://127.0.0.1:9191/healthz  |  Console: http://127.0.0.1:9191/ui")
