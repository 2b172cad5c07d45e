"""The daemon's Prometheus metrics: RPC counts and timings, dynamic-table lag, the HMS endpoint, the cache."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from catalogd.server.leader import LeaderStatus

#: (table, lag in seconds or None when never refreshed, within target or None)
Lags = Callable[[], list[tuple[str, float | None, bool | None]]]
#: The HMS endpoint's calls answered so far: (method, outcome) -> count.
HmsCalls = Callable[[], dict[tuple[str, str], int]]
#: The HMS endpoint's connections: open, busy, accepted, refused.
HmsConnections = Callable[[], dict[str, int]]
#: The HMS endpoint's view parser: ``ViewParser.stats()``.
HmsViews = Callable[[], dict[str, int]]
#: The failed-authentication back-off's ``Throttle.stats()``.
AuthStats = Callable[[], dict[str, int]]
#: The metadata cache's ``MetadataCache.stats()``.
CacheStats = Callable[[], dict[str, Any]]
#: The cluster's cache invalidations: ``CachePeers.stats()``.
PeerStats = Callable[[], dict[str, int]]
#: What this member knows of the cluster's leadership (``Leadership.status``).
LeaderInfo = Callable[[], LeaderStatus]
#: Lines a client can cause, by kind: (events, not logged one by one) (``catalogd.ratelog.counts``).
LogCounts = Callable[[], dict[str, tuple[int, int]]]


class Metrics:
    """Prometheus metrics of one daemon (its own registry, so tests can run several)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.requests = Counter(
            "catalogd_rpc_requests", "Thrift RPCs served, by RPC and outcome (ok or the error kind)",
            ["rpc", "outcome"], registry=self.registry,
        )
        self.latency = Histogram(
            "catalogd_rpc_duration_seconds", "Time to serve one Thrift RPC", ["rpc"], registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )

    def watch_dynamic_tables(self, lags: Lags) -> None:
        """Export each dynamic table's freshness lag (read at every scrape)."""
        self.registry.register(_LagCollector(lags))

    def watch_refresh_queue(self, stats: Callable[[], dict[str, int]]) -> None:
        """Export the refresh runs waiting for a worker and the requests a full queue refused (read at every scrape)."""
        self.registry.register(_RefreshQueueCollector(stats))

    def watch_cache(self, stats: CacheStats) -> None:
        """Export the metadata cache's hits, misses, size and evictions (read at every scrape)."""
        self.registry.register(_CacheCollector(stats))

    def watch_cache_peers(self, stats: PeerStats) -> None:
        """Export the invalidations sent to and received from the other members (read at every scrape)."""
        self.registry.register(_PeerCollector(stats))

    def watch_leader(self, status: LeaderInfo, forwarded: Callable[[], int] | None = None) -> None:
        """Export whether this member leads, the term, the lease's age and the takeovers (read at every scrape)."""
        self.registry.register(_LeaderCollector(status, forwarded))

    def watch_janitor(self, passes: Callable[[], int]) -> None:
        """Export the staging janitor's completed passes (read at every scrape)."""
        self.registry.register(_JanitorCollector(passes))

    def watch_bounded_logs(self, counts: LogCounts) -> None:
        """Export the refusals and failures logged at a bounded rate, and the lines left out (read at every scrape)."""
        self.registry.register(_LogCollector(counts))

    def watch_auth(self, stats: AuthStats) -> None:
        """Export failed authentications and the back-off they caused (read at every scrape)."""
        self.registry.register(_AuthCollector(stats))

    def watch_hms_endpoint(self, calls: HmsCalls, connections: HmsConnections,
                           views: HmsViews | None = None) -> None:
        """Export the HMS endpoint's call counts, connections and view parses (read at every scrape)."""
        self.registry.register(_HmsCollector(calls, connections))
        if views is not None:
            self.registry.register(_ViewCollector(views))


class _JanitorCollector(Collector):
    def __init__(self, passes: Callable[[], int]) -> None:
        self.passes = passes

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily("catalogd_janitor_passes", "Staging janitor passes run to their end (a "
                                  "cluster member that does not lead runs none)", value=self.passes())


