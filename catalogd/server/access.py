"""Access checks of the Thrift API and HTTP: a token -> a principal, a role on a catalog, the audit line.

One place for both surfaces, so that they refuse the same callers with the same words. A refresh
job's minted token may read, and write only its own table's stages (``JOB_WRITES``), whatever
role its principal holds on its catalog.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from catalogd.auth.audit import AuditLog
from catalogd.auth.model import ANONYMOUS, Authority, Principal, Role
from catalogd.auth.operations import JOB_STAGE_RPCS
from catalogd.auth.throttle import THROTTLED, Throttle, claim_of_token
from catalogd.errors import PermissionDeniedError

__all__ = ["JOB_WRITES", "NOT_AUTHENTICATED", "Access"]

logger = logging.getLogger(__name__)

#: What a refresh job's token may write, on its own table only: its stages, and the partition it
#: drops when a partition refresh finds no rows.
JOB_WRITES = JOB_STAGE_RPCS | {"dropPartition"}
#: What a call on a connection that never authenticated gets.
NOT_AUTHENTICATED = "authenticate first: no token given (pass --token or set CATALOGD_TOKEN)"


class Access:
    """The daemon's principals and grants (an ``Authority``) and its audit log, as the API servers use them.

    Args:
        authority: who may do what; None: auth off.
        audit: where writes and denials go; None: nowhere.
        default_catalog: the catalog a request without one means.
        catalogs: every catalog's name (for calls that are not about one catalog).
    """

    def __init__(self, authority: Authority | None, audit: AuditLog | None, default_catalog: Callable[[], str],
                 catalogs: Callable[[], Iterable[str]], throttle: Throttle | None = None) -> None:
        self.authority = authority
        self.audit = audit
        #: Failed authentications slow the next tries of the same token from the same address (None: never).
        self.throttle = throttle
        self._default_catalog = default_catalog
        self._catalogs = catalogs

    @property
    def enabled(self) -> bool:
        return self.authority is not None and self.authority.enabled

    def authenticate(self, token: str | None, client: str = "local", throttled: bool = True) -> Principal:
        """The principal of ``token`` (``ANONYMOUS`` with auth off); PermissionDeniedError otherwise.

        ``client`` (``host:port``): while this very token from its address is in a back-off for
        failed authentications, it is not even checked (see ``catalogd.auth.throttle``); other
        tokens' failures, from the same address or any other, never refuse it.
        ``throttled``: False for a token proven before (a console session's, checked again at
        each page): it is neither held back nor counted as a guess.
        """
        if self.authority is None or not self.authority.enabled:
            return ANONYMOUS
        throttle = self.throttle if throttled and token else None  # no token is no guess
        claim = claim_of_token(token) if throttle is not None and token else None
        if throttle is not None and throttle.wait(client, claim) > 0:
            raise PermissionDeniedError(f"{THROTTLED} (at most {throttle.max_delay:g}s)")
        try:
            principal = self.authority.authenticate(token)
        except PermissionDeniedError:
            if throttle is not None:
                throttle.failed(client, claim)
            raise
        if throttle is not None:
            throttle.succeeded(client, claim)
        return principal

    def catalog(self, name: str | None) -> str:
        """The catalog a request means: ``name``, or the default catalog when it gives none."""
        return (name or self._default_catalog()).lower()

    def require(self, principal: Principal, catalog: str | None, needed: Role, operation: str,
                job_write: bool = False) -> None:
        """Pass when ``principal`` holds ``needed`` on ``catalog`` (None: daemon-wide).

        ``job_write``: the operation is one a refresh job may make on its own table (the caller
        has checked the table); any other write is refused to a job's token.
        """
        if not self.enabled:
            return
        assert self.authority is not None
        if principal.job_scope is not None and needed > Role.READER and not job_write:
            raise PermissionDeniedError(f"{principal.name} is a refresh job's token: it may write only the stages of "
                                        f"{'.'.join(principal.job_scope)}, not {operation}")
        self.authority.require(principal, catalog, needed, operation)

    def require_any(self, principal: Principal, needed: Role, operation: str) -> None:
        """Pass when ``principal`` holds ``needed`` on at least one catalog (calls about no one catalog)."""
        if not self.enabled:
            return
        assert self.authority is not None
        if principal.job_scope is not None and needed > Role.READER:
            self.require(principal, None, needed, operation)
        if any(self.authority.allows(principal, name, needed) for name in self._catalogs()):
            return
        self.authority.require(principal, None, needed, operation)

    def allows(self, principal: Principal, catalog: str, needed: Role) -> bool:
        return not self.enabled or (self.authority is not None and self.authority.allows(principal, catalog, needed))

    def in_job_scope(self, principal: Principal, catalog: str, database: str, table: str) -> bool:
        """Whether ``principal`` may touch ``catalog.database.table`` (any table unless it is a job's)."""
        return Authority.in_job_scope(principal, catalog, database, table)

    def record(self, *, principal: str | None, surface: str, client: str, operation: str, object: str | None,
               outcome: str, detail: str | None = None) -> None:
        """One audit line (nothing without an audit log); callers pass names and messages, never a token."""
        if self.audit is not None:
            self.audit.record(principal=principal, surface=surface, client=client, operation=operation,
                              object=object, outcome=outcome, detail=detail)
