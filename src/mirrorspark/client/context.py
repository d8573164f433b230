"""What a flow needs from its configuration, built once when it starts (policy, filters, clients).

A :class:`FlowContext` holds what of one flow ``S->T`` is derived from the configuration and fixed while
it runs: policy, filters, the ``client.id`` rule and the client factory (each role's Java settings
translated to librdkafka once). No other module loads a policy or translates client settings.

A client is picked by a :data:`SettingsKey` (the ``FlowConfig`` field of its settings, derived from the
:data:`Side`) and a ``purpose`` (the last part of its ``client.id``). The ``client.id`` rule is MM2's
``<source>-><target>|<component>|<purpose>``, e.g. ``"A->B|mirrorspark|replication-producer"``; a
user's ``client.id`` is kept as a prefix (:func:`~mirrorspark.kafka.factory.client_conf`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from mirrorspark.config.internal_topics import InternalTopics
from mirrorspark.config.model import ClientSettings, ClusterConfig, FlowConfig, MirrorConfig
from mirrorspark.config.runnable import base_policy, flow_policy
from mirrorspark.config.schema_registry import SchemaRegistrySettings
from mirrorspark.core.schemas.registry import SchemaRegistryLike
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
from mirrorspark.registry.client import RegistryClient

SettingsKey = Literal[
    "source_admin", "source_consumer", "source_producer", "target_admin", "target_consumer", "target_producer"
]
"""Which :class:`~mirrorspark.config.FlowConfig` field holds a client's settings (``<side>_<kind>``)."""

Side = Literal["source", "target"]

RegistryFactory = Callable[[SchemaRegistrySettings], SchemaRegistryLike]
"""Makes a client of a cluster's Schema Registry from its settings (the seam unit tests replace)."""
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

    Returns
    -------
    ReplicationPolicy
        From the first enabled flow ``X->cluster``, else the first flow into it, else the default; without
        ``source.cluster.alias``, as MM2's ``MirrorClient``.

    Raises
    ------
    UnknownAliasError
        ``cluster`` is not in ``clusters``.
    ConfigError
        The policy class cannot be loaded.
    """
    config.cluster(cluster)
    into = [f for f in config.flows if f.target == cluster]
    chosen = next((f for f in into if f.enabled), into[0] if into else None)
    if chosen is None:
        return load_policy("DefaultReplicationPolicy")
    return base_policy(chosen, None)


@dataclass(frozen=True, kw_only=True, eq=False)
class FlowContext:
    """One flow's fixed parts, built once at start (:meth:`build`) and passed to everything of the flow.

    As MM2's ``MirrorSourceConnector``/``MirrorCheckpointConnector`` set up in ``start()`` (policy, filters,
    client configs). The filters are the config file's lists; live control changes come on top
    (:class:`~mirrorspark.replication.connector.live_filters.LiveFilters`). ``transforms`` is empty (falsy)
    when none. The client methods take the ``side`` and the ``purpose``, e.g. ``ctx.admin("target",
    "lease-admin")``, and name the side's alias in a rejected property's ConfigError. Frozen; thread-safe.
    """

    config: MirrorConfig
    flow_config: FlowConfig
    policy: ReplicationPolicy
    internal_topics: InternalTopics
    topic_filter: DefaultTopicFilter
    group_filter: DefaultGroupFilter
    config_filter: DefaultConfigPropertyFilter
    clients: ClientFactory
    transforms: TransformChain = field(default_factory=lambda: TransformChain(()))
    registries: RegistryFactory = RegistryClient.from_settings

    @classmethod
    def build(
        cls,
        config: MirrorConfig,
        flow: FlowConfig,
        *,
        clients: ClientFactory | None = None,
        registries: RegistryFactory | None = None,
    ) -> FlowContext:
        """Load the flow's policy, filters and transforms; ``clients`` defaults to a new ``KafkaClients``.

        ``registries`` makes the Schema Registry clients (default: :class:`~mirrorspark.registry.RegistryClient`).

        Raises
        ------
        ConfigError
            The policy class cannot be loaded, a filter regex does not compile, or a user transform cannot be
            loaded (:class:`~mirrorspark.errors.TransformConfigError`).
        """
        policy = flow_policy(flow)
        return cls(
            config=config,
            flow_config=flow,
            policy=policy,
            internal_topics=InternalTopics.of(flow, policy),
            topic_filter=DefaultTopicFilter(topics=flow.topics, topics_exclude=flow.topics_exclude),
            group_filter=DefaultGroupFilter(groups=flow.groups, groups_exclude=flow.groups_exclude),
            config_filter=DefaultConfigPropertyFilter(
                exclude=flow.config_properties_exclude, use_defaults_from=flow.use_defaults_from
            ),
            clients=clients if clients is not None else KafkaClients(),
            transforms=_chain(flow),
            registries=registries if registries is not None else RegistryClient.from_settings,
        )

    def schema_registry(self, side: Side) -> SchemaRegistryLike:
        """Return a new client of the ``side`` cluster's Schema Registry; ValueError if it names none."""
        settings = self.cluster(side).schema_registry
        if settings is None:
            raise ValueError(f"cluster {self.alias(side)} names no Schema Registry ('schema.registry.url')")
        return self.registries(settings)

    @property
    def name(self) -> str:
        """The flow's name, ``"<source>-><target>"``."""
        return self.flow_config.name

    def for_connector(self, kind: str) -> FlowContext:
        """Return the context whose clients are connector ``kind``'s (``"checkpoint"`` or ``"heartbeat"``).

        This context when the connector has no clients of its own, else one sharing its policy and filters.
        """
        flow = self.flow_config.for_connector(kind)
        return self if flow is self.flow_config else replace(self, flow_config=flow)

    def bound_transforms(self, topic: str) -> BoundChain | None:
        """Return the flow's transforms bound to the remote topic of source ``topic``, ``None`` when none applies.

        Bound on the remote topic as the policy names it, before any ``RegexRouter``.
        """
        if not self.transforms:
            return None
        policy = self.policy.inner if isinstance(self.policy, RoutedReplicationPolicy) else self.policy
        return self.transforms.bind(policy.format_remote_topic(self.flow_config.source, topic))

    def replicates_topic(self, topic: str) -> bool:
        """Whether the flow replicates source ``topic`` by the config file's lists (MM2's ``shouldReplicateTopic``)."""
        return should_replicate_topic(
            topic,
            topic_filter=self.topic_filter,
            policy=self.policy,
            target_alias=self.flow_config.target,
            heartbeats_replication_enabled=self.flow_config.heartbeats_replication_enabled,
        )

    def cluster(self, side: Side) -> ClusterConfig:
        """Return the source or target cluster's configuration."""
        return self.config.cluster(self.flow_config.source if side == "source" else self.flow_config.target)

    def alias(self, side: Side) -> str:
        """Return the source or target cluster's alias, e.g. ``"A"`` of ``A->B`` for ``"source"``."""
        return self.flow_config.source if side == "source" else self.flow_config.target

    def settings(self, key: SettingsKey) -> ClientSettings:
        """Return the Java client settings of the flow's field ``key``, composed as MM2's ``clusterProps`` does."""
        value: ClientSettings = getattr(self.flow_config, key)
        return value

    def client_id(self, purpose: str) -> str:
        """Return the ``client.id`` of a client of the flow, e.g. ``"A->B|mirrorspark|replication-producer"``."""
        return f"{self.flow_config.name}|{COMPONENT}|{purpose}"

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
        """Build a new librdkafka configuration of one client (e.g. a Spark task's) of the settings ``key``.

        Raises
        ------
        ConfigError
            As :meth:`~mirrorspark.config.ClientSettings.to_librdkafka`.
        """
        return client_conf(self.librdkafka(key), self.client_id(purpose), defaults=defaults, overrides=overrides)

    def _side_settings(self, side: Side, kind: ClientKind) -> ClientSettings:
        """Return the ``<side>_<kind>`` settings."""
        value: ClientSettings = getattr(self.flow_config, f"{side}_{kind}")
        return value

    @contextlib.contextmanager
    def _named_cluster(self, side: Side) -> Iterator[None]:
        """Name the side's cluster alias in a client property error of the factory (it does not know it)."""
        try:
            yield
        except ConfigError as e:
            alias = self.flow_config.source if side == "source" else self.flow_config.target
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
        """Return the admin wrapper of ``side`` over a new :meth:`admin` client.

        Each call waits the flow's ``admin.timeout.ms`` (``S->T.admin.timeout.ms``, else the top-level one,
        else 60 s). Raises ConfigError as :meth:`~mirrorspark.kafka.factory.ClientFactory.admin`.
        """
        return ClusterAdmin(
            self.admin(side, purpose, overrides=overrides),
            self.alias(side),
            timeout_s=self.flow_config.admin_timeout_s,
            bootstrap_servers=self._side_settings(side, "admin").get("bootstrap.servers"),
        )


