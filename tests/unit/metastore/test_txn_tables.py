"""The transaction tables' DDL: every table TxnHandler reads, both dialects, counters seeded."""

from __future__ import annotations

from catalogd.metastore.txn_tables import TABLES, statements


def test_every_table_of_hive_23s_transaction_schema_is_made() -> None:
    assert [t.name for t in TABLES] == [
        "TXNS", "TXN_COMPONENTS", "COMPLETED_TXN_COMPONENTS", "NEXT_TXN_ID", "HIVE_LOCKS", "NEXT_LOCK_ID",
        "COMPACTION_QUEUE", "NEXT_COMPACTION_QUEUE_ID", "COMPLETED_COMPACTIONS", "AUX_TABLE", "WRITE_SET"]


def test_dialects_differ_only_in_binary_columns() -> None:
    for table in TABLES:
        derby, postgres = statements(table, "derby"), statements(table, "postgres")
        assert [s.replace("varchar(2048) for bit data", "bytea") for s in derby] == postgres


def test_counters_are_seeded_and_locks_indexed() -> None:
    by_name = {t.name: t for t in TABLES}
    assert statements(by_name["NEXT_LOCK_ID"], "postgres") == [
        "CREATE TABLE NEXT_LOCK_ID (NL_NEXT bigint NOT NULL)", "INSERT INTO NEXT_LOCK_ID VALUES (1)"]
    locks = statements(by_name["HIVE_LOCKS"], "derby")
    assert locks[0].endswith("PRIMARY KEY (HL_LOCK_EXT_ID, HL_LOCK_INT_ID))")
    assert locks[1] == "CREATE INDEX HL_TXNID_INDEX ON HIVE_LOCKS (HL_TXNID)"
    assert "CQ_META_INFO bytea" in statements(by_name["COMPACTION_QUEUE"], "postgres")[0]
