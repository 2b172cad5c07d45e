"""Every write method of the HMS endpoint goes through catalogd's location rules (issue 19).

Each test attacks through the endpoint, as a hostile HMS client would, with a victim directory
of its own under ``tmp_path`` (outside the session daemon's ``main`` warehouse, its only allowed
location), and asserts the victim's files survive. Objects that catalogd would refuse are
placed on a victim "behind catalogd's back", straight into the embedded metastore (``hms``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore
from hmsclient.genthrift.hive_metastore import ttypes as T

from catalogd.catalog import hive_codec as codec
from catalogd.model import Column, Table, TableKind

from .helpers import hms_connection, local_path

pytestmark = pytest.mark.integration


def make_victim(tmp_path: Path, name: str = "victim") -> Path:
    path = tmp_path / name
    path.mkdir()
    (path / "precious.txt").write_text("keep me")
    return path


def intact(victim: Path) -> bool:
    return (victim / "precious.txt").read_text() == "keep me"


def direct_table(hms: Any, db: str, name: str, location: str | None = None, partitioned: bool = False) -> Any:
    """A managed table made straight in the metastore (no rules): returns it as stored."""
    table = Table(name=name, database=db, columns=[Column("id", "bigint")], location=location,
                  partition_keys=[Column("ds", "string")] if partitioned else [], kind=TableKind.MANAGED)
    hms.call("create_table", codec.to_hms_table(table, None), idempotent=False)
    return hms.call("get_table", db, name)


def direct_partition(hms: Any, db: str, table: str, value: str, location: str) -> None:
    """A partition on ``location`` added straight to the metastore, as only a client behind catalogd's back can."""
    tbl = hms.call("get_table", db, table)
    part = T.Partition(values=[value], dbName=db, tableName=table, sd=tbl.sd, parameters={})
    part.sd.location = location
    hms.call("add_partition", part, idempotent=False)


def add_partition(c: Any, part: Any) -> Any:
    """The IDL's add_partition (hmsclient's HMSClient shadows it with a convenience of its own)."""
    return ThriftHiveMetastore.Client.add_partition(c, part)


def refused(call: Any, *words: str) -> str:
    with pytest.raises(T.MetaException) as e:
        call()
    message = str(e.value.message)
    for word in words:
        assert word in message, message
    return message


# ---------------------------------------------------------------- drops by name go by drop_partition's rule


@pytest.mark.parametrize("method", ["drop_partition_by_name", "drop_partition_by_name_with_environment_context",
                                    "drop_partitions_req"])
def test_partition_drops_by_name_keep_a_victims_files(method, client, main_db, hms, hms_address, tmp_path):
    db = main_db.split(".")[1]
    victim = make_victim(tmp_path)
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    direct_partition(hms, db, "p", "1", victim.as_uri())
    with hms_connection(hms_address) as c:
        if method == "drop_partition_by_name":
            assert c.drop_partition_by_name(db, "p", "ds=1", True)
        elif method == "drop_partition_by_name_with_environment_context":
            assert c.drop_partition_by_name_with_environment_context(db, "p", "ds=1", True,
                                                                     T.EnvironmentContext(properties={}))
        else:
            req = T.DropPartitionsRequest(dbName=db, tblName="p", parts=T.RequestPartsSpec(names=["ds=1"]),
                                          deleteData=True, needResult=True)
            result = c.drop_partitions_req(req)
            assert [p.values for p in result.partitions] == [["1"]]
        assert c.get_partition_names(db, "p", -1) == []
    assert intact(victim)


def test_partition_drops_by_name_still_delete_their_own_files(client, main_db, hms_address):
    db = main_db.split(".")[1]
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    with hms_connection(hms_address) as c:
        c.append_partition_by_name(db, "p", "ds=1")
        c.append_partition_by_name(db, "p", "ds=2")
        own = [local_path(c.get_partition_by_name(db, "p", n).sd.location) for n in ("ds=1", "ds=2")]
        for path in own:
            path.mkdir(parents=True, exist_ok=True)
            (path / "f").write_text("x")
        assert c.drop_partition_by_name(db, "p", "ds=1", True)
        req = T.DropPartitionsRequest(dbName=db, tblName="p", parts=T.RequestPartsSpec(names=["ds=2"]),
                                      deleteData=True)
        c.drop_partitions_req(req)
    assert not own[0].exists() and not own[1].exists()


def test_drop_partitions_req_by_expression_with_data_is_refused(client, main_db, hms, hms_address, tmp_path):
    db = main_db.split(".")[1]
    victim = make_victim(tmp_path)
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    direct_partition(hms, db, "p", "1", victim.as_uri())
    with hms_connection(hms_address) as c:
        req = T.DropPartitionsRequest(dbName=db, tblName="p", deleteData=True,
                                      parts=T.RequestPartsSpec(exprs=[T.DropPartitionsExpr(expr=b"\x00")]))
        refused(lambda: c.drop_partitions_req(req), "cannot judge")
        assert c.get_partition_names(db, "p", -1) == ["ds=1"]
    assert intact(victim)


