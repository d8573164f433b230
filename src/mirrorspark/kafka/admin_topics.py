"""Topic, topic-config and offset calls of :class:`~mirrorspark.kafka.admin.ClusterAdmin`.

The methods are :class:`TopicCalls`'s, which ``ClusterAdmin`` inherits: use them through a
``ClusterAdmin``. Errors follow the one rule of :mod:`mirrorspark.kafka.admin_base`; a call's own
outcomes (an unknown topic, "already exists", "already that many partitions") are no errors.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import IsolationLevel, KafkaError, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from mirrorspark.errors import ClusterError, ClusterUnreachableError
from mirrorspark.kafka.admin_base import AdminBase, PartitionKey

CREATE_TOPICS_CHUNK: Final = 500
"""Most topics one ``CreateTopics`` request carries (:meth:`~mirrorspark.kafka.admin.ClusterAdmin.create_topics`)."""
CREATE_PARTITIONS_CHUNK: Final = 5000
"""Most partitions one ``CreateTopics`` request carries (a bigger topic goes alone): a KRaft controller refuses a
request of more than 10,000 records, one per topic and per partition, with ``POLICY_VIOLATION`` ("Excessively large
number of partitions per request"; 100 topics x 100 partitions were refused)."""

_REPLICATION_FACTOR_HINT = (
    " — the cluster has fewer brokers than the replication factor: set the matching "
    "*.replication.factor key to -1 (broker default) or to the broker count"
)


@dataclass(frozen=True)
class TopicDescription:
    """Partition layout of one topic."""

    name: str
    replicas: tuple[tuple[int, ...], ...]
    topic_id: str | None = None


@dataclass(frozen=True)
class ConfigValue:
    """One topic config entry as a remote topic's sync sees it."""

    value: str | None
    is_default: bool


@dataclass(frozen=True)
class TopicSpec:
    """A topic to create: name, partition count, replication factor (``-1`` = broker default), configs."""

    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str] = field(default_factory=dict)
    assignment: Sequence[Sequence[int]] | None = None


def create_chunks(topics: Sequence[TopicSpec]) -> list[Sequence[TopicSpec]]:
    """Split ``topics`` into ``CreateTopics`` requests of ≤ 500 topics and ≤ 5,000 partitions (a bigger topic alone)."""
    chunks: list[Sequence[TopicSpec]] = []
    start = partitions = 0
    for i, t in enumerate(topics):
        n = max(t.partitions, len(t.assignment or ()), 1)
        if i > start and (i - start >= CREATE_TOPICS_CHUNK or partitions + n > CREATE_PARTITIONS_CHUNK):
            chunks.append(topics[start:i])
            start, partitions = i, 0
        partitions += n
    if start < len(topics):
        chunks.append(topics[start:])
    return chunks


def _new_topic(t: TopicSpec) -> NewTopic:
    if t.assignment is None:
        return NewTopic(
            t.name, num_partitions=t.partitions, replication_factor=t.replication_factor, config=dict(t.config)
        )
    return NewTopic(
        t.name,
        num_partitions=len(t.assignment),
        replica_assignment=[list(r) for r in t.assignment],
        config=dict(t.config),
    )


_REFUSALS: Final = frozenset(
    {
        KafkaError.TOPIC_ALREADY_EXISTS,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.POLICY_VIOLATION,
        KafkaError.INVALID_CONFIG,
        KafkaError.INVALID_REPLICATION_FACTOR,
        KafkaError.INVALID_PARTITIONS,
        KafkaError.INVALID_REPLICA_ASSIGNMENT,
        KafkaError.TOPIC_EXCEPTION,
    }
)
"""A validate-only ``CreateTopics``'s answers about a topic (not failures of the call)."""


_MISSING: Final = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART})
_HIDDEN_OR_MISSING: Final = _MISSING | {KafkaError.TOPIC_AUTHORIZATION_FAILED}


def _retriable(e: BaseException) -> bool:
    return isinstance(e, ClusterError) and e.retriable


