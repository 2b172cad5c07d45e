"""The location tracker: catalogd's own writes seen at once, at the cost of the objects written;
the metastore read in background passes; nothing judged before the first pass."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_hms import WAREHOUSE, FakeHms

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.hive_location_tracker import LocationTracker
from catalogd.catalog.locations import Location, parse
from catalogd.errors import MetastoreUnavailableError
from catalogd.hive_idl import ttypes as hms
from catalogd.model import Column, Table


class Counting:
    """The fake metastore, counting the calls made on it."""

    def __init__(self, fake: FakeHms) -> None:
        self.fake = fake
        self.calls: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def __getattr__(self, name: str) -> object:
        method = getattr(self.fake, name)

        def call(*args: object) -> object:
            self.gate.wait()
            self.calls.append(name)
            return method(*args)
        return call


def where(path: str) -> Location:
    return parse(f"file:{path}")


def make(fake: FakeHms, name: str, location: str | None = None) -> None:
    table = Table(database="sales", name=name, columns=[Column("id", "bigint")], location=location)
    fake.create_table(codec.to_hms_table(table, None))


@pytest.fixture
def counting(fake: FakeHms) -> Counting:
    fake.create_database(hms.Database(name="sales", locationUri=f"{WAREHOUSE}/sales.db", parameters={}))
    for n in range(50):
        make(fake, f"t{n}", f"{WAREHOUSE}/sales.db/t{n}")
    return Counting(fake)


def tracker_on(counting: Counting, snapshot: Path | None = None) -> LocationTracker:
    @contextlib.contextmanager
    def lend(what: str) -> Iterator[Counting]:
        yield counting

    def location(uri: str | None) -> Location | None:
        return parse(uri) if uri else None

    return LocationTracker("main", lend, location, snapshot)  # type: ignore[arg-type]


def test_a_judgment_reads_only_the_objects_written_since_the_last_one(counting: Counting) -> None:
    tracker = tracker_on(counting)
    tracker.reconcile()
    assert tracker.loaded and len(tracker.all()) == 52  # default, sales and its 50 tables
    counting.calls.clear()
    tracker.current()
    assert counting.calls == []  # nothing written: nothing read
    make(counting.fake, "new", f"{WAREHOUSE}/sales.db/new")
    tracker.written("create_table", [("sales", "new")])
    tracker.current()
    assert counting.calls == ["get_table"]
    assert sorted(str(o) for o in tracker.around(where("/warehouse/sales.db/new/x"))) == [
        "database sales", "table sales.new"]
    counting.fake.drop_table("sales", "new", False)
    tracker.written("drop_table", [("sales", "new")])
    tracker.current()
    assert not [o for o in tracker.all() if o.table == "new"]


def test_changes_behind_catalogds_back_show_at_the_next_pass(counting: Counting) -> None:
    tracker = tracker_on(counting)
    tracker.reconcile()
    make(counting.fake, "behind", "file:/elsewhere/behind")
    counting.fake.drop_table("sales", "t0", False)
    tracker.current()
    assert not tracker.around(where("/elsewhere"))
    tracker.reconcile()
    assert [o.table for o in tracker.around(where("/elsewhere"))] == ["behind"]
    assert not [o for o in tracker.all() if o.table == "t0"]


def test_a_read_from_before_a_write_never_replaces_it(counting: Counting) -> None:
    tracker = tracker_on(counting)
    tracker.reconcile()
    # A pass reads t1 at its old place; meanwhile catalogd moves it and judges (reading it anew).
    counting.gate.clear()
    passing = threading.Thread(target=tracker.reconcile)
    passing.start()
    try:
        counting.fake.tables[("sales", "t1")].sd.location = "file:/moved/t1"
        tracker.written("alter_table", [("sales", "t1")])
    finally:
        counting.gate.set()
    tracker.current()
    passing.join(10)
    assert [o.table for o in tracker.around(where("/moved"))] == ["t1"]


def test_nothing_is_judged_before_the_first_pass(counting: Counting) -> None:
    tracker = tracker_on(counting)
    counting.gate.clear()  # the metastore does not answer yet
    tracker.start()
    try:
        with pytest.raises(MetastoreUnavailableError, match="still being read after start"):
            tracker.current(wait=0.2)
        counting.gate.set()
        tracker.current(wait=10)
        assert len(tracker.all()) == 52  # default, sales and its 50 tables
    finally:
        counting.gate.set()
        tracker.stop()


def test_a_saved_index_lets_judgments_go_on_at_start_and_the_journal_covers_a_kill(
        counting: Counting, tmp_path: Path) -> None:
    snapshot = tmp_path / "locations.json"
    first = tracker_on(counting, snapshot)
    first.reconcile()  # saved after the pass
    assert snapshot.stat().st_mode & 0o777 == 0o600
    # Written after the save, then the daemon dies (no save at stop): the journal has it.
    make(counting.fake, "late", "file:/late/t")
    first.written("create_table", [("sales", "late")])
    counting.gate.clear()  # the metastore is slow to answer after the restart
    second = tracker_on(counting, snapshot)
    second.start()
    try:
        assert second.loaded and len(second.all()) == 52
        counting.gate.set()
        second.current(wait=0)  # reads what the journal names before judging
        assert [o.table for o in second.around(where("/late"))] == ["late"]
    finally:
        counting.gate.set()
        second.stop()
    # Another metastore's index is not used.
    other = LocationTracker("main", lambda what: contextlib.nullcontext(counting),  # type: ignore[arg-type,return-value]
                            lambda uri: parse(uri) if uri else None, snapshot, identity="another")
    assert not other._load()


def test_a_partition_added_and_dropped_in_its_tables_directory_is_not_read_again(counting: Counting) -> None:
    from catalogd.catalog.hive import HiveCatalog

    catalog = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    catalog.session.attach(counting)  # type: ignore[arg-type]
    catalog.create_table(Table(database="sales", name="p", columns=[Column("id", "bigint")],
                               partition_keys=[Column("ds", "string")]))
    catalog.session.occupants()  # the create read again
    counting.calls.clear()
    catalog.add_partition("sales", "p", {"ds": "1"})
    catalog.drop_partition("sales", "p", {"ds": "1"})
    assert "get_partitions" not in counting.calls, counting.calls


def test_a_cascade_reads_its_tables_a_batch_at_a_time(counting: Counting) -> None:
    from catalogd.catalog.hive import HiveCatalog

    table = Table(database="sales", name="p", columns=[Column("id", "bigint")], partition_keys=[Column("ds", "string")],
                  location=f"{WAREHOUSE}/sales.db/p")
    counting.fake.create_table(codec.to_hms_table(table, None))
    stored = counting.fake.tables[("sales", "p")]
    counting.fake.add_partition(hms.Partition(values=["1"], dbName="sales", tableName="p", parameters={},
                                              sd=hms.StorageDescriptor(**{**stored.sd.__dict__,
                                                                          "location": "file:/elsewhere/ds=1"})))
    catalog = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    catalog.session.attach(counting)  # type: ignore[arg-type]
    catalog.session.occupants()  # the first pass
    counting.calls.clear()
    catalog.drop_database("sales", cascade=True)
    # The 51 tables read 20 a call (each batch, with the partitions of its partitioned tables,
    # while the one before is dropped), then a drop each: no get_table per table.
    assert counting.calls.count("get_table_objects_by_name") == 3, counting.calls
    assert counting.calls.count("get_table") == 0, counting.calls
    assert counting.calls.count("get_partitions") == 1, counting.calls
    assert counting.calls.count("drop_table_with_environment_context") == 51
    # The partition outside the allowed locations was dropped first, keeping its files.
    assert counting.calls.count("drop_partition") == 1
    assert "sales" not in counting.fake.get_all_databases()


def test_a_table_written_after_a_batch_read_is_read_again(counting: Counting) -> None:
    tracker = tracker_on(counting)
    tracker.reconcile()
    number = tracker.number()
    assert not tracker.written_since("sales", "t1", number)
    tracker.written("alter_table", [("sales", "t1")])
    assert tracker.written_since("sales", "T1", number)  # noted, not read yet
    tracker.current()
    assert tracker.written_since("sales", "t1", number)  # read since: still after the batch read
    assert not tracker.written_since("sales", "t2", number)


def _dynamic(fake: FakeHms, name: str) -> None:
    make(fake, name, f"{WAREHOUSE}/sales.db/{name}")
    fake.tables[("sales", name)].parameters[codec.DYNAMIC_FRESHNESS] = "60"


def test_the_index_notes_dynamic_tables_and_keeps_them_between_runs(counting: Counting, tmp_path: Path) -> None:
    from catalogd.dynamic import store

    assert codec.DYNAMIC_FRESHNESS == store.FRESHNESS  # the parameter the loader asks for
    _dynamic(counting.fake, "d1")
    snapshot = tmp_path / "locations.json"
    tracker = LocationTracker("main", lambda what: contextlib.nullcontext(counting),  # type: ignore[arg-type,return-value]
                              lambda uri: parse(uri) if uri else None, snapshot, indexed=(codec.DYNAMIC_FRESHNESS,))
    assert tracker.tables_with(codec.DYNAMIC_FRESHNESS) is None  # not known before a pass
    tracker.reconcile()
    assert tracker.tables_with(codec.DYNAMIC_FRESHNESS) == [("sales", "d1")]
    # Made through catalogd: known at the next judgment; dropped: gone.
    _dynamic(counting.fake, "d2")
    tracker.written("create_table", [("sales", "d2")])
    tracker.current()
    assert tracker.tables_with(codec.DYNAMIC_FRESHNESS) == [("sales", "d1"), ("sales", "d2")]
    counting.fake.drop_table("sales", "d1", False)
    tracker.gone("sales", "d1")
    tracker.stop()  # saved
    again = LocationTracker("main", lambda what: contextlib.nullcontext(counting),  # type: ignore[arg-type,return-value]
                            lambda uri: parse(uri) if uri else None, snapshot, indexed=(codec.DYNAMIC_FRESHNESS,))
    assert again._load()
    again._loaded.set()
    assert again.tables_with(codec.DYNAMIC_FRESHNESS) == [("sales", "d2")]
    # A table made behind catalogd's back is told when a pass finds it.
    told: list[tuple[str, str, str]] = []
    again.on_marked = lambda *found: told.append(found)
    _dynamic(counting.fake, "d3")
    again.reconcile()
    assert told == [(codec.DYNAMIC_FRESHNESS, "sales", "d3")]
    # An index saved before the marks were kept does not know them.
    document = json.loads(snapshot.read_text())
    del document["marked"]
    snapshot.write_text(json.dumps(document))
    old = LocationTracker("main", lambda what: contextlib.nullcontext(counting),  # type: ignore[arg-type,return-value]
                          lambda uri: parse(uri) if uri else None, snapshot, indexed=(codec.DYNAMIC_FRESHNESS,))
    assert old._load()
    old._loaded.set()
    assert old.tables_with(codec.DYNAMIC_FRESHNESS) is None


def test_a_restart_reads_only_the_dynamic_tables_to_restore_them(counting: Counting) -> None:
    from catalogd.catalog.hive import HiveCatalog

    _dynamic(counting.fake, "d1")
    catalog = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    # Before the index knows the catalog: every table read (100 a call).
    catalog.session.attach(counting)  # type: ignore[arg-type]
    assert [(d, t) for d, t, _ in catalog.tables_with_parameter(codec.DYNAMIC_FRESHNESS)] == [("sales", "d1")]
    catalog.session.occupants()  # the first pass
    counting.calls.clear()
    found = catalog.tables_with_parameter(codec.DYNAMIC_FRESHNESS)
    assert [(d, t, p[codec.DYNAMIC_FRESHNESS]) for d, t, p in found] == [("sales", "d1", "60")]
    assert counting.calls == ["get_table_objects_by_name"]  # d1 alone
    tables_read = []
    read = counting.fake.get_table_objects_by_name

    def reading(database: str, names: list[str]) -> list[hms.Table]:
        tables_read.extend(names)
        return read(database, names)

    counting.fake.get_table_objects_by_name = reading  # type: ignore[method-assign]
    catalog.tables_with_parameter(codec.DYNAMIC_FRESHNESS)
    assert tables_read == ["d1"]


def test_the_first_pass_reads_the_partitions_after_every_table(counting: Counting) -> None:
    table = Table(database="sales", name="p", columns=[Column("id", "bigint")], partition_keys=[Column("ds", "string")],
                  location=f"{WAREHOUSE}/sales.db/p")
    counting.fake.create_table(codec.to_hms_table(table, None))
    counting.fake.tables[("sales", "p")].parameters[codec.DYNAMIC_FRESHNESS] = "60"
    stored = counting.fake.tables[("sales", "p")]
    counting.fake.add_partition(hms.Partition(values=["1"], dbName="sales", tableName="p", parameters={},
                                              sd=hms.StorageDescriptor(**{**stored.sd.__dict__,
                                                                          "location": "file:/elsewhere/ds=1"})))
    tracker = tracker_on(counting)
    tracker.indexed = frozenset({codec.DYNAMIC_FRESHNESS})
    tracker.reconcile()
    # Every table first (get_table_objects_by_name), then the partitioned table's partitions.
    assert counting.calls.index("get_partitions") > counting.calls.index("get_table_objects_by_name")
    assert [str(o.partition) for o in tracker.around(where("/elsewhere"))] == ["ds=1"]
    assert tracker.tables_with(codec.DYNAMIC_FRESHNESS) == [("sales", "p")]
    assert len(tracker.all()) == 54  # default, sales, its 50 tables, p and its partition outside


def test_saves_at_once_never_lose_the_saved_index(counting: Counting, tmp_path: Path) -> None:
    """The stop's save and a pass's may run together: neither may drop the other's file."""
    for n in range(2000):  # a file that takes a while to write
        make(counting.fake, f"big{n}", f"{WAREHOUSE}/sales.db/big{n}")
    snapshot = tmp_path / "locations.json"
    tracker = tracker_on(counting, snapshot)
    tracker.reconcile()
    savers = [threading.Thread(target=lambda: [tracker._save() for _ in range(10)]) for _ in range(3)]
    for saver in savers:
        saver.start()
    for saver in savers:
        saver.join(30)
    assert json.loads(snapshot.read_text())["entries"]


