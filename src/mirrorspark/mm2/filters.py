r"""Topic, group and config-property filters, and the source connector's topic rule.

MM2's ``DefaultTopicFilter``, ``DefaultGroupFilter``, ``DefaultConfigPropertyFilter`` and
``MirrorSourceConnector.shouldReplicateTopic``. As in MM2, a list property's items are joined with ``|`` into one
regex that must match the **whole** name; an **empty list matches nothing**; an exclude list replaces the default.

Java regex syntax compiled by :mod:`re` with :data:`re.ASCII` (``\w``, ``\d``, ``\s`` and case folding ASCII-only,
as in Java); not supported: ``\Q...\E`` and inline flags mid-pattern (use ``(?i:abc)``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from mirrorspark.errors import BadRegexError, ConfigError
from mirrorspark.mm2.policy import ReplicationPolicy
from mirrorspark.mm2.topology import is_cycle

DEFAULT_TOPICS: tuple[str, ...] = (".*",)
"""Default of ``topics``: every topic."""

DEFAULT_TOPICS_EXCLUDE: tuple[str, ...] = (r".*[\-\.]internal", r".*\.replica", r"__.*")
"""Default of ``topics.exclude``."""

DEFAULT_GROUPS: tuple[str, ...] = (".*",)
"""Default of ``groups``: every consumer group."""

DEFAULT_GROUPS_EXCLUDE: tuple[str, ...] = (r"console-consumer-.*", r"connect-.*", r"__.*")
"""Default of ``groups.exclude``."""

DEFAULT_CONFIG_PROPERTIES_EXCLUDE: tuple[str, ...] = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
)
"""Default of ``config.properties.exclude``: topic configs never copied to remote topics."""


@runtime_checkable
class TopicFilter(Protocol):
    """Decides which source topics are replicated (MM2 ``TopicFilter``)."""

    def should_replicate_topic(self, topic: str) -> bool:
        """Whether ``topic`` (a name on the source cluster) may be replicated."""
        ...


@runtime_checkable
class GroupFilter(Protocol):
    """Decides which consumer groups are checkpointed (MM2 ``GroupFilter``)."""

    def should_replicate_group(self, group: str) -> bool:
        """Whether the offsets of consumer group ``group`` are checkpointed."""
        ...


@runtime_checkable
class ConfigPropertyFilter(Protocol):
    """Decides which topic configs are copied to remote topics (MM2 ``ConfigPropertyFilter``)."""

    def should_replicate_config_property(self, name: str) -> bool:
        """Whether topic config ``name`` is copied to remote topics."""
        ...

    def should_replicate_source_default(self, name: str) -> bool:
        """Whether a source-side *default* value of ``name`` is copied (else the target's applies)."""
        ...


def compile_list(patterns: Sequence[str], *, key: str) -> re.Pattern[str] | None:
    """Compile a list property of regexes the way MM2 does: one pattern for ``fullmatch``, or ``None`` if empty.

    Raises BadRegexError naming ``key`` and the bad item; TypeError if given a single string.
    """
    if isinstance(patterns, str):
        raise TypeError(f"{key}: expected a sequence of regex strings, got the string {patterns!r}")
    items = list(patterns)
    if not items:
        return None
    joined = "|".join(items)
    try:
        return re.compile(joined, re.ASCII)
    except re.error as e:
        culprit = joined
        for item in items:
            try:
                re.compile(item, re.ASCII)
            except re.error:
                culprit = item
                break
        hint = ""
        if "global flags" in str(e):
            hint = (
                "; inline flags such as (?i) must start the first item, or use a scoped group "
                "such as (?i:abc) in a later item"
            )
        raise BadRegexError(
            f"{key}: the regex {culprit!r} does not compile ({e}); fix or remove it "
            f"(the items are comma-separated Java-style regexes, each matched against the whole name){hint}"
        ) from e


def _matches(pattern: re.Pattern[str] | None, name: str) -> bool:
    """Whether ``pattern`` matches the whole of ``name``; ``None`` matches nothing."""
    return pattern is not None and pattern.fullmatch(name) is not None


class DefaultTopicFilter:
    r"""Topics matching ``topics`` and not ``topics.exclude`` (MM2 ``DefaultTopicFilter``); immutable, thread-safe."""

    def __init__(
        self,
        *,
        topics: Sequence[str] = DEFAULT_TOPICS,
        topics_exclude: Sequence[str] = DEFAULT_TOPICS_EXCLUDE,
        key_prefix: str = "",
    ) -> None:
        self._topics = tuple(topics)
        self._topics_exclude = tuple(topics_exclude)
        self._include = compile_list(topics, key=f"{key_prefix}topics")
        self._exclude = compile_list(topics_exclude, key=f"{key_prefix}topics.exclude")

    def __repr__(self) -> str:
        return f"DefaultTopicFilter(topics={self._topics!r}, topics_exclude={self._topics_exclude!r})"

    def should_replicate_topic(self, topic: str) -> bool:
        """Whether a source topic passes the filter."""
        return _matches(self._include, topic) and not _matches(self._exclude, topic)


class DefaultGroupFilter:
    """Groups matching ``groups`` and not ``groups.exclude`` (MM2 ``DefaultGroupFilter``); immutable, thread-safe."""

    def __init__(
        self,
        *,
        groups: Sequence[str] = DEFAULT_GROUPS,
        groups_exclude: Sequence[str] = DEFAULT_GROUPS_EXCLUDE,
        key_prefix: str = "",
    ) -> None:
        self._groups = tuple(groups)
        self._groups_exclude = tuple(groups_exclude)
        self._include = compile_list(groups, key=f"{key_prefix}groups")
        self._exclude = compile_list(groups_exclude, key=f"{key_prefix}groups.exclude")

    def __repr__(self) -> str:
        return f"DefaultGroupFilter(groups={self._groups!r}, groups_exclude={self._groups_exclude!r})"

    def should_replicate_group(self, group: str) -> bool:
        """Whether a consumer group passes the filter."""
        return _matches(self._include, group) and not _matches(self._exclude, group)


class DefaultConfigPropertyFilter:
    """Topic configs not matching ``config.properties.exclude`` (MM2 ``DefaultConfigPropertyFilter``).

    Immutable and thread-safe; ``use_defaults_from`` (KIP-894) is ``"target"`` or ``"source"``, else ConfigError.
    """

    def __init__(
        self,
        *,
        exclude: Sequence[str] = DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
        use_defaults_from: str = "target",
        key_prefix: str = "",
    ) -> None:
        if use_defaults_from not in ("source", "target"):
            raise ConfigError(
                f"{key_prefix}use.defaults.from must be 'source' or 'target', got {use_defaults_from!r}; "
                "use 'target' (the default) to let the target cluster's defaults apply"
            )
        self._exclude_patterns = tuple(exclude)
        self._exclude = compile_list(exclude, key=f"{key_prefix}config.properties.exclude")
        self._use_defaults_from = use_defaults_from

    def __repr__(self) -> str:
        return (
            f"DefaultConfigPropertyFilter(exclude={self._exclude_patterns!r}, "
            f"use_defaults_from={self._use_defaults_from!r})"
        )

    def should_replicate_config_property(self, name: str) -> bool:
        """Whether a topic config is copied to remote topics."""
        return not _matches(self._exclude, name)

    def should_replicate_source_default(self, name: str) -> bool:
        """Whether a config that is at its default on the source is copied with that value."""
        return self._use_defaults_from == "source"


def should_replicate_topic(
    topic: str,
    *,
    topic_filter: TopicFilter,
    policy: ReplicationPolicy,
    target_alias: str,
    heartbeats_replication_enabled: bool = True,
) -> bool:
    """Whether a flow replicates a source topic (MM2 ``MirrorSourceConnector.shouldReplicateTopic``).

    Heartbeat topics pass even when the filter rejects them, unless ``heartbeats_replication_enabled`` is false.
    """
    wanted = topic_filter.should_replicate_topic(topic) or (
        heartbeats_replication_enabled and policy.is_heartbeats_topic(topic)
    )
    return wanted and not policy.is_internal_topic(topic) and not is_cycle(policy, topic, target_alias)


__all__ = [
    "DEFAULT_CONFIG_PROPERTIES_EXCLUDE",
    "DEFAULT_GROUPS",
    "DEFAULT_GROUPS_EXCLUDE",
    "DEFAULT_TOPICS",
    "DEFAULT_TOPICS_EXCLUDE",
    "ConfigPropertyFilter",
    "DefaultConfigPropertyFilter",
    "DefaultGroupFilter",
    "DefaultTopicFilter",
    "GroupFilter",
    "TopicFilter",
    "compile_list",
    "should_replicate_topic",
]
