"""Kafka admin calls with errors translated at the boundary: topics, configs, offsets, consumer groups.

Admin calls that fail raise :class:`~mirrorspark.errors.ClusterError` naming the cluster
alias (with Kafka's error code and whether it is retriable), never a raw ``KafkaException``;
a call that times out raises :class:`~mirrorspark.errors.ClusterUnreachableError`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from tenacity import retry, retry_if_exception, stop_after_delay, wait_exponential

from mirrorspark.errors import ClusterError, ClusterUnreachableError
from mirrorspark.kafka.factory import serve_logs

PartitionKey = tuple[str, int]
"""``(topic, partition)``."""

T = TypeVar("T")


_TRANSIENT = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.UNKNOWN_LEADER_EPOCH,  # ListOffsets right after a topic is created (retriable in Kafka)
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
    }
)


def is_transient(err: object) -> bool:
    """Whether a Kafka error is worth retrying: flagged retriable, or one librdkafka does not flag.

    Parameters
    ----------
    err:
        A ``KafkaError`` (anything else is not transient).

    Returns
    -------
    bool
        True for retriable errors and for e.g. ``NOT_LEADER_FOR_PARTITION``,
        ``LEADER_NOT_AVAILABLE``, ``UNKNOWN_LEADER_EPOCH``, ``REQUEST_TIMED_OUT``.
    """
    return isinstance(err, KafkaError) and (err.retriable() or err.code() in _TRANSIENT)


def wait(future: Future[T], timeout_s: float, what: str, alias: str) -> T:
    """Wait for an admin call's result; a timeout becomes a :class:`ClusterUnreachableError`.

    Parameters
    ----------
    future:
        The admin call's future.
    timeout_s:
        Seconds to wait.
    what:
        What the call does, for the message (e.g. ``"describing topic 't1'"``).
    alias:
        The cluster alias.

    Returns
    -------
    T
        The result.

    Raises
    ------
    ClusterUnreachableError
        No answer within ``timeout_s`` (``retriable``), naming the call, the cluster and the fix.
    KafkaException
        As the call raises it (callers translate it with their own context).
    """
    try:
        return future.result(timeout=timeout_s)
    except TimeoutError as e:  # concurrent.futures.TimeoutError is TimeoutError (Python 3.11+)
        raise ClusterUnreachableError(
            f"{what} on cluster '{alias}' timed out after {timeout_s:.0f} s: check that the cluster is up and "
            f"'{alias}.bootstrap.servers' is right, or raise 'admin.timeout.ms'",
            retriable=True,
        ) from e


def _cluster_error(e: KafkaException, what: str, alias: str) -> ClusterError:
    """Build the :class:`ClusterError` of a failed call ``what`` on cluster ``alias`` (code and retriability kept)."""
    err = e.args[0] if e.args else None
    if isinstance(err, KafkaError):
        return ClusterError(
            f"{what} on cluster '{alias}' failed: {err.str()} ({err.name()})",
            kafka_code=err.name(),
            retriable=err.retriable(),
        )
    return ClusterError(f"{what} on cluster '{alias}' failed: {e}")


def _result(future: Future[T], what: str, alias: str, timeout_s: float) -> T:
    try:
        return future.result(timeout=timeout_s)
    except KafkaException as e:
        raise _cluster_error(e, what, alias) from e
    except TimeoutError as e:
        raise ClusterUnreachableError(
            f"{what} on cluster '{alias}' timed out after {timeout_s:.0f} s: check that "
            f"'{alias}.bootstrap.servers' is right and the cluster is up"
        ) from e


def _unless_unknown(future: Future[T], timeout_s: float, what: str, alias: str) -> T | None:
    """Wait for a per-topic result: ``None`` if the topic does not exist, any other failure a :class:`ClusterError`."""
    try:
        return wait(future, timeout_s, what, alias)
    except KafkaException as e:
        err = e.args[0] if e.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise ClusterError(f"{what} on cluster '{alias}' failed: {e}") from e


def check_reachable(admin: AdminClient, alias: str, bootstrap_servers: str, *, timeout_s: float = 10.0) -> None:
    """Fail fast when no broker of a cluster answers.

    Raises
    ------
    ClusterUnreachableError
        Naming the alias and its bootstrap servers, and the fix.
    """
    try:
        admin.list_topics(timeout=timeout_s)
    except KafkaException as e:
        serve_logs(admin)
        raise ClusterUnreachableError(
            f"cluster '{alias}' is unreachable at {bootstrap_servers} ({e.args[0] if e.args else e}): "
            f"check '{alias}.bootstrap.servers' and that the cluster is up"
        ) from e


def list_topics(admin: AdminClient, alias: str, *, timeout_s: float = 30.0) -> dict[str, int]:
    """Return ``{topic: partition count}`` for every topic of the cluster (internal ones included)."""
    serve_logs(admin)
    try:
        md = admin.list_topics(timeout=timeout_s)
    except KafkaException as e:
        raise ClusterUnreachableError(
            f"listing topics of cluster '{alias}' failed: {e.args[0] if e.args else e}"
        ) from e
    out: dict[str, int] = {}
    for name, t in md.topics.items():
        if t.error is not None:
            continue
        out[name] = len(t.partitions)
    return out


@dataclass(frozen=True)
class TopicDescription:
    """Partition layout of one topic.

    Attributes
    ----------
    name:
        Topic name.
    replicas:
        Per partition (index = partition id), the broker ids holding a replica.
    topic_id:
        The topic's id (KIP-516, base64 as Kafka's tools print it); a topic deleted and created
        again under the same name gets a new one. ``None`` if the cluster did not say.
    """

    name: str
    replicas: tuple[tuple[int, ...], ...]
    topic_id: str | None = None


def describe_topics(
    admin: AdminClient, alias: str, topics: Iterable[str], *, timeout_s: float = 30.0
) -> dict[str, TopicDescription]:
    """Describe topics (partitions and replicas); topics that do not exist are left out."""
    names = list(topics)
    if not names:
        return {}
    futures = admin.describe_topics(TopicCollection(names), request_timeout=timeout_s)
    out: dict[str, TopicDescription] = {}
    for name, fut in futures.items():
        d = _unless_unknown(fut, timeout_s, f"describing topic '{name}'", alias)
        if d is None:
            continue
        parts = sorted(d.partitions, key=lambda p: p.id)
        tid = getattr(d, "topic_id", None)
        out[name] = TopicDescription(
            name, tuple(tuple(r.id for r in p.replicas) for p in parts), str(tid) if tid is not None else None
        )
    return out


def topic_configs(
    admin: AdminClient, alias: str, topics: Iterable[str], *, include_defaults: bool, timeout_s: float = 30.0
) -> dict[str, dict[str, str]]:
    """Return the configs of topics that a remote topic should carry.

    Applies MM2's non-incremental filter (``MirrorSourceConnector.targetConfig``,
    mm2.md §9.3): read-only, sensitive and static-broker entries are dropped;
    entries at their default (``DEFAULT_CONFIG``) are dropped unless
    ``include_defaults`` (``use.defaults.from=source``). The caller applies the
    ``config.properties.exclude`` filter.

    Returns
    -------
    dict[str, dict[str, str]]
        ``{topic: {config name: value}}``; topics that vanished are left out.
    """
    described = describe_topic_configs(admin, alias, topics, timeout_s=timeout_s)
    return {
        topic: {
            name: v.value
            for name, v in entries.items()
            if v.value is not None and (include_defaults or not v.is_default)
        }
        for topic, entries in described.items()
    }


@dataclass(frozen=True)
class ConfigValue:
    """One topic config entry as a remote topic's sync sees it.

    Attributes
    ----------
    value:
        The value (``None`` if unset).
    is_default:
        Whether it comes from the broker's default (``DEFAULT_CONFIG``), i.e. not set on the topic.
    """

    value: str | None
    is_default: bool


def describe_topic_configs(
    admin: AdminClient, alias: str, topics: Iterable[str], *, timeout_s: float = 30.0
) -> dict[str, dict[str, ConfigValue]]:
    """Every syncable config entry of topics: not read-only, not sensitive, not static broker config.

    Returns ``{topic: {name: ConfigValue}}``; topics that do not exist are left out.
    """
    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
    if not resources:
        return {}
    futures = admin.describe_configs(resources, request_timeout=timeout_s)
    out: dict[str, dict[str, ConfigValue]] = {}
    for res, fut in futures.items():
        entries = _unless_unknown(fut, timeout_s, f"describing configs of topic '{res.name}'", alias)
        if entries is None:
            continue
        kept: dict[str, ConfigValue] = {}
        for name, entry in entries.items():
            if entry.is_read_only or entry.is_sensitive:
                continue
            source = ConfigSource(entry.source)
            if source == ConfigSource.STATIC_BROKER_CONFIG:
                continue
            kept[name] = ConfigValue(entry.value, source == ConfigSource.DEFAULT_CONFIG)
        out[res.name] = kept
    return out


def alter_topic_configs(
    admin: AdminClient,
    alias: str,
    changes: Mapping[str, Mapping[str, str | None]],
    *,
    timeout_s: float = 30.0,
) -> None:
    """Apply incremental config changes to topics (``IncrementalAlterConfigs``, KIP-339).

    Parameters
    ----------
    changes:
        ``{topic: {name: value}}``; a value of ``None`` deletes the topic-level
        setting (the topic falls back to the broker default).
    """
    resources = []
    for topic, entries in changes.items():
        if not entries:
            continue
        ops = [
            ConfigEntry(
                name,
                value,
                incremental_operation=AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET,
            )
            for name, value in sorted(entries.items())
        ]
        resources.append(ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=ops))
    if not resources:
        return
    for res, fut in admin.incremental_alter_configs(resources, request_timeout=timeout_s).items():
        try:
            wait(fut, timeout_s, f"altering configs of topic '{res.name}'", alias)
        except KafkaException as e:
            raise ClusterError(f"altering configs of topic '{res.name}' on cluster '{alias}' failed: {e}") from e


@dataclass(frozen=True)
class TopicSpec:
    """A topic to create: name, partition count, replication factor (``-1`` = broker default), configs.

    ``assignment``, when set, is the explicit replica assignment (broker ids per partition, preferred
    leader first; ``partitions`` of them) and replaces ``replication_factor``.
    """

    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str] = field(default_factory=dict)
    assignment: Sequence[Sequence[int]] | None = None


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


CREATE_TOPICS_CHUNK = 500
"""Most topics one ``CreateTopics`` request carries (:func:`create_topics`)."""


def create_topics(
    admin: AdminClient,
    alias: str,
    topics: Sequence[TopicSpec],
    *,
    wait_for_leaders: bool = True,
    timeout_s: float = 30.0,
) -> list[str]:
    """Create the topics that do not exist yet, in batched requests (MM2 ``TopicAdmin.createOrFindTopics``).

    One ``CreateTopics`` request per :data:`CREATE_TOPICS_CHUNK` topics, then, with
    ``wait_for_leaders``, one metadata poll (every 50 ms, at most ``timeout_s``) until every
    created partition has a leader, so that a client reading them right away finds them.
    Creating 1 000 topics costs a handful of requests instead of 1 000 round trips. Producers
    need no wait (they hold records until a leader is known), so remote topics skip it: a
    broker takes seconds to bring up thousands of new partitions, and copying overlaps that.

    Returns
    -------
    list[str]
        The names this call created, in input order (existing ones are skipped).

    Raises
    ------
    ClusterError
        Any failure but "already exists" (e.g. a replication factor larger than the broker
        count), naming the first failed topic; topics of the same call that succeeded stay.
    """
    created: list[str] = []
    failure: ClusterError | None = None
    for i in range(0, len(topics), CREATE_TOPICS_CHUNK):
        chunk = topics[i : i + CREATE_TOPICS_CHUNK]
        new = [_new_topic(t) for t in chunk]
        futures = admin.create_topics(new, request_timeout=timeout_s)
        for t in chunk:
            try:
                wait(futures[t.name], timeout_s, f"creating topic '{t.name}'", alias)
                created.append(t.name)
            except KafkaException as e:
                err = e.args[0] if e.args else None
                if isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    continue
                if failure is None:
                    failure = _create_failure(alias, t.name, e, err)
    if created and wait_for_leaders:
        _wait_for_leaders(admin, alias, created, timeout_s)
    if failure is not None:
        raise failure
    return created


def _create_failure(alias: str, name: str, e: KafkaException, err: object) -> ClusterError:
    hint = ""
    if isinstance(err, KafkaError) and err.code() == KafkaError.INVALID_REPLICATION_FACTOR:
        hint = (
            " — the cluster has fewer brokers than the replication factor: set the matching "
            "*.replication.factor key to -1 (broker default) or to the broker count"
        )
    why = err.str() if isinstance(err, KafkaError) else str(e)
    return ClusterError(
        f"creating topic '{name}' on cluster '{alias}' failed: {why}{hint}",
        kafka_code=err.name() if isinstance(err, KafkaError) else None,
    )


def ensure_topic(
    admin: AdminClient,
    alias: str,
    name: str,
    *,
    partitions: int,
    replication_factor: int,
    config: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> bool:
    """Create one topic unless it exists (:func:`create_topics` of one :class:`TopicSpec`).

    Returns
    -------
    bool
        ``True`` if this call created it, ``False`` if it already existed.

    Raises
    ------
    ClusterError
        For any other failure (e.g. a replication factor larger than the broker count).
    """
    spec = TopicSpec(name, partitions, replication_factor, dict(config or {}))
    return bool(create_topics(admin, alias, [spec], timeout_s=timeout_s))


def _wait_for_leaders(admin: AdminClient, alias: str, names: Sequence[str], timeout_s: float) -> None:
    """Poll metadata until every partition of the new topics has a leader (≤ ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    waiting = set(names)
    while True:
        # One topic: ask for it alone; many: one request for all topics is cheaper than one each.
        md = admin.list_topics(topic=next(iter(waiting)) if len(waiting) == 1 else None, timeout=timeout_s).topics
        for name in list(waiting):
            t = md.get(name)
            if t is not None and t.error is None and t.partitions and all(p.leader >= 0 for p in t.partitions.values()):
                waiting.discard(name)
        if not waiting:
            return
        if time.monotonic() > deadline:
            first = sorted(waiting)[0]
            raise ClusterError(
                f"topic '{first}' on cluster '{alias}' has no leader {timeout_s:.0f} s after creation"
                + (f" ({len(waiting) - 1} more topics neither)" if len(waiting) > 1 else "")
            )
        time.sleep(0.05)


def create_partitions(
    admin: AdminClient,
    alias: str,
    increases: Mapping[str, int],
    *,
    assignments: Mapping[str, Sequence[Sequence[int]]] | None = None,
    timeout_s: float = 30.0,
) -> None:
    """Grow topics to the given partition counts (MM2: never shrinks; "already that many" is ignored).

    ``assignments`` gives, per topic, the replicas of each *new* partition (preferred leader first);
    topics without one get the broker's placement.
    """
    if not increases:
        return
    placed = assignments or {}
    futures = admin.create_partitions(
        [
            NewPartitions(t, n, replica_assignment=[list(r) for r in placed[t]]) if t in placed else NewPartitions(t, n)
            for t, n in increases.items()
        ],
        request_timeout=timeout_s,
    )
    for topic, fut in futures.items():
        try:
            wait(fut, timeout_s, f"adding partitions to '{topic}'", alias)
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if isinstance(err, KafkaError) and err.code() == KafkaError.INVALID_PARTITIONS:
                continue
            raise ClusterError(f"adding partitions to '{topic}' on cluster '{alias}' failed: {e}") from e


def _retriable(e: BaseException) -> bool:
    return isinstance(e, ClusterError) and e.retriable


_retry_retriable = retry(
    retry=retry_if_exception(_retriable),
    stop=stop_after_delay(30),
    wait=wait_exponential(multiplier=0.05, max=1.0),
    reraise=True,
)
"""Retry an admin call on Kafka's retriable errors (e.g. NOT_LEADER right after a topic is created) for ≤ 30 s."""


@_retry_retriable
def _list_offsets(
    admin: AdminClient,
    alias: str,
    partitions: Iterable[PartitionKey],
    spec: OffsetSpec,
    read_committed: bool,
    timeout_s: float,
) -> dict[PartitionKey, int]:
    req = {TopicPartition(t, p): spec for t, p in list(partitions)}
    if not req:
        return {}
    serve_logs(admin)
    iso = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    futures = admin.list_offsets(req, isolation_level=iso, request_timeout=timeout_s)
    out: dict[PartitionKey, int] = {}
    for tp, fut in futures.items():
        try:
            out[(tp.topic, tp.partition)] = wait(
                fut, timeout_s, f"listing offsets of {tp.topic}-{tp.partition}", alias
            ).offset
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue  # deleted meanwhile
            raise ClusterError(
                f"listing offsets of {tp.topic}-{tp.partition} on cluster '{alias}' failed: {e}",
                retriable=is_transient(err),
            ) from e
    return out


def end_offsets(
    admin: AdminClient,
    alias: str,
    partitions: Iterable[PartitionKey],
    *,
    read_committed: bool = False,
    timeout_s: float = 30.0,
) -> dict[PartitionKey, int]:
    """Return each partition's end offset (high watermark, or the last stable offset when ``read_committed``)."""
    return _list_offsets(admin, alias, list(partitions), OffsetSpec.latest(), read_committed, timeout_s)


def start_offsets(
    admin: AdminClient, alias: str, partitions: Iterable[PartitionKey], *, timeout_s: float = 30.0
) -> dict[PartitionKey, int]:
    """Return each partition's log start offset (the earliest offset still stored)."""
    return _list_offsets(admin, alias, list(partitions), OffsetSpec.earliest(), False, timeout_s)


def offsets_for_timestamp(
    admin: AdminClient, alias: str, partitions: Iterable[PartitionKey], timestamp_ms: int, *, timeout_s: float = 30.0
) -> dict[PartitionKey, int]:
    """Return each partition's first offset whose record timestamp is at or after ``timestamp_ms``.

    Kafka's ``ListOffsets`` with a timestamp (the Java consumer's ``offsetsForTimes``).

    Parameters
    ----------
    admin, alias:
        The cluster's admin client and alias (for messages).
    partitions:
        The partitions.
    timestamp_ms:
        Epoch milliseconds.
    timeout_s:
        Seconds for the call (default 30).

    Returns
    -------
    dict[PartitionKey, int]
        The offset, or ``-1`` where no record is that recent (the caller takes the end offset).
    """
    return _list_offsets(admin, alias, list(partitions), OffsetSpec.for_timestamp(timestamp_ms), False, timeout_s)


# --------------------------------------------------------------------------- consumer groups


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


def describe_group(admin: AdminClient, alias: str, group: str, *, timeout_s: float = 30.0) -> GroupDescription:
    """Describe one consumer group (state and member count).

    A group the coordinator does not know is ``Dead`` with 0 members (also when the
    broker answers ``GROUP_ID_NOT_FOUND``, as KIP-848 coordinators do).

    Raises
    ------
    ClusterError
        If the call fails otherwise, naming the group and the cluster.
    """
    fut = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group]
    try:
        desc = fut.result(timeout=timeout_s)
    except KafkaException as e:
        err = e.args[0] if e.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError.GROUP_ID_NOT_FOUND:
            return GroupDescription(group, "Dead", 0)
        raise ClusterError(
            f"describing consumer group '{group}' on cluster '{alias}' failed: {err.str() if err else e}",
            kafka_code=err.name() if isinstance(err, KafkaError) else None,
        ) from e
    except TimeoutError as e:
        raise ClusterUnreachableError(
            f"describing consumer group '{group}' on cluster '{alias}' timed out after {timeout_s:.0f} s"
        ) from e
    state = desc.state if isinstance(desc.state, ConsumerGroupState) else ConsumerGroupState.UNKNOWN
    return GroupDescription(group, _STATE_NAMES.get(state, "Unknown"), len(desc.members or []))


