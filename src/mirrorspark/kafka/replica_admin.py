"""Admin calls about replicas: partition layout with racks, per-partition offsets, leader elections.

What ``replica-status`` and ``elect`` need from confluent-kafka's ``AdminClient``
(``describe_topics`` with ``Node.rack``, ``list_offsets``, ``elect_leaders``); errors are
translated at the boundary as in :mod:`mirrorspark.kafka.admin`, except that a partition
without a leader is a normal outcome (its offsets are ``-1``), never an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import PartitionKey, wait
from mirrorspark.kafka.factory import serve_logs


@dataclass(frozen=True)
class PartitionLayout:
    """Leader, replicas, ISR and racks of one partition (``describe_topics``).

    Attributes
    ----------
    topic, partition:
        The partition.
    leader:
        The leader's broker id, ``-1`` when the partition has none.
    replicas, isr:
        Broker ids of the assigned replicas (preferred leader first) and of the in-sync replicas.
    racks:
        ``{broker id: broker.rack or None}`` of the replicas.
    internal:
        Kafka's ``is_internal`` flag of the topic (``__consumer_offsets``, ``__transaction_state``).
    """

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    racks: Mapping[int, str | None]
    internal: bool


def _error_of(e: KafkaException) -> KafkaError | None:
    err = e.args[0] if e.args else None
    return err if isinstance(err, KafkaError) else None


def describe_partitions(
    admin: AdminClient, alias: str, topics: Iterable[str], *, timeout_s: float = 30.0
) -> list[PartitionLayout]:
    """Describe every partition of ``topics``: leader, replicas, ISR and the replicas' racks.

    Parameters
    ----------
    admin:
        An admin client of the cluster.
    alias:
        The cluster's alias (for messages).
    topics:
        Topic names; topics that do not exist are left out.
    timeout_s:
        Seconds per call.

    Returns
    -------
    list[PartitionLayout]
        Sorted by topic and partition.

    Raises
    ------
    ClusterError
        A topic cannot be described (other than not existing).
    ClusterUnreachableError
        No answer within ``timeout_s``.
    """
    names = sorted(set(topics))
    if not names:
        return []
    serve_logs(admin)
    futures = admin.describe_topics(TopicCollection(names), request_timeout=timeout_s)
    out: list[PartitionLayout] = []
    for name, fut in sorted(futures.items()):
        try:
            d = wait(fut, timeout_s, f"describing topic '{name}'", alias)
        except KafkaException as e:
            err = _error_of(e)
            if err is not None and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            raise ClusterError(f"describing topic '{name}' on cluster '{alias}' failed: {e}") from e
        for p in sorted(d.partitions, key=lambda p: p.id):
            racks = {n.id: (n.rack or None) for n in p.replicas}
            out.append(
                PartitionLayout(
                    topic=name,
                    partition=p.id,
                    leader=p.leader.id if p.leader is not None and p.leader.id >= 0 else -1,
                    replicas=tuple(n.id for n in p.replicas),
                    isr=tuple(n.id for n in p.isr),
                    racks=racks,
                    internal=bool(d.is_internal),
                )
            )
    return out


def partition_offsets(
    admin: AdminClient,
    alias: str,
    partitions: Iterable[PartitionKey],
    *,
    earliest: bool,
    timeout_s: float = 15.0,
) -> dict[PartitionKey, int]:
    """Return each partition's log start offset (``earliest``) or high watermark; ``-1`` where no leader answers.

    Unlike :func:`mirrorspark.kafka.admin.end_offsets` nothing is retried: a partition without a
    leader (offline, or mid-election) is reported, not waited for.

    Parameters
    ----------
    admin, alias:
        The cluster's admin client and alias.
    partitions:
        ``(topic, partition)`` pairs.
    earliest:
        True for the log start offset, False for the high watermark (``read_uncommitted``).
    timeout_s:
        Seconds for the whole call.

    Returns
    -------
    dict[PartitionKey, int]
        Every asked partition, ``-1`` where no offset came back.
    """
    keys = list(dict.fromkeys(partitions))
    if not keys:
        return {}
    serve_logs(admin)
    spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()
    futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in keys}, request_timeout=timeout_s)
    out: dict[PartitionKey, int] = dict.fromkeys(keys, -1)
    for tp, fut in futures.items():
        try:
            out[(tp.topic, tp.partition)] = int(fut.result(timeout=timeout_s).offset)
        except (KafkaException, TimeoutError):
            continue
    return out


def elect_leaders(
    admin: AdminClient,
    alias: str,
    kind: str,
    partitions: Iterable[PartitionKey] | None,
    *,
    timeout_s: float = 60.0,
) -> dict[PartitionKey, str | None]:
    """Run a leader election (``Admin.electLeaders``, the ``kafka-leader-election`` tool's call).

    Parameters
    ----------
    admin, alias:
        The cluster's admin client and alias.
    kind:
        ``"preferred"`` (make each partition's first replica the leader, if in the ISR) or
        ``"unclean"`` (elect any live replica of a partition without a leader: records it
        did not have are lost).
    partitions:
        The partitions, or ``None`` for every partition of the cluster.
    timeout_s:
        Seconds for the request and the election to propagate.

    Returns
    -------
    dict[PartitionKey, str | None]
        Per partition the broker's outcome: ``None`` on success, else Kafka's error name
        (``ELECTION_NOT_NEEDED`` when the wanted leader already leads, ``ELIGIBLE_LEADERS_NOT_AVAILABLE``,
        ``PREFERRED_LEADER_NOT_AVAILABLE``, ``UNKNOWN_TOPIC_OR_PART``...).

    Raises
    ------
    ClusterError
        The request itself failed (e.g. not authorized: ALTER on the cluster is needed).
    ClusterUnreachableError
        No answer within ``timeout_s``.
    """
    election = ElectionType.UNCLEAN if kind == "unclean" else ElectionType.PREFERRED
    tps = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
    serve_logs(admin)
    # no request_timeout/operation_timeout: confluent-kafka 2.16.1 fails to parse them (SystemError); wait() bounds it
    fut = admin.elect_leaders(election, tps)
    try:
        result = wait(fut, timeout_s + 5, f"a {kind} leader election", alias)
    except KafkaException as e:
        err = _error_of(e)
        raise ClusterError(
            f"a {kind} leader election on cluster '{alias}' failed: {err.str() if err else e}"
            + (
                ": the principal needs ALTER on the cluster"
                if err is not None and err.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
                else ""
            ),
            kafka_code=err.name() if err is not None else None,
            retriable=bool(err is not None and err.retriable()),
        ) from e
    out: dict[PartitionKey, str | None] = {}
    for tp, outcome in result.items():
        if outcome is None:
            out[(tp.topic, tp.partition)] = None
            continue
        err = _error_of(outcome) if isinstance(outcome, KafkaException) else outcome
        out[(tp.topic, tp.partition)] = err.name() if isinstance(err, KafkaError) else str(outcome)
    return out


__all__ = ["PartitionLayout", "describe_partitions", "elect_leaders", "partition_offsets"]
