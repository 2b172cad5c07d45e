"""The transaction and lock tables of HMS 2.3's ``TxnHandler``, created in the metastore's database.

HMS answers ``lock``, ``check_lock``, ``unlock``, ``heartbeat``, ``show_locks`` and the
transaction calls from these tables (``HIVE_LOCKS``, ``TXNS``, ...). They are not JDO classes,
so DataNucleus' ``autoCreateAll`` never makes them; Hive's ``schematool`` runs a SQL script
for them that is not inside the jars. catalogd creates them itself, with the columns and
types of Hive 2.3's transaction schema, before its embedded metastore serves:

* idempotently: each table is created only when it is missing (a database whose tables
  ``schematool`` made is left as it is), and its counter row is seeded only then;
* in one database transaction (Derby and PostgreSQL both roll DDL back), so a start killed
  half-way leaves no half-made schema;
* on PostgreSQL under a transaction-scoped advisory lock, so daemons starting at once on one
  database do not race: the second finds the tables the first committed.

The statements run on a JDBC connection in the metastore's own JVM (see
``embedded._create_txn_tables``): Derby is embedded in that JVM and no other process may open it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ADVISORY_LOCK_KEY", "TABLES", "Dialect", "TxnTable", "statements"]

Dialect = Literal["derby", "postgres"]

#: ``pg_advisory_xact_lock`` key serializing the creation (ASCII "catalogd" "txn" folded into an int8).
ADVISORY_LOCK_KEY = 0x63617467_74786E

#: Column types that differ between the databases; any other type is written as given.
_TYPES: dict[str, dict[Dialect, str]] = {
    "binary": {"derby": "varchar(2048) for bit data", "postgres": "bytea"},
}


@dataclass(frozen=True)
class TxnTable:
    """One table: its columns as ``(name, type, constraint)``, and what else makes it."""

    name: str
    columns: tuple[tuple[str, str, str], ...]
    #: A table constraint after the columns (a composite primary key).
    constraint: str = ""
    #: The counter's first value, for the one-row ``NEXT_*`` tables.
    seed: int | None = None
    #: ``(index name, column)`` indexes.
    indexes: tuple[tuple[str, str], ...] = ()

    def create(self, dialect: Dialect) -> str:
        parts = [" ".join(p for p in (name, _TYPES.get(kind, {}).get(dialect, kind), extra) if p)
                 for name, kind, extra in self.columns]
        if self.constraint:
            parts.append(self.constraint)
        return f"CREATE TABLE {self.name} ({', '.join(parts)})"


_NN = "NOT NULL"

#: Hive 2.3's transaction schema (``hive-txn-schema-2.3.0``), table by table.
TABLES: tuple[TxnTable, ...] = (
    TxnTable("TXNS", (
        ("TXN_ID", "bigint", "PRIMARY KEY"), ("TXN_STATE", "char(1)", _NN), ("TXN_STARTED", "bigint", _NN),
        ("TXN_LAST_HEARTBEAT", "bigint", _NN), ("TXN_USER", "varchar(128)", _NN),
        ("TXN_HOST", "varchar(128)", _NN), ("TXN_AGENT_INFO", "varchar(128)", ""),
        ("TXN_META_INFO", "varchar(128)", ""), ("TXN_HEARTBEAT_COUNT", "integer", ""))),
    TxnTable("TXN_COMPONENTS", (
        ("TC_TXNID", "bigint", "REFERENCES TXNS (TXN_ID)"), ("TC_DATABASE", "varchar(128)", _NN),
        ("TC_TABLE", "varchar(128)", ""), ("TC_PARTITION", "varchar(767)", ""),
        ("TC_OPERATION_TYPE", "char(1)", _NN))),
    TxnTable("COMPLETED_TXN_COMPONENTS", (
        ("CTC_TXNID", "bigint", ""), ("CTC_DATABASE", "varchar(128)", _NN), ("CTC_TABLE", "varchar(256)", ""),
        ("CTC_PARTITION", "varchar(767)", ""))),
    TxnTable("NEXT_TXN_ID", (("NTXN_NEXT", "bigint", _NN),), seed=1),
    TxnTable("HIVE_LOCKS", (
        ("HL_LOCK_EXT_ID", "bigint", _NN), ("HL_LOCK_INT_ID", "bigint", _NN), ("HL_TXNID", "bigint", ""),
        ("HL_DB", "varchar(128)", _NN), ("HL_TABLE", "varchar(128)", ""), ("HL_PARTITION", "varchar(767)", ""),
        ("HL_LOCK_STATE", "char(1)", _NN), ("HL_LOCK_TYPE", "char(1)", _NN),
        ("HL_LAST_HEARTBEAT", "bigint", _NN), ("HL_ACQUIRED_AT", "bigint", ""),
        ("HL_USER", "varchar(128)", _NN), ("HL_HOST", "varchar(128)", _NN),
        ("HL_HEARTBEAT_COUNT", "integer", ""), ("HL_AGENT_INFO", "varchar(128)", ""),
        ("HL_BLOCKEDBY_EXT_ID", "bigint", ""), ("HL_BLOCKEDBY_INT_ID", "bigint", "")),
        constraint="PRIMARY KEY (HL_LOCK_EXT_ID, HL_LOCK_INT_ID)", indexes=(("HL_TXNID_INDEX", "HL_TXNID"),)),
    TxnTable("NEXT_LOCK_ID", (("NL_NEXT", "bigint", _NN),), seed=1),
    TxnTable("COMPACTION_QUEUE", (
        ("CQ_ID", "bigint", "PRIMARY KEY"), ("CQ_DATABASE", "varchar(128)", _NN),
        ("CQ_TABLE", "varchar(128)", _NN), ("CQ_PARTITION", "varchar(767)", ""), ("CQ_STATE", "char(1)", _NN),
        ("CQ_TYPE", "char(1)", _NN), ("CQ_TBLPROPERTIES", "varchar(2048)", ""),
        ("CQ_WORKER_ID", "varchar(128)", ""), ("CQ_START", "bigint", ""), ("CQ_RUN_AS", "varchar(128)", ""),
        ("CQ_HIGHEST_TXN_ID", "bigint", ""), ("CQ_META_INFO", "binary", ""),
        ("CQ_HADOOP_JOB_ID", "varchar(32)", ""))),
    TxnTable("NEXT_COMPACTION_QUEUE_ID", (("NCQ_NEXT", "bigint", _NN),), seed=1),
    TxnTable("COMPLETED_COMPACTIONS", (
        ("CC_ID", "bigint", "PRIMARY KEY"), ("CC_DATABASE", "varchar(128)", _NN),
        ("CC_TABLE", "varchar(128)", _NN), ("CC_PARTITION", "varchar(767)", ""), ("CC_STATE", "char(1)", _NN),
        ("CC_TYPE", "char(1)", _NN), ("CC_TBLPROPERTIES", "varchar(2048)", ""),
        ("CC_WORKER_ID", "varchar(128)", ""), ("CC_START", "bigint", ""), ("CC_END", "bigint", ""),
        ("CC_RUN_AS", "varchar(128)", ""), ("CC_HIGHEST_TXN_ID", "bigint", ""), ("CC_META_INFO", "binary", ""),
        ("CC_HADOOP_JOB_ID", "varchar(32)", ""))),
    TxnTable("AUX_TABLE", (
        ("MT_KEY1", "varchar(128)", _NN), ("MT_KEY2", "bigint", _NN), ("MT_COMMENT", "varchar(255)", "")),
        constraint="PRIMARY KEY (MT_KEY1, MT_KEY2)"),
    TxnTable("WRITE_SET", (
        ("WS_DATABASE", "varchar(128)", _NN), ("WS_TABLE", "varchar(128)", _NN),
        ("WS_PARTITION", "varchar(767)", ""), ("WS_TXNID", "bigint", _NN), ("WS_COMMIT_ID", "bigint", _NN),
        ("WS_OPERATION_TYPE", "char(1)", _NN))),
)


def statements(table: TxnTable, dialect: Dialect) -> list[str]:
    """What creates ``table`` (with its indexes and seed row) in ``dialect``, in order."""
    made = [table.create(dialect)]
    made.extend(f"CREATE INDEX {index} ON {table.name} ({column})" for index, column in table.indexes)
    if table.seed is not None:
        made.append(f"INSERT INTO {table.name} VALUES ({table.seed})")
    return made
