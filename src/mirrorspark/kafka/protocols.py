"""What mirrorspark calls on confluent-kafka's clients, as Protocols: the injected clients' types.

The copy task (:class:`~mirrorspark.replication.task.runner.CopyTaskRunner`, its committers and
writers) and the admin wrapper (:class:`~mirrorspark.kafka.admin_base.AdminBase`) take their clients
typed by these, so the same code runs on confluent-kafka's ``Consumer``, ``Producer`` and
``AdminClient`` and on the in-memory fakes of ``tests/fakes.py``; mypy checks both against them
(``tests/unit/test_fakes_conform.py``). Each Protocol has the methods mirrorspark calls, with the
arguments it passes, typed as confluent-kafka's stubs (``cimpl.pyi``) type them; first arguments are
positional-only. A message's ``topic()``, ``partition()`` and ``offset()`` are ``None`` only on an
error event (``error()`` set).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Protocol, TypeAlias, runtime_checkable

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    ElectionType,
    IsolationLevel,
    KafkaError,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    ClusterMetadata,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

Headers: TypeAlias = dict[str, str | bytes | None] | list[tuple[str, str | bytes | None]]
"""A record's headers as confluent-kafka takes and gives them (a consumed record's: the list form)."""


@runtime_checkable
class MessageLike(Protocol):
    """A consumed record or a consumer's error event (confluent-kafka ``Message``)."""

    def topic(self) -> str | None:
        """Return the record's topic."""

    def partition(self) -> int | None:
        """Return the record's partition."""

    def offset(self) -> int | None:
        """Return the record's offset."""

    def key(self) -> bytes | None:
        """Return the record's key."""

    def value(self) -> bytes | None:
        """Return the record's value."""

    def headers(self) -> Headers | None:
        """Return the record's headers, in order."""

    def timestamp(self) -> tuple[int, int]:
        """Return ``(timestamp type, epoch ms)``; type 0: no timestamp."""

    def error(self) -> KafkaError | None:
        """Return the error of an error event, ``None`` for a record."""


@runtime_checkable
class DeliveredLike(Protocol):
    """What a delivery callback reads of the written record."""

    def offset(self) -> int | None:
        """Return the record's offset in the written partition."""

    def timestamp(self) -> tuple[int, int]:
        """Return ``(timestamp type, epoch ms)``."""


DeliveryCallback: TypeAlias = Callable[[KafkaError | None, DeliveredLike], None]
"""A producer's delivery callback: ``(error or None, the record)``."""


@runtime_checkable
class ConsumerLike(Protocol):
    """An assign-only consumer read from given positions (confluent-kafka ``Consumer``)."""

    def assign(self, partitions: list[TopicPartition], /) -> None:
        """Read these partitions from their offsets."""

    def consume(self, num_messages: int = 1, timeout: float = -1) -> Sequence[MessageLike]:
        """Return up to ``num_messages`` records and error events, waiting up to ``timeout`` s."""

    def position(self, partitions: list[TopicPartition], /) -> list[TopicPartition]:
        """Return the next offset to read of each partition."""


@runtime_checkable
class SourceConsumerLike(ConsumerLike, Protocol):
    """A copy task's source consumer: polled, paused, sought and closed too."""

    def poll(self, timeout: float = -1) -> MessageLike | None:
        """Return the next record or error event, waiting up to ``timeout`` s (``None``: none came)."""

    def pause(self, partitions: list[TopicPartition], /) -> None:
        """Stop fetching these partitions."""

    def seek(self, partition: TopicPartition, /) -> None:
        """Read the partition from its offset next."""

    def get_watermark_offsets(self, partition: TopicPartition, /, timeout: float = -1) -> tuple[int, int]:
        """Return the partition's ``(low, high)`` watermarks, asking the leader."""

    def close(self) -> None:
        """Leave and release the consumer."""


@runtime_checkable
class RangeConsumerLike(ConsumerLike, Protocol):
    """A verify task's consumer: reads one partition's offset range, knows its watermarks, is closed at the end."""

    def get_watermark_offsets(self, partition: TopicPartition, /, timeout: float = -1) -> tuple[int, int]:
        """Return the partition's ``(low, high)`` watermarks, asking the leader."""

    def close(self) -> None:
        """Release the consumer."""


@runtime_checkable
class GroupConsumerLike(Protocol):
    """A consumer of a group, never subscribed, that reads the group's committed offsets (``OffsetFetch``)."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """``Metadata``."""

    def committed(self, partitions: list[TopicPartition], /, timeout: float = -1) -> list[TopicPartition]:
        """Return the group's committed offset of each partition (``OffsetFetch``)."""


