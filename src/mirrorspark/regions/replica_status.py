"""Replica status and leader elections of one cluster (``mirrorspark replica-status``, ``mirrorspark elect``).

The Apache Kafka counterparts of Confluent's ``kafka-replica-status`` and of
``kafka-leader-election``: rows are built by :mod:`mirrorspark.core.replica_rows` from
``describe_topics`` and ``list_offsets``; the remote copies that enabled replication flows keep
of each partition in other clusters (mirrorspark's "observers") come from the flows' committed
source offsets (``mm2-offsets.<source>.internal`` on each target), as ``mirrorspark status``
reads them.
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
    """What ``replica-status`` shows of one cluster.

    Attributes
    ----------
    cluster:
        The cluster alias.
    partitions:
        Every selected partition's state (before the ``--leaders`` filter).
    rows:
        One row per replica (:func:`~mirrorspark.core.replica_rows.replica_rows`).
    remote:
        With ``--remote``: ``{(topic, partition): copies in other clusters}``; empty otherwise.
    """

    cluster: str
    partitions: list[PartitionState]
    rows: list[ReplicaRow]
    remote: dict[PartitionKey, list[RemoteCopy]] = field(default_factory=dict)


def cluster_admin(config: MirrorConfig, cluster: str, purpose: str, *, timeout_s: float | None = None) -> ClusterAdmin:
    """Create the admin wrapper of ``cluster`` (its admin settings; ``client.id`` ``<alias>|mirrorspark|<purpose>``).

    Parameters
    ----------
    config:
        The configuration naming the cluster.
    cluster:
        The cluster alias.
    purpose:
        What the client does, the last part of its ``client.id``.
    timeout_s:
        Seconds per call (the commands' ``--timeout``); ``None`` = the configuration's top-level
        ``admin.timeout.ms`` (:meth:`~mirrorspark.client.context.ReplicationContext.cluster_admin`).

    Returns
    -------
    ClusterAdmin
        A new client's wrapper.

    Raises
    ------
    UnknownAliasError
        ``cluster`` is not in ``clusters``.
    ConfigError
        The settings cannot be translated for librdkafka.
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
        Seconds per cluster call; ``None`` = the configuration's top-level ``admin.timeout.ms``.

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
        Seconds for the election and for each describe call, and most seconds to wait for the elected
        leaders to answer; ``None`` = the configuration's top-level ``admin.timeout.ms``.

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
    while True:  # a new leader answers ListOffsets once its election has propagated: wait for it
        now_states = partition_states(config, admin, elected_topics)
        after = {(s.topic, s.partition): s for s in now_states}
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


__all__ = ["ReplicaStatus", "cluster_admin", "elect", "replica_status"]
