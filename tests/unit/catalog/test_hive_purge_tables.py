"""Drops of external tables with ``external.table.purge``: what HMS 4 makes of a Hive 2.3 client's
managed tables (``TRANSLATED_TO_EXTERNAL``), and whose files HMS 3.1+ deletes on a drop. They are
judged by the managed tables' rules: deleted inside the allowed locations, kept outside."""

from __future__ import annotations

import pytest
from fake_hms import WAREHOUSE, FakeHms

from catalogd.catalog import hive_codec as codec
from catalogd.catalog.hive import HiveCatalog
from catalogd.model import Column, Database, Table


class Hms4(FakeHms):
    """Deletes as HMS 4 does: a managed table's files, and a purge table's."""

    def drop_table(self, database: str, name: str, delete_data: bool) -> None:
        tbl = self._table(database, name)
        params = tbl.parameters or {}
        if delete_data and params.get("external.table.purge") == "TRUE" and tbl.sd and tbl.sd.location:
            self.deleted.append(tbl.sd.location)
        super().drop_table(database, name, delete_data)


@pytest.fixture
def fake() -> FakeHms:
    return Hms4()


@pytest.fixture
def catalog(fake: FakeHms) -> HiveCatalog:
    cat = HiveCatalog("main", uris=[("127.0.0.1", 9083)])
    cat.session.attach(fake)  # type: ignore[arg-type]
    cat.create_database(Database("sales"))
    return cat


def translated(fake: FakeHms, name: str, location: str) -> None:
    """A table as HMS 4 stores a managed table a Hive 2.3 client created."""
    tbl = codec.to_hms_table(Table(name=name, database="sales", columns=[Column("id", "bigint")],
                                   location=location), None)
    tbl.tableType = codec.EXTERNAL_TABLE
    tbl.parameters.update({"EXTERNAL": "TRUE", "external.table.purge": "TRUE", "TRANSLATED_TO_EXTERNAL": "TRUE"})
    fake.create_table(tbl)


def test_a_translated_table_in_the_warehouse_goes_with_its_files(catalog: HiveCatalog, fake: FakeHms) -> None:
    translated(fake, "t", f"{WAREHOUSE}/sales.db/t")
    catalog.drop_table("sales", "t")
    assert fake.deleted == [f"{WAREHOUSE}/sales.db/t"]


def test_a_purge_table_outside_the_allowed_locations_keeps_its_files(catalog: HiveCatalog, fake: FakeHms) -> None:
    translated(fake, "v", "file:/victim")
    catalog.drop_table("sales", "v", purge=True)
    assert ("sales", "v") not in fake.tables
    assert fake.deleted == []