class _LogCollector(Collector):
    def __init__(self, counts: LogCounts) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        counts = sorted(self.counts().items())
        events = CounterMetricFamily("catalogd_logged_events", "Events a client can cause that the log tells at a "
                                     "bounded rate (refused peer messages, failed TLS handshakes, ...), by kind",
                                     labels=["kind"])
        suppressed = CounterMetricFamily("catalogd_log_lines_suppressed", "Of those, the events not written as a "
                                         "line of their own (counted in the next line of their kind)",
                                         labels=["kind"])
        for kind, (n, left_out) in counts:
            events.add_metric([kind], n)
            suppressed.add_metric([kind], left_out)
        yield events
        yield suppressed


class _AuthCollector(Collector):
    def __init__(self, stats: AuthStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self.stats()
        yield CounterMetricFamily("catalogd_auth_failures", "Failed authentications on every port (tokens, SASL, "
                                  "certificates)", value=stats["failures"])
        yield CounterMetricFamily("catalogd_auth_throttled", "Authentication attempts refused unchecked during a "
                                  "back-off", value=stats["refused"])
        yield CounterMetricFamily("catalogd_auth_lockouts", "Back-offs begun (a credential from an address passed "
                                  "its free failed attempts)", value=stats["lockouts"])
        yield GaugeMetricFamily("catalogd_auth_locked", "Credentials (per address) in a back-off now",
                                value=stats["locked"])


class _HmsCollector(Collector):
    def __init__(self, calls: HmsCalls, connections: HmsConnections) -> None:
        self.calls = calls
        self.connections = connections

    def collect(self) -> Iterator[Metric]:
        calls = CounterMetricFamily("catalogd_hms_calls", "HMS endpoint calls answered, by method and outcome "
                                    "(ok, refused: an HMS exception, error: an internal error)",
                                    labels=["method", "outcome"])
        for (method, outcome), count in sorted(self.calls().items()):
            calls.add_metric([method, outcome], count)
        yield calls
        stats = self.connections()
        yield GaugeMetricFamily("catalogd_hms_connections_open", "HMS endpoint connections open", stats["open"])
        yield GaugeMetricFamily("catalogd_hms_connections_busy", "HMS endpoint connections with a call running",
                                stats["busy"])
        yield CounterMetricFamily("catalogd_hms_connections_refused", "HMS endpoint connections refused at the cap",
                                  stats["refused"])


class _LeaderCollector(Collector):
    def __init__(self, status: LeaderInfo, forwarded: Callable[[], int] | None) -> None:
        self.status = status
        self.forwarded = forwarded

    def collect(self) -> Iterator[Metric]:
        status = self.status()
        yield GaugeMetricFamily("catalogd_leader", "1 while this daemon does the background work (janitor, "
                                "dynamic tables): the cluster's leader, or a daemon alone; else 0",
                                1.0 if status.leading else 0.0)
        yield GaugeMetricFamily("catalogd_leader_epoch", "The latest leadership term this member saw (each "
                                "takeover adds one; 0 outside a cluster)", status.epoch)
        if status.lease_age is not None:
            yield GaugeMetricFamily("catalogd_leader_lease_age_seconds",
                                    "Seconds since the leader's lease was last renewed, as this member saw it",
                                    status.lease_age)
        yield CounterMetricFamily("catalogd_leader_acquired", "Terms this member took (it became the leader)",
                                  status.acquired)
        yield CounterMetricFamily("catalogd_leader_lost", "Times this member stopped leading (a newer term, or "
                                  "its lease lapsed)", status.lost)
        if self.forwarded is not None:
            yield CounterMetricFamily("catalogd_leader_forwarded_calls",
                                      "Dynamic-table calls this member sent to the leader", self.forwarded())


class _ViewCollector(Collector):
    def __init__(self, stats: HmsViews) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self.stats()
        yield CounterMetricFamily("catalogd_hms_view_parses", "View texts the HMS endpoint parsed (cache misses)",
                                  stats["parses"])
        yield CounterMetricFamily("catalogd_hms_view_worker_parses",
                                  "View texts parsed in a worker process (the longer ones)", stats["worker_parses"])
        yield CounterMetricFamily("catalogd_hms_view_cache_hits", "View text rewrites answered from the cache",
                                  stats["hits"])
        yield CounterMetricFamily("catalogd_hms_view_parse_timeouts",
                                  "View text parses given up at server.hms-view-parse-timeout", stats["timeouts"])
        yield GaugeMetricFamily("catalogd_hms_view_cache_entries", "View text rewrites kept", stats["entries"])
        yield GaugeMetricFamily("catalogd_hms_view_cache_bytes", "Characters of the view text rewrites kept",
                                stats["bytes"])


class _CacheCollector(Collector):
    def __init__(self, stats: CacheStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self.stats()
        per = stats["catalogs"]
        # Counter families add the _total suffix: catalogd_cache_hits_total & co.
        hits = CounterMetricFamily("catalogd_cache_hits", "Metadata cache lookups answered from the cache",
                                   labels=["catalog"])
        misses = CounterMetricFamily("catalogd_cache_misses", "Metadata cache lookups that went to the metastore",
                                     labels=["catalog"])
        for name, counts in per.items():
            hits.add_metric([name], counts["hits"])
            misses.add_metric([name], counts["misses"])
        yield hits
        yield misses
        yield GaugeMetricFamily("catalogd_cache_entries", "Answers held in the metadata cache", stats["entries"])
        yield GaugeMetricFamily("catalogd_cache_bytes", "Bytes held in the metadata cache (encoded answers)",
                                stats["bytes"])
        yield CounterMetricFamily("catalogd_cache_evictions", "Answers evicted from the metadata cache to stay "
                                  "within cache.max-entries and cache.max-bytes", stats["evictions"])


class _PeerCollector(Collector):
    def __init__(self, stats: PeerStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self.stats()
        messages = CounterMetricFamily("catalogd_cache_invalidations",
                                       "Cache invalidation messages between the members of the cluster, by "
                                       "outcome: sent, failed (retried), received, rejected (bad signature "
                                       "or shape)", labels=["outcome"])
        for outcome in ("sent", "failed", "received", "rejected"):
            messages.add_metric([outcome], stats[outcome])
        yield messages
        yield CounterMetricFamily("catalogd_cache_invalidations_dropped",
                                  "Invalidations a member could not be told within cache.ttl of the write "
                                  "(its entries from before the write had expired by then)", stats["dropped"])
        yield GaugeMetricFamily("catalogd_cache_invalidations_pending",
                                "Invalidations waiting to reach members that do not answer", stats["pending"])
        yield CounterMetricFamily("catalogd_cache_invalidations_unconfirmed",
                                  "Writes acknowledged before a member that answers had taken their invalidation "
                                  "(cluster.invalidation-wait passed)", stats.get("unconfirmed", 0))


class _RefreshQueueCollector(Collector):
    def __init__(self, stats: Callable[[], dict[str, int]]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self.stats()
        yield GaugeMetricFamily("catalogd_dynamic_refreshes_waiting", "Batch refresh runs waiting for a worker "
                                "(dynamic-tables.max-concurrent-refreshes), every table's", value=stats["waiting"])
        yield CounterMetricFamily("catalogd_dynamic_refreshes_refused", "Refresh requests refused because their "
                                  "table had dynamic-tables.max-queued-refreshes-per-table runs waiting",
                                  value=stats["refused"])


class _LagCollector(Collector):
    def __init__(self, lags: Lags) -> None:
        self.lags = lags

    def collect(self) -> Iterator[Metric]:
        lag = GaugeMetricFamily("catalogd_dynamic_table_freshness_lag_seconds",
                                "Seconds since a dynamic table's data was current (absent: never refreshed)",
                                labels=["table"])
        within = GaugeMetricFamily("catalogd_dynamic_table_within_target",
                                   "1 when a dynamic table's lag is within its freshness target, else 0",
                                   labels=["table"])
        for table, seconds, ok in self.lags():
            if seconds is not None:
                lag.add_metric([table], seconds)
            within.add_metric([table], 1.0 if ok else 0.0)
        yield lag
        yield within
