"""Consumer-group calls of :class:`~mirrorspark.kafka.admin.ClusterAdmin`: list, describe, read and commit offsets.

The methods are :class:`GroupCalls`'s, which ``ClusterAdmin`` inherits: use them through a
``ClusterAdmin``. Errors follow the one rule of :mod:`mirrorspark.kafka.admin_base`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, TopicPartition

from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin_base import AdminBase, PartitionKey
from mirrorspark.kafka.protocols import GroupConsumerLike


@dataclass(frozen=True)
class GroupDescription:
    """State and membership of one consumer group.

    Attributes
    ----------
    group:
        The group id.
    state:
        Kafka's state name: ``"Stable"``, ``"PreparingRebalance"``,
        ``"CompletingRebalance"``, ``"Empty"``, ``"Dead"`` (no such group) or ``"Unknown"``.
    members:
        Number of active members (0 for an empty or unknown group).
    """

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
        """Return the ids of the cluster's consumer groups (Admin ``listConsumerGroups``, ``ListGroups``).

        ``ListGroups`` needs no group coordinator, unlike a describe: it answers while one moves.

        Returns
        -------
        list[str]
            Sorted group ids (groups a broker could not list are left out, as Kafka's tools do).

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule (:mod:`~mirrorspark.kafka.admin_base`).
        """
        what = "listing consumer groups"
        with self._call(what):
            fut = self.admin.list_consumer_groups(request_timeout=self.timeout_s)
        result = self._wait(fut, what)
        return sorted({g.group_id for g in result.valid})

    def describe_groups(self, groups: Iterable[str]) -> dict[str, GroupDescription | ClusterError]:
        """Describe consumer groups in one request; each group's failure is its own (``DescribeGroups``).

        A group the coordinator does not know is ``Dead`` with 0 members (also when the broker
        answers ``GROUP_ID_NOT_FOUND``, as KIP-848 coordinators do).

        Parameters
        ----------
        groups:
            Group ids.

        Returns
        -------
        dict[str, GroupDescription | ClusterError]
            Per group, its description, or the error of its failure under the one rule (not raised:
            one group's coordinator loading must not hide the others; e.g. ``COORDINATOR_LOAD_IN_PROGRESS``
            is a retriable ``ClusterError``, no answer a ``ClusterUnreachableError``).

        Raises
        ------
        ClusterError
            The request itself could not be made.
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
        """Describe one consumer group (state and member count); see :meth:`describe_groups`.

        Parameters
        ----------
        group:
            The group id.

        Returns
        -------
        GroupDescription
            ``Dead`` with 0 members for a group the coordinator does not know.

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule, naming the group and the cluster.
        """
        got = self.describe_groups([group])[group]
        if isinstance(got, ClusterError):
            raise got
        return got

    def group_offsets(self, group: str) -> dict[PartitionKey, tuple[int, str]]:
        """Return a consumer group's committed offsets with Admin ``listConsumerGroupOffsets`` (``OffsetFetch``).

        Parameters
        ----------
        group:
            The group id.

        Returns
        -------
        dict[PartitionKey, tuple[int, str]]
            ``{(topic, partition): (committed offset, metadata)}``; the committed offset is the next
            offset the group reads. Partitions without a committed offset are left out; a group that
            does not exist has none (``{}``).

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule, naming the group and the cluster.

        Notes
        -----
        Admin ``listConsumerGroupOffsets`` crashes the process (SIGSEGV, librdkafka issue #5040) when
        the broker answers with a coordinator error, as while a group coordinator moves: a
        long-running process reads group offsets with :meth:`committed_group_offsets`.
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
        """Return a consumer group's committed offsets, read by a consumer of the group (``OffsetFetch``).

        What :meth:`group_offsets` returns, without Admin ``listConsumerGroupOffsets``: librdkafka's
        admin client dereferences a consumer-group handle it does not have when the broker answers
        that request with a coordinator error (``NOT_COORDINATOR``, ``COORDINATOR_NOT_AVAILABLE``: a
        group coordinator moving, e.g. while a broker stops or comes back), and the process dies of
        SIGSEGV (librdkafka issue #5040, open in 2.16). A consumer's own OffsetFetch goes through its
        group handle, which re-queries the coordinator and retries.

        Parameters
        ----------
        consumer:
            A consumer of this cluster whose ``group.id`` is ``group``, never subscribed (it never joins
            the group); the caller closes it.
        group:
            The consumer group (for messages).
        topics:
            The topics to read the group's offsets of; ``None`` = every topic of the cluster.

        Returns
        -------
        dict[PartitionKey, tuple[int, str]]
            ``{(topic, partition): (committed offset, metadata)}`` (committed offset = next offset
            to read); partitions without a committed offset are left out.

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule (the metadata request and the offset fetch each wait :attr:`timeout_s`),
            naming the group and the cluster.
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

        Parameters
        ----------
        group:
            The group id.
        offsets:
            ``{(topic, partition): (committed offset, metadata)}``; the offset is the next offset the
            group will read. Nothing is sent when empty.

        Raises
        ------
        ClusterError
            The broker refused the request or a partition (e.g. ``UNKNOWN_MEMBER_ID`` while consumers
            use the group, or an unknown topic), naming the group, the cluster and the first failing
            partition (``kafka_code`` tells which).
        ClusterUnreachableError
            No answer within :attr:`timeout_s`.
        """
        if not offsets:
            return
        what = f"committing offsets of consumer group '{group}'"
        tps = [TopicPartition(t, p, o, metadata=m) for (t, p), (o, m) in sorted(offsets.items())]
        with self._call(what):
            futures = self.admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, tps)], request_timeout=self.timeout_s
            )
        res = self._wait(futures[group], what)
        for tp in res.topic_partitions or []:
            if tp.error is not None:
                raise self._error(
                    tp.error, f"committing the offset of consumer group '{group}' for {tp.topic}-{tp.partition}"
                )

    def delete_group(self, group: str) -> bool:
        """Delete a consumer group without active members, with its committed offsets (Admin ``deleteConsumerGroups``).

        Parameters
        ----------
        group:
            The group id.

        Returns
        -------
        bool
            ``True`` if it was deleted, ``False`` if the cluster had no such group (``GROUP_ID_NOT_FOUND``).

        Raises
        ------
        ClusterError
            The broker refused (``NON_EMPTY_GROUP`` while consumers use it: ``kafka_code`` tells), naming the
            group and the cluster.
        ClusterUnreachableError
            No answer within :attr:`timeout_s`.
        """
        what = f"deleting consumer group '{group}'"
        with self._call(what):
            futures = self.admin.delete_consumer_groups([group], request_timeout=self.timeout_s)
        got = self._settle(futures[group], what, {KafkaError.GROUP_ID_NOT_FOUND})
        return not isinstance(got, KafkaError)


__all__ = ["GroupCalls", "GroupDescription"]
