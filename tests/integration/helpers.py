"""Helpers for integration tests against the real local Kafka clusters.

Every helper takes ``bootstrap``: either a ``bootstrap.servers`` string or a full
librdkafka client configuration (e.g. ``LocalCluster.client_config()`` for a SASL
cluster). Nothing here sleeps for a fixed time: waits poll against a deadline
(:func:`polling.assert_eventually`, shared by every tier, re-exported here).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.latency_proxy import LatencyProxy, LinkShape, wan_link
from mirrorspark.kafka.local.model import LocalClusters
from polling import assert_eventually

__all__ = [
    "ActiveMember",
    "Bootstrap",
    "Record",
    "admin",
    "assert_eventually",
    "client_config",
    "clusters_behind_a_link",
    "commit_offsets",
    "consume_all",
    "create_topic",
    "end_offsets",
    "kafka_tool",
    "produce",
    "target_offsets",
    "unique_name",
]

Bootstrap = str | Mapping[str, str]
"""``bootstrap.servers``, or a whole librdkafka client configuration."""

Record = dict[str, Any]
"""A record as a dict: ``key``, ``value`` (bytes or None), ``headers`` (list of (str, bytes)),
``timestamp_ms``, ``partition`` and, when consumed, ``offset``."""


def kafka_tool(bootstrap: str, tool: str, *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's own command-line tools (``tool``: its class, e.g. ``TransactionsCommand``'s) from the
    Kafka jars against ``bootstrap``; its output as text.

    Raises
    ------
    subprocess.TimeoutExpired
        The tool did not end within ``timeout_s``.
    """
    from mirrorspark.kafka.jars import classpath, java_executable

    cmd = [java_executable(), "-Dlog4j2.level=error", "-cp", classpath("kafka"), tool, "--bootstrap-server", bootstrap]
    return subprocess.run(
        [*cmd, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def unique_name(prefix: str) -> str:
    """Return ``<prefix>-<10 hex chars>``, unique per call (topic and group names per test)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def client_config(bootstrap: Bootstrap, **overrides: Any) -> dict[str, Any]:
    """Return a librdkafka configuration for ``bootstrap`` with ``overrides`` applied."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap} if isinstance(bootstrap, str) else dict(bootstrap)
    config.update(overrides)
    return config


def admin(bootstrap: Bootstrap) -> AdminClient:
    """Return an ``AdminClient`` for the cluster."""
    return AdminClient(client_config(bootstrap, **{"client.id": "mirrorspark-tests|admin"}))


def create_topic(
    bootstrap: Bootstrap,
    name: str,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    replication_factor: int = -1,
    timeout_s: float = 30.0,
) -> None:
    """Create a topic and wait until every partition has a leader.

    Parameters
    ----------
    bootstrap:
        The cluster.
    name:
        Topic name.
    partitions:
        Partition count (default 1).
    config:
        Topic configs, e.g. ``{"cleanup.policy": "compact"}``.
    replication_factor:
        Replicas per partition; default ``-1``: the broker's ``default.replication.factor``
        (the broker count of a local cluster, up to 3).
    timeout_s:
        Deadline in seconds for creation and leader election.

    Raises
    ------
    KafkaException
        If the broker refuses the topic (e.g. it exists).
    AssertionError
        If the partitions have no leader before the deadline.
    """
    client = admin(bootstrap)
    new = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=dict(config or {}))
    client.create_topics([new], request_timeout=timeout_s)[name].result(timeout=timeout_s)

    def has_leaders() -> bool:
        topic = client.list_topics(topic=name, timeout=5).topics.get(name)
        return (
            topic is not None
            and topic.error is None
            and len(topic.partitions) == partitions
            and all(p.leader >= 0 for p in topic.partitions.values())
        )

    assert_eventually(has_leaders, timeout_s=timeout_s, message=f"topic {name} has no leaders")


def produce(
    bootstrap: Bootstrap,
    topic: str,
    records: Sequence[Mapping[str, Any]],
    timeout_s: float = 30.0,
    *,
    idempotent: bool = False,
) -> None:
    """Produce records and wait until every one is acknowledged.

    Parameters
    ----------
    bootstrap:
        The cluster.
    topic:
        Target topic.
    records:
        Dicts with optional ``key``, ``value`` (bytes or str), ``headers`` (list of
        (str, bytes)), ``timestamp_ms`` (ms since the epoch; default: now) and ``partition``
        (default: the partitioner's choice).
    timeout_s:
        Deadline in seconds for the acknowledgements.
    idempotent:
        Produce idempotently, for a test that needs each partition in exactly the order sent: the
        default producer (one request in flight) once stored a just-created partition out of
        order (test_standalone: the broker's first batch held records 403..472, the next 0..402,
        then the rest; audit 2 §3 H2), while the broker refuses an idempotent producer's batch
        out of sequence. Needs the principal's idempotent-write permission and costs a producer
        id request, hence not the default.

    Raises
    ------
    KafkaException
        If a record is not acknowledged (with the first error).
    """
    producer = Producer(
        client_config(
            bootstrap,
            # Not idempotent by default: librdkafka spends ~0.5 s per producer acquiring a producer id.
            # One request in flight keeps the order across retries instead, nearly always (see idempotent).
            **{
                "client.id": "mirrorspark-tests|producer",
                "acks": "all",
                "max.in.flight.requests.per.connection": 1,
                "linger.ms": 0,
                **({"enable.idempotence": True} if idempotent else {}),
            },
        )
    )
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for record in records:
        kwargs: dict[str, Any] = {
            "key": record.get("key"),
            "value": record.get("value"),
            "on_delivery": on_delivery,
        }
        if record.get("headers") is not None:
            kwargs["headers"] = list(record["headers"])
        if record.get("timestamp_ms") is not None:
            kwargs["timestamp"] = int(record["timestamp_ms"])
        if record.get("partition") is not None:
            kwargs["partition"] = int(record["partition"])
        while True:
            try:
                producer.produce(topic, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(timeout_s)
    if left:
        raise KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT, f"{left} records to {topic} not acknowledged"))
    if errors:
        raise KafkaException(errors[0])


