"""Cluster-level calls of :class:`~mirrorspark.kafka.admin.ClusterAdmin`: brokers, ACLs, dynamic configs, replicas.

What the replica tools (``replica-status``, ``elect``), the placement tool (racks, throttles) and the
ACL sync need. The methods are :class:`ClusterCalls`'s, which ``ClusterAdmin`` inherits: use them
through a ``ClusterAdmin``. Errors follow the one rule of :mod:`mirrorspark.kafka.admin_base`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, OffsetSpec

from mirrorspark.kafka.admin_base import ANY_ANSWER, AdminBase, PartitionKey

ConfigTarget = tuple[str, str]
"""A config resource: ``("broker", "<id>")`` or ``("topic", "<name>")``."""

_RESOURCE_TYPES = {"broker": ConfigResource.Type.BROKER, "topic": ConfigResource.Type.TOPIC}

_DYNAMIC = frozenset(
    {ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG}
)

ELECTION_GRACE_S: Final = 5.0
"""Seconds an election is waited for beyond the timeout (it carries no ``request_timeout``: see
:meth:`ClusterCalls.elect_leaders`)."""


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


def _config_batches(resources: Iterable[ConfigTarget | ConfigResource]) -> list[list[ConfigResource]]:
    """Split config resources into requests: all topics in one, each broker alone (librdkafka allows one per call)."""
    topics: list[ConfigResource] = []
    brokers: list[list[ConfigResource]] = []
    for r in resources:
        res = r if isinstance(r, ConfigResource) else ConfigResource(_RESOURCE_TYPES[r[0]], r[1])
        if res.restype == ConfigResource.Type.BROKER:
            brokers.append([res])
        else:
            topics.append(res)
    return ([topics] if topics else []) + brokers


def _target(res: ConfigResource) -> ConfigTarget:
    return ("broker" if res.restype == ConfigResource.Type.BROKER else "topic", res.name)


class ClusterCalls(AdminBase):
    """The cluster-level methods of :class:`~mirrorspark.kafka.admin.ClusterAdmin` (see there)."""

    # ------------------------------------------------------------------ brokers

    def describe_cluster(self, *, include_authorized_operations: bool = False) -> Any:
        """Describe the cluster (Admin ``describeCluster``, ``DescribeCluster``).

        Parameters
        ----------
        include_authorized_operations:
            Also return the principal's operations on the cluster resource (KIP-430).

        Returns
        -------
        Any
            confluent-kafka's ``DescribeClusterResult``: ``cluster_id``, ``controller``, ``nodes``
            (``id``, ``host``, ``port``, ``rack``), ``authorized_operations`` (``None`` if not asked,
            every cluster operation without an authorizer).

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule (:mod:`~mirrorspark.kafka.admin_base`).
        """
        what = "describing the brokers"
        with self._call(what):
            fut = self.admin.describe_cluster(
                include_authorized_operations=include_authorized_operations, request_timeout=self.timeout_s
            )
        return self._wait(fut, what)

    def broker_racks(self) -> dict[int, str | None]:
        """Return every broker of the cluster with its ``broker.rack`` (``DescribeCluster``).

        Returns
        -------
        dict[int, str | None]
            ``{broker id: rack}``, ``None`` for a broker without ``broker.rack``.

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule.
        """
        return {n.id: getattr(n, "rack", None) or None for n in self.describe_cluster().nodes}

    def broker_config(self, broker: int | str) -> dict[str, str | None]:
        """Return every config entry of one broker, with its value (``DescribeConfigs`` of a ``BROKER``).

        Parameters
        ----------
        broker:
            The broker id.

        Returns
        -------
        dict[str, str | None]
            ``{name: value}`` (``None`` for a sensitive or unset value).

        Raises
        ------
        ClusterError
            E.g. ``CLUSTER_AUTHORIZATION_FAILED``: the principal lacks ``DESCRIBE_CONFIGS`` on the cluster.
        ClusterUnreachableError
            No answer within :attr:`timeout_s`.
        """
        res = ConfigResource(ConfigResource.Type.BROKER, str(broker))
        what = f"describing the configs of broker {broker}"
        with self._call(what):
            futures = self.admin.describe_configs([res], request_timeout=self.timeout_s)
        entries = self._wait(futures[res], what)
        return {name: entry.value for name, entry in entries.items()}

    # ------------------------------------------------------------------ ACLs

    def describe_acls(self, acl_filter: Any) -> list[Any]:
        """Return the ACL bindings matching a filter (Admin ``describeAcls``, KIP-140).

        Parameters
        ----------
        acl_filter:
            A confluent-kafka ``AclBindingFilter``.

        Returns
        -------
        list[AclBinding]
            The bindings; ``[]`` when the cluster has no authorizer (``SECURITY_DISABLED``).

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule (e.g. ``CLUSTER_AUTHORIZATION_FAILED``: no DESCRIBE on the cluster).

        Notes
        -----
        librdkafka 2.16 reports no error, but an empty list, without an authorizer or without DESCRIBE on
        the cluster; :meth:`describe_cluster` with ``include_authorized_operations`` tells the cases apart.
        """
        what = "describing ACLs"
        with self._call(what):
            fut = self.admin.describe_acls(acl_filter, request_timeout=self.timeout_s)
        got = self._settle(fut, what, {KafkaError.SECURITY_DISABLED})
        return [] if isinstance(got, KafkaError) else list(got)

    def create_acls(self, bindings: Sequence[Any]) -> dict[Any, KafkaError | None]:
        """Create ACL bindings (Admin ``createAcls``); each binding's outcome is reported, not raised.

        Parameters
        ----------
        bindings:
            confluent-kafka ``AclBinding`` objects.

        Returns
        -------
        dict[AclBinding, KafkaError | None]
            Per binding, ``None`` when created, else the broker's error (``SECURITY_DISABLED`` without an
            authorizer, ``CLUSTER_AUTHORIZATION_FAILED`` without ALTER on the cluster...): bindings created
            before a failure stay created, and the caller decides what a failure means.

        Raises
        ------
        ClusterUnreachableError
            No answer within :attr:`timeout_s`.
        ClusterError
            The request itself could not be made.
        """
        if not bindings:
            return {}
        what = "creating ACLs"
        with self._call(what):
            futures = self.admin.create_acls(list(bindings), request_timeout=self.timeout_s)
        deadline = self._deadline()
        out: dict[Any, KafkaError | None] = {}
        for binding, fut in futures.items():
            got = self._settle(fut, what, ANY_ANSWER, deadline=deadline)
            out[binding] = got if isinstance(got, KafkaError) else None
        return out

    # ------------------------------------------------------------------ dynamic configs

    def dynamic_configs(
        self, resources: Iterable[ConfigTarget], names: Iterable[str]
    ) -> dict[ConfigTarget, dict[str, str]]:
        """Return the configs among ``names`` set dynamically on brokers or topics (``DescribeConfigs``).

        Parameters
        ----------
        resources:
            ``("broker", id)`` / ``("topic", name)`` pairs.
        names:
            The config names of interest, e.g. ``leader.replication.throttled.rate``.

        Returns
        -------
        dict[ConfigTarget, dict[str, str]]
            Per resource, the names set on that broker or topic (not defaults, not static
            ``server.properties`` values) with their values; topics that do not exist are left out.

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule.
        """
        wanted = set(names)
        keys = list(dict.fromkeys(resources))
        if not keys:
            return {}
        futures: dict[ConfigResource, Future[Any]] = {}
        with self._call("describing configs"):
            for batch in _config_batches(keys):
                futures.update(self.admin.describe_configs(batch, request_timeout=self.timeout_s))
        deadline = self._deadline()
        out: dict[ConfigTarget, dict[str, str]] = {}
        for res, fut in futures.items():
            key = _target(res)
            what = f"describing configs of {key[0]} '{key[1]}'"
            entries = self._settle(fut, what, {KafkaError.UNKNOWN_TOPIC_OR_PART}, deadline=deadline)
            if isinstance(entries, KafkaError):
                continue
            out[key] = {
                name: str(entry.value)
                for name, entry in entries.items()
                if name in wanted and entry.value is not None and ConfigSource(entry.source) in _DYNAMIC
            }
        return out

    def delete_dynamic_configs(self, changes: Mapping[ConfigTarget, Iterable[str]]) -> None:
        """Delete dynamic configs of brokers or topics (``IncrementalAlterConfigs`` DELETE, KIP-339).

        Parameters
        ----------
        changes:
            ``{("broker", id) or ("topic", name): config names to delete}``; empty name lists are skipped.

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule, naming the first resource that failed.
        """
        resources = [
            ConfigResource(
                _RESOURCE_TYPES[kind],
                name,
                incremental_configs=[
                    ConfigEntry(n, None, incremental_operation=AlterConfigOpType.DELETE) for n in sorted(set(entries))
                ],
            )
            for (kind, name), entries in changes.items()
            if entries
        ]
        if not resources:
            return
        futures: dict[ConfigResource, Future[Any]] = {}
        with self._call("altering configs"):
            for batch in _config_batches(resources):
                futures.update(self.admin.incremental_alter_configs(batch, request_timeout=self.timeout_s))
        deadline = self._deadline()
        for res, fut in futures.items():
            kind, name = _target(res)
            self._wait(fut, f"altering configs of {kind} '{name}'", deadline=deadline)

    # ------------------------------------------------------------------ replicas and leaders

    def describe_partitions(self, topics: Iterable[str]) -> list[PartitionLayout]:
        """Describe every partition of ``topics``: leader, replicas, ISR and the replicas' racks (``DescribeTopics``).

        Parameters
        ----------
        topics:
            Topic names; topics that do not exist are left out.

        Returns
        -------
        list[PartitionLayout]
            Sorted by topic and partition.

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule (a topic that does not exist is no error).
        """
        names = sorted(set(topics))
        if not names:
            return []
        with self._call("describing topics"):
            futures = self.admin.describe_topics(TopicCollection(names), request_timeout=self.timeout_s)
        deadline = self._deadline()
        out: list[PartitionLayout] = []
        for name, fut in sorted(futures.items()):
            d = self._settle(fut, f"describing topic '{name}'", {KafkaError.UNKNOWN_TOPIC_OR_PART}, deadline=deadline)
            if isinstance(d, KafkaError):
                continue
            for p in sorted(d.partitions, key=lambda p: p.id):
                out.append(
                    PartitionLayout(
                        topic=name,
                        partition=p.id,
                        leader=p.leader.id if p.leader is not None and p.leader.id >= 0 else -1,
                        replicas=tuple(n.id for n in p.replicas),
                        isr=tuple(n.id for n in p.isr),
                        racks={n.id: (getattr(n, "rack", None) or None) for n in p.replicas},
                        internal=bool(d.is_internal),
                    )
                )
        return out

    def partition_metadata(self, topics: Iterable[str]) -> list[PartitionLayout]:
        """Leader, replicas and ISR of every partition of ``topics``, from a ``Metadata`` request (no racks).

        Any live broker answers a ``Metadata`` request, so this still answers while a broker is
        down, which :meth:`describe_partitions` (``DescribeTopics``) may not: librdkafka can keep
        sending that one to a stopped broker until the call times out. The failover watch
        observes the source with it.

        Parameters
        ----------
        topics:
            Topic names; topics that do not exist (or whose metadata carries an error) are left out.

        Returns
        -------
        list[PartitionLayout]
            Sorted by topic and partition; ``racks`` empty, ``internal`` false.

        Raises
        ------
        ClusterError, ClusterUnreachableError
            The one rule.
        """
        names = set(topics)
        if not names:
            return []
        with self._call("listing topic metadata"):
            md = self.admin.list_topics(timeout=self.timeout_s)
        out: list[PartitionLayout] = []
        for name in sorted(names & set(md.topics)):
            meta = md.topics[name]
            if meta.error is not None:
                continue
            for p in sorted(meta.partitions.values(), key=lambda p: p.id):
                leader = p.leader if p.leader >= 0 else -1
                out.append(PartitionLayout(name, p.id, leader, tuple(p.replicas), tuple(p.isrs), {}, False))
        return out

    def partition_offsets(self, partitions: Iterable[PartitionKey], *, earliest: bool) -> dict[PartitionKey, int]:
        """Return each partition's log start offset or high watermark; ``-1`` where no leader answers.

        Unlike :meth:`~mirrorspark.kafka.admin.ClusterAdmin.end_offsets` nothing is retried and no
        partition's failure is an error: a partition without a leader (offline, or mid-election) is
        reported, not waited for (``replica-status``).

        Parameters
        ----------
        partitions:
            ``(topic, partition)`` pairs.
        earliest:
            True for the log start offset, False for the high watermark (``read_uncommitted``).

        Returns
        -------
        dict[PartitionKey, int]
            Every asked partition, ``-1`` where no offset came back within :attr:`timeout_s`.

        Raises
        ------
        ClusterError
            The request itself could not be made.
        """
        keys = list(dict.fromkeys(partitions))
        if not keys:
            return {}
        spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()
        with self._call("listing offsets"):
            futures = self.admin.list_offsets(
                {TopicPartition(t, p): spec for t, p in keys}, request_timeout=self.timeout_s
            )
        deadline = self._deadline()
        out: dict[PartitionKey, int] = dict.fromkeys(keys, -1)
        for tp, fut in futures.items():
            try:  # a partition's failure is its -1: decided here, so the one rule never sees it
                out[(tp.topic, tp.partition)] = int(fut.result(timeout=self._left(deadline, self.timeout_s)).offset)
            except (KafkaException, TimeoutError):
                continue
        return out

    def elect_leaders(self, kind: str, partitions: Iterable[PartitionKey] | None) -> dict[PartitionKey, str | None]:
        """Run a leader election (``Admin.electLeaders``, KIP-460; the ``kafka-leader-election`` tool's call).

        Parameters
        ----------
        kind:
            ``"preferred"`` (make each partition's first replica the leader, if in the ISR) or
            ``"unclean"`` (elect any live replica of a partition without a leader: records it
            did not have are lost).
        partitions:
            The partitions, or ``None`` for every partition of the cluster.

        Returns
        -------
        dict[PartitionKey, str | None]
            Per partition the broker's outcome: ``None`` on success, else Kafka's error name
            (``ELECTION_NOT_NEEDED`` when the wanted leader already leads, ``ELIGIBLE_LEADERS_NOT_AVAILABLE``,
            ``PREFERRED_LEADER_NOT_AVAILABLE``, ``UNKNOWN_TOPIC_OR_PART``...).

        Raises
        ------
        ClusterError
            The request itself failed (e.g. ``CLUSTER_AUTHORIZATION_FAILED``: ALTER on the cluster is needed).
        ClusterUnreachableError
            No answer within :attr:`timeout_s` (+ :data:`ELECTION_GRACE_S`).

        Notes
        -----
        The request carries no ``request_timeout``/``operation_timeout``: confluent-kafka 2.16.1 fails to
        parse them (``SystemError``); the wait bounds it.
        """
        election = ElectionType.UNCLEAN if kind == "unclean" else ElectionType.PREFERRED
        tps = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
        what = f"a {kind} leader election"
        hints = {KafkaError.CLUSTER_AUTHORIZATION_FAILED: ": the principal needs ALTER on the cluster"}
        with self._call(what, hints):
            fut = self.admin.elect_leaders(election, tps)
        result = self._wait(fut, what, deadline=self._deadline() + ELECTION_GRACE_S, hints=hints)
        out: dict[PartitionKey, str | None] = {}
        for tp, outcome in result.items():
            err = outcome.args[0] if isinstance(outcome, KafkaException) and outcome.args else outcome
            if outcome is None:
                out[(tp.topic, tp.partition)] = None
            else:
                out[(tp.topic, tp.partition)] = err.name() if isinstance(err, KafkaError) else str(outcome)
        return out


__all__ = ["ELECTION_GRACE_S", "ClusterCalls", "ConfigTarget", "PartitionLayout"]
