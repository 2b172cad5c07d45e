"""What an embedded metastore is started with: the hive-site.xml it reads (Derby or PostgreSQL, the password
there only) and its JVM command line (the driver on the classpath, no secret)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from pydantic import SecretStr

from catalogd.config.metastore_db import PostgresDatabase, parse_metastore_db
from catalogd.errors import ConfigError
from catalogd.metastore.database import POSTGRESQL_JAR, database_settings, driver_jars
from catalogd.metastore.embedded import EmbeddedMetastore

#: XML's special characters too: the password must come back out of hive-site.xml as it went in.
SECRET = "p<a&s>s'w\"0rd-1234"


def _settings(xml: str) -> dict[str, str]:
    return {prop.findtext("name") or "": prop.findtext("value") or "" for prop in ET.fromstring(xml)}


def _postgres(password: str | None = SECRET) -> PostgresDatabase:
    return PostgresDatabase("hive", "db.example", 5433, "meta", (("sslmode", "require"),),
                            SecretStr(password) if password is not None else None)


def test_derby_by_default_as_before(tmp_path: Path) -> None:
    settings = _settings(EmbeddedMetastore("main", tmp_path).hive_site())
    home = tmp_path / "catalogs" / "main"
    assert settings["javax.jdo.option.ConnectionURL"] == f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"
    assert settings["javax.jdo.option.ConnectionDriverName"] == "org.apache.derby.jdbc.EmbeddedDriver"
    assert settings["datanucleus.schema.autoCreateAll"] == "true"
    assert "javax.jdo.option.ConnectionPassword" not in settings
    assert "hive.metastore.schema.verification.record.version" not in settings
    assert driver_jars(None, "main", tmp_path / "absent.jar") == []


def test_postgresql_settings_keep_the_credentials_out_of_the_url(tmp_path: Path) -> None:
    settings = _settings(EmbeddedMetastore("main", tmp_path, database=_postgres()).hive_site())
    assert settings["javax.jdo.option.ConnectionURL"] == "jdbc:postgresql://db.example:5433/meta?sslmode=require"
    assert settings["javax.jdo.option.ConnectionDriverName"] == "org.postgresql.Driver"
    assert settings["javax.jdo.option.ConnectionUserName"] == "hive"
    assert settings["javax.jdo.option.ConnectionPassword"] == SECRET
    assert settings["datanucleus.schema.autoCreateAll"] == "true"
    assert settings["hive.metastore.schema.verification"] == "false"
    assert settings["hive.metastore.schema.verification.record.version"] == "true"


def test_without_a_password_none_is_set(tmp_path: Path) -> None:
    settings = database_settings(_postgres(password=None), tmp_path)
    assert "javax.jdo.option.ConnectionPassword" not in settings


def test_the_command_line_has_the_driver_and_no_secret(tmp_path: Path) -> None:
    jar = tmp_path / "postgresql.jar"
    jar.write_bytes(b"PK")
    metastore = EmbeddedMetastore("main", tmp_path, database=_postgres())
    assert driver_jars(metastore.database, "main", jar) == [jar]
    if not POSTGRESQL_JAR.is_file():
        pytest.skip(f"{POSTGRESQL_JAR} is not installed (apt-get install libpostgresql-jdbc-java)")
    cmd = metastore.command("/usr/bin/java", tmp_path / "jars")
    classpath = cmd[cmd.index("-cp") + 1].split(":")
    assert classpath == [str(tmp_path / "catalogs" / "main" / "conf"), f"{tmp_path / 'jars'}/*", str(POSTGRESQL_JAR)]
    assert not any(SECRET in word or "ConnectionPassword" in word for word in cmd)
    assert not any(word.startswith("-Djavax.jdo") for word in cmd), "JDO settings are in hive-site.xml"


def test_derby_command_line_is_unchanged(tmp_path: Path) -> None:
    cmd = EmbeddedMetastore("main", tmp_path).command("/usr/bin/java", tmp_path / "jars")
    assert cmd[cmd.index("-cp") + 1] == f"{tmp_path / 'catalogs' / 'main' / 'conf'}:{tmp_path / 'jars'}/*"
    assert f"-Dderby.system.home={tmp_path / 'catalogs' / 'main'}" in cmd


def test_hive_s_log_and_the_jvm_s_temporary_files_stay_in_the_data_dir(tmp_path: Path) -> None:
    """By default Hive logs to /tmp/<user>/hive.log (one file for every metastore on the machine,
    never removed) and the JVM's temporary files go to /tmp."""
    cmd = EmbeddedMetastore("main", tmp_path).command("/usr/bin/java", tmp_path / "jars")
    assert f"-Dhive.log.dir={tmp_path / 'logs'}" in cmd
    assert "-Dhive.log.file=metastore-main.hive.log" in cmd
    assert f"-Djava.io.tmpdir={tmp_path / 'catalogs' / 'main' / 'tmp'}" in cmd
    assert cmd.index("-cp") > max(i for i, word in enumerate(cmd) if word.startswith("-D")), "JVM options first"


def test_a_missing_driver_is_a_config_error_naming_the_key_and_the_package(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        driver_jars(parse_metastore_db("postgresql://u@h/d"), "main", tmp_path / "absent.jar")
    assert info.value.exit_code == 2
    assert str(info.value) == (f"catalogs[main].metastore-db: the PostgreSQL JDBC driver {tmp_path / 'absent.jar'} "
                               "is missing: install it (apt-get install libpostgresql-jdbc-java)")


def test_the_database_shows_masked_in_the_start_log(tmp_path: Path) -> None:
    assert str(_postgres()) == "postgresql://hive:***@db.example:5433/meta"
    assert SECRET not in repr(_postgres())


def test_the_lock_timeout_is_the_metastores_txn_timeout(tmp_path: Path) -> None:
    assert "hive.txn.timeout" not in _settings(EmbeddedMetastore("main", tmp_path).hive_site())
    settings = _settings(EmbeddedMetastore("main", tmp_path, txn_timeout=7.5).hive_site())
    assert settings["hive.txn.timeout"] == "7500ms"
    # The catalog's own connection settings still win.
    mine = EmbeddedMetastore("main", tmp_path, txn_timeout=7.5, hive_conf={"hive.txn.timeout": "60s"})
    assert _settings(mine.hive_site())["hive.txn.timeout"] == "60s"
