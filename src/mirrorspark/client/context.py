"""What a flow needs from its configuration, built once when it starts (policy, filters, clients).

A :class:`FlowContext` holds everything of one flow ``S->T`` that is derived from the
configuration and stays fixed while it runs: the loaded replication policy, the topic, group
and config-property filters of the config file, the ``client.id`` rule, and the client
factory (which translates each role's Java client settings to librdkafka once). The driver
builds one per flow at start (:class:`ReplicationContext`) and hands it down to the flow, its
checkpoint emitter, heartbeats, ACL sync, live filters and progress publisher; the operator
tools (``mirrorspark control``, ``offsets``, ``failover``, ``status``) and the MirrorClient
build theirs the same way. No other module loads a policy or translates client settings.

Two names pick a client of a flow: a :data:`SettingsKey` (which :class:`~mirrorspark.config.FlowConfig`
field holds its settings, e.g. ``"target_producer"``; the client methods take the :data:`Side` and
derive it) and a ``purpose`` (what the client does, the last part of its ``client.id``). The
``client.id`` rule (one for every client, driver-side and in the Spark tasks): MM2's
``<source>-><target>|<component>|<purpose>``, i.e. ``"A->B|mirrorspark|replication-producer"``
(:meth:`FlowContext.client_id`); a ``client.id`` the user set in the settings is kept
as a prefix, ``"<user id>|A->B|mirrorspark|replication-producer"``
(:func:`~mirrorspark.kafka.factory.client_conf`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from mirrorspark.config.internal_topics import InternalTopics
from mirrorspark.config.model import ClientSettings, ClusterConfig, FlowConfig, MirrorConfig
from mirrorspark.config.runnable import flow_policy
from mirrorspark.core.transforms import BoundChain, RoutedReplicationPolicy, TransformChain, build_chain
from mirrorspark.errors import ConfigError, TransformConfigError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.kafka.factory import CLUSTER_ALIAS_PLACEHOLDER, ClientFactory, ClientKind, KafkaClients, client_conf
from mirrorspark.mm2.filters import (
    DefaultConfigPropertyFilter,
    DefaultGroupFilter,
    DefaultTopicFilter,
    should_replicate_topic,
)
from mirrorspark.mm2.policy import ReplicationPolicy, load_policy

SettingsKey = Literal[
    "source_admin", "source_consumer", "source_producer", "target_admin", "target_consumer", "target_producer"
]
"""Which :class:`~mirrorspark.config.FlowConfig` field holds a client's settings (``<side>_<kind>``)."""

Side = Literal["source", "target"]
"""Which cluster of a flow."""

COMPONENT = "mirrorspark"
"""The component part of every ``client.id`` (MM2 puts its connector's role there)."""


def _chain(flow: FlowConfig) -> TransformChain:
    """Build the flow's transformation chain, naming the flow in a load error."""
    try:
        return build_chain(flow.transforms)
    except TransformConfigError as e:
        raise TransformConfigError(f"flow {flow.name}: {e.message}") from e


def cluster_policy(config: MirrorConfig, cluster: str) -> ReplicationPolicy:
    """Load the replication policy naming the topics of ``cluster`` (that of the flows into it).

    Parameters
    ----------
    config:
        The configuration.
    cluster:
        A cluster alias.

    Returns
    -------
    ReplicationPolicy
        From the first enabled flow ``X->cluster``, else the first flow into it, else
        :class:`~mirrorspark.mm2.policy.DefaultReplicationPolicy`; configured without
        ``source.cluster.alias``, as MM2's ``MirrorClient`` is.

    Raises
    ------
    UnknownAliasError
        If ``cluster`` is not in ``clusters``.
    ConfigError
        If the policy class cannot be loaded.
    """
    config.cluster(cluster)
    into = [f for f in config.flows if f.target == cluster]
    chosen = next((f for f in into if f.enabled), into[0] if into else None)
    if chosen is None:
        return load_policy("DefaultReplicationPolicy")
    return load_policy(
        chosen.policy.class_name,
        separator=chosen.policy.separator,
        internal_topic_separator_enabled=chosen.policy.internal_topic_separator_enabled,
    )


