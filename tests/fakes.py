"""In-memory Kafka for unit tests of the control classes: clusters, an admin client, a producer, a consumer.

The fakes offer the confluent-kafka methods mirrorspark's control classes call, with the same
shapes (admin calls return ``concurrent.futures.Future`` objects, per topic/group/resource
where confluent-kafka does; failures are ``KafkaException(KafkaError(...))``). They are built
through :class:`FakeClients`, a :class:`~mirrorspark.kafka.factory.ClientFactory` that routes
every client to the :class:`FakeCluster` named by its ``bootstrap.servers``::

    a, b = FakeCluster("A"), FakeCluster("B")
    clients = FakeClients({"a:9092": a, "b:9092": b})
    ctx = FlowContext.build(config, config.flow("A", "B"), clients=clients)

Not a broker: no compaction, no retention; the control classes' producer acknowledges records at
once. A copy task's clients (:class:`FakeTaskConsumer`, :class:`FakeTaskProducer`: records in
flight until acknowledged, delivery failures, transactions; :class:`FakeGrants`) drive
:class:`~mirrorspark.replication.task.runner.CopyTaskRunner` in unit tests. :class:`FakeRegistry` is an in-memory
Schema Registry.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AlterConfigOpType,
    ConfigResource,
    ConfigSource,
    ResourcePatternType,
)

from mirrorspark.config.model import ClientSettings, MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.followed_groups import Committed
from mirrorspark.core.schemas.registry import SchemaText, SubjectVersion
from mirrorspark.errors import SchemaRegistryError, SchemaSubjectConflictError

Op = AclOperation


def run_flow_jobs_inline(monkeypatch: Any) -> None:
    """Have every :class:`~mirrorspark.replication.worker.takeover.FlowThread` run its job now, in the caller's thread.

    A supervisor's take-over, loss, stop or restart then ends within the tick that submits it (as before
    they ran on a thread of their own): unit tests of the supervisor's logic stay deterministic. Its end
    (or error) is still acted on at the next tick.
    """
    from mirrorspark.replication.worker.takeover import FlowThread

    def submit(self: FlowThread, what: str, job: Any, *, epoch: int = 0) -> None:
        if not self.idle:
            raise RuntimeError(f"{self.name}: a {self.what} is still under way")
        self.what, self.epoch, self._error = what, epoch, None
        self.cancel.clear()
        self._thread = threading.Thread(target=lambda: None)  # never started: not alive, to be collected
        self._run(job)

    monkeypatch.setattr(FlowThread, "submit", submit)


class NoThrottle:
    """A flow's live throttle (:class:`~mirrorspark.replication.connector.live_throttle.LiveThrottle`) set to none."""

    limit = 0


class FlowLockStub:
    """Mixin of a stub flow: its lock, :meth:`~mirrorspark.replication.connector.flow.Flow.held` and no throttle."""

    _lock: threading.RLock | None = None
    throttle = NoThrottle()

    @property
    def lock(self) -> threading.RLock:
        """The flow's lock (one per stub)."""
        if self._lock is None:
            self._lock = threading.RLock()
        return self._lock

    @contextlib.contextmanager
    def held(self, *, wait_s: float | None = None) -> Iterator[bool]:
        """As :meth:`Flow.held <mirrorspark.replication.connector.flow.Flow.held>`."""
        taken = self.lock.acquire() if wait_s is None else self.lock.acquire(timeout=wait_s)
        try:
            yield taken
        finally:
            if taken:
                self.lock.release()


__all__ = [
    "CLUSTER_OPS",
    "FakeAclAdmin",
    "FakeAdmin",
    "FakeClients",
    "FakeCluster",
    "FakeConsumer",
    "FakeGrants",
    "FakeGroup",
    "FakeProducer",
    "FakeTaskConsumer",
    "FakeTaskProducer",
    "SpyAdmin",
    "done",
    "failed",
    "two_clusters",
]


def done(value: Any) -> Future[Any]:
    """A future that has ``value``."""
    f: Future[Any] = Future()
    f.set_result(value)
    return f


def failed(code: int, text: str = "failed") -> Future[Any]:
    """A future that raises ``KafkaException(KafkaError(code, text))``."""
    f: Future[Any] = Future()
    f.set_exception(KafkaException(KafkaError(code, text)))
    return f


# --------------------------------------------------------------------------- ACLs

CLUSTER_OPS = [o for o in AclOperation if o not in (Op.ANY, Op.UNKNOWN, Op.ALL)]


