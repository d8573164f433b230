"""Read a topic partition from its beginning to its current end (compacted internal topics)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, TopicPartition

from mirrorspark.errors import ClusterError
from mirrorspark.kafka.clients import admin_client, consumer, end_offsets, list_topics

if TYPE_CHECKING:
    pass


class TopicReader:
    """Tails partition 0 of a compacted internal topic from the beginning (I/O).

    Parameters
    ----------
    settings:
        Consumer ``ClientSettings`` of the cluster holding the topic.
    admin_settings:
        Admin ``ClientSettings`` of that cluster (for end offsets).
    alias, topic:
        Where to read.
    client_id:
        The consumer's ``client.id``.
    """

    def __init__(self, settings: Any, admin_settings: Any, alias: str, topic: str, *, client_id: str) -> None:
        self.alias = alias
        self.topic = topic
        self._admin = admin_client(admin_settings, client_id=client_id + "-admin")
        self._consumer: Any = None
        self._settings = settings
        self._client_id = client_id
        self.position = 0

    def read(self, on_record: Callable[[bytes | None, bytes | None], None], *, timeout_s: float = 30.0) -> int:
        """Read every record up to the topic's current end offset; return how many were read.

        A missing topic reads as empty. Raises :class:`ClusterError` if the end
        is not reached within ``timeout_s`` (which also bounds each admin call).
        """
        if self.topic not in list_topics(self._admin, self.alias, timeout_s=timeout_s):
            return 0
        end = end_offsets(self._admin, self.alias, [(self.topic, 0)], timeout_s=timeout_s).get((self.topic, 0), 0)
        if end <= self.position:
            return 0
        if self._consumer is None:
            self._consumer = consumer(self._settings, client_id=self._client_id)
            self._consumer.assign([TopicPartition(self.topic, 0, self.position)])
        n = 0
        deadline = time.monotonic() + timeout_s
        while self.position < end:
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"reading '{self.topic}' on cluster '{self.alias}' did not reach offset {end} in {timeout_s:.0f} s"
                )
            for m in self._consumer.consume(num_messages=5000, timeout=0.2):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ClusterError(f"reading '{self.topic}' on cluster '{self.alias}' failed: {err.str()}")
                on_record(m.key(), m.value())
                n += 1
            for tp in self._consumer.position([TopicPartition(self.topic, 0)]):
                if tp.offset >= 0:
                    self.position = max(self.position, tp.offset)
        return n

    def close(self) -> None:
        """Close the consumer."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


__all__ = ["TopicReader"]
