"""Relaying HMS calls to the metastores behind catalogs: one connection pool per relay target.

The router hands a call to a catalog's metastore as the bytes the client sent (``relay``) or
as a call it builds itself (``call``, decoded). Where to relay comes from the catalog's
``RelayTarget`` (addresses, timeouts, call limit); a catalog replaced by a reload gets a new
pool, the old one is closed. Each pool keeps the dialect of its metastore
(``backend_dialect``: an HMS 4 is asked ``get_table_req`` for a client's ``get_table``).
"""

from __future__ import annotations

import threading
from typing import Any

from thrift.Thrift import TApplicationException

from catalogd.catalog.relay_target import RelayTarget
from catalogd.errors import MetastoreUnavailableError
from catalogd.hive_idl import ThriftHiveMetastore
from catalogd.hive_idl import ttypes as hms
from catalogd.hms.backend_dialect import relay_in_dialect
from catalogd.hms.refused import Refused, meta_error
from catalogd.metastore.dialect import Dialect
from catalogd.metastore.messages import CALL, EXCEPTION, Message, decode, encode
from catalogd.metastore.relay import Identity, RelayPool

__all__ = ["Upstreams"]


class Upstreams:
    """The relay pools of the catalogs' metastores.

    Args:
        max_message: the largest reply relayed, in bytes.
    """

    def __init__(self, max_message: int) -> None:
        self._max_message = max_message
        self._pools: dict[tuple[str, int], tuple[RelayPool, Dialect]] = {}
        self._lock = threading.Lock()

    def _pool(self, target: RelayTarget) -> tuple[RelayPool, Dialect]:
        # Keyed by the target object too: a reload that replaces the catalog replaces its session.
        key = (target.name, id(target))
        with self._lock:
            found = self._pools.get(key)
            if found is None:
                for stale in [k for k in self._pools if k[0] == target.name]:
                    self._pools.pop(stale)[0].close()
                pool = RelayPool(f"catalog {target.name}", target.addresses,
                                 connect_timeout=target.connect_timeout, socket_timeout=target.socket_timeout,
                                 max_in_flight=target.max_concurrent_calls, max_message=self._max_message,
                                 kerberos=target.kerberos, key=target.key)
                found = self._pools[key] = (pool, Dialect())
        return found

    def close(self) -> None:
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool, _ in pools:
            pool.close()

    def relay(self, target: RelayTarget, identity: Identity, request: bytes, retry: bool) -> Message:
        """Send one call message as it is; the reply message as the metastore sent it.

        Raises:
            Refused: the metastore cannot be reached (a ``MetaException`` for the client).
        """
        try:
            # A metastore being restarted by the supervisor fails now, not after a connect timeout.
            target.check_up()
        except MetastoreUnavailableError as e:
            raise meta_error(f"catalogd: {e.message}", MetastoreUnavailableError) from e
        try:
            pool, dialect = self._pool(target)
            return relay_in_dialect(dialect, lambda message: pool.call(identity, message, retry), request,
                                    f"catalog {target.name}")
        except MetastoreUnavailableError as e:
            raise meta_error(f"catalogd: {e.message}", MetastoreUnavailableError) from e

    def call(self, target: RelayTarget, identity: Identity, method: str, args: Any, retry: bool = True) -> Any:
        """One decoded call on the target's metastore: the result struct."""
        reply = self.relay(target, identity, encode(method, CALL, 0, args), retry)
        if reply.type == EXCEPTION:
            error = decode(TApplicationException(), reply.body)
            raise Refused(hms.MetaException(message=f"metastore: {error.message}"))
        return decode(getattr(ThriftHiveMetastore, f"{method}_result")(), reply.body)
