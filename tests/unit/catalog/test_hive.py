"""The hive catalog and its stager on an in-memory HMS client (tests/unit/catalog/fake_hms.py).

What HMS itself does is tested against a real metastore in tests/integration; these
check catalogd's side: what it sends, what it makes of the answers, which stages it
hides, and which catalogd error each HMS exception becomes.
"""

from __future__ import annotations

import copy
import inspect
import re

import pytest
from fake_hms import WAREHOUSE, FakeHms

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.base import STAGE_TABLE_PREFIX
from catalogd.catalog.hive import HiveCatalog
from catalogd.catalog.hive_api import HiveClient
from catalogd.catalog.hive_client import HiveSession
from catalogd.catalog.hive_staging import DEADLINE, SIGNATURE, STATE, HiveStager, StoredState, stage_signature
from catalogd.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    FunctionNotFoundError,
    InvalidArgumentError,
    MetastoreUnavailableError,
    PartitionAlreadyExistsError,
    PartitionNotFoundError,
    PermissionDeniedError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from catalogd.hive_idl import ttypes as hms
from catalogd.model import (
    Column,
    Database,
    DatabaseUpdate,
    Function,
    FunctionLanguage,
    Resource,
    StagePurpose,
    StageRequest,
    StageState,
    Table,
    TableFormat,
    TableKind,
    TableUpdate,
)

SECRET = b"unit-test-stage-secret"


def _stager(session: HiveSession) -> HiveStager:
    return HiveStager(session, lease=60, retention=30, committer="test", secret=SECRET)


@pytest.fixture
def catalog(fake: FakeHms) -> HiveCatalog:
    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)], stages=_stager)
    cat.session.attach(fake)  # type: ignore[arg-type]
    return cat


@pytest.fixture
def sales(catalog: HiveCatalog) -> HiveCatalog:
    catalog.create_database(Database("sales", comment="sales data", properties={"team": "s"}))
    return catalog


def table(name: str = "orders", **kwargs: object) -> Table:
    kwargs.setdefault("columns", [Column("id", "bigint"), Column("amount", "decimal(10,2)", "EUR")])
    return Table(name=name, database="sales", **kwargs)  # type: ignore[arg-type]


def test_the_fake_answers_every_call_of_the_typed_client() -> None:
    """The fake keeps up with HiveClient: same methods, same parameters."""
    for name, method in inspect.getmembers(HiveClient, inspect.isfunction):
        if name.startswith("_"):
            continue
        assert hasattr(FakeHms, name), name
        expected = list(inspect.signature(method).parameters)
        assert list(inspect.signature(getattr(FakeHms, name)).parameters) == expected, name


# --------------------------------------------------------------------------- databases


def test_create_get_list_alter_drop_databases(catalog: HiveCatalog) -> None:
    catalog.create_database(Database("sales", comment="c", properties={"a": "1"}))
    assert catalog.list_databases() == ["default", "sales"]
    db = catalog.get_database("sales")
    assert (db.name, db.catalog, db.comment, db.location, db.properties) == (
        "sales", "main", "c", f"{WAREHOUSE}/sales.db", {"a": "1"})
    catalog.alter_database("sales", DatabaseUpdate(set_properties={"b": "2"}, unset_properties=["a"]))
    assert catalog.get_database("sales").properties == {"b": "2"}
    catalog.drop_database("sales")
    assert catalog.list_databases() == ["default"]


def test_database_errors(catalog: HiveCatalog, fake: FakeHms) -> None:
    catalog.create_database(Database("sales"))
    with pytest.raises(DatabaseAlreadyExistsError, match=re.escape("database main.sales already exists")) as exists:
        catalog.create_database(Database("sales"))
    assert isinstance(exists.value.__cause__, hms.AlreadyExistsException)
    catalog.create_database(Database("sales"), ignore_if_exists=True)
    with pytest.raises(DatabaseNotFoundError, match=re.escape("database main.hr does not exist")) as missing:
        catalog.get_database("hr")
    assert isinstance(missing.value.__cause__, hms.NoSuchObjectException)
    catalog.drop_database("hr", ignore_if_not_exists=True)
    with pytest.raises(InvalidArgumentError, match="the default database cannot be dropped"):
        catalog.drop_database("default", cascade=True)
    with pytest.raises(UnsupportedError, match="cannot rename a database"):
        catalog.rename_database("sales", "revenue")


