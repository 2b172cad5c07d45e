"""The leader lease of a cluster, kept in a Hive Metastore (see ``catalogd.server.leader``).

Each leadership term (epoch) is one hidden view in the metastore's ``default`` database,
``__catalogd_stage__leader_<epoch>``, whose parameters name the leader and carry its heartbeat.
Taking a term is creating its view: the metastore refuses a second table of one name (a unique
key of its database), so of two daemons claiming one epoch exactly one succeeds, on Derby,
PostgreSQL or a remote HMS alike. Views have no location: nothing is created on disk. The name
starts with the staging prefix so that every listing already hides it from users and Spark;
no stage key can collide with it (stage keys are hex digits).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from catalogd.catalog.base import LEASE_TABLE_PREFIX
from catalogd.errors import AlreadyExistsError, NotFoundError
from catalogd.hive_idl import ttypes as hms

if TYPE_CHECKING:
    from catalogd.catalog.hive_client import HiveSession

#: The lease views' names: this, then the epoch in 12 digits.
LEASE_PREFIX = LEASE_TABLE_PREFIX
LEASE_DATABASE = "default"
_VIEW = "VIRTUAL_VIEW"


def lease_name(epoch: int) -> str:
    return f"{LEASE_PREFIX}{epoch:012d}"


def lease_view(epoch: int, params: dict[str, str]) -> hms.Table:
    """The view of term ``epoch``: no location (nothing on disk), one column (a view needs one)."""
    return hms.Table(
        tableName=lease_name(epoch), dbName=LEASE_DATABASE, owner="catalogd", createTime=int(time.time()),
        lastAccessTime=0, retention=0, partitionKeys=[], parameters=dict(params), tableType=_VIEW,
        viewOriginalText="SELECT 1", viewExpandedText="SELECT 1",
        sd=hms.StorageDescriptor(cols=[hms.FieldSchema(name="leader", type="int", comment=None)], location=None,
                                 inputFormat=None, outputFormat=None, compressed=False, numBuckets=-1,
                                 serdeInfo=hms.SerDeInfo(name=None, serializationLib=None, parameters={}),
                                 bucketCols=[], sortCols=[], parameters={}))


def _epoch_of(name: str) -> int | None:
    digits = name[len(LEASE_PREFIX):]
    return int(digits) if digits.isdigit() else None


class HmsLeaseStore:
    """Lease terms as views of one metastore (the ``LeaseStore`` of ``catalogd.server.leader``).

    Args:
        session: the session of the catalog whose metastore holds the lease, asked for at each
            call (a live reload may replace the catalog, and its session with it).
    """

    def __init__(self, session: Callable[[], HiveSession]) -> None:
        self._session = session

    @property
    def session(self) -> HiveSession:
        return self._session()

    @property
    def where(self) -> str:
        return self.session.metastore

    def epochs(self) -> list[int]:
        """The terms recorded, oldest first."""
        with self.session.client("list leader leases") as c:
            names = c.get_tables_by_type(LEASE_DATABASE, LEASE_PREFIX + "*", _VIEW)
        return sorted(e for e in (_epoch_of(n.lower()) for n in names) if e is not None)

    def read(self, epoch: int) -> dict[str, str] | None:
        """A term's parameters (None: no such term)."""
        try:
            with self.session.client("read leader lease") as c:
                return dict(c.get_table(LEASE_DATABASE, lease_name(epoch)).parameters or {})
        except NotFoundError:
            return None

    def claim(self, epoch: int, params: dict[str, str]) -> bool:
        """Create the term ``epoch``; False when it exists already (another daemon took it)."""
        try:
            with self.session.client("claim leader lease") as c:
                c.create_table(lease_view(epoch, params))
        except AlreadyExistsError:
            return False
        # A create that raced another on the database's unique key may fail otherwise (the
        # metastore's own error): whoever's parameters the term holds took it.
        return True

    def renew(self, epoch: int, params: dict[str, str]) -> None:
        """Write the term's parameters (only its holder does: one call, the whole view as it was claimed)."""
        with self.session.client("renew leader lease") as c:
            c.alter_table(LEASE_DATABASE, lease_name(epoch), lease_view(epoch, params))

    def drop(self, epoch: int) -> None:
        """Forget an old term (a view: no data)."""
        try:
            with self.session.client("drop leader lease") as c:
                c.drop_table(LEASE_DATABASE, lease_name(epoch), False)
        except NotFoundError:
            pass
