"""Config files a careless or hostile hand wrote: each is refused with exit 2 and one line naming the key
(``config check`` and ``serve`` alike), never a traceback."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path

import pytest

from catalogd.cli.app import main
from catalogd.config import parse_config
from catalogd.config.loading import MAX_DEPTH
from catalogd.errors import ConfigError

MEMORY = "catalogs:\n  - name: main\n    type: memory\n"


def _deep_flow(tmp_path: Path) -> str:
    return MEMORY + "spark:\n  conf: " + "[" * 30_000 + "]" * 30_000 + "\n"


def _deep_mapping(tmp_path: Path) -> str:
    return MEMORY + "spark:\n  conf: " + "{a: " * 20_000 + "1" + "}" * 20_000 + "\n"


def _data_dir_file(tmp_path: Path) -> str:
    (tmp_path / "plain").write_text("x")
    return f"server:\n  data-dir: {tmp_path / 'plain' / 'below'}\n" + MEMORY


#: (name, YAML text (or a function of tmp_path making it), the key the line names, what the line says)
CASES: list[tuple[str, str | Callable[[Path], str], str, str]] = [
    ("deep-list", _deep_flow, "spark.conf[0]", f"nested more than {MAX_DEPTH} levels deep"),
    ("deep-mapping", _deep_mapping, "spark.conf.a", f"nested more than {MAX_DEPTH} levels deep"),
    ("dev-null", "server:\n  data-dir: /dev/null\n" + MEMORY, "server.data-dir",
     "'/dev/null' is not a directory (it is a character device)"),
    ("data-dir-below-a-file", _data_dir_file, "server.data-dir", "is a regular file)"),
    ("cache-ttl", "cache:\n  ttl: 3650 days\n" + MEMORY, "cache.ttl", "must be at most 1 day, got 3650 days"),
    ("huge-lease", "staging:\n  lease: 999999999 days\n" + MEMORY, "staging.lease", "must be at most 1 day"),
    ("socket-timeout", "catalogs:\n  - name: main\n    type: hive\n    connection:\n"
                       "      hive.metastore.uris: thrift://h:9083\n"
                       "      hive.metastore.client.socket.timeout: 400 days\n",
     "catalogs[0].connection['hive.metastore.client.socket.timeout']", "must be at most 1 day, got 400 days"),
    ("denial-window", "auth:\n  audit:\n    denial-window: 2 h\n" + MEMORY, "auth.audit.denial-window",
     "must be at most 1 h"),
    ("kelvin", "catalogs:\n  - name: \u212aat\n    type: memory\n", "catalogs[0].name",
     "U+212A KELVIN SIGN is changed by Unicode normalisation (NFKC) (the name would read as 'kat')"),
    ("ligature-grant", MEMORY + "auth:\n  principals: [{name: etl}]\n  grants:\n"
                                "    - {principal: etl, catalog: \ufb01le, role: reader}\n",
     "auth.grants[0].catalog", "would read as 'file'"),
    ("unset-variable", "server:\n  data-dir: ${CATALOGD_TEST_SURELY_UNSET}\n" + MEMORY, "server.data-dir",
     "line 2: environment variable 'CATALOGD_TEST_SURELY_UNSET' is not set"),
    ("python-tag", "server:\n  data-dir: !!python/object/apply:os.system ['true']\n" + MEMORY, "server.data-dir",
     "line 2, column 13: invalid YAML: could not determine a constructor for the tag"),
    ("unhashable-key", "server:\n  ? [a, b]\n  : 1\n" + MEMORY, "server",
     "line 2, column 5: invalid YAML: while constructing a mapping: found unhashable key"),
]


def _write(tmp_path: Path, text: str | Callable[[Path], str]) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text if isinstance(text, str) else text(tmp_path), encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "key", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_config_check_exits_2_with_one_line_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           text: str | Callable[[Path], str], key: str,
                                                           message: str) -> None:
    monkeypatch.delenv("CATALOGD_TEST_SURELY_UNSET", raising=False)
    path = _write(tmp_path, text)
    assert main(["config", "check", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"{path}: {key}: ") and message in line, line


@pytest.mark.parametrize(("text", "key", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_serve_exits_2_with_one_error_line_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          text: str | Callable[[Path], str], key: str,
                                                          message: str) -> None:
    monkeypatch.delenv("CATALOGD_TEST_SURELY_UNSET", raising=False)
    path = _write(tmp_path, text)
    assert main(["serve", "--config", str(path)]) == 2  # refused before any daemon starts
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert line.startswith(f"error: config: {path}: {key}: ") and message in line, line
    assert "Traceback" not in out + err


def test_each_duration_key_has_a_documented_maximum() -> None:
    from catalogd.config import models
    from catalogd.config.durations import AtMost

    sections = {models.ServerConfig: "server", models.DynamicTablesConfig: "dynamic-tables",
                models.StagingConfig: "staging", models.CacheConfig: "cache", models.AuditConfig: "auth.audit"}
    docs = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text().splitlines()
    for model, section in sections.items():
        for name, field in model.model_fields.items():
            if field.annotation is not datetime.timedelta:
                continue
            limits = [m for m in field.metadata if isinstance(m, AtMost)]
            assert limits, f"{model.__name__}.{name} has no maximum"
            key = f"`{section}.{field.alias or name}`"
            assert any(key in line and f"`{limits[0].le}`" in line for line in docs), (key, limits[0].le)


def test_the_longest_allowed_values_are_accepted() -> None:
    config = parse_config("cache:\n  ttl: 1 day\nstaging:\n  lease: 1 day\n  max-lease: 7 days\n"
                          "dynamic-tables:\n  refresh-timeout: 7 days\n" + MEMORY)
    assert config.cache.ttl == datetime.timedelta(days=1)


def test_an_ascii_name_is_unchanged_and_a_name_with_an_accent_keeps_its_old_message() -> None:
    assert parse_config("catalogs:\n  - name: Main_1\n    type: memory\n").catalogs[0].name == "main_1"
    with pytest.raises(ConfigError) as info:
        parse_config("catalogs:\n  - name: caf\u00e9\n    type: memory\n")
    assert "use letters, digits and underscores" in info.value.problems[0]