def test_a_database_with_tables_is_dropped_only_with_cascade(sales: HiveCatalog, fake: FakeHms) -> None:
    sales.create_table(table())
    with pytest.raises(DatabaseNotEmptyError, match="drop it with cascade"):
        sales.drop_database("sales")
    assert "sales" in fake.databases
    sales.drop_database("sales", cascade=True)
    assert "sales" not in fake.databases and not fake.tables


# --------------------------------------------------------------------------- tables


def test_create_get_list_drop_tables(sales: HiveCatalog, fake: FakeHms) -> None:
    created = sales.create_table(table(comment="orders", properties={"k": "v"},
                                       partition_keys=[Column("ds", "string")]))
    assert (created.catalog, created.kind, created.format) == ("main", TableKind.MANAGED, TableFormat.PARQUET)
    assert created.columns == [Column("id", "bigint"), Column("amount", "decimal(10,2)", "EUR")]
    assert created.partition_keys == [Column("ds", "string")]
    assert (created.comment, created.properties) == ("orders", {"k": "v"})
    assert created.location == f"{WAREHOUSE}/sales.db/orders"
    assert fake.tables[("sales", "orders")].tableType == codec.MANAGED_TABLE
    assert sales.get_table("sales", "orders") == created
    assert sales.list_tables("sales") == ["orders"]
    sales.drop_table("sales", "orders")
    assert sales.list_tables("sales") == []


def test_table_errors(sales: HiveCatalog) -> None:
    sales.create_table(table())
    with pytest.raises(TableAlreadyExistsError, match=re.escape("table main.sales.orders already exists")) as exists:
        sales.create_table(table())
    assert isinstance(exists.value.__cause__, hms.AlreadyExistsException)
    assert sales.create_table(table(), ignore_if_exists=True).name == "orders"
    with pytest.raises(TableNotFoundError, match=re.escape("table main.sales.nope does not exist")) as missing:
        sales.get_table("sales", "nope")
    assert isinstance(missing.value.__cause__, hms.NoSuchObjectException)
    with pytest.raises(TableNotFoundError):
        sales.drop_table("sales", "nope")
    sales.drop_table("sales", "nope", ignore_if_not_exists=True)
    with pytest.raises(DatabaseNotFoundError, match=re.escape("database main.hr does not exist")):
        sales.create_table(Table(name="t", database="hr", columns=[Column("id", "int")]))
    with pytest.raises(DatabaseNotFoundError):
        sales.list_tables("hr")


def test_external_and_data_source_tables(sales: HiveCatalog, fake: FakeHms) -> None:
    external = sales.create_table(table("ext", kind=TableKind.EXTERNAL, location=f"{WAREHOUSE}/lake/ext"))
    assert (external.kind, external.location) == (TableKind.EXTERNAL, f"{WAREHOUSE}/lake/ext")
    assert fake.tables[("sales", "ext")].tableType == codec.EXTERNAL_TABLE
    assert "EXTERNAL" not in external.properties
    # CSV is a Spark data source table: Spark reads the files where `path` says, which
    # must follow the location HMS chose, also through a rename.
    csv = sales.create_table(table("raw", format=TableFormat.CSV))
    assert csv.format is TableFormat.CSV
    assert codec.spark_path(fake.tables[("sales", "raw")]) == f"{WAREHOUSE}/sales.db/raw"
    sales.rename_table("sales", "raw", "raw2")
    assert codec.spark_path(fake.tables[("sales", "raw2")]) == f"{WAREHOUSE}/sales.db/raw2"
    assert sales.list_tables("sales") == ["ext", "raw2"]


