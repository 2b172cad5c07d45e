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


# ------------------------------------------------------------------ names on the HMS endpoint

ENDPOINT = "thrift://cat:9083"


def _session(default_catalog: str | None = None, uris: str = ENDPOINT) -> _Spark:
    values = {"spark.hadoop.hive.metastore.uris": uris}
    if default_catalog is not None:
        values["spark.sql.defaultCatalog"] = default_catalog
    return _Spark(values)


def test_a_session_whose_default_catalog_is_the_plugin_s_names_the_session_catalog() -> None:
    from catalogd.spark_common import session_catalog_qualifier

    assert session_catalog_qualifier(None) == ""
    assert session_catalog_qualifier(_session()) == ""  # type: ignore[arg-type]
    assert session_catalog_qualifier(_session("spark_catalog")) == ""  # type: ignore[arg-type]
    assert session_catalog_qualifier(_session("")) == ""  # type: ignore[arg-type]
    assert session_catalog_qualifier(_session("main")) == "spark_catalog."  # type: ignore[arg-type]


def test_spark_prefix_reaches_the_endpoint_under_either_default_catalog() -> None:
    from catalogd.spark_common import spark_prefix

    main = CatalogInfo("main", "hive", default=True, hms_endpoint=ENDPOINT)
    scratch = CatalogInfo("scratch", "memory", hms_endpoint=ENDPOINT, hms_prefix="scratch__")
    # A session on the endpoint, spark_catalog its default (the HMS endpoint's names, as before).
    plain = _session()
    assert spark_prefix(main, plain) == ""  # type: ignore[arg-type]
    assert spark_prefix(scratch, plain) == "scratch__"  # type: ignore[arg-type]
    # The plugin's session (spark.sql.defaultCatalog=main): the same tables, through spark_catalog.
    plugin = _session("main")
    assert spark_prefix(main, plugin) == "spark_catalog."  # type: ignore[arg-type]
    assert spark_prefix(scratch, plugin) == "spark_catalog.scratch__"  # type: ignore[arg-type]
    # No session: the endpoint's names.
    assert spark_prefix(scratch, None) == "scratch__"


def test_spark_prefix_is_empty_off_the_endpoint_and_for_jdbc() -> None:
    from catalogd.spark_common import spark_prefix

    direct = CatalogInfo("main", "hive", metastore="thrift://hms:9083", hms_endpoint=ENDPOINT, hms_prefix="main__")
    # A session on the catalog's own metastore: its names carry no prefix and no catalog.
    own = _session("main", uris="thrift://hms:9083")
    assert spark_prefix(direct, own) == ""  # type: ignore[arg-type]
    # Spark reaches a jdbc catalog through JDBC, never through the endpoint.
    pg = CatalogInfo("pg", "jdbc", metastore="jdbc:postgresql://db/x", hms_endpoint=ENDPOINT, hms_prefix="pg__")
    assert spark_prefix(pg, _session("main")) == ""  # type: ignore[arg-type]
    assert spark_prefix(pg, None) == ""


def test_a_stage_is_written_through_the_session_catalog_under_the_plugin() -> None:
    from catalogd.model import Stage, StagePurpose, StageState
    from catalogd.spark_common import StagedTable, spark_prefix

    scratch = CatalogInfo("scratch", "memory", hms_endpoint=ENDPOINT, hms_prefix="scratch__")
    stage = Stage("s1", "scratch", "tmp", "big", StagePurpose.CREATE, StageState.OPEN,
                  staging_table="__catalogd_stage_s1")
    staged = StagedTable(stage, spark_prefix(scratch, _session("main")), scratch)  # type: ignore[arg-type]
    assert staged.name == "spark_catalog.scratch__tmp.__catalogd_stage_s1"
    assert StagedTable(stage, spark_prefix(scratch, _session()), scratch).name == (  # type: ignore[arg-type]
        "scratch__tmp.__catalogd_stage_s1")


class _CurrentCatalog:
    """``spark.catalog``'s current catalog and database, and its calls (PySpark's method names)."""

    def __init__(self, catalog: str, database: str) -> None:
        self.catalog, self.database = catalog, database
        self.calls: list[str] = []

    def currentCatalog(self) -> str:
        return self.catalog

    def currentDatabase(self) -> str:
        return self.database

    def setCurrentCatalog(self, name: str) -> None:
        self.calls.append(f"catalog {name}")
        self.catalog, self.database = name, "default"

    def setCurrentDatabase(self, name: str) -> None:
        self.calls.append(f"database {name}")
        self.database = name


class _CurrentCatalogSession:
    def __init__(self, catalog: str, database: str) -> None:
        self.catalog = _CurrentCatalog(catalog, database)


