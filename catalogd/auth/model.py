"""The authorization model: principals, their tokens and their roles per catalog, checked by every surface."""

from __future__ import annotations

import enum
import hashlib
import hmac
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from catalogd.errors import PermissionDeniedError

if TYPE_CHECKING:
    from catalogd.config import Config

__all__ = ["ALL_CATALOGS", "ANONYMOUS", "Authority", "Principal", "Role"]

logger = logging.getLogger(__name__)

#: The catalog of a grant that covers every catalog, and of a daemon-wide operation.
ALL_CATALOGS = "*"
#: What a refresh job's principal is called: ``job:<catalog>.<database>.<table>``.
JOB_PREFIX = "job:"


class Role(enum.IntEnum):
    """What a principal may do on a catalog; each role includes the ones below it."""

    READER = 1
    WRITER = 2
    ADMIN = 3

    @property
    def label(self) -> str:
        """The role as the configuration spells it: ``reader``, ``writer``, ``admin``."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Role:
        return cls[text.strip().upper()]


@dataclass(frozen=True)
class Principal:
    """A caller, once authenticated."""

    name: str
    #: a refresh job's principal is limited to one table's stages: (catalog, database, table)
    job_scope: tuple[str, str, str] | None = None
    #: The highest role it acts with whatever its grants say: an HMS connection whose user is
    #: only asserted by set_ugi gets ``auth.trust-asserted-users`` (None: its grants alone).
    max_role: Role | None = None

    def __str__(self) -> str:
        return self.name


#: What every caller is when auth is off.
ANONYMOUS = Principal("anonymous")


@dataclass(frozen=True)
class _JobToken:
    principal: Principal
    token: str
    expires: float


class Authority:
    """The principals, tokens and grants of one configuration, and the checks made with them.

    Thread-safe: every server thread asks it. ``reload`` swaps in a new configuration's
    principals and grants at once; job tokens minted before stay valid until they expire.

    Args:
        enabled: False: every caller is ``ANONYMOUS`` and every check passes.
        tokens: principal name -> token (principals without a token are left out).
        names: every configured principal's name (those with a token and those without).
        grants: (principal, catalog or "*") -> role.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, enabled: bool, tokens: dict[str, str] | None = None, names: set[str] | None = None,
                 grants: dict[tuple[str, str], Role] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = enabled
        self._tokens = [(name, token.encode()) for name, token in (tokens or {}).items()]
        self._names = set(names or ()) | {name for name, _ in self._tokens}
        self._grants = dict(grants or {})
        self._clock = clock
        self._jobs: dict[bytes, _JobToken] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Config) -> Authority:
        """The authority ``config``'s ``auth`` section describes."""
        auth = config.auth
        tokens = {p.name: p.secret.get_secret_value() for p in auth.principals if p.secret is not None}
        grants: dict[tuple[str, str], Role] = {}
        for grant in auth.grants:
            key = (grant.principal, grant.catalog)
            # Two grants of one principal on one catalog: the higher role counts.
            grants[key] = max(grants.get(key, Role.READER), Role.parse(grant.role))
        return cls(auth.enabled, tokens, {p.name for p in auth.principals}, grants)

    def reload(self, config: Config) -> None:
        """Take ``config``'s principals, tokens and grants (a config reload)."""
        fresh = Authority.from_config(config)
        with self._lock:
            self.enabled = fresh.enabled
            self._tokens = fresh._tokens
            self._names = fresh._names
            self._grants = fresh._grants

    # ------------------------------------------------------------ who

    def authenticate(self, token: str | None) -> Principal:
        """The principal ``token`` belongs to (``ANONYMOUS`` when auth is off).

        Raises:
            PermissionDeniedError: no token, or one that matches no principal and no live
                job token (the message never shows the token).
        """
        if not self.enabled:
            return ANONYMOUS
        if not token:
            raise PermissionDeniedError("no token given: pass --token or set CATALOGD_TOKEN")
        given = token.encode()
        found: str | None = None
        # Every principal's token is compared, in constant time each, so that the time
        # taken tells nothing about which token (or how much of one) matched.
        for name, expected in self._tokens:
            if hmac.compare_digest(given, expected) and found is None:
                found = name
        if found is not None:
            return Principal(found)
        job = self._job(token)
        if job is not None:
            return job.principal
        raise PermissionDeniedError("the token is not valid")

    def principal_named(self, name: str, max_role: Role | None = None) -> Principal | None:
        """The configured principal called ``name`` (HMS endpoint: its proven or set_ugi user), or
        None; ``max_role`` caps what it may do (a user only asserted)."""
        if not self.enabled:
            return ANONYMOUS
        return Principal(name, max_role=max_role) if name in self._names else None

    # ------------------------------------------------------------ what

    def role_of(self, principal: Principal, catalog: str | None) -> Role | None:
        """The highest role ``principal`` holds on ``catalog`` (None: daemon-wide, only "*" grants count)."""
        if principal.job_scope is not None:
            # A refresh job reads anywhere its run needs and writes only its own table's
            # stages (the stage RPCs check the table with ``in_job_scope``).
            return Role.WRITER if catalog == principal.job_scope[0] else Role.READER
        grants = self._grants
        roles = [grants.get((principal.name, ALL_CATALOGS))]
        if catalog is not None and catalog != ALL_CATALOGS:
            roles.append(grants.get((principal.name, catalog)))
        held = [role for role in roles if role is not None]
        if not held:
            return None
        best = max(held)
        return min(best, principal.max_role) if principal.max_role is not None else best

    def allows(self, principal: Principal, catalog: str | None, needed: Role) -> bool:
        """Whether ``principal`` holds ``needed`` (or more) on ``catalog``; always when auth is off."""
        if not self.enabled:
            return True
        role = self.role_of(principal, catalog)
        return role is not None and role >= needed

    def require(self, principal: Principal, catalog: str | None, needed: Role, operation: str) -> None:
        """Pass when ``principal`` holds ``needed`` on ``catalog`` (None: a daemon-wide operation).

        Raises:
            PermissionDeniedError: ``<principal> needs role <needed> on catalog <c> for <operation>``.
        """
        if self.allows(principal, catalog, needed):
            return
        where = ALL_CATALOGS if catalog is None else catalog
        raise PermissionDeniedError(f"{principal.name} needs role {needed.label} on catalog {where} for {operation}")

    @staticmethod
    def in_job_scope(principal: Principal, catalog: str, database: str, table: str) -> bool:
        """Whether a stage of ``catalog.database.table`` is one ``principal`` may touch (any, unless it is a job's)."""
        if principal.job_scope is None:
            return True
        return principal.job_scope == (catalog.lower(), database.lower(), table.lower())

    # ------------------------------------------------------------ refresh jobs

    def mint_job_token(self, catalog: str, database: str, table: str, ttl: float) -> str:
        """A token good for ``ttl`` seconds, whose principal may only use ``catalog.database.table``'s stages."""
        token = secrets.token_urlsafe(32)
        scope = (catalog.lower(), database.lower(), table.lower())
        principal = Principal(f"{JOB_PREFIX}{'.'.join(scope)}", job_scope=scope)
        with self._lock:
            now = self._clock()
            for key in [k for k, job in self._jobs.items() if job.expires <= now]:
                del self._jobs[key]
            self._jobs[_digest(token)] = _JobToken(principal, token, now + ttl)
        return token

    def revoke_job_token(self, token: str) -> None:
        """Make a minted token invalid at once (its run ended); unknown tokens are ignored."""
        with self._lock:
            self._jobs.pop(_digest(token), None)

    def _job(self, token: str) -> _JobToken | None:
        # Looked up by the token's hash, then compared in constant time: a dict lookup by the
        # token itself would take a time that depends on the token's bytes.
        with self._lock:
            job = self._jobs.get(_digest(token))
            if job is None or not hmac.compare_digest(job.token.encode(), token.encode()):
                return None
            if job.expires <= self._clock():
                del self._jobs[_digest(token)]
                return None
            return job


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()
