"""Replica status and leader elections of one cluster (``mirrorspark replica-status``, ``mirrorspark elect``).

The Apache Kafka counterparts of Confluent's ``kafka-replica-status`` and of
``kafka-leader-election``: rows are built by :mod:`mirrorspark.mm2.replicas` from
``describe_topics`` and ``list_offsets``; the remote copies that enabled replication flows keep
of each partition in other clusters (mirrorspark's "observers") come from the flows' committed
source offsets (``mm2-offsets.<source>.internal`` on each target), as ``mirrorspark status``
reads them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.client.source_offsets import read_flow_source_offsets
from mirrorspark.config.model import MirrorConfig
from mirrorspark.errors import ConfigError
from mirrorspark.kafka.admin import PartitionKey, list_topics
from mirrorspark.kafka.factory import admin_client
from mirrorspark.kafka.replica_admin import describe_partitions, elect_leaders, partition_offsets
from mirrorspark.mm2.replicas import (
    UNKNOWN,
    ElectionKind,
    ElectionOutcome,
    LeadersMode,
    PartitionState,
    RemoteCopy,
    ReplicaRow,
    copy_lag,
    lag_seconds,
    replica_rows,
)


@dataclass
class ReplicaStatus:
    """What ``replica-status`` shows of one cluster.

    Attributes
    ----------
    cluster:
        The cluster alias.
    partitions:
        Every selected partition's state (before the ``--leaders`` filter).
    rows:
        One row per replica (:func:`~mirrorspark.mm2.replicas.replica_rows`).
    remote:
        With ``--remote``: ``{(topic, partition): copies in other clusters}``; empty otherwise.
    """

    cluster: str
    partitions: list[PartitionState]
    rows: list[ReplicaRow]
    remote: dict[PartitionKey, list[RemoteCopy]] = field(default_factory=dict)


def cluster_admin(config: MirrorConfig, cluster: str, role: str) -> AdminClient:
    """Create an admin client of ``cluster`` (its admin settings; ``client.id`` ``<alias>|mirrorspark|<role>``).

    Raises
    ------
    UnknownAliasError
        ``cluster`` is not in ``clusters``.
    ConfigError
        The settings cannot be translated for librdkafka.
    """
    return admin_client(config.cluster(cluster).admin, client_id=f"{cluster}|mirrorspark|{role}")


def _states(
    config: MirrorConfig, cluster: str, admin: AdminClient, topics: Sequence[str] | None, timeout_s: float
) -> list[PartitionState]:
    existing = list_topics(admin, cluster, timeout_s=timeout_s)
    if topics:
        missing = [t for t in topics if t not in existing]
        if missing:
            raise ConfigError(
                f"topic {missing[0]!r} does not exist on cluster '{cluster}': check --topics "
                f"(the cluster has {len(existing)} topics)"
            )
    names = list(topics) if topics else sorted(existing)
    layouts = describe_partitions(admin, cluster, names, timeout_s=timeout_s)
    keys = [(p.topic, p.partition) for p in layouts]
    led = [k for k, p in zip(keys, layouts, strict=True) if p.leader >= 0]
    starts = partition_offsets(admin, cluster, led, earliest=True, timeout_s=timeout_s)
    ends = partition_offsets(admin, cluster, led, earliest=False, timeout_s=timeout_s)
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


def replica_status(
    config: MirrorConfig,
    cluster: str,
    *,
    topics: Sequence[str] | None = None,
    partitions: frozenset[int] | None = None,
    leaders: LeadersMode = "all",
    exclude_internal: bool = False,
    remote: bool = False,
    timeout_s: float = 30.0,
) -> ReplicaStatus:
    """Describe every replica of the selected partitions of ``cluster``, and with ``remote`` their remote copies.

    Parameters
    ----------
    config:
        The configuration naming the cluster (and the flows, for ``remote``).
    cluster:
        The cluster alias.
    topics:
        Topic names (``--topics``); ``None`` or empty = every topic, internal ones included.
    partitions:
        Partition ids (``--partitions``); ``None`` = all.
    leaders:
        ``--leaders``: ``"all"``, ``"only"`` or ``"exclude"``.
    exclude_internal:
        Leave out Kafka's internal topics and MM2/mirrorspark internal topics.
    remote:
        Also read, per partition, the copies enabled flows from ``cluster`` keep in other clusters.
    timeout_s:
        Seconds per cluster call.

    Returns
    -------
    ReplicaStatus
        The partitions, rows and remote copies.

    Raises
    ------
    UnknownAliasError
        ``cluster`` is not in ``clusters``.
    ConfigError
        A topic of ``topics`` does not exist.
    ClusterError, ClusterUnreachableError
        A cluster call failed or timed out.
    """
    admin = cluster_admin(config, cluster, "replica-status-admin")
    states = _states(config, cluster, admin, topics, timeout_s)
    selected = [
        s for s in states if (partitions is None or s.partition in partitions) and not (exclude_internal and s.internal)
    ]
    rows = replica_rows(selected, leaders=leaders)
    out = ReplicaStatus(cluster, selected, rows)
    if remote:
        out.remote = remote_copies(config, cluster, selected, timeout_s=timeout_s)
    return out


def remote_copies(
    config: MirrorConfig,
    cluster: str,
    states: Sequence[PartitionState],
    *,
    now_ms: int | None = None,
    timeout_s: float = 30.0,
) -> dict[PartitionKey, list[RemoteCopy]]:
    """Per partition of ``cluster``, the copies each enabled flow ``cluster->X`` keeps on ``X``.

    Parameters
    ----------
    config:
        The configuration (its enabled flows whose source is ``cluster``).
    cluster:
        The source cluster alias.
    states:
        The partitions (their high watermarks give the lag).
    now_ms:
        Now in epoch ms (default: the clock), for the lag in seconds.
    timeout_s:
        Seconds per cluster call.

    Returns
    -------
    dict[PartitionKey, list[RemoteCopy]]
        Partitions of topics no flow replicates are left out; the lag in seconds is the age of the
        record at the committed position (read from ``cluster``), ``-1`` if it could not be read.

    Raises
    ------
    ClusterError, ClusterUnreachableError
        A target's offsets topic cannot be read.
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
        stamps = _timestamps_at(ctx, waiting, timeout_s=min(timeout_s, 10.0))
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


