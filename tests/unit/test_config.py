"""Tests for catalogd.config: durations, defaults, environment expansion and every kind of problem."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from catalogd.config import (
    CatalogConfig,
    Config,
    ServerConfig,
    default_config_path,
    format_duration,
    load_config,
    parse_config,
    parse_duration,
    redact,
)
from catalogd.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
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


# --------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20s", td(seconds=20)),
        ("20 s", td(seconds=20)),
        ("5 min", td(minutes=5)),
        ("5m", td(minutes=5)),
        ("1 h", td(hours=1)),
        ("1h", td(hours=1)),
        ("2 hours", td(hours=2)),
        ("1 day", td(days=1)),
        ("1d", td(days=1)),
        ("3 days", td(days=3)),
        ("500ms", td(milliseconds=500)),
        ("90 seconds", td(seconds=90)),
        ("10 minutes", td(minutes=10)),
        ("1.5h", td(minutes=90)),
        ("  7 MIN ", td(minutes=7)),
        ("0s", td()),
        ("45", td(seconds=45)),
        (45, td(seconds=45)),
        (2.5, td(seconds=2.5)),
        (0, td()),
    ],
)
def test_parse_duration_accepts(text: str | int | float, expected: datetime.timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "   ", "soon", "5 parsecs", "1h30m", "s", "5 s s", "1e3s", ".5s", "5,0s"],
)
def test_parse_duration_rejects_garbage_naming_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    message = str(info.value)
    assert repr(text) in message
    assert "20s" in message and "5 min" in message and "1 day" in message


@pytest.mark.parametrize("value", ["-5s", " -1 h", "-3", -1, -0.5])
def test_parse_duration_rejects_negatives(value: str | int | float) -> None:
    with pytest.raises(ValueError, match="negative"):
        parse_duration(value)


@pytest.mark.parametrize("value", [True, None, float("nan"), float("inf"), [5]])
def test_parse_duration_rejects_non_durations(value: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (td(minutes=30), "30 min"),
        (td(seconds=20), "20s"),
        (td(hours=1), "1 h"),
        (td(days=1), "1 day"),
        (td(days=2), "2 days"),
        (td(minutes=90), "90 min"),
        (td(milliseconds=500), "500ms"),
        (td(microseconds=1500), "0.0015s"),
        (td(), "0s"),
    ],
)
def test_format_duration(value: datetime.timedelta, text: str) -> None:
    assert format_duration(value) == text
    assert parse_duration(text) == value


# --------------------------------------------------------------------------- defaults


def test_defaults_of_a_minimal_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    config = parse_config(ONE_MEMORY)
    server = config.server
    assert (server.host, server.port, server.http_port) == ("127.0.0.1", 9190, 9191)
    assert server.data_dir == tmp_path / ".catalogd"
    assert server.max_frame_size == 16 * 1024 * 1024
    assert server.workers == 32
    assert server.log_level == "info"
    assert config.dynamic_tables.freshness_threshold == td(minutes=30)
    assert config.spark.master == "local[2]" and config.spark.conf == {}
    assert config.staging.lease == td(seconds=60)
    assert config.staging.janitor_interval == td(seconds=10)
    assert config.staging.replaced_data_retention == td(seconds=30)
    assert config.catalogs[0].atomic_writes is True
    assert config.source == "<string>"


def test_a_single_catalog_is_the_default() -> None:
    config = parse_config(ONE_MEMORY)
    assert config.default_catalog.name == "scratch"
    assert config.catalogs[0].default is True


def test_empty_sections_mean_defaults() -> None:
    config = parse_config(
        "server:\ndynamic-tables:\nstaging:\nspark:\n  conf:\ncatalogs:\n  - name: s\n    type: memory\n"
        "    connection:\n"
    )
    assert config.server == ServerConfig()
    assert config.staging.lease == td(seconds=60)
    assert config.spark.conf == {} and config.catalogs[0].connection == {}


def test_catalog_defaults_and_lookup() -> None:
    config = parse_config(
        "catalogs:\n  - name: Main\n    type: HIVE\n    connection: {hive.metastore.uris: embedded}\n"
    )
    main = config.catalog("MAIN")
    assert main is not None and main.name == "main" and main.type == "hive"
    assert config.catalog("nope") is None
    assert main.default_database == "default"
    assert main.read_only is False and main.warehouse is None and main.metastore_port == 0
    assert main.is_embedded and main.uris == []
    assert main.connect_timeout == td(seconds=5)
    assert main.socket_timeout == td(seconds=60)


def test_relative_data_dir_is_made_absolute_from_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = parse_config("server: {data-dir: state/here}\n" + ONE_MEMORY)
    assert config.server.data_dir == tmp_path / "state" / "here"


def test_models_accept_python_names_and_aliases() -> None:
    by_name = ServerConfig(http_port=1, log_level="debug")
    by_alias = ServerConfig.model_validate({"http-port": 1, "log-level": "DEBUG"})
    assert by_name == by_alias
    assert by_name.http_port == 1 and by_name.log_level == "debug"


def test_remote_uris_timeouts_and_coerced_values() -> None:
    config = parse_config(
        """
