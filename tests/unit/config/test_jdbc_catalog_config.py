"""``type: jdbc`` catalogs: Flink's option names, the password kept secret, the rules of the type."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from config_cases import problems_of

from catalogd.config import parse_config
from catalogd.config.jdbc_url import parse_base_url

SECRET = "pg-hunter2-0123456789"


def with_jdbc(keys: str) -> str:
    """A config with a memory default catalog and a jdbc catalog ``pg`` with ``keys`` (YAML lines)."""
    return ("catalogs:\n  - name: main\n    type: memory\n    default: true\n"
            "  - name: pg\n    type: jdbc\n" + "".join(f"    {line}\n" for line in keys.strip().splitlines()))


BASE = "base-url: jdbc:postgresql://db.example:6543\ndefault-database: analytics\nusername: etl\n"


def test_flink_option_names_and_a_password_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PG_PASSWORD", SECRET)
    config = parse_config(with_jdbc(BASE + "password: ${PG_PASSWORD}"))
    pg = config.catalog("pg")
    assert pg is not None and pg.type == "jdbc"
    assert (pg.base_url, pg.default_database, pg.username) == ("jdbc:postgresql://db.example:6543", "analytics", "etl")
    assert pg.jdbc_password is not None and pg.jdbc_password.get_secret_value() == SECRET
    # Names without a database mean the default schema; the PostgreSQL database is default-database.
    assert pg.default_namespace == "public"
    assert str(pg.driver_jar) == "/usr/share/java/postgresql.jar"
    for shown in (repr(config), str(config), str(config.model_dump()), str(config.model_dump(mode="json"))):
        assert SECRET not in shown


def test_the_password_from_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "pg"
    path.write_text(SECRET + "\n")
    os.chmod(path, 0o600)
    pg = parse_config(with_jdbc(BASE + f"password-file: {path}")).catalog("pg")
    assert pg is not None and pg.jdbc_password is not None and pg.jdbc_password.get_secret_value() == SECRET
    os.chmod(path, 0o644)
    problems = problems_of(with_jdbc(BASE + f"password-file: {path}"))
    assert any("password-file" in p and "chmod 600" in p for p in problems)


@pytest.mark.parametrize(("keys", "problem"), [
    ("default-database: a\nusername: u", "needs base-url"),
    ("base-url: jdbc:postgresql://h:5432\nusername: u", "default-database: a jdbc catalog needs"),
    ("base-url: jdbc:postgresql://h:5432\ndefault-database: a", "username: a jdbc catalog needs"),
    ("base-url: jdbc:mysql://h:3306\ndefault-database: a\nusername: u", "unsupported JDBC dialect 'mysql'"),
    ("base-url: jdbc:postgresql://h:5432/db\ndefault-database: a\nusername: u", "names the server only"),
    (f"base-url: jdbc:postgresql://u:{SECRET}@h:5432\ndefault-database: a\nusername: u", "not in the URL"),
    (f"base-url: jdbc:postgresql://h:5432?password={SECRET}\ndefault-database: a\nusername: u",
     "not as URL parameters"),
    (BASE + "connection: {hive.metastore.uris: embedded}", "connection: a jdbc catalog takes no such key"),
    (BASE + "default: true", "cannot be the default catalog"),
])
def test_bad_jdbc_catalogs_are_refused_by_key(keys: str, problem: str) -> None:
    problems = problems_of(with_jdbc(keys))
    assert any(problem in p for p in problems), problems
    assert all(SECRET not in p for p in problems)


def test_jdbc_keys_on_another_type_are_refused() -> None:
    text = "catalogs:\n  - name: main\n    type: memory\n    base-url: jdbc:postgresql://h:1\n"
    assert any("base-url: only a jdbc catalog takes this key" in p for p in problems_of(text))


def test_base_url_forms() -> None:
    url = parse_base_url("jdbc:postgresql://db:6543?sslmode=require")
    assert (url.dialect, url.host, url.port, url.params) == ("postgresql", "db", 6543, (("sslmode", "require"),))
    assert url.jdbc_url("analytics") == "jdbc:postgresql://db:6543/analytics?sslmode=require"
    assert parse_base_url("jdbc:postgresql://db").port == 5432
