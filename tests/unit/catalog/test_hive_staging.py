"""Stage ids, wire round trips, parameter chunking and fault points (no metastore needed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from catalogd import wire
from catalogd.catalog.hive_codec import partition_name
from catalogd.catalog.hive_staging import _chunks, _read_replaced, check_key, new_key
from catalogd.errors import InvalidArgumentError
from catalogd.faults import ENV, POINTS, fault_point
from catalogd.manager import parse_stage_id
from catalogd.model import Column, Stage, StagePurpose, StageRequest, StageState, TableFormat


def test_stage_ids():
    key = new_key()
    assert check_key(key) == key and len(key) == 16
    assert parse_stage_id(f"main.sales.{key}") == ("main", "sales", key)
    for bad in ["", "main.sales", "a.b.c.d", "main..x", "main.sales.x y"]:
        with pytest.raises(InvalidArgumentError):
            parse_stage_id(bad)
    for bad in ["", "xyz", "0123456789ABCDEF", "0123456789abcde", "0123456789abcdeg"]:
        with pytest.raises(InvalidArgumentError):
            check_key(bad)


def test_stage_wire_round_trip():
    stage = Stage(id="main.db.0123456789abcdef", catalog="main", database="db", target="t",
                  purpose=StagePurpose.OVERWRITE_PARTITIONS, state=StageState.COMMITTING, owner="me",
                  created=1, lease_deadline=2, staging_table="__catalogd_stage_0123456789abcdef",
                  location="file:/x", columns=[Column("id", "bigint", "c")], partition_keys=[Column("ds", "string")],
                  format=TableFormat.ORC, message="m")
    assert wire.stage_from_thrift(wire.stage_to_thrift(stage)) == stage
    request = StageRequest(catalog="main", database="db", target="t", purpose=StagePurpose.REPLACE,
                           columns=[Column("id", "bigint")], format=TableFormat.PARQUET,
                           properties={"a": "b"}, comment="c", lease=2.5, owner="o")
    assert wire.stage_request_from_thrift(wire.stage_request_to_thrift(request)) == request


def test_stage_request_rejects_negative_leases():
    thrift = wire.stage_request_to_thrift(StageRequest(catalog="", database="db", target="t"))
    thrift.leaseMillis = -5
    with pytest.raises(InvalidArgumentError, match="negative"):
        wire.stage_request_from_thrift(thrift)


def test_replaced_locations_survive_chunking():
    replaced = {f"ds=2024-01-{i:02d}/hour={h}": f"file:/warehouse/db/t/ds=2024-01-{i:02d}/hour={h}"
                for i in range(1, 29) for h in range(24)}
    import json

    params = _chunks(json.dumps(replaced))
    assert len(params) > 1 and all(len(v) <= 3000 for v in params.values())
    assert _read_replaced(params) == replaced
    assert _read_replaced({}) == {}


def test_partition_names():
    class Key:
        def __init__(self, name: str) -> None:
            self.name = name

    assert partition_name([Key("ds"), Key("h")], ["2024-01-01", "3"]) == "ds=2024-01-01/h=3"


def test_fault_points_are_inert_without_the_variable(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    for point in POINTS:
        fault_point(point)  # still alive
    monkeypatch.setenv(ENV, "commit.other")
    fault_point("commit.marked")


def test_an_armed_fault_point_kills_the_process():
    code = "from catalogd.faults import fault_point; fault_point('commit.marked'); print('survived')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, ENV: "commit.switched, commit.marked"})
    assert done.returncode == -signal.SIGKILL
    assert "survived" not in done.stdout


def test_partition_specs():
    from catalogd.client import parse_partition_spec

    assert parse_partition_spec("ds=2024-03-01/hr=01") == {"ds": "2024-03-01", "hr": "01"}
    assert parse_partition_spec(("DS=a", "hr=b")) == {"ds": "a", "hr": "b"}
    assert parse_partition_spec("ds=a,hr=") == {"ds": "a", "hr": ""}
    assert parse_partition_spec({"ds": 1}) == {"ds": "1"}
    for bad in ["", "ds", "=x", "ds=a/ds=b"]:
        with pytest.raises(InvalidArgumentError):
            parse_partition_spec(bad)


def test_partition_and_statistics_wire():
    from catalogd.model import Partition, Statistics, Table

    part = Partition(values=["a", "1"], keys=["ds", "hr"], location="file:/x", properties={"p": "q"}, created=5,
                     statistics=Statistics(row_count=3, total_size=None, file_count=1))
    assert wire.partition_from_thrift(wire.partition_to_thrift(part)) == part
    assert part.name == "ds=a/hr=1" and part.spec == {"ds": "a", "hr": "1"}
    table = Table(name="t", database="d", catalog="c", columns=[Column("id", "bigint")],
                  statistics=Statistics(row_count=7))
    assert wire.table_from_thrift(wire.table_to_thrift(table)).statistics == Statistics(row_count=7)
    assert not Statistics().known and Statistics(file_count=0).known


# ---------------------------------------------------------------- stage signatures (issue 11)

def _signed_table(secret: bytes, location: str = "file:/wh/db.db/__catalogd_stage_0123456789abcdef"):
    from catalogd.catalog.hive_staging import SIGNATURE, stage_signature
    from catalogd.hive_idl import ttypes as hms

    params = {"catalogd.stage.id": "main.db.0123456789abcdef", "catalogd.stage.state": "OPEN",
              "catalogd.stage.target": "t", "spark.sql.statistics.numRows": "3"}
    tbl = hms.Table(tableName="__catalogd_stage_0123456789abcdef", dbName="db", parameters=params,
                    sd=hms.StorageDescriptor(location=location))
    params[SIGNATURE] = stage_signature(secret, "db", tbl.tableName, location, params)
    return tbl


def test_a_signature_covers_the_stage_parameters_name_and_location():
    from catalogd.catalog.hive_staging import SIGNATURE, is_signed

    secret = b"k" * 32
    assert is_signed(secret, _signed_table(secret))
    assert not is_signed(b"another key", _signed_table(secret))
    for change in ("catalogd.stage.state", "catalogd.stage.target", "catalogd.stage.id"):
        tbl = _signed_table(secret)
        tbl.parameters[change] = "x"
        assert not is_signed(secret, tbl), change
    tbl = _signed_table(secret)
    tbl.parameters["catalogd.stage.old-location"] = "file:/srv/precious"  # a parameter added
    assert not is_signed(secret, tbl)
    tbl = _signed_table(secret)
    tbl.sd.location = "file:/srv/precious"
    assert not is_signed(secret, tbl)
    tbl = _signed_table(secret)
    tbl.tableName = "__catalogd_stage_fedcba9876543210"  # copied onto another table
    assert not is_signed(secret, tbl)
    tbl = _signed_table(secret)
    del tbl.parameters[SIGNATURE]
    assert not is_signed(secret, tbl)
    # What is not catalogd's may change: Spark's statistics, the spelling of the same location.
    tbl = _signed_table(secret)
    tbl.parameters["spark.sql.statistics.numRows"] = "4"
    tbl.sd.location = "file:///wh/db.db/__catalogd_stage_0123456789abcdef/"
    assert is_signed(secret, tbl)


def test_the_stage_key_is_made_once_and_kept_private(tmp_path):
    import stat

    from catalogd.keys import load_key

    first = load_key(tmp_path, "stage.key")
    assert len(first) == 64 and load_key(tmp_path, "stage.key") == first
    secrets_dir = tmp_path / "secrets"
    assert stat.S_IMODE(secrets_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((secrets_dir / "stage.key").stat().st_mode) == 0o600
    assert [p.name for p in secrets_dir.iterdir()] == ["stage.key"]
    # Opened up by someone: closed again, same key.
    os.chmod(secrets_dir / "stage.key", 0o644)
    os.chmod(secrets_dir, 0o755)
    assert load_key(tmp_path, "stage.key") == first
    assert stat.S_IMODE((secrets_dir / "stage.key").stat().st_mode) == 0o600
    assert stat.S_IMODE(secrets_dir.stat().st_mode) == 0o700


def test_a_bad_stage_key_file_is_a_config_error(tmp_path):
    from catalogd.errors import ConfigError
    from catalogd.keys import load_key

    (tmp_path / "secrets").mkdir(mode=0o700)
    (tmp_path / "secrets" / "stage.key").write_text("short\n")
    with pytest.raises(ConfigError, match="too short"):
        load_key(tmp_path, "stage.key")
    (tmp_path / "secrets" / "stage.key").unlink()
    (tmp_path / "secrets" / "stage.key").mkdir()
    with pytest.raises(ConfigError, match=r"stage\.key"):
        load_key(tmp_path, "stage.key")
