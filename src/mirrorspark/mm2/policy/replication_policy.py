"""MM2's ``ReplicationPolicy`` interface: the protocol every policy meets, its defaults (the ABC), the policy keys.

A policy names remote topics (``format_remote_topic``), tells where a topic came from (``topic_source``,
``upstream_topic``) and names MM2's internal topics. :class:`BaseReplicationPolicy` gives the Java interface's
default methods, so a policy implements three methods, as in MM2.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol, runtime_checkable

from mirrorspark.errors import ConfigError
from mirrorspark.mm2 import internal_topics as names
from mirrorspark.mm2.internal_topics import HEARTBEATS_TOPIC

DEFAULT_SEPARATOR = "."
"""Default value of ``replication.policy.separator``."""

SEPARATOR_CONFIG = "replication.policy.separator"
"""Property read by ``configure``: the separator between source alias and topic."""

INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG = "replication.policy.internal.topic.separator.enabled"
"""Property read by ``configure``: whether internal topic names use the separator (KIP-949)."""

SOURCE_CLUSTER_ALIAS_CONFIG = "source.cluster.alias"
"""Property read by the identity policy's ``configure``: the flow's source cluster alias."""

IDENTITY_PROBE_TOPIC = "probe-topic"
"""Topic name used to tell whether a policy keeps topic names (see :func:`is_identity_style`)."""

ALLOW_IDENTITY_CYCLES_KEY = "mirrorspark.identity.allow.cycles"
"""The opt-in key named by :func:`check_identity_cycles`' error (declared in ``config.CONFIG_KEYS``)."""

JAVA_PACKAGE = "org.apache.kafka.connect.mirror."
"""The Java package of MM2's policy classes (their ``replication.policy.class`` names start with it)."""

DEFAULT_POLICY_CLASS = f"{JAVA_PACKAGE}DefaultReplicationPolicy"
"""Default of ``replication.policy.class``: MM2's ``DefaultReplicationPolicy``."""


@runtime_checkable
class ReplicationPolicy(Protocol):
    """How remote topics and MM2's internal topics are named (MM2 ``ReplicationPolicy``).

    Every method is pure and thread-safe once the policy is configured. ``None`` plays the role of Java's ``null``
    ("not a remote topic").
    """

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Name on the target of ``topic`` replicated from cluster ``source_alias``."""
        ...

    def topic_source(self, topic: str) -> str | None:
        """Alias of the cluster ``topic`` was replicated from, or ``None`` if not remote."""
        ...

    def upstream_topic(self, topic: str) -> str | None:
        """Name of ``topic`` one hop upstream, or ``None`` if not remote."""
        ...

    def original_topic(self, topic: str) -> str:
        """Name of ``topic`` on the cluster where it was first written."""
        ...

    def heartbeats_topic(self) -> str:
        """Name of the heartbeats topic (``heartbeats``)."""
        ...

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """Name of the offset-syncs topic whose name carries ``cluster_alias``."""
        ...

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """Name of the checkpoints topic for checkpoints of source ``cluster_alias``."""
        ...

    def is_heartbeats_topic(self, topic: str) -> bool:
        """Whether ``topic`` is a (possibly remote) heartbeats topic."""
        ...

    def is_checkpoints_topic(self, topic: str) -> bool:
        """Whether ``topic`` is a checkpoints topic."""
        ...

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """Whether ``topic`` is one of MM2's own internal topics."""
        ...

    def is_internal_topic(self, topic: str) -> bool:
        """Whether ``topic`` is internal (never replicated)."""
        ...


class BaseReplicationPolicy(ABC):
    """Base class giving the interface defaults of MM2's ``ReplicationPolicy``.

    Subclasses implement :meth:`format_remote_topic`, :meth:`topic_source` and :meth:`upstream_topic`; everything
    else follows from them exactly as in MM2's Java interface (Kafka 4.x): ``.`` is the separator of internal topic
    names, the heartbeats topic is ``heartbeats``, and internal topics are MM2's own (``mm2*.internal`` and
    checkpoints topics), ``__*`` and ``.*``.

    A subclass may also define ``configure(props)``; :func:`load_policy` calls it with the policy's configuration,
    as MM2 does for a ``Configurable`` policy.
    """

    @abstractmethod
    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Name on the target of ``topic`` replicated from cluster ``source_alias`` (``"us-west.topic1"``)."""

    @abstractmethod
    def topic_source(self, topic: str) -> str | None:
        """Alias of the cluster ``topic`` was replicated from (``"us-west"``), or ``None`` if it is not remote."""

    @abstractmethod
    def upstream_topic(self, topic: str) -> str | None:
        """Name of ``topic`` one hop upstream (``"topic1"``; maybe still remote), or ``None`` if not remote."""

    def original_topic(self, topic: str) -> str:
        """Name of ``topic`` where it was first written (MM2 ``originalTopic``): :meth:`upstream_topic` to the end.

        Raises ConfigError if ``upstream_topic`` leads around a loop of names (a custom policy's bug; MM2 would
        overflow its stack).
        """
        seen = {topic}
        current = topic
        while True:
            upstream = self.upstream_topic(current)
            if upstream is None or upstream == current:
                return current
            if upstream in seen:
                raise ConfigError(
                    f"replication policy {type(self).__name__} maps topic {topic!r} around a loop of "
                    f"upstream topics (back to {upstream!r}); fix its upstream_topic so that repeated "
                    "calls end in None or in the name they were given"
                )
            seen.add(upstream)
            current = upstream

    def heartbeats_topic(self) -> str:
        """Name of the heartbeats topic: ``"heartbeats"``, whatever the separator."""
        return HEARTBEATS_TOPIC

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """``mm2-offset-syncs.<cluster_alias>.internal``; ``cluster_alias`` names the cluster it is not on."""
        return names.offset_syncs_topic(cluster_alias)

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """``<cluster_alias>.checkpoints.internal``: checkpoints of source ``cluster_alias``'s groups, on a target."""
        return names.checkpoints_topic(cluster_alias)

    def is_heartbeats_topic(self, topic: str) -> bool:
        """Whether ``topic`` is a heartbeats topic, local or replicated any number of hops."""
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_checkpoints_topic(self, topic: str) -> bool:
        """Whether ``topic`` ends with ``.checkpoints.internal`` (a bare ``checkpoints.internal`` does not count)."""
        return names.is_checkpoints_topic(topic)

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """Whether ``topic`` is ``mm2*.internal`` or a checkpoints topic (MM2's Kafka 4.x rule, KAFKA-17200)."""
        return names.is_mm2_internal_topic(topic) or self.is_checkpoints_topic(topic)

    def is_internal_topic(self, topic: str) -> bool:
        """Whether ``topic`` is never replicated: MM2-internal, or starting with ``__`` or ``.`` (Kafka 4.x rule).

        User topics such as ``foo.internal`` are not internal (KAFKA-17200); the default ``topics.exclude`` still
        keeps them from being replicated.
        """
        return self.is_mm2_internal_topic(topic) or topic.startswith("__") or topic.startswith(".")


__all__ = [
    "ALLOW_IDENTITY_CYCLES_KEY",
    "DEFAULT_POLICY_CLASS",
    "DEFAULT_SEPARATOR",
    "HEARTBEATS_TOPIC",
    "IDENTITY_PROBE_TOPIC",
    "INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG",
    "JAVA_PACKAGE",
    "SEPARATOR_CONFIG",
    "SOURCE_CLUSTER_ALIAS_CONFIG",
    "BaseReplicationPolicy",
    "ReplicationPolicy",
]
