"""MM2's replication policies: how remote and internal topics are named (``ReplicationPolicy``)."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
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

_JAVA_PACKAGE = "org.apache.kafka.connect.mirror."

DEFAULT_POLICY_CLASS = f"{_JAVA_PACKAGE}DefaultReplicationPolicy"
"""Default of ``replication.policy.class``: MM2's ``DefaultReplicationPolicy``."""


@runtime_checkable
class ReplicationPolicy(Protocol):
    """How remote topics and MM2's internal topics are named (MM2 ``ReplicationPolicy``).

    Every method is pure and thread-safe once the policy is configured. ``None`` plays
    the role of Java's ``null`` ("not a remote topic").
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

    Subclasses implement :meth:`format_remote_topic`, :meth:`topic_source` and
    :meth:`upstream_topic`; everything else follows from them exactly as in MM2's
    Java interface (Kafka 4.x): ``.`` is the separator of internal topic names,
    the heartbeats topic is ``heartbeats``, and internal topics are MM2's own
    (``mm2*.internal`` and checkpoints topics), ``__*`` and ``.*``.

    A subclass may also define ``configure(props)``; :func:`load_policy` calls it with
    the policy's configuration, as MM2 does for a ``Configurable`` policy.
    """

    @abstractmethod
    def format_remote_topic(self, source_alias: str, topic: str) -> str:
        """Name on the target of a topic replicated from another cluster.

        Parameters
        ----------
        source_alias:
            Alias of the source cluster, e.g. ``"us-west"``.
        topic:
            Topic name on the source cluster, e.g. ``"topic1"``.

        Returns
        -------
        str
            The remote topic name, e.g. ``"us-west.topic1"``.
        """

    @abstractmethod
    def topic_source(self, topic: str) -> str | None:
        """Alias of the cluster a remote topic was replicated from.

        Parameters
        ----------
        topic:
            A topic name, e.g. ``"us-west.topic1"``.

        Returns
        -------
        str or None
            The source alias (``"us-west"``), or ``None`` if ``topic`` is not remote.
        """

    @abstractmethod
    def upstream_topic(self, topic: str) -> str | None:
        """Name of a remote topic one replication hop upstream.

        Parameters
        ----------
        topic:
            A topic name, e.g. ``"us-west.topic1"``.

        Returns
        -------
        str or None
            The upstream name (``"topic1"``; itself remote after several hops), or
            ``None`` if ``topic`` is not remote.
        """

    def original_topic(self, topic: str) -> str:
        """Name of a topic on the cluster where it was first written.

        Applies :meth:`upstream_topic` until it returns ``None`` or the name it was
        given (MM2 ``ReplicationPolicy.originalTopic``).

        Parameters
        ----------
        topic:
            A topic name, e.g. ``"a.b.c"``.

        Returns
        -------
        str
            The original name (``"c"``); ``topic`` itself if it is not remote.

        Raises
        ------
        ConfigError
            If the policy's ``upstream_topic`` leads around a loop of names (a bug in a
            custom policy; MM2 would overflow its stack).
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
        """Name of the heartbeats topic.

        Returns
        -------
        str
            ``"heartbeats"``; the separator never affects it.
        """
        return HEARTBEATS_TOPIC

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """Name of the offset-syncs topic.

        Parameters
        ----------
        cluster_alias:
            The alias of the cluster the topic is **not** hosted on (the target alias
            when the topic lives on the source, the default).

        Returns
        -------
        str
            ``mm2-offset-syncs.<cluster_alias>.internal``.
        """
        return names.offset_syncs_topic(cluster_alias)

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """Name of the checkpoints topic on a target cluster.

        Parameters
        ----------
        cluster_alias:
            Alias of the source cluster whose consumer groups are checkpointed.

        Returns
        -------
        str
            ``<cluster_alias>.checkpoints.internal``.
        """
        return names.checkpoints_topic(cluster_alias)

    def is_heartbeats_topic(self, topic: str) -> bool:
        """Whether a topic is a heartbeats topic, local or replicated any number of hops.

        Parameters
        ----------
        topic:
            A topic name, e.g. ``"source1.heartbeats"``.

        Returns
        -------
        bool
            ``original_topic(topic) == heartbeats_topic()``.
        """
        return self.original_topic(topic) == self.heartbeats_topic()

    def is_checkpoints_topic(self, topic: str) -> bool:
        """Whether a topic is a checkpoints topic.

        Parameters
        ----------
        topic:
            A topic name.

        Returns
        -------
        bool
            Whether ``topic`` ends with ``.checkpoints.internal`` (a bare
            ``checkpoints.internal`` does not count).
        """
        return names.is_checkpoints_topic(topic)

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """Whether a topic is one of MM2's internal topics (Kafka 4.x rule, KAFKA-17200).

        Parameters
        ----------
        topic:
            A topic name.

        Returns
        -------
        bool
            Whether ``topic`` starts with ``mm2`` and ends with ``.internal``, or is a
            checkpoints topic.
        """
        return names.is_mm2_internal_topic(topic) or self.is_checkpoints_topic(topic)

    def is_internal_topic(self, topic: str) -> bool:
        """Whether a topic is internal and therefore never replicated (Kafka 4.x rule).

        Parameters
        ----------
        topic:
            A topic name.

        Returns
        -------
        bool
            Whether ``topic`` is an MM2 internal topic or starts with ``__`` or ``.``.
            User topics such as ``foo.internal`` are not internal (KAFKA-17200); the
            default ``topics.exclude`` still keeps them from being replicated.
        """
        return self.is_mm2_internal_topic(topic) or topic.startswith("__") or topic.startswith(".")


def _parse_java_boolean(value: str) -> bool:
    """Java ``Boolean.parseBoolean``: ``true`` in any letter case, anything else false."""
    return value.lower() == "true"


class DefaultReplicationPolicy(BaseReplicationPolicy):
    """Remote topics are ``<source alias><separator><topic>`` (MM2 ``DefaultReplicationPolicy``).

    Parameters
    ----------
    separator:
        ``replication.policy.separator``; default ``"."``. Must not be empty.
    internal_topic_separator_enabled:
        ``replication.policy.internal.topic.separator.enabled`` (KIP-949); default ``True``.
        When true the separator is also used in the names of the offset-syncs and
        checkpoints topics; when false those use ``"."``. The heartbeats topic is always
        ``heartbeats``.

    Raises
    ------
    ConfigError
        If ``separator`` is empty.

    Notes
    -----
    Any topic containing the separator is taken for a remote topic: ``my.topic`` has
    source ``my``. The separator splits names like Java's ``Pattern.split``: a leading
    empty piece is kept (``.b`` has source ``""``) and trailing empty pieces are dropped
    (``us-west.`` is not remote).

    :meth:`configure` re-configures the policy in place; configure once, before sharing
    the policy between threads.
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
        """Apply MM2 properties, as MM2's ``Configurable.configure`` does.

        The separator is changed only if ``replication.policy.separator`` is present, and
        ``replication.policy.internal.topic.separator.enabled`` is consulted only in that
        case (parsed like Java's ``Boolean.parseBoolean``: ``true`` in any case, else false).

        Parameters
        ----------
        props:
            Property name to string value.

        Raises
        ------
        ConfigError
            If the separator is empty.
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
        """Name on the target of a replicated topic: ``source_alias + separator + topic``.

        Parameters
        ----------
        source_alias:
            Alias of the source cluster, e.g. ``"us-west"``.
        topic:
            Topic name on the source cluster, e.g. ``"topic1"``.

        Returns
        -------
        str
            E.g. ``"us-west.topic1"``.
        """
        return f"{source_alias}{self._separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """Source alias of a remote topic: the first piece of the split name.

        Parameters
        ----------
        topic:
            A topic name.

        Returns
        -------
        str or None
            The first piece when splitting at the separator (Java ``Pattern.split``
            semantics) yields at least two pieces, else ``None``. Examples (separator
            ``.``): ``us-west.topic1`` → ``us-west``; ``.b`` → ``""``; ``us-west.`` and
            ``heartbeats`` → ``None``.
        """
        pieces = topic.split(self._separator)
        while pieces and not pieces[-1]:
            pieces.pop()
        if len(pieces) < 2:
            return None
        return pieces[0]

    def upstream_topic(self, topic: str) -> str | None:
        """Remote topic name minus its source alias and the separator after it.

        Parameters
        ----------
        topic:
            A topic name.

        Returns
        -------
        str or None
            E.g. ``us-west.topic1`` → ``topic1``, ``a.b.c`` → ``b.c``; ``None`` if
            :meth:`topic_source` is ``None``.
        """
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self._separator) :]

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """Name of the offset-syncs topic.

        Parameters
        ----------
        cluster_alias:
            The alias of the cluster the topic is **not** hosted on.

        Returns
        -------
        str
            ``mm2-offset-syncs<isep><cluster_alias><isep>internal`` where ``isep`` is the
            separator if ``internal_topic_separator_enabled`` else ``"."``.
        """
        return names.offset_syncs_topic(cluster_alias, self._internal_separator())

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """Name of the checkpoints topic on a target cluster.

        Parameters
        ----------
        cluster_alias:
            Alias of the source cluster whose consumer groups are checkpointed.

        Returns
        -------
        str
            ``<cluster_alias><isep>checkpoints<isep>internal`` (``isep`` as in
            :meth:`offset_syncs_topic`).
        """
        return names.checkpoints_topic(cluster_alias, self._internal_separator())

    def is_checkpoints_topic(self, topic: str) -> bool:
        """Whether a topic ends with ``<isep>checkpoints<isep>internal``.

        Parameters
        ----------
        topic:
            A topic name.

        Returns
        -------
        bool
            Whether ``topic`` is a checkpoints topic under this policy's separators.
        """
        return names.is_checkpoints_topic(topic, self._internal_separator())

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """Whether a topic is one of MM2's internal topics (Kafka 4.x rule, KAFKA-17200).

        Parameters
        ----------
        topic:
            A topic name.

        Returns
        -------
        bool
            Whether ``topic`` starts with ``mm2`` and ends with ``<isep>internal``, or is a
            checkpoints topic. With separator ``__`` (flag true) the Connect topics
            ``mm2-offsets.A.internal`` etc. are therefore *not* MM2-internal, as in MM2.
        """
        return names.is_mm2_internal_topic(topic, self._internal_separator()) or self.is_checkpoints_topic(topic)


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Remote topics keep their names (MM2 ``IdentityReplicationPolicy``).

    Topics whose names end with ``heartbeats`` (a plain suffix, so ``myheartbeats`` too)
    are treated exactly as by :class:`DefaultReplicationPolicy`, so heartbeats still get
    renamed (``heartbeats`` from ``backup`` → ``backup.heartbeats``) and heartbeat cycles
    are detected. Every other topic is its own remote name; its source is the configured
    ``source_cluster_alias``. Replication cycles of ordinary topics cannot be detected.

    Parameters
    ----------
    source_cluster_alias:
        ``source.cluster.alias``: the alias reported by :meth:`topic_source` for
        non-heartbeat topics; ``None`` (default) makes them non-remote.
    separator:
        ``replication.policy.separator``; default ``"."``.
    internal_topic_separator_enabled:
        ``replication.policy.internal.topic.separator.enabled``; default ``True``.

    Raises
    ------
    ConfigError
        If ``separator`` is empty.
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
        """Apply MM2 properties: those of the default policy plus ``source.cluster.alias``.

        Parameters
        ----------
        props:
            Property name to string value.

        Raises
        ------
        ConfigError
            If the separator is empty.
        """
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
        """Remote name: ``topic`` unchanged, except heartbeat-like topics get the prefix.

        Parameters
        ----------
        source_alias:
            Alias of the source cluster.
        topic:
            Topic name on the source cluster.

        Returns
        -------
        str
            ``topic``; or ``source_alias + separator + topic`` if ``topic`` ends with
            ``heartbeats``.
        """
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        """Source alias: the configured alias, or the default rule for heartbeat-like topics.

        Parameters
        ----------
        topic:
            A topic name.

        Returns
        -------
        str or None
            ``source_cluster_alias`` (``None`` if unset) for ordinary topics; for names
            ending with ``heartbeats``, :meth:`DefaultReplicationPolicy.topic_source`.
        """
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self._source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        """Upstream name: the topic itself, or the default rule for heartbeat-like topics.

        Parameters
        ----------
        topic:
            A topic name.

        Returns
        -------
        str or None
            ``topic`` for ordinary topics (so :meth:`original_topic` stops at once); for
            names ending with ``heartbeats``, :meth:`DefaultReplicationPolicy.upstream_topic`.
        """
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic


_DEFAULT_POLICY_NAMES = frozenset({"DefaultReplicationPolicy", DEFAULT_POLICY_CLASS})
_IDENTITY_POLICY_NAMES = frozenset({"IdentityReplicationPolicy", f"{_JAVA_PACKAGE}IdentityReplicationPolicy"})


def load_policy(
    class_name: str,
    *,
    separator: str = DEFAULT_SEPARATOR,
    internal_topic_separator_enabled: bool = True,
    source_cluster_alias: str | None = None,
) -> ReplicationPolicy:
    """Create the replication policy named by ``replication.policy.class``.

    Parameters
    ----------
    class_name:
        MM2's Java class name (``org.apache.kafka.connect.mirror.DefaultReplicationPolicy``
        or ``...IdentityReplicationPolicy``), the short name (``DefaultReplicationPolicy``,
        ``IdentityReplicationPolicy``), or a Python class as ``package.module:ClassName``.
        A Python class is instantiated with no arguments; if it has a
        ``configure(props)`` method it is called with ``replication.policy.separator``,
        ``replication.policy.internal.topic.separator.enabled`` (``"true"``/``"false"``)
        and, when given, ``source.cluster.alias`` — like MM2's ``Configurable``.
    separator:
        ``replication.policy.separator``; default ``"."``.
    internal_topic_separator_enabled:
        ``replication.policy.internal.topic.separator.enabled``; default ``True``.
    source_cluster_alias:
        ``source.cluster.alias`` (used by the identity policy); default ``None``.

    Returns
    -------
    ReplicationPolicy
        The configured policy.

    Raises
    ------
    ConfigError
        If the name is neither a built-in policy nor ``package.module:ClassName``, the
        module or class cannot be imported, the class cannot be instantiated or
        configured, or the object does not implement :class:`ReplicationPolicy`.
    """
    name = class_name.strip()
    if name in _DEFAULT_POLICY_NAMES:
        return DefaultReplicationPolicy(
            separator=separator, internal_topic_separator_enabled=internal_topic_separator_enabled
        )
    if name in _IDENTITY_POLICY_NAMES:
        return IdentityReplicationPolicy(
            source_cluster_alias=source_cluster_alias,
            separator=separator,
            internal_topic_separator_enabled=internal_topic_separator_enabled,
        )

    fix = (
        "set replication.policy.class to DefaultReplicationPolicy, IdentityReplicationPolicy, "
        "or a Python class as 'package.module:ClassName' importable by mirrorspark"
    )
    module_name, colon, attr = name.partition(":")
    if not colon or not module_name or not attr:
        raise ConfigError(f"unknown replication.policy.class {class_name!r} (Java classes cannot be loaded); {fix}")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise ConfigError(
            f"replication.policy.class {class_name!r}: cannot import module {module_name!r} ({e}); {fix}"
        ) from e
    cls: object = module
    for part in attr.split("."):
        try:
            cls = getattr(cls, part)
        except AttributeError as e:
            raise ConfigError(
                f"replication.policy.class {class_name!r}: module {module_name!r} has no {attr!r}; {fix}"
            ) from e
    if not isinstance(cls, type):
        raise ConfigError(f"replication.policy.class {class_name!r} is not a class; {fix}")
    try:
        policy: object = cls()
    except Exception as e:
        raise ConfigError(
            f"replication.policy.class {class_name!r} cannot be instantiated with no arguments ({e}); "
            "give its constructor defaults and read settings in configure(props)"
        ) from e
    if not isinstance(policy, ReplicationPolicy):
        raise ConfigError(
            f"replication.policy.class {class_name!r} is not a replication policy; "
            "subclass mirrorspark.BaseReplicationPolicy (or DefaultReplicationPolicy) and "
            "implement format_remote_topic, topic_source and upstream_topic"
        )
    configure = getattr(policy, "configure", None)
    if callable(configure):
        props = {
            SEPARATOR_CONFIG: separator,
            INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG: "true" if internal_topic_separator_enabled else "false",
        }
        if source_cluster_alias is not None:
            props[SOURCE_CLUSTER_ALIAS_CONFIG] = source_cluster_alias
        try:
            configure(props)
        except ConfigError:
            raise
        except Exception as e:
            raise ConfigError(
                f"replication.policy.class {class_name!r}: configure() failed ({e}); "
                "check the replication.policy.* settings"
            ) from e
    return policy


__all__ = [
    "ALLOW_IDENTITY_CYCLES_KEY",
    "DEFAULT_POLICY_CLASS",
    "DEFAULT_SEPARATOR",
    "HEARTBEATS_TOPIC",
    "IDENTITY_PROBE_TOPIC",
    "INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG",
    "SEPARATOR_CONFIG",
    "SOURCE_CLUSTER_ALIAS_CONFIG",
    "BaseReplicationPolicy",
    "DefaultReplicationPolicy",
    "IdentityReplicationPolicy",
    "ReplicationPolicy",
    "load_policy",
]