class DerbyLike(Counting):
    """The fake metastore, noting when a drop of ``sales.p`` runs beside a read of its partitions:
    Derby deadlocks the two (the drop locks partition rows then the TBLS row, the read the other
    way round) and breaks the cycle only after its 20 s deadlockTimeout. ``hold`` keeps the
    next call of ``method`` on ``sales.p`` in the metastore until ``release`` is set."""

    def __init__(self, fake: FakeHms) -> None:
        super().__init__(fake)
        self.held_method = ""
        self.inside = threading.Event()
        self.release = threading.Event()
        self.running: list[str] = []
        self.overlaps: list[str] = []
        self._mutex = threading.Lock()

    def hold(self, method: str) -> None:
        self.held_method = method
        self.inside.clear()
        self.release.clear()

    def __getattr__(self, name: str) -> object:
        plain = super().__getattr__(name)
        if name not in ("get_partitions", "drop_table_with_environment_context"):
            return plain

        def call(database: str, table: str, *args: object) -> object:
            if (database, table.lower()) != ("sales", "p"):
                return plain(database, table, *args)  # type: ignore[operator]
            with self._mutex:
                if self.running and "drop_table_with_environment_context" in [*self.running, name]:
                    self.overlaps.append(f"{name} beside {sorted(self.running)}")
                self.running.append(name)
            try:
                if name == self.held_method:
                    self.held_method = ""
                    self.inside.set()
                    assert self.release.wait(10), "never released"
                return plain(database, table, *args)  # type: ignore[operator]
            finally:
                with self._mutex:
                    self.running.remove(name)
        return call


