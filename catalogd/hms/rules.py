"""The location rule of every HMS write: what catalogd checks before a write may delete, move or claim files.

catalogd promises to delete only what it owns. Every method ``methods`` classifies as a
write (``Kind.WRITE``) is listed here with its rule, and a unit test fails when one is
not: a new write method cannot slip past the rules by being relayed unjudged.

The rules:

* ``NO_FILES``: a metadata-only write (statistics, keys, functions, events); it neither
  deletes, moves nor claims a directory.
* ``CLAIM``: names a location for a new or altered object (a table, a partition, a
  database): the location must be strictly inside ``allowed-locations`` and clear of every
  other object's directory (as the Thrift API's creates are checked).
* ``DROP``: may delete files: catalogd makes the drop itself by its deletion rules (files
  deleted only for a managed object strictly inside an allowed root that no other object
  uses; ``deleteData=false`` keeps them).
* ``MOVE``: the metastore may move a directory (a partition's rename): judged so that it
  never moves a directory outside the table's own.
* ``REFUSED``: catalogd cannot judge what the metastore would delete or move (indexes,
  whose index tables the metastore creates and drops by itself; partition exchanges, which
  move directories between tables): refused, never relayed.
"""

from __future__ import annotations

import enum

from catalogd.hms import methods

__all__ = ["REFUSED_GLOBAL_WRITES", "WRITE_RULES", "Rule", "refusal", "rule_of"]


class Rule(enum.Enum):
    """A write method's location rule (see the module docstring)."""

    NO_FILES = "no files"
    CLAIM = "judged: claim"
    DROP = "judged: drop"
    MOVE = "judged: move"
    REFUSED = "refused"


_N, _C, _D, _M, _X = Rule.NO_FILES, Rule.CLAIM, Rule.DROP, Rule.MOVE, Rule.REFUSED

#: Every ``Kind.WRITE`` method of ``methods`` -> its rule.
WRITE_RULES: dict[str, Rule] = {
    # -- databases
    "create_database": _C,
    "alter_database": _C,
    "drop_database": _D,
    # -- tables (an alter may move a managed table's directory on a rename: its new place is claimed)
    "create_table": _C,
    "create_table_with_environment_context": _C,
    "create_table_with_constraints": _C,
    "alter_table": _C,
    "alter_table_with_environment_context": _C,
    "alter_table_with_cascade": _C,
    "drop_table": _D,
    "drop_table_with_environment_context": _D,
    "drop_constraint": _N,
    "add_primary_key": _N,
    "add_foreign_key": _N,
    # -- partitions
    "add_partition": _C,
    "add_partition_with_environment_context": _C,
    "add_partitions": _C,
    "add_partitions_pspec": _C,
    "add_partitions_req": _C,
    # An appended partition gets its default place inside its table's directory.
    "append_partition": _N,
    "append_partition_with_environment_context": _N,
    "append_partition_by_name": _N,
    "append_partition_by_name_with_environment_context": _N,
    "alter_partition": _C,
    "alter_partition_with_environment_context": _C,
    "alter_partitions": _C,
    "alter_partitions_with_environment_context": _C,
    "drop_partition": _D,
    "drop_partition_with_environment_context": _D,
    "drop_partition_by_name": _D,
    "drop_partition_by_name_with_environment_context": _D,
    "drop_partitions_req": _D,
    "rename_partition": _M,
    "exchange_partition": _X,
    "exchange_partitions": _X,
    "markPartitionForEvent": _N,
    # -- indexes: the metastore creates and drops the index table (and its files) itself
    "add_index": _X,
    "alter_index": _X,
    "drop_index_by_name": _X,
    # -- statistics, functions, events
    "update_table_column_statistics": _N,
    "update_partition_column_statistics": _N,
    "set_aggr_stats_for": _N,
    "delete_partition_column_statistics": _N,
    "delete_table_column_statistics": _N,
    "create_function": _N,
    "drop_function": _N,
    "alter_function": _N,
    "fire_listener_event": _N,
    # -- Hive 3.1 and 4.x: each judged as its Hive 2.3 equivalent (``downgrade.judged_as``)
    "create_database_req": _C,
    "alter_database_req": _C,
    "drop_database_req": _D,
    "create_table_req": _C,
    "alter_table_req": _C,
    "drop_table_req": _D,
    # Deletes the files of a table (or of its named partitions) and keeps the table: judged as
    # a drop of its data (a managed table whose directories are catalogd's: drops.py).
    "truncate_table": _D,
    "truncate_table_req": _D,
    "update_creation_metadata": _N,
    "add_unique_constraint": _N,
    "add_not_null_constraint": _N,
    "add_default_constraint": _N,
    "add_check_constraint": _N,
    "append_partition_req": _N,
    "drop_partition_req": _D,
    "alter_partitions_req": _C,
    "rename_partition_req": _M,
    "update_table_column_statistics_req": _N,
    "update_partition_column_statistics_req": _N,
    # HPL/SQL stored procedures and packages, the schema registry: metadata of a database
    "create_stored_procedure": _N,
    "drop_stored_procedure": _N,
    "add_package": _N,
    "drop_package": _N,
    "create_ischema": _N,
    "alter_ischema": _N,
    "drop_ischema": _N,
    "add_schema_version": _N,
    "drop_schema_version": _N,
    "map_schema_version_to_serde": _N,
    "set_schema_version_state": _N,
}

#: Global writes (they name no database) that move or delete files of whatever path they are
#: given: refused, never relayed.
REFUSED_GLOBAL_WRITES: dict[str, str] = {
    "cm_recycle": "it moves (or, with purge, deletes) the files of any path it is given",
}


def rule_of(method: str) -> Rule | None:
    """A write method's rule; None: not a ``Kind.WRITE`` method of the table."""
    return WRITE_RULES.get(method)


def refusal(method: str) -> str | None:
    """Why catalogd refuses ``method`` outright (None: it does not): a write it cannot judge.

    A ``Kind.WRITE`` method missing from ``WRITE_RULES`` is refused too: unjudged means refused;
    so are the global writes of ``REFUSED_GLOBAL_WRITES``.
    """
    why = REFUSED_GLOBAL_WRITES.get(method)
    if why is not None:
        return (f"catalogd: {method} refused: {why}, and catalogd deletes only what it owns "
                "(docs/operations.md, safety)")
    if methods.kind(method) is not methods.Kind.WRITE:
        return None
    rule = WRITE_RULES.get(method)
    if rule is Rule.REFUSED or rule is None:
        return (f"catalogd: {method} refused: catalogd cannot judge which directories the metastore would "
                "delete or move for it, and deletes only what it owns (docs/operations.md, safety)")
    return None
