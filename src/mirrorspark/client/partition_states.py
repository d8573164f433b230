"""Partition states and remote copies of a cluster (the client side of ``mirrorspark replica-status``).

Confluent's ``kafka-replica-status`` from Apache Kafka's ``describe_topics`` and ``list_offsets``, and
the copies enabled flows keep in other clusters (mirrorspark's "observers", from their committed source
offsets, as ``mirrorspark status`` reads them).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from confluent_kafka import TopicPartition

from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.client.source_offset_reader import read_flow_source_offsets
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.replica_rows import UNKNOWN, PartitionState, RemoteCopy, copy_lag, lag_seconds
from mirrorspark.errors import ConfigError
from mirrorspark.kafka.admin import ClusterAdmin, PartitionKey


def partition_states(config: MirrorConfig, admin: ClusterAdmin, topics: Sequence[str] | None) -> list[PartitionState]:
    """Describe a cluster's partitions: leader, replicas, ISR, racks, log start and end offsets.

    Returns
    -------
    list[PartitionState]
        One per partition of ``topics`` (``None``/empty: all), offsets ``-1`` (``UNKNOWN``) without a leader.

    Raises
    ------
    ConfigError
        A topic of ``topics`` does not exist on the cluster.
    ClusterError, ClusterUnreachableError
        The cluster cannot be described.
    """
    cluster = admin.alias
    existing = admin.list_topics()
    if topics:
        missing = [t for t in topics if t not in existing]
        if missing:
            raise ConfigError(
                f"topic {missing[0]!r} does not exist on cluster '{cluster}': check --topics "
                f"(the cluster has {len(existing)} topics)"
            )
    names = list(topics) if topics else sorted(existing)
    layouts = admin.describe_partitions(names)
    keys = [(p.topic, p.partition) for p in layouts]
    led = [k for k, p in zip(keys, layouts, strict=True) if p.leader >= 0]
    starts = admin.partition_offsets(led, earliest=True)
    ends = admin.partition_offsets(led, earliest=False)
    policy = ReplicationContext(config).cluster_policy(cluster)
    return [
        PartitionState(
            topic=p.topic,
            partition=p.partition,
            leader=p.leader,
            replicas=p.replicas,
            isr=p.isr,
            racks=p.racks,
            log_start_offset=starts.get((p.topic, p.partition), UNKNOWN),
            log_end_offset=ends.get((p.topic, p.partition), UNKNOWN),
            internal=p.internal or policy.is_internal_topic(p.topic),
        )
        for p in layouts
    ]


def remote_copies(
    config: MirrorConfig,
    cluster: str,
    states: Sequence[PartitionState],
    *,
    now_ms: int | None = None,
    timeout_s: float = 30.0,
) -> dict[PartitionKey, list[RemoteCopy]]:
    """Per partition of ``cluster``, the copies each enabled flow ``cluster->X`` keeps on ``X``.

    Returns
    -------
    dict[PartitionKey, list[RemoteCopy]]
        Only partitions a flow replicates; the lag in seconds is the age (vs ``now_ms``, epoch ms) of the
        record at the committed position, ``-1`` if unreadable.

    Raises
    ------
    ClusterError, ClusterUnreachableError
        A target's offsets topic cannot be read within ``timeout_s`` seconds per call.
    """
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    context = ReplicationContext(config)
    out: dict[PartitionKey, list[RemoteCopy]] = {}
    for flow in config.enabled_flows():
        if flow.source != cluster:
            continue
        ctx = context.of(flow)
        mine = [s for s in states if ctx.replicates_topic(s.topic)]
        if not mine:
            continue
        stored = read_flow_source_offsets(ctx, "replica-status-offsets-consumer", timeout_s=timeout_s)
        positions = {
            (s.topic, s.partition): stored[(s.topic, s.partition)] + 1 for s in mine if (s.topic, s.partition) in stored
        }
        waiting = {
            (s.topic, s.partition): positions[(s.topic, s.partition)]
            for s in mine
            if copy_lag(positions.get((s.topic, s.partition), UNKNOWN), s.log_end_offset) > 0
        }
        stamps = timestamps_at(ctx, waiting, timeout_s=min(timeout_s, 10.0))
        for s in mine:
            key = (s.topic, s.partition)
            position = positions.get(key, UNKNOWN)
            lag = copy_lag(position, s.log_end_offset)
            out.setdefault(key, []).append(
                RemoteCopy(
                    topic=s.topic,
                    partition=s.partition,
                    flow=flow.name,
                    cluster=flow.target,
                    remote_topic=ctx.policy.format_remote_topic(flow.source, s.topic),
                    position=position,
                    lag_records=lag,
                    lag_s=lag_seconds(lag, stamps.get(key), now_ms),
                )
            )
    return out


def timestamps_at(
    ctx: FlowContext,
    positions: dict[PartitionKey, int],
    *,
    timeout_s: float,
    purpose: str = "replica-status-source-consumer",
) -> dict[PartitionKey, int]:
    """Read the timestamps (epoch ms) of the records at ``positions`` on the flow's source, within ``timeout_s`` s.

    Missing where no record came back in time.
    """
    if not positions:
        return {}
    consumer = ctx.consumer("source", purpose, overrides={"enable.partition.eof": False})
    out: dict[PartitionKey, int] = {}
    try:
        consumer.assign([TopicPartition(t, p, off) for (t, p), off in positions.items()])
        deadline = time.monotonic() + timeout_s
        while len(out) < len(positions) and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=500, timeout=0.5):
                if m.error() is not None:
                    continue
                topic, partition = str(m.topic()), m.partition() or 0
                if (topic, partition) not in out:
                    out[(topic, partition)] = m.timestamp()[1]
                    consumer.pause([TopicPartition(topic, partition)])
    finally:
        consumer.close()
    return out


__all__ = ["partition_states", "remote_copies", "timestamps_at"]
