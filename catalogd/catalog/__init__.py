"""Catalog interface and backends, and the loader table keyed by catalog type."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from catalogd.catalog.base import Catalog
    from catalogd.config import CatalogConfig, Config


def _load_hive(conf: CatalogConfig, config: Config) -> Catalog:
    from catalogd.catalog.hive import HiveCatalog

    return HiveCatalog.from_config(conf, config)


def _load_memory(conf: CatalogConfig, config: Config) -> Catalog:
    from catalogd.catalog.memory import MemoryCatalog

    return MemoryCatalog(conf.name, default_database=conf.default_database)


CATALOG_TYPES = {"hive": _load_hive, "memory": _load_memory}


def load_catalog(conf: CatalogConfig, config: Config) -> Catalog:
    """Build (not yet open) the catalog a config entry describes."""
    return CATALOG_TYPES[conf.type](conf, config)
