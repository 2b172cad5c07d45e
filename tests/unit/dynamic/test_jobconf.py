"""The allowlist of Spark settings a refresh request may give."""

from __future__ import annotations

import pytest

from catalogd.dynamic.jobconf import MAX_VALUE_LENGTH, REQUEST_SETTINGS, check_request_settings
from catalogd.errors import InvalidArgumentError

#: Keys that load code, decide where or what data is written, or change results: each was
#: let through by the old prefix check (spark.executor.*, spark.sql.*, ...) or is one a
#: request must never reach.
REFUSED = [
    # code: jars, packages, files, plugins
    "spark.jars", "spark.jars.packages", "spark.jars.repositories", "spark.files", "spark.archives",
    "spark.submit.pyFiles", "spark.plugins", "spark.executor.plugins", "spark.driver.userClassPathFirst",
    "spark.executor.userClassPathFirst", "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions",
    "spark.driver.extraClassPath", "spark.executor.extraClassPath", "spark.executor.extraLibraryPath",
    "spark.serializer", "spark.kryo.registrator", "spark.shuffle.manager",
    # code: listeners and extensions
    "spark.extraListeners", "spark.sql.queryExecutionListeners", "spark.sql.streaming.streamingQueryListeners",
    "spark.sql.extensions", "spark.sql.adaptive.customCostEvaluatorClass",
    "spark.sql.streaming.stateStore.providerClass",
    # code: resource discovery
    "spark.executor.resource.gpu.discoveryScript", "spark.driver.resource.gpu.discoveryScript",
    "spark.resources.discoveryPlugin",
    # where data is committed
    "spark.sql.sources.commitProtocolClass", "spark.sql.parquet.output.committer.class",
    "spark.sql.sources.outputCommitterClass", "spark.hadoop.mapreduce.outputcommitter.factory.class",
    "spark.sql.streaming.checkpointLocation", "spark.sql.warehouse.dir", "spark.sql.sources.partitionOverwriteMode",
    # which catalog and metastore
    "spark.sql.catalog.spark_catalog", "spark.sql.catalog.x", "spark.sql.catalogImplementation",
    "spark.sql.defaultCatalog", "spark.sql.hive.metastore.jars", "spark.hadoop.hive.metastore.uris",
    "spark.master", "spark.submit.deployMode",
    # results
    "spark.sql.session.timeZone", "spark.sql.ansi.enabled", "spark.sql.files.ignoreMissingFiles",
    "spark.sql.files.ignoreCorruptFiles",
    # not keys at all, or allowed keys spelled otherwise
    "", "x", "SPARK.EXECUTOR.MEMORY", " spark.executor.memory", "spark.executor.memory ",
    "spark.executor.memory\nspark.jars", "spark.sql.adaptive", "spark.sql.adaptive.", "spark.executor.",
]


def test_every_allowed_key_passes_unchanged() -> None:
    conf = {key: "1" for key in REQUEST_SETTINGS}
    checked = check_request_settings(conf)
    assert checked == conf and checked is not conf
    assert check_request_settings({}) == {}


@pytest.mark.parametrize("key", REFUSED)
def test_a_key_outside_the_list_is_refused_by_name(key: str) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        check_request_settings({"spark.executor.memory": "2g", key: "x"})
    message = str(e.value)
    assert f"configuration key {key} may not be set" in message
    assert "spark.conf" in message


def test_every_refused_key_is_named_once() -> None:
    with pytest.raises(InvalidArgumentError) as e:
        check_request_settings({"spark.jars": "a", "spark.sql.shuffle.partitions": "4", "spark.plugins": "b"})
    assert "configuration keys spark.jars, spark.plugins may not be set" in str(e.value)


def test_no_allowed_key_names_code_paths_or_places() -> None:
    # A key that names a class, plugin, listener, script, path or place is never tuning.
    words = ("class", "plugin", "listener", "script", "jar", "path", "dir", "location", "catalog", "extension",
             "metastore", "committer", "protocol", "serializer", "master", "provider", "registrator")
    for key in REQUEST_SETTINGS:
        # ("allocation" holds "location" by accident.)
        assert not any(w in key.lower().replace("allocation", "") for w in words), key
        assert key.startswith("spark.") and key == key.strip()


@pytest.mark.parametrize("value", ["2g\nspark.jars=/tmp/x.jar", "2g\r", "a\x00", "\x7f", "9" * (MAX_VALUE_LENGTH + 1)])
def test_a_value_that_is_not_a_plain_setting_is_refused(value: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"configuration spark\.executor\.memory: the value"):
        check_request_settings({"spark.executor.memory": value})


def test_an_ordinary_value_passes() -> None:
    assert check_request_settings({"spark.executor.memory": "9" * MAX_VALUE_LENGTH}) == {
        "spark.executor.memory": "9" * MAX_VALUE_LENGTH}
