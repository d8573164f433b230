"""``/metrics``: per-partition replica counts of the served cluster, MRC's partition metrics on Apache Kafka.

Confluent's Multi-Region Clusters report per partition (``kafka.cluster:type=Partition``)
``ReplicasCount``, ``InSyncReplicasCount``, ``CaughtUpReplicasCount`` and ``IsNotCaughtUp``.
:class:`ReplicaCollector` writes the same figures as ``mirrorspark_replicas_count``,
``mirrorspark_in_sync_replicas_count``, ``mirrorspark_caught_up_replicas_count`` and
``mirrorspark_is_not_caught_up`` (labels ``cluster``, ``topic``, ``partition``), computed as
``mirrorspark replica-status`` computes them (:func:`~mirrorspark.mm2.replicas.partition_counts`):
no observers, caught up = in the ISR. Apache Kafka's own ``ReplicasCount``/``InSyncReplicasCount``
JMX gauges exist only on each partition's leader; these come from one admin call for the cluster.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mirrorspark.config.model import MirrorConfig
from mirrorspark.errors import MirrorsparkError
from mirrorspark.kafka.admin import list_topics
from mirrorspark.kafka.factory import admin_client
from mirrorspark.kafka.replica_admin import describe_partitions
from mirrorspark.mm2.replicas import PartitionState, partition_counts

log = logging.getLogger(__name__)

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

REFRESH_S: Final = 30.0
"""Seconds a description of the cluster is reused across scrapes."""


def replica_families(cluster: str, states: Iterable[PartitionState]) -> list[GaugeMetricFamily]:
    """Build the replica-count series of a cluster's partitions.

    Parameters
    ----------
    cluster:
        The cluster alias (label ``cluster``).
    states:
        The partitions.

    Returns
    -------
    list[GaugeMetricFamily]
        One family per :data:`REPLICA_METRICS` entry, one sample per partition.
    """
    families = [
        GaugeMetricFamily(name, doc, labels=["cluster", "topic", "partition"]) for name, _, doc in REPLICA_METRICS
    ]
    for s in sorted(states, key=lambda s: (s.topic, s.partition)):
        counts = partition_counts(s)
        for fam, (_, field, _) in zip(families, REPLICA_METRICS, strict=True):
            fam.add_metric([cluster, s.topic, str(s.partition)], float(getattr(counts, field)))
    return families


class ReplicaCollector(Collector):
    """Describes the served cluster's partitions at scrape time (at most every :data:`REFRESH_S` s).

    Parameters
    ----------
    config:
        The configuration (the cluster's admin settings).
    cluster:
        The served cluster's alias.
    refresh_s:
        Seconds a description is reused (default :data:`REFRESH_S`).
    clock:
        Monotonic seconds (injectable for tests).

    Notes
    -----
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
        self._at: float | None = None
        self._admin: Any = None

    def states(self) -> list[PartitionState]:
        """Return the cluster's partitions, described again when the last description is older than ``refresh_s``."""
        with self._lock:
            now = self._clock()
            if self._at is not None and now - self._at < self.refresh_s:
                return self._states
            try:
                if self._admin is None:
                    settings = self.config.cluster(self.cluster).admin
                    self._admin = admin_client(settings, client_id=f"mirrorspark-service|{self.cluster}|replicas-admin")
                topics = list_topics(self._admin, self.cluster, timeout_s=10)
                layouts = describe_partitions(self._admin, self.cluster, topics, timeout_s=10)
                self._states = [
                    PartitionState(p.topic, p.partition, p.leader, p.replicas, p.isr, p.racks) for p in layouts
                ]
            except MirrorsparkError as e:
                log.warning(
                    "describing the replicas of cluster '%s' failed (%s); serving the last description", self.cluster, e
                )
            self._at = now
            return self._states

    def collect(self) -> Iterator[Metric]:
        """Yield the replica-count families."""
        yield from replica_families(self.cluster, self.states())


__all__ = ["REFRESH_S", "REPLICA_METRICS", "ReplicaCollector", "replica_families"]
