"""The driver's raw metrics (flow state, lag, checkpoints, group offset sync), written to the flow's progress channel.

``flow``, ``lag``, ``group`` and ``group-sync`` records (version 2 of :mod:`mirrorspark.core.progress_records`)
every ``mirrorspark.metrics.interval.ms``; best effort: a failed write is logged and the next round writes
newer figures. A topic's ``lag`` record whose figures did not change since it was last written is written
every :data:`UNCHANGED_LAG_ROUNDS` rounds only (a reader keeps a topic's newest record for two rounds).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mirrorspark.core.group_sync_counts import GroupSyncCounts
from mirrorspark.core.progress_records import (
    FlowMetrics,
    GroupMetrics,
    GroupPartition,
    GroupSync,
    PartitionLag,
    TopicLag,
    encode_flow_metrics,
    encode_group_metrics,
    encode_group_sync,
    encode_topic_lag,
)
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.mm2.checkpoint_rules import rename_topic
from mirrorspark.mm2.metrics import LagClock
from mirrorspark.replication.connector.scheduler import PeriodicJob

if TYPE_CHECKING:
    from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
    from mirrorspark.replication.connector.flow import Flow
    from mirrorspark.replication.worker.supervisor import FlowSupervisor

log = logging.getLogger(__name__)

ENGINE = "continuous"
"""The ``engine`` of the ``flow`` records: mirrorspark's one engine (format version 2 also knew ``"batch"``)."""

PUBLISH_TIMEOUT_S = 5.0
"""Seconds one round of :meth:`MetricsPublisher.publish` waits for its writes to be acknowledged."""

UNCHANGED_LAG_ROUNDS = 2
"""Rounds between two writes of a topic's unchanged ``lag`` record (idle topics cost half the writes, #44): a
reader (``service.feed``) counts a topic replicated while its newest record is at most two rounds older than the
flow's."""

FIRST_PUBLISH_S = 0.5
"""Seconds from registration to the first round (the ``flow`` record soon after the flow started)."""