def group_offsets(
    admin: AdminClient, alias: str, group: str, *, timeout_s: float = 30.0
) -> dict[PartitionKey, tuple[int, str]]:
    """Return a consumer group's committed offsets: ``{(topic, partition): (offset, metadata)}``.

    The offset is Kafka's committed offset, i.e. the next offset the group reads.
    Partitions without a committed offset are left out; a group that does not
    exist has none (``{}``).

    Raises
    ------
    ClusterError
        If the call fails, naming the group and the cluster.

    Notes
    -----
    Admin ``listConsumerGroupOffsets`` crashes the process (SIGSEGV, librdkafka issue #5040) when
    the broker answers with a coordinator error, as while a group coordinator moves: mirrorspark
    itself reads group offsets with :func:`committed_group_offsets`.
    """
    fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=timeout_s)[group]
    res = _result(fut, f"listing offsets of consumer group '{group}'", alias, timeout_s)
    out: dict[PartitionKey, tuple[int, str]] = {}
    for tp in res.topic_partitions or []:
        if tp.error is None and tp.offset >= 0:
            out[(tp.topic, tp.partition)] = (tp.offset, tp.metadata or "")
    return out


def committed_group_offsets(
    consumer: Consumer,
    alias: str,
    group: str,
    *,
    timeout_s: float = 30.0,
    topics: Iterable[str] | None = None,
) -> dict[PartitionKey, tuple[int, str]]:
    """Return a consumer group's committed offsets, read by a consumer of the group (OffsetFetch).

    What :func:`group_offsets` returns, without Admin ``listConsumerGroupOffsets``: librdkafka's
    admin client dereferences a consumer-group handle it does not have when the broker answers
    that request with a coordinator error (``NOT_COORDINATOR``, ``COORDINATOR_NOT_AVAILABLE``: a
    group coordinator moving, e.g. while a broker stops or comes back), and the process dies of
    SIGSEGV (librdkafka issue #5040, open in 2.16). A consumer's own OffsetFetch goes through its
    group handle, which re-queries the coordinator and retries.

    Parameters
    ----------
    consumer:
        A consumer of the cluster whose ``group.id`` is ``group``, never subscribed (it never joins
        the group); the caller closes it.
    alias:
        The cluster's alias (for messages).
    group:
        The consumer group (for messages).
    timeout_s:
        Seconds for the metadata request and for the offset fetch each.
    topics:
        The topics to read the group's offsets of; ``None`` = every topic of the cluster.

    Returns
    -------
    dict[tuple[str, int], tuple[int, str]]
        ``{(topic, partition): (committed offset, metadata)}`` (committed offset = next offset
        to read); partitions without a committed offset are left out.

    Raises
    ------
    ClusterError
        The metadata or the offsets cannot be read within ``timeout_s``, naming the group and cluster.
    """
    what = f"listing offsets of consumer group '{group}'"
    try:
        md = consumer.list_topics(timeout=timeout_s)
        names = sorted(md.topics) if topics is None else sorted(set(topics) & set(md.topics))
        tps = [TopicPartition(t, p) for t in names for p in sorted(md.topics[t].partitions)]
        got = consumer.committed(tps, timeout=timeout_s) if tps else []
    except KafkaException as e:
        raise _cluster_error(e, what, alias) from e
    out: dict[PartitionKey, tuple[int, str]] = {}
    for tp in got:
        if tp.error is None and tp.offset >= 0:
            out[(tp.topic, tp.partition)] = (tp.offset, tp.metadata or "")
    return out


