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

from catalogd.catalog import hive_codec as codec
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as T
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
        # A drop after it (the issue's second step) keeps the files too.
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
    # The error docs/operations.md quotes ("External data"), word for word but the paths.
    assert str(e.value).startswith(
        "org.apache.hadoop.hive.ql.metadata.HiveException: MetaException(message:catalogd: "
        f"create_table_with_environment_context refused: table {db}.t (its Spark path): location file:{victim} "
        f"(file:{victim}) is outside the catalog's allowed locations; allowed locations: file:"), str(e.value)
    # No table, so nothing for Spark to overwrite there.
    with pytest.raises(Exception, match=r"(?i)not found|cannot be found"):
        spark.sql(f"INSERT OVERWRITE TABLE {db}.t SELECT 1")
    assert intact(victim)


def test_spark_create_table_on_another_memory_tables_directory_is_refused(spark, client, unique_name):
    """A memory catalog's version of the attack: Spark overwrites another table's files through a table
    placed on its directory; the create is refused (Spark's retry with its `path` too)."""
    name = unique_name("memdb")
    db = f"scratch__{name}"
    spark.sql(f"CREATE DATABASE {db}")
    try:
        spark.sql(f"CREATE TABLE {db}.a (id INT) USING parquet")
        spark.sql(f"INSERT INTO {db}.a VALUES (1)")
        a_dir = local_path(client.get_table(f"scratch.{name}.a").location)
        with pytest.raises(Exception, match="cannot be used on memory catalog scratch"):
            spark.sql(f"CREATE TABLE {db}.t (id INT) USING parquet LOCATION '{a_dir.as_uri()}'")
        assert sorted(spark.sql(f"SELECT id FROM {db}.a").collect()) == [(1,)]
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


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


# ---------------------------------------------------------------- the issue's attacks, on hive and memory catalogs
#
# Each attack runs as a hostile HMS client would, through the endpoint, against a victim directory with
# a file catalogd promises to keep. On the hive catalog (``main``) an object the endpoint refuses to
# place on a victim is placed there behind catalogd's back, straight into the metastore, as only such a
# client can; a memory catalog (``scratch``) has no metastore behind it, so its objects are placed
# through the endpoint (where its rules refuse them, or its drops keep the files). A step catalogd
# refuses is where the attack ends; what matters is that the victim's file is still there.


class Attack:
    """One attack's surroundings: the endpoint connection, the catalog and a database made for it."""

    def __init__(self, c: Any, catalog: str, db: str, hms: Any, tmp_path: Path) -> None:
        self.c, self.catalog, self.db, self.hms, self.tmp_path = c, catalog, db, hms, tmp_path
        self.hive = catalog == "main"
        #: The database as the catalog knows it (the metastore's name) and as a client names it.
        self.client_db = db if self.hive else f"scratch__{db}"

    def table(self, name: str, location: str | None = None, partitioned: bool = False, db: str | None = None) -> Any:
        """A managed table through the endpoint (a location refused there: behind catalogd's back on hive)."""
        tbl = codec.to_hms_table(Table(name=name, database=db or self.client_db, columns=[Column("id", "bigint")],
                                       partition_keys=[Column("ds", "string")] if partitioned else [],
                                       location=location, kind=TableKind.MANAGED), None)
        try:
            self.c.create_table(tbl)
        except T.MetaException:
            if not self.hive:
                raise
            direct_table(self.hms, db or self.db, name, location, partitioned)
        return self.c.get_table(db or self.client_db, name)

    def partition(self, table: str, value: str, location: str) -> None:
        """A partition on ``location`` (behind catalogd's back on hive, when the endpoint refuses it)."""
        tbl = self.c.get_table(self.client_db, table)
        part = T.Partition(values=[value], dbName=self.client_db, tableName=table, sd=tbl.sd, parameters={})
        part.sd.location = location
        try:
            add_partition(self.c, part)
        except T.MetaException:
            if not self.hive:
                raise
            direct_partition(self.hms, self.db, table, value, location)

    def victim(self, name: str = "victim") -> Path:
        """A directory with a file to keep: a foreign one under tmp on hive; inside the catalog's
        scratch warehouse (where its drops delete) on memory, as a table's own directory."""
        if self.hive:
            return make_victim(self.tmp_path, name)
        path = local_path(self.table(f"{name}_owner").sd.location)
        path.mkdir(parents=True, exist_ok=True)
        (path / "precious.txt").write_text("keep me")
        return path


