"""Consumer-group calls of :class:`~mirrorspark.kafka.admin.ClusterAdmin`: list, describe, read and commit offsets.

The methods are :class:`GroupCalls`'s, which ``ClusterAdmin`` inherits: use them through a
``ClusterAdmin``. Errors follow the one rule of :mod:`mirrorspark.kafka.admin_base`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, TopicPartition

from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin_base import AdminBase, PartitionKey
from mirrorspark.kafka.protocols import GroupConsumerLike

ALTER_IN_FLIGHT = 100
"""Group commits :meth:`GroupCalls.alter_groups_offsets` keeps in flight at once (bounded: far more crashed it)."""


def commit_metadata(metadata: str) -> str | None:
    """Return a commit's metadata as confluent-kafka can send it: ``None`` for ``""``, else the text before a NUL.

    The binding sends a C string and its NUL (``strlen + 1`` bytes), so ``"x"`` followed by NUL (what a
    confluent-kafka client committing ``"x"`` stored) lands as itself; it refuses a NUL inside (``ValueError``):
    what follows one is dropped.
    """
    return metadata.split("\0", 1)[0] if metadata else None


def _commit_partition(topic: str, partition: int, offset: int, metadata: str | None) -> TopicPartition:
    """Return the ``TopicPartition`` of one commit (without metadata when ``None``: the broker stores ``""``)."""
    if metadata is None:
        return TopicPartition(topic, partition, offset)
    return TopicPartition(topic, partition, offset, metadata=metadata)


@dataclass(frozen=True)
class GroupDescription:
    """State (Kafka's name; ``"Dead"``: no such group) and member count of one consumer group."""

    group: str
    state: str
    members: int

    @property
    def exists(self) -> bool:
        """Whether the coordinator knows the group (any state but ``Dead``; an ``Empty`` group has offsets)."""
        return self.state not in ("Dead", "Unknown")

    @property
    def active(self) -> bool:
        """Whether consumers are using the group: members, or a rebalance or stable generation in progress."""
        return self.members > 0 or self.state in ("Stable", "PreparingRebalance", "CompletingRebalance")


_STATE_NAMES = {
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.UNKNOWN: "Unknown",
}


class GroupCalls(AdminBase):
    """The consumer-group methods of :class:`~mirrorspark.kafka.admin.ClusterAdmin` (see there)."""

    def list_groups(self) -> list[str]:
        """Return the ids of the cluster's consumer groups (Admin ``listConsumerGroups``, ``ListGroups``)."""
        what = "listing consumer groups"
        with self._call(what):
            fut = self.admin.list_consumer_groups(request_timeout=self.timeout_s)
        result = self._wait(fut, what)
        return sorted({g.group_id for g in result.valid})

    def describe_groups(self, groups: Iterable[str]) -> dict[str, GroupDescription | ClusterError]:
        """Describe consumer groups in one request (``DescribeGroups``); a group's failure is its value, not raised.

        An unknown group is ``Dead`` with 0 members (also on ``GROUP_ID_NOT_FOUND``, as KIP-848 coordinators answer).
        """
        names = list(dict.fromkeys(groups))
        if not names:
            return {}
        with self._call("describing consumer groups"):
            futures = self.admin.describe_consumer_groups(names, request_timeout=self.timeout_s)
        deadline = self._deadline()
        out: dict[str, GroupDescription | ClusterError] = {}
        for group in names:
            what = f"describing consumer group '{group}'"
            try:
                desc = self._settle(futures[group], what, {KafkaError.GROUP_ID_NOT_FOUND}, deadline=deadline)
            except ClusterError as e:
                out[group] = e
                continue
            if isinstance(desc, KafkaError):
                out[group] = GroupDescription(group, "Dead", 0)
                continue
            state = desc.state if isinstance(desc.state, ConsumerGroupState) else ConsumerGroupState.UNKNOWN
            out[group] = GroupDescription(group, _STATE_NAMES.get(state, "Unknown"), len(desc.members or []))
        return out

    def describe_group(self, group: str) -> GroupDescription:
        """Describe one consumer group (state and member count); see :meth:`describe_groups`."""
        got = self.describe_groups([group])[group]
        if isinstance(got, ClusterError):
            raise got
        return got

    def group_offsets(self, group: str) -> dict[PartitionKey, tuple[int, str]]:
        """Return ``{(topic, partition): (committed offset, metadata)}`` of a group (``listConsumerGroupOffsets``).

        The committed offset is the next offset to read. This call can crash the process (SIGSEGV, librdkafka #5040)
        while a group coordinator moves: long-running processes use :meth:`committed_group_offsets`.
        """
        what = f"listing offsets of consumer group '{group}'"
        with self._call(what):
            futures = self.admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout_s
            )
        res = self._wait(futures[group], what)
        out: dict[PartitionKey, tuple[int, str]] = {}
        for tp in res.topic_partitions or []:
            if tp.error is None and tp.offset >= 0:
                out[(tp.topic, tp.partition)] = (tp.offset, tp.metadata or "")
        return out

    def committed_group_offsets(
        self, consumer: GroupConsumerLike, group: str, *, topics: Iterable[str] | None = None
    ) -> dict[PartitionKey, tuple[int, str]]:
        """Return what :meth:`group_offsets` does, read by ``consumer`` (never subscribed, of group ``group``).

        A consumer's own OffsetFetch re-queries a moving coordinator, where the admin call crashes (librdkafka #5040).
        """
        with self._call(f"listing offsets of consumer group '{group}'"):
            md = consumer.list_topics(timeout=self.timeout_s)
            names = sorted(md.topics) if topics is None else sorted(set(topics) & set(md.topics))
            tps = [TopicPartition(t, p) for t in names for p in sorted(md.topics[t].partitions)]
            got = consumer.committed(tps, timeout=self.timeout_s) if tps else []
        out: dict[PartitionKey, tuple[int, str]] = {}
        for tp in got:
            if tp.error is None and tp.offset >= 0:
                out[(tp.topic, tp.partition)] = (tp.offset, tp.metadata or "")
        return out

    def alter_group_offsets(self, group: str, offsets: Mapping[PartitionKey, tuple[int, str]]) -> None:
        """Commit offsets for a consumer group that has no active members (Admin ``alterConsumerGroupOffsets``).

        Raises ClusterError naming the first failing partition (``UNKNOWN_MEMBER_ID`` while consumers use the group).
        """
        failure = self.alter_groups_offsets({group: offsets}).get(group)
        if failure is not None:
            raise failure

    def alter_groups_offsets(
        self, requests: Mapping[str, Mapping[PartitionKey, tuple[int, str]]], *, in_flight: int = ALTER_IN_FLIGHT
    ) -> dict[str, ClusterError | None]:
        """Commit offsets for many groups without members, at most ``in_flight`` requests at a time (one per group).

        Returns each group's failure (``None``: committed), never raises one: see :meth:`alter_group_offsets`.
        """
        out: dict[str, ClusterError | None] = {}
        groups = sorted(g for g, offsets in requests.items() if offsets)
        for start in range(0, len(groups), max(1, in_flight)):
            wave = groups[start : start + max(1, in_flight)]
            futures = {}
            for group in wave:
                tps = [
                    _commit_partition(t, p, o, commit_metadata(m)) for (t, p), (o, m) in sorted(requests[group].items())
                ]
                try:
                    with self._call(f"committing offsets of consumer group '{group}'"):
                        futures[group] = self.admin.alter_consumer_group_offsets(
                            [ConsumerGroupTopicPartitions(group, tps)], request_timeout=self.timeout_s
                        )[group]
                except ClusterError as e:
                    out[group] = e
            deadline = self._deadline()
            for group, fut in futures.items():
                out[group] = self._altered(group, fut, deadline)
        return out

    def _altered(self, group: str, fut: Future[Any], deadline: float) -> ClusterError | None:
        """Settle one group's commit: ``None`` when every partition was committed, else the first failure."""
        try:
            res = self._wait(fut, f"committing offsets of consumer group '{group}'", deadline=deadline)
        except ClusterError as e:
            return e
        for tp in res.topic_partitions or []:
            if tp.error is not None:
                return self._error(
                    tp.error, f"committing the offset of consumer group '{group}' for {tp.topic}-{tp.partition}"
                )
        return None

    def delete_group(self, group: str) -> bool:
        """Delete a group without active members and its offsets (``deleteConsumerGroups``); ``False`` if unknown.

        Raises ClusterError with ``kafka_code`` ``NON_EMPTY_GROUP`` while consumers use the group.
        """
        what = f"deleting consumer group '{group}'"
        with self._call(what):
            futures = self.admin.delete_consumer_groups([group], request_timeout=self.timeout_s)
        got = self._settle(futures[group], what, {KafkaError.GROUP_ID_NOT_FOUND})
        return not isinstance(got, KafkaError)


__all__ = ["GroupCalls", "GroupDescription", "commit_metadata"]
