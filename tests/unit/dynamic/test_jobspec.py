"""What a dynamic table's jobs are given when the table lives in a jdbc catalog and its query
reads a hive catalog: the source's metastore, the target's JDBC driver, the password in the
environment (or a Connect session's settings), and FULL refresh only."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from dynamic_fakes import config

from catalogd.dynamic.freshness import parse_freshness
from catalogd.dynamic.jobspec import JobFactory, full_only
from catalogd.dynamic.registry import Entry
from catalogd.model import CatalogInfo, RefreshMode, RefreshState


class Catalog:
    def __init__(self, info: CatalogInfo, password: str | None = None) -> None:
        self.name, self._info, self._password = info.name, info, password

    def info(self) -> CatalogInfo:
        return self._info

    def job_password(self) -> str | None:
        return self._password


CATALOGS = {
    "src": Catalog(CatalogInfo("src", "hive", metastore="thrift://src:9083")),
    "pg": Catalog(CatalogInfo("pg", "jdbc", metastore="jdbc:postgresql://db:5432/serving",
                              jdbc_driver_jar="/usr/share/java/postgresql.jar"), password="s3cret"),
}


def factory(tmp_path: Path, conf: dict[str, str] | None = None) -> JobFactory:
    manager: Any = SimpleNamespace(catalog=lambda name=None: CATALOGS[name])
    settings = config()
    settings.spark.conf = dict(conf or {})
    return JobFactory(manager, settings, lambda: "127.0.0.1:1", tmp_path)


def jdbc_entry() -> Entry:
    return Entry("pg", "serving", "totals", parse_freshness("1 day"), RefreshMode.FULL, RefreshState.RUNNING,
                 source_catalog="src")


def test_a_jdbc_table_s_jobs_read_the_source_metastore_with_the_target_s_driver(tmp_path: Path) -> None:
    jobs = factory(tmp_path, {"spark.jars": "/opt/extra.jar"})
    conf = jobs.run_conf(jdbc_entry(), {"spark.executor.memory": "2g"})
    assert conf["spark.hadoop.hive.metastore.uris"] == "thrift://src:9083"
    assert conf["spark.jars"] == "/opt/extra.jar,/usr/share/java/postgresql.jar"
    assert conf["spark.executor.memory"] == "2g"
    # The password goes to the job's environment or beside its Connect session, never into its settings.
    assert "s3cret" not in conf.values()
    assert jobs.catalog_env(jdbc_entry()) == {"CATALOGD_JDBC_PASSWORD_PG": "s3cret"}
    assert jobs.catalog_password(jdbc_entry()) == "s3cret"


def test_a_hive_table_s_jobs_are_as_before(tmp_path: Path) -> None:
    jobs = factory(tmp_path)
    hive = Entry("src", "db", "t", parse_freshness("1 day"), RefreshMode.FULL, RefreshState.RUNNING)
    conf = jobs.run_conf(hive)
    assert conf["spark.hadoop.hive.metastore.uris"] == "thrift://src:9083" and "spark.jars" not in conf
    assert jobs.catalog_env(hive) == {} and jobs.catalog_password(hive) is None


def test_only_a_jdbc_catalog_s_tables_refresh_full_only() -> None:
    assert "FULL only" in (full_only(CATALOGS["pg"]) or "")  # type: ignore[arg-type]
    assert full_only(CATALOGS["src"]) is None  # type: ignore[arg-type]
