"""Tests for catalogd.config.models and .problems: defaults, key rules and every kind of problem."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from config_cases import ONE_MEMORY, REPO, SRC, problems_of, td

from catalogd.config import ServerConfig, parse_config
from catalogd.errors import ConfigError

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
    # Flink's (FLIP-551) defaults of a table created without FRESHNESS.
    assert config.dynamic_tables.default_freshness_continuous == td(minutes=3)
    assert config.dynamic_tables.default_freshness_full == td(hours=1)
    assert config.spark.master == "local[2]" and config.spark.conf == {}
    assert config.staging.lease == td(seconds=60)
    assert config.staging.janitor_interval == td(seconds=10)
    # Long enough for long queries; storage bounded by max-retired-versions (issue 11).
    assert config.staging.replaced_data_retention == td(minutes=10)
    assert config.staging.max_retired_versions == 10 and config.staging.max_lease == td(hours=1)
    assert config.staging.secret is None
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
      hive.metastore.execute.setugi: true
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
    assert prod.connection["hive.metastore.execute.setugi"] == "true"
    assert prod.connection["hive.metastore.connect.timeout"] == "2"
    assert config.spark.conf == {"spark.executor.instances": "4", "spark.dynamicAllocation.enabled": "false"}


def test_json_dump_reads_back_as_the_same_config() -> None:
    config = parse_config((REPO / "conf" / "catalogd.yaml").read_text())
    dumped = config.model_dump(mode="json", by_alias=True)
    assert dumped["dynamic-tables"]["freshness-threshold"] == "30 min"
    assert parse_config(yaml.safe_dump(dumped)) == config


def test_staging_and_atomic_writes_keys() -> None:
    config = parse_config(
        "staging: {lease: 20s, janitor-interval: 2s, replaced-data-retention: 0s}\n"
        "catalogs:\n  - name: s\n    type: memory\n    atomic-writes: false\n"
    )
    assert config.staging.lease == td(seconds=20)
    assert config.staging.janitor_interval == td(seconds=2)
    assert config.staging.replaced_data_retention == td(seconds=0)
    assert config.catalogs[0].atomic_writes is False


def test_the_stage_secret_never_shows() -> None:
    secret = "s3cr3t-0123456789abcdef"
    config = parse_config(f"staging: {{secret: {secret}, max-lease: 2 h, lease: 90 min, max-retired-versions: 1}}\n"
                          + ONE_MEMORY)
    assert config.staging.secret is not None and config.staging.secret.get_secret_value() == secret
    assert (config.staging.max_lease, config.staging.lease) == (td(hours=2), td(minutes=90))
    assert config.staging.max_retired_versions == 1
    assert secret not in repr(config) and secret not in str(config.model_dump(mode="json"))
    with pytest.raises(ConfigError) as bad:
        parse_config(f"staging: {{secret: {secret[:10]}}}\n" + ONE_MEMORY, source=SRC)
    assert secret[:10] not in str(bad.value.problems)


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
        ("staging: {lease: 2 h}", "staging: lease (2 h) is longer than max-lease (1 h)"),
        ("staging: {max-lease: 0s}", "staging.max-lease: must be longer than zero"),
        ("staging: {max-retired-versions: 0}", "staging.max-retired-versions: must be at least 1, got 0"),
        ("staging: {secret: short}", "staging.secret: must be at least 16 characters"),
        (
            "dynamic-tables: {freshness-threshold: -1 h}",
            "dynamic-tables.freshness-threshold: invalid duration",
        ),
        ("spark: {conf: [a]}", "spark.conf: expected a mapping of Spark settings, got a list"),
        (
            "dynamic-tables: {default-freshness-full: 5 h}",
            "dynamic-tables.default-freshness-full: 5 h cannot be a FULL refresh schedule",
        ),
        (
            "dynamic-tables: {default-freshness-continuous: 1500ms}",
            "dynamic-tables.default-freshness-continuous: a freshness is a whole number of seconds",
        ),
    ],
)
def test_section_problems(snippet: str, expected: str) -> None:
    problems = problems_of(snippet + "\n" + ONE_MEMORY)
    assert len(problems) == 1
    assert problems[0].startswith(f"{SRC}: {expected}")


def test_invalid_catalog_name_and_type() -> None:
    problems = problems_of("catalogs:\n  - name: 9lives\n    type: hdfs\n")
    assert f"{SRC}: catalogs[0].type: expected 'hive', 'memory' or 'jdbc', got 'hdfs'" in problems
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