def attempt(call: Any) -> str | None:
    """Run one step of an attack: None, or the refusal that ended it (an HMS exception's message)."""
    try:
        call()
    except (T.MetaException, T.InvalidOperationException, T.NoSuchObjectException, T.InvalidObjectException) as e:
        return str(getattr(e, "message", e))
    return None


def _drop_by_name(a: Attack, method: str) -> Path:
    victim = a.victim()
    a.table("p", partitioned=True)
    if attempt(lambda: a.partition("p", "1", victim.as_uri())) is not None:
        return victim
    if method == "drop_partition_by_name":
        a.c.drop_partition_by_name(a.client_db, "p", "ds=1", True)
    elif method == "drop_partition_by_name_with_environment_context":
        a.c.drop_partition_by_name_with_environment_context(a.client_db, "p", "ds=1", True,
                                                            T.EnvironmentContext(properties={}))
    else:
        a.c.drop_partitions_req(T.DropPartitionsRequest(dbName=a.client_db, tblName="p", deleteData=True,
                                                        parts=T.RequestPartsSpec(names=["ds=1"])))
    assert a.c.get_partition_names(a.client_db, "p", -1) == []
    return victim


def _rename_partition(a: Attack) -> Path:
    victim = a.victim()
    a.table("p", partitioned=True)
    if attempt(lambda: a.partition("p", "1", victim.as_uri())) is None:
        part = a.c.get_partition(a.client_db, "p", ["1"])
        part.values = ["2"]
        attempt(lambda: a.c.rename_partition(a.client_db, "p", ["1"], part))
        for values in (["1"], ["2"]):
            attempt(lambda: a.c.drop_partition(a.client_db, "p", values, True))  # noqa: B023
    return victim


def _index(a: Attack, then: str) -> Path:
    victim = a.victim()
    base = a.table("base")
    sd = T.StorageDescriptor(cols=base.sd.cols, location=victim.as_uri(), inputFormat=base.sd.inputFormat,
                             outputFormat=base.sd.outputFormat, serdeInfo=base.sd.serdeInfo)
    index = T.Index(indexName="i", indexHandlerClass="compact", dbName=a.client_db, origTableName="base",
                    indexTableName="base_i", sd=sd, parameters={}, deferredRebuild=True)
    index_table = T.Table(tableName="base_i", dbName=a.client_db, sd=sd, partitionKeys=[], parameters={},
                          tableType="INDEX_TABLE")
    assert "add_index refused" in (attempt(lambda: a.c.add_index(index, index_table)) or "")
    if then == "drop_index":
        assert "refused" in (attempt(lambda: a.c.drop_index_by_name(a.client_db, "base", "i", True)) or "")
    else:
        a.c.drop_table(a.client_db, "base", False)
    return victim


