"""A copy task's failures as mirrorspark errors, with Kafka's error code and the partition attached."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from mirrorspark.errors import (
    ClusterError,
    DataPathError,
    MirrorsparkError,
    RecordTooLargeError,
    TransactionCoordinatorError,
)
from mirrorspark.kafka.protocols import MessageLike

E = TypeVar("E", bound=MirrorsparkError)


def at(error: E, partition: str | None) -> E:
    """Return ``error`` with the source partition it concerns (``"<topic>-<partition>"``) attached."""
    error.partition = partition
    return error


def _kafka(err: object) -> tuple[str | None, bool]:
    if isinstance(err, KafkaError):
        return err.name(), bool(err.retriable())
    return None, False


def delivery_error(
    err: object, source_topic: str, partition: int, target_topic: str, upstream: int
) -> MirrorsparkError:
    """Build the error of a failed delivery of record ``upstream`` (-1: unknown): a record too large, a missing WRITE.

    Returns :class:`~mirrorspark.errors.RecordTooLargeError` for ``MSG_SIZE_TOO_LARGE``, else a
    :class:`~mirrorspark.errors.DataPathError`.
    """
    code, retriable = _kafka(err)
    where = f"{source_topic}-{partition}"
    if isinstance(err, KafkaError) and err.code() == KafkaError.MSG_SIZE_TOO_LARGE:
        return at(
            RecordTooLargeError(
                f"record {where}@{upstream} is larger than remote topic '{target_topic}' accepts ({err.str()}): "
                "raise the remote topic's max.message.bytes (or the target broker's message.max.bytes); nothing "
                f"after offset {upstream} was committed",
                kafka_code=code,
            ),
            where,
        )
    return at(
        DataPathError(
            f"copying {where}@{upstream} to {target_topic} failed: {_reason(err, target_topic)}",
            kafka_code=code,
            retriable=retriable,
        ),
        where,
    )


def _reason(err: object, target_topic: str) -> str:
    """Kafka's error text and name, with the fix for a missing WRITE on the remote topic."""
    if not isinstance(err, KafkaError):
        return str(err)
    hint = ""
    if err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        hint = f": grant the replication principal WRITE on topic '{target_topic}' on the target cluster"
    return f"{err.str()} ({err.name()}){hint}"


def produce_error(
    e: Exception, source_topic: str, partition: int, target_topic: str, offset: int, size: int
) -> MirrorsparkError:
    """Build the error of a ``produce`` call that raised for record ``offset`` (``size`` bytes of key and value)."""
    err = e.args[0] if isinstance(e, KafkaException) and e.args else None
    code, retriable = _kafka(err)
    where = f"{source_topic}-{partition}"
    if isinstance(err, KafkaError) and err.code() == KafkaError.MSG_SIZE_TOO_LARGE:
        return at(
            RecordTooLargeError(
                f"record {where}@{offset} ({size} bytes) is larger than the producer's message.max.bytes: raise "
                "'<target>.producer.max.request.size' (and the target topic's max.message.bytes)",
                kafka_code=code,
            ),
            where,
        )
    reason = _reason(err if err is not None else e, target_topic)
    return at(
        DataPathError(
            f"producing {where}@{offset} to {target_topic} failed: {reason}",
            kafka_code=code,
            retriable=retriable,
        ),
        where,
    )


def consumer_error(flow: str, consumer_conf: Mapping[str, Any], m: MessageLike, err: KafkaError) -> DataPathError:
    """Build the error of a failed read: a partition's, or the consumer's own (``m.topic()`` is ``None``)."""
    code, retriable = _kafka(err)
    if m.topic() is not None:
        where = f"{m.topic()}-{m.partition()}"
        return at(
            DataPathError(f"flow {flow}: reading {where} failed: {err.str()}", kafka_code=code, retriable=retriable),
            where,
        )
    hint = ""
    if err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
        # librdkafka looks up the coordinator of its group.id even for an assign-only consumer
        hint = (
            f": grant the replication principal DESCRIBE on group '{consumer_conf.get('group.id')}' on the "
            "source cluster (the data path never joins nor commits to it, but its consumer looks up the "
            "group's coordinator)"
        )
    return DataPathError(
        f"flow {flow}: the source consumer failed: {err.str()}{hint}", kafka_code=code, retriable=retriable
    )


def stall_error(flow: str, what: str) -> DataPathError:
    """Build the error of a target that did not acknowledge in time: ``what`` did not happen."""
    return DataPathError(f"flow {flow}: {what}; check that the target cluster is up", retriable=True)


def init_transactions_error(
    flow: str, source: str, target: str, tid: str, timeout_s: float, e: KafkaException
) -> ClusterError:
    """Translate a failed ``init_transactions`` of transactional id ``tid`` on the flow's target (KIP-618).

    Returns a ClusterError naming the ACL to grant for ``TRANSACTIONAL_ID_AUTHORIZATION_FAILED``, a
    :class:`~mirrorspark.errors.TransactionCoordinatorError` when the coordinator did not answer within
    ``timeout_s`` (seconds), else the error as it is.
    """
    err = e.args[0]
    code = err.name() if isinstance(err, KafkaError) else None
    if isinstance(err, KafkaError) and err.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return ClusterError(
            f"flow {flow}: TRANSACTIONAL_ID_AUTHORIZATION_FAILED: the replication principal may not "
            f"use transactional id '{tid}' (the copy tasks' ids are {tid.rsplit('-', 1)[0]}-<task>, "
            f"<group.id>-<connector>-<task> as Connect's): grant it WRITE on TransactionalId "
            f"'{tid.rsplit('-', 1)[0]}-' (prefixed) on cluster '{target}' (docs/security.md, ACLs; {err.str()})",
            kafka_code=code,
        )
    if isinstance(err, KafkaError) and err.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
        return TransactionCoordinatorError(
            f"flow {flow}: no transaction coordinator: cluster '{target}' did not initialise "
            f"transactional id '{tid}' within {timeout_s:.0f} s ({err.str()}): exactly-once needs "
            "a target whose brokers support transactions (transaction.state.log.replication.factor and "
            "transaction.state.log.min.isr no larger than its brokers); fix the cluster or set "
            f"{target}.exactly.once.source.support=disabled",
            kafka_code=code,
            retriable=True,
        )
    reason = err.str() if isinstance(err, KafkaError) else str(e)
    return ClusterError(
        f"flow {flow}: initialising transactional id '{tid}' on cluster '{target}' failed: {reason}",
        kafka_code=code,
    )


__all__ = ["at", "consumer_error", "delivery_error", "init_transactions_error", "produce_error", "stall_error"]