class FakeAclAdmin:
    """The calls of a confluent-kafka AdminClient that ACL sync makes, over in-memory bindings.

    Behaves as librdkafka 2.16.1 against a real broker: DescribeAcls reports no error but an
    empty list without an authorizer or without DESCRIBE on the cluster; DescribeCluster lists
    the principal's cluster operations (all of them without an authorizer, ``None`` for none);
    DescribeConfigs of a broker needs DESCRIBE_CONFIGS on the cluster (anything goes without
    an authorizer); CreateAcls fails per binding.
    """

    def __init__(
        self,
        bindings: Iterable[AclBinding] = (),
        *,
        authorizer: str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        cluster_ops: Iterable[AclOperation] = (Op.DESCRIBE, Op.ALTER),
        describe_error: int | None = None,
    ) -> None:
        self.bindings: list[AclBinding] = list(bindings)
        self.authorizer = authorizer
        self.cluster_ops = set(CLUSTER_OPS if not authorizer else cluster_ops)
        self.describe_error = describe_error  # a librdkafka that reports DescribeAcls errors
        self.create_errors: dict[str, tuple[int, str]] = {}  # resource name -> (error code, text)
        self.calls: list[str] = []
        self.created: list[list[AclBinding]] = []

    def describe_acls(self, flt: AclBindingFilter, **_: Any) -> Future[Any]:
        self.calls.append("describe_acls")
        if self.describe_error is not None:
            return failed(self.describe_error)
        if not self.authorizer or Op.DESCRIBE not in self.cluster_ops:
            return done([])

        def match(b: AclBinding) -> bool:
            return b.restype == flt.restype and flt.resource_pattern_type in (
                ResourcePatternType.ANY,
                b.resource_pattern_type,
            )

        return done([b for b in self.bindings if match(b)])

    def describe_cluster(self, *, include_authorized_operations: bool = False, **_: Any) -> Future[Any]:
        self.calls.append("describe_cluster")
        ops = sorted(self.cluster_ops) if include_authorized_operations and self.cluster_ops else None
        return done(SimpleNamespace(nodes=[SimpleNamespace(id=1, rack=None)], authorized_operations=ops))

    def describe_configs(self, resources: list[ConfigResource], **_: Any) -> dict[ConfigResource, Future[Any]]:
        self.calls.append("describe_configs")
        (res,) = resources
        assert res.restype == ConfigResource.Type.BROKER and res.name == "1"
        if self.authorizer and Op.DESCRIBE_CONFIGS not in self.cluster_ops:
            return {res: failed(KafkaError.CLUSTER_AUTHORIZATION_FAILED)}
        return {res: done({"authorizer.class.name": SimpleNamespace(value=self.authorizer)})}

    def create_acls(self, bindings: list[AclBinding], **_: Any) -> dict[AclBinding, Future[Any]]:
        self.calls.append("create_acls")
        self.created.append(list(bindings))
        out: dict[AclBinding, Future[Any]] = {}
        for b in bindings:
            if not self.authorizer:
                out[b] = failed(KafkaError.SECURITY_DISABLED, "No Authorizer is configured.")
            elif Op.ALTER not in self.cluster_ops:
                out[b] = failed(KafkaError.CLUSTER_AUTHORIZATION_FAILED, "Request Request(processor=0, ...) " * 20)
            elif b.name in self.create_errors:
                out[b] = failed(*self.create_errors[b.name])
            else:
                if b not in self.bindings:
                    self.bindings.append(b)
                out[b] = done(None)
        return out


# --------------------------------------------------------------------------- clusters


@dataclass
class FakeRecord:
    """One stored record."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int = 0
    headers: list[tuple[str, str | bytes | None]] | None = None


_TOPIC_IDS = itertools.count(1)


@dataclass
class FakeTopic:
    """A topic: its records per partition, its topic-level configs, its id and log start offsets."""

    partitions: list[list[FakeRecord]]
    config: dict[str, str] = field(default_factory=dict)
    topic_id: str = field(default_factory=lambda: f"fake-topic-id-{next(_TOPIC_IDS)}")
    log_start: dict[int, int] = field(default_factory=dict)  # partition -> first offset still stored


@dataclass
class FakeGroup:
    """A consumer group: committed offsets ``{(topic, partition): (offset, metadata)}`` and active members."""

    offsets: dict[tuple[str, int], tuple[int, str]] = field(default_factory=dict)
    members: int = 0

    @property
    def state(self) -> ConsumerGroupState:
        """``STABLE`` with members, else ``EMPTY``."""
        return ConsumerGroupState.STABLE if self.members else ConsumerGroupState.EMPTY


DEFAULT_TOPIC_CONFIG = {"cleanup.policy": "delete", "retention.ms": "604800000", "max.message.bytes": "1048588"}
"""The broker defaults every fake topic reports (``DEFAULT_CONFIG``) unless set on the topic."""


class FakeCluster:
    """One in-memory Kafka cluster: topics with records, consumer groups, ACLs.

    Parameters
    ----------
    alias:
        For messages.
    """

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.topics: dict[str, FakeTopic] = {}
        self.groups: dict[str, FakeGroup] = {}
        self.defaults: dict[str, str] = dict(DEFAULT_TOPIC_CONFIG)
        # failure injection: deliveries to these topics fail (count left; the producer reports _MSG_TIMED_OUT),
        # describing these groups fails with this error code
        self.failing_writes: dict[str, int] = {}
        self.describe_errors: dict[str, int] = {}
        self.metadata_errors: set[str] = set()  # topics a full Metadata listing returns with an error
        self.undescribable: set[str] = set()  # topics the principal may not describe (TOPIC_AUTHORIZATION_FAILED)
        self.can_create = True  # False: the principal lacks CREATE (TOPIC_AUTHORIZATION_FAILED on every new topic)
        # transactions (KIP-98): the newest producer of each transactional id (its epoch's owner), every
        # init_transactions in order, and init_transactions failures to inject (id -> error code)
        self.transactional: dict[str, FakeTaskProducer] = {}
        self.inits: list[str] = []
        self.init_errors: dict[str, int] = {}

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        """Create a topic (an existing one is left alone)."""
        if name not in self.topics:
            self.topics[name] = FakeTopic([[] for _ in range(partitions)], dict(config or {}))

    def delete_records(self, name: str, partition: int, before: int) -> None:
        """Delete a partition's records before offset ``before`` (``kafka-delete-records``): the log start moves."""
        t = self.topics[name]
        t.log_start[partition] = max(t.log_start.get(partition, 0), before)

    def delete_topic(self, name: str) -> None:
        """Delete a topic, records and all."""
        del self.topics[name]

    def recreate_topic(self, name: str, partitions: int) -> None:
        """Delete a topic and create it again, empty, with a new topic id."""
        config = self.topics.pop(name).config
        self.create_topic(name, partitions, config)

    def log_start(self, topic: str, partition: int) -> int:
        """The first offset still stored."""
        return self.topics[topic].log_start.get(partition, 0)

    def add_partitions(self, name: str, total: int) -> None:
        """Grow a topic to ``total`` partitions."""
        t = self.topics[name]
        t.partitions.extend([] for _ in range(total - len(t.partitions)))

    def append(self, topic: str, key: bytes | None, value: bytes | None, *, partition: int = 0, ts: int = 0) -> int:
        """Append one record; return its offset."""
        log = self.topics[topic].partitions[partition]
        log.append(FakeRecord(key, value, ts))
        return len(log) - 1

    def fill(self, topic: str, partition: int, count: int) -> None:
        """Append ``count`` records ``b"0"``, ``b"1"``... to a partition."""
        for i in range(count):
            self.append(topic, None, str(i).encode(), partition=partition)

    def records(self, topic: str, partition: int = 0) -> list[FakeRecord]:
        """The records of a partition (empty for a missing topic)."""
        t = self.topics.get(topic)
        return list(t.partitions[partition]) if t is not None and partition < len(t.partitions) else []

    def commit(self, group: str, offsets: Mapping[tuple[str, int], int], *, metadata: str = "") -> None:
        """Commit offsets for a group (created if new)."""
        g = self.groups.setdefault(group, FakeGroup())
        g.offsets.update({k: (v, metadata) for k, v in offsets.items()})

    def end_offset(self, topic: str, partition: int) -> int:
        """The next offset to be written."""
        return len(self.topics[topic].partitions[partition])