def _timestamps_at(
    ctx: FlowContext, positions: dict[PartitionKey, int], *, timeout_s: float
) -> dict[PartitionKey, int]:
    """Timestamps (epoch ms) of the records at ``positions`` on the flow's source; missing where none came back."""
    if not positions:
        return {}
    consumer = ctx.consumer("source", "replica-status-source-consumer", overrides={"enable.partition.eof": False})
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


def elect(
    config: MirrorConfig,
    cluster: str,
    kind: ElectionKind,
    partitions: Sequence[PartitionKey] | None,
    *,
    timeout_s: float = 60.0,
) -> list[ElectionOutcome]:
    """Run a preferred or unclean leader election and report leaders and end offsets before and after.

    Parameters
    ----------
    config:
        The configuration naming the cluster.
    cluster:
        The cluster alias.
    kind:
        ``"preferred"`` or ``"unclean"`` (``kafka-leader-election --election-type``).
    partitions:
        The partitions, or ``None`` for every partition of the cluster (``--all``).
    timeout_s:
        Seconds for the election and for each describe call.

    Returns
    -------
    list[ElectionOutcome]
        One per partition the cluster answered for, sorted; ``end_after < end_before`` after an
        unclean election means the log was truncated (flows reading it record a ``truncated`` gap).

    Raises
    ------
    ConfigError
        A named topic or partition does not exist.
    ClusterError, ClusterUnreachableError
        The election request failed or timed out.
    """
    admin = cluster_admin(config, cluster, "elect-admin")
    topics = sorted({t for t, _ in partitions}) if partitions is not None else None
    before = {(s.topic, s.partition): s for s in _states(config, cluster, admin, topics, timeout_s)}
    if partitions is not None:
        missing = [k for k in partitions if k not in before]
        if missing:
            t, p = missing[0]
            raise ConfigError(f"topic '{t}' on cluster '{cluster}' has no partition {p}: check --partition")
    results = elect_leaders(admin, cluster, kind, partitions, timeout_s=timeout_s)
    elected_topics = sorted({t for t, _ in results})
    deadline = time.monotonic() + timeout_s
    while True:  # a new leader answers ListOffsets once its election has propagated: wait for it
        after = {(s.topic, s.partition): s for s in _states(config, cluster, admin, elected_topics, timeout_s)}
        pending = [k for k, err in results.items() if err is None and (k not in after or after[k].log_end_offset < 0)]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    outcomes = []
    for key, error in sorted(results.items()):
        b, a = before.get(key), after.get(key)
        outcomes.append(
            ElectionOutcome(
                topic=key[0],
                partition=key[1],
                leader_before=b.leader if b else UNKNOWN,
                leader_after=a.leader if a else UNKNOWN,
                end_before=b.log_end_offset if b else UNKNOWN,
                end_after=a.log_end_offset if a else UNKNOWN,
                error=error,
            )
        )
    return outcomes


__all__ = ["ReplicaStatus", "cluster_admin", "elect", "remote_copies", "replica_status"]