def _database_rename(a: Attack, unique_name: Any) -> Path:
    """A database on the victim, a table in its default place there, renamed into another database, dropped."""
    victim = a.victim()
    if a.hive:
        (victim / "t").mkdir()
        (victim / "t" / "precious.txt").write_text("keep me")
    outside = unique_name("db")
    client_outside = outside if a.hive else f"scratch__{outside}"
    if attempt(lambda: a.c.create_database(T.Database(name=client_outside, locationUri=victim.as_uri(),
                                                      parameters={}))) is not None:
        assert a.hive
        a.hms.call("create_database", T.Database(name=outside, locationUri=victim.as_uri(), parameters={}),
                   idempotent=False)
    try:
        if a.hive:
            direct_table(a.hms, outside, "t")
        else:
            a.table("t", db=client_outside)
        moved = a.c.get_table(client_outside, "t")
        moved.dbName = a.client_db
        if attempt(lambda: a.c.alter_table(client_outside, "t", moved)) is None:
            a.c.drop_table(a.client_db, "t", True)
        attempt(lambda: a.c.drop_table(client_outside, "t", True))
    finally:
        attempt(lambda: a.c.drop_database(client_outside, False, True))
        if a.hive:
            attempt(lambda: a.hms.call("drop_database", outside, False, True, idempotent=False))
    return victim / "t" if a.hive else victim


def _keep_data_database_drop(a: Attack, unique_name: Any) -> Path:
    """drop_database(deleteData=false, cascade=true): its managed tables' files stay."""
    name = unique_name("db")
    client_name = name if a.hive else f"scratch__{name}"
    a.c.create_database(T.Database(name=client_name, parameters={}))
    own = local_path(a.table("t", db=client_name).sd.location)
    own.mkdir(parents=True, exist_ok=True)
    (own / "precious.txt").write_text("keep me")
    a.c.drop_database(client_name, False, True)
    assert client_name not in a.c.get_all_databases()
    return own


def _other_tables_directory(a: Attack, how: str) -> Path:
    """Table B created at, altered to, given a partition on (or inside), or renamed onto table A's
    directory (A's custom one, where B's new name puts it), then dropped with its data: A's files stay."""
    if how == "renamed onto":
        database_dir = a.c.get_database(a.client_db).locationUri.rstrip("/")
        a.table("a", location=f"{database_dir}/c")
    else:
        a.table("a")
    a_dir = local_path(a.c.get_table(a.client_db, "a").sd.location)
    a_dir.mkdir(parents=True, exist_ok=True)
    (a_dir / "precious.txt").write_text("keep me")
    a_uri = a.c.get_table(a.client_db, "a").sd.location.rstrip("/")
    b = a.table("b", partitioned=how.startswith("partition"))
    if how == "created at":
        b.tableName, b.sd.location = "b2", a_uri
        refusal = attempt(lambda: a.c.create_table(b))
    elif how == "altered to":
        b.sd.location = a_uri
        refusal = attempt(lambda: a.c.alter_table(a.client_db, "b", b))
    elif how.startswith("partition"):
        part = T.Partition(values=["1"], dbName=a.client_db, tableName="b", sd=b.sd, parameters={})
        part.sd.location = a_uri if how == "partition on" else f"{a_uri}/ds=1"
        refusal = attempt(lambda: add_partition(a.c, part))
        # Dropping A at once (the issue: within 30 s of B's partition it took B's files, or B's drop took A's).
    else:
        b.tableName, b.sd.location = "c", a_uri  # as Spark sends a rename's new place
        refusal = attempt(lambda: a.c.alter_table(a.client_db, "b", b))
    assert refusal is not None and ("refused" in refusal or "cannot be used" in refusal), refusal
    for name in ("b", "b2", "c"):
        attempt(lambda: a.c.drop_table(a.client_db, name, True))  # noqa: B023
    return a_dir