# --------------------------------------------------------------------------- clients


class FakeAdmin(FakeAclAdmin):
    """An ``AdminClient`` over a :class:`FakeCluster` (ACL calls as :class:`FakeAclAdmin`).

    Records every call's name in :attr:`calls`.
    """

    def __init__(self, cluster: FakeCluster, **acls: Any) -> None:
        super().__init__(**acls)
        self.cluster = cluster

    # topics

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        self.calls.append("list_topics")
        out = {}
        for name, t in self.cluster.topics.items():
            if topic is not None and name != topic:
                continue
            parts = {i: SimpleNamespace(id=i, leader=0, replicas=[0], isrs=[0]) for i in range(len(t.partitions))}
            if name in self.cluster.metadata_errors:
                error = KafkaError(KafkaError.LEADER_NOT_AVAILABLE)
                out[name] = SimpleNamespace(topic=name, error=error, partitions={})
            else:
                out[name] = SimpleNamespace(topic=name, error=None, partitions=parts)
        if topic is not None and topic not in out:
            out[topic] = SimpleNamespace(topic=topic, error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART), partitions={})
        return SimpleNamespace(topics=out)

    def create_topics(
        self, new_topics: Sequence[Any], *, validate_only: bool = False, **_: Any
    ) -> dict[str, Future[Any]]:
        self.calls.append("validate_topics" if validate_only else "create_topics")
        out: dict[str, Future[Any]] = {}
        for n in new_topics:
            if n.topic in self.cluster.topics:
                out[n.topic] = failed(KafkaError.TOPIC_ALREADY_EXISTS, f"Topic '{n.topic}' already exists.")
            elif not self.cluster.can_create:
                out[n.topic] = failed(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            elif validate_only:
                out[n.topic] = done(None)
            else:
                self.cluster.create_topic(n.topic, n.num_partitions, n.config)
                out[n.topic] = done(None)
        return out

    def create_partitions(self, new_parts: Sequence[Any], **_: Any) -> dict[str, Future[Any]]:
        self.calls.append("create_partitions")
        out: dict[str, Future[Any]] = {}
        for n in new_parts:
            if len(self.cluster.topics[n.topic].partitions) >= n.new_total_count:
                out[n.topic] = failed(KafkaError.INVALID_PARTITIONS)
            else:
                self.cluster.add_partitions(n.topic, n.new_total_count)
                out[n.topic] = done(None)
        return out

    def list_offsets(self, request: Mapping[TopicPartition, Any], **_: Any) -> dict[TopicPartition, Future[Any]]:
        self.calls.append("list_offsets")
        out: dict[TopicPartition, Future[Any]] = {}
        for tp, spec in request.items():
            t = self.cluster.topics.get(tp.topic)
            if t is None or tp.partition >= len(t.partitions):
                out[tp] = failed(KafkaError.UNKNOWN_TOPIC_OR_PART)
            else:
                out[tp] = done(SimpleNamespace(offset=self._offset(t, tp.partition, spec._value)))
        return out

    @staticmethod
    def _offset(t: FakeTopic, partition: int, spec: int) -> int:
        """OffsetSpec.latest() is -1, earliest() -2 (the log start), for_timestamp(ts) ts >= 0."""
        end = len(t.partitions[partition])
        start = min(end, t.log_start.get(partition, 0))
        if spec == -1:
            return end
        if spec == -2:
            return start
        log = t.partitions[partition]
        return next((o for o in range(start, end) if log[o].timestamp_ms >= spec), -1)

    def describe_topics(self, topics: Any, **_: Any) -> dict[str, Future[Any]]:
        self.calls.append("describe_topics")
        out: dict[str, Future[Any]] = {}
        for name in topics.topic_names:
            t = self.cluster.topics.get(name)
            if name in self.cluster.undescribable:
                out[name] = failed(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
                continue
            if t is None:
                out[name] = failed(KafkaError.UNKNOWN_TOPIC_OR_PART)
                continue
            node = SimpleNamespace(id=0, rack=None)
            parts = [SimpleNamespace(id=i, leader=node, replicas=[node], isr=[node]) for i in range(len(t.partitions))]
            out[name] = done(
                SimpleNamespace(name=name, topic_id=t.topic_id, partitions=parts, is_internal=name.startswith("__"))
            )
        return out

    def elect_leaders(self, election_type: Any, partitions: Sequence[TopicPartition] | None) -> Future[Any]:
        """Every partition keeps its one replica as leader: ``ELECTION_NOT_NEEDED`` (unknown ones fail)."""
        self.calls.append("elect_leaders")
        if partitions is None:
            partitions = [
                TopicPartition(n, p) for n, t in self.cluster.topics.items() for p in range(len(t.partitions))
            ]
        out: dict[TopicPartition, KafkaException] = {}
        for tp in partitions:
            t = self.cluster.topics.get(tp.topic)
            known = t is not None and tp.partition < len(t.partitions)
            code = KafkaError.ELECTION_NOT_NEEDED if known else KafkaError.UNKNOWN_TOPIC_OR_PART
            out[tp] = KafkaException(KafkaError(code))
        return done(out)

    def describe_configs(self, resources: list[ConfigResource], **kwargs: Any) -> dict[ConfigResource, Future[Any]]:
        if resources and resources[0].restype == ConfigResource.Type.BROKER:
            return super().describe_configs(resources, **kwargs)
        self.calls.append("describe_configs")
        out: dict[ConfigResource, Future[Any]] = {}
        for res in resources:
            t = self.cluster.topics.get(res.name)
            if t is None:
                out[res] = failed(KafkaError.UNKNOWN_TOPIC_OR_PART)
                continue
            entries = {}
            for name in sorted({*self.cluster.defaults, *t.config}):
                own = name in t.config
                entries[name] = SimpleNamespace(
                    name=name,
                    value=t.config[name] if own else self.cluster.defaults[name],
                    is_read_only=False,
                    is_sensitive=False,
                    source=(ConfigSource.DYNAMIC_TOPIC_CONFIG if own else ConfigSource.DEFAULT_CONFIG).value,
                )
            out[res] = done(entries)
        return out

    def incremental_alter_configs(self, resources: list[ConfigResource], **_: Any) -> dict[ConfigResource, Future[Any]]:
        self.calls.append("incremental_alter_configs")
        for res in resources:
            config = self.cluster.topics[res.name].config
            for e in res.incremental_configs:
                if e.incremental_operation == AlterConfigOpType.DELETE:
                    config.pop(e.name, None)
                else:
                    config[e.name] = cast(str, e.value)
        return {res: done(None) for res in resources}

    # consumer groups

    def list_consumer_groups(self, **_: Any) -> Future[Any]:
        self.calls.append("list_consumer_groups")
        return done(SimpleNamespace(valid=[SimpleNamespace(group_id=g) for g in self.cluster.groups], errors=[]))

    def describe_consumer_groups(self, group_ids: Sequence[str], **_: Any) -> dict[str, Future[Any]]:
        self.calls.append("describe_consumer_groups")
        out: dict[str, Future[Any]] = {}
        for g in group_ids:
            if g in self.cluster.describe_errors:
                out[g] = failed(self.cluster.describe_errors[g], "describe failed")
                continue
            group = self.cluster.groups.get(g)
            state = group.state if group is not None else ConsumerGroupState.DEAD
            members = [SimpleNamespace(member_id=f"m{i}") for i in range(group.members if group else 0)]
            out[g] = done(SimpleNamespace(group_id=g, state=state, members=members))
        return out

    def list_consumer_group_offsets(self, requests: Sequence[Any], **_: Any) -> dict[str, Future[Any]]:
        self.calls.append("list_consumer_group_offsets")
        out: dict[str, Future[Any]] = {}
        for r in requests:
            group = self.cluster.groups.get(r.group_id, FakeGroup())
            tps = [TopicPartition(t, p, o, metadata=m) for (t, p), (o, m) in sorted(group.offsets.items())]
            out[r.group_id] = done(SimpleNamespace(group_id=r.group_id, topic_partitions=tps))
        return out

    def delete_consumer_groups(self, group_ids: Sequence[str], **_: Any) -> dict[str, Future[Any]]:
        self.calls.append("delete_consumer_groups")
        out: dict[str, Future[Any]] = {}
        for g in group_ids:
            group = self.cluster.groups.get(g)
            if group is None:
                out[g] = failed(KafkaError.GROUP_ID_NOT_FOUND, "no such group")
            elif group.members:
                out[g] = failed(KafkaError.NON_EMPTY_GROUP, "the group has active members")
            else:
                del self.cluster.groups[g]
                out[g] = done(None)
        return out

    def alter_consumer_group_offsets(self, requests: Sequence[Any], **_: Any) -> dict[str, Future[Any]]:
        """Commit offsets; fails (``UNKNOWN_MEMBER_ID``, as a broker does) while the group has members."""
        self.calls.append("alter_consumer_group_offsets")
        out: dict[str, Future[Any]] = {}
        for r in requests:
            group = self.cluster.groups.setdefault(r.group_id, FakeGroup())
            if group.members:
                out[r.group_id] = failed(KafkaError.UNKNOWN_MEMBER_ID, "the group has active members")
                continue
            for tp in r.topic_partitions:
                group.offsets[(tp.topic, tp.partition)] = (tp.offset, tp.metadata or "")
            out[r.group_id] = done(SimpleNamespace(group_id=r.group_id, topic_partitions=list(r.topic_partitions)))
        return out


class _SpyFuture(Future[Any]):
    """A future that records the ``timeout`` each ``result()`` waits."""

    def __init__(self, spy: SpyAdmin, inner: Future[Any] | None) -> None:
        super().__init__()
        self._spy = spy
        if inner is not None:
            if inner.exception() is not None:
                self.set_exception(inner.exception())
            else:
                self.set_result(inner.result())

    def result(self, timeout: float | None = None) -> Any:
        self._spy.waits.append(timeout)
        return super().result(timeout)


class SpyAdmin:
    """An admin client that records how it is called, over another one (a :class:`FakeAdmin`).

    Every call's name and keyword arguments go to :attr:`requests`, every ``future.result(timeout=...)``
    to :attr:`waits`. With ``fail`` every answer fails with that Kafka error code (a call answering
    at once, as ``list_topics``, raises it); with ``hang`` no future ever completes (``list_topics``
    raises ``_TIMED_OUT``, as librdkafka does). Answers keep the inner client's shapes.
    """

    def __init__(self, inner: Any, *, fail: int | None = None, hang: bool = False) -> None:
        self.inner = inner
        self.fail = fail
        self.hang = hang
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.waits: list[float | None] = []

    def _answer(self, fut: Future[Any]) -> Future[Any]:
        if self.hang:
            return _SpyFuture(self, None)
        if self.fail is not None:
            return _SpyFuture(self, failed(self.fail, "injected"))
        return _SpyFuture(self, fut)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.requests.append((name, kwargs))
            out = method(*args, **kwargs)
            if isinstance(out, Future):
                return self._answer(out)
            if isinstance(out, dict) and out and all(isinstance(f, Future) for f in out.values()):
                return {k: self._answer(f) for k, f in out.items()}
            if self.hang or self.fail is not None:  # a call answering at once (list_topics)
                code = KafkaError._TIMED_OUT if self.hang or self.fail is None else self.fail
                raise KafkaException(KafkaError(code, "injected"))
            return out

        return call


class FakeMessage:
    """A consumed record, as confluent-kafka's ``Message``."""

    def __init__(self, topic: str, partition: int, offset: int, record: FakeRecord) -> None:
        self._topic, self._partition, self._offset, self._record = topic, partition, offset, record

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._record.key

    def value(self) -> bytes | None:
        return self._record.value

    def timestamp(self) -> tuple[int, int]:
        return (1, self._record.timestamp_ms)

    def headers(self) -> list[tuple[str, str | bytes | None]] | None:
        return self._record.headers


class FakeProducer:
    """A ``Producer`` appending to a :class:`FakeCluster`; every record is acknowledged at once.

    Deliveries to a topic in the cluster's ``failing_writes`` fail instead (``_MSG_TIMED_OUT``),
    counted in :attr:`failed`.
    """

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.produced = 0
        self.failed = 0

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = -1,
        callback: Any = None,
        on_delivery: Any = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        on_delivery = callback or on_delivery
        if topic not in self.cluster.topics:
            if on_delivery is not None:
                on_delivery(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART), None)
            return
        if self.cluster.failing_writes.get(topic, 0) > 0:
            self.cluster.failing_writes[topic] -= 1
            self.failed += 1
            if on_delivery is not None:
                on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT, "Local: Message timed out"), None)
            return
        self.cluster.append(topic, key, value, partition=max(partition, 0), ts=timestamp)
        self.produced += 1
        if on_delivery is not None:
            on_delivery(None, None)

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = -1) -> int:
        return 0


