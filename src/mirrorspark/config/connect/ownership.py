"""Which connector reads which key: the one flow-level mm2.properties map is merged from up to three connectors.

MM2's dedicated driver gives its three connectors the same config (``MirrorMakerConfig.connectorBaseConfig``);
each reads its own keys (``MirrorSourceConfig``, ``MirrorCheckpointConfig``, ``MirrorHeartbeatConfig``).
A Connect deployment may give them different configs, so a flow's key is taken from the connector that
reads it: checkpoint keys from the checkpoint connector, heartbeat keys from the heartbeat connector, the
source connector's own keys (data copy, topic sync, transforms) from the source connector; a key every
connector reads (``admin.timeout.ms`` ...) from the source connector, else the checkpoint connector, else the
heartbeat connector. Client settings are each connector's own (:mod:`~mirrorspark.config.connect.to_properties`).
"""

from __future__ import annotations

from typing import Final

from mirrorspark.config.connect.model import ConnectorKind

CHECKPOINT_KEYS: Final = frozenset(
    {
        "groups",
        "groups.exclude",
        "groups.blacklist",
        "group.filter.class",
        "refresh.groups.enabled",
        "refresh.groups.interval.seconds",
        "emit.checkpoints.enabled",
        "emit.checkpoints.interval.seconds",
        "emit.checkpoints.on.commit",
        "sync.group.offsets.enabled",
        "sync.group.offsets.interval.seconds",
        "checkpoints.topic.replication.factor",
    }
)
"""Read by ``MirrorCheckpointConnector`` only (``MirrorCheckpointConfig``)."""

HEARTBEAT_KEYS: Final = frozenset(
    {"emit.heartbeats.enabled", "emit.heartbeats.interval.seconds", "heartbeats.topic.replication.factor"}
)
"""Read by ``MirrorHeartbeatConnector`` only (``MirrorHeartbeatConfig``)."""

SOURCE_KEYS: Final = frozenset(
    {
        "tasks.max",
        "exactly.once.support",
        "transaction.boundary",
        "transaction.boundary.interval.ms",
        "config.properties.exclude",
        "config.properties.blacklist",
        "config.property.filter.class",
        "use.defaults.from",
        "refresh.topics.enabled",
        "refresh.topics.interval.seconds",
        "sync.topic.configs.enabled",
        "sync.topic.configs.interval.seconds",
        "sync.topic.acls.enabled",
        "sync.topic.acls.interval.seconds",
        "use.incremental.alter.configs",
        "replication.factor",
        "offset-syncs.topic.replication.factor",
        "offset.lag.max",
        "provenance.header.enable",
        "verify.sampling.enable",
        "verify.sampling.interval.ms",
        "verify.sampling.records",
        "replication.link.rtt.ms",
        "replication.link.rate",
        "replication.catch.up.readers",
        "replication.catch.up.backlog.records",
        "replication.throttled.rate",
        "emit.offset-syncs.enabled",
        "heartbeats.replication.enabled",
        "add.source.alias.to.metrics",
        "transforms",
        "predicates",
        "sync.schemas.enabled",
        "sync.schemas.unknown.ids",
    }
)
"""Read by ``MirrorSourceConnector`` (or its data path) only; ``tasks.max`` is the copy tasks' count."""

SOURCE_PREFIXES: Final = (
    "transforms.",
    "predicates.",
    "consumer.override.",
    "producer.override.",
    "admin.override.",
    "source.cluster.schema.registry.",  # the clusters' Schema Registries: the source connector copies the schemas
    "target.cluster.schema.registry.",
)
TOPIC_KEYS: Final = frozenset({"topics", "topics.exclude", "topics.blacklist", "topic.filter.class"})
"""Read by the source and checkpoint connectors, not the heartbeat connector."""

MERGE_ORDER: Final[tuple[ConnectorKind, ...]] = ("source", "checkpoint", "heartbeat")


def readers(key: str) -> tuple[ConnectorKind, ...]:
    """Return the connector kinds that read ``key``, the one whose value a flow takes first."""
    if key in CHECKPOINT_KEYS:
        return ("checkpoint",)
    if key in HEARTBEAT_KEYS:
        return ("heartbeat",)
    if key in SOURCE_KEYS or key.startswith(SOURCE_PREFIXES):
        return ("source",)
    if key in TOPIC_KEYS or key == "offset-syncs.topic.location" or key == "consumer.poll.timeout.ms":
        return ("source", "checkpoint")
    return MERGE_ORDER


__all__ = [
    "CHECKPOINT_KEYS",
    "HEARTBEAT_KEYS",
    "MERGE_ORDER",
    "SOURCE_KEYS",
    "SOURCE_PREFIXES",
    "TOPIC_KEYS",
    "readers",
]