catalogs:
  - name: prod
    type: hive
    read-only: yes
    metastore-port: 0
    connection:
      hive.metastore.uris: "thrift://h1:9083, thrift://h2:9084"
      hive.metastore.connect.timeout: 2
      hive.metastore.client.socket.timeout: 2 min
      hive.metastore.sasl.enabled: true
spark:
  conf:
    spark.executor.instances: 4
    spark.dynamicAllocation.enabled: false
"""
    )
    prod = config.default_catalog
    assert prod.uris == ["thrift://h1:9083", "thrift://h2:9084"]
    assert not prod.is_embedded
    assert prod.read_only is True
    assert prod.connect_timeout == td(seconds=2)
    assert prod.socket_timeout == td(minutes=2)
    assert prod.connection["hive.metastore.sasl.enabled"] == "true"
    assert prod.connection["hive.metastore.connect.timeout"] == "2"
    assert config.spark.conf == {"spark.executor.instances": "4", "spark.dynamicAllocation.enabled": "false"}


def test_json_dump_reads_back_as_the_same_config() -> None:
    config = parse_config((REPO / "conf" / "catalogd.yaml").read_text())
    dumped = config.model_dump(mode="json", by_alias=True)
    assert dumped["dynamic-tables"]["freshness-threshold"] == "30 min"
    assert parse_config(yaml.safe_dump(dumped)) == config


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


# --------------------------------------------------------------------------- environment


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
    assert problems[0].startswith(f"{SRC}: line 3: ")
    assert "'CATALOGD_TEST_UNSET' is not set" in problems[0]


def test_literal_dollar_brace_and_comments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CATALOGD_TEST_UNSET", raising=False)
    config = parse_config(
        "# mentions ${CATALOGD_TEST_UNSET} in a comment\n"
        + ONE_MEMORY
        + 'spark:\n  conf:\n    spark.x: "$${HOME}"\n'
    )
    assert config.spark.conf == {"spark.x": "${HOME}"}


# --------------------------------------------------------------------------- problems


def test_unknown_key_with_suggestion() -> None:
    problems = problems_of(
        "catalogs:\n  - name: main\n    type: memory\n    defualt: true\n    frobnicate: 1\n"
    )
    assert f"{SRC}: catalogs[0]: unknown key 'defualt' (did you mean 'default'?)" in problems
    assert f"{SRC}: catalogs[0]: unknown key 'frobnicate'" in problems


def test_unknown_top_level_key_and_source_key() -> None:
    problems = problems_of("severs: {}\nsource: elsewhere\n" + ONE_MEMORY)
    assert f"{SRC}: unknown key 'severs' (did you mean 'server'?)" in problems
    assert any(p.startswith(f"{SRC}: unknown key 'source'") for p in problems)


def test_wrong_type() -> None:
    problems = problems_of(
        """
catalogs:
  - name: main
    type: memory
    default: true
  - name: other
    type: memory
    read-only: maybe