def test_alter_table(sales: HiveCatalog) -> None:
    sales.create_table(table())
    altered = sales.alter_table("sales", "orders", TableUpdate(
        comment="new", add_columns=[Column("Note", "string")], set_properties={"a": "1"}))
    assert altered.comment == "new" and altered.properties == {"a": "1"}
    assert altered.columns[-1] == Column("note", "string")
    with pytest.raises(InvalidArgumentError, match="already exists"):
        sales.alter_table("sales", "orders", TableUpdate(add_columns=[Column("id", "int")]))
    with pytest.raises(InvalidArgumentError, match="catalogd's own"):
        sales.alter_table("sales", "orders", TableUpdate(set_properties={"catalogd.dt.query": "x"}))


def test_views_are_listed_apart_from_tables(sales: HiveCatalog, fake: FakeHms) -> None:
    sales.create_table(table())
    view = Table(name="big", database="sales", kind=TableKind.VIEW, columns=[Column("id", "bigint")], format=None,
                 view_text="SELECT id FROM orders", view_expanded_text="SELECT `id` FROM `main`.`sales`.`orders`")
    created = sales.create_view(view)
    assert created.kind is TableKind.VIEW and created.view_text == "SELECT id FROM orders"
    assert fake.tables[("sales", "big")].tableType == codec.VIRTUAL_VIEW
    assert sales.list_views("sales") == ["big"]
    assert sales.list_tables("sales") == ["orders"]


def test_functions(sales: HiveCatalog, fake: FakeHms) -> None:
    fn = Function(name="clean", database="sales", class_name="mylib.text:clean", language=FunctionLanguage.PYTHON,
                  resources=[Resource("file", "file:/udfs/mylib.py")])
    created = sales.create_function(fn)
    assert (created.language, created.class_name, created.resources) == (
        FunctionLanguage.PYTHON, "mylib.text:clean", [Resource("file", "file:/udfs/mylib.py")])
    # HMS knows JVM functions only: the Python one is kept under a prefix.
    assert fake.functions[("sales", "clean")].className == "python:mylib.text:clean"
    assert sales.list_functions("sales") == ["clean"]
    sales.drop_function("sales", "clean")
    with pytest.raises(FunctionNotFoundError, match=re.escape("function main.sales.clean does not exist")):
        sales.get_function("sales", "clean")


def test_partitions(sales: HiveCatalog) -> None:
    sales.create_table(table(partition_keys=[Column("ds", "string")]))
    added = sales.add_partition("sales", "orders", {"ds": "2024-03-01"})
    assert added.values == ["2024-03-01"] and added.location == f"{WAREHOUSE}/sales.db/orders/ds=2024-03-01"
    sales.add_partition("sales", "orders", {"ds": "2024-03-02"})
    with pytest.raises(PartitionAlreadyExistsError):
        sales.add_partition("sales", "orders", {"ds": "2024-03-02"})
    assert [p.values for p in sales.list_partitions("sales", "orders")] == [["2024-03-01"], ["2024-03-02"]]
    assert [p.values for p in sales.list_partitions("sales", "orders", "ds = '2024-03-02'")] == [["2024-03-02"]]
    bad_filter = re.escape("table main.sales.orders: bad partition filter 'ds'")
    with pytest.raises(InvalidArgumentError, match=bad_filter) as bad:
        sales.list_partitions("sales", "orders", "ds")
    assert isinstance(bad.value.__cause__, hms.MetaException)
    sales.drop_partition("sales", "orders", {"ds": "2024-03-01"})
    with pytest.raises(PartitionNotFoundError, match=re.escape("partition ds=2024-03-01 of table main.sales.orders")):
        sales.get_partition("sales", "orders", {"ds": "2024-03-01"})
    with pytest.raises(InvalidArgumentError, match="names every partition key"):
        sales.get_partition("sales", "orders", {"hr": "1"})


# --------------------------------------------------------------------------- stages


def request(purpose: StagePurpose = StagePurpose.CREATE, target: str = "daily") -> StageRequest:
    return StageRequest(catalog="main", database="sales", target=target, purpose=purpose,
                        columns=[Column("id", "bigint")], properties={"p": "1"})