class MetricsPublisher:
    """Writes one flow's ``flow``, ``lag``, ``group`` and ``group-sync`` records to its progress channel (ms)."""

    def __init__(
        self,
        flow: Flow,
        *,
        interval_ms: int,
        supervisor: Callable[[], FlowSupervisor | None] = lambda: None,
        checkpoints: CheckpointEmitter | None = None,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.flow = flow
        self.interval_ms = interval_ms
        self._supervisor = supervisor
        self._checkpoints = checkpoints
        self._clock_ms = clock_ms
        self.lag = LagClock()
        self._producer: Any = None
        self._cycle_written: object = None
        self._sync_written: dict[str, GroupSyncCounts] = {}
        self._spent: tuple[int, int, float] | None = None  # (now ms, throttled tasks' bytes, seconds) last round
        self._round = 0  # rounds published
        self._lags_written: dict[str, tuple[int, tuple[object, ...]]] = {}  # topic: (round, figures) last written

    def start(self) -> None:
        """Create the producer (the progress channel exists: :meth:`Flow.start` creates it)."""
        self._producer = self.flow.context.producer("target", "metrics-producer", overrides={"linger.ms": 5})

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``publish metrics S->T``, every ``interval_ms``."""
        name = f"publish metrics {self.flow.name}"
        return [PeriodicJob(name, self.interval_ms / 1000, self.publish, initial_delay_s=FIRST_PUBLISH_S)]

    def flow_metrics(self, now_ms: int) -> FlowMetrics:
        """Return the flow's state, tasks and restarts now."""
        s = self._supervisor()
        if s is None:
            state = "failed" if self.flow.halted is not None else "running"
            return FlowMetrics(self.flow.name, now_ms, state, ENGINE, 0, 0, 0, self.flow.halted, self.interval_ms)
        state = s.state.value if s.state != "created" else "running"
        error = str(s.error) if s.error is not None else self.flow.halted
        limit, rate, throttled_ms = self.throttle_figures(s, now_ms)
        return FlowMetrics(
            self.flow.name,
            now_ms,
            state,
            ENGINE,
            len(s.runs),
            s.restarts,
            s.generation,
            error,
            self.interval_ms,
            throttle_limit=limit,
            throttle_rate=rate,
            throttled_ms=throttled_ms,
        )

    def throttle_figures(self, s: FlowSupervisor, now_ms: int) -> tuple[int, int | None, int]:
        """Return the throttle in effect (bytes/s), the bytes/s let through since the last round, the ms held back."""
        limit = self.flow.throttle.limit
        sent, secs = s.grants.throttle_totals(self.flow.name)
        last, self._spent = self._spent, (now_ms, sent, secs)
        rate = None
        if limit and last is not None and now_ms > last[0]:
            rate = max(0, round((sent - last[1]) * 1000 / (now_ms - last[0])))
        return limit, rate, int(secs * 1000)

    def topic_lags(self, now_ms: int) -> list[TopicLag]:
        """Per replicated topic: positions, end offsets, lag (records and ms) and counts of its partitions."""
        out = []
        flow = self.flow
        for topic, n in sorted(flow.topic_partitions.items()):
            parts = []
            for i in range(n):
                p = flow.partitions.get((topic, i))
                if p is None:
                    continue
                end = max(p.end_offset, 0)
                if p.end_offset >= 0:
                    self.lag.observe((topic, i), p.end_offset, now_ms)
                lag_ms = self.lag.lag_ms((topic, i), p.position, now_ms) if p.end_offset >= 0 else None
                parts.append(
                    PartitionLag(i, p.position, end, max(0, end - p.position), lag_ms, p.records, p.value_bytes)
                )
            remote = flow.remote_topics.get(topic) or flow.policy.format_remote_topic(flow.config.source, topic)
            out.append(TopicLag(flow.name, topic, remote, now_ms, tuple(parts)))
        return out

    def group_metrics(self, now_ms: int) -> list[GroupMetrics]:
        """Per consumer group of the last checkpoint cycle (if new): offsets, checkpoints, lag and re-reads."""
        cp = self._checkpoints
        cycle = cp.last_cycle if cp is not None else None
        if cp is None or cycle is None or cycle is self._cycle_written:
            return []
        cfg = self.flow.config
        out = []
        latency = max(0, cycle.acked_at_ms - cycle.listed_at_ms)
        for group, offsets in sorted(cycle.offsets.items()):
            parts = []
            for go in offsets:
                renamed = (
                    go.checkpoint.topic
                    if go.checkpoint is not None
                    else rename_topic(cp.policy, cfg.source, cfg.target, go.topic)
                )
                last = cp.store.get(group, renamed, go.partition)
                lag = max(0, go.upstream_offset - last.upstream_offset) if last is not None else None
                own = cp.checkpoint_rereads.get((group, renamed, go.partition)) if last is not None else None
                rereads = lag + own if lag is not None and own is not None and own >= 0 else None
                parts.append(
                    GroupPartition(
                        go.topic,
                        renamed,
                        go.partition,
                        go.upstream_offset,
                        last.upstream_offset if last is not None else None,
                        last.downstream_offset if last is not None else None,
                        lag,
                        rereads,
                    )
                )
            out.append(GroupMetrics(self.flow.name, group, now_ms, latency, tuple(parts)))
        self._cycle_written = cycle
        return out

    def group_sync(self, now_ms: int) -> list[GroupSync]:
        """Per target group whose offset-sync counts changed since they were last written: its counts now."""
        cp = self._checkpoints
        if cp is None:
            return []
        counts = {g: dataclasses.replace(c) for g, c in dict(cp.group_sync.counts).items()}
        return [
            GroupSync(self.flow.name, g, now_ms, c) for g, c in sorted(counts.items()) if self._sync_written.get(g) != c
        ]

    def publish(self) -> int:
        """Write the flow's records of this round; return how many were acknowledged (0 when the write failed)."""
        if self._producer is None:
            return 0
        now = self._clock_ms()
        topic = self.flow.progress_topic
        records = [Outgoing(topic, *encode_flow_metrics(self.flow_metrics(now)), partition=0)]
        lags = self._changed_lags(self.topic_lags(now))
        records += [Outgoing(topic, *encode_topic_lag(t), partition=0) for t, _ in lags]
        records += [Outgoing(topic, *encode_group_metrics(g), partition=0) for g in self.group_metrics(now)]
        sync = self.group_sync(now)
        records += [Outgoing(topic, *encode_group_sync(g), partition=0) for g in sync]
        try:
            deliver(
                self._producer,
                records,
                what=f"flow {self.flow.name}: raw metrics",
                alias=self.flow.config.target,
                timeout_s=PUBLISH_TIMEOUT_S,
            )
        except ClusterError as e:
            log.warning("%s; newer figures are written at the next round", e)
            return 0
        self._sync_written.update((g.group, g.counts) for g in sync)
        self._lags_written.update((t.topic, (self._round, figures)) for t, figures in lags)
        self._round += 1
        return len(records)

    def _changed_lags(self, lags: list[TopicLag]) -> list[tuple[TopicLag, tuple[object, ...]]]:
        """Return the lags to write this round with their figures: changed ones, and unchanged ones due again."""
        out: list[tuple[TopicLag, tuple[object, ...]]] = []
        written, now = self._lags_written, self._round
        for t in lags:
            figures = (t.remote_topic, t.partitions)
            last = written.get(t.topic)
            if last is None or last[1] != figures or now - last[0] >= UNCHANGED_LAG_ROUNDS:
                out.append((t, figures))
        return out

    def close(self) -> None:
        """Write a last round (the flow's final state) and release the producer."""
        try:
            self.publish()
        finally:
            self._producer = None


__all__ = ["UNCHANGED_LAG_ROUNDS", "MetricsPublisher"]