def end_offsets(
    bootstrap: Bootstrap, topic: str, *, read_committed: bool = True, timeout_s: float = 30.0
) -> dict[int, tuple[int, int]]:
    """Return ``{partition: (start offset, end offset)}`` of a topic.

    The end offset is the next offset to be written (high watermark), or the last stable
    offset with ``read_committed`` (default).
    """
    from confluent_kafka import IsolationLevel

    client = admin(bootstrap)
    meta = client.list_topics(topic=topic, timeout=timeout_s).topics[topic]
    if meta.error is not None:
        raise KafkaException(meta.error)
    tps = [TopicPartition(topic, p) for p in sorted(meta.partitions)]
    level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED

    def offsets(spec: OffsetSpec) -> dict[int, int]:
        futures = client.list_offsets({tp: spec for tp in tps}, isolation_level=level, request_timeout=timeout_s)
        return {tp.partition: fut.result(timeout=timeout_s).offset for tp, fut in futures.items()}

    starts = offsets(OffsetSpec.earliest())
    ends = offsets(OffsetSpec.latest())
    return {p: (starts[p], ends[p]) for p in starts}


def consume_all(
    bootstrap: Bootstrap, topic: str, timeout_s: float = 30.0, *, read_committed: bool = True
) -> list[Record]:
    """Read every record of a topic, from the start to the end offsets taken at the call.

    Uses ``assign`` (no consumer group joins or commits).

    Parameters
    ----------
    bootstrap:
        The cluster.
    topic:
        The topic.
    timeout_s:
        Deadline in seconds.
    read_committed:
        Read only committed transactional records, up to the last stable offset (default).

    Returns
    -------
    list[Record]
        Records ordered by partition then offset: ``key``, ``value``, ``headers`` (list of
        (str, bytes), empty if none), ``timestamp_ms``, ``partition``, ``offset``.

    Raises
    ------
    AssertionError
        If the end offsets are not reached before the deadline.
    KafkaException
        On a consumer error.
    """
    deadline = time.monotonic() + timeout_s
    bounds = {p: (s, e) for p, (s, e) in end_offsets(bootstrap, topic, read_committed=read_committed).items() if e > s}
    if not bounds:
        return []
    consumer = Consumer(
        client_config(
            bootstrap,
            **{
                "group.id": unique_name("mirrorspark-tests-reader"),  # required; never joined
                "client.id": "mirrorspark-tests|consumer",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed" if read_committed else "read_uncommitted",
            },
        )
    )
    records: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, p, start) for p, (start, _) in bounds.items()])
        pending = set(bounds)
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"consuming {topic} timed out after {timeout_s:.1f} s; partitions {sorted(pending)}"
                    f" not read to their end offsets {[bounds[p][1] for p in sorted(pending)]}"
                )
            msg = consumer.poll(min(remaining, 0.5))
            if msg is not None:
                err = msg.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    raise KafkaException(err)
                partition, offset = msg.partition(), msg.offset()
                if err is None and partition is not None and offset is not None and offset < bounds[partition][1]:
                    _ts_type, ts = msg.timestamp()
                    records.append(
                        {
                            "key": msg.key(),
                            "value": msg.value(),
                            "headers": list(msg.headers() or []),
                            "timestamp_ms": ts,
                            "partition": partition,
                            "offset": offset,
                        }
                    )
            # Done with a partition once its position reaches the end offset (control records
            # of transactions advance the position without being returned).
            positions = consumer.position([TopicPartition(topic, p) for p in pending])
            for tp in positions:
                if tp.offset >= bounds[tp.partition][1]:
                    pending.discard(tp.partition)
    finally:
        consumer.close()
    records.sort(key=lambda r: (r["partition"], r["offset"]))
    return records


