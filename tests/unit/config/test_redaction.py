"""Tests for catalogd.config.redaction: secrets never shown, in redact() and in the models' reprs."""

from __future__ import annotations

from catalogd.config import CatalogConfig, Config, parse_config, redact


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
