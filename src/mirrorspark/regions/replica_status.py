"""Replica status and leader elections of one cluster (``mirrorspark replica-status``, ``mirrorspark elect``).

Confluent's ``kafka-replica-status`` and ``kafka-leader-election`` on Apache Kafka; remote copies
("observers") come from the flows' committed source offsets, as ``mirrorspark status`` reads them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from mirrorspark.client.context import ReplicationContext
from mirrorspark.client.partition_states import partition_states, remote_copies
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.replica_rows import (
    UNKNOWN,
    ElectionKind,
    ElectionOutcome,
    LeadersMode,
    PartitionState,
    RemoteCopy,
    ReplicaRow,
    replica_rows,
)
from mirrorspark.errors import ConfigError
from mirrorspark.kafka.admin import ClusterAdmin, PartitionKey


@dataclass
class ReplicaStatus:
    """What ``replica-status`` shows of one cluster; ``remote`` is filled only with ``--remote``."""

    cluster: str
    partitions: list[PartitionState]
    rows: list[ReplicaRow]
    remote: dict[PartitionKey, list[RemoteCopy]] = field(default_factory=dict)


def cluster_admin(config: MirrorConfig, cluster: str, purpose: str, *, timeout_s: float | None = None) -> ClusterAdmin:
    """Create the admin wrapper of ``cluster`` (``client.id`` ``<alias>|mirrorspark|<purpose>``).

    ``timeout_s`` in seconds per call (``None`` = ``admin.timeout.ms``). Raises UnknownAliasError, or
    ConfigError when the settings cannot be translated for librdkafka.
    """
    admin = ReplicationContext(config).cluster_admin(cluster, purpose)
    return admin if timeout_s is None else admin.with_timeout(timeout_s, setting="--timeout")


def replica_status(
    config: MirrorConfig,
    cluster: str,
    *,
    topics: Sequence[str] | None = None,
    partitions: frozenset[int] | None = None,
    leaders: LeadersMode = "all",
    exclude_internal: bool = False,
    remote: bool = False,
    timeout_s: float | None = None,
) -> ReplicaStatus:
    """Describe every replica of the selected partitions of ``cluster``, and with ``remote`` their remote copies.

    ``timeout_s`` in seconds per call (``None`` = ``admin.timeout.ms``). Raises ConfigError for a missing
    topic, ClusterError/ClusterUnreachableError when a call fails.
    """
    admin = cluster_admin(config, cluster, "replica-status-admin", timeout_s=timeout_s)
    states = partition_states(config, admin, topics)
    selected = [
        s for s in states if (partitions is None or s.partition in partitions) and not (exclude_internal and s.internal)
    ]
    rows = replica_rows(selected, leaders=leaders)
    out = ReplicaStatus(cluster, selected, rows)
    if remote:
        out.remote = remote_copies(config, cluster, selected, timeout_s=admin.timeout_s)
    return out


def elect(
    config: MirrorConfig,
    cluster: str,
    kind: ElectionKind,
    partitions: Sequence[PartitionKey] | None,
    *,
    timeout_s: float | None = None,
) -> list[ElectionOutcome]:
    """Run a preferred or unclean leader election; return leaders and end offsets before and after, sorted.

    ``partitions`` ``None`` = every partition (``--all``); ``timeout_s`` in seconds bounds each call and
    the wait for the elected leaders. ``end_after < end_before`` means truncation (flows record a gap).
    Raises ConfigError for a missing partition, ClusterError/ClusterUnreachableError when the election fails.
    """
    admin = cluster_admin(config, cluster, "elect-admin", timeout_s=timeout_s)
    topics = sorted({t for t, _ in partitions}) if partitions is not None else None
    before = {(s.topic, s.partition): s for s in partition_states(config, admin, topics)}
    if partitions is not None:
        missing = [k for k in partitions if k not in before]
        if missing:
            t, p = missing[0]
            raise ConfigError(f"topic '{t}' on cluster '{cluster}' has no partition {p}: check --partition")
    results = admin.elect_leaders(kind, partitions)
    elected_topics = sorted({t for t, _ in results})
    deadline = time.monotonic() + admin.timeout_s
    while True:  # the metadata names the elected leader, which answers ListOffsets, once the election propagated
        now_states = partition_states(config, admin, elected_topics)
        after = {(s.topic, s.partition): s for s in now_states}
        pending = [k for k, err in results.items() if err is None and not _propagated(kind, after.get(k))]
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


def _propagated(kind: ElectionKind, state: PartitionState | None) -> bool:
    """Whether ``state`` shows an election's outcome: a preferred one's leader is the first replica (KIP-460)."""
    if state is None or state.log_end_offset < 0:
        return False
    return kind != "preferred" or (bool(state.replicas) and state.leader == state.replicas[0])


__all__ = ["ReplicaStatus", "cluster_admin", "elect", "replica_status"]
