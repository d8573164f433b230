"""Heartbeats, MM2's way (``MirrorHeartbeatConnector`` / ``MirrorHeartbeatTask``).

For every flow of :meth:`MirrorConfig.heartbeat_flows` a ``Heartbeat(S, T, now)`` is written every
``emit.heartbeats.interval.seconds`` to ``heartbeats`` (1 partition, compacted) on T; replicated onward,
they let a MirrorClient anywhere find its upstream clusters and replication hops.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from mirrorspark.client.context import FlowContext
from mirrorspark.mm2.records import Heartbeat
from mirrorspark.replication.connector.internal_topic_specs import internal_topic
from mirrorspark.replication.connector.scheduler import PeriodicJob

log = logging.getLogger(__name__)


class HeartbeatEmitter:
    """Writes heartbeats for the ``flows`` with ``emit_heartbeats_enabled``; ``clock_ms`` returns epoch ms."""

    def __init__(
        self,
        flows: Sequence[FlowContext],
        *,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.flows = tuple(f for f in flows if f.flow_config.emit_heartbeats_enabled)
        self._clock_ms = clock_ms
        self._producers: dict[str, Any] = {}
        self.emitted = 0
        self.failed = 0

    def start(self) -> None:
        """Create each target's heartbeats topic (1 partition, compacted) and the producers; raises ``ClusterError``."""
        for ctx in self.flows:
            flow = ctx.flow_config
            internal_topic(ctx, "heartbeats").ensure(ctx.cluster_admin("target", "heartbeats-target-admin"))
            if flow.target not in self._producers:
                self._producers[flow.target] = ctx.producer(
                    "target", "heartbeats-target-producer", overrides={"linger.ms": 0}
                )

    def emit(self, ctx: FlowContext) -> None:
        """Write one heartbeat of the flow ``ctx``, asynchronously; check the last ones' delivery.

        One not acknowledged is logged at WARNING and counted in :attr:`failed`, superseded by the next, not resent.
        """
        flow = ctx.flow_config
        now = self._clock_ms()
        hb = Heartbeat(flow.source, flow.target, now)
        topic = ctx.internal_topics.heartbeats
        p = self._producers[flow.target]
        try:
            p.produce(topic, hb.value(), hb.key(), partition=0, timestamp=now, on_delivery=self._on_delivery(ctx))
        except (BufferError, KafkaException) as e:
            self._failure(ctx, topic, e)
        p.poll(0)

    def _on_delivery(self, ctx: FlowContext) -> Callable[[Any, Any], None]:
        def on_delivery(err: Any, _msg: Any) -> None:
            if err is None:
                self.emitted += 1
            else:
                self._failure(ctx, ctx.internal_topics.heartbeats, err)

        return on_delivery

    def _failure(self, ctx: FlowContext, topic: str, err: object) -> None:
        self.failed += 1
        why = f"{err.str()} ({err.name()})" if isinstance(err, KafkaError) else str(err)
        log.warning(
            "flow %s: writing a heartbeat to topic '%s' on cluster '%s' failed (%s); the next one is sent in %s s",
            ctx.name,
            topic,
            ctx.flow_config.target,
            why,
            ctx.flow_config.emit_heartbeats_interval_s,
        )

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``heartbeats S->T`` per flow, every ``emit.heartbeats.interval.seconds``, the first at once."""
        return [
            PeriodicJob(
                f"heartbeats {c.name}", c.flow_config.emit_heartbeats_interval_s, functools.partial(self.emit, c)
            )
            for c in self.flows
        ]

    def close(self, timeout_s: float = 10.0) -> None:
        """Flush pending heartbeats (one not acknowledged by then is logged at WARNING)."""
        for target, p in self._producers.items():
            left = p.flush(timeout_s)
            if left:
                log.warning("%d heartbeats to cluster '%s' not acknowledged within %.0f s", left, target, timeout_s)
        self._producers.clear()


__all__ = ["HeartbeatEmitter"]
