"""The daemon's Prometheus metrics: RPC counters and timings, dynamic-table freshness lag."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

#: (table, lag in seconds or None when never refreshed, within target or None)
Lags = Callable[[], list[tuple[str, float | None, bool | None]]]


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
