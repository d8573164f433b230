"""Append one record to a flow's history topic on its target (drills, verify runs): compacted, created if missing."""

from __future__ import annotations

from mirrorspark.client.context import FlowContext
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.delivery import Outgoing, deliver


def append_history_record(
    ctx: FlowContext,
    admin: ClusterAdmin,
    topic: str,
    record: tuple[bytes, bytes],
    *,
    what: str,
    purpose: str,
    timeout_s: float,
) -> None:
    """Write ``record`` (key, value) to partition 0 of ``topic`` on the flow's target and wait for it.

    ``admin`` is the target's; the topic is created with 1 partition, ``checkpoints.topic.replication.factor`` and
    ``cleanup.policy=compact`` if missing. ``what`` names the record in errors, ``purpose`` the producer's client id.
    Raises ClusterError (or a subclass) if the topic cannot be created or the record is not acknowledged.
    """
    cfg = ctx.flow_config
    admin.ensure_topic(
        topic,
        partitions=1,
        replication_factor=cfg.checkpoints_topic_replication_factor,
        config={"cleanup.policy": "compact"},
    )
    producer = ctx.producer("target", purpose, overrides={"enable.idempotence": True, "linger.ms": 0})
    try:
        deliver(producer, [Outgoing(topic, *record, partition=0)], what=what, alias=cfg.target, timeout_s=timeout_s)
    finally:
        producer.flush(0)


__all__ = ["append_history_record"]