def key_of(stage_id: str) -> str:
    return stage_id.rsplit(".", 1)[1]


def test_a_stage_is_hidden_until_its_commit_creates_the_target(sales: HiveCatalog, fake: FakeHms) -> None:
    stage = sales.begin_stage(request())
    assert stage.state is StageState.OPEN and stage.staging_table == STAGE_TABLE_PREFIX + key_of(stage.id)
    # An ordinary HMS table that Spark writes into by name, but no list shows it.
    assert ("sales", stage.staging_table) in fake.tables
    assert sales.list_tables("sales") == []
    assert [(s.id, s.state) for s in sales.list_stages()] == [(stage.id, StageState.OPEN)]

    committed = sales.commit_stage("sales", key_of(stage.id))
    assert committed.state is StageState.COMMITTED
    assert sales.list_tables("sales") == ["daily"] and sales.list_stages() == []
    target = sales.get_table("sales", "daily")
    assert target.properties["p"] == "1" and not any(k.startswith(codec.STAGE_PREFIX) for k in target.properties)
    # Idempotent: the commit retried after a lost reply answers the same.
    assert sales.commit_stage("sales", key_of(stage.id)).state is StageState.COMMITTED
    assert sales.get_stage("sales", key_of(stage.id)).state is StageState.COMMITTED


def test_a_staging_table_names_its_owner_only_under_catalogds_signature(sales: HiveCatalog, fake: FakeHms) -> None:
    """What the HMS endpoint asks before a write to a staging table (owner or admin only)."""
    req = request()
    req.owner = "etl"
    stage = sales.begin_stage(req)
    tbl = copy.deepcopy(fake.tables[("sales", stage.staging_table)])
    assert sales.stage_owner(tbl) == "etl"
    tbl.parameters["catalogd.stage.owner"] = "etl2"  # claimed behind catalogd's back
    assert sales.stage_owner(tbl) is None
    assert HiveCatalog("bare", uris=[("127.0.0.1", 9083)]).stage_owner(tbl) is None  # stages nothing


def test_a_create_stage_loses_to_a_target_that_appeared(sales: HiveCatalog) -> None:
    stage = sales.begin_stage(request())
    sales.create_table(table("daily"))
    with pytest.raises(TableAlreadyExistsError, match="the stage was aborted"):
        sales.commit_stage("sales", key_of(stage.id))
    assert sales.list_stages() == []
    with pytest.raises(TableAlreadyExistsError):
        sales.begin_stage(request())
    skipped = sales.begin_stage(request(StagePurpose.CREATE_IF_NOT_EXISTS))
    assert skipped.state is StageState.ABORTED


def test_replace_keeps_the_replaced_data_until_the_target_is_dropped(sales: HiveCatalog, fake: FakeHms) -> None:
    old = sales.create_table(table("daily"))
    stage = sales.begin_stage(request(StagePurpose.REPLACE))
    assert sales.commit_stage("sales", key_of(stage.id)).state is StageState.COMMITTED
    assert sales.get_table("sales", "daily").location == stage.location
    # The staging table now stands for the replaced files (readers planned before the commit).
    [retired] = sales.list_stages()
    assert retired.state is StageState.COMMITTED and retired.location == old.location
    assert fake.tables[("sales", retired.staging_table)].parameters[STATE] == StoredState.RETIRING
    # Dropping the target deletes them too (through the stager the catalog was given).
    sales.drop_table("sales", "daily")
    assert sales.list_stages() == []


def test_abort_keeps_a_tombstone_unless_the_writer_stopped(sales: HiveCatalog) -> None:
    first = sales.begin_stage(request())
    aborted = sales.abort_stage("sales", key_of(first.id))
    assert aborted.state is StageState.ABORTED and aborted.message == "aborted on request"
    assert [s.state for s in sales.list_stages()] == [StageState.ABORTED]
    assert sales.abort_stage("sales", key_of(first.id), writer_stopped=True).state is StageState.ABORTED
    assert sales.list_stages() == []
    second = sales.begin_stage(request())
    assert sales.abort_stage("sales", key_of(second.id), writer_stopped=True).message == "aborted by its writer"
    assert sales.list_stages() == []