ATTACKS: dict[str, Any] = {
    "drop_partition_by_name": lambda a, u: _drop_by_name(a, "drop_partition_by_name"),
    "drop_partition_by_name_with_environment_context":
        lambda a, u: _drop_by_name(a, "drop_partition_by_name_with_environment_context"),
    "drop_partitions_req": lambda a, u: _drop_by_name(a, "drop_partitions_req"),
    "rename_partition then drop": lambda a, u: _rename_partition(a),
    "add_index then drop_index_by_name": lambda a, u: _index(a, "drop_index"),
    "add_index then drop the base table keeping data": lambda a, u: _index(a, "drop_base"),
    "database on a victim, table renamed out and dropped": _database_rename,
    "drop_database keeping data, cascade": _keep_data_database_drop,
    "partition inside another table's directory": lambda a, u: _other_tables_directory(a, "partition inside"),
    "table created at another table's directory": lambda a, u: _other_tables_directory(a, "created at"),
    "table altered to another table's directory": lambda a, u: _other_tables_directory(a, "altered to"),
    "partition on another table's directory": lambda a, u: _other_tables_directory(a, "partition on"),
    "table renamed onto another table's custom location": lambda a, u: _other_tables_directory(a, "renamed onto"),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("catalog", ["main", "scratch"])
def test_the_issues_attacks_keep_the_victims_files(attack, catalog, client, hms, hms_address, tmp_path,
                                                     unique_name):
    """Every attack of issue 19 (Spark's LOCATION + INSERT OVERWRITE: ``test_spark_*`` above), on both kinds."""
    name = unique_name("db")
    client.create_database(f"{catalog}.{name}")
    try:
        with hms_connection(hms_address) as c:
            victim = ATTACKS[attack](Attack(c, catalog, name, hms, tmp_path), unique_name)
        assert intact(victim), f"{attack} on {catalog}: the victim's files were deleted"
    finally:
        client.drop_database(f"{catalog}.{name}", if_exists=True, cascade=True)


# ---------------------------------------------------------------- a memory catalog's allowed-locations


def test_a_memory_catalogs_allowed_locations_confine_every_surface(daemon_factory, tmp_path):
    """A memory catalog given ``allowed-locations``: a table, a partition or an alter placed outside
    them (and outside its scratch warehouse) is refused on the HMS endpoint and the Thrift API, so
    no later drop or Spark ``INSERT OVERWRITE`` can reach the victim's files; inside a root is fine."""
    from catalogd.client import CatalogClient
    from catalogd.errors import PermissionDeniedError

    victim = make_victim(tmp_path)
    lake = tmp_path / "lake"
    lake.mkdir()
    proc = daemon_factory(catalogs=[{"name": "scratch", "type": "memory", "allowed-locations": [lake.as_uri()]}],
                          name="memlake")

    def tbl(name: str, location: str | None, external: bool = False, partitioned: bool = False) -> Any:
        table = Table(name=name, database="db1", columns=[Column("id", "bigint")], location=location,
                      partition_keys=[Column("ds", "string")] if partitioned else [],
                      kind=TableKind.EXTERNAL if external else TableKind.MANAGED)
        return codec.to_hms_table(table, None)

    with hms_connection(proc.hms_address) as c:
        c.create_database(T.Database(name="db1", parameters={}))
        for attempt in (tbl("t", victim.as_uri()), tbl("e", victim.as_uri(), external=True),
                        tbl("n", f"{victim.as_uri()}/inside")):
            refused(lambda a=attempt: c.create_table(a), "outside the catalog's allowed locations")
        c.create_table(tbl("ok", f"{lake.as_uri()}/ok", external=True))
        c.create_table(tbl("p", None, partitioned=True))  # its default place in the scratch warehouse
        part = T.Partition(values=["1"], dbName="db1", tableName="p", parameters={},
                           sd=c.get_table("db1", "p").sd)
        part.sd.location = victim.as_uri()
        refused(lambda: add_partition(c, part), "outside the catalog's allowed locations")
        moved = c.get_table("db1", "ok")
        moved.sd.location = victim.as_uri()
        refused(lambda: c.alter_table("db1", "ok", moved), "outside the catalog's allowed locations")
        assert sorted(c.get_all_tables("db1")) == ["ok", "p"]
    with CatalogClient(proc.address) as api, pytest.raises(PermissionDeniedError, match="allowed locations"):
        api.create_table("scratch.db1.api", "id bigint", location=victim.as_uri(), external=True)
    with hms_connection(proc.hms_address) as c:
        c.drop_database("db1", True, True)
    assert intact(victim)
