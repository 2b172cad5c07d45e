"""Which Spark masters get catalogd's loopback-and-authentication settings (issue 31, row 3)."""

from __future__ import annotations

import pytest

from catalogd.dynamic.lockdown import LOCAL_SETTINGS, is_local, locked_conf, locked_env, unguarded


@pytest.mark.parametrize("master", ["local", "local[1]", "local[16]", "local[*]", "local[2,3]", "local[*, 4]"])
def test_spark_s_local_masters_are_local(master: str) -> None:
    assert is_local(master)


@pytest.mark.parametrize("master", ["local-cluster[2,1,1024]", "spark://h:7077", "yarn", "k8s://https://k:6443",
                                    "LOCAL[2]", " local", "local[x]", "localhost"])
def test_other_masters_are_not(master: str) -> None:
    """Spark's own patterns, exactly: a master Spark does not make a secret for must not get
    spark.authenticate without one (its start would fail)."""
    assert not is_local(master)


def test_a_local_master_s_settings_win_over_spark_conf() -> None:
    conf = {"spark.authenticate": "false", "spark.driver.host": "0.0.0.0", "spark.executor.memory": "1g"}
    assert locked_conf("local[1]", conf) == {**LOCAL_SETTINGS, "spark.executor.memory": "1g"}
    assert locked_env("local[1]") == {"SPARK_LOCAL_IP": "127.0.0.1"}
    assert locked_conf("spark://h:7077", conf) == conf and locked_env("spark://h:7077") == {}


def test_an_unauthenticated_cluster_master_is_named() -> None:
    assert unguarded("local[2]", {}) is None
    assert unguarded("spark://h:7077", {"spark.authenticate": "true"}) is None
    assert "spark.authenticate" in (unguarded("spark://h:7077", {}) or "")