class FakeConsumer:
    """An assign-only ``Consumer`` reading a :class:`FakeCluster` (no group membership, no commits).

    ``committed()`` reads the committed offsets of its ``group.id`` (as a real consumer's OffsetFetch).
    """

    def __init__(self, cluster: FakeCluster, group_id: str | None = None) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.positions: dict[tuple[str, int], int] = {}
        self.closed = False

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        return FakeAdmin(self.cluster).list_topics(topic, timeout)

    def committed(self, partitions: Sequence[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        group = self.cluster.groups.get(self.group_id or "", FakeGroup())
        out = []
        for tp in partitions:
            offset, metadata = group.offsets.get((tp.topic, tp.partition), (-1001, ""))
            out.append(TopicPartition(tp.topic, tp.partition, offset, metadata=metadata))
        return out

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self.positions = {(tp.topic, tp.partition): max(tp.offset, 0) for tp in partitions}

    def incremental_assign(self, partitions: Sequence[TopicPartition]) -> None:
        self.positions.update({(tp.topic, tp.partition): max(tp.offset, 0) for tp in partitions})

    def incremental_unassign(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            self.positions.pop((tp.topic, tp.partition), None)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[FakeMessage]:
        out: list[FakeMessage] = []
        for (topic, partition), pos in sorted(self.positions.items()):
            log = self.cluster.records(topic, partition)
            if topic in self.cluster.topics:
                pos = max(pos, self.cluster.log_start(topic, partition))  # reads from the log start on
            take = log[pos : pos + num_messages - len(out)]
            out.extend(FakeMessage(topic, partition, pos + i, r) for i, r in enumerate(take))
            self.positions[(topic, partition)] = pos + len(take)
        return out

    def position(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.positions.get((tp.topic, tp.partition), -1001))
            for tp in partitions
        ]

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float = -1) -> tuple[int, int]:
        log = self.cluster.records(tp.topic, tp.partition)
        start = self.cluster.log_start(tp.topic, tp.partition) if tp.topic in self.cluster.topics else 0
        return start, len(log)

    def close(self) -> None:
        self.closed = True


class FakeClients:
    """A :class:`~mirrorspark.kafka.factory.ClientFactory` of fake clients, routed by ``bootstrap.servers``.

    Parameters
    ----------
    clusters:
        ``{bootstrap.servers: cluster}``.
    acls:
        Keyword arguments of :class:`FakeAclAdmin` per bootstrap servers (optional).

    Attributes
    ----------
    client_ids:
        ``client.id`` of every client created, in order.
    admins, producers, consumers:
        Every client created, in order.
    """

    def __init__(
        self, clusters: Mapping[str, FakeCluster], acls: Mapping[str, Mapping[str, Any]] | None = None
    ) -> None:
        self.clusters = dict(clusters)
        self.acls = dict(acls or {})
        self.client_ids: list[str] = []
        self.translated: list[ClientSettings] = []
        self.admins: list[FakeAdmin] = []
        self.producers: list[FakeProducer] = []
        self.consumers: list[FakeConsumer] = []
        self._translations: dict[ClientSettings, Mapping[str, Any]] = {}

    def _cluster(self, settings: ClientSettings, client_id: str) -> FakeCluster:
        self.client_ids.append(client_id)
        return self.clusters[settings.bootstrap_servers]

    def librdkafka(self, settings: ClientSettings) -> Mapping[str, Any]:
        if settings not in self._translations:
            self.translated.append(settings)
            self._translations[settings] = settings.to_librdkafka()
        return self._translations[settings]

    def admin(self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None) -> Any:
        admin = FakeAdmin(self._cluster(settings, client_id), **self.acls.get(settings.bootstrap_servers, {}))
        self.admins.append(admin)
        return admin

    def producer(self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None) -> Any:
        tid = (overrides or {}).get("transactional.id")
        if tid is not None:  # a transactional producer (fencing): init_transactions, transactions
            return FakeTaskProducer(self._cluster(settings, client_id), transactional_id=str(tid))
        p = FakeProducer(self._cluster(settings, client_id))
        self.producers.append(p)
        return p

    def consumer(self, settings: ClientSettings, *, client_id: str, overrides: Mapping[str, Any] | None = None) -> Any:
        c = FakeConsumer(self._cluster(settings, client_id), (overrides or {}).get("group.id"))
        self.consumers.append(c)
        return c


def two_clusters(extra: str = "") -> tuple[MirrorConfig, FakeCluster, FakeCluster, FakeClients]:
    """A config of clusters ``A`` (``a:9092``) and ``B`` (``b:9092``) with ``A->B`` enabled, plus their fakes.

    Parameters
    ----------
    extra:
        More ``mm2.properties`` lines (each ending with a newline).
    """
    config = parse_config(
        parse_properties(
            "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n" + extra
        )
    )
    a, b = FakeCluster("A"), FakeCluster("B")
    return config, a, b, FakeClients({"a:9092": a, "b:9092": b})


# --------------------------------------------------------------------------- a copy task's clients


class FakeDelivered:
    """What a delivery callback receives: the written record's topic, partition, offset and timestamp."""

    def __init__(self, topic: str, partition: int, offset: int, timestamp_ms: int) -> None:
        self._topic, self._partition, self._offset, self._ts = topic, partition, offset, timestamp_ms

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, self._ts)