# ---------------------------------------------------------------- moves


def test_rename_partition_on_a_victim_is_refused(client, main_db, hms, hms_address, tmp_path):
    db = main_db.split(".")[1]
    victim = make_victim(tmp_path)
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    direct_partition(hms, db, "p", "1", victim.as_uri())
    with hms_connection(hms_address) as c:
        part = c.get_partition(db, "p", ["1"])
        part.values = ["2"]
        refused(lambda: c.rename_partition(db, "p", ["1"], part), "rename_partition refused", "outside its table")
        assert c.get_partition_names(db, "p", -1) == ["ds=1"]
        # A drop after it (the second step) keeps the files too.
        assert c.drop_partition(db, "p", ["1"], True)
    assert intact(victim)


def test_rename_partition_inside_its_table_still_works(client, main_db, hms_address):
    db = main_db.split(".")[1]
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    with hms_connection(hms_address) as c:
        c.append_partition(db, "p", ["1"])
        part = c.get_partition(db, "p", ["1"])
        part.values = ["2"]
        c.rename_partition(db, "p", ["1"], part)
        assert c.get_partition_names(db, "p", -1) == ["ds=2"]


# ---------------------------------------------------------------- what catalogd cannot judge


@pytest.mark.parametrize("method", ["add_index", "alter_index", "drop_index_by_name", "exchange_partition"])
def test_methods_catalogd_cannot_judge_are_refused(method, client, main_db, hms_address, tmp_path):
    db = main_db.split(".")[1]
    victim = make_victim(tmp_path)
    client.create_table(f"{main_db}.base", "id bigint", partitioned_by="ds string")
    client.create_table(f"{main_db}.other", "id bigint", partitioned_by="ds string")
    with hms_connection(hms_address) as c:
        base = c.get_table(db, "base")
        if method == "add_index":
            sd = T.StorageDescriptor(cols=base.sd.cols, location=victim.as_uri(), inputFormat=base.sd.inputFormat,
                                     outputFormat=base.sd.outputFormat, serdeInfo=base.sd.serdeInfo)
            index = T.Index(indexName="i", indexHandlerClass="compact", dbName=db, origTableName="base",
                            indexTableName="base_i", sd=sd, parameters={}, deferredRebuild=True)
            index_table = T.Table(tableName="base_i", dbName=db, sd=sd, partitionKeys=[], parameters={},
                                  tableType="INDEX_TABLE")
            call = lambda: c.add_index(index, index_table)  # noqa: E731
        elif method == "alter_index":
            call = lambda: c.alter_index(db, "base", "i", T.Index(indexName="i", dbName=db))  # noqa: E731
        elif method == "drop_index_by_name":
            call = lambda: c.drop_index_by_name(db, "base", "i", True)  # noqa: E731
        else:
            call = lambda: c.exchange_partition({"ds": "1"}, db, "base", db, "other")  # noqa: E731
        refused(call, f"{method} refused", "cannot judge")
        assert "base_i" not in c.get_all_tables(db)
    assert intact(victim)


# ---------------------------------------------------------------- keep-data drops


def test_drop_database_keeping_data_keeps_its_managed_tables_files(client, unique_name, hms_address):
    name = unique_name("db")
    client.create_database(f"main.{name}")
    try:
        own = local_path(client.create_table(f"main.{name}.t", "id bigint").location)
        own.mkdir(parents=True, exist_ok=True)
        (own / "f").write_text("keep me")
        with hms_connection(hms_address) as c:
            c.drop_database(name, False, True)
        assert not client.database_exists(f"main.{name}")
        assert (own / "f").read_text() == "keep me"
    finally:
        client.drop_database(f"main.{name}", if_exists=True, cascade=True)


# ---------------------------------------------------------------- claims: creates, alters, added partitions


