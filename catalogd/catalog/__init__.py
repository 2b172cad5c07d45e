"""Catalog interface and backends, and the loader table keyed by catalog type (where backends are wired)."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from catalogd.catalog.base import Catalog
    from catalogd.catalog.hive_client import HiveSession
    from catalogd.catalog.hive_staging import HiveStager
    from catalogd.catalog.hms_cache import MetadataCache
    from catalogd.config import CatalogConfig, Config


#: The file under ``<data-dir>/secrets/`` holding the generated stage key (no ``staging.secret``).
STAGE_KEY = "stage.key"


def stage_key(config: Config) -> bytes:
    """The key stages are signed with: ``staging.secret``, else the one generated into the data dir.

    Raises:
        ConfigError: the generated key cannot be read or written.
    """
    from catalogd.keys import load_key

    staging = config.staging
    # The same key after a restart (and for every daemon given the same staging.secret):
    # stages signed before are still recognised as catalogd's own.
    return (staging.secret.get_secret_value().strip().encode() if staging.secret is not None
            else load_key(config.server.data_dir, STAGE_KEY))


def _load_hive(conf: CatalogConfig, config: Config, cache: MetadataCache | None = None) -> Catalog:
    from catalogd.catalog.hive import HiveCatalog
    from catalogd.catalog.hive_staging import HiveStager

    staging = config.staging
    secret = stage_key(config)

    def stages(session: HiveSession) -> HiveStager:
        return HiveStager(
            session,
            lease=staging.lease.total_seconds(),
            retention=staging.replaced_data_retention.total_seconds(),
            # One daemon per data dir (it is locked): a restart is the same committer.
            committer=f"{socket.gethostname()}:{config.server.data_dir}",
            secret=secret,
            max_lease=staging.max_lease.total_seconds(),
            max_retired=staging.max_retired_versions,
        )

    return HiveCatalog.from_config(conf, config, stages=stages, cache=cache)


def _load_memory(conf: CatalogConfig, config: Config, cache: MetadataCache | None = None) -> Catalog:
    from catalogd.catalog.memory import MemoryCatalog

    return MemoryCatalog(conf.name, default_database=conf.default_database, allowed_locations=conf.allowed_locations)


def _load_jdbc(conf: CatalogConfig, config: Config, cache: MetadataCache | None = None) -> Catalog:
    from catalogd.catalog.jdbc import JdbcCatalog
    from catalogd.catalog.jdbc_staging import JdbcStager

    staging = config.staging
    # A read-only catalog writes nothing, stages included; it needs no key either.
    secret = None if conf.read_only else stage_key(config)

    def stages(catalog: JdbcCatalog) -> JdbcStager | None:
        if secret is None or not conf.atomic_writes:
            return None
        return JdbcStager(catalog, lease=staging.lease.total_seconds(), secret=secret,
                          max_lease=staging.max_lease.total_seconds(),
                          committer=f"{socket.gethostname()}:{config.server.data_dir}")

    return JdbcCatalog.from_config(conf, stager=stages)


CATALOG_TYPES = {"hive": _load_hive, "memory": _load_memory, "jdbc": _load_jdbc}


def load_catalog(conf: CatalogConfig, config: Config, cache: MetadataCache | None = None) -> Catalog:
    """Build (not yet open) the catalog a config entry describes; ``cache``: the daemon's
    metadata cache, which hive catalogs read through (memory catalogs need none)."""
    return CATALOG_TYPES[conf.type](conf, config, cache)
