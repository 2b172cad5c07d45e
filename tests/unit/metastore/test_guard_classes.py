"""Tests for catalogd.metastore.guard_classes: the metastore's key check found, compiled once, or refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from catalogd.errors import MetastoreUnavailableError
from catalogd.metastore import guard_classes
from catalogd.metastore.embedded import EmbeddedMetastore, pyspark_jars_dir

CLASS_FILE = "catalogd/guard/KeyCheckingTransportFactory.class"


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the checkout's jvm/ sources, with no build, as a pip install has them."""
    root = guard_classes.source_root()
    assert root is not None
    copy = tmp_path / "jvm"
    shutil.copytree(root / "metastore-guard", copy / "metastore-guard")
    monkeypatch.setattr(guard_classes, "source_root", lambda: copy)
    return copy


def test_without_javac_an_unbuilt_check_refuses_the_start_naming_the_fix(
        sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard_classes, "find_javac", lambda: None)
    with pytest.raises(MetastoreUnavailableError) as info:
        guard_classes.classes_dir(tmp_path / "data", tmp_path / "jars")
    assert "openjdk-17-jdk-headless" in str(info.value) and "make" in str(info.value)
    # And so no metastore starts (it would serve anyone on the machine).
    with pytest.raises(MetastoreUnavailableError, match="not compiled"):
        EmbeddedMetastore("main", tmp_path / "data").start(timeout=5)


def test_it_is_compiled_once_into_the_data_dir_by_the_hash_of_its_sources(sources: Path, tmp_path: Path) -> None:
    if guard_classes.find_javac() is None:
        pytest.skip("no javac (install openjdk-17-jdk-headless)")
    data = tmp_path / "data"
    jars = pyspark_jars_dir()
    classes = guard_classes.classes_dir(data, jars)
    assert (classes / CLASS_FILE).is_file()
    assert classes.parent.parent == data / "jvm"
    assert guard_classes.classes_dir(data, jars) == classes  # found, not compiled again
    source = next((sources / "metastore-guard").rglob("*.java"))
    source.write_text(source.read_text() + "\n// changed\n")
    changed = guard_classes.classes_dir(data, jars)
    assert changed != classes and (changed / CLASS_FILE).is_file()


def test_a_compile_error_is_reported(sources: Path, tmp_path: Path) -> None:
    javac = guard_classes.find_javac()
    if javac is None:
        pytest.skip("no javac (install openjdk-17-jdk-headless)")
    source = next((sources / "metastore-guard").rglob("*.java"))
    source.write_text("this is not java")
    with pytest.raises(MetastoreUnavailableError, match="compiling the metastore guard"):
        guard_classes.build(sources, tmp_path / "out", pyspark_jars_dir(), javac)
    assert not list((tmp_path / "out").iterdir()), "no half-built folder is left"


def test_the_command_line_has_the_check_s_classes_and_no_key(tmp_path: Path) -> None:
    metastore = EmbeddedMetastore("main", tmp_path)
    cmd = metastore.command("/usr/bin/java", tmp_path / "jars", tmp_path / "guard")
    assert cmd[cmd.index("-cp") + 1].endswith(f":{tmp_path / 'guard'}")
    assert not any(metastore.key().decode("ascii")[-64:] in word for word in cmd if word)