class TopicCalls(AdminBase):
    """The topic, topic-config and offset methods of :class:`~mirrorspark.kafka.admin.ClusterAdmin` (see there)."""

    def list_topics(self) -> dict[str, int]:
        """Return ``{topic: partition count}`` for every topic of the cluster, internal ones included (``Metadata``)."""
        with self._call("listing topics"):
            md = self.admin.list_topics(timeout=self.timeout_s)
        return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}

    def describe_topics(self, topics: Iterable[str], *, hidden_as_missing: bool = False) -> dict[str, TopicDescription]:
        """Describe topics (``DescribeTopics``): replicas per partition and KIP-516 topic id; a missing one left out.

        ``hidden_as_missing`` leaves out a topic the principal may not describe too, as a ``Metadata`` listing hides
        it, instead of raising ClusterError ``TOPIC_AUTHORIZATION_FAILED``.
        """
        names = list(dict.fromkeys(topics))
        if not names:
            return {}
        with self._call("describing topics"):
            futures = self.admin.describe_topics(TopicCollection(names), request_timeout=self.timeout_s)
        deadline = self._deadline()
        absent = _HIDDEN_OR_MISSING if hidden_as_missing else _MISSING
        out: dict[str, TopicDescription] = {}
        for name, fut in futures.items():
            d = self._settle(fut, f"describing topic '{name}'", absent, deadline=deadline)
            if isinstance(d, KafkaError):
                continue
            parts = sorted(d.partitions, key=lambda p: p.id)
            tid = getattr(d, "topic_id", None)
            out[name] = TopicDescription(
                name, tuple(tuple(r.id for r in p.replicas) for p in parts), str(tid) if tid is not None else None
            )
        return out

    def create_topics(self, topics: Sequence[TopicSpec], *, wait_for_leaders: bool = True) -> list[str]:
        """Create the topics that do not exist yet, in batched requests (MM2 ``TopicAdmin.createOrFindTopics``).

        Returns the names created; with ``wait_for_leaders``, waits (≤ :attr:`timeout_s`) until their partitions have
        leaders. Raises ClusterError on any failure but "already exists", naming the first failed topic (the
        others stay created).
        """
        created: list[str] = []
        failure: ClusterError | None = None
        hints = {KafkaError.INVALID_REPLICATION_FACTOR: _REPLICATION_FACTOR_HINT}
        for chunk in create_chunks(topics):
            with self._call("creating topics"):
                futures = self.admin.create_topics([_new_topic(t) for t in chunk], request_timeout=self.timeout_s)
            deadline = self._deadline()
            for t in chunk:
                what = f"creating topic '{t.name}'"
                try:
                    got = self._settle(
                        futures[t.name], what, {KafkaError.TOPIC_ALREADY_EXISTS}, deadline=deadline, hints=hints
                    )
                except ClusterUnreachableError:
                    raise
                except ClusterError as e:
                    failure = failure or e
                    continue
                if not isinstance(got, KafkaError):
                    created.append(t.name)
        if created and wait_for_leaders:
            self._wait_for_leaders(created)
        if failure is not None:
            raise failure
        return created

    def validate_topics(self, topics: Sequence[TopicSpec]) -> dict[str, KafkaError]:
        """Ask the brokers whether they would create ``topics`` (``CreateTopics``, ``validate_only``), creating none.

        Returns ``{topic: Kafka error}`` of those refused, e.g. ``TOPIC_AUTHORIZATION_FAILED`` (no CREATE) or
        ``POLICY_VIOLATION``; "already exists" is no refusal. Raises ClusterError when the call itself fails.
        """
        refused: dict[str, KafkaError] = {}
        for chunk in create_chunks(topics):
            with self._call("validating topics"):
                futures = self.admin.create_topics(
                    [_new_topic(t) for t in chunk], request_timeout=self.timeout_s, validate_only=True
                )
            deadline = self._deadline()
            for t in chunk:
                got = self._settle(futures[t.name], f"validating topic '{t.name}'", _REFUSALS, deadline=deadline)
                if isinstance(got, KafkaError) and got.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    refused[t.name] = got
        return refused

    def ensure_topic(
        self, name: str, *, partitions: int, replication_factor: int, config: Mapping[str, str] | None = None
    ) -> bool:
        """Create one topic unless it exists (:meth:`create_topics` of one :class:`TopicSpec`)."""
        return bool(self.create_topics([TopicSpec(name, partitions, replication_factor, dict(config or {}))]))

    def _wait_for_leaders(self, names: Sequence[str]) -> None:
        """Poll metadata until every partition of the new topics has a leader (≤ :attr:`timeout_s`)."""
        deadline = self._deadline()
        waiting = set(names)
        while True:
            # One topic: ask for it alone; many: one request for all topics is cheaper than one each.
            only = next(iter(waiting)) if len(waiting) == 1 else None
            with self._call("waiting for the leaders of new topics"):
                md = self.admin.list_topics(topic=only, timeout=max(0.5, self._left(deadline, 0.5))).topics
            for name in list(waiting):
                t = md.get(name)
                if (
                    t is not None
                    and t.error is None
                    and t.partitions
                    and all(p.leader >= 0 for p in t.partitions.values())
                ):
                    waiting.discard(name)
            if not waiting:
                return
            if time.monotonic() > deadline:
                first = sorted(waiting)[0]
                raise ClusterError(
                    f"topic '{first}' on cluster '{self.alias}' has no leader {self.timeout_s:.0f} s after creation"
                    + (f" ({len(waiting) - 1} more topics neither)" if len(waiting) > 1 else "")
                    + f": check the brokers of '{self.alias}', or raise '{self.timeout_setting}'"
                )
            time.sleep(0.05)

    def create_partitions(
        self, increases: Mapping[str, int], *, assignments: Mapping[str, Sequence[Sequence[int]]] | None = None
    ) -> None:
        """Grow topics to the given partition counts (``CreatePartitions``; MM2 never shrinks)."""
        if not increases:
            return
        placed = assignments or {}
        new = [
            NewPartitions(t, n, replica_assignment=[list(r) for r in placed[t]]) if t in placed else NewPartitions(t, n)
            for t, n in increases.items()
        ]
        with self._call("adding partitions"):
            futures = self.admin.create_partitions(new, request_timeout=self.timeout_s)
        deadline = self._deadline()
        for topic, fut in futures.items():
            self._settle(fut, f"adding partitions to '{topic}'", {KafkaError.INVALID_PARTITIONS}, deadline=deadline)

    # ------------------------------------------------------------------ topic configs

    def describe_topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, ConfigValue]]:
        """Every syncable config entry of topics: not read-only, not sensitive, not static broker config."""
        out: dict[str, dict[str, ConfigValue]] = {}
        for topic, entries in self._topic_config_entries(topics).items():
            kept: dict[str, ConfigValue] = {}
            for name, entry in entries.items():
                if entry.is_read_only or entry.is_sensitive:
                    continue
                source = ConfigSource(entry.source)
                if source == ConfigSource.STATIC_BROKER_CONFIG:
                    continue
                kept[name] = ConfigValue(entry.value, source == ConfigSource.DEFAULT_CONFIG)
            out[topic] = kept
        return out

    def topic_config_values(self, topics: Iterable[str]) -> dict[str, dict[str, str | None]]:
        """Return every config value topics run with, whatever sets it (topic, broker, default)."""
        return {
            topic: {name: entry.value for name, entry in entries.items()}
            for topic, entries in self._topic_config_entries(topics).items()
        }

    def _topic_config_entries(self, topics: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Return ``DescribeConfigs`` of topics: confluent-kafka's ``ConfigEntry`` per topic (missing ones left out)."""
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in dict.fromkeys(topics)]
        if not resources:
            return {}
        with self._call("describing topic configs"):
            futures = self.admin.describe_configs(resources, request_timeout=self.timeout_s)
        deadline = self._deadline()
        out: dict[str, dict[str, Any]] = {}
        for res, fut in futures.items():
            what = f"describing configs of topic '{res.name}'"
            entries = self._settle(fut, what, {KafkaError.UNKNOWN_TOPIC_OR_PART}, deadline=deadline)
            if not isinstance(entries, KafkaError):
                out[res.name] = dict(entries)
        return out

    def topic_configs(self, topics: Iterable[str], *, include_defaults: bool) -> dict[str, dict[str, str]]:
        """Return the configs a remote topic should carry: MM2's non-incremental filter (``targetConfig``).

        Defaults are dropped unless ``include_defaults`` (``use.defaults.from=source``); the caller applies
        ``config.properties.exclude``.
        """
        return {
            topic: {
                name: v.value
                for name, v in entries.items()
                if v.value is not None and (include_defaults or not v.is_default)
            }
            for topic, entries in self.describe_topic_configs(topics).items()
        }

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, str | None]]) -> None:
        """Apply incremental config changes to topics (``IncrementalAlterConfigs``, KIP-339); ``None`` deletes one."""
        resources = [
            ConfigResource(
                ConfigResource.Type.TOPIC,
                topic,
                incremental_configs=[
                    ConfigEntry(
                        name,
                        value,
                        incremental_operation=AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET,
                    )
                    for name, value in sorted(entries.items())
                ],
            )
            for topic, entries in changes.items()
            if entries
        ]
        if not resources:
            return
        with self._call("altering topic configs"):
            futures = self.admin.incremental_alter_configs(resources, request_timeout=self.timeout_s)
        deadline = self._deadline()
        for res, fut in futures.items():
            self._wait(fut, f"altering configs of topic '{res.name}'", deadline=deadline)

    # ------------------------------------------------------------------ offsets

    def end_offsets(
        self, partitions: Iterable[PartitionKey], *, read_committed: bool = False
    ) -> dict[PartitionKey, int]:
        """Return each partition's end offset (``ListOffsets`` latest: the Java consumer's ``endOffsets``)."""
        return self._list_offsets(partitions, OffsetSpec.latest(), read_committed)

    def start_offsets(self, partitions: Iterable[PartitionKey]) -> dict[PartitionKey, int]:
        """Return each partition's log start offset, the earliest offset still stored (``ListOffsets`` earliest)."""
        return self._list_offsets(partitions, OffsetSpec.earliest(), False)

    def offsets_for_timestamp(self, partitions: Iterable[PartitionKey], timestamp_ms: int) -> dict[PartitionKey, int]:
        """Return each partition's first offset whose timestamp is at or after ``timestamp_ms``; ``-1`` if none is."""
        return self._list_offsets(partitions, OffsetSpec.for_timestamp(timestamp_ms), False)

    def _list_offsets(
        self, partitions: Iterable[PartitionKey], spec: OffsetSpec, read_committed: bool
    ) -> dict[PartitionKey, int]:
        """``ListOffsets``, retried on retriable errors for at most :attr:`timeout_s`."""
        req = {TopicPartition(t, p): spec for t, p in dict.fromkeys(partitions)}
        if not req:
            return {}
        retrying = Retrying(
            retry=retry_if_exception(_retriable),
            stop=stop_after_delay(self.timeout_s),
            wait=wait_exponential(multiplier=0.05, max=1.0),
            reraise=True,
        )
        return retrying(self._list_offsets_once, req, read_committed)

    def _list_offsets_once(
        self, req: Mapping[TopicPartition, OffsetSpec], read_committed: bool
    ) -> dict[PartitionKey, int]:
        iso = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        with self._call("listing offsets"):
            futures = self.admin.list_offsets(dict(req), isolation_level=iso, request_timeout=self.timeout_s)
        deadline = self._deadline()
        out: dict[PartitionKey, int] = {}
        for tp, fut in futures.items():
            what = f"listing offsets of {tp.topic}-{tp.partition}"
            got = self._settle(fut, what, {KafkaError.UNKNOWN_TOPIC_OR_PART}, deadline=deadline)
            if not isinstance(got, KafkaError):  # UNKNOWN_TOPIC_OR_PART: deleted meanwhile, left out
                out[(tp.topic, tp.partition)] = got.offset
        return out


__all__ = [
    "CREATE_PARTITIONS_CHUNK",
    "CREATE_TOPICS_CHUNK",
    "ConfigValue",
    "TopicCalls",
    "TopicDescription",
    "TopicSpec",
    "create_chunks",
]
