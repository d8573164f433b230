"""Heartbeats, MM2's way (``MirrorHeartbeatConnector`` / ``MirrorHeartbeatTask``).

For every flow of MM2's driver rule (:meth:`MirrorConfig.heartbeat_flows`:
enabled flows, and by default the reverse pairs too), a ``Heartbeat(S, T, now)``
record is written every ``emit.heartbeats.interval.seconds`` to the topic
``heartbeats`` (1 partition, compacted) on the target T. Replicated onward as
``T.heartbeats`` by the flows out of T, they let a MirrorClient anywhere find
its upstream clusters and replication hops.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from mirrorspark.config.model import ClusterConfig, FlowConfig
from mirrorspark.kafka.clients import admin_client, ensure_topic, producer
from mirrorspark.mm2.policy import load_policy
from mirrorspark.mm2.records import Heartbeat
from mirrorspark.replication.scheduler import Scheduler


class HeartbeatEmitter:
    """Writes heartbeats for a set of flows.

    Parameters
    ----------
    flows:
        The flows to emit for (each with ``emit_heartbeats_enabled``).
    clusters:
        Cluster configs by alias.
    clock_ms:
        Returns epoch ms (injectable for tests).
    """

    def __init__(
        self,
        flows: Sequence[FlowConfig],
        clusters: Mapping[str, ClusterConfig],
        *,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.flows = tuple(f for f in flows if f.emit_heartbeats_enabled)
        self.clusters = clusters
        self._clock_ms = clock_ms
        self._producers: dict[str, object] = {}
        self.emitted = 0

    def _topic(self, flow: FlowConfig) -> str:
        return load_policy(
            flow.policy.class_name,
            separator=flow.policy.separator,
            internal_topic_separator_enabled=flow.policy.internal_topic_separator_enabled,
            source_cluster_alias=flow.source,
        ).heartbeats_topic()

    def start(self) -> None:
        """Create each target's heartbeats topic (1 partition, compacted) and the producers.

        Raises
        ------
        ClusterError
            Topic creation failed (e.g. a replication factor above the broker count).
        """
        for flow in self.flows:
            admin = admin_client(flow.target_admin, client_id=f"{flow.name}|mirrorspark|heartbeats-target-admin")
            ensure_topic(
                admin,
                flow.target,
                self._topic(flow),
                partitions=1,
                replication_factor=flow.heartbeats_topic_replication_factor,
                config={"cleanup.policy": "compact"},
                timeout_s=flow.admin_timeout_ms / 1000,
            )
            if flow.target not in self._producers:
                self._producers[flow.target] = producer(
                    flow.target_producer,
                    client_id=f"{flow.name}|mirrorspark|heartbeats-target-producer",
                    overrides={"linger.ms": 0},
                )

    def emit(self, flow: FlowConfig) -> None:
        """Write one heartbeat ``(flow.source, flow.target, now)``."""
        now = self._clock_ms()
        hb = Heartbeat(flow.source, flow.target, now)
        p = self._producers[flow.target]
        p.produce(self._topic(flow), hb.value(), hb.key(), partition=0, timestamp=now)  # type: ignore[attr-defined]
        p.poll(0)  # type: ignore[attr-defined]
        self.emitted += 1

    def schedule(self, scheduler: Scheduler) -> None:
        """Register one job per flow, every ``emit.heartbeats.interval.seconds``."""
        for flow in self.flows:
            scheduler.add(
                f"heartbeats {flow.name}",
                flow.emit_heartbeats_interval_s,
                lambda f=flow: self.emit(f),  # type: ignore[misc]
            )

    def close(self, timeout_s: float = 10.0) -> None:
        """Flush pending heartbeats."""
        for p in self._producers.values():
            p.flush(timeout_s)  # type: ignore[attr-defined]
        self._producers.clear()


__all__ = ["HeartbeatEmitter"]
