"""Caches agree across the members of a cluster: every invalidation is pushed to the other members.

A write through one daemon invalidates its own metadata cache at once (``CachingHiveClient``);
this module carries the same invalidation to every other member of ``cluster.members``, whose
caches then drop what they held of that scope and refuse answers fetched before it (the
cache's tokens), so their next read asks the shared metastore.

Transport: ``POST /cluster/invalidations`` on each peer's HTTP port, a small JSON body signed
with HMAC-SHA256 under a key derived from the deployment's stage key (``staging.secret``,
which every member must share). A peer trusts nothing else: a body whose signature does not
verify, that is older or newer than :data:`MAX_SKEW` by its sender's clock, or that is not
the expected shape is refused (401 or 400) and changes nothing. The worst a replayed message
can do is make a peer forget entries it would have served, never serve something else.

Delivery: one sender thread per peer. Pending scopes are coalesced; a failed send is retried
with a growing pause for as long as it can matter: until ``cache.ttl`` has passed since the
write, when every entry the peer could still hold from before it has expired anyway. The write
that invalidated waits, before its caller learns it is done, until every peer has taken the
invalidation or failed to, for at most ``cluster.invalidation-wait``; a peer already known not
to answer is not waited for. So a writer that dies right after its acknowledgement has told its
peers already, and a peer that hangs (SIGSTOP) delays a write by at most that wait, and only
until its first send fails. What is guaranteed:

* a peer that answers has the invalidation before the write is acknowledged (one round trip,
  milliseconds; or within the wait);
* a peer that was down starts with an empty cache (nothing stale to drop);
* a peer that is cut off, hangs or rejects the message serves the old answer at most
  ``cache.ttl`` after the write, as for a write made behind catalogd's back.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from catalogd.errors import InvalidArgumentError, PermissionDeniedError

if TYPE_CHECKING:
    from catalogd.config import Config, TlsConfig
    from catalogd.config.models import ClusterMember

logger = logging.getLogger(__name__)

__all__ = ["INVALIDATIONS", "MAX_SKEW", "SIGNATURE_HEADER", "CachePeers", "invalidation_key", "sign"]

#: The HTTP route a member receives invalidations on.
INVALIDATIONS = "/cluster/invalidations"
#: The header carrying ``v1=<hex HMAC-SHA256 of the body>``.
SIGNATURE_HEADER = "X-Catalogd-Signature"
#: How far a message's send time may be from the receiver's clock (replays outside it are refused).
MAX_SKEW = 60.0
#: The most scopes in one message (more are sent in several).
MAX_SCOPES = 500
#: The longest name part accepted in a scope (HMS names are at most 128 characters).
_MAX_NAME = 256
#: Pending scopes for one peer beyond which they are folded into whole-catalog invalidations.
_MAX_PENDING = 10_000
#: Seconds a peer has to answer one message.
_TIMEOUT = 2.0
_LABEL = b"catalogd cache invalidation v1"

#: (catalog, database, table) as ``MetadataCache.invalidate`` takes them.
Scope = tuple[str, str, str]
#: Applies one invalidation received from a peer (without passing it on).
Apply = Callable[[str, str, str], None]


def invalidation_key(stage_key: bytes) -> bytes:
    """The signing key of invalidations: derived from the stage key, never the stage key itself."""
    return hmac.new(stage_key, _LABEL, hashlib.sha256).digest()


def sign(key: bytes, body: bytes) -> str:
    """The value of :data:`SIGNATURE_HEADER` for ``body``."""
    return "v1=" + hmac.new(key, body, hashlib.sha256).hexdigest()


def encode(sender: str, scopes: Iterable[Scope], sent: float) -> bytes:
    """A message body: who sent it, when (wall clock), and the scopes to invalidate."""
    return json.dumps({"v": 1, "from": sender, "sent": sent, "scopes": [list(s) for s in scopes]},
                      separators=(",", ":")).encode()


def decode(body: bytes, now: float) -> tuple[str, list[Scope]]:
    """The sender and scopes of a verified body.

    Raises:
        InvalidArgumentError: not a message of this version and shape, or sent too long ago (or ahead).
    """
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise InvalidArgumentError(f"not JSON: {e}") from None
    if not isinstance(message, dict) or message.get("v") != 1:
        raise InvalidArgumentError("not a version 1 invalidation")
    sender, sent, scopes = message.get("from"), message.get("sent"), message.get("scopes")
    if not isinstance(sender, str) or not isinstance(sent, int | float) or not isinstance(scopes, list):
        raise InvalidArgumentError("an invalidation needs from, sent and scopes")
    if abs(now - float(sent)) > MAX_SKEW:
        raise InvalidArgumentError(f"sent {now - float(sent):.0f}s away from this member's clock (at most "
                                   f"{MAX_SKEW:.0f}s): a replay, or clocks apart")
    if len(scopes) > MAX_SCOPES:
        raise InvalidArgumentError(f"more than {MAX_SCOPES} scopes")
    out: list[Scope] = []
    for scope in scopes:
        if (not isinstance(scope, list) or len(scope) != 3
                or not all(isinstance(p, str) and len(p) <= _MAX_NAME for p in scope) or not scope[0]):
            raise InvalidArgumentError("a scope is [catalog, database, table] (names)")
        out.append((scope[0], scope[1], scope[2]))
    return sender, out


@dataclass
class _Counts:
    sent: int = 0
    failed: int = 0
    dropped: int = 0
    received: int = 0
    rejected: int = 0
    #: Writes acknowledged before a peer had taken their invalidation (cluster.invalidation-wait passed).
    unconfirmed: int = 0


@dataclass
class _Pending:
    """What one peer has still to be told: scope -> when it was first pending (monotonic)."""

    scopes: dict[Scope, float] = field(default_factory=dict)


def _local_addresses() -> set[str]:
    names = {socket.gethostname(), socket.getfqdn(), "localhost"}
    addresses: set[str] = set()
    for name in names:
        try:
            addresses.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
        except OSError:
            continue
    return addresses


def _is_me(member: ClusterMember, config: Config) -> bool:
    """Whether ``member`` is this daemon: its three ports, on a host that is this machine."""
    server = config.server
    if (member.port, member.hms_port, member.http_port) != (server.port, server.hms_port, server.http_port):
        return False
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(member.host, None)}
    except OSError:
        return False  # unresolvable: sent to, and then ignored by its sender id if it is this one
    local = _local_addresses() | {server.host}
    return any(a in local or a.startswith("127.") or a == "::1" for a in addresses)


class _Link:
    """The sender thread of one peer."""

    def __init__(self, owner: CachePeers, member: ClusterMember) -> None:
        self.owner = owner
        self.member = member
        self.name = f"{member.host}:{member.http_port}"
        self.pending = _Pending()
        lock = threading.Lock()
        #: Wakes the sender (new scopes, stop).
        self.wake = threading.Condition(lock)
        #: Wakes the writers waiting for their invalidation to be sent (or to have failed).
        self.settled_cv = threading.Condition(lock)
        #: Sequence numbers: of the last ``add``, and the last one sent or failed to be.
        self.added = 0
        self.settled = 0
        self.stopping = False
        self.connection: http.client.HTTPConnection | None = None
        self.complained = False
        self.thread = threading.Thread(target=self._run, name=f"cache-peer-{self.name}", daemon=True)

    def add(self, scopes: Iterable[Scope], now: float) -> int:
        """Queue ``scopes`` for the peer; the sequence number to ``wait`` for."""
        with self.wake:
            self.added += 1
            for scope in scopes:
                self.pending.scopes.setdefault(scope, now)
            if len(self.pending.scopes) > _MAX_PENDING:
                # Too many to name: whole catalogs (their first time kept, so the retry window holds).
                folded: dict[Scope, float] = {}
                for (catalog, _, _), since in self.pending.scopes.items():
                    key = (catalog, "", "")
                    folded[key] = min(since, folded.get(key, since))
                self.pending.scopes = folded
            self.wake.notify()
            return self.added

    def wait(self, seq: int, deadline: float) -> bool:
        """Until the message carrying add ``seq`` was sent or failed; False: ``deadline`` passed first."""
        with self.settled_cv:
            while self.settled < seq and not self.stopping and self.thread.is_alive():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.settled_cv.wait(remaining)
            return True

    def _settle(self, seq: int | None) -> None:
        if seq is not None:
            with self.settled_cv:
                self.settled = max(self.settled, seq)
                self.settled_cv.notify_all()

    def stop(self) -> None:
        with self.wake:
            self.stopping = True
            self.wake.notify()
            self.settled_cv.notify_all()

    def _connect(self) -> http.client.HTTPConnection:
        if self.connection is None:
            context = self.owner.ssl_context
            if context is not None:
                self.connection = http.client.HTTPSConnection(self.member.host, self.member.http_port,
                                                              timeout=_TIMEOUT, context=context)
            else:
                self.connection = http.client.HTTPConnection(self.member.host, self.member.http_port,
                                                             timeout=_TIMEOUT)
        return self.connection

    def _post(self, body: bytes) -> int:
        """The peer's status for one message (reconnecting once when a kept connection went stale)."""
        headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(self.owner.key, body)}
        for attempt in (1, 2):
            connection = self._connect()
            try:
                connection.request("POST", INVALIDATIONS, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                return response.status
            except (OSError, http.client.HTTPException):
                connection.close()
                self.connection = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _run(self) -> None:
        pause = 0.0
        while True:
            with self.wake:
                if pause:
                    self.wake.wait(pause)
                while not self.pending.scopes and not self.stopping:
                    self.wake.wait()
                if self.stopping:
                    return
                now = time.monotonic()
                # Past cache.ttl since the write, every entry the peer held from before it has expired.
                window = self.owner.window
                expired = [s for s, since in self.pending.scopes.items() if now - since > window]
                for scope in expired:
                    del self.pending.scopes[scope]
                self.owner.count("dropped", len(expired))
                batch = dict(list(self.pending.scopes.items())[:MAX_SCOPES])
                for scope in batch:
                    del self.pending.scopes[scope]
                # Every add so far is in this message (or expired): its outcome settles them.
                taken = None if self.pending.scopes else self.added
            if not batch:
                self._settle(taken)
                pause = 0.0
                continue
            body = encode(self.owner.sender, batch, time.time())
            try:
                status = self._post(body)
                problem = None if status // 100 == 2 else f"answered HTTP {status}"
            except (OSError, http.client.HTTPException) as e:
                problem = str(e) or type(e).__name__
            # Sent, or not now: either way a writer waits no longer (a failure is retried below,
            # for cache.ttl, as before).
            self._settle(taken)
            if problem is None:
                self.owner.count("sent", 1)
                if self.complained:
                    logger.info("cache invalidations reach member %s again", self.name)
                    self.complained = False
                pause = 0.0
                continue
            if not self.complained:
                # First: from now on writes do not wait for this member (announce reads it).
                self.complained = True
                logger.warning("cache invalidations do not reach member %s (%s): retried for cache.ttl (%gs), "
                               "after which its cache has expired them", self.name, problem, self.owner.window)
            self.owner.count("failed", 1)
            with self.wake:
                for scope, since in batch.items():
                    self.pending.scopes.setdefault(scope, since)
            pause = min(1.0, max(0.05, pause * 2))


class CachePeers:
    """The cluster's cache coherence for one daemon: sends its invalidations, applies its peers'.

    Args:
        config: the daemon's config (``cluster.members``, ``server``, ``cache.ttl``).
        stage_key: the deployment's stage key (the signing key is derived from it).
        apply: invalidates one scope in this daemon's cache without passing it on.
        known: this daemon's catalog names (a scope of another catalog is ignored).
        tls: the server's TLS settings: peers are then reached over HTTPS.
    """

    def __init__(self, config: Config, stage_key: bytes, apply: Apply, known: Callable[[], Iterable[str]],
                 tls: TlsConfig | None = None) -> None:
        self.key = invalidation_key(stage_key)
        self.apply = apply
        self.known = known
        #: This daemon's id in messages: a message of its own (itself listed under another name) is ignored.
        self.sender = f"{socket.gethostname()}:{config.server.http_port}:{os.getpid()}:{os.urandom(4).hex()}"
        self.window = max(1.0, config.cache.ttl.total_seconds())
        self.wait = config.cluster.invalidation_wait.total_seconds()
        self.ssl_context: ssl.SSLContext | None = None
        if tls is not None:
            # Peers show the deployment's certificate: trusted through the system's CAs, this
            # daemon's own chain or the client CA. The HMAC, not TLS, is what a peer trusts.
            context = ssl.create_default_context()
            for trusted in (tls.cert, tls.client_ca):
                if trusted is not None:
                    context.load_verify_locations(cafile=str(trusted))
            # This daemon's certificate, for peers that ask for one (mutual TLS).
            context.load_cert_chain(str(tls.cert), str(tls.key))
            self.ssl_context = context
        self._lock = threading.Lock()
        self._counts = _Counts()
        self.links = [_Link(self, m) for m in config.cluster.members if not _is_me(m, config)]

    @property
    def peers(self) -> list[str]:
        return [link.name for link in self.links]

    def start(self) -> None:
        for link in self.links:
            link.thread.start()

    def stop(self) -> None:
        for link in self.links:
            link.stop()
        for link in self.links:
            if link.thread.is_alive():
                link.thread.join(_TIMEOUT + 1.0)
            if link.connection is not None:
                link.connection.close()

    def count(self, what: str, n: int) -> None:
        if n:
            with self._lock:
                setattr(self._counts, what, getattr(self._counts, what) + n)

    def announce(self, catalog: str, database: str, table: str) -> None:
        """Pass a local invalidation on to every peer: sent by their threads, waited for up to
        ``cluster.invalidation-wait`` (peers known not to answer are not waited for)."""
        now = time.monotonic()
        queued = [(link, link.add([(catalog, database, table)], now)) for link in self.links]
        if self.wait <= 0:
            return
        deadline = now + self.wait
        for link, seq in queued:
            if not link.complained and not link.wait(seq, deadline):
                self.count("unconfirmed", 1)

    def receive(self, body: bytes, signature: str | None) -> int:
        """Apply a peer's message; the number of scopes invalidated.

        Raises:
            PermissionDeniedError: the signature is missing or wrong (another key, or forged).
            InvalidArgumentError: a signed body of the wrong shape or time.
        """
        expected = sign(self.key, body)
        if signature is None or not hmac.compare_digest(expected.encode(), signature.strip().encode()):
            self.count("rejected", 1)
            raise PermissionDeniedError(f"invalidation not signed with this deployment's key ({SIGNATURE_HEADER}): "
                                        "members must share staging.secret")
        try:
            sender, scopes = decode(body, time.time())
        except InvalidArgumentError:
            self.count("rejected", 1)
            raise
        if sender == self.sender:
            return 0
        known = set(self.known())
        applied = 0
        for catalog, database, table in scopes:
            if catalog in known:
                self.apply(catalog, database, table)
                applied += 1
        self.count("received", 1)
        return applied

    def stats(self) -> dict[str, Any]:
        """Messages sent, failed (retried), scopes dropped after the window, received, rejected; peers' backlog."""
        with self._lock:
            counts = dict(vars(self._counts))
        pending = 0
        for link in self.links:
            with link.wake:
                pending += len(link.pending.scopes)
        return {**counts, "pending": pending, "peers": len(self.links)}