def test_the_janitor_aborts_a_stage_whose_lease_lapsed(sales: HiveCatalog, fake: FakeHms) -> None:
    stage = sales.begin_stage(request())
    assert sales.janitor_pass() == 0
    tbl = fake.tables[("sales", stage.staging_table)]
    tbl.parameters[DEADLINE] = "0"
    # Changed behind catalogd's back, the signature no longer holds: the stage is left alone.
    assert sales.janitor_pass() == 0
    tbl.parameters[SIGNATURE] = stage_signature(SECRET, "sales", tbl.tableName, tbl.sd.location, tbl.parameters)
    assert sales.janitor_pass() == 1
    [tombstone] = sales.list_stages()
    assert tombstone.state is StageState.ABORTED and "its lease lapsed" in (tombstone.message or "")


def forge(fake: FakeHms, key: str, state: str, location: str, **params: str) -> hms.Table:
    """A staging table written straight into the metastore, as an attacker with HMS access would."""
    tbl = hms.Table(
        tableName=STAGE_TABLE_PREFIX + key, dbName="sales", owner="mallory", createTime=0, lastAccessTime=0,
        retention=0, partitionKeys=[], tableType="MANAGED_TABLE", parameters={
            "catalogd.stage.id": f"main.sales.{key}", "catalogd.stage.target": "daily",
            "catalogd.stage.purpose": "REPLACE", "catalogd.stage.state": state,
            "catalogd.stage.lease-deadline": "0", "catalogd.stage.delete-after": "0",
            "catalogd.stage.commit-started": "0", "catalogd.stage.old-location": location, **params},
        sd=hms.StorageDescriptor(cols=[hms.FieldSchema("id", "bigint", None)], location=location,
                                 serdeInfo=hms.SerDeInfo(parameters={})),
    )
    fake.create_table(tbl)
    return tbl


def test_forged_stages_are_left_alone_and_refused(sales: HiveCatalog, fake: FakeHms,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    victim = "file:/srv/precious"
    keys = {"OPEN": "0000000000000001", "ABORTED": "0000000000000002", "COMMITTING": "0000000000000003",
            "RETIRING": "0000000000000004"}
    for state, key in keys.items():
        forge(fake, key, state, victim)
    # One signed with another daemon's key is no better.
    other = forge(fake, "0000000000000005", "OPEN", victim)
    other.parameters[SIGNATURE] = stage_signature(b"another key", "sales", other.tableName, victim, other.parameters)
    for _ in range(3):
        assert sales.janitor_pass(startup=True) == 0
    assert len([k for k in fake.tables if k[1].startswith(STAGE_TABLE_PREFIX)]) == 5
    warnings = [r.getMessage() for r in caplog.records if "leaves it and its files alone" in r.getMessage()]
    assert len(warnings) == 5, warnings  # once per table, not once per pass
    for key in [*keys.values(), "0000000000000005"]:
        for call in (sales.commit_stage, sales.abort_stage, sales.heartbeat_stage):
            with pytest.raises(PermissionDeniedError, match="not created by this catalogd"):
                call("sales", key)
        assert "not created by this catalogd" in (sales.get_stage("sales", key).message or "")
    assert all("not created by this catalogd" in (s.message or "") for s in sales.list_stages())
    # Dropping a table of that name does not purge a forged RETIRING stage either.
    sales.create_table(table("daily"))
    sales.drop_table("sales", "daily")
    assert ("sales", STAGE_TABLE_PREFIX + keys["RETIRING"]) in fake.tables


def test_a_stage_location_changed_behind_catalogds_back_is_refused(sales: HiveCatalog, fake: FakeHms) -> None:
    stage = sales.begin_stage(request())
    fake.tables[("sales", stage.staging_table)].sd.location = "file:/srv/precious"
    with pytest.raises(PermissionDeniedError):
        sales.abort_stage("sales", key_of(stage.id), writer_stopped=True)
    assert ("sales", stage.staging_table) in fake.tables


def test_at_most_max_retired_versions_are_kept(fake: FakeHms) -> None:
    def stager(session: HiveSession) -> HiveStager:
        return HiveStager(session, lease=60, retention=3600, committer="test", secret=SECRET, max_retired=2)

    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)], stages=stager)
    cat.session.attach(fake)  # type: ignore[arg-type]
    cat.create_database(Database("sales"))
    locations = [cat.create_table(table("daily")).location]
    for _ in range(4):
        stage = cat.begin_stage(request(StagePurpose.REPLACE))
        cat.commit_stage("sales", key_of(stage.id))
        locations.append(cat.get_table("sales", "daily").location)
    # Trimming is the housekeeping worker's, after the commits.
    assert isinstance(cat.stages, HiveStager) and cat.stages.flush(timeout=30)
    # Four replaced versions, the two newest kept.
    assert sorted(s.location for s in cat.list_stages()) == sorted(locations[2:4])


