"""``metastore-db`` and ``metastore-db-password-file``: the URL's rules, the password's sources, and that the
password never shows in a repr, a dump or a problem."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from config_cases import SRC, problems_of

from catalogd.config import parse_config
from catalogd.config.metastore_db import parse_metastore_db, read_password_file

SECRET = "hunter2-0123456789"


def embedded_with(keys: str) -> str:
    """A config with one embedded hive catalog and ``keys`` (YAML lines at the catalog's indentation) added."""
    return ("catalogs:\n  - name: main\n    type: hive\n    connection: {hive.metastore.uris: embedded}\n"
            f"    {keys}\n")


def test_a_postgresql_url_is_parsed_and_the_password_masked() -> None:
    config = parse_config(embedded_with(f"metastore-db: postgresql://hive:{SECRET}@db.example:6543/meta"))
    database = config.default_catalog.metastore_database
    assert database is not None
    assert (database.user, database.host, database.port, database.name) == ("hive", "db.example", 6543, "meta")
    assert database.password is not None and database.password.get_secret_value() == SECRET
    assert str(database) == "postgresql://hive:***@db.example:6543/meta"
    assert database.jdbc_url == "jdbc:postgresql://db.example:6543/meta"
    for shown in (repr(config), str(config), repr(database), str(config.model_dump()),
                  str(config.model_dump(mode="json"))):
        assert SECRET not in shown


def test_without_the_key_the_metastore_stays_on_derby() -> None:
    config = parse_config(embedded_with(""))
    assert config.default_catalog.metastore_db is None
    assert config.default_catalog.metastore_database is None


@pytest.mark.parametrize(("url", "expected"), [
    # The default port, percent-encoded credentials, JDBC parameters, an IPv6 host.
    ("postgresql://u@h/d", ("u", None, "h", 5432, "d", "jdbc:postgresql://h:5432/d")),
    ("postgresql://us%40r:p%2Fw%40@h:1/d", ("us@r", "p/w@", "h", 1, "d", "jdbc:postgresql://h:1/d")),
    ("POSTGRESQL://u:p@h:5/d?sslmode=require&connectTimeout=5",
     ("u", "p", "h", 5, "d", "jdbc:postgresql://h:5/d?sslmode=require&connectTimeout=5")),
    ("postgresql://u:p@[::1]:5/d", ("u", "p", "::1", 5, "d", "jdbc:postgresql://[::1]:5/d")),
])
def test_url_forms(url: str, expected: tuple[object, ...]) -> None:
    db = parse_metastore_db(url)
    password = db.password.get_secret_value() if db.password is not None else None
    assert (db.user, password, db.host, db.port, db.name, db.jdbc_url) == expected


@pytest.mark.parametrize(("value", "problem"), [
    ("''", "empty value"),
    (f"{SECRET}", "not a URL"),
    (f"mysql://u:{SECRET}@h:3306/d", "unsupported database 'mysql' (PostgreSQL is the only one"),
    (f"postgres://u:{SECRET}@h/d", "unsupported database 'postgres' (write postgresql://)"),
    (f"postgresql://:{SECRET}@h/d", "the user is missing"),
    (f"postgresql://u:{SECRET}@:5432/d", "the host is missing"),
    (f"postgresql://u:{SECRET}@h:70000/d", "the port must be a number between 1 and 65535"),
    (f"postgresql://u:{SECRET}@h:x/d", "the port must be a number between 1 and 65535"),
    (f"postgresql://u:{SECRET}@h:0/d", "port 0"),
    (f"postgresql://u:{SECRET}@h:5432", "the database name is missing"),
    (f"postgresql://u:{SECRET}@h:5432/", "the database name is missing"),
    (f"postgresql://u:{SECRET}@h/d/e", "one path segment"),
    (f"'postgresql://u:{SECRET}@h/d#x'", "nothing may follow '#'"),
    (f"postgresql://u@h/d?password={SECRET}", "not as parameters"),
    (f"postgresql://u:{SECRET}@h/d?junk", "not key=value pairs"),
    ("5432", "expected a text value"),
])
def test_bad_urls_name_the_key_and_never_the_password(value: str, problem: str) -> None:
    problems = problems_of(embedded_with(f"metastore-db: {value}"))
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{SRC}: catalogs[0].metastore-db: "), problems
    assert problem in problems[0]
    assert SECRET not in problems[0]


@pytest.mark.parametrize("catalog", [
    "  - name: main\n    type: hive\n    connection: {hive.metastore.uris: 'thrift://h:9083'}\n",
    "  - name: main\n    type: memory\n",
])
def test_only_an_embedded_catalog_takes_a_database(catalog: str) -> None:
    problems = problems_of(f"catalogs:\n{catalog}    metastore-db: postgresql://u:{SECRET}@h/d\n")
    assert problems == [f"{SRC}: catalogs[0].metastore-db: only used by an embedded metastore "
                        "(hive.metastore.uris: embedded)"]


def _password_file(tmp_path: Path, mode: int = 0o600, text: str = f"{SECRET}\n") -> Path:
    path = tmp_path / "pw"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_password_from_a_private_file(tmp_path: Path) -> None:
    path = _password_file(tmp_path)
    config = parse_config(embedded_with(f"metastore-db: postgresql://u@h/d\n    metastore-db-password-file: {path}"))
    database = config.default_catalog.metastore_database
    assert database is not None and database.password is not None
    assert database.password.get_secret_value() == SECRET, "the trailing newline is not part of it"
    assert str(database) == "postgresql://u:***@h:5432/d"
    assert SECRET not in repr(config) and SECRET not in str(config.model_dump(mode="json"))


@pytest.mark.parametrize(("mode", "text", "problem"), [
    (0o640, f"{SECRET}\n", "is readable by group or others (mode 640): run chmod 600 on it"),
    (0o604, f"{SECRET}\n", "is readable by group or others (mode 604)"),
    (0o600, "\n", "is empty"),
])
def test_a_password_file_others_may_read_or_an_empty_one_is_refused(tmp_path: Path, mode: int, text: str,
                                                                    problem: str) -> None:
    path = _password_file(tmp_path, mode, text)
    problems = problems_of(embedded_with(f"metastore-db: postgresql://u@h/d\n    metastore-db-password-file: {path}"))
    assert len(problems) == 1 and problems[0].startswith(f"{SRC}: catalogs[0].metastore-db-password-file: ")
    assert problem in problems[0]
    assert SECRET not in problems[0]


def test_password_file_rules(tmp_path: Path) -> None:
    path = _password_file(tmp_path)
    both = problems_of(embedded_with(f"metastore-db: postgresql://u:{SECRET}@h/d\n"
                                     f"    metastore-db-password-file: {path}"))
    assert both == [f"{SRC}: catalogs[0].metastore-db-password-file: metastore-db has a password already: "
                    "give it there or in this file, not both"]
    alone = problems_of(embedded_with(f"metastore-db-password-file: {path}"))
    assert alone == [f"{SRC}: catalogs[0].metastore-db-password-file: only used with metastore-db "
                     "(postgresql://USER:PASSWORD@HOST:PORT/DB)"]
    missing = problems_of(embedded_with(f"metastore-db: postgresql://u@h/d\n"
                                        f"    metastore-db-password-file: {tmp_path / 'nope'}"))
    assert "does not exist" in missing[0]
    directory = problems_of(embedded_with(f"metastore-db: postgresql://u@h/d\n"
                                          f"    metastore-db-password-file: {tmp_path}"))
    assert "is not a regular file" in directory[0]


def test_a_password_file_of_another_user_is_refused(tmp_path: Path) -> None:
    path = _password_file(tmp_path)
    with pytest.raises(ValueError, match=rf"belongs to uid {os.geteuid()}, not to the daemon's user \(uid 12345\)"):
        read_password_file(path, euid=12345)
    assert read_password_file(path, os.geteuid()).get_secret_value() == SECRET


def test_the_password_comes_through_env_expansion(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METASTORE_DB_PASSWORD", SECRET)
    config = parse_config(embedded_with("metastore-db: postgresql://u:${METASTORE_DB_PASSWORD}@h/d"))
    database = config.default_catalog.metastore_database
    assert database is not None and database.password is not None
    assert database.password.get_secret_value() == SECRET
    assert SECRET not in repr(config)


def test_two_catalogs_of_one_daemon_cannot_share_a_database() -> None:
    catalog = ("  - name: {name}\n    type: hive\n    connection: {{hive.metastore.uris: embedded}}\n"
               "    metastore-db: postgresql://u:{secret}@{host}:5432/meta\n")
    text = "catalogs:\n" + catalog.format(name="a", secret=SECRET, host="db") + catalog.format(
        name="b", secret=SECRET, host="DB") + "    default: true\n"
    assert problems_of(text) == [f"{SRC}: catalogs[1].metastore-db: catalog 'a' uses the same database: give each "
                                 "embedded catalog its own database, or make this one remote on the other's "
                                 "metastore-port"]
    other = text.replace("DB:5432/meta", "DB:5432/meta2")
    assert [c.name for c in parse_config(other).catalogs] == ["a", "b"]
