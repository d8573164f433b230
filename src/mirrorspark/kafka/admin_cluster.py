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
"""Seconds an election is waited for beyond the timeout (the request carries no ``request_timeout``)."""


@dataclass(frozen=True)
class PartitionLayout:
    """Leader (``-1``: none), replicas (preferred leader first), ISR and racks of one partition."""

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
        """Describe the cluster (Admin ``describeCluster``, ``DescribeCluster``)."""
        what = "describing the brokers"
        with self._call(what):
            fut = self.admin.describe_cluster(
                include_authorized_operations=include_authorized_operations, request_timeout=self.timeout_s
            )
        return self._wait(fut, what)

    def broker_racks(self) -> dict[int, str | None]:
        """Return every broker of the cluster with its ``broker.rack`` (``DescribeCluster``)."""
        return {n.id: getattr(n, "rack", None) or None for n in self.describe_cluster().nodes}

    def broker_config(self, broker: int | str) -> dict[str, str | None]:
        """Return one broker's config entries (``DescribeConfigs``); a value is ``None`` if sensitive or unset."""
        res = ConfigResource(ConfigResource.Type.BROKER, str(broker))
        what = f"describing the configs of broker {broker}"
        with self._call(what):
            futures = self.admin.describe_configs([res], request_timeout=self.timeout_s)
        entries = self._wait(futures[res], what)
        return {name: entry.value for name, entry in entries.items()}

    # ------------------------------------------------------------------ ACLs

    def describe_acls(self, acl_filter: Any) -> list[Any]:
        """Return the ACL bindings matching a filter (Admin ``describeAcls``, KIP-140); ``[]`` without an authorizer.

        librdkafka 2.16 also answers ``[]`` without DESCRIBE on the cluster: :meth:`describe_cluster` with
        ``include_authorized_operations`` tells the cases apart.
        """
        what = "describing ACLs"
        with self._call(what):
            fut = self.admin.describe_acls(acl_filter, request_timeout=self.timeout_s)
        got = self._settle(fut, what, {KafkaError.SECURITY_DISABLED})
        return [] if isinstance(got, KafkaError) else list(got)

    def create_acls(self, bindings: Sequence[Any]) -> dict[Any, KafkaError | None]:
        """Create ACL bindings (Admin ``createAcls``); per binding ``None`` or the broker's error (not raised)."""
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
        """Return the configs among ``names`` set dynamically on brokers or topics (``DescribeConfigs``)."""
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
        """Delete dynamic configs of brokers or topics (``IncrementalAlterConfigs`` DELETE, KIP-339)."""
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
        """Describe every partition of ``topics``: leader, replicas, ISR and their racks (``DescribeTopics``)."""
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

    def cluster_metadata(self) -> Any:
        """Return the whole ``Metadata`` answer (confluent-kafka ``ClusterMetadata``) for :meth:`partition_metadata`."""
        with self._call("listing topic metadata"):
            return self.admin.list_topics(timeout=self.timeout_s)

    def partition_metadata(self, topics: Iterable[str], *, metadata: Any = None) -> list[PartitionLayout]:
        """Leader, replicas and ISR of every partition of ``topics``, from a ``Metadata`` request (no racks).

        Any live broker answers it, so it answers while a broker is down, unlike :meth:`describe_partitions`
        (librdkafka may keep sending ``DescribeTopics`` to a stopped broker); the failover watch uses it.
        ``metadata``: a :meth:`cluster_metadata` answer to read instead of asking the cluster.
        """
        names = set(topics)
        if not names:
            return []
        md = self.cluster_metadata() if metadata is None else metadata
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
        """Return each partition's log start offset or high watermark; ``-1`` where no leader answers (no retry)."""
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
        """Run a ``"preferred"`` or ``"unclean"`` leader election (``Admin.electLeaders``, KIP-460).

        Returns per partition ``None`` on success, else Kafka's error name (``ELECTION_NOT_NEEDED``...); the request
        carries no ``request_timeout`` (confluent-kafka 2.16.1 fails to parse it): the wait bounds it.
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
