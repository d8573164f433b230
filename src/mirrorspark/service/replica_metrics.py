"""``/metrics``: per-partition replica counts of the served cluster, MRC's partition metrics on Apache Kafka.

Confluent's Multi-Region Clusters report per partition (``kafka.cluster:type=Partition``)
``ReplicasCount``, ``InSyncReplicasCount``, ``CaughtUpReplicasCount`` and ``IsNotCaughtUp``.
:class:`ReplicaCollector` writes the same figures as ``mirrorspark_replicas_count``,
``mirrorspark_in_sync_replicas_count``, ``mirrorspark_caught_up_replicas_count`` and
``mirrorspark_is_not_caught_up`` (labels ``cluster``, ``topic``, ``partition``), computed as
``mirrorspark replica-status`` computes them (:func:`~mirrorspark.core.replica_rows.partition_counts`):
no observers, caught up = in the ISR. Apache Kafka's own ``ReplicasCount``/``InSyncReplicasCount``
JMX gauges exist only on each partition's leader; these come from one admin call for the cluster.

mirrorspark's observers, the copies of the served cluster's partitions that enabled flows
``C->X`` keep in other clusters (``mirrorspark replica-status --remote``), are counted too:
``mirrorspark_remote_copies_count`` (labels ``cluster``, ``topic``, ``partition``) and, per copy,
``mirrorspark_remote_copy_lag_records`` and ``mirrorspark_remote_copy_lag_seconds`` (labels
also ``remote_cluster`` and ``remote_topic``), computed as ``replica-status --remote`` computes
them (:func:`~mirrorspark.client.partition_states.remote_copies`); a lag nobody could read is left out
rather than written as ``-1``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mirrorspark.client.context import ReplicationContext
from mirrorspark.client.partition_states import partition_states, remote_copies
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.replica_rows import UNKNOWN, PartitionState, RemoteCopy, partition_counts
from mirrorspark.errors import MirrorsparkError
from mirrorspark.kafka.admin import ClusterAdmin

log = logging.getLogger(__name__)

SCRAPE_TIMEOUT_S: Final = 10.0
"""Most seconds each cluster call of a scrape waits (less if ``admin.timeout.ms`` is less): Prometheus gives
up on a scrape after 10 s by default."""

REPLICA_METRICS: Final = (
    ("mirrorspark_replicas_count", "replicas", "Assigned replicas of the partition (MRC's ReplicasCount)."),
    (
        "mirrorspark_in_sync_replicas_count",
        "in_sync",
        "Replicas in the ISR, 0 without a leader (MRC's InSyncReplicasCount).",
    ),
    (
        "mirrorspark_caught_up_replicas_count",
        "caught_up",
        "Caught-up replicas: in the ISR on Apache Kafka (MRC's CaughtUpReplicasCount).",
    ),
    ("mirrorspark_is_not_caught_up", "not_caught_up", "1 when a replica is not caught up (MRC's IsNotCaughtUp)."),
)
"""``(Prometheus name, PartitionCounts field, help)`` of the series."""

REMOTE_COPY_METRICS: Final = (
    ("mirrorspark_remote_copy_lag_records", "Records the remote copy is behind the partition's end (records)."),
    ("mirrorspark_remote_copy_lag_seconds", "Age of the oldest record the remote copy lacks (s); 0 when caught up."),
)
"""``(Prometheus name, help)`` of the per-copy series."""

REFRESH_S: Final = 30.0
"""Seconds a description of the cluster is reused across scrapes."""


def replica_families(cluster: str, states: Iterable[PartitionState]) -> list[GaugeMetricFamily]:
    """Build the replica-count series of a cluster's partitions: one family per :data:`REPLICA_METRICS` entry."""
    families = [
        GaugeMetricFamily(name, doc, labels=["cluster", "topic", "partition"]) for name, _, doc in REPLICA_METRICS
    ]
    for s in sorted(states, key=lambda s: (s.topic, s.partition)):
        counts = partition_counts(s)
        for fam, (_, field, _) in zip(families, REPLICA_METRICS, strict=True):
            fam.add_metric([cluster, s.topic, str(s.partition)], float(getattr(counts, field)))
    return families