@dataclass(frozen=True, kw_only=True, eq=False)
class FlowContext:
    """One flow's fixed parts, built once at start and passed to everything of the flow.

    Build it with :meth:`build` (or :meth:`ReplicationContext.flow`), not directly.

    Attributes
    ----------
    config:
        The whole configuration (for the clusters and the reverse flow).
    flow:
        The flow's configuration.
    policy:
        The flow's replication policy (loaded once; ``source.cluster.alias`` = the source).
    internal_topics:
        The names of the flow's internal topics, from its config and :attr:`policy`.
    topic_filter, group_filter, config_filter:
        The config file's ``topics``/``topics.exclude``, ``groups``/``groups.exclude`` and
        ``config.properties.exclude``/``use.defaults.from`` filters (live control changes come
        on top, see :class:`~mirrorspark.replication.connector.live_filters.LiveFilters`).
    clients:
        Where the flow's Kafka clients come from; it translates each role's settings once.
    transforms:
        The flow's transformation chain (``transforms``), built once at start; empty (falsy) = none.

    Notes
    -----
    Mirrors what MM2's ``MirrorSourceConnector``/``MirrorCheckpointConnector`` set up in
    ``start()`` from their ``MirrorConnectorConfig`` (policy, filters, client configs). Frozen;
    safe to share between threads.

    The client methods (:meth:`admin`, :meth:`producer`, :meth:`consumer`, :meth:`cluster_admin`) take
    the ``side`` (``"source"`` or ``"target"``: the ``<side>_<kind>`` settings) and the ``purpose`` (the
    ``client.id``'s last part, :meth:`client_id`), e.g. ``ctx.admin("target", "lease-admin")``; they
    delegate to :attr:`clients` and name the side's cluster alias in a rejected property's
    :class:`~mirrorspark.errors.ConfigError`.
    """

    config: MirrorConfig
    flow: FlowConfig
    policy: ReplicationPolicy
    internal_topics: InternalTopics
    topic_filter: DefaultTopicFilter
    group_filter: DefaultGroupFilter
    config_filter: DefaultConfigPropertyFilter
    clients: ClientFactory
    transforms: TransformChain = field(default_factory=lambda: TransformChain(()))

    @classmethod
    def build(cls, config: MirrorConfig, flow: FlowConfig, *, clients: ClientFactory | None = None) -> FlowContext:
        """Load the flow's policy and filters.

        Parameters
        ----------
        config:
            The whole configuration.
        flow:
            One of its flows.
        clients:
            The client factory (default: a new :class:`~mirrorspark.kafka.factory.KafkaClients`).

        Returns
        -------
        FlowContext
            The flow's context, with the filters of the config file's lists.

        Raises
        ------
        ConfigError
            If the policy class cannot be loaded, a filter regex does not compile, or a user transform
            (``transforms.<t>.type = package.module:Class``) cannot be loaded
            (:class:`~mirrorspark.errors.TransformConfigError`).
        """
        policy = flow_policy(flow)
        return cls(
            config=config,
            flow=flow,
            policy=policy,
            internal_topics=InternalTopics.of(flow, policy),
            topic_filter=DefaultTopicFilter(topics=flow.topics, topics_exclude=flow.topics_exclude),
            group_filter=DefaultGroupFilter(groups=flow.groups, groups_exclude=flow.groups_exclude),
            config_filter=DefaultConfigPropertyFilter(
                exclude=flow.config_properties_exclude, use_defaults_from=flow.use_defaults_from
            ),
            clients=clients if clients is not None else KafkaClients(),
            transforms=_chain(flow),
        )

    @property
    def name(self) -> str:
        """The flow's name, ``"<source>-><target>"``."""
        return self.flow.name

    def for_connector(self, kind: str) -> FlowContext:
        """Return the context whose clients are connector ``kind``'s (:meth:`FlowConfig.for_connector`).

        Parameters
        ----------
        kind:
            ``"checkpoint"`` or ``"heartbeat"``: the checkpoint emitter and the heartbeats run on it.

        Returns
        -------
        FlowContext
            This context when the connector has no clients of its own, else one sharing its policy and filters.
        """
        flow = self.flow.for_connector(kind)
        return self if flow is self.flow else replace(self, flow=flow)

    def bound_transforms(self, topic: str) -> BoundChain | None:
        """Return the flow's transforms bound to the remote topic of source ``topic`` (for its copy tasks).

        Parameters
        ----------
        topic:
            A replicated topic on the source cluster.

        Returns
        -------
        BoundChain or None
            The per-record steps (:meth:`~mirrorspark.core.transforms.TransformChain.bind` on the remote
            topic as the policy names it, before any ``RegexRouter``), ``None`` when none applies to it.
        """
        if not self.transforms:
            return None
        policy = self.policy.inner if isinstance(self.policy, RoutedReplicationPolicy) else self.policy
        return self.transforms.bind(policy.format_remote_topic(self.flow.source, topic))

    def replicates_topic(self, topic: str) -> bool:
        """Whether the flow replicates source ``topic`` by the config file's lists (MM2's ``shouldReplicateTopic``).

        Parameters
        ----------
        topic:
            A topic name on the source cluster.

        Returns
        -------
        bool
            As :func:`~mirrorspark.mm2.filters.should_replicate_topic` with the flow's topic filter, policy
            and ``heartbeats.replication.enabled`` (live control changes not included).
        """
        return should_replicate_topic(
            topic,
            topic_filter=self.topic_filter,
            policy=self.policy,
            target_alias=self.flow.target,
            heartbeats_replication_enabled=self.flow.heartbeats_replication_enabled,
        )

    def cluster(self, side: Side) -> ClusterConfig:
        """Return the source or target cluster's configuration.

        Parameters
        ----------
        side:
            ``"source"`` or ``"target"`` of the flow.

        Returns
        -------
        ClusterConfig
            The cluster's configuration (``<alias>.*`` keys).
        """
        return self.config.cluster(self.flow.source if side == "source" else self.flow.target)

    def alias(self, side: Side) -> str:
        """Return the source or target cluster's alias.

        Parameters
        ----------
        side:
            ``"source"`` or ``"target"`` of the flow.

        Returns
        -------
        str
            The alias, e.g. ``"A"`` of the flow ``A->B`` for ``"source"``.
        """
        return self.flow.source if side == "source" else self.flow.target

    def settings(self, key: SettingsKey) -> ClientSettings:
        """Return the Java client settings held in the flow's field ``key``, e.g. ``settings("target_producer")``.

        Parameters
        ----------
        key:
            Which :class:`~mirrorspark.config.FlowConfig` field.

        Returns
        -------
        ClientSettings
            The settings, composed from the config file's keys as MM2's ``clusterProps``
            and ``MirrorConnectorConfig`` compose them (see :mod:`mirrorspark.config.parse`).
        """
        value: ClientSettings = getattr(self.flow, key)
        return value

    def client_id(self, purpose: str) -> str:
        """Return the ``client.id`` of a client of the flow: ``"<source>-><target>|mirrorspark|<purpose>"``.

        Parameters
        ----------
        purpose:
            What the client does, e.g. ``"replication-producer"``.

        Returns
        -------
        str
            E.g. ``"A->B|mirrorspark|replication-producer"`` (MM2's client-id rule; a user's
            ``client.id`` is prefixed later by :func:`~mirrorspark.kafka.factory.client_conf`).
        """
        return f"{self.flow.name}|{COMPONENT}|{purpose}"

    def librdkafka(self, key: SettingsKey) -> Mapping[str, Any]:
        """Translate ``key``'s settings once: see :meth:`~mirrorspark.kafka.factory.ClientFactory.librdkafka`."""
        return self.clients.librdkafka(self.settings(key))

    def client_conf(
        self,
        key: SettingsKey,
        purpose: str,
        *,
        defaults: Mapping[str, Any] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Build the librdkafka configuration of one client (e.g. a Spark task's) of the settings ``key``.

        Parameters
        ----------
        key:
            Whose settings (translated once, :meth:`librdkafka`).
        purpose:
            What the client does: its ``client.id`` is :meth:`client_id` of it.
        defaults, overrides:
            As :func:`~mirrorspark.kafka.factory.client_conf`.

        Returns
        -------
        dict[str, Any]
            A new dict the caller may change.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        return client_conf(self.librdkafka(key), self.client_id(purpose), defaults=defaults, overrides=overrides)

    def _side_settings(self, side: Side, kind: ClientKind) -> ClientSettings:
        """Return the ``<side>_<kind>`` settings."""
        value: ClientSettings = getattr(self.flow, f"{side}_{kind}")
        return value

    @contextlib.contextmanager
    def _named_cluster(self, side: Side) -> Iterator[None]:
        """Name the side's cluster alias in a client property error of the factory (it does not know it)."""
        try:
            yield
        except ConfigError as e:
            alias = self.flow.source if side == "source" else self.flow.target
            if CLUSTER_ALIAS_PLACEHOLDER not in e.message:
                raise
            message = e.message.replace(CLUSTER_ALIAS_PLACEHOLDER, alias).replace(
                "<source>-><target>.<source|target>", f"{self.name}.{side}"
            )
            raise ConfigError(f"flow {self.name}, cluster '{alias}' ({side}): {message}") from None

    def admin(self, side: Side, purpose: str, *, overrides: Mapping[str, Any] | None = None) -> AdminClient:
        """Create an admin client of ``side``: see :meth:`~mirrorspark.kafka.factory.ClientFactory.admin`."""
        with self._named_cluster(side):
            return self.clients.admin(
                self._side_settings(side, "admin"), client_id=self.client_id(purpose), overrides=overrides
            )

    def producer(self, side: Side, purpose: str, *, overrides: Mapping[str, Any] | None = None) -> Producer:
        """Create a producer on ``side``: see :meth:`~mirrorspark.kafka.factory.ClientFactory.producer`."""
        with self._named_cluster(side):
            return self.clients.producer(
                self._side_settings(side, "producer"), client_id=self.client_id(purpose), overrides=overrides
            )

    def consumer(self, side: Side, purpose: str, *, overrides: Mapping[str, Any] | None = None) -> Consumer:
        """Create an assign-only consumer on ``side``: see :meth:`~mirrorspark.kafka.factory.ClientFactory.consumer`."""
        with self._named_cluster(side):
            return self.clients.consumer(
                self._side_settings(side, "consumer"), client_id=self.client_id(purpose), overrides=overrides
            )

    def cluster_admin(self, side: Side, purpose: str, *, overrides: Mapping[str, Any] | None = None) -> ClusterAdmin:
        """Return the admin wrapper of ``side``: a new :meth:`admin` client, the flow's ``admin.timeout.ms``.

        Parameters
        ----------
        side, purpose, overrides:
            As :meth:`admin`.

        Returns
        -------
        ClusterAdmin
            Named by the side's alias and bootstrap servers, each call waiting ``admin.timeout.ms``
            (``S->T.admin.timeout.ms``, else the top-level one, else 60 s).

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.kafka.factory.ClientFactory.admin`.
        """
        return ClusterAdmin(
            self.admin(side, purpose, overrides=overrides),
            self.alias(side),
            timeout_s=self.flow.admin_timeout_s,
            bootstrap_servers=self._side_settings(side, "admin").get("bootstrap.servers"),
        )


@dataclass(frozen=True, eq=False)
class ReplicationContext:
    """The flow contexts of a whole configuration, one per flow, built at first use and kept.

    Parameters
    ----------
    config:
        The configuration.
    clients:
        The client factory every flow shares (default: a new
        :class:`~mirrorspark.kafka.factory.KafkaClients`, so equal settings translate once).

    Notes
    -----
    MM2's ``MirrorMaker`` driver keeps one herder per flow; this keeps one :class:`FlowContext`
    per flow. A flow's context is built when first asked for, so that a policy class is loaded
    only for the flows that run (as before). Thread-safe.
    """

    config: MirrorConfig
    clients: ClientFactory = field(default_factory=KafkaClients)
    _flows: dict[tuple[str, str], FlowContext] = field(default_factory=dict, init=False, repr=False)
    _policies: dict[str, ReplicationPolicy] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def flow(self, source: str, target: str) -> FlowContext:
        """Return the context of the flow ``source->target``, building it at first use.

        Parameters
        ----------
        source, target:
            The flow's cluster aliases.

        Returns
        -------
        FlowContext
            The same object on every call for the same flow.

        Raises
        ------
        UnknownAliasError
            If either alias is not in ``clusters``.
        ConfigError
            If ``source == target``, or the flow's policy cannot be loaded.
        """
        with self._lock:
            ctx = self._flows.get((source, target))
        if ctx is None:
            ctx = FlowContext.build(self.config, self.config.flow(source, target), clients=self.clients)
            with self._lock:
                ctx = self._flows.setdefault((source, target), ctx)
        return ctx

    def of(self, flow: FlowConfig) -> FlowContext:
        """Return the context of ``flow`` (one of :attr:`config`'s flows).

        Parameters
        ----------
        flow:
            The flow's configuration.

        Returns
        -------
        FlowContext
            As :meth:`flow` for its source and target.

        Raises
        ------
        UnknownAliasError, ConfigError
            As :meth:`flow`.
        """
        return self.flow(flow.source, flow.target)

    def reverse(self, ctx: FlowContext) -> FlowContext:
        """Return the context of the opposite flow ``T->S`` of ``ctx``.

        Parameters
        ----------
        ctx:
            The context of a flow ``S->T``.

        Returns
        -------
        FlowContext
            The context of ``T->S`` (whether or not it is enabled).

        Raises
        ------
        UnknownAliasError, ConfigError
            As :meth:`flow`.
        """
        return self.flow(ctx.flow.target, ctx.flow.source)

    def cluster_admin(
        self,
        cluster: str,
        purpose: str,
        *,
        client_id: str | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> ClusterAdmin:
        """Return the admin wrapper of a cluster for a tool that serves no flow (replicas, placement, service).

        Parameters
        ----------
        cluster:
            The cluster alias.
        purpose:
            What the client does, e.g. ``"replica-status-admin"``: its ``client.id`` is
            ``"<cluster>|mirrorspark|<purpose>"``.
        client_id:
            Another ``client.id`` (a tool that had its own before the rule above).
        overrides:
            librdkafka settings that win over ``<cluster>.admin.*``.

        Returns
        -------
        ClusterAdmin
            Over a new client of the cluster's admin settings (from :attr:`clients`), each call waiting
            the configuration's top-level ``admin.timeout.ms`` (the connector-level default,
            :attr:`~mirrorspark.config.MirrorConfig.admin_timeout_ms`); a tool with its own bound narrows
            it with :meth:`~mirrorspark.kafka.admin.ClusterAdmin.with_timeout`.

        Raises
        ------
        UnknownAliasError
            If ``cluster`` is not in ``clusters``.
        ConfigError
            The settings cannot be translated for librdkafka.
        """
        c = self.config.cluster(cluster)
        admin = self.clients.admin(
            c.admin, client_id=client_id or f"{cluster}|{COMPONENT}|{purpose}", overrides=overrides
        )
        return ClusterAdmin(
            admin,
            cluster,
            timeout_s=self.config.admin_timeout_s,
            bootstrap_servers=c.admin.get("bootstrap.servers"),
        )

    def cluster_policy(self, cluster: str) -> ReplicationPolicy:
        """Return the policy naming the topics of ``cluster`` (:func:`cluster_policy`), loaded once.

        Parameters
        ----------
        cluster:
            A cluster alias.

        Returns
        -------
        ReplicationPolicy
            The same object on every call for the same cluster.

        Raises
        ------
        UnknownAliasError
            If ``cluster`` is not in ``clusters``.
        ConfigError
            If the policy class cannot be loaded.
        """
        with self._lock:
            policy = self._policies.get(cluster)
        if policy is None:
            policy = cluster_policy(self.config, cluster)
            with self._lock:
                policy = self._policies.setdefault(cluster, policy)
        return policy


__all__ = [
    "COMPONENT",
    "FlowContext",
    "ReplicationContext",
    "SettingsKey",
    "Side",
    "cluster_policy",
    "flow_policy",
]
