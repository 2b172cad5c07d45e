"""A drop blocked only by a stale location index reads the blocking objects again before it keeps
the files for good: another daemon on the same metastore may have moved them away (a stage's
replaced data was left forever when a second daemon's janitor purged it with an index that still
placed the target in the replaced directory)."""

from __future__ import annotations

import pytest
from fake_hms import WAREHOUSE, FakeHms

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.hive import HiveCatalog
from catalogd.model import Column, Database, Table


@pytest.fixture
def fake() -> FakeHms:
    return FakeHms()


@pytest.fixture
def catalog(fake: FakeHms) -> HiveCatalog:
    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    cat.session.attach(fake)  # type: ignore[arg-type]
    cat.create_database(Database("sales"))
    return cat


def _table(fake: FakeHms, name: str, location: str) -> None:
    fake.create_table(codec.to_hms_table(Table(name=name, database="sales", columns=[Column("id", "bigint")],
                                               location=location), None))


def test_a_blocker_that_moved_behind_catalogds_back_no_longer_blocks(catalog: HiveCatalog, fake: FakeHms) -> None:
    shared = f"{WAREHOUSE}/sales.db/old"
    _table(fake, "old", shared)
    _table(fake, "t", shared)
    catalog.session.locations.reconcile()  # a background pass: the index places both in `shared`
    # Another metastore client moves t away; this daemon's index still places it in `shared`.
    fake.tables[("sales", "t")].sd.location = f"{WAREHOUSE}/sales.db/t2"
    catalog.drop_table("sales", "old")
    assert fake.deleted == [shared]


def test_a_blocker_still_there_still_blocks(catalog: HiveCatalog, fake: FakeHms) -> None:
    shared = f"{WAREHOUSE}/sales.db/old"
    _table(fake, "old", shared)
    _table(fake, "t", shared)
    catalog.session.locations.reconcile()
    catalog.drop_table("sales", "old")
    assert ("sales", "old") not in fake.tables
    assert fake.deleted == []
