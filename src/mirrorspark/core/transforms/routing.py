"""A flow's replication policy with its ``RegexRouter`` transforms applied to remote topic names."""

from __future__ import annotations

from mirrorspark.core.transforms.chain import TransformChain
from mirrorspark.mm2.policy import ReplicationPolicy


class RoutedReplicationPolicy:
    """A flow's replication policy with its ``RegexRouter`` transforms applied to remote topic names.

    MM2 renames the record's topic *after* the policy named it, so with MM2 the remote topic the
    policy names is created (empty) and the records land in the routed topic, which checkpoints
    never name. mirrorspark makes the routed name *the* remote topic of the flow instead: it is
    created, config-synced, written, checkpointed and reported under that name. Everything else
    (``topic_source``, internal topics, heartbeats topic) is the wrapped policy's, so a routed name
    that drops the source alias reads as a local topic on the target: the identity cycle check
    (:func:`~mirrorspark.mm2.topology.check_identity_cycles`) then treats the flow as name-keeping.
    """

    def __init__(self, inner: ReplicationPolicy, chain: TransformChain) -> None:
        self.inner = inner
        self.chain = chain

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Return the policy's remote topic name, renamed by the chain's routers."""
        return self.chain.route(self.inner.format_remote_topic(source_alias, topic))

    def topic_source(self, topic: str) -> str | None:
        """As the wrapped policy."""
        return self.inner.topic_source(topic)

    def upstream_topic(self, topic: str) -> str | None:
        """As the wrapped policy."""
        return self.inner.upstream_topic(topic)

    def original_topic(self, topic: str) -> str:
        """As the wrapped policy."""
        return self.inner.original_topic(topic)

    def heartbeats_topic(self) -> str:
        """As the wrapped policy."""
        return self.inner.heartbeats_topic()

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """As the wrapped policy."""
        return self.inner.offset_syncs_topic(cluster_alias)

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """As the wrapped policy."""
        return self.inner.checkpoints_topic(cluster_alias)

    def is_heartbeats_topic(self, topic: str) -> bool:
        """As the wrapped policy."""
        return self.inner.is_heartbeats_topic(topic)

    def is_checkpoints_topic(self, topic: str) -> bool:
        """As the wrapped policy."""
        return self.inner.is_checkpoints_topic(topic)

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """As the wrapped policy."""
        return self.inner.is_mm2_internal_topic(topic)

    def is_internal_topic(self, topic: str) -> bool:
        """As the wrapped policy."""
        return self.inner.is_internal_topic(topic)


__all__ = ["RoutedReplicationPolicy"]
