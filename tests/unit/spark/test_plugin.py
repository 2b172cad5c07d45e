"""Tests for catalogd.spark.plugin: the Spark catalog plugin's jar built from its sources, rebuilt
when they change, reused when they did not, and found (or refused, naming the fix) in an
installed package that has no sources."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from catalogd.errors import UnsupportedError
from catalogd.jdk import find_javac
from catalogd.spark import plugin

HELLO = 'package x;\npublic class Hello {\n  public static String hi() { return "hi"; }\n}\n'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A ``jvm/spark-catalog`` of one tiny class (src/) and one generated file (gen/)."""
    source = tmp_path / "spark-catalog"
    (source / "src" / "x").mkdir(parents=True)
    (source / "src" / "x" / "Hello.java").write_text(HELLO)
    (source / "gen" / "x").mkdir(parents=True)
    (source / "gen" / "x" / "Gen.java").write_text("package x;\nclass Gen {}\n")
    return source


@pytest.fixture
def no_jars(tmp_path: Path) -> Path:
    """An empty classpath folder: the tiny sources need nothing, and javac scans no 300 jars."""
    jars = tmp_path / "jars"
    jars.mkdir()
    return jars


def _no_compile(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(f"javac ran: {args}")


def _jar_with_hash(jar: Path, digest: str) -> Path:
    jar.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/catalogd-sources.sha256", digest + "\n")
    return jar


def test_a_jar_is_built_reused_while_current_and_rebuilt_when_a_source_changes(
        root: Path, no_jars: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    javac = find_javac()
    if javac is None:
        pytest.skip("no javac (install openjdk-17-jdk-headless)")
    jar = tmp_path / "catalogd" / "jars" / plugin.JAR_NAME
    assert plugin.build(root, jar, no_jars, javac) == jar
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        assert z.read("META-INF/catalogd-sources.sha256").decode().strip() == plugin.source_hash(root)
    # Both source folders are compiled (gen/ holds the Thrift client).
    assert {"x/Hello.class", "x/Gen.class", "META-INF/MANIFEST.MF"} <= names
    assert [p.name for p in jar.parent.iterdir()] == [plugin.JAR_NAME], "no build folder is left"

    # Current: found, not compiled again.
    with monkeypatch.context() as m:
        m.setattr(plugin.subprocess, "run", _no_compile)
        assert plugin.build(root, jar, no_jars, javac) == jar

    # A changed source: the old jar is stale, so it is rebuilt (and records the new hash).
    old = plugin.source_hash(root)
    (root / "src" / "x" / "Hello.java").write_text(HELLO.replace('"hi"', '"hello"'))
    assert plugin.source_hash(root) != old
    plugin.build(root, jar, no_jars, javac)
    with zipfile.ZipFile(jar) as z:
        assert z.read("META-INF/catalogd-sources.sha256").decode().strip() == plugin.source_hash(root)


def test_the_hash_covers_every_source_and_its_path(root: Path) -> None:
    first = plugin.source_hash(root)
    assert plugin.source_hash(root) == first
    (root / "gen" / "x" / "More.java").write_text("package x;\nclass More {}\n")
    second = plugin.source_hash(root)
    assert second != first
    (root / "gen" / "x" / "More.java").rename(root / "src" / "x" / "More.java")
    assert plugin.source_hash(root) not in (first, second)


def test_a_javac_failure_is_an_unsupported_error_with_javac_s_message(
        root: Path, no_jars: Path, tmp_path: Path) -> None:
    javac = tmp_path / "bin" / "javac"
    javac.parent.mkdir()
    javac.write_text("#!/bin/sh\necho 'Hello.java:2: error: cannot find symbol' >&2\nexit 1\n")
    javac.chmod(0o755)
    jar = tmp_path / "jars-out" / plugin.JAR_NAME
    stale = _jar_with_hash(jar, "0" * 16).read_bytes()
    with pytest.raises(UnsupportedError) as info:
        plugin.build(root, jar, no_jars, str(javac))
    assert "compiling the Spark catalog plugin" in info.value.message
    assert "Hello.java:2: error: cannot find symbol" in info.value.message
    # The jar that was there is left as it was (never half-written), and no build folder remains.
    assert jar.read_bytes() == stale
    assert [p.name for p in jar.parent.iterdir()] == [plugin.JAR_NAME]


def test_an_installed_package_without_sources_uses_the_jar_it_carries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = _jar_with_hash(tmp_path / "site-packages" / "catalogd" / "jars" / plugin.JAR_NAME, "anything")
    monkeypatch.setattr(plugin, "source_root", lambda: None)
    monkeypatch.setattr(plugin, "_package_jar", lambda: jar)
    monkeypatch.setattr(plugin, "find_javac", _no_compile)
    assert plugin.plugin_jar() == jar


def test_an_installed_package_without_the_jar_is_refused_naming_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = tmp_path / "site-packages" / "catalogd" / "jars" / plugin.JAR_NAME
    monkeypatch.setattr(plugin, "source_root", lambda: None)
    monkeypatch.setattr(plugin, "_package_jar", lambda: jar)
    with pytest.raises(UnsupportedError) as info:
        plugin.plugin_jar()
    assert str(jar) in info.value.message and "not installed" in info.value.message
    assert "make" in info.value.message and "wheel" in info.value.message


def test_a_checkout_s_current_jar_needs_no_javac(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = _jar_with_hash(tmp_path / "catalogd" / "jars" / plugin.JAR_NAME, plugin.source_hash(root))
    monkeypatch.setattr(plugin, "source_root", lambda: root)
    monkeypatch.setattr(plugin, "_package_jar", lambda: jar)
    monkeypatch.setattr(plugin, "find_javac", lambda: None)
    assert plugin.plugin_jar() == jar


def test_a_checkout_s_stale_jar_without_javac_is_refused_not_used(
        root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = _jar_with_hash(tmp_path / "catalogd" / "jars" / plugin.JAR_NAME, "stale")
    monkeypatch.setattr(plugin, "source_root", lambda: root)
    monkeypatch.setattr(plugin, "_package_jar", lambda: jar)
    monkeypatch.setattr(plugin, "find_javac", lambda: None)
    with pytest.raises(UnsupportedError, match="not built and no javac") as info:
        plugin.plugin_jar()
    assert "openjdk-17-jdk-headless" in info.value.message


def test_a_checkout_s_stale_jar_is_rebuilt_against_pyspark_s_jars(
        root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jar = _jar_with_hash(tmp_path / "catalogd" / "jars" / plugin.JAR_NAME, "stale")
    built: list[tuple[Path, Path, Path, str]] = []

    def fake_build(r: Path, j: Path, jars: Path, javac: str, what: str) -> Path:
        built.append((r, j, jars, javac))
        return j

    monkeypatch.setattr(plugin, "source_root", lambda: root)
    monkeypatch.setattr(plugin, "_package_jar", lambda: jar)
    monkeypatch.setattr(plugin, "find_javac", lambda: "/jdk/bin/javac")
    monkeypatch.setattr(plugin, "build", fake_build)
    assert plugin.plugin_jar() == jar
    assert built == [(root, jar, plugin.pyspark_jars(), "/jdk/bin/javac")]
    assert any(plugin.pyspark_jars().glob("spark-sql_*.jar"))


def test_the_checkout_s_sources_are_found() -> None:
    root = plugin.source_root()
    assert root is not None and (root / "src" / "catalogd" / "spark").is_dir()
    assert plugin.source_hash(root) == plugin.source_hash(root)


def test_the_command_prints_the_jar_or_exits_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(plugin, "plugin_jar", lambda: tmp_path / plugin.JAR_NAME)
    monkeypatch.setattr(plugin, "connect_server_jar", lambda: tmp_path / plugin.CONNECT_SERVER_JAR_NAME)
    plugin.main()
    assert capsys.readouterr().out == f"{tmp_path / plugin.JAR_NAME}\n{tmp_path / plugin.CONNECT_SERVER_JAR_NAME}\n"

    def refused() -> Path:
        raise UnsupportedError("no javac")

    monkeypatch.setattr(plugin, "plugin_jar", refused)
    with pytest.raises(SystemExit) as info:
        plugin.main()
    assert info.value.code == "no javac"


def test_the_connect_server_s_jar_is_found_and_built_from_its_own_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its own jar and folder: a build failure of one leaves the other."""
    root = tmp_path / "connect-server"
    (root / "src").mkdir(parents=True)
    built: list[tuple[Path, Path, str]] = []

    def fake_build(r: Path, j: Path, jars: Path, javac: str, what: str) -> Path:
        built.append((r, j, what))
        return j

    monkeypatch.setattr(plugin, "source_root",
                        lambda folder="spark-catalog": root if folder == "connect-server" else None)
    monkeypatch.setattr(plugin, "find_javac", lambda: "/jdk/bin/javac")
    monkeypatch.setattr(plugin, "pyspark_jars", lambda: tmp_path / "jars")
    monkeypatch.setattr(plugin, "build", fake_build)
    jar = plugin.connect_server_jar()
    assert jar.name == plugin.CONNECT_SERVER_JAR_NAME
    assert built == [(root, jar, "catalogd's Spark Connect server")]
    assert (Path(__file__).resolve().parents[3] / "jvm" / "connect-server" / "src" / "catalogd" / "connect"
            / "ConnectServer.java").is_file()


def test_make_builds_the_plugin_with_the_rest_of_the_java_code() -> None:
    """A fresh clone's ``make test`` builds the jar before the tests (make install, make jvm)."""
    makefile = (Path(__file__).resolve().parents[3] / "Makefile").read_text()
    jvm = makefile.split("\njvm:", 1)[1].split("\n\n", 1)[0]
    assert "-m catalogd.spark.plugin" in jvm
    for target in ("test:", "unit:", "integration:", "run:"):
        line = next(line for line in makefile.splitlines() if line.startswith(target))
        assert "jvm" in line.split(":", 1)[1], line


def test_a_wheel_ships_the_jar_as_package_data() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    assert "jars/*.jar" in pyproject["tool"]["setuptools"]["package-data"]["catalogd"]
    assert plugin._package_jar().parent.name == "jars" and plugin._package_jar().parent.parent.name == "catalogd"

