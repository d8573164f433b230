"""Read a topic from its beginning to its current end: one partition or all (compacted internal topics)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from mirrorspark.config.model import ClientSettings
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.factory import ClientFactory, KafkaClients
from mirrorspark.kafka.protocols import MessageLike

PARTITIONS_REFRESH_S = 30.0
"""Seconds a :class:`TopicReader` trusts the partition count it listed (a topic missing at a read: listed again)."""

ALL_PARTITIONS = None
"""``partition=ALL_PARTITIONS``: :class:`TopicReader` reads every partition of the topic."""


def _partition_count(admin: ClusterAdmin, topic: str) -> int | None:
    """Count the topic's partitions by describing it alone; ``None`` when missing or hidden from the principal.

    As a ``Metadata`` listing hides a topic the principal may not describe, so does this: that reader reads nothing.
    """
    described = admin.describe_topics([topic], hidden_as_missing=True).get(topic)
    return len(described.replicas) if described is not None else None


class TopicReader:
    """Reads a topic to its current end offsets, then on each call what was written since (I/O).

    Kafka Connect's ``KafkaBasedLog.readToEnd``: end offsets captured first, then consumed up to them. Not thread-safe.
    """

    def __init__(
        self,
        settings: ClientSettings,
        admin_settings: ClientSettings,
        alias: str,
        topic: str,
        *,
        client_id: str,
        partition: int | None = 0,
        clients: ClientFactory | None = None,
        admin_client_id: str | None = None,
        consumer_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        self.alias = alias
        self.topic = topic
        self.partition = partition
        self._clients: ClientFactory = clients if clients is not None else KafkaClients()
        self._admin = ClusterAdmin(
            self._clients.admin(
                admin_settings, client_id=admin_client_id if admin_client_id is not None else client_id + "-admin"
            ),
            alias,
            bootstrap_servers=admin_settings.bootstrap_servers,
        )
        self._consumer: Consumer | None = None
        self._assigned: frozenset[int] = frozenset()
        self._settings = settings
        self._client_id = client_id
        self._consumer_overrides = consumer_overrides
        isolation = dict(consumer_overrides or {}).get("isolation.level") or settings.get("isolation.level") or ""
        # librdkafka's default is read_committed: such a reader cannot pass an open transaction (the last
        # stable offset), so its end is that, not the high watermark (an exactly-once task killed mid-
        # transaction leaves one open in mm2-offsets until its restart aborts it)
        self._read_committed = str(isolation).strip() in ("", "read_committed")
        self._count: int | None = None  # the topic's partitions when last listed (None: missing or not listed)
        self._counted_at = 0.0
        self.positions: dict[int, int] = {}
        """Next offset to read, per partition (0 before the first read)."""

    @property
    def position(self) -> int:
        """Next offset to read of the reader's one partition (0 before the first read)."""
        return self.positions.get(self.partition if self.partition is not None else 0, 0)

    @position.setter
    def position(self, offset: int) -> None:
        self.positions[self.partition if self.partition is not None else 0] = offset

    def _ends(self, timeout_s: float) -> dict[int, int]:
        """End offsets of the partitions to read (``{}`` for a missing topic); the read's budget bounds each call.

        The topic's partition count is listed again at most every :data:`PARTITIONS_REFRESH_S` (a reader
        called every few milliseconds sends one ``ListOffsets``, not a ``Metadata`` request too), by describing
        the one topic: a reader of a topic not created yet, asking every second, no longer lists every topic of
        the cluster (the control tail's second at 1,000 topics, #44).
        """
        admin = self._admin.with_timeout(timeout_s)
        now = time.monotonic()
        if self._count is None or now - self._counted_at > PARTITIONS_REFRESH_S:
            self._count = _partition_count(admin, self.topic)
            self._counted_at = now
        count = self._count
        if count is None:
            self._counted_at = 0.0  # a topic not created yet: listed again at the next read
            return {}
        wanted = range(count) if self.partition is None else [self.partition]
        ends = admin.end_offsets([(self.topic, p) for p in wanted], read_committed=self._read_committed)
        return {p: e for (_, p), e in ends.items()}

    def read(
        self,
        on_record: Callable[[bytes | None, bytes | None], None],
        *,
        timeout_s: float = 30.0,
        cancelled: Callable[[], bool] | None = None,
    ) -> int:
        """Read every record up to the topic's current end offsets; return how many were read (0: missing topic).

        ``timeout_s`` also bounds each admin call; ``cancelled`` is checked between polls (positions kept). Raises
        ClusterError if the end is not reached within ``timeout_s`` or the consumer reports an error.
        """
        return self.read_messages(lambda m: on_record(m.key(), m.value()), timeout_s=timeout_s, cancelled=cancelled)

    def read_messages(
        self,
        on_message: Callable[[MessageLike], None],
        *,
        timeout_s: float = 30.0,
        cancelled: Callable[[], bool] | None = None,
    ) -> int:
        """Read as :meth:`read` does, handing over each confluent-kafka ``Message`` (never an error message)."""
        todo = {p: e for p, e in self._ends(timeout_s).items() if e > self.positions.get(p, 0)}
        if not todo:
            return 0
        if self._consumer is None:
            self._consumer = self._clients.consumer(
                self._settings, client_id=self._client_id, overrides=self._consumer_overrides
            )
        if not set(todo) <= self._assigned:
            self._assigned = self._assigned | frozenset(todo)
            # 0 = from the log start (the earliest offset still stored, as auto.offset.reset=earliest)
            self._consumer.assign([TopicPartition(self.topic, p, self.positions.get(p, 0)) for p in self._assigned])
        n = 0
        deadline = time.monotonic() + timeout_s
        while todo:
            if cancelled is not None and cancelled():
                return n
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"reading '{self.topic}' on cluster '{self.alias}' did not reach "
                    + (f"offset {todo[self.partition]}" if self.partition is not None else "its end offsets")
                    + f" in {timeout_s:.0f} s"
                )
            for m in self._batch(self._consumer):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ClusterError(f"reading '{self.topic}' on cluster '{self.alias}' failed: {err.str()}")
                on_message(m)
                n += 1
            for tp in self._consumer.position([TopicPartition(self.topic, p) for p in self._assigned]):
                if tp.offset >= 0:
                    self.positions[tp.partition] = max(self.positions.get(tp.partition, 0), tp.offset)
            todo = {p: e for p, e in todo.items() if self.positions.get(p, 0) < e}
        return n

    @staticmethod
    def _batch(consumer: Consumer) -> list[Any]:
        """Return the messages fetched already, else the first to arrive within 0.2 s (a batch waits its timeout)."""
        got: list[Any] = consumer.consume(num_messages=5000, timeout=0)
        if got:
            return got
        first = consumer.poll(0.2)
        return [first] if first is not None else []

    def close(self) -> None:
        """Close the consumer (a later :meth:`read` creates a new one and continues from :attr:`positions`)."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
            self._assigned = frozenset()


def read_topic(
    settings: ClientSettings,
    admin_settings: ClientSettings,
    alias: str,
    topic: str,
    on_record: Callable[[bytes | None, bytes | None], None],
    *,
    client_id: str,
    timeout_s: float = 30.0,
    clients: ClientFactory | None = None,
) -> int:
    """Read partition 0 of ``topic`` once, from its beginning to its current end, then close the reader.

    Raises ClusterError if the end is not reached within ``timeout_s``, or the consumer reports an error.
    """
    reader = TopicReader(settings, admin_settings, alias, topic, client_id=client_id, clients=clients)
    try:
        return reader.read(on_record, timeout_s=timeout_s)
    finally:
        reader.close()


__all__ = ["ALL_PARTITIONS", "TopicReader", "read_topic"]