@dataclass(frozen=True, eq=False)
class ReplicationContext:
    """The flow contexts of a whole configuration, one per flow, built at first use and kept.

    As MM2's ``MirrorMaker`` keeps one herder per flow; a policy class is loaded only for the flows used.
    The flows share ``clients`` (equal settings translate once). Thread-safe.
    """

    config: MirrorConfig
    clients: ClientFactory = field(default_factory=KafkaClients)
    registries: RegistryFactory = RegistryClient.from_settings
    _flows: dict[tuple[str, str], FlowContext] = field(default_factory=dict, init=False, repr=False)
    _policies: dict[str, ReplicationPolicy] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def flow(self, source: str, target: str) -> FlowContext:
        """Return the context of the flow ``source->target``, the same object on every call.

        Raises
        ------
        UnknownAliasError
            Either alias is not in ``clusters``.
        ConfigError
            ``source == target``, or the flow's policy cannot be loaded.
        """
        with self._lock:
            ctx = self._flows.get((source, target))
        if ctx is None:
            flow = self.config.flow(source, target)
            ctx = FlowContext.build(self.config, flow, clients=self.clients, registries=self.registries)
            with self._lock:
                ctx = self._flows.setdefault((source, target), ctx)
        return ctx

    def of(self, flow: FlowConfig) -> FlowContext:
        """Return the context of ``flow`` (one of :attr:`config`'s flows); raises as :meth:`flow`."""
        return self.flow(flow.source, flow.target)

    def reverse(self, ctx: FlowContext) -> FlowContext:
        """Return the context of the opposite flow ``T->S`` of ``ctx``, enabled or not; raises as :meth:`flow`."""
        return self.flow(ctx.flow_config.target, ctx.flow_config.source)

    def cluster_admin(
        self,
        cluster: str,
        purpose: str,
        *,
        client_id: str | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> ClusterAdmin:
        """Return the admin wrapper of a cluster for a tool that serves no flow (replicas, placement, service).

        Its ``client.id`` is ``"<cluster>|mirrorspark|<purpose>"`` unless ``client_id`` is given; ``overrides``
        win over ``<cluster>.admin.*``. Each call waits the top-level ``admin.timeout.ms``; narrow it with
        :meth:`~mirrorspark.kafka.admin.ClusterAdmin.with_timeout`.

        Raises
        ------
        UnknownAliasError
            ``cluster`` is not in ``clusters``.
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

        Raises
        ------
        UnknownAliasError
            ``cluster`` is not in ``clusters``.
        ConfigError
            The policy class cannot be loaded.
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
