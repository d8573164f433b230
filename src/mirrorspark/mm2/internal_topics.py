"""Names of the internal topics MM2 and mirrorspark keep: every naming rule, in one place.

MM2's (its ``ReplicationPolicy``, KIP-949): ``mm2-offset-syncs<isep><alias><isep>internal``,
``<source><isep>checkpoints<isep>internal`` and ``heartbeats``; ``isep`` is the policy's separator when
``replication.policy.internal.topic.separator.enabled`` (default), else ``"."``. Connect's ``mm2-offsets``,
``mm2-configs`` and ``mm2-status`` are always ``.``-separated (``MirrorMakerConfig.workerConfig``). mirrorspark's
own are named like the offset-syncs topic so the policy never replicates them (:func:`mirrorspark_topic`). A flow's
names are built once in :class:`~mirrorspark.config.internal_topics.InternalTopics`.
"""

from __future__ import annotations

from typing import Final, Protocol

INTERNAL_SEPARATOR: Final = "."
"""Separator of internal topic names when the policy's separator is not used for them (KIP-949)."""

HEARTBEATS_TOPIC: Final = "heartbeats"
"""Name of the topic the heartbeat connector writes to on each target cluster."""

MM2_PREFIX: Final = "mm2"
"""Prefix of MM2's internal topics (``mm2*<isep>internal``, KAFKA-17200)."""

OFFSET_SYNCS_PREFIX: Final = "mm2-offset-syncs"
"""Prefix of the offset-syncs topic."""

CONNECT_OFFSETS_PREFIX: Final = "mm2-offsets"
"""Prefix of Kafka Connect's offsets topic of a flow (``offset.storage.topic``'s default)."""

CONNECT_CONFIGS_PREFIX: Final = "mm2-configs"
"""Prefix of Kafka Connect's config topic of a flow (``config.storage.topic``'s default)."""

CONNECT_STATUS_PREFIX: Final = "mm2-status"
"""Prefix of Kafka Connect's status topic of a flow (``status.storage.topic``'s default)."""

CONTROL_PREFIX: Final = "mm2-control"
"""Prefix of mirrorspark's control topic (live allow/deny lists of flows from one source)."""

# One noun per meaning: "progress" is what the copy tasks report to the driver (progress reports, on the
# progress channel, TASK_PROGRESS_PREFIX); a flow's lifetime copy totals are "totals", on the totals topic,
# whose on-wire name keeps the older word; where a partition's copy resumes is its "position".
TOTALS_PREFIX: Final = "mm2-progress"
"""Prefix of mirrorspark's totals topic (lifetime copy totals and states of flows from one source)."""

TASK_PROGRESS_PREFIX: Final = "mm2-task-progress"
"""Prefix of the progress channel from copy tasks to the driver (:mod:`mirrorspark.core.progress_records`)."""

_INTERNAL: Final = "internal"
_CHECKPOINTS: Final = "checkpoints"


class NamingPolicy(Protocol):
    """What naming a flow's internal topics needs of a ``ReplicationPolicy`` (MM2's three names and its test)."""

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """MM2's ``offsetSyncsTopic``."""
        ...

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """MM2's ``checkpointsTopic``."""
        ...

    def heartbeats_topic(self) -> str:
        """MM2's ``heartbeatsTopic``."""
        ...

    def is_internal_topic(self, topic: str) -> bool:
        """MM2's ``isInternalTopic``."""
        ...


def internal_suffix(isep: str = INTERNAL_SEPARATOR) -> str:
    """``<isep>internal``, the end of every MM2 internal topic name."""
    return f"{isep}{_INTERNAL}"


def checkpoints_suffix(isep: str = INTERNAL_SEPARATOR) -> str:
    """``<isep>checkpoints<isep>internal``, the end of a checkpoints topic name."""
    return f"{isep}{_CHECKPOINTS}{internal_suffix(isep)}"


def offset_syncs_topic(cluster_alias: str, isep: str = INTERNAL_SEPARATOR) -> str:
    """Name of the offset-syncs topic (MM2 ``ReplicationPolicy.offsetSyncsTopic``)."""
    return f"{OFFSET_SYNCS_PREFIX}{isep}{cluster_alias}{internal_suffix(isep)}"


