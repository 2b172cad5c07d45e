"""Catalog interface and backends, and the loader table keyed by catalog type (where backends are wired)."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from catalogd.catalog.base import Catalog
    from catalogd.catalog.hive_client import HiveSession
    from catalogd.catalog.hive_staging import HiveStager
    from catalogd.config import CatalogConfig, Config


def _load_hive(conf: CatalogConfig, config: Config) -> Catalog:
    from catalogd.catalog.hive import HiveCatalog
    from catalogd.catalog.hive_staging import HiveStager

    def stages(session: HiveSession) -> HiveStager:
        return HiveStager(
            session,
            lease=config.staging.lease.total_seconds(),
            retention=config.staging.replaced_data_retention.total_seconds(),
            # One daemon per data dir (it is locked): a restart is the same committer.
            committer=f"{socket.gethostname()}:{config.server.data_dir}",
        )

    return HiveCatalog.from_config(conf, config, stages=stages)


def _load_memory(conf: CatalogConfig, config: Config) -> Catalog:
    from catalogd.catalog.memory import MemoryCatalog

    return MemoryCatalog(conf.name, default_database=conf.default_database)


CATALOG_TYPES = {"hive": _load_hive, "memory": _load_memory}


def load_catalog(conf: CatalogConfig, config: Config) -> Catalog:
    """Build (not yet open) the catalog a config entry describes."""
    return CATALOG_TYPES[conf.type](conf, config)