def test_locations_outside_the_allowed_ones_are_refused(client, main_db, hms_address, tmp_path, unique_name):
    db = main_db.split(".")[1]
    victim = make_victim(tmp_path)
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    client.create_table(f"{main_db}.t", "id bigint")
    with hms_connection(hms_address) as c:
        p = c.get_table(db, "p")
        new = c.get_table(db, "t")
        new.tableName, new.sd.location = "n", victim.as_uri()
        refused(lambda: c.create_table(new), "create_table refused", "allowed locations")
        refused(lambda: c.create_table_with_environment_context(new, T.EnvironmentContext(properties={})),
                "refused", "allowed locations")
        moved = c.get_table(db, "t")
        moved.sd.location = victim.as_uri()
        refused(lambda: c.alter_table(db, "t", moved), "alter_table refused", "allowed locations")
        refused(lambda: c.alter_table_with_cascade(db, "t", moved, False), "refused", "allowed locations")
        part = T.Partition(values=["1"], dbName=db, tableName="p", sd=p.sd, parameters={})
        part.sd.location = victim.as_uri()
        refused(lambda: add_partition(c, part), "add_partition refused", "allowed locations")
        refused(lambda: c.add_partitions([part]), "refused", "allowed locations")
        refused(lambda: c.add_partitions_req(T.AddPartitionsRequest(dbName=db, tblName="p", parts=[part],
                                                                    ifNotExists=False)), "refused")
        assert c.get_partition_names(db, "p", -1) == []
        other = unique_name("db")
        refused(lambda: c.create_database(T.Database(name=other, locationUri=victim.as_uri(), parameters={})),
                "create_database refused", "allowed locations")
        database = c.get_database(db)
        database.locationUri = victim.as_uri()
        refused(lambda: c.alter_database(db, database), "alter_database refused", "allowed locations")
        assert c.get_table(db, "t").sd.location != victim.as_uri()
    assert not client.database_exists(f"main.{other}")
    assert intact(victim)


def test_another_objects_directory_is_refused_and_known_at_once(client, main_db, hms_address):
    db = main_db.split(".")[1]
    a_dir = local_path(client.create_table(f"{main_db}.a", "id bigint").location)
    a_dir.mkdir(parents=True, exist_ok=True)
    (a_dir / "f").write_text("a's")
    client.create_table(f"{main_db}.b", "id bigint", partitioned_by="ds string")
    with hms_connection(hms_address) as c:
        b = c.get_table(db, "b")
        a = c.get_table(db, "a")
        # B's partition inside A's directory (the issue: dropping A within 30 s deleted it).
        part = T.Partition(values=["1"], dbName=db, tableName="b", sd=b.sd, parameters={})
        part.sd.location = a.sd.location + "/ds=1"
        refused(lambda: add_partition(c, part), "add_partition refused", "inside the directory")
        # A new table on A's directory, or altered onto it.
        clone = c.get_table(db, "a")
        clone.tableName = "c"
        refused(lambda: c.create_table(clone), "create_table refused", "directory of")
        moved = c.get_table(db, "b")
        moved.sd.location = a.sd.location
        refused(lambda: c.alter_table(db, "b", moved), "alter_table refused", "directory of")
        # A location claimed through the endpoint is known to the rules at once.
        part.sd.location = a.sd.location.rsplit("/", 1)[0] + "/b_elsewhere"
        add_partition(c, part)
        taken = T.Partition(values=["2"], dbName=db, tableName="b", sd=b.sd, parameters={})
        taken.sd.location = part.sd.location
        refused(lambda: add_partition(c, taken), "add_partition refused", "directory of")
        assert c.drop_table(db, "a", True) is None
    assert not a_dir.exists(), "A's own directory still goes with it"


def test_unchanged_locations_and_default_places_are_still_accepted(client, main_db, hms_address):
    db = main_db.split(".")[1]
    client.create_table(f"{main_db}.p", "id bigint", partitioned_by="ds string")
    with hms_connection(hms_address) as c:
        p = c.get_table(db, "p")
        p.parameters["team"] = "data"
        c.alter_table(db, "p", p)
        new = c.get_table(db, "p")
        new.tableName, new.sd.location = "q", None
        c.create_table(new)
        part = T.Partition(values=["1"], dbName=db, tableName="p", sd=p.sd, parameters={})
        part.sd.location = p.sd.location + "/ds=1"
        add_partition(c, part)
        stored = c.get_partition(db, "p", ["1"])
        stored.parameters["x"] = "y"
        c.alter_partition(db, "p", stored)
        assert c.get_partition(db, "p", ["1"]).parameters["x"] == "y"
        assert c.get_table(db, "p").parameters["team"] == "data"


def test_renaming_a_table_off_a_victim_database_is_refused(client, main_db, hms, hms_address, tmp_path,
                                                           unique_name):
    """The issue's attack: a database on a victim (made behind catalogd's back), a table in its default
    place there, renamed into another database (the metastore moves the directory) and dropped."""
    victim = make_victim(tmp_path)
    (victim / "t").mkdir()
    (victim / "t" / "precious.txt").write_text("keep me")
    outside = unique_name("db")
    hms.call("create_database", T.Database(name=outside, locationUri=victim.as_uri(), parameters={}),
             idempotent=False)
    try:
        direct_table(hms, outside, "t")
        db = main_db.split(".")[1]
        with hms_connection(hms_address) as c:
            moved = c.get_table(outside, "t")
            moved.dbName = db
            refused(lambda: c.alter_table(outside, "t", moved), "alter_table refused", "moved by the rename",
                    "allowed locations")
            assert c.get_table(outside, "t").sd.location.rstrip("/").endswith("/victim/t")
            c.drop_table(outside, "t", True)
        assert (victim / "t" / "precious.txt").read_text() == "keep me"
    finally:
        hms.call("drop_database", outside, False, True, idempotent=False)
    assert intact(victim)


