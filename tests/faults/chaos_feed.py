"""The randomized fault checker's feed: unique, checkable records into several source topics, and its log.

Every value names where it was produced: ``chaos|<topic>|<incarnation>|<partition>|<seq %012d>|``
plus padding. ``seq`` counts per (topic, incarnation, partition) from 0, and the producer is
idempotent (one producer per topic incarnation), so the source holds each value once and, in each
partition, in ``seq`` order. The feed keeps a log of every acknowledged record: value ->
(topic, incarnation, partition, upstream offset). The checker needs it because deleted and
re-created topics no longer hold what was produced.

A topic *incarnation* is one life of a topic name between creation and deletion, identified by
its topic id (what ``mirrorspark status --json`` names in a ``recreated`` gap). The feed holds a
topic while it is deleted and re-created (:meth:`ChaosFeed.recreate`) and follows added
partitions (:meth:`ChaosFeed.add_partitions`).

A :class:`SourceGroup` consumes the source topics in a consumer group and commits as it reads,
so the flows write checkpoints the checker can verify.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import NewPartitions
from helpers import admin, assert_eventually, client_config, create_topic

__all__ = ["ChaosFeed", "FedRecord", "Incarnation", "Removal", "SourceGroup", "parse_value", "topic_id"]

PREFIX = b"chaos|"


@dataclass(frozen=True)
class FedRecord:
    """Where one acknowledged value lives (lived) on the source.

    Attributes
    ----------
    topic, incarnation, partition:
        The source partition and the topic's incarnation (0 = first creation).
    offset:
        The upstream offset the source acknowledged.
    """

    topic: str
    incarnation: int
    partition: int
    offset: int


@dataclass
class Incarnation:
    """One life of a source topic.

    Attributes
    ----------
    index:
        0 for the first creation, then 1, 2, ... per re-creation.
    topic_id:
        Kafka's topic id (base64, as ``status --json`` prints it).
    created_ms, deleted_ms:
        Wall-clock epoch ms of its creation and deletion (``None`` while it lives).
    """

    index: int
    topic_id: str
    created_ms: int
    deleted_ms: int | None = None


@dataclass(frozen=True)
class Removal:
    """Source records one fault removed, as the fault log records them (the checker's only ground for a gap).

    Attributes
    ----------
    kind:
        The fault: ``"delete-records"`` or ``"recreate-topic"`` (one removal per partition of the old topic).
    at_ms:
        Wall-clock epoch ms just before the removal was asked for (a gap naming it is found later).
    topic, incarnation, topic_id, partition:
        The source partition and the topic's incarnation (its index and id) the records were removed from.
    first, end:
        The offsets ``[first, end)`` removed: the log start and the end offset at the removal (for a
        re-created topic every record its old incarnation still held; ``first == end``: none).
    """

    kind: str
    at_ms: int
    topic: str
    incarnation: int
    topic_id: str
    partition: int
    first: int
    end: int

    def holds(self, rec: FedRecord) -> bool:
        """Whether ``rec`` is one of the records removed."""
        return (rec.topic, rec.incarnation, rec.partition) == (self.topic, self.incarnation, self.partition) and (
            self.first <= rec.offset < self.end
        )

    def line(self) -> str:
        """``recreate-topic t-0 (incarnation 0, id X) offsets 0..99 removed at <ms>``, for the verdict's reader."""
        span = f"offsets {self.first}..{self.end - 1}" if self.end > self.first else "no offsets"
        where = f"{self.topic}-{self.partition} (incarnation {self.incarnation}, id {self.topic_id})"
        return f"{self.kind} {where}: {span} removed at {self.at_ms}"


def parse_value(value: bytes) -> tuple[str, int, int, int] | None:
    """``(topic, incarnation, partition, seq)`` of a feed value, ``None`` for any other value."""
    if not value.startswith(PREFIX):
        return None
    parts = value.split(b"|")
    try:
        return parts[1].decode(), int(parts[2]), int(parts[3]), int(parts[4])
    except (IndexError, ValueError):
        return None


def topic_id(bootstrap: str, topic: str, *, timeout_s: float = 60.0) -> str:
    """The topic id of ``topic`` (base64), once every partition has a leader."""

    def once() -> str:
        client = admin(bootstrap)  # kept alive until the future resolves
        desc = client.describe_topics(TopicCollection([topic]), request_timeout=10)[topic].result(10)
        assert all(p.leader is not None for p in desc.partitions), f"{topic} has a partition without leader"
        return str(desc.topic_id)

    return str(assert_eventually(once, timeout_s=timeout_s, interval_s=0.5, message=f"no topic id for {topic}"))


@dataclass
class _Topic:
    name: str
    partitions: int
    lives: list[Incarnation] = field(default_factory=list)
    producer: Producer | None = None
    seq: dict[int, int] = field(default_factory=dict)
    held: bool = False


class ChaosFeed:
    """A producer thread: ``rate`` records/s over every partition of every topic, round-robin, until :meth:`finish`.

    Parameters
    ----------
    bootstrap:
        The source cluster.
    topics:
        Source topic names (created here with ``partitions`` partitions each).
    partitions:
        Initial partitions per topic.
    rate:
        Records per second, all topics together.
    pad:
        Bytes of padding per value.

    Attributes
    ----------
    log:
        value -> :class:`FedRecord` for every acknowledged record.
    errors:
        Delivery errors (at most 20 kept).
    """

    def __init__(self, bootstrap: str, topics: list[str], *, partitions: int, rate: int, pad: int = 32) -> None:
        self.bootstrap, self.rate, self.pad = bootstrap, rate, b"." * pad
        self.topics = {t: _Topic(t, partitions) for t in topics}
        self.log: dict[bytes, FedRecord] = {}
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-feed", daemon=True)
        for t in topics:
            create_topic(bootstrap, t, partitions=partitions, timeout_s=60)
            self._new_life(self.topics[t])

    def _new_life(self, t: _Topic) -> None:
        t.lives.append(Incarnation(len(t.lives), topic_id(self.bootstrap, t.name), int(time.time() * 1000)))
        t.seq = {}
        t.producer = Producer(
            client_config(
                self.bootstrap,
                **{
                    "client.id": f"mirrorspark-chaos|feed|{t.name}|{len(t.lives) - 1}",
                    "enable.idempotence": True,
                    "linger.ms": 5,
                    "topic.metadata.refresh.interval.ms": 1000,
                    "log_level": 3,
                },
            )
        )

    def incarnations(self, topic: str) -> list[Incarnation]:
        """The lives of ``topic`` so far, oldest first."""
        return list(self.topics[topic].lives)

    def start(self) -> ChaosFeed:
        """Start producing; returns ``self``."""
        self._thread.start()
        return self

    def _run(self) -> None:
        t0, sent = time.monotonic(), 0
        while not self._stop.is_set():
            due = int((time.monotonic() - t0) * self.rate) + 1
            with self._lock:
                live = [t for t in self.topics.values() if not t.held]
                slots = [(t, p) for t in live for p in range(t.partitions)]
                while sent < due and slots:
                    t, p = slots[sent % len(slots)]
                    if not self._produce(t, p):
                        break
                    sent += 1
                for t in live:
                    assert t.producer is not None
                    t.producer.poll(0)
            self._stop.wait(0.02)  # pacing, not a wait for a condition

    def _produce(self, t: _Topic, p: int) -> bool:
        inc, n = len(t.lives) - 1, t.seq.get(p, 0)
        value = PREFIX + b"%s|%d|%d|%012d|" % (t.name.encode(), inc, p, n) + self.pad
        assert t.producer is not None
        try:
            t.producer.produce(t.name, value, partition=p, on_delivery=self._delivered)
        except BufferError:
            return False
        except KafkaException as e:  # a partition just added, not in the producer's metadata yet: try again
            if e.args[0].code() != KafkaError._UNKNOWN_PARTITION:
                raise
            return False
        t.seq[p] = n + 1
        return True

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            if len(self.errors) < 20:
                self.errors.append(f"{msg.topic()}-{msg.partition()}: {err}")
            return
        parsed = parse_value(msg.value() or b"")
        if parsed is not None and msg.offset() is not None:
            topic, inc, p, _ = parsed
            self.log[msg.value() or b""] = FedRecord(topic, inc, p, int(msg.offset() or 0))

    @contextlib.contextmanager
    def _held(self, topic: str) -> Iterator[_Topic]:
        t = self.topics[topic]
        with self._lock:
            t.held = True
        try:
            assert t.producer is not None
            left = t.producer.flush(120)
            assert left == 0, f"{left} records of {topic} not acknowledged before the fault"
            yield t
        finally:
            with self._lock:
                t.held = False

    def recreate(self, topic: str, removed: list[Removal]) -> str:
        """Hold ``topic``, delete it, create it again (same partitions), feed its new incarnation; returns a note.

        Appends to the fault log ``removed``, before asking for the deletion, every record the old
        incarnation still holds, per partition (its log start and end offsets, read while the topic is
        held, so final).
        """
        client = admin(self.bootstrap)
        with self._held(topic) as held:
            life = held.lives[-1]
            ranges = [self.source_range(topic, p) for p in range(held.partitions)]
            at_ms = int(time.time() * 1000)
            removed += [
                Removal("recreate-topic", at_ms, topic, life.index, life.topic_id, p, first, end)
                for p, (first, end) in enumerate(ranges)
            ]
            client.delete_topics([topic], request_timeout=30)[topic].result(30)
            held.lives[-1].deleted_ms = int(time.time() * 1000)
            assert_eventually(
                lambda: topic not in client.list_topics(timeout=10).topics,
                timeout_s=60,
                message=f"{topic} still listed after its deletion",
            )

            def create() -> bool:
                create_topic(self.bootstrap, topic, partitions=held.partitions, timeout_s=30)
                return True

            assert_eventually(create, timeout_s=90, interval_s=1.0, message=f"{topic} not created again")
            old = held.lives[-1].topic_id
            self._new_life(held)
            return f"{topic} re-created ({held.partitions} partitions), topic id {old} -> {held.lives[-1].topic_id}"

    def add_partitions(self, topic: str, more: int) -> str:
        """Add ``more`` partitions to ``topic`` and feed them too; returns a note."""
        client = admin(self.bootstrap)
        with self._held(topic) as held:
            total = held.partitions + more
            client.create_partitions([NewPartitions(topic, total)], request_timeout=30)[topic].result(30)

            def grown() -> bool:
                meta = client.list_topics(topic=topic, timeout=10).topics[topic]
                return len(meta.partitions) == total and all(m.leader >= 0 for m in meta.partitions.values())

            assert_eventually(grown, timeout_s=60, message=f"{topic} did not grow to {total} partitions")
            producer = held.producer
            assert producer is not None

            def known() -> bool:  # the feed's producer sees them too (it refreshes its metadata every second)
                return len(producer.list_topics(topic, timeout=10).topics[topic].partitions) == total

            assert_eventually(known, timeout_s=60, message=f"the feed's producer does not see {total} partitions")
            held.partitions = total
        return f"{topic}: {total - more} -> {total} partitions"

    def source_end(self, topic: str, partition: int) -> int:
        """The high watermark of a source partition now (the next offset the feed will write there)."""
        return self.source_range(topic, partition)[1]

    def source_range(self, topic: str, partition: int) -> tuple[int, int]:
        """``(log start, high watermark)`` of a source partition now: the offsets it holds are ``[start, end)``."""
        consumer = Consumer(client_config(self.bootstrap, **{"group.id": "chaos-watermarks"}))
        try:
            lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            return int(lo), int(hi)
        finally:
            consumer.close()

    def finish(self) -> dict[bytes, FedRecord]:
        """Stop producing, wait for every acknowledgement; returns :attr:`log`.

        Raises
        ------
        AssertionError
            If the thread did not end or records were not acknowledged within 120 s.
        """
        self._stop.set()
        self._thread.join(60)
        for t in self.topics.values():
            if t.producer is not None:
                left = t.producer.flush(120)
                assert left == 0, f"{left} records of {t.name} never acknowledged"
        return dict(self.log)

    @property
    def produced(self) -> int:
        """Records acknowledged so far."""
        return len(self.log)


class SourceGroup:
    """A consumer group on the source that reads every feed topic and commits as it reads (every ~0.5 s).

    The flows translate its committed offsets into checkpoints on the target.
    """

    def __init__(self, bootstrap: str, group: str, pattern: str) -> None:
        self.group = group
        self._consumer = Consumer(
            client_config(
                bootstrap,
                **{
                    "group.id": group,
                    "client.id": "mirrorspark-chaos|group",
                    "enable.auto.commit": True,
                    "auto.commit.interval.ms": 500,
                    "auto.offset.reset": "earliest",
                    "topic.metadata.refresh.interval.ms": 2000,
                    "session.timeout.ms": 10_000,
                    "log_level": 3,
                },
            )
        )
        self._consumer.subscribe([pattern])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-group", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._consumer.consume(num_messages=5000, timeout=0.2)

    def close(self) -> None:
        """Stop reading and leave the group (idempotent)."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(30)
            self._consumer.close()