"""
    )
    assert problems == [f"{SRC}: catalogs[1].read-only: expected a boolean, got 'maybe'"]


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("server: {port: 70000}", "server.port: expected a port number between 0 and 65535"),
        ("server: {port: x}", "server.port: expected an integer, got 'x'"),
        ("server: {workers: 0}", "server.workers: must be at least 1, got 0"),
        ("server: {log-level: loud}", "server.log-level: expected 'debug', 'info', 'warning' or 'error'"),
        ("server: {port: 9000, http-port: 9000}", "server: port and http-port are both 9000"),
        ("server: 5", "server: expected a mapping, got 5"),
        ("server: {host: ''}", "server.host: must not be empty"),
        ("staging: {lease: soon}", "staging.lease: invalid duration 'soon'"),
        ("staging: {janitor-interval: 0s}", "staging.janitor-interval: must be longer than zero"),
        ("staging: {replaced-data-retention: -1s}", "staging.replaced-data-retention: invalid duration"),
        ("staging: {replaced-data-retention: forever}", "staging.replaced-data-retention: invalid duration"),
        (
            "dynamic-tables: {freshness-threshold: -1 h}",
            "dynamic-tables.freshness-threshold: invalid duration",
        ),
        ("spark: {conf: [a]}", "spark.conf: expected a mapping of Spark settings, got a list"),
    ],
)
def test_section_problems(snippet: str, expected: str) -> None:
    problems = problems_of(snippet + "\n" + ONE_MEMORY)
    assert len(problems) == 1
    assert problems[0].startswith(f"{SRC}: {expected}")


def test_invalid_catalog_name_and_type() -> None:
    problems = problems_of("catalogs:\n  - name: 9lives\n    type: hdfs\n")
    assert f"{SRC}: catalogs[0].type: expected 'hive' or 'memory', got 'hdfs'" in problems
    assert any(p.startswith(f"{SRC}: catalogs[0].name: invalid catalog name '9lives'") for p in problems)


def test_duplicate_catalog_names() -> None:
    problems = problems_of(
        """
catalogs:
  - {name: main, type: memory, default: true}
  - {name: other, type: memory}
  - {name: MAIN, type: memory}
"""
    )
    assert problems == [f"{SRC}: catalogs: two catalogs named 'main' (catalogs[0] and catalogs[2])"]


def test_zero_defaults_with_two_catalogs() -> None:
    problems = problems_of("catalogs:\n  - {name: a, type: memory}\n  - {name: b, type: memory}\n")
    assert problems == [f"{SRC}: catalogs: no default catalog: mark one with 'default: true'"]


def test_two_defaults() -> None:
    problems = problems_of(
        "catalogs:\n  - {name: a, type: memory, default: true}\n  - {name: b, type: memory, default: true}\n"
    )
    assert len(problems) == 1
    assert problems[0].startswith(
        f"{SRC}: catalogs: catalogs[0] and catalogs[1] are both marked 'default: true'"
    )


def test_no_catalogs() -> None:
    assert problems_of("catalogs: []\n") == [f"{SRC}: catalogs: at least one catalog is required"]
    assert problems_of("server: {}\n") == [f"{SRC}: catalogs: required key is missing"]


@pytest.mark.parametrize(
    ("uris", "expected"),
    [
        ("http://h1:9083", "invalid URI 'http://h1:9083': expected thrift://host:port"),
        ("thrift://h1", "invalid URI 'thrift://h1': the port is missing"),
        ("thrift://h1:port", "invalid URI 'thrift://h1:port': the port must be a number"),
        ("thrift://h1:9083,", "empty URI at position 2"),
        (
            "thrift://h1:9083/db",
            "invalid URI 'thrift://h1:9083/db': expected thrift://host:port with nothing",
        ),
        ("embedded,thrift://h1:9083", "'embedded' cannot be combined"),
    ],
)
def test_bad_metastore_uri(uris: str, expected: str) -> None:
    problems = problems_of(
        f"catalogs:\n  - name: main\n    type: hive\n    connection:\n      hive.metastore.uris: '{uris}'\n"
    )
    assert len(problems) == 1
    assert problems[0].startswith(f"{SRC}: catalogs[0].connection['hive.metastore.uris']: {expected}")


def test_hive_catalog_needs_uris() -> None:
    problems = problems_of("catalogs:\n  - name: main\n    type: hive\n")
    assert len(problems) == 1
    assert problems[0].startswith(
        f"{SRC}: catalogs[0].connection: a hive catalog needs 'hive.metastore.uris'"
    )


def test_bad_connection_keys_and_values() -> None:
    problems = problems_of(
        """
catalogs:
  - name: main
    type: hive
    connection:
      hive.metastore.uris: embedded
      metastore.uris: x
      hive.metastore.connect.timeout: forever
"""
    )
    assert (
        f"{SRC}: catalogs[0].connection['metastore.uris']: unknown connection key 'metastore.uris': "
        "connection keys start with 'hive.' (did you mean 'hive.metastore.uris'?)"
    ) in problems
    assert any(
        p.startswith(f"{SRC}: catalogs[0].connection['hive.metastore.connect.timeout']: invalid duration")
        for p in problems
    )
    assert len(problems) == 2


def test_memory_catalog_with_connection_or_warehouse() -> None:
    problems = problems_of(
        """