def test_helpers_write_with_the_session_catalog_current_and_restore_the_plugin_s() -> None:
    """insertInto / saveAsTable take spark_catalog.db.t only while spark_catalog is current."""
    from catalogd.spark_common import writing_to_session_catalog

    spark = _CurrentCatalogSession("main", "sales")
    with writing_to_session_catalog(spark):  # type: ignore[arg-type]
        assert spark.catalog.catalog == "spark_catalog"
    assert (spark.catalog.catalog, spark.catalog.database) == ("main", "sales")
    assert spark.catalog.calls == ["catalog spark_catalog", "catalog main", "database sales"]

    # Restored when the write fails too.
    failing = _CurrentCatalogSession("main", "sales")
    try:
        with writing_to_session_catalog(failing):  # type: ignore[arg-type]
            raise RuntimeError("the write failed")
    except RuntimeError:
        pass
    assert (failing.catalog.catalog, failing.catalog.database) == ("main", "sales")

    # A session on the session catalog (before the plugin; every refresh job's): nothing changes.
    plain = _CurrentCatalogSession("spark_catalog", "sales")
    with writing_to_session_catalog(plain):  # type: ignore[arg-type]
        pass
    assert plain.catalog.calls == []


class _DeadConf:
    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("NO_ACTIVE_SESSION: the Spark Connect server died")


class _DeadSpark:
    conf = _DeadConf()


class _StageClient:
    """A catalogd client that opens a stage and records what is done with it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def begin_stage(self, target: str, *args: Any, **kwargs: Any) -> Any:
        from catalogd.model import Stage, StagePurpose, StageState

        self.calls.append("begin")
        return Stage("main.db.s1", "main", "db", "t", StagePurpose.REPLACE, StageState.OPEN,
                     staging_table="__catalogd_stage_s1")

    def get_catalog(self, name: str) -> CatalogInfo:
        return CatalogInfo("main", "hive", default=True, hms_endpoint=ENDPOINT)

    def abort_stage(self, stage_id: str, writer_stopped: bool = False) -> Any:
        self.calls.append(f"abort {stage_id}")
        return None


def test_a_session_that_dies_right_after_the_stage_opens_leaves_no_open_stage() -> None:
    # A Connect server killed between the stage's begin and the write: the session's first
    # question (its default catalog) fails, and the stage is aborted at once, not left to the janitor.
    import pytest

    client = _StageClient()
    with pytest.raises(RuntimeError, match="NO_ACTIVE_SESSION"), \
            spark_common.staged_table("main.db.t", "id int", client=client,  # type: ignore[arg-type]
                                      spark=_DeadSpark()):  # type: ignore[arg-type]
        raise AssertionError("the block must not run")
    assert client.calls == ["begin", "abort main.db.s1"]


def test_a_write_told_the_session_s_state_asks_the_session_nothing() -> None:
    """``SessionState`` asked ahead (a refresh: beside its stage's begin): no round trip at the write."""
    key = spark_common.DYNAMIC_PARTITION_MODE
    ready = _Spark({key: "nonstrict"})
    known = spark_common.SessionState("spark_catalog", "nonstrict")
    with spark_common.dynamic_partitions(ready, known):  # type: ignore[arg-type]
        pass
    assert ready.conf.calls == []
    # A known strict mode is still set for the write and restored after.
    strict = _Spark({key: "strict"})
    with spark_common.dynamic_partitions(strict, spark_common.SessionState("spark_catalog", "strict")):  # type: ignore[arg-type]
        assert strict.conf.values[key] == "nonstrict"
    assert strict.conf.values == {key: "strict"} and strict.conf.calls == [f"set {key}", f"set {key}"]

    on_plugin = _CurrentCatalogSession("main", "sales")
    with spark_common.writing_to_session_catalog(on_plugin, "spark_catalog"):  # type: ignore[arg-type]
        pass
    assert on_plugin.catalog.calls == []  # told it is on the session catalog already
    with spark_common.writing_to_session_catalog(on_plugin, "main"):  # type: ignore[arg-type]
        assert on_plugin.catalog.catalog == "spark_catalog"
    assert on_plugin.catalog.catalog == "main"


def test_session_state_is_the_session_s_current_catalog_and_partition_mode() -> None:
    spark = _CurrentCatalogSession("main", "sales")
    spark.conf = _Conf({spark_common.DYNAMIC_PARTITION_MODE: "nonstrict"})  # type: ignore[attr-defined]
    assert spark_common.session_state(spark) == spark_common.SessionState("main", "nonstrict")  # type: ignore[arg-type]