def alter_group_offsets(
    admin: AdminClient,
    alias: str,
    group: str,
    offsets: Mapping[PartitionKey, tuple[int, str]],
    *,
    timeout_s: float = 30.0,
) -> None:
    """Commit offsets for a consumer group that has no active members (Admin ``alterConsumerGroupOffsets``).

    Parameters
    ----------
    offsets:
        ``{(topic, partition): (committed offset, metadata)}``; the offset is the
        next offset the group will read.

    Raises
    ------
    ClusterError
        If the broker refuses any partition (e.g. ``UNKNOWN_MEMBER_ID`` while
        consumers use the group, or an unknown topic), naming the group, the
        cluster and the first failing partition.
    """
    if not offsets:
        return
    tps = [TopicPartition(t, p, o, metadata=m) for (t, p), (o, m) in sorted(offsets.items())]
    fut = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)], request_timeout=timeout_s)[
        group
    ]
    res = _result(fut, f"committing offsets of consumer group '{group}'", alias, timeout_s)
    for tp in res.topic_partitions or []:
        if tp.error is not None:
            err = tp.error
            raise ClusterError(
                f"committing the offset of consumer group '{group}' for {tp.topic}-{tp.partition} on cluster "
                f"'{alias}' failed: {err.str()} ({err.name()})",
                kafka_code=err.name(),
                retriable=err.retriable(),
            )