def remote_copy_families(
    cluster: str, states: Iterable[PartitionState], copies: dict[tuple[str, int], list[RemoteCopy]]
) -> list[GaugeMetricFamily]:
    """Build the remote-copy series of a cluster's partitions (mirrorspark's observers).

    ``mirrorspark_remote_copies_count`` (0 when no flow copies a partition), then one family per
    :data:`REMOTE_COPY_METRICS` entry; unknown lags (``-1``) are left out.
    """
    count = GaugeMetricFamily(
        "mirrorspark_remote_copies_count",
        "Copies of the partition that replication flows keep in other clusters (mirrorspark's observers).",
        labels=["cluster", "topic", "partition"],
    )
    labels = ["cluster", "topic", "partition", "remote_cluster", "remote_topic"]
    records, seconds = (GaugeMetricFamily(name, doc, labels=labels) for name, doc in REMOTE_COPY_METRICS)
    for s in sorted(states, key=lambda s: (s.topic, s.partition)):
        mine = copies.get((s.topic, s.partition), [])
        count.add_metric([cluster, s.topic, str(s.partition)], float(len(mine)))
        for c in sorted(mine, key=lambda c: c.cluster):
            values = [cluster, s.topic, str(s.partition), c.cluster, c.remote_topic]
            if c.lag_records != UNKNOWN:
                records.add_metric(values, float(c.lag_records))
            if c.lag_s != UNKNOWN:
                seconds.add_metric(values, float(c.lag_s))
    return [count, records, seconds]


class ReplicaCollector(Collector):
    """Describes the served cluster's partitions and their remote copies at scrape time, at most every ``refresh_s`` s.

    A failed description is logged (WARNING) and the previous one is served; thread-safe.
    """

    def __init__(
        self,
        config: MirrorConfig,
        cluster: str,
        *,
        refresh_s: float = REFRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.refresh_s = refresh_s
        self._clock = clock
        self._lock = threading.Lock()
        self._states: list[PartitionState] = []
        self._copies: dict[tuple[str, int], list[RemoteCopy]] = {}
        self._at: float | None = None
        self._admin: ClusterAdmin | None = None

    def states(self) -> list[PartitionState]:
        """Return the cluster's partitions, described again when the last description is older than ``refresh_s``."""
        with self._lock:
            now = self._clock()
            if self._at is not None and now - self._at < self.refresh_s:
                return self._states
            try:
                if self._admin is None:
                    admin = ReplicationContext(self.config).cluster_admin(
                        self.cluster, "replicas-admin", client_id=f"mirrorspark-service|{self.cluster}|replicas-admin"
                    )
                    self._admin = admin.with_timeout(min(admin.timeout_s, SCRAPE_TIMEOUT_S))
                self._states = partition_states(self.config, self._admin, None)
            except MirrorsparkError as e:
                log.warning(
                    "describing the replicas of cluster '%s' failed (%s); serving the last description", self.cluster, e
                )
            else:
                self._copies = self._remote_copies(self._states)
            self._at = now
            return self._states

    def _remote_copies(self, states: list[PartitionState]) -> dict[tuple[str, int], list[RemoteCopy]]:
        if not any(f.source == self.cluster for f in self.config.enabled_flows()):
            return {}
        try:
            return remote_copies(self.config, self.cluster, states, timeout_s=SCRAPE_TIMEOUT_S)
        except MirrorsparkError as e:
            log.warning("reading the remote copies of cluster '%s' failed (%s); serving the last ones", self.cluster, e)
            return self._copies

    def copies(self) -> dict[tuple[str, int], list[RemoteCopy]]:
        """Return the remote copies of the partitions :meth:`states` returned last (refreshed with them)."""
        with self._lock:
            return self._copies

    def collect(self) -> Iterator[Metric]:
        """Yield the replica-count and remote-copy families."""
        states = self.states()
        yield from replica_families(self.cluster, states)
        yield from remote_copy_families(self.cluster, states, self.copies())


__all__ = [
    "REFRESH_S",
    "REMOTE_COPY_METRICS",
    "REPLICA_METRICS",
    "ReplicaCollector",
    "remote_copy_families",
    "replica_families",
]