def test_leases_are_capped(sales: HiveCatalog) -> None:
    long = request()
    long.lease = 3601
    with pytest.raises(InvalidArgumentError, match=re.escape("staging.max-lease (1 h)")):
        sales.begin_stage(long)
    assert sales.list_stages() == []
    stage = sales.begin_stage(request())
    with pytest.raises(InvalidArgumentError, match="max-lease"):
        sales.heartbeat_stage("sales", key_of(stage.id), 1e13)
    assert sales.heartbeat_stage("sales", key_of(stage.id), 3600).state is StageState.OPEN


def test_reserved_stage_properties_are_refused(sales: HiveCatalog) -> None:
    bad = request()
    bad.properties = {"catalogd.stage.state": "COMMITTED"}
    with pytest.raises(InvalidArgumentError, match="reserved for catalogd"):
        sales.begin_stage(bad)


def test_a_catalog_without_a_stager_refuses_stages(fake: FakeHms) -> None:
    plain = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    plain.session.attach(fake)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedError, match="cannot stage writes"):
        plain.begin_stage(request())
    assert plain.janitor_pass() == 0


def test_stored_stage_states() -> None:
    assert StoredState.of({}) is StoredState.OPEN
    assert StoredState.of({STATE: "RETIRING"}) is StoredState.RETIRING
    assert StoredState.of({STATE: "SOMETHING_NEWER"}) is None
    assert [s.public for s in StoredState] == [
        StageState.OPEN, StageState.COMMITTING, StageState.COMMITTED, StageState.ABORTED]


# --------------------------------------------------------------------------- session


def test_open_and_close_with_an_attached_client(fake: FakeHms) -> None:
    catalog = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    with pytest.raises(MetastoreUnavailableError, match="catalog main is not open"):
        catalog.ping()
    catalog.session.attach(fake)  # type: ignore[arg-type]
    catalog.ping()
    assert catalog.info().metastore == "thrift://127.0.0.1:9083"
    catalog.close()
    assert fake.closed


def test_a_replace_that_drops_its_target_does_so_apart_from_the_location_pass(
        sales: HiveCatalog, fake: FakeHms, monkeypatch: pytest.MonkeyPatch) -> None:
    # Partition keys that change make the commit drop and re-create the target: that drop, as
    # every drop of a table, is kept apart from a location pass's read of its partitions (on
    # Derby the two deadlock for 20 s).
    sales.create_table(table("daily", partition_keys=[Column("ds", "string")]))
    tracker = sales.session.locations
    guarded: list[tuple[str, str]] = []
    real = tracker.dropping

    def dropping(database: str, name: str) -> object:
        guarded.append((database, name))
        return real(database, name)

    monkeypatch.setattr(tracker, "dropping", dropping)
    stage = sales.begin_stage(request(StagePurpose.REPLACE))  # unpartitioned now
    assert sales.commit_stage("sales", key_of(stage.id)).state is StageState.COMMITTED
    assert sales.get_table("sales", "daily").partition_keys == []
    assert ("sales", "daily") in guarded