def checkpoints_topic(cluster_alias: str, isep: str = INTERNAL_SEPARATOR) -> str:
    """Name of the checkpoints topic on a target (MM2 ``ReplicationPolicy.checkpointsTopic``)."""
    return f"{cluster_alias}{checkpoints_suffix(isep)}"


def is_checkpoints_topic(topic: str, isep: str = INTERNAL_SEPARATOR) -> bool:
    """Whether ``topic`` ends with ``<isep>checkpoints<isep>internal`` (a bare ``checkpoints.internal`` does not)."""
    return topic.endswith(checkpoints_suffix(isep))


def is_mm2_internal_topic(topic: str, isep: str = INTERNAL_SEPARATOR) -> bool:
    """Whether ``topic`` is one of MM2's internal topics (Kafka 4.x rule, KAFKA-17200)."""
    return (topic.startswith(MM2_PREFIX) and topic.endswith(internal_suffix(isep))) or is_checkpoints_topic(topic, isep)


def connect_offsets_topic(source_alias: str) -> str:
    """Default Kafka Connect offsets topic of flows from ``source_alias`` (``offset.storage.topic``)."""
    return f"{CONNECT_OFFSETS_PREFIX}{INTERNAL_SEPARATOR}{source_alias}{internal_suffix()}"


def connect_configs_topic(source_alias: str) -> str:
    """Default Kafka Connect config topic of flows from ``source_alias`` (``config.storage.topic``)."""
    return f"{CONNECT_CONFIGS_PREFIX}{INTERNAL_SEPARATOR}{source_alias}{internal_suffix()}"


def connect_status_topic(source_alias: str) -> str:
    """Kafka Connect's status topic of MM2's flows from ``source_alias`` (``status.storage.topic``)."""
    return f"{CONNECT_STATUS_PREFIX}{INTERNAL_SEPARATOR}{source_alias}{internal_suffix()}"


LEASE_GROUP_PREFIX: Final = "mirrorspark-lease-"
"""Prefix of a flow's lease group, followed by the flow name (:func:`lease_group`)."""


def lease_group(flow_name: str) -> str:
    """Name of the consumer group on the flow's target whose partition owner holds the flow's lease."""
    return f"{LEASE_GROUP_PREFIX}{flow_name}"


def connect_worker_group(source_alias: str) -> str:
    """Group id ``<source>-mm2`` of MM2's Connect workers for flows from ``source_alias`` (dedicated mode)."""
    return f"{source_alias}-mm2"


def mirrorspark_topic(prefix: str, policy: NamingPolicy | None, source_alias: str) -> str:
    """Name of one of mirrorspark's own internal topics of flows from ``source_alias``, like the offset-syncs topic.

    ``<prefix>.<source_alias>.internal`` when ``policy`` is ``None``, a custom policy, or would not see it internal.
    """
    if policy is not None:
        syncs = policy.offset_syncs_topic(source_alias)
        if syncs.startswith(OFFSET_SYNCS_PREFIX):
            name = prefix + syncs[len(OFFSET_SYNCS_PREFIX) :]
            if policy.is_internal_topic(name):
                return name
    return f"{prefix}{INTERNAL_SEPARATOR}{source_alias}{internal_suffix()}"


__all__ = [
    "CONNECT_CONFIGS_PREFIX",
    "CONNECT_OFFSETS_PREFIX",
    "CONNECT_STATUS_PREFIX",
    "CONTROL_PREFIX",
    "HEARTBEATS_TOPIC",
    "INTERNAL_SEPARATOR",
    "LEASE_GROUP_PREFIX",
    "MM2_PREFIX",
    "OFFSET_SYNCS_PREFIX",
    "TASK_PROGRESS_PREFIX",
    "NamingPolicy",
    "checkpoints_suffix",
    "checkpoints_topic",
    "connect_configs_topic",
    "connect_offsets_topic",
    "connect_status_topic",
    "connect_worker_group",
    "internal_suffix",
    "is_checkpoints_topic",
    "is_mm2_internal_topic",
    "lease_group",
    "mirrorspark_topic",
    "offset_syncs_topic",
]
