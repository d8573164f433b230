"""Names of the internal topics MM2 and mirrorspark keep: every naming rule, in one place.

MM2's own internal topics (named by its ``ReplicationPolicy``, KIP-949 separator rule):

* ``mm2-offset-syncs<isep><alias><isep>internal`` (:func:`offset_syncs_topic`);
* ``<source><isep>checkpoints<isep>internal`` (:func:`checkpoints_topic`);
* ``heartbeats`` (:data:`HEARTBEATS_TOPIC`, never affected by the separator).

``isep`` is the policy's separator when ``replication.policy.internal.topic.separator.enabled``
is true (the default), else ``"."``. Kafka Connect's topics of a flow, ``mm2-offsets.<source>.internal``
(:func:`connect_offsets_topic`), ``mm2-configs`` and ``mm2-status``, are always ``.``-separated:
MM2's driver builds them with a literal ``.`` (``MirrorMakerConfig.workerConfig``).

mirrorspark's own internal topics, ``mm2-control`` (live allow/deny lists) and ``mm2-progress``
(copy totals), are named like the offset-syncs topic of their source alias, with the same
separator, so that the flow's policy sees them as MM2 internal topics and never replicates
them (:func:`mirrorspark_topic`).

Pure functions; no I/O. The policies in :mod:`mirrorspark.mm2.policy` build their names here; a flow's
names are built once, from these rules, in :class:`~mirrorspark.config.internal_topics.InternalTopics`.
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
    """``<isep>internal``, the end of every MM2 internal topic name.

    Parameters
    ----------
    isep:
        Separator of internal topic names.

    Returns
    -------
    str
        E.g. ``".internal"``.
    """
    return f"{isep}{_INTERNAL}"


def checkpoints_suffix(isep: str = INTERNAL_SEPARATOR) -> str:
    """``<isep>checkpoints<isep>internal``, the end of a checkpoints topic name.

    Parameters
    ----------
    isep:
        Separator of internal topic names.

    Returns
    -------
    str
        E.g. ``".checkpoints.internal"``.
    """
    return f"{isep}{_CHECKPOINTS}{internal_suffix(isep)}"


def offset_syncs_topic(cluster_alias: str, isep: str = INTERNAL_SEPARATOR) -> str:
    """Name of the offset-syncs topic (MM2 ``ReplicationPolicy.offsetSyncsTopic``).

    Parameters
    ----------
    cluster_alias:
        The alias of the cluster the topic is **not** hosted on.
    isep:
        Separator of internal topic names.

    Returns
    -------
    str
        ``mm2-offset-syncs<isep><cluster_alias><isep>internal``.
    """
    return f"{OFFSET_SYNCS_PREFIX}{isep}{cluster_alias}{internal_suffix(isep)}"


def checkpoints_topic(cluster_alias: str, isep: str = INTERNAL_SEPARATOR) -> str:
    """Name of the checkpoints topic on a target (MM2 ``ReplicationPolicy.checkpointsTopic``).

    Parameters
    ----------
    cluster_alias:
        Alias of the source cluster whose consumer groups are checkpointed.
    isep:
        Separator of internal topic names.

    Returns
    -------
    str
        ``<cluster_alias><isep>checkpoints<isep>internal``.
    """
    return f"{cluster_alias}{checkpoints_suffix(isep)}"


def is_checkpoints_topic(topic: str, isep: str = INTERNAL_SEPARATOR) -> bool:
    """Whether ``topic`` ends with ``<isep>checkpoints<isep>internal`` (a bare ``checkpoints.internal`` does not).

    Parameters
    ----------
    topic:
        A topic name.
    isep:
        Separator of internal topic names.

    Returns
    -------
    bool
    """
    return topic.endswith(checkpoints_suffix(isep))


def is_mm2_internal_topic(topic: str, isep: str = INTERNAL_SEPARATOR) -> bool:
    """Whether ``topic`` is one of MM2's internal topics (Kafka 4.x rule, KAFKA-17200).

    Parameters
    ----------
    topic:
        A topic name.
    isep:
        Separator of internal topic names.

    Returns
    -------
    bool
        Whether ``topic`` starts with ``mm2`` and ends with ``<isep>internal``, or is a
        checkpoints topic.
    """
    return (topic.startswith(MM2_PREFIX) and topic.endswith(internal_suffix(isep))) or is_checkpoints_topic(topic, isep)


def connect_offsets_topic(source_alias: str) -> str:
    """Default Kafka Connect offsets topic of flows from ``source_alias`` (``offset.storage.topic``).

    Parameters
    ----------
    source_alias:
        The flow's source cluster alias.

    Returns
    -------
    str
        ``mm2-offsets.<source_alias>.internal``, always ``.``-separated, as MM2's
        ``MirrorMakerConfig.workerConfig`` writes it.
    """
    return f"{CONNECT_OFFSETS_PREFIX}{INTERNAL_SEPARATOR}{source_alias}{internal_suffix()}"


def connect_configs_topic(source_alias: str) -> str:
    """Default Kafka Connect config topic of flows from ``source_alias`` (``config.storage.topic``).

    Returns
    -------
    str
        ``mm2-configs.<source_alias>.internal``, always ``.``-separated (``MirrorMakerConfig.workerConfig``).
    """
    return f"{CONNECT_CONFIGS_PREFIX}{INTERNAL_SEPARATOR}{source_alias}{internal_suffix()}"


def connect_status_topic(source_alias: str) -> str:
    """Kafka Connect's status topic of MM2's flows from ``source_alias`` (``status.storage.topic``).

    Returns
    -------
    str
        ``mm2-status.<source_alias>.internal``, on the target, as MM2's ``MirrorMakerConfig.workerConfig`` names it.
    """
    return f"{CONNECT_STATUS_PREFIX}{INTERNAL_SEPARATOR}{source_alias}{internal_suffix()}"


LEASE_GROUP_PREFIX: Final = "mirrorspark-lease-"
"""Prefix of a flow's lease group, followed by the flow name (:func:`lease_group`)."""


