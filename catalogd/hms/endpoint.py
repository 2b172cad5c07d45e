"""The HMS endpoint put together for the daemon: server, router, locks and memory-catalog stores."""

from __future__ import annotations

import logging
import shutil
import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalogd.hms.memory import SCRATCH_WAREHOUSE
from catalogd.hms.router import LockService, MemoryStore, Router
from catalogd.hms.server import HmsServer
from catalogd.names import ObjectPath

if TYPE_CHECKING:
    from catalogd.auth.audit import AuditLog
    from catalogd.auth.model import Authority
    from catalogd.auth.throttle import Throttle
    from catalogd.config import Config
    from catalogd.manager import CatalogManager

logger = logging.getLogger(__name__)

__all__ = ["SCRATCH_WAREHOUSE", "HmsEndpoint"]

#: The largest call or reply the endpoint carries (a 2,000-partition reply is under 2 MB).
MAX_MESSAGE = 256 * 1024 * 1024


class HmsEndpoint:
    """ThriftHiveMetastore on ``server.hms-port`` for every catalog of ``manager``."""

    def __init__(self, manager: CatalogManager, config: Config, *,
                 drop_dynamic: Callable[[ObjectPath], None] | None = None, authority: Authority | None = None,
                 audit: AuditLog | None = None, ssl_context: ssl.SSLContext | None = None,
                 throttle: Throttle | None = None) -> None:
        self.manager = manager
        self.config = config
        server = config.server
        self.warehouse_root = server.data_dir / SCRATCH_WAREHOUSE
        self.locks = self._lock_service(config)
        self._stores: dict[str, tuple[object, Any]] = {}
        self._stores_lock = threading.Lock()
        self.router = Router(manager, locks=self.locks, memory_store=self._store,
                             drop_dynamic=drop_dynamic, max_message=MAX_MESSAGE, authority=authority,
                             audit=audit)
        from catalogd.hms.identity import EndpointAuth

        self.auth = EndpointAuth(config, lambda name: authority is None or authority.principal_named(name) is not None,
                                 throttle=throttle, audit=audit)
        self.router.delegation = self.auth
        self.server = HmsServer(self.router.handle, server.host, server.hms_port,
                                max_connections=server.max_connections,
                                idle_timeout=server.idle_timeout.total_seconds(),
                                frame_timeout=server.frame_timeout.total_seconds(), max_message=MAX_MESSAGE,
                                max_buffered_bytes=server.hms_max_buffered_bytes, ssl_context=ssl_context,
                                authenticator=self.auth if self.auth.active else None)

    @staticmethod
    def _lock_service(config: Config) -> LockService | None:
        """catalogd holds the locks only where no metastore database does: the default catalog is
        not a hive catalog (a memory catalog). A hive default, embedded (on Derby or PostgreSQL)
        or remote, keeps them in its transaction tables (None: relayed to it)."""
        default = config.default_catalog
        if default.type == "hive":
            return None
        from catalogd.hms.locks import LockManager, next_epoch

        server = config.server
        # Each start's ids are new ones (the data dir is this daemon's: its lock is held by now).
        return LockManager(timeout=server.hms_lock_timeout.total_seconds(), epoch=lambda: next_epoch(server.data_dir),
                           max_components=server.hms_max_lock_components,
                           max_per_connection=server.hms_max_locks_per_connection,
                           max_per_principal=server.hms_max_locks_per_principal, max_total=server.hms_max_locks)

    def _store(self, name: str) -> MemoryStore:
        from catalogd.catalog.memory import MemoryCatalog
        from catalogd.hms.memory import MemoryMetastore

        catalog = self.manager.catalogs().get(name)
        if not isinstance(catalog, MemoryCatalog):
            raise LookupError(f"no memory catalog {name!r}")
        with self._stores_lock:
            known = self._stores.get(name)
            if known is not None and known[0] is catalog:
                served: MemoryStore = known[1]
                return served
            if known is not None:
                # The catalog was replaced by a reload: its old tables (and files) are gone.
                self._close_store(name, known[1])
            store = MemoryMetastore(catalog, self.warehouse_root / name)
            self._stores[name] = (catalog, store)
            return store

    def _close_store(self, name: str, store: Any) -> None:
        try:
            store.close()
        except Exception:
            logger.exception("HMS endpoint: cleaning up memory catalog %s failed", name)

    @property
    def port(self) -> int:
        return self.server.port

    def bind(self, listener: socket.socket | None = None) -> None:
        """Listen (on ``listener`` when the daemon bound the port early)."""
        self.server.bind(listener)

    def start(self) -> None:
        self.server.start()

    def shutdown(self, grace: float) -> None:
        self.server.shutdown(grace)
        self.router.close()
        with self._stores_lock:
            stores = list(self._stores.items())
            self._stores.clear()
        for name, (_, store) in stores:
            self._close_store(name, store)
        # Memory catalogs die with the daemon; so do the files Spark wrote into them.
        root = self.warehouse_root
        if root.is_dir() and not root.is_symlink() and _inside(root, self.config.server.data_dir):
            shutil.rmtree(root, ignore_errors=True)


def _inside(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False
