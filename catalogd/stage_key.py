"""One deployment, one stage key: the daemons of a deployment (``cluster.members``) sign stages alike.

A member records a fingerprint of its stage key (``staging.secret``, or the key generated into
its data dir) as a parameter of the metastore's ``default`` database, which every daemon on that
metastore sees and Spark ignores; a member whose key has another fingerprint refuses to start. A daemon
that is no member of a cluster neither records nor checks: it may share a metastore with
another key, and then each leaves the other's stages alone (as before clusters).
The fingerprint is an HMAC of a fixed label under the key, truncated: it tells keys apart and
says nothing about the key.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import TYPE_CHECKING

from catalogd.errors import ConfigError, NotFoundError

if TYPE_CHECKING:
    from catalogd.config import Config
    from catalogd.manager import CatalogManager

logger = logging.getLogger(__name__)

#: The ``default`` database's parameter holding the deployment's stage-key fingerprint.
FINGERPRINT_PARAMETER = "catalogd.stage-key.fingerprint"
_LABEL = b"catalogd stage-key fingerprint v1"
_DATABASE = "default"


def fingerprint(key: bytes) -> str:
    """``v1:`` and 16 hex digits of HMAC-SHA256(key, a fixed label)."""
    return "v1:" + hmac.new(key, _LABEL, hashlib.sha256).hexdigest()[:16]


def _key_name(config: Config) -> str:
    if config.staging.secret is not None:
        return "staging.secret"
    return (f"staging.secret (unset: the key generated into {config.server.data_dir}/secrets/stage.key; "
            "set staging.secret to the deployment's)")


def check_stage_key(manager: CatalogManager, config: Config) -> None:
    """Record this daemon's stage key's fingerprint in each hive catalog's metastore, or refuse a different one.

    Only for a member of a cluster (``cluster.members``). Read-only catalogs (catalogd writes
    nothing there, stages included) and memory catalogs are left alone; a metastore shared by
    several catalogs is checked once.

    Raises:
        ConfigError: a metastore holds another key's fingerprint (naming ``staging.secret``).
    """
    from catalogd.catalog import stage_key
    from catalogd.catalog.hive import HiveCatalog

    if not config.cluster.members:
        return
    mine = ""
    seen: set[str] = set()
    for name, catalog in sorted(manager.catalogs().items()):
        conf = config.catalog(name)
        if not isinstance(catalog, HiveCatalog) or conf is None or conf.read_only:
            continue
        metastore = catalog.session.metastore
        if metastore in seen:
            continue
        seen.add(metastore)
        mine = mine or fingerprint(stage_key(config))  # only loaded (or generated) for a hive catalog
        what = f"database {name}.{_DATABASE}"
        try:
            with catalog.session.client(what) as c:
                db = c.get_database(_DATABASE)
        except NotFoundError:
            logger.warning("catalog %s: the metastore has no %s database; its stage key is not checked",
                           name, _DATABASE)
            continue
        with catalog.session.client(what) as c:
            recorded = (db.parameters or {}).get(FINGERPRINT_PARAMETER)
            if recorded is None:
                db.parameters = {**(db.parameters or {}), FINGERPRINT_PARAMETER: mine}
                c.alter_database(_DATABASE, db)
                logger.info("catalog %s: recorded the stage key's fingerprint %s in the metastore", name, mine)
                # Two daemons starting at once: the one whose record was overwritten finds out now.
                recorded = (c.get_database(_DATABASE).parameters or {}).get(FINGERPRINT_PARAMETER)
            if recorded != mine:
                raise ConfigError(
                    f"{config.source}: {_key_name(config)}: this daemon's stage key (fingerprint {mine}) differs "
                    f"from the one the daemons on catalog {name}'s metastore ({metastore}) use (fingerprint "
                    f"{recorded}): the daemons of a deployment that share a metastore must share staging.secret")
