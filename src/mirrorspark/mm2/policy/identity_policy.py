"""MM2's ``IdentityReplicationPolicy``: remote topics keep their names (heartbeats excepted)."""

from __future__ import annotations

from collections.abc import Mapping

from mirrorspark.mm2.policy.default_policy import DefaultReplicationPolicy
from mirrorspark.mm2.policy.replication_policy import DEFAULT_SEPARATOR, SOURCE_CLUSTER_ALIAS_CONFIG


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Remote topics keep their names (MM2 ``IdentityReplicationPolicy``).

    Names ending with ``heartbeats`` (a plain suffix) follow :class:`DefaultReplicationPolicy`, so heartbeat cycles
    are still detected; every other topic is its own remote name, its source ``source_cluster_alias``, and cycles of
    ordinary topics cannot be detected.

    Parameters
    ----------
    source_cluster_alias:
        ``source.cluster.alias``, what :meth:`topic_source` reports; ``None`` (default): not remote.
    separator, internal_topic_separator_enabled:
        As :class:`DefaultReplicationPolicy` (ConfigError if ``separator`` is empty).
    """

    def __init__(
        self,
        *,
        source_cluster_alias: str | None = None,
        separator: str = DEFAULT_SEPARATOR,
        internal_topic_separator_enabled: bool = True,
    ) -> None:
        super().__init__(separator=separator, internal_topic_separator_enabled=internal_topic_separator_enabled)
        self._source_cluster_alias = source_cluster_alias

    def configure(self, props: Mapping[str, str]) -> None:
        """Apply MM2 properties: those of the default policy plus ``source.cluster.alias``; ConfigError as there."""
        super().configure(props)
        if SOURCE_CLUSTER_ALIAS_CONFIG in props:
            self._source_cluster_alias = props[SOURCE_CLUSTER_ALIAS_CONFIG]

    @property
    def source_cluster_alias(self) -> str | None:
        """The configured ``source.cluster.alias``, or ``None``."""
        return self._source_cluster_alias

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(source_cluster_alias={self._source_cluster_alias!r}, "
            f"separator={self.separator!r}, "
            f"internal_topic_separator_enabled={self.internal_topic_separator_enabled!r})"
        )

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """``topic`` unchanged; a name ending with ``heartbeats`` gets ``source_alias + separator`` in front."""
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        """``source.cluster.alias`` (``None`` if unset); for a name ending with ``heartbeats``, the default rule."""
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self._source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        """``topic`` itself (:meth:`original_topic` stops at once); a name ending with ``heartbeats``: the default."""
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic


__all__ = ["IdentityReplicationPolicy"]
