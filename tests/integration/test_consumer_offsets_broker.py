"""``__consumer_offsets`` as a real broker writes it, decoded by :mod:`mirrorspark.mm2.consumer_offsets`.

The session's ``primary`` cluster: a subscribed group's and an assigned group's commits (with metadata), the subscribed
group's metadata while it runs and after it leaves, and a transactional producer's offsets, visible to a
``read_committed`` reader only once its transaction commits (never when it aborts). Every record of the topic must
decode; the key and value versions the broker writes are pinned (Kafka 4.3: OffsetCommitKey 1 with OffsetCommitValue
4, flexible, carrying one 16-byte tagged field; GroupMetadataKey 2 with GroupMetadataValue 3; null values for deleted
groups). confluent-kafka sends a commit's metadata with its C string's terminating NUL, which the broker keeps.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from helpers import ActiveMember, admin, assert_eventually, client_config, create_topic, produce, unique_name

from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.consumer_offsets import (
    CONSUMER_OFFSETS_TOPIC,
    GroupMetadata,
    OffsetCommit,
    decode_consumer_offsets_record,
)

pytestmark = pytest.mark.integration


@dataclass
class Log:
    """What a read of ``__consumer_offsets`` from the beginning found, in log order per partition."""

    records: list[OffsetCommit | GroupMetadata] = field(default_factory=list)
    versions: list[tuple[int, int | None]] = field(default_factory=list)  # each record's key and value versions

    def versions_of(self, prefix: str) -> set[tuple[str, int, int | None]]:
        """(kind, key version, value version) of the records of groups named ``<prefix>...``; value None: tombstone."""
        return {
            (type(r).__name__, *v)
            for r, v in zip(self.records, self.versions, strict=True)
            if r.group.startswith(prefix)
        }

    def commits(self, group: str) -> list[OffsetCommit]:
        return [r for r in self.records if isinstance(r, OffsetCommit) and r.group == group]

    def group_metadata(self, group: str) -> list[GroupMetadata]:
        return [r for r in self.records if isinstance(r, GroupMetadata) and r.group == group]


def read_consumer_offsets(bootstrap: str, *, read_committed: bool = True, timeout_s: float = 60.0) -> Log:
    """Read every partition of ``__consumer_offsets`` to its end (the last stable offset when read_committed)."""
    meta = admin(bootstrap).list_topics(topic=CONSUMER_OFFSETS_TOPIC, timeout=10).topics[CONSUMER_OFFSETS_TOPIC]
    consumer = Consumer(
        client_config(
            bootstrap,
            **{
                "group.id": unique_name("cofmt-reader"),
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed" if read_committed else "read_uncommitted",
                "client.id": "mirrorspark-tests|cofmt-reader",
            },
        )
    )
    log = Log()
    pending = set(meta.partitions)
    consumer.assign([TopicPartition(CONSUMER_OFFSETS_TOPIC, p, 0) for p in pending])  # 0: the log may start later
    deadline = time.monotonic() + timeout_s
    try:
        while pending:
            assert time.monotonic() < deadline, f"partitions {sorted(pending)} did not reach their end"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                pending.discard(msg.partition())
                continue
            key, value = msg.key(), msg.value()
            decoded = decode_consumer_offsets_record(key, value)
            if decoded is not None:
                value_version = None if value is None else struct.unpack(">h", value[:2])[0]
                log.versions.append((struct.unpack(">h", key[:2])[0], value_version))
                log.records.append(decoded)
    finally:
        consumer.close()
    return log


@pytest.fixture(scope="module")
def bootstrap(local_clusters: LocalClusters) -> str:
    return local_clusters.bootstrap("primary")


@pytest.fixture
def topic(bootstrap: str) -> str:
    name = unique_name("cofmt-topic")
    create_topic(bootstrap, name, partitions=2)
    produce(bootstrap, name, [{"value": f"v{i}", "partition": i % 2} for i in range(20)])
    return name


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_subscribed_and_assigned_commits(bootstrap: str, topic: str) -> None:
    subscribed, assigned = unique_name("cofmt-subscribed"), unique_name("cofmt-assigned")
    member = ActiveMember(bootstrap, subscribed, topic)
    try:
        assert member.assigned.wait(60), "the subscribed consumer got no assignment"
        before = _now_ms()
        member.consumer.commit(offsets=[TopicPartition(topic, 0, 5, metadata="meta-sub")], asynchronous=False)
        solo = Consumer(client_config(bootstrap, **{"group.id": assigned, "enable.auto.commit": False}))
        try:
            solo.assign([TopicPartition(topic, 1, 0)])
            solo.commit(offsets=[TopicPartition(topic, 1, 3, metadata="meta-é")], asynchronous=False)
            solo.commit(offsets=[TopicPartition(topic, 1, 7)], asynchronous=False)
        finally:
            solo.close()
        after = _now_ms()

        running = read_consumer_offsets(bootstrap)
        [sub_commit] = running.commits(subscribed)
        assert (sub_commit.topic, sub_commit.partition, sub_commit.offset) == (topic, 0, 5)
        # confluent-kafka 2.16 sends the metadata's C string with its terminating NUL, and the broker stores it so
        # (its OffsetFetch answer loses the NUL again when the binding reads it back as a C string)
        assert sub_commit.metadata == "meta-sub\x00"
        assert before - 1000 <= sub_commit.commit_timestamp_ms <= after + 1000
        assert [(c.partition, c.offset, c.metadata) for c in running.commits(assigned)] == [
            (1, 3, "meta-é\x00"),
            (1, 7, ""),
        ]
        assert all(before - 1000 <= c.commit_timestamp_ms <= after + 1000 for c in running.commits(assigned))
        last = running.group_metadata(subscribed)[-1]
        assert (last.protocol_type, len(last.members), last.leader) == ("consumer", 1, last.members[0])
        assert last.generation >= 1 and last.protocol is not None
    finally:
        member.close()

    def left() -> bool:
        last = read_consumer_offsets(bootstrap).group_metadata(subscribed)[-1]
        assert (last.protocol_type, last.members, last.leader) == ("consumer", (), None)
        return True

    assert_eventually(left, timeout_s=60, interval_s=1, message=f"{subscribed} still has members after close()")
    client = admin(bootstrap)  # held: the future completes only while its client lives
    client.delete_consumer_groups([assigned], request_timeout=30)[assigned].result(timeout=30)
    log = read_consumer_offsets(bootstrap)
    assert log.commits(assigned)[-1] == OffsetCommit(assigned, topic, 1, None, "", -1, -1)  # the tombstones
    assert log.group_metadata(assigned)[-1] == GroupMetadata(assigned, None, -1, ())
    # what Kafka 4.3 writes: OffsetCommitKey 1 + OffsetCommitValue 4, GroupMetadataKey 2 + GroupMetadataValue 3
    assert log.versions_of(assigned) == {("OffsetCommit", 1, 4), ("OffsetCommit", 1, None), ("GroupMetadata", 2, None)}
    assert log.versions_of(subscribed) == {("OffsetCommit", 1, 4), ("GroupMetadata", 2, 3)}


def test_transactional_offsets_appear_once_committed(bootstrap: str, topic: str) -> None:
    group = unique_name("cofmt-txn")
    before = _now_ms()
    holder = Consumer(client_config(bootstrap, **{"group.id": group, "enable.auto.commit": False}))
    producer = Producer(client_config(bootstrap, **{"transactional.id": unique_name("cofmt-txn-id")}))
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(topic, b"in-txn", partition=0)
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 4, metadata="txn-meta")], holder.consumer_group_metadata(), 30
        )
        assert read_consumer_offsets(bootstrap).commits(group) == [], "an open transaction's offsets are visible"
        [pending] = read_consumer_offsets(bootstrap, read_committed=False).commits(group)
        assert (pending.offset, pending.metadata) == (4, "txn-meta\x00")
        producer.commit_transaction(30)

        # the coordinator writes the commit markers after it answers EndTxn: visible within moments
        [committed] = assert_eventually(
            lambda: read_consumer_offsets(bootstrap).commits(group) or None, message="committed offsets never visible"
        )
        assert (committed.topic, committed.partition, committed.offset, committed.metadata) == (
            topic,
            0,
            4,
            "txn-meta\x00",
        )
        assert before <= committed.commit_timestamp_ms <= _now_ms() + 1000
        assert read_consumer_offsets(bootstrap).versions_of(group) == {("OffsetCommit", 1, 4)}

        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 9)], holder.consumer_group_metadata(), 30)
        producer.abort_transaction(30)
        assert [c.offset for c in read_consumer_offsets(bootstrap).commits(group)] == [4]
    finally:
        holder.close()
        producer.flush(10)