catalogs:
  - name: scratch
    type: memory
    warehouse: /tmp/wh
    connection:
      hive.metastore.uris: embedded
"""
    )
    assert problems == [
        f"{SRC}: catalogs[0].connection: a memory catalog takes no connection settings",
        f"{SRC}: catalogs[0].warehouse: a memory catalog has no warehouse",
    ]


def test_metastore_port_only_for_embedded() -> None:
    problems = problems_of(
        "catalogs:\n  - name: m\n    type: hive\n    metastore-port: 9083\n"
        "    connection: {hive.metastore.uris: 'thrift://h:9083'}\n"
    )
    assert len(problems) == 1 and problems[0].startswith(f"{SRC}: catalogs[0].metastore-port: ")


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


def test_several_problems_are_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(
            """
server:
  port: -1
  hots: localhost
catalogs:
  - {name: a, type: memory, read-only: maybe}
  - {name: a, type: hive, connection: {hive.metastore.uris: 'thrift://h'}}
staging:
  lease: later
""",
            source=SRC,
        )
    problems = info.value.problems
    expected_starts = [
        f"{SRC}: server.port: expected a port number",
        f"{SRC}: server: unknown key 'hots' (did you mean 'host'?)",
        f"{SRC}: catalogs[0].read-only: expected a boolean, got 'maybe'",
        f"{SRC}: catalogs[1].connection['hive.metastore.uris']: invalid URI 'thrift://h'",
        f"{SRC}: staging.lease: invalid duration 'later'",
        f"{SRC}: catalogs: two catalogs named 'a' (catalogs[0] and catalogs[1])",
        f"{SRC}: catalogs: no default catalog",
    ]
    for start in expected_starts:
        assert any(p.startswith(start) for p in problems), start
    assert len(problems) == len(expected_starts)
    assert str(info.value) == f"{problems[0]} (and {len(problems) - 1} more)"
    assert info.value.exit_code == 2


def test_single_problem_message_has_no_count() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("catalogs: []\n", source=SRC)
    assert str(info.value) == f"{SRC}: catalogs: at least one catalog is required"


# --------------------------------------------------------------------------- redaction


def test_redact() -> None:
    original = {
        "hive.metastore.password": "p1",
        "Some.SECRET.key": "s1",
        "auth.Token": "t1",
        "aws.credentials.provider": "c1",
        "hive.metastore.username": "alice",
    }
    assert redact(original) == {
        "hive.metastore.password": "***",
        "Some.SECRET.key": "***",
        "auth.Token": "***",
        "aws.credentials.provider": "***",
        "hive.metastore.username": "alice",
    }
    assert original["hive.metastore.password"] == "p1"


def test_secrets_never_appear_in_repr_or_str() -> None:
    config = parse_config(
        """
catalogs:
  - name: main
    type: hive
    connection:
      hive.metastore.uris: thrift://h:9083
      hive.metastore.username: alice
      hive.metastore.password: hunter2-secret-value
spark:
  conf:
    spark.hadoop.fs.s3a.secret.key: s3-secret-value
"""
    )
    main = config.default_catalog
    assert main.connection["hive.metastore.password"] == "hunter2-secret-value"
    for text in (repr(config), str(config), repr(main), str(main), repr(config.spark), str(config.catalogs)):
        assert "hunter2-secret-value" not in text
        assert "s3-secret-value" not in text
    assert "alice" in repr(main)
    assert "***" in repr(main)


def test_programmatic_catalog_repr_is_redacted() -> None:
    catalog = CatalogConfig(
        name="m",
        type="hive",
        connection={"hive.metastore.uris": "embedded", "hive.metastore.password": "pw123"},
    )
    assert "pw123" not in repr(catalog)
    assert "pw123" not in repr(Config(catalogs=[catalog]))


def test_staging_and_atomic_writes_keys() -> None:
    config = parse_config(
        "staging: {lease: 20s, janitor-interval: 2s, replaced-data-retention: 0s}\n"
        "catalogs:\n  - name: s\n    type: memory\n    atomic-writes: false\n"
    )
    assert config.staging.lease == td(seconds=20)
    assert config.staging.janitor_interval == td(seconds=2)
    assert config.staging.replaced_data_retention == td(seconds=0)
    assert config.catalogs[0].atomic_writes is False