@pytest.fixture
def derby(fake: FakeHms) -> DerbyLike:
    fake.create_database(hms.Database(name="sales", locationUri=f"{WAREHOUSE}/sales.db", parameters={}))
    table = Table(database="sales", name="p", columns=[Column("id", "bigint")], partition_keys=[Column("ds", "string")],
                  location=f"{WAREHOUSE}/sales.db/p")
    fake.create_table(codec.to_hms_table(table, None))
    stored = fake.tables[("sales", "p")]
    fake.add_partition(hms.Partition(values=["1"], dbName="sales", tableName="p", parameters={},
                                     sd=hms.StorageDescriptor(**{**stored.sd.__dict__,
                                                                 "location": f"{WAREHOUSE}/sales.db/p/ds=1"})))
    return DerbyLike(fake)


def _session_on(derby: DerbyLike) -> object:
    from catalogd.catalog.hive import HiveCatalog

    catalog = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    catalog.session.attach(derby)  # type: ignore[arg-type]
    catalog.session.occupants()  # the first pass
    return catalog.session


def test_a_drop_waits_for_a_passs_read_of_the_tables_partitions(derby: DerbyLike) -> None:
    # A stage's purge dropped its staging table while a 30 s pass read that table's partitions:
    # on the embedded metastore's Derby the two deadlocked, and the drop (the session's files
    # lock held) stalled every write 20 s.
    session = _session_on(derby)
    tracker = session.locations  # type: ignore[attr-defined]
    derby.hold("get_partitions")
    passing = threading.Thread(target=tracker.reconcile)
    passing.start()
    assert derby.inside.wait(10)  # the pass is reading sales.p's partitions
    dropping = threading.Thread(target=session.drop_table, args=("sales", "p"))  # type: ignore[attr-defined]
    dropping.start()
    try:
        # The drop comes to wait for the read (without the guard it would reach the metastore
        # beside it: an overlap).
        deadline = time.monotonic() + 10
        while (("sales", "p") not in getattr(tracker, "_dropping", ()) and not derby.overlaps
               and time.monotonic() < deadline):
            time.sleep(0.01)
        assert derby.overlaps == []
        assert dropping.is_alive()
    finally:
        derby.release.set()
    dropping.join(10)
    passing.join(10)
    assert not dropping.is_alive() and not passing.is_alive()
    assert derby.overlaps == []
    assert ("sales", "p") not in derby.fake.tables
    assert not [o for o in tracker.all() if o.table == "p"]


def test_a_pass_leaves_out_the_partitions_of_a_table_being_dropped(derby: DerbyLike) -> None:
    session = _session_on(derby)
    tracker = session.locations  # type: ignore[attr-defined]
    derby.hold("drop_table_with_environment_context")
    dropping = threading.Thread(target=session.drop_table, args=("sales", "p"))  # type: ignore[attr-defined]
    dropping.start()
    try:
        assert derby.inside.wait(10)  # the metastore is dropping sales.p
        tracker.reconcile()  # a pass meanwhile: sales.p's partitions are not read
        assert derby.overlaps == []
        assert tracker.skipped == 1
    finally:
        derby.release.set()
    dropping.join(10)
    assert not dropping.is_alive()
    assert derby.overlaps == []
    assert not [o for o in tracker.all() if o.table == "p"]
    tracker.reconcile()  # and the next pass has nothing to leave out
    assert tracker.skipped == 1