@dataclass
class _InFlight:
    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Any
    callback: Any


class FakeTaskProducer:
    """A copy task's producer: records wait in flight until acknowledged, as librdkafka's do.

    ``produce`` queues; ``poll``/``flush`` acknowledge in order, at most :attr:`ack_budget` records
    (``None`` = all), writing each to the cluster and calling its delivery callback with a
    :class:`FakeDelivered` (downstream offset) or, for a record whose index is in :attr:`fail_at`,
    a ``KafkaError`` (not written, unless its index is in :attr:`landed` too: a write that timed out
    on the client after the broker appended it). Transactions: records written inside one are kept aside and
    appended on ``commit_transaction`` (dropped on abort); :attr:`commit_errors` raise, one per call.
    The log holds only committed records, so a fake consumer reads as ``read_committed`` does, and
    the end offset it lists is the last stable offset.

    With a ``transactional_id`` the producer is fenced as a broker fences (KIP-98):
    ``init_transactions`` makes it the id's owner in the cluster, fences the previous owner (its
    later ``begin_transaction``/``commit_transaction`` raise ``_FENCED``, fatal) and ends the
    previous owner's pending transaction: committed when it had sent its commit (``EndTxn``
    reached the coordinator: :meth:`die_after_end_txn`), else aborted.

    Parameters
    ----------
    cluster:
        Where acknowledged records go.
    transactional:
        Whether the producer has a ``transactional.id`` (records wait for the commit).
    transactional_id:
        Its ``transactional.id`` (fenced by later producers of the same id); implies ``transactional``.
    """

    def __init__(
        self, cluster: FakeCluster, *, transactional: bool = False, transactional_id: str | None = None
    ) -> None:
        self.cluster = cluster
        self.transactional = transactional or transactional_id is not None
        self.transactional_id = transactional_id
        self.fenced = False
        self.prepared = False  # its commit reached the coordinator (PREPARE_COMMIT), no answer came back
        self.in_flight: list[_InFlight] = []
        self.ack_budget: int | None = None
        self.fail_at: dict[int, int] = {}  # index of the produce call -> KafkaError code
        self.landed: set[int] = set()  # indexes in fail_at written all the same (outside transactions)
        self.produced = 0
        self.purged = 0
        self.initialised = False
        self.in_transaction = False
        self.commit_errors: list[KafkaError] = []
        self.commits = 0
        self.aborts = 0
        self._txn: list[tuple[str, int, FakeRecord]] = []
        self._txn_failed = 0  # the code of a record that failed in the open transaction

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = -1,
        callback: Any = None,
        on_delivery: Any = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        if self.transactional and not self.in_transaction:
            raise KafkaException(KafkaError(KafkaError._STATE, "Operation not valid in state Ready"))
        self.in_flight.append(
            _InFlight(topic, max(partition, 0), key, value, timestamp, headers, callback or on_delivery)
        )

    def _ack(self, n: int | None) -> int:
        done = 0
        while self.in_flight and (n is None or done < n):
            if self.ack_budget is not None:
                if self.ack_budget <= 0:
                    break
                self.ack_budget -= 1
            r = self.in_flight.pop(0)
            index = self.produced
            self.produced += 1
            done += 1
            code = self.fail_at.get(index)
            if code is not None:
                if self.transactional:  # librdkafka: a record failed in a transaction makes it abortable
                    self._txn_failed = self._txn_failed or code
                elif index in self.landed:
                    self.cluster.topics[r.topic].partitions[r.partition].append(
                        FakeRecord(r.key, r.value, r.timestamp, r.headers)
                    )
                if r.callback is not None:  # librdkafka hands the failed message too (offset -1001)
                    r.callback(KafkaError(code), FakeDelivered(r.topic, r.partition, -1001, r.timestamp))
                continue
            if self.transactional:
                log = self.cluster.topics[r.topic].partitions[r.partition]
                offset = len(log) + sum(1 for t, p, _ in self._txn if (t, p) == (r.topic, r.partition))
                self._txn.append((r.topic, r.partition, FakeRecord(r.key, r.value, r.timestamp, r.headers)))
            else:
                log = self.cluster.topics[r.topic].partitions[r.partition]
                log.append(FakeRecord(r.key, r.value, r.timestamp, r.headers))
                offset = len(log) - 1
            if r.callback is not None:
                r.callback(None, FakeDelivered(r.topic, r.partition, offset, r.timestamp))
        return done

    def poll(self, timeout: float = 0) -> int:
        return self._ack(None)

    def flush(self, timeout: float = -1) -> int:
        self._ack(None)
        return len(self.in_flight)

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        self.purged += len(self.in_flight)
        self.in_flight.clear()

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        return FakeAdmin(self.cluster).list_topics(topic, timeout)

    # transactions (KIP-98)
    def init_transactions(self, timeout: float = -1) -> None:
        tid = self.transactional_id
        if tid is not None:
            self.cluster.inits.append(tid)
            code = self.cluster.init_errors.get(tid)
            if code is not None:
                raise KafkaException(KafkaError(code, f"init_transactions of {tid} failed"))
            old = self.cluster.transactional.get(tid)
            if old is not None and old is not self:
                old.fenced = True
                if old.prepared:  # the coordinator completes a commit it was asked for
                    old._append_txn()
                old._txn.clear()  # anything else of its transaction is aborted
                old.in_flight.clear()
                old.prepared = old.in_transaction = False
            self.cluster.transactional[tid] = self
        self.initialised = True

    def _check_fenced(self) -> None:
        if self.fenced:
            raise KafkaException(
                KafkaError(KafkaError._FENCED, "Local: This instance has been fenced by a newer instance", fatal=True)
            )

    def begin_transaction(self) -> None:
        self._check_fenced()
        assert self.initialised and not self.in_transaction
        self.in_transaction = True

    def _append_txn(self) -> None:
        for topic, partition, rec in self._txn:
            self.cluster.topics[topic].partitions[partition].append(rec)
        self._txn.clear()

    def commit_transaction(self, timeout: float = -1) -> None:
        if self.commit_errors:
            raise KafkaException(self.commit_errors.pop(0))
        self._check_fenced()
        self.flush()
        if self._txn_failed:
            raise KafkaException(KafkaError(self._txn_failed, "Failed to produce messages", txn_requires_abort=True))
        self._append_txn()
        self.in_transaction = False
        self.commits += 1

    def die_after_end_txn(self) -> None:
        """Send the commit of the open transaction and die before its answer (PREPARE_COMMIT on the coordinator).

        Its records become visible only when the coordinator completes the commit: at the next
        ``init_transactions`` of the same id (a real coordinator also does so on its own, soon after).
        """
        self.flush()
        self.prepared = True

    def abort_transaction(self, timeout: float = -1) -> None:
        # librdkafka purges what is not acknowledged yet and serves its delivery reports (_PURGE_QUEUE) here
        purged, self.in_flight = self.in_flight, []
        self.purged += len(purged)
        for r in purged:
            if r.callback is not None:
                r.callback(KafkaError(KafkaError._PURGE_QUEUE), FakeDelivered(r.topic, r.partition, -1001, r.timestamp))
        self._txn.clear()
        self._txn_failed = 0
        self.in_transaction = False
        self.aborts += 1


