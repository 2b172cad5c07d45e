"""What the HMS endpoint needs of a catalog whose HMS calls it relays to a metastore.

The endpoint (``catalogd.hms``) hands most calls to the catalog's metastore as bytes, and reads
and invalidates the catalog's metadata cache around them. A catalog that can be relayed to
returns a ``RelayTarget`` from ``Catalog.relay_target()`` (the hive catalog: its session); the
endpoint learns where and how to relay from here, never from a concrete catalog class.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from catalogd.catalog.locations import Location
    from catalogd.metastore.access_key import KeySource
    from catalogd.metastore.sasl import MetastoreKerberos

__all__ = ["CachedAnswer", "CachedCalls", "RelayTarget"]


class CachedAnswer(Protocol):
    """One read looked up in the metadata cache (``caching_client.Lookup``)."""

    @property
    def body(self) -> bytes | None:
        """The stored answer (an encoded ``*_result`` struct); None: a miss."""

    def keep(self, body: bytes) -> None:
        """Store the answer fetched after the miss (refused if a write came between)."""


class CachedCalls(Protocol):
    """The catalog's metastore client behind the metadata cache (``caching_client.CachingHiveClient``)."""

    @property
    def enabled(self) -> bool:
        """Whether reads are stored (a cache with ``ttl`` 0 is off)."""

    def lookup(self, scope: tuple[str, str, str], method: str, args: bytes, form: str = ...) -> CachedAnswer:
        """Look a read up by its scope, method, encoded args and ``form`` (how its bytes were made)."""

    def writing(self, method: str, keys: list[tuple[str, str]]) -> AbstractContextManager[None]:
        """Around a write that may change ``keys``: invalidate them however it ends."""


class RelayTarget(Protocol):
    """Where a catalog's relayed calls go, and the catalog's own ways the endpoint must take."""

    @property
    def name(self) -> str:
        """The catalog's name."""

    @property
    def connect_timeout(self) -> float: ...

    @property
    def socket_timeout(self) -> float: ...

    @property
    def max_concurrent_calls(self) -> int | None:
        """Calls in flight at once to the metastore (None: no limit)."""

    @property
    def kerberos(self) -> MetastoreKerberos | None:
        """How to reach a kerberized metastore (SASL GSSAPI as catalogd); None: plain Thrift."""

    @property
    def key(self) -> KeySource | None:
        """What to send first on each new connection (an embedded metastore's key); None: nothing."""

    def addresses(self) -> list[tuple[str, int]]:
        """The metastore's (host, port) addresses as now known (an embedded one's may change)."""

    def check_up(self) -> None:
        """Raises MetastoreUnavailableError while the metastore cannot answer (being restarted)."""

    def cached_calls(self) -> CachedCalls:
        """The metastore client behind the cache (raises MetastoreUnavailableError before open)."""

    def drop_partition(self, database: str, table: str, values: list[str], purge: bool = False) -> None:
        """Drop a partition by the catalog's deletion rules (its files deleted only where allowed)."""

    def truncation_blocker(self, tbl: Any, parts: list[Any] | None = None) -> str | None:
        """Why a truncate of the table (``parts``: of those partitions) may not empty its directories
        (None: it may): judged as a drop's files are. Call with ``files()`` held."""

    def claim(self, uri: str, what: str, own_table: tuple[str, str] | None = None,
              check_others: bool = True, within: tuple[str, str] | None = None) -> Location:
        """Check a new directory for ``what``: inside the allowed locations and clear of every
        other object's (raises PermissionDeniedError); ``within``: a table whose directory it may
        lie inside (the caller vouches: a signed stage's target). Call with ``files()`` held."""

    def files(self) -> AbstractContextManager[None]:
        """Held while a location is checked and claimed and while a drop decides and deletes."""