class ActiveMember:
    """A consumer that stays in a group on a cluster (an active member) until closed."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
            }
        )
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self.assigned = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.1)
            if self.consumer.assignment():
                self.assigned.set()

    def close(self) -> None:
        self._stop.set()
        self.thread.join(10)
        self.consumer.close()


_COORDINATOR_SETTLING = frozenset(
    {KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR}
)


def commit_offsets(bootstrap: Bootstrap, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Commit a group's offsets as a consumer that read that far would, then leave the group empty.

    Retried while the group's coordinator settles (a cluster just started, or a coordinator moving).
    """

    def once() -> bool:
        c = Consumer(client_config(bootstrap, **{"group.id": group, "enable.auto.commit": False}))
        try:
            c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() in _COORDINATOR_SETTLING:
                return False
            raise
        finally:
            c.close()
        return True

    assert_eventually(once, timeout_s=120, message=f"group {group} could not commit")


def target_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """A group's committed offset per partition of a topic (negative: none)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    c.close()
    return {tp.partition: tp.offset for tp in got}


def consumer_offsets_of(bootstrap: Bootstrap, group: str, timeout_s: float = 60.0) -> list[tuple[int, Any]]:
    """The decoded ``__consumer_offsets`` records of one group, in log order: ``(offset, record)``.

    ``record`` is an :class:`~mirrorspark.mm2.consumer_offsets.OffsetCommit` or
    :class:`~mirrorspark.mm2.consumer_offsets.GroupMetadata` (a group lives in one partition).
    """
    from mirrorspark.mm2.consumer_offsets import CONSUMER_OFFSETS_TOPIC, decode_consumer_offsets_record

    out = []
    for r in consume_all(bootstrap, CONSUMER_OFFSETS_TOPIC, timeout_s):
        rec = decode_consumer_offsets_record(r["key"], r["value"])
        if rec is not None and rec.group == group:
            out.append((r["offset"], rec))
    return out


def run_in_thread(replicator: Any, errors: list[BaseException]) -> threading.Thread:
    """Run a started ``Replicator`` until stopped on a daemon thread; what it raises lands in ``errors``."""

    def run() -> None:
        try:
            replicator.run()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def produce_until(bootstrap: str, topic: str, stop: threading.Event, *, partitions: int = 1) -> None:
    """Produce ``v<n>`` every 20 ms, round robin over ``partitions``, until ``stop`` is set; then flush."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    i = 0
    while not stop.is_set():
        p.produce(topic, f"v{i}".encode(), partition=i % partitions)
        p.poll(0)
        i += 1
        time.sleep(0.02)
    p.flush(10)


@contextlib.contextmanager
def clusters_behind_a_link(base_dir: Path, shape: LinkShape) -> Iterator[tuple[LocalClusters, LatencyProxy]]:
    """Start ``primary`` (its WAN listener behind a latency proxy of ``shape``) and ``backup``; stop them after.

    A module's clusters: an ``atexit`` safety net of their own stops them if the session dies first.
    """
    stop = functools.partial(stop_clusters, base_dir)
    atexit.register(stop)
    clusters = start_clusters(["primary", "backup"], base_dir=base_dir, brokers=1, wan=True)
    try:
        with wan_link(clusters.cluster("primary"), shape) as link:
            yield clusters, link
    finally:
        stop()
        atexit.unregister(stop)
