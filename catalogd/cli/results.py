"""What commands return when no model object says it: small views for the output layer to print.

A command returns a model object (``Table``, ``Stage``, ``DynamicTable``...) or one of these;
``catalogd.cli.output`` prints either as a text table or as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalogd.errors import CatalogError
from catalogd.iceberg.client_conf import IcebergClientSettings
from catalogd.model import CatalogInfo, DynamicTable, Partition, RefreshRun, Stage, Table


@dataclass
class Names:
    """A list of names (databases, tables, views, functions) under one column header."""

    header: str
    names: list[str]


@dataclass
class Catalogs:
    """``catalog list``: a table of catalogs; in JSON only their names."""

    catalogs: list[CatalogInfo]


@dataclass
class SparkSettings:
    """``spark-conf``: ``key=value`` lines."""

    settings: dict[str, str]


@dataclass
class IcebergSettings:
    """``iceberg-conf``: every client's settings for one catalog through the REST door."""

    settings: IcebergClientSettings


@dataclass
class Done:
    """An object renamed or dropped: ``dropped table main.db.t`` / ``{"dropped": "main.db.t"}``."""

    action: str
    kind: str
    name: str
    to: str | None = None


@dataclass
class PartitionDropped:
    spec: dict[str, str]
    table: str

    @property
    def name(self) -> str:
        return "/".join(f"{k}={v}" for k, v in self.spec.items())


@dataclass
class Partitions:
    partitions: list[Partition]


@dataclass
class DescribedTable:
    """``table describe``: a table as people read it (``catalogd.*`` properties only with ``--all``).

    Its JSON form is the table's, whole: ``--all`` changes the text only.
    """

    table: Table
    all_properties: bool = False


@dataclass
class View:
    """A view (a ``Table`` of kind VIEW) shown as a view: its queries, not its storage."""

    view: Table


@dataclass
class Stages:
    stages: list[Stage]


@dataclass
class StageCommitted:
    """``stage commit``: the stage asked for and how it ended."""

    stage_id: str
    stage: Stage


@dataclass
class StageAborted:
    stage_id: str
    stage: Stage


@dataclass
class DynamicTables:
    tables: list[DynamicTable]


@dataclass
class Runs:
    """Refresh runs, newest first (``dt history``)."""

    runs: list[RefreshRun]


@dataclass
class AuditEntries:
    """``audit tail``: audit log entries, oldest first, each as its JSON line has it."""

    entries: list[dict[str, Any]]


@dataclass
class Message:
    """One plain line, the same with ``--json`` (``config check`` says ``ok``)."""

    text: str


@dataclass
class Failed:
    """A result to print before the command fails with ``error`` (``dt refresh --wait`` of a failed job)."""

    shown: object
    error: CatalogError
