"""A copy task's write failures name the missing ACL and its fix, whichever call reported them (pure)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from mirrorspark.replication.task.failures import delivery_error, produce_error

pytestmark = pytest.mark.unit

FIX = "grant the replication principal WRITE on topic 'A.heartbeats' on the target cluster"


def test_a_refused_delivery_names_the_write_acl_to_grant() -> None:
    err = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    e = delivery_error(err, "heartbeats", 0, "A.heartbeats", 39)
    assert FIX in str(e) and e.kafka_code == "TOPIC_AUTHORIZATION_FAILED" and e.partition == "heartbeats-0"


def test_a_refused_produce_call_names_the_write_acl_to_grant_too() -> None:
    """librdkafka raises from ``produce`` once it knows the topic is refused: the same fix is named."""
    e = produce_error(
        KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)), "heartbeats", 0, "A.heartbeats", 39, 12
    )
    assert FIX in str(e) and "TOPIC_AUTHORIZATION_FAILED" in str(e) and e.kafka_code == "TOPIC_AUTHORIZATION_FAILED"
    assert not e.retriable


def test_other_produce_failures_keep_kafkas_text() -> None:
    e = produce_error(KafkaException(KafkaError(KafkaError._QUEUE_FULL)), "t", 1, "A.t", 5, 10)
    assert "producing t-1@5 to A.t failed" in str(e) and "WRITE" not in str(e)
    assert produce_error(BufferError("queue full"), "t", 1, "A.t", 5, 10).kafka_code is None
