"""The write helpers' Connect shortcuts, on stand-ins (no Spark): rows observed by the write
itself, and no setting changed that is already as the write needs it."""

from __future__ import annotations

from typing import Any

from catalogd import spark_common
from catalogd.model import CatalogInfo


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.calls: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        self.calls.append(f"get {key}")
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.calls.append(f"set {key}")
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.calls.append(f"unset {key}")
        self.values.pop(key, None)


class _Spark:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = _Conf(values)


def test_dynamic_partitions_changes_nothing_already_set() -> None:
    key = spark_common.DYNAMIC_PARTITION_MODE
    ready = _Spark({key: "nonstrict"})
    with spark_common.dynamic_partitions(ready):  # type: ignore[arg-type]
        pass
    assert ready.conf.calls == [f"get {key}"]
    plain = _Spark({})
    with spark_common.dynamic_partitions(plain):  # type: ignore[arg-type]
        assert plain.conf.values[key] == "nonstrict"
    assert plain.conf.values == {} and plain.conf.calls == [f"get {key}", f"set {key}", f"unset {key}"]


class _Info:
    def __init__(self, flows: list[tuple[str, dict[str, Any]]]) -> None:
        self.flows = flows


class _Written:
    def __init__(self, info: _Info | None) -> None:
        self.executionInfo = info


def test_observed_rows_come_from_the_writes_own_observation() -> None:
    mine = spark_common.ROWS_OBSERVATION
    assert spark_common.observed_rows(_Written(_Info([("other", {"rows": 1}), (mine, {"rows": 42})]))) == 42
    # Not reported (an older server): the caller counts instead.
    assert spark_common.observed_rows(_Written(None)) is None
    assert spark_common.observed_rows(_Written(_Info([]))) is None



def test_a_session_on_the_endpoint_retries_through_a_restart_and_a_job_on_a_metastore_does_not() -> None:
    """Hive 2.3's client gives up after 3 tries 1 s apart by default: shorter than a restart."""
    from catalogd.spark_common import spark_conf_for

    served = spark_conf_for(CatalogInfo("main", "hive", hms_endpoint="thrift://h:9083"))
    assert int(served["spark.hadoop.hive.metastore.connect.retries"]) >= 30
    assert served["spark.hadoop.hive.metastore.client.connect.retry.delay"] == "1s"
    assert int(served["spark.hadoop.hive.metastore.failure.retries"]) >= 2
    direct = spark_conf_for(CatalogInfo("main", "hive", metastore="thrift://h:9084"))
    assert not any("retr" in key for key in direct)


class _Catalog:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def dropTempView(self, name: str) -> None:
        self.log.append(f"drop view {name}")


class _Session:
    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.catalog = _Catalog(log)

    def sql(self, text: str) -> None:
        self.log.append(text)


class _Writer:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def insertInto(self, name: str, overwrite: bool) -> None:
        self.log.append(f"insertInto {name} overwrite={overwrite}")


class _Frame:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.sparkSession = _Session(self.log)
        self.write = _Writer(self.log)

    def createOrReplaceTempView(self, name: str) -> None:
        self.log.append(f"view {name}")


def test_an_insert_into_the_session_catalog_by_its_qualified_name_is_made_as_sql() -> None:
    # Unqualified (the session catalog is the current one): Spark's own insertInto.
    plain = _Frame()
    spark_common.insert_by_position(plain, "sales.__catalogd_stage_1", overwrite=True)  # type: ignore[arg-type]
    assert plain.log == ["insertInto sales.__catalogd_stage_1 overwrite=True"]
    # spark_catalog.-qualified (the plugin's catalog is the current one): insertInto would refuse it.
    qualified = _Frame()
    spark_common.insert_by_position(qualified, "spark_catalog.scratch__tmp.t", overwrite=False)  # type: ignore[arg-type]
    view, insert, dropped = qualified.log
    name = view.removeprefix("view ")
    assert name.startswith("__catalogd_insert_")
    assert insert == f"INSERT INTO TABLE `spark_catalog`.`scratch__tmp`.`t` SELECT * FROM `{name}`"
    assert dropped == f"drop view {name}"
