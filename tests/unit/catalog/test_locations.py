"""Location logic (``catalogd.catalog.locations``): spellings normalised, roots confined, conflicts found."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from catalogd.catalog.locations import (
    LocalFiles,
    Location,
    Occupant,
    Roots,
    claim_conflict,
    deletion_blocker,
    parse,
)
from catalogd.errors import InvalidArgumentError, PermissionDeniedError

FILE = ("file", "")


class FoldingFiles(LocalFiles):
    """A file system that ignores case (as macOS's and Windows' do), without symlinks."""

    def realpath(self, path: str) -> str:
        return path

    def case_insensitive(self, path: str) -> bool:
        return True


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize("uri", [
    "file:/wh/db/t", "file:///wh/db/t", "file://localhost/wh/db/t", "/wh/db/t", "file:/wh//db///t/",
    "file:/wh/db/./t", "file:/wh/x/../db/t", "FILE:/wh/db/t",
])
def test_spellings_of_one_local_directory_are_the_same(uri: str) -> None:
    assert parse(uri, FILE).same(parse("file:/wh/db/t", FILE))


def test_hadoop_reads_question_marks_and_hashes_as_path() -> None:
    # Hadoop's Path keeps `?` and `#` in the path: `x?/../../victim` is /wh/victim, not /wh/db/x.
    assert parse("file:/wh/db/x?/../../victim", FILE).path == "/wh/victim"
    assert parse("hdfs://nn/wh/a#/../../b").path == "/b"


def test_scheme_and_authority_are_compared_without_case_but_paths_with_it() -> None:
    assert parse("HDFS://NameNode:8020/wh/T").same(parse("hdfs://namenode:8020/wh/T"))
    assert not parse("hdfs://nn/wh/T").same(parse("hdfs://nn/wh/t"))


def test_case_is_folded_where_the_file_system_ignores_it() -> None:
    files = FoldingFiles()
    root = parse("file:/Data/WH", FILE, files)
    assert root.contains(parse("file:/data/wh/db", FILE, files))
    assert parse("file:/data/wh/db", FILE, files).path == "/data/wh/db"  # shown as given


def test_symlinks_of_local_paths_are_resolved(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / "wh").mkdir()
    os.symlink(victim, tmp_path / "wh" / "link")
    resolved = parse(f"file:{tmp_path}/wh/link/data", FILE)
    assert resolved.path == f"{victim.resolve()}/data"
    roots = Roots([f"file:{tmp_path}/wh"], FILE)
    with pytest.raises(PermissionDeniedError, match="outside"):
        roots.confine(f"file:{tmp_path}/wh/link/data", "table t")


def test_case_insensitivity_is_probed_on_the_real_file_system(tmp_path: Path) -> None:
    (tmp_path / "Probe").mkdir()
    files = LocalFiles()
    # Whatever this machine's file system does, the probe agrees with it.
    ignores_case = (tmp_path / "pROBE").exists()
    assert files.case_insensitive(str(tmp_path / "Probe" / "missing" / "deeper")) is ignores_case


@pytest.mark.parametrize("uri", [
    "", " file:/x", "file:/x ", "file:/a\nb", "relative/path", "file:relative", "hdfs:relative", "1x:/a",
    "file://otherhost/x", "file:/a\\b",
])
def test_bad_spellings_are_invalid(uri: str) -> None:
    with pytest.raises(InvalidArgumentError):
        parse(uri, FILE)


def test_bare_paths_need_a_known_default_file_system() -> None:
    with pytest.raises(InvalidArgumentError, match="full URI"):
        parse("/user/hive/warehouse/x")
    assert parse("/x", ("hdfs", "nn:8020")).uri == "hdfs://nn:8020/x"


def test_credentials_in_an_authority_are_never_shown() -> None:
    loc = parse("s3a://AKIA:secret@bucket/wh/t")
    assert "secret" not in str(loc)
    assert "secret" in loc.uri  # still handed to the metastore as given


def test_uris_are_spelled_as_hadoop_spells_them() -> None:
    assert parse("file:///wh/t/", FILE).uri == "file:/wh/t"
    assert parse("hdfs://nn:8020/wh/t").uri == "hdfs://nn:8020/wh/t"


# ---------------------------------------------------------------- roots


@pytest.fixture
def roots() -> Roots:
    return Roots(["file:///wh", "s3a://lake/data/"], FILE)


@pytest.mark.parametrize("uri", [
    "file:/wh/db.db/t", "file:///wh/x", "/wh/db/t", "s3a://lake/data/t", "S3A://LAKE/data/x/y",
])
def test_inside_a_root_is_allowed(roots: Roots, uri: str) -> None:
    assert roots.confine(uri, "table t")
    assert roots.deletable(uri) is not None


@pytest.mark.parametrize("uri", [
    "file:/victim", "file:/wh/../victim", "file:/wh/db/../../victim", "file:/whx/t", "file:/w",
    "s3://lake/data/t", "s3a://lake/database/t", "s3a://other/data/t", "hdfs://nn/wh/t", "/wh/db/../../etc",
])
def test_outside_every_root_is_denied(roots: Roots, uri: str) -> None:
    with pytest.raises(PermissionDeniedError, match="outside the catalog's allowed locations"):
        roots.confine(uri, "table t")
    assert roots.deletable(uri) is None


@pytest.mark.parametrize("uri", ["file:/wh", "file:///wh/", "s3a://lake/data", "file:/wh/db/.."])
def test_a_root_itself_is_neither_given_out_nor_deleted(roots: Roots, uri: str) -> None:
    with pytest.raises(PermissionDeniedError, match="allowed root itself"):
        roots.confine(uri, "database d")
    assert roots.deletable(uri) is None


def test_unreadable_spellings_are_denied_not_guessed(roots: Roots) -> None:
    with pytest.raises(PermissionDeniedError, match="allowed locations"):
        roots.confine("file:wh/t", "table t")
    assert roots.deletable("file:wh/t") is None
    assert roots.deletable(None) is None


def test_no_roots_allow_nothing() -> None:
    none = Roots([], None)
    with pytest.raises(PermissionDeniedError):
        none.confine("hdfs://nn/wh/t", "table t")
    assert str(none) == "(none)"


# ---------------------------------------------------------------- other objects' directories


def loc(path: str) -> Location:
    return parse(f"file:{path}", FILE)


DB = Occupant("database", "db", "", "", loc("/wh/db.db"))
A = Occupant("table", "db", "a", "", loc("/wh/db.db/a"))
P = Occupant("partition", "db", "p", "ds=1", loc("/wh/elsewhere/p1"))
STAGE = Occupant("table", "db", "__catalogd_stage_x", "", loc("/wh/db.db/a/.catalogd-stage-x"), stage_of="a")
OTHERS = [DB, A, P]


@pytest.mark.parametrize(("path", "words"), [
    ("/wh/db.db/a", "is the directory of table db.a"),
    ("/wh/db.db/a/", "is the directory of table db.a"),
    ("/wh/db.db/a/sub", "inside the directory of table db.a"),
    ("/wh/elsewhere/p1/x", "inside the directory of partition ds=1 of table db.p"),
    ("/wh/db.db", "is the directory of database db"),
    ("/wh", "the directory of database db is inside it"),
    ("/wh/elsewhere", "the directory of partition ds=1 of table db.p is inside it"),
])
def test_a_new_directory_must_not_touch_another_objects(path: str, words: str) -> None:
    conflict = claim_conflict(loc(path), OTHERS)
    assert conflict is not None and words in conflict


def test_new_directories_beside_others_are_fine() -> None:
    assert claim_conflict(loc("/wh/db.db/b"), OTHERS) is None
    assert claim_conflict(loc("/wh/db.db/ab"), OTHERS) is None  # a prefix of a name is not a parent
    # A partition may live in its own table's directory, not in another's.
    assert claim_conflict(loc("/wh/db.db/a/ds=2"), OTHERS, own_table=("db", "a")) is None
    assert claim_conflict(loc("/wh/db.db/a/ds=2"), OTHERS, own_table=("db", "b")) is not None


@pytest.mark.parametrize(("path", "words"), [
    ("/wh/db.db", "table db.a still uses"),
    ("/wh/db.db/a", "table db.a still uses"),
    ("/wh/db.db/a/x", "inside the directory of table db.a"),
    ("/wh/elsewhere", "partition ds=1 of table db.p still uses"),
])
def test_a_directory_another_object_uses_is_never_deleted(path: str, words: str) -> None:
    blocker = deletion_blocker(loc(path), [A, P])
    assert blocker is not None and words in blocker


def test_a_directory_nobody_else_uses_may_be_deleted() -> None:
    assert deletion_blocker(loc("/wh/db.db/b"), OTHERS) is None
    # Deleting a table's directory inside its database's is the normal case.
    assert deletion_blocker(loc("/wh/db.db/b"), [DB]) is None
    # A partition (or a stage) inside its own table's directory.
    assert deletion_blocker(loc("/wh/db.db/a/ds=1"), [A], exempt=[("db", "a")]) is None
    assert deletion_blocker(STAGE.location, [A], exempt=[("db", "a")]) is None
    assert deletion_blocker(STAGE.location, [A]) is not None


def test_other_file_systems_never_collide() -> None:
    s3 = Occupant("table", "db", "s", "", parse("s3a://b/wh/db.db/a"))
    assert claim_conflict(loc("/wh/db.db/a"), [s3]) is None
    assert deletion_blocker(loc("/wh/db.db"), [s3]) is None


def test_parent() -> None:
    assert loc("/wh/db.db/a/ds=1").parent().same(loc("/wh/db.db/a"))
    assert loc("/").parent().same(loc("/"))
    assert Location("file", "", "/", "/").child("x") == "file:/x"
