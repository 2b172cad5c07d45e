"""The file side of an APPEND commit: the plan, the moves and their repetition (no metastore needed)."""

from __future__ import annotations

import json
import os

import pytest

from catalogd import wire
from catalogd.catalog.hive_staging import (
    APPEND_PLAN,
    _chunks,
    _read_chunked,
    append_plan,
    apply_moves,
    local_path,
)
from catalogd.errors import ConflictError, UnsupportedError
from catalogd.model import Stage, StagePurpose, StageState

KEY = "0123456789abcdef"


def _read(path) -> str:
    with open(path) as f:
        return f.read()


def _write(path, text: str = "x") -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def test_local_paths():
    assert local_path("file:/wh/db.db/t") == "/wh/db.db/t"
    assert local_path("file:///wh/db.db/t") == "/wh/db.db/t"
    assert local_path("file://localhost/wh/a%20b") == "/wh/a b"
    assert local_path("/wh/t") == "/wh/t"
    for remote in ["hdfs://nn:8020/wh/t", "s3a://bucket/wh/t", "file://otherhost/wh/t", "", None]:
        assert local_path(remote) is None


def test_the_plan_moves_into_existing_directories_and_adds_new_ones(tmp_path):
    stage = tmp_path / "t" / f".catalogd-stage-{KEY}"
    _write(stage / "ds=1" / "000000_0", "new1")
    _write(stage / "ds=1" / "_SUCCESS", "")
    _write(stage / "ds=1" / ".000000_0.crc", "")
    _write(stage / "ds=2" / "000000_0", "new2")
    old = _write(tmp_path / "t" / "ds=1" / "000000_0", "old1")
    moves, add = append_plan(KEY, {"ds=1": str(stage / "ds=1"), "ds=2": str(stage / "ds=2")},
                             {"ds=1": str(tmp_path / "t" / "ds=1"), "ds=3": str(tmp_path / "t" / "ds=3")})
    # Hive's 000000_0 repeats between inserts: the moved file gets the stage's key, never the old name.
    assert moves == [[str(stage / "ds=1" / "000000_0"), str(tmp_path / "t" / "ds=1" / f"{KEY}-000000_0")]]
    assert add == ["ds=2"]
    assert apply_moves(moves) == 1
    assert sorted(os.listdir(tmp_path / "t" / "ds=1")) == ["000000_0", f"{KEY}-000000_0"]
    assert _read(old) == "old1"
    assert _read(tmp_path / "t" / "ds=1" / f"{KEY}-000000_0") == "new1"


def test_unpartitioned_plan(tmp_path):
    stage, target = tmp_path / "t" / f".catalogd-stage-{KEY}", tmp_path / "t"
    _write(stage / "part-00000-a.parquet")
    _write(stage / "part-00001-a.parquet")
    _write(target / "part-00000-a.parquet", "old")
    moves, add = append_plan(KEY, {"": str(stage)}, {"": str(target)})
    assert add == [] and [os.path.basename(d) for _, d in moves] == [f"{KEY}-part-00000-a.parquet",
                                                                      f"{KEY}-part-00001-a.parquet"]


def test_moves_are_safe_to_repeat(tmp_path):
    """A commit interrupted after some moves is finished by running the same plan again."""
    sources = [_write(tmp_path / "s" / f"f{i}") for i in range(3)]
    moves = [[s, str(tmp_path / "d" / f"{KEY}-{os.path.basename(s)}")] for s in sources]
    os.makedirs(tmp_path / "d")
    os.rename(sources[0], moves[0][1])  # the first move happened before the crash
    assert apply_moves(moves) == 2
    assert apply_moves(moves) == 0
    assert sorted(os.listdir(tmp_path / "d")) == [f"{KEY}-f0", f"{KEY}-f1", f"{KEY}-f2"]


def test_a_move_never_replaces_a_file(tmp_path):
    source = _write(tmp_path / "s" / "f", "new")
    dest = _write(tmp_path / "d" / f"{KEY}-f", "someone else's")
    with pytest.raises(ConflictError, match="exists already"):
        apply_moves([[source, dest]])
    assert _read(dest) == "someone else's" and os.path.exists(source)


def test_a_staged_subdirectory_is_refused(tmp_path):
    _write(tmp_path / "s" / "nested" / "f")
    with pytest.raises(UnsupportedError, match="not a plain file"):
        append_plan(KEY, {"": str(tmp_path / "s")}, {"": str(tmp_path / "d")})


def test_a_large_plan_survives_chunking():
    plan = {"moves": [[f"/wh/t/.catalogd-stage-{KEY}/ds={i}/part-{j:05d}.parquet",
                       f"/wh/t/ds={i}/{KEY}-part-{j:05d}.parquet"] for i in range(50) for j in range(20)],
            "add": [f"ds={i}" for i in range(50, 250)]}
    params = _chunks(json.dumps(plan), APPEND_PLAN)
    assert len(params) > 1 and all(k.startswith(APPEND_PLAN + ".") for k in params)
    assert _read_chunked(params, APPEND_PLAN) == plan


def test_append_purpose_on_the_wire():
    assert StagePurpose.parse("append") is StagePurpose.APPEND
    stage = Stage(id=f"main.db.{KEY}", catalog="main", database="db", target="t",
                  purpose=StagePurpose.APPEND, state=StageState.OPEN)
    assert wire.stage_from_thrift(wire.stage_to_thrift(stage)) == stage
