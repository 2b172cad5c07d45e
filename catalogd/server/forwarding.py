"""A member that does not lead sends dynamic-table changes to the one that does (``LeaderCalls``).

Create, alter, drop, refresh and DYNAMIC TABLE statements change what the leader drives, so they
run there: a refresh asked of any member runs once, and its job is the leader's (readable through
every member: ``get_job`` asks the leader for a job its member does not know). The caller was
already checked by the member it called; the member calls the leader as the first principal the
config grants ``admin`` on every catalog (auth on; none: the leader refuses, and says so), over
TLS with the member's own certificate when the daemon serves TLS.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable
from typing import TypeVar

from catalogd import wire
from catalogd.client import LONG_POLL_MARGIN, CatalogClient
from catalogd.config import Config
from catalogd.errors import ServerUnavailableError
from catalogd.gen.catalogd_thrift import CatalogService
from catalogd.model import DynamicTable, DynamicTableChange, DynamicTableSpec, RefreshJob, StatementResult
from catalogd.names import ObjectPath
from catalogd.server.leader import Leadership
from catalogd.tls import client_context

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: How long a call waits for the cluster to have a leader that answers, seconds (a takeover takes < 10 s).
LEADER_WAIT = 20.0


def forward_token(config: Config) -> str | None:
    """The token of the first principal granted ``admin`` on ``*`` (None: auth off, or no such principal)."""
    auth = config.auth
    if not auth.enabled:
        return None
    admins = {g.principal for g in auth.grants if g.catalog == "*" and g.role == "admin"}
    for principal in auth.principals:
        if principal.name in admins and principal.secret is not None:
            return principal.secret.get_secret_value()
    return None


def _tls(config: Config) -> ssl.SSLContext | None:
    tls = config.server.tls
    if tls is None:
        return None
    # The members share a CA: the one that signs client certificates, else the system's.
    return client_context(tls.client_ca, tls.cert, tls.key)


class LeaderForwarding:
    """``LeaderCalls`` over the leader's Thrift API.

    Args:
        leadership: who leads (the address the lease names: ``host:port`` of ``cluster.members``).
        config: the daemon's config (the token and TLS the calls use).
        own_address: where this daemon's Thrift API answers (when the lease names this member,
            which has not started acting yet, the call waits for that and goes there).
    """

    def __init__(self, leadership: Leadership, config: Config, own_address: Callable[[], str],
                 wait: float = LEADER_WAIT) -> None:
        self.leadership = leadership
        self.own_address = own_address
        self.wait = wait
        self._token = forward_token(config)
        #: What calls to other members are made over (None: no TLS).
        self.tls = _tls(config)
        #: Calls forwarded, for /metrics.
        self.forwarded = 0

    def _leader_address(self, deadline: float) -> str:
        while True:
            status = self.leadership.status()
            if status.leader == self.leadership.member:
                if self.leadership.is_leader():
                    return self.own_address()
            elif status.leader is not None:
                return status.leader
            if time.monotonic() >= deadline:
                raise ServerUnavailableError(
                    f"the cluster has no leader to run this (this member {self.leadership.member} does not lead"
                    f"{'; lease: ' + status.problem if status.problem else ''}); try again")
            time.sleep(0.2)

    def _call(self, what: str, fn: Callable[[CatalogService.Client], T], idempotent: bool,
              reply_timeout: float | None = None) -> T:
        deadline = time.monotonic() + self.wait
        while True:
            address = self._leader_address(deadline)
            self.forwarded += 1
            logger.debug("forwarding %s to the leader %s", what, address)
            try:
                with CatalogClient(address, timeout=120.0, token=self._token, tls_context=self.tls) as client:
                    return client._call(fn, idempotent=idempotent, reply_timeout=reply_timeout)
            except ServerUnavailableError:
                # The lease still names a leader that died; a read may wait for the next one.
                if not idempotent or time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def create(self, spec: DynamicTableSpec, ignore_if_exists: bool) -> DynamicTable:
        thrift_spec = wire.dynamic_spec_to_thrift(spec)
        return wire.dynamic_table_from_thrift(
            self._call("create", lambda c: c.createDynamicTable(thrift_spec, ignore_if_exists), False))

    def alter(self, path: ObjectPath, change: DynamicTableChange) -> DynamicTable:
        p, ch = wire.object_to_thrift(path), wire.dynamic_change_to_thrift(change)
        return wire.dynamic_table_from_thrift(self._call("alter", lambda c: c.alterDynamicTable(p, ch), False))

    def drop(self, path: ObjectPath, ignore_if_not_exists: bool) -> None:
        p = wire.object_to_thrift(path)
        self._call("drop", lambda c: c.dropDynamicTable(p, ignore_if_not_exists), False)

    def refresh(self, tables: list[str], schedule_time: str | None, partition: dict[str, str] | None,
                configuration: dict[str, str] | None, trigger: str) -> RefreshJob:
        request = wire.refresh_request_to_thrift(tables, schedule_time, dict(partition or {}),
                                                 dict(configuration or {}), trigger)
        return wire.refresh_job_from_thrift(self._call("refresh", lambda c: c.refreshDynamicTables(request), False))

    def get_job(self, job_id: str, wait: float = 0.0) -> RefreshJob:
        """The leader's job; ``wait`` > 0: the leader's long poll (see ``DynamicTables.get_job``)."""
        return wire.refresh_job_from_thrift(self._call("get job", lambda c: c.getRefreshJob(job_id, wait), True,
                                                       reply_timeout=wait + LONG_POLL_MARGIN if wait > 0 else None))

    def execute(self, statement: str) -> StatementResult:
        return wire.statement_result_from_thrift(
            self._call("statement", lambda c: c.executeStatement(statement), False))