class FakeErrorMessage:
    """A consumer's error event for one partition (e.g. ``_AUTO_OFFSET_RESET``)."""

    def __init__(self, topic: str | None, partition: int, code: int) -> None:
        self._topic, self._partition, self._err = topic, partition, KafkaError(code)

    def error(self) -> KafkaError:
        return self._err

    def topic(self) -> str | None:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int | None:
        return None

    def key(self) -> bytes | None:
        return None

    def value(self) -> bytes | None:
        return None

    def headers(self) -> None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return (0, 0)


class FakeTaskConsumer(FakeConsumer):
    """A copy task's consumer: ``poll``, ``consume``, ``pause`` and ``seek`` too; a position below a
    partition's log start is reported once as ``_AUTO_OFFSET_RESET`` (``auto.offset.reset=error``)."""

    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__(cluster)
        self.paused: set[tuple[str, int]] = set()
        self.seeks: list[tuple[str, int, int]] = []
        self.errors: list[FakeErrorMessage] = []  # handed out by the next poll, first
        self.consume_timeouts: list[float] = []  # the timeout of every consume call, in order
        self.list_offsets_calls = 0
        self.list_offsets_most = 0  # most partitions in one offsets_for_times call
        self.list_offsets_error: int | None = None  # a KafkaError code offsets_for_times raises
        self.fetched: list[tuple[str, int]] = []  # every partition a take looked at, unpaused (a fetch)

    def _take(self, n: int) -> list[Any]:
        out: list[Any] = []
        for (topic, partition), pos in sorted(self.positions.items()):
            if len(out) >= n:
                break
            if (topic, partition) in self.paused:
                continue
            self.fetched.append((topic, partition))
            if pos < self.cluster.log_start(topic, partition):
                self.paused.add((topic, partition))  # reported once, as librdkafka does with "error"
                out.append(FakeErrorMessage(topic, partition, KafkaError._AUTO_OFFSET_RESET))
                continue
            log = self.cluster.records(topic, partition)
            take = log[pos : pos + n - len(out)]
            out.extend(FakeMessage(topic, partition, pos + i, r) for i, r in enumerate(take))
            self.positions[(topic, partition)] = pos + len(take)
        return out

    def poll(self, timeout: float = -1) -> Any:
        if self.errors:
            return self.errors.pop(0)
        got = self._take(1)
        return got[0] if got else None

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        self.consume_timeouts.append(timeout)
        return self._take(num_messages)

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self.positions = {(tp.topic, tp.partition): tp.offset for tp in partitions}

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused.update((tp.topic, tp.partition) for tp in partitions)

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused.difference_update((tp.topic, tp.partition) for tp in partitions)

    def seek(self, tp: TopicPartition) -> None:
        self.seeks.append((tp.topic, tp.partition, tp.offset))
        self.positions[(tp.topic, tp.partition)] = tp.offset

    def offsets_for_times(self, partitions: Sequence[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        """``ListOffsets``: -1 is each partition's end offset (``list_offsets_calls`` counts the requests)."""
        self.list_offsets_calls += 1
        self.list_offsets_most = max(self.list_offsets_most, len(partitions))
        if self.list_offsets_error is not None:
            raise KafkaException(KafkaError(self.list_offsets_error))
        assert all(tp.offset == -1 for tp in partitions), "only the end offset is faked"
        return [
            TopicPartition(tp.topic, tp.partition, len(self.cluster.records(tp.topic, tp.partition)))
            for tp in partitions
        ]


class RecordingGrantServer:
    """The driver's grant server as a supervisor uses it: records ``(verb, flow, generation)`` of each call."""

    address = ("127.0.0.1", 1, "token")

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def grant(self, flow: str, generation: int, deadline: float) -> None:
        self.calls.append(("grant", flow, generation))

    def stop(self, flow: str, generation: int) -> None:
        self.calls.append(("stop", flow, generation))

    def abort(self, flow: str, generation: int) -> None:
        self.calls.append(("abort", flow, generation))

    def forget(self, *_: Any) -> None: ...

    def throttle(self, *_: Any) -> None: ...


class FakeGrants:
    """A copy task's grant link to the driver: ``state`` and whether a grant is valid are set by the test."""

    def __init__(self) -> None:
        from mirrorspark.replication.task.grant_client import GrantState

        self.state = GrantState.OPEN
        self.granted = True
        self.closed = False
        self.rate = 0  # the throttle share, bytes/s (0: no limit)
        self.spent: tuple[int, float] = (0, 0.0)

    def throttled(self, sent_bytes: int, throttled_s: float) -> None:
        self.spent = (sent_bytes, throttled_s)

    def check(self) -> Any:
        return self.state

    def may_commit(self) -> bool:
        from mirrorspark.replication.task.grant_client import GrantState

        return self.granted and self.state in (GrantState.OPEN, GrantState.STOP)

    def close(self) -> None:
        self.closed = True


class FakeRegistry:
    """An in-memory Schema Registry with Confluent's semantics, a :class:`SchemaRegistryLike`.

    Ids are content ids shared by every subject: the same (type, text, references) gets the same id, new ones
    count up from ``first_id``. :meth:`register` is idempotent (a schema the subject already holds gives its id,
    no new version), refuses references to versions it does not hold, and numbers a subject's versions from 1.
    A subject's compatibility level is ``None`` until set. ``refuse(subject, schema)``, when it answers true,
    makes :meth:`register` raise SchemaSubjectConflictError (as HTTP 409 would); ``down = True`` makes every
    call raise a retriable SchemaRegistryError. ``calls`` counts the calls of each method.
    """

    def __init__(
        self,
        name: str = "fake-registry",
        *,
        first_id: int = 1,
        refuse: Callable[[str, SchemaText], bool] | None = None,
    ) -> None:
        self._name = f"http://{name}"
        self.refuse = refuse
        self.down = False
        self.calls: Counter[str] = Counter()
        self.ids: dict[SchemaText, int] = {}
        self.by_id: dict[int, SchemaText] = {}
        self.subject_ids: dict[str, list[int]] = {}  # the ids of a subject's versions 1, 2, ...
        self.levels: dict[str, str] = {}
        self._next_id = first_id
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def _enter(self, method: str) -> None:
        self.calls[method] += 1
        if self.down:
            raise SchemaRegistryError(f"Schema Registry {self._name} cannot be reached (down)", retriable=True)

    def schema(self, schema_id: int) -> SchemaText | None:
        self._enter("schema")
        return self.by_id.get(schema_id)

    def versions_of(self, schema_id: int) -> list[SubjectVersion]:
        self._enter("versions_of")
        with self._lock:
            return sorted(
                SubjectVersion(subject, i + 1)
                for subject, ids in self.subject_ids.items()
                for i, known in enumerate(ids)
                if known == schema_id
            )

    def subjects(self) -> list[str]:
        self._enter("subjects")
        with self._lock:
            return sorted(self.subject_ids)

    def versions(self, subject: str) -> list[int]:
        self._enter("versions")
        return list(range(1, len(self.subject_ids.get(subject, ())) + 1))

    def version(self, subject: str, version: int) -> tuple[int, SchemaText]:
        self._enter("version")
        ids = self.subject_ids.get(subject, [])
        if not 1 <= version <= len(ids):
            raise SchemaRegistryError(f"Schema Registry {self._name} has no version {version} of subject '{subject}'")
        return ids[version - 1], self.by_id[ids[version - 1]]

    def lookup(self, subject: str, schema: SchemaText) -> tuple[int, int] | None:
        self._enter("lookup")
        schema_id = self.ids.get(schema)
        ids = self.subject_ids.get(subject, [])
        return None if schema_id is None or schema_id not in ids else (schema_id, ids.index(schema_id) + 1)

    def register(self, subject: str, schema: SchemaText) -> int:
        self._enter("register")
        with self._lock:
            ids = self.subject_ids.get(subject, [])
            known = self.ids.get(schema)
            if known is not None and known in ids:
                return known
            for ref in schema.references:
                if not 1 <= ref.version <= len(self.subject_ids.get(ref.subject, ())):
                    raise SchemaRegistryError(
                        f"Schema Registry {self._name} refused a schema under '{subject}': its reference "
                        f"{ref.name!r} names version {ref.version} of subject '{ref.subject}', which it does not hold"
                    )
            if self.refuse is not None and self.refuse(subject, schema):
                raise SchemaSubjectConflictError(
                    f"Schema Registry {self._name} refused a schema under subject '{subject}' as incompatible"
                )
            if known is None:
                known, self._next_id = self._next_id, self._next_id + 1
                self.ids[schema], self.by_id[known] = known, schema
            self.subject_ids.setdefault(subject, []).append(known)
            return known

    def compatibility(self, subject: str) -> str | None:
        self._enter("compatibility")
        return self.levels.get(subject)

    def set_compatibility(self, subject: str, level: str) -> None:
        self._enter("set_compatibility")
        self.levels[subject] = level


# --------------------------------------------------------------------------- the source's __consumer_offsets


class FakeTail:
    """The source's ``__consumer_offsets`` as the commit follower reads it: commits handed on at the next read."""

    def __init__(self, *commits: tuple[str, str, int, Committed]) -> None:
        self.pending: list[tuple[str, str, int, Committed]] = list(commits)
        self.reads = 0

    def commit(self, group: str, topic: str, partition: int, offset: int, metadata: str = "") -> None:
        self.pending.append((group, topic, partition, Committed(offset, metadata, 1_000)))

    def read(self, on_commit: Callable[[str, str, int, Committed], None] | None = None) -> int:
        self.reads += 1
        got, self.pending = self.pending, []
        for c in got:
            if on_commit is not None:
                on_commit(*c)
        return len(got)

    def committed(self, group: str) -> dict[tuple[str, int], tuple[int, str]]:
        return {}

    def close(self) -> None:
        pass
