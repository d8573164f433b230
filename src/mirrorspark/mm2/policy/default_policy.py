"""MM2's ``DefaultReplicationPolicy``: remote topics are ``<source alias><separator><topic>``."""

from __future__ import annotations

from collections.abc import Mapping

from mirrorspark.errors import ConfigError
from mirrorspark.mm2 import internal_topics as names
from mirrorspark.mm2.policy.replication_policy import (
    DEFAULT_SEPARATOR,
    INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG,
    SEPARATOR_CONFIG,
    BaseReplicationPolicy,
)


def _parse_java_boolean(value: str) -> bool:
    """Java ``Boolean.parseBoolean``: ``true`` in any letter case, anything else false."""
    return value.lower() == "true"


class DefaultReplicationPolicy(BaseReplicationPolicy):
    """Remote topics are ``<source alias><separator><topic>`` (MM2 ``DefaultReplicationPolicy``).

    Parameters
    ----------
    separator:
        ``replication.policy.separator``; default ``"."``; ConfigError if empty.
    internal_topic_separator_enabled:
        ``replication.policy.internal.topic.separator.enabled`` (KIP-949); default ``True``: the offset-syncs and
        checkpoints topics use the separator too, else ``"."``. The heartbeats topic is always ``heartbeats``.

    Notes
    -----
    Any topic containing the separator is remote (``my.topic`` has source ``my``). Names split like Java's
    ``Pattern.split``: ``.b`` has source ``""``; ``us-west.`` is not remote. Configure once, before sharing the policy
    between threads.
    """

    def __init__(self, *, separator: str = DEFAULT_SEPARATOR, internal_topic_separator_enabled: bool = True) -> None:
        self._separator = DEFAULT_SEPARATOR
        self._internal_separator_enabled = True
        self._set_separator(separator, internal_topic_separator_enabled)

    def _set_separator(self, separator: str, internal_topic_separator_enabled: bool) -> None:
        if not separator:
            raise ConfigError(
                f"{SEPARATOR_CONFIG} must not be empty; remove the key to use the default '.', "
                "or set a non-empty separator such as '_'"
            )
        self._separator = separator
        self._internal_separator_enabled = internal_topic_separator_enabled

    def configure(self, props: Mapping[str, str]) -> None:
        """Apply MM2 properties (``Configurable.configure``): the separator, if present, and then its KIP-949 flag.

        The flag is parsed like Java's ``Boolean.parseBoolean``; raises ConfigError if the separator is empty.
        """
        if SEPARATOR_CONFIG in props:
            enabled = self._internal_separator_enabled
            if INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG in props:
                enabled = _parse_java_boolean(props[INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG])
            self._set_separator(props[SEPARATOR_CONFIG], enabled)

    @property
    def separator(self) -> str:
        """The separator between source alias and topic name (``replication.policy.separator``)."""
        return self._separator

    @property
    def internal_topic_separator_enabled(self) -> bool:
        """Whether the separator is also used in internal topic names (KIP-949)."""
        return self._internal_separator_enabled

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(separator={self._separator!r}, "
            f"internal_topic_separator_enabled={self._internal_separator_enabled!r})"
        )

    def _internal_separator(self) -> str:
        return self._separator if self._internal_separator_enabled else names.INTERNAL_SEPARATOR

    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """``source_alias + separator + topic``, e.g. ``"us-west.topic1"``."""
        return f"{source_alias}{self._separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """First piece of the name split at the separator, if two: ``us-west.topic1`` → ``us-west``, ``.b`` → ``""``."""
        pieces = topic.split(self._separator)
        while pieces and not pieces[-1]:
            pieces.pop()
        if len(pieces) < 2:
            return None
        return pieces[0]

    def upstream_topic(self, topic: str) -> str | None:
        """Return the name minus :meth:`topic_source` and the separator after it: ``a.b.c`` → ``b.c``."""
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self._separator) :]

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """``mm2-offset-syncs<isep><cluster_alias><isep>internal``.

        ``isep`` is the separator if ``replication.policy.internal.topic.separator.enabled``, else ``"."``.
        """
        return names.offset_syncs_topic(cluster_alias, self._internal_separator())

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """``<cluster_alias><isep>checkpoints<isep>internal`` (``isep`` as in :meth:`offset_syncs_topic`)."""
        return names.checkpoints_topic(cluster_alias, self._internal_separator())

    def is_checkpoints_topic(self, topic: str) -> bool:
        """Whether ``topic`` ends with ``<isep>checkpoints<isep>internal``."""
        return names.is_checkpoints_topic(topic, self._internal_separator())

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """Whether ``topic`` starts with ``mm2`` and ends with ``<isep>internal``, or is a checkpoints topic.

        MM2's Kafka 4.x rule (KAFKA-17200): with separator ``__`` (flag true) the Connect topics
        ``mm2-offsets.A.internal`` etc. are therefore *not* MM2-internal.
        """
        return names.is_mm2_internal_topic(topic, self._internal_separator()) or self.is_checkpoints_topic(topic)


__all__ = ["DefaultReplicationPolicy"]