def broker_racks(admin: AdminClient, alias: str, *, timeout_s: float = 30.0) -> dict[int, str | None]:
    """Return every broker of the cluster with its ``broker.rack`` (``DescribeCluster``).

    Returns
    -------
    dict[int, str | None]
        ``{broker id: rack}``, ``None`` for a broker without ``broker.rack``.

    Raises
    ------
    ClusterUnreachableError
        No answer within ``timeout_s``.
    ClusterError
        The call failed.
    """
    try:
        described = wait(admin.describe_cluster(request_timeout=timeout_s), timeout_s, "describing the brokers", alias)
    except KafkaException as e:
        raise ClusterError(f"describing the brokers of cluster '{alias}' failed: {e}") from e
    return {n.id: n.rack or None for n in described.nodes}


ConfigTarget = tuple[str, str]
"""A config resource: ``("broker", "<id>")`` or ``("topic", "<name>")``."""

_RESOURCE_TYPES = {"broker": ConfigResource.Type.BROKER, "topic": ConfigResource.Type.TOPIC}


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


def dynamic_configs(
    admin: AdminClient, alias: str, resources: Iterable[ConfigTarget], names: Iterable[str], *, timeout_s: float = 30.0
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
    ClusterError
        A describe failed (or timed out: :class:`ClusterUnreachableError`).
    """
    wanted = set(names)
    keys = list(dict.fromkeys(resources))
    if not keys:
        return {}
    futures: dict[ConfigResource, Future[Any]] = {}
    for batch in _config_batches(keys):
        futures.update(admin.describe_configs(batch, request_timeout=timeout_s))
    dynamic = {
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    }
    out: dict[ConfigTarget, dict[str, str]] = {}
    for res, fut in futures.items():
        key = ("broker" if res.restype == ConfigResource.Type.BROKER else "topic", res.name)
        entries = _unless_unknown(fut, timeout_s, f"describing configs of {key[0]} '{key[1]}'", alias)
        if entries is None:
            continue
        out[key] = {
            name: str(entry.value)
            for name, entry in entries.items()
            if name in wanted and entry.value is not None and ConfigSource(entry.source) in dynamic
        }
    return out


def delete_dynamic_configs(
    admin: AdminClient, alias: str, changes: Mapping[ConfigTarget, Iterable[str]], *, timeout_s: float = 30.0
) -> None:
    """Delete dynamic configs of brokers or topics (``IncrementalAlterConfigs`` DELETE, KIP-339).

    Parameters
    ----------
    changes:
        ``{("broker", id) or ("topic", name): config names to delete}``; empty name lists are skipped.

    Raises
    ------
    ClusterError
        An alter failed (or timed out: :class:`ClusterUnreachableError`).
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
    futures: dict[ConfigResource, Future[Any]] = {}
    for batch in _config_batches(resources):
        futures.update(admin.incremental_alter_configs(batch, request_timeout=timeout_s))
    for res, fut in futures.items():
        try:
            wait(fut, timeout_s, f"altering configs of '{res.name}'", alias)
        except KafkaException as e:
            raise ClusterError(f"altering configs of '{res.name}' on cluster '{alias}' failed: {e}") from e


__all__ = [
    "ConfigTarget",
    "GroupDescription",
    "PartitionKey",
    "TopicDescription",
    "TopicSpec",
    "alter_group_offsets",
    "alter_topic_configs",
    "broker_racks",
    "check_reachable",
    "committed_group_offsets",
    "create_partitions",
    "create_topics",
    "delete_dynamic_configs",
    "describe_group",
    "describe_topic_configs",
    "describe_topics",
    "dynamic_configs",
    "end_offsets",
    "ensure_topic",
    "group_offsets",
    "is_transient",
    "list_topics",
    "offsets_for_timestamp",
    "start_offsets",
    "topic_configs",
    "wait",
]