# ---------------------------------------------------------------- Spark


def test_spark_create_table_with_a_foreign_location_is_refused(spark, main_db, tmp_path):
    victim = make_victim(tmp_path)
    db = main_db.split(".")[1]
    with pytest.raises(Exception) as e:
        spark.sql(f"CREATE TABLE {db}.t (id INT) USING parquet LOCATION '{victim.as_uri()}'")
    # The error docs/operations.md quotes ("External data").
    assert str(e.value).startswith("org.apache.hadoop.hive.ql.metadata.HiveException: MetaException(message:"
                                   "catalogd: create_table_with_environment_context refused: table ")
    assert "is outside the catalog's allowed locations; allowed locations: " in str(e.value)
    # No table, so nothing for Spark to overwrite there.
    with pytest.raises(Exception, match=r"(?i)not found|cannot be found"):
        spark.sql(f"INSERT OVERWRITE TABLE {db}.t SELECT 1")
    assert intact(victim)


# ---------------------------------------------------------------- catalogd's own stages, and forged ones


def test_only_a_signed_stage_may_sit_inside_its_target(client, main_db, hms, hms_address):
    """An APPEND stage lives in ``<target>/.catalogd-stage-<key>`` and Spark adds its partitions through
    the endpoint: allowed there for a stage catalogd signed, and nowhere else; a forged stage (a name,
    a directory name, the parameters of a stage, without the signature) earns nothing."""
    db = main_db.split(".")[1]
    target = client.create_table(f"{main_db}.t", "id bigint", partitioned_by="ds string")
    target_dir = local_path(target.location)
    (target_dir / "ds=0").mkdir(parents=True)
    (target_dir / "ds=0" / "precious.txt").write_text("keep me")
    client.create_table(f"{main_db}.u", "id bigint", partitioned_by="ds string")
    stage = client.begin_stage(f"{main_db}.t", purpose="APPEND")
    genuine = f"__catalogd_stage_{stage.id.rsplit('.', 1)[1]}"
    stage_dir = hms.call("get_table", db, genuine).sd.location.rstrip("/")
    assert stage_dir.endswith(f"/t/.catalogd-stage-{stage.id.rsplit('.', 1)[1]}")
    # The same table behind catalogd's back, every parameter copied, signed with another key.
    forged = hms.call("get_table", db, genuine)
    forged.tableName = "__catalogd_stage_forged"
    forged.sd.location = f"{target.location.rstrip('/')}/.catalogd-stage-forged"
    forged.parameters["catalogd.stage.signature"] = "v1:" + "0" * 64
    hms.call("create_table", forged, idempotent=False)
    try:
        with hms_connection(hms_address) as c:
            u = c.get_table(db, "u")

            def part(table: str, location: str) -> Any:
                return T.Partition(values=["1"], dbName=db, tableName=table, sd=T.StorageDescriptor(
                    cols=u.sd.cols, location=location, inputFormat=u.sd.inputFormat,
                    outputFormat=u.sd.outputFormat, serdeInfo=u.sd.serdeInfo), parameters={})

            # The forged stage's partition inside its (forged) directory: inside table t's.
            refused(lambda: add_partition(c, part("__catalogd_stage_forged", f"{forged.sd.location}/ds=1")),
                    "add_partition refused", f"inside the directory of table {db}.t")
            # Tables named or placed as stages are, through the endpoint.
            for name in ("evil", "__catalogd_stage_evil"):
                table = c.get_table(db, "u")
                table.tableName, table.sd.location = name, f"{target.location.rstrip('/')}/.catalogd-stage-{name}"
                refused(lambda: c.create_table(table), "create_table refused",  # noqa: B023
                        f"inside the directory of table {db}.t")
            # The genuine stage's partition outside the stage's own directory: in its target's, or another table's.
            for location in (f"{target.location.rstrip('/')}/ds=1", f"{u.sd.location.rstrip('/')}/ds=1"):
                refused(lambda: add_partition(c, part(genuine, location)), "add_partition refused")  # noqa: B023
            # ... and inside it, as Spark places it: accepted.
            add_partition(c, part(genuine, f"{stage_dir}/ds=1"))
            assert c.get_partition_names(db, genuine, -1) == ["ds=1"]
    finally:
        client.abort_stage(stage.id, writer_stopped=True)
        hms.call("drop_table", db, "__catalogd_stage_forged", False, idempotent=False)
    assert (target_dir / "ds=0" / "precious.txt").read_text() == "keep me"