@runtime_checkable
class ProducerLike(Protocol):
    """A producer (confluent-kafka ``Producer``); ``poll`` and ``flush`` serve the delivery callbacks."""

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = -1,
        callback: DeliveryCallback | None = None,
        on_delivery: DeliveryCallback | None = None,
        timestamp: int = 0,
        headers: Headers | None = None,
    ) -> None:
        """Queue a record (``BufferError``: the queue is full)."""

    def poll(self, timeout: float = -1) -> int:
        """Serve delivery callbacks, waiting up to ``timeout`` s; return how many."""

    def flush(self, timeout: float = -1) -> int:
        """Wait up to ``timeout`` s for every queued record's delivery; return how many are left."""


@runtime_checkable
class TransactionalProducerLike(ProducerLike, Protocol):
    """A copy task's data producer: transactions (KIP-98) and a metadata refresh of a just-grown topic."""

    def init_transactions(self, timeout: float = -1) -> None:
        """Fence older producers of the ``transactional.id`` and end their transactions."""

    def begin_transaction(self) -> None:
        """Open a transaction."""

    def commit_transaction(self, timeout: float = -1) -> None:
        """Flush and commit the open transaction."""

    def abort_transaction(self, timeout: float = -1) -> None:
        """Purge and abort the open transaction."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """Refresh the metadata of ``topic`` (``Metadata``)."""


@runtime_checkable
class AdminLike(Protocol):
    """The calls of :class:`~mirrorspark.kafka.admin.ClusterAdmin` (confluent-kafka ``AdminClient``).

    Futures per topic, group or resource, as confluent-kafka returns them; ``request_timeout`` in s.
    """

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """``Metadata``."""

    def describe_topics(self, topics: TopicCollection, /, *, request_timeout: float = -1) -> dict[str, Future[Any]]:
        """``DescribeTopics`` (KIP-516 ids)."""

    def create_topics(
        self, new_topics: list[NewTopic], /, *, request_timeout: float = -1, validate_only: bool = False
    ) -> dict[str, Future[Any]]:
        """``CreateTopics`` (``validate_only``: the brokers answer as if, creating nothing)."""

    def create_partitions(
        self, new_partitions: list[NewPartitions], /, *, request_timeout: float = -1
    ) -> dict[str, Future[Any]]:
        """``CreatePartitions``."""

    def describe_configs(
        self, resources: list[ConfigResource], /, *, request_timeout: float = -1
    ) -> dict[ConfigResource, Future[Any]]:
        """``DescribeConfigs``."""

    def incremental_alter_configs(
        self, resources: list[ConfigResource], /, *, request_timeout: float = -1
    ) -> dict[ConfigResource, Future[Any]]:
        """``IncrementalAlterConfigs``."""

    def list_offsets(
        self,
        topic_partition_offsets: dict[TopicPartition, OffsetSpec],
        /,
        *,
        isolation_level: IsolationLevel = ...,
        request_timeout: float = -1,
    ) -> dict[TopicPartition, Future[Any]]:
        """``ListOffsets``."""

    def elect_leaders(self, election_type: ElectionType, partitions: list[TopicPartition] | None, /) -> Future[Any]:
        """``ElectLeaders``."""

    def list_consumer_groups(self, *, request_timeout: float = -1) -> Future[Any]:
        """``ListGroups``."""

    def describe_consumer_groups(
        self, group_ids: list[str], /, *, request_timeout: float = -1
    ) -> dict[str, Future[Any]]:
        """``DescribeGroups``."""

    def list_consumer_group_offsets(
        self, requests: list[ConsumerGroupTopicPartitions], /, *, request_timeout: float = -1
    ) -> dict[str, Future[Any]]:
        """``OffsetFetch``."""

    def alter_consumer_group_offsets(
        self, requests: list[ConsumerGroupTopicPartitions], /, *, request_timeout: float = -1
    ) -> dict[str, Future[Any]]:
        """``OffsetCommit``."""

    def delete_consumer_groups(self, group_ids: list[str], /, *, request_timeout: float = -1) -> dict[str, Future[Any]]:
        """``DeleteGroups``."""

    def describe_cluster(
        self, *, include_authorized_operations: bool = False, request_timeout: float = -1
    ) -> Future[Any]:
        """``DescribeCluster``."""

    def describe_acls(self, acl_binding_filter: AclBindingFilter, /, *, request_timeout: float = -1) -> Future[Any]:
        """``DescribeAcls``."""

    def create_acls(self, acls: list[AclBinding], /, *, request_timeout: float = -1) -> dict[AclBinding, Future[Any]]:
        """``CreateAcls``."""


__all__ = [
    "AdminLike",
    "ConsumerLike",
    "DeliveredLike",
    "DeliveryCallback",
    "GroupConsumerLike",
    "Headers",
    "MessageLike",
    "ProducerLike",
    "RangeConsumerLike",
    "SourceConsumerLike",
    "TransactionalProducerLike",
]
