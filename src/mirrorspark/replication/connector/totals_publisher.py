"""Publishing a running flow's lifetime totals and state to ``mm2-progress.<source>.internal``.

Format: :mod:`mirrorspark.core.lifetime_totals`; reader: :mod:`mirrorspark.client.totals_reader`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mirrorspark.client.totals_reader import read_totals
from mirrorspark.core.lifetime_totals import FlowState, TopicTotals, encode_flow_state, encode_totals
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.replication.connector.internal_topic_specs import internal_topic
from mirrorspark.replication.connector.scheduler import PeriodicJob

if TYPE_CHECKING:
    from mirrorspark.replication.connector.flow import Flow

log = logging.getLogger(__name__)

PUBLISH_TIMEOUT_S = 10.0
"""Seconds one :meth:`TotalsPublisher.publish` waits for its writes to be acknowledged (retries included)."""

PUBLISH_INTERVAL_S = 5.0
"""Seconds between two publications of a flow's totals (job ``publish totals S->T``)."""


class TotalsPublisher:
    """Publishes a flow's cumulative totals (base from earlier runs + this process's copies)."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self._base: dict[str, TopicTotals] = {}
        self._producer: Any = None
        self._last: dict[str, tuple[int, ...]] = {}
        self._topic = ""

    def start(self) -> None:
        """Create the lifetime-totals topic and read earlier totals."""
        cfg = self.flow.config
        ctx = self.flow.context
        self._topic = ctx.internal_topics.totals
        internal_topic(ctx, "totals").ensure(self.flow.target_admin)
        self._base = read_totals(ctx, client_id=ctx.client_id("progress-consumer"), timeout_s=cfg.admin_timeout_s)
        self._producer = ctx.producer("target", "progress-producer", overrides={"linger.ms": 0})

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``publish totals S->T``, first one interval after registration."""
        every = PUBLISH_INTERVAL_S
        return [PeriodicJob(f"publish totals {self.flow.name}", every, self.publish, initial_delay_s=every)]

    def totals(self) -> Mapping[str, TopicTotals]:
        """Return ``{source topic: totals}`` now: earlier runs' plus this process's, stamped in epoch ms."""
        now = int(time.time() * 1000)
        out: dict[str, TopicTotals] = {}
        for topic, n in self.flow.topic_partitions.items():
            ps = [self.flow.partitions[(topic, i)] for i in range(n) if (topic, i) in self.flow.partitions]
            base = self._base.get(topic, TopicTotals(0, 0, 0, now))
            out[topic] = TopicTotals(
                base.records + sum(p.records for p in ps),
                base.value_bytes + sum(p.value_bytes for p in ps),
                base.key_bytes + sum(p.key_bytes for p in ps),
                now,
                base.dropped + sum(p.dropped for p in ps),
                base.schema_hits + sum(p.schema_hits for p in ps),
                base.schema_misses + sum(p.schema_misses for p in ps),
                base.schema_unknown + sum(p.schema_unknown for p in ps),
            )
        return out

    def publish(self) -> int:
        """Write the totals changed since the last acknowledged write; return records acknowledged (0: next time)."""
        if self._producer is None:
            return 0
        changed: dict[str, tuple[int, ...]] = {}
        records: list[Outgoing] = []
        for topic, p in self.totals().items():
            sig = (p.records, p.value_bytes, p.key_bytes, p.dropped, p.schema_hits, p.schema_misses, p.schema_unknown)
            if self._last.get(topic) == sig:
                continue
            key, value = encode_totals(self.flow.name, topic, p)
            records.append(Outgoing(self._topic, key, value, partition=0))
            changed[topic] = sig
        try:
            deliver(
                self._producer,
                records,
                what=f"flow {self.flow.name}: lifetime totals",
                alias=self.flow.config.target,
                timeout_s=PUBLISH_TIMEOUT_S,
            )
        except ClusterError as e:
            log.warning("%s; they are written again at the next publication", e)
            return 0
        self._last.update(changed)
        return len(records)

    def publish_state(self, state: str, error: str | None = None) -> None:
        """Publish the flow's state (:class:`~mirrorspark.core.lifetime_totals.FlowState`) for ``status``."""
        if self._producer is None:
            return
        key, value = encode_flow_state(self.flow.name, FlowState(state, error, int(time.time() * 1000)))
        try:
            deliver(
                self._producer,
                [Outgoing(self._topic, key, value, partition=0)],
                what=f"flow {self.flow.name}: its state",
                alias=self.flow.config.target,
                timeout_s=PUBLISH_TIMEOUT_S,
            )
        except ClusterError as e:
            log.warning("%s", e)

    def close(self, end_state: str | None = None) -> None:
        """Publish the final totals, then ``end_state`` if any (after the last heartbeat); release the producer."""
        try:
            self.publish()
            if end_state is not None:
                self.publish_state(end_state)
        finally:
            self._producer = None


__all__ = ["PUBLISH_INTERVAL_S", "PUBLISH_TIMEOUT_S", "TotalsPublisher"]