def lease_group(flow_name: str) -> str:
    """Name of the consumer group whose member owning the lease partition holds the lease of a flow.

    The continuous engine's active-instance lease (``mirrorspark.replication.worker.lease``) lives in
    this group on the flow's target; the offsets tools read its membership to tell whether the
    flow runs.

    Parameters
    ----------
    flow_name:
        The flow's name, ``"<source>-><target>"``.

    Returns
    -------
    str
        ``mirrorspark-lease-<source>-><target>``, e.g. ``mirrorspark-lease-A->B``.
    """
    return f"{LEASE_GROUP_PREFIX}{flow_name}"


def connect_worker_group(source_alias: str) -> str:
    """Group id of MM2's Kafka Connect workers for flows from ``source_alias`` (dedicated mode).

    MM2's ``MirrorMakerConfig.workerConfig`` sets ``group.id = <source>-mm2`` for the herder of
    each flow ``<source>-><target>``, on the target cluster; while MM2 runs that flow the group has
    members (Connect's ``connect`` protocol).

    Parameters
    ----------
    source_alias:
        The flow's source cluster alias.

    Returns
    -------
    str
        ``<source_alias>-mm2``, e.g. ``primary-mm2``.
    """
    return f"{source_alias}-mm2"


def mirrorspark_topic(prefix: str, policy: NamingPolicy | None, source_alias: str) -> str:
    """Name of one of mirrorspark's own internal topics of flows from ``source_alias``.

    Built like the policy's offset-syncs topic (same internal separator), so the policy sees
    it as an MM2 internal topic; ``<prefix>.<source_alias>.internal`` when ``policy`` is
    ``None`` or its offset-syncs topic does not start with ``mm2-offset-syncs`` (a custom
    policy), or the name so built would not be internal to it.

    Parameters
    ----------
    prefix:
        :data:`CONTROL_PREFIX`, :data:`TOTALS_PREFIX`, :data:`TASK_PROGRESS_PREFIX`, or the gaps,
        lease or drills prefix of :mod:`mirrorspark.core`.
    policy:
        The flow's replication policy, or ``None`` for the default naming.
    source_alias:
        The flow's source cluster alias.

    Returns
    -------
    str
        E.g. ``mm2-control.primary.internal``; ``mm2-control__primary__internal`` with
        separator ``__``.
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
