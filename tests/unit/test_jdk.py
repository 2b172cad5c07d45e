"""Tests for catalogd.jdk: the javac and the pyspark jars that catalogd's Java code is built with."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from catalogd import jdk


def test_javac_is_an_executable_that_runs_or_none() -> None:
    javac = jdk.find_javac()
    if javac is None:
        pytest.skip("no javac (install openjdk-17-jdk-headless)")
    assert os.access(javac, os.X_OK)
    assert subprocess.run([javac, "-version"], capture_output=True, check=False, timeout=120).returncode == 0


def test_java_home_s_javac_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    javac = tmp_path / "jdk" / "bin" / "javac"
    javac.parent.mkdir(parents=True)
    javac.write_text("#!/bin/sh\n")
    javac.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert jdk.find_javac() == str(javac)


def test_without_a_jdk_there_is_no_javac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nothing"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert jdk.find_javac() is None


def test_the_pyspark_jars_hold_spark_sql() -> None:
    jars = jdk.pyspark_jars()
    assert jars.name == "jars" and any(jars.glob("spark-sql_*.jar")) and any(jars.glob("spark-catalyst_*.jar"))
