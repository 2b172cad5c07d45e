"""``catalogd cluster status``: every member of the cluster, pinged now, and the leader lease as
this daemon sees it."""

from __future__ import annotations

import ssl
import threading
import time

from catalogd.client import CatalogClient
from catalogd.config import Config
from catalogd.model import ClusterStatus, MemberStatus
from catalogd.server.leader import Leadership

#: How long a member has to answer a ping, seconds.
PING_TIMEOUT = 2.0


def _ping(address: str, tls: ssl.SSLContext | None) -> str | None:
    """None when the member answers ``ping``; else why not."""
    try:
        with CatalogClient(address, timeout=PING_TIMEOUT, tls_context=tls) as client:
            client.ping()
        return None
    except Exception as e:  # any failure means: down, and why
        return str(e) or type(e).__name__


def cluster_status(config: Config, leadership: Leadership, tls: ssl.SSLContext | None = None) -> ClusterStatus:
    """The members (this one up by definition, the others pinged at once, in parallel) and the lease."""
    lease = leadership.status()
    cluster = config.cluster
    server = config.server
    own = cluster.own(server.port, server.hms_port, server.http_port)
    problems: dict[str, str | None] = {}
    lock = threading.Lock()

    def probe(address: str) -> None:
        problem = _ping(address, tls)
        with lock:
            problems[address] = problem

    others = [m.address for m in cluster.members if m is not own]
    threads = [threading.Thread(target=probe, args=(a,), name="cluster-ping", daemon=True) for a in others]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + PING_TIMEOUT + 1.0
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    members = []
    for member in cluster.members:
        host = f"[{member.host}]" if ":" in member.host else member.host
        with lock:
            problem = None if member is own else problems.get(member.address, f"no answer within {PING_TIMEOUT:g}s")
        members.append(MemberStatus(address=member.address, hms_uri=member.hms_uri,
                                    http_address=f"{host}:{member.http_port}", up=problem is None, problem=problem,
                                    leader=lease.leader == member.address, answering=member is own))
    return ClusterStatus(clustered=bool(cluster.members), members=members, leader=lease.leader,
                         leader_since=lease.since, epoch=lease.epoch, lease_age=lease.lease_age, lease=lease.lease,
                         lease_store=lease.store, problem=lease.problem, leading=lease.leading)
