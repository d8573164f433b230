"""The frozen configuration model: client settings, clusters, flows, the whole file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, ClassVar

from mirrorspark.config.keys import MASK, show
from mirrorspark.config.librdkafka import SPARK_REJECTED, to_librdkafka
from mirrorspark.core.placement_rules import PlacementRules
from mirrorspark.core.transforms import NO_TRANSFORMS, TransformsConfig
from mirrorspark.errors import ConfigError, UnknownAliasError
from mirrorspark.mm2.policy import DEFAULT_POLICY_CLASS

# --------------------------------------------------------------------------------------
# Frozen objects
# --------------------------------------------------------------------------------------


def _rebuild(cls: type[Any], kwargs: dict[str, Any]) -> Any:
    """Pickle helper: construct ``cls`` from keyword arguments."""
    return cls(**kwargs)


class _Frozen:
    """Shared ``repr`` (secrets masked), pickling and read-only mapping fields of the config objects."""

    _MAPPING_FIELDS: ClassVar[tuple[str, ...]] = ()

    def _freeze_mappings(self) -> None:
        for name in self._MAPPING_FIELDS:
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def __reduce__(self) -> tuple[Any, ...]:
        kwargs = {
            f.name: dict(v) if isinstance(v, MappingProxyType) else v
            for f in fields(self)  # type: ignore[arg-type]
            for v in [getattr(self, f.name)]
        }
        return (_rebuild, (type(self), kwargs))

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, MappingProxyType):
                items = (f"{k!r}: {show(k, v) if isinstance(v, str) else repr(v)}" for k, v in value.items())
                parts.append(f"{f.name}={{{', '.join(items)}}}")
            else:
                parts.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


@dataclass(frozen=True, kw_only=True, repr=False)
class ClientSettings(_Frozen):
    """Java-style Kafka client properties of one client role (admin, consumer or producer).

    Parameters
    ----------
    properties:
        Java client property names and values (e.g. ``{"bootstrap.servers": "b1:9092"}``);
        copied into a read-only mapping.

    Notes
    -----
    The Python counterpart of the maps MM2's ``MirrorConnectorConfig.sourceConsumerConfig``
    and friends build. ``repr`` and ``str`` mask secret values (keys containing
    ``password``, ``secret``, ``sasl.jaas.config``, ``ssl.key``) as ``******``. Instances
    are immutable, hashable, picklable and safe to share between threads.
    """

    properties: Mapping[str, str]

    _MAPPING_FIELDS = ("properties",)

    def __post_init__(self) -> None:
        self._freeze_mappings()

    def __hash__(self) -> int:
        return hash(frozenset(self.properties.items()))

    def __str__(self) -> str:
        return repr(self)

    @property
    def bootstrap_servers(self) -> str:
        """The ``bootstrap.servers`` value (comma-separated ``host:port`` pairs).

        Raises
        ------
        ConfigError
            If no ``bootstrap.servers`` is set.
        """
        value = self.properties.get("bootstrap.servers")
        if not value:
            raise ConfigError("client settings have no bootstrap.servers: set '<alias>.bootstrap.servers'")
        return value

    def get(self, key: str, default: str | None = None) -> str | None:
        """Return the value of Java client property ``key``, or ``default`` if it is not set.

        Parameters
        ----------
        key:
            Java client property name, e.g. ``"isolation.level"``.
        default:
            Returned when ``key`` is not set.

        Returns
        -------
        str or None
            The value as written in the config file (after ``${...}`` resolution).
        """
        return self.properties.get(key, default)

    def with_overrides(self, overrides: Mapping[str, str]) -> ClientSettings:
        """Return a copy with ``overrides`` applied on top (an override wins).

        Parameters
        ----------
        overrides:
            Java client properties to set.

        Returns
        -------
        ClientSettings
            New settings; these are unchanged.
        """
        return ClientSettings(properties={**self.properties, **overrides})

    def to_librdkafka(self) -> dict[str, str]:
        """Translate these settings to a confluent-kafka (librdkafka) configuration.

        The one place Java client properties become librdkafka properties. Keys both
        clients share are kept (``bootstrap.servers``, ``security.protocol``,
        ``sasl.mechanism``, ``client.id``, ``client.rack``, ``isolation.level``, ``acks``,
        ``linger.ms``, ``batch.size``, ``compression.type``, ``enable.idempotence``,
        ``fetch.*``, ``request.timeout.ms``, ``retries``, ``retry.backoff.ms``,
        ``reconnect.backoff.*``, ``connections.max.idle.ms``, ``client.dns.lookup``, ...);
        Java-only keys (serializers, interceptors, ``metrics.*``, ``sasl.login.*``,
        ``max.block.ms``, ``ssl.protocol``, ...) are dropped; keys nobody knows are kept, so
        librdkafka rejects true typos with its own message. Translations:

        * ``sasl.jaas.config``: ``PlainLoginModule``/``ScramLoginModule`` ->
          ``sasl.username``/``sasl.password``; ``OAuthBearerLoginModule`` -> OIDC client
          credentials (with ``sasl.oauthbearer.token.endpoint.url``) or an unsecured JWT;
          ``Krb5LoginModule`` -> ``sasl.kerberos.keytab``/``sasl.kerberos.principal``;
        * ``ssl.truststore.location`` -> ``ssl.ca.location`` if the file is PEM;
          ``ssl.keystore.location`` -> ``ssl.keystore.location`` (PKCS#12) or
          ``ssl.certificate.location``/``ssl.key.location`` (``ssl.keystore.type=PEM``);
          inline ``ssl.keystore.key``/``ssl.keystore.certificate.chain``/
          ``ssl.truststore.certificates`` -> ``ssl.key.pem``/``ssl.certificate.pem``/``ssl.ca.pem``;
          librdkafka-native ``ssl.ca.location``/``ssl.certificate.location`` win over Java stores;
        * ``ssl.endpoint.identification.algorithm`` ``""`` -> ``none``;
        * ``receive.buffer.bytes``/``send.buffer.bytes`` -> ``socket.*.buffer.bytes`` (-1 -> 0, OS default);
        * ``buffer.memory`` (bytes) -> ``queue.buffering.max.kbytes`` (KiB);
          ``delivery.timeout.ms`` -> ``message.timeout.ms``; ``fetch.max.wait.ms`` ->
          ``fetch.wait.max.ms``; ``max.request.size`` -> ``message.max.bytes``;
          ``compression.<type>.level`` -> ``compression.level``;
          ``auto.offset.reset=none`` -> ``error``.

        Returns
        -------
        dict[str, str]
            A new dict; reads PEM/keystore files only to sniff their format.

        Raises
        ------
        ConfigError
            If a JAAS config cannot be parsed or translated, or a Java trust/key store is not
            in a format librdkafka reads (JKS, PKCS#12 truststore); the message says what to
            set instead and never contains a secret.
        """
        return to_librdkafka(self.properties)

    def to_spark_options(self) -> dict[str, str]:
        """Translate these settings to Spark Kafka source options.

        The one place Java client properties become Spark options: every property is
        prefixed with ``kafka.``, except those Spark's Kafka source rejects
        (``auto.offset.reset``, ``key.deserializer``, ``value.deserializer``,
        ``enable.auto.commit``, ``interceptor.classes``), which are dropped.

        Returns
        -------
        dict[str, str]
            e.g. ``{"kafka.bootstrap.servers": "b1:9092", "kafka.isolation.level": "read_committed"}``.
        """
        return {f"kafka.{k}": v for k, v in self.properties.items() if k not in SPARK_REJECTED}


@dataclass(frozen=True, kw_only=True, repr=False)
class ClusterConfig(_Frozen):
    """One Kafka cluster named in ``clusters``.

    Parameters
    ----------
    alias:
        The cluster alias, e.g. ``"primary"``.
    bootstrap_servers:
        ``<alias>.bootstrap.servers`` (or the top-level ``bootstrap.servers``).
    admin, consumer, producer:
        Cluster-level client settings per role: MM2's ``clusterProps(alias)`` with the role
        prefix, i.e. the top-level client keys (``bootstrap.servers``,
        ``security.protocol``, ``ssl.*``, ``sasl.*``), overridden by ``<alias>.<client key>``,
        overridden by ``<alias>.<role>.*``. Flow-specific clients are in :class:`FlowConfig`.

    Notes
    -----
    Mirrors ``MirrorMakerConfig.clusterProps`` / ``clientConfig`` of MM2.
    """

    alias: str
    bootstrap_servers: str
    admin: ClientSettings
    consumer: ClientSettings
    producer: ClientSettings


@dataclass(frozen=True, kw_only=True)
class PolicyConfig:
    """The replication policy of a flow (``replication.policy.*`` keys).

    Parameters
    ----------
    class_name:
        ``replication.policy.class``: Java class name of MM2's policy
        (``...DefaultReplicationPolicy`` or ``...IdentityReplicationPolicy``).
    separator:
        ``replication.policy.separator``: between source alias and topic; never empty.
    internal_topic_separator_enabled:
        ``replication.policy.internal.topic.separator.enabled`` (KIP-949): whether
        MM2's internal topic names use ``separator`` (True) or ``"."``.

    Notes
    -----
    The ``replication.policy.*`` configuration MM2 passes to ``ReplicationPolicy.configure``
    (``DefaultReplicationPolicy``, ``IdentityReplicationPolicy``).
    """

    class_name: str = DEFAULT_POLICY_CLASS
    separator: str = "."
    internal_topic_separator_enabled: bool = True


@dataclass(frozen=True, kw_only=True, repr=False)
class FlowConfig(_Frozen):
    """Everything one replication flow S->T needs, merged and typed.

    One per ordered pair of aliases; MM2 runs one "herder" (Connect worker with the three
    connectors ``MirrorSourceConnector``, ``MirrorCheckpointConnector``,
    ``MirrorHeartbeatConnector``) per flow. Each field comes from ``S->T.<key>``, else the
    top-level ``<key>``, else MM2's default; worker fields come from the target cluster
    (``<T>.<key>``). The key filling each field is declared once, in :data:`CONFIG_KEYS`
    (``ConfigKey.field``); the parser fills the fields by walking that registry. Durations are in seconds (``_s``) or
    milliseconds (``_ms``).

    Parameters
    ----------
    source, target:
        Cluster aliases; ``source != target``.
    enabled:
        Whether the flow replicates data and checkpoints: ``S->T.enabled``, else the
        top-level ``enabled`` when the flow has a herder (heartbeats enabled), else False.
    topics, topics_exclude, groups, groups_exclude, config_properties_exclude:
        Regex lists (``topics``, ``topics.exclude``, ...), validated; empty = matches nothing.
    use_defaults_from:
        ``"target"`` or ``"source"`` (``S->T.use.defaults.from`` only, as in MM2).
    tasks_max:
        ``tasks.max`` (>= 1).
    refresh_topics_enabled, refresh_topics_interval_s:
        ``refresh.topics.enabled`` / ``.interval.seconds``: topic discovery (default on, 600 s).
    refresh_groups_enabled, refresh_groups_interval_s:
        ``refresh.groups.*``: consumer group discovery (default on, 600 s).
    sync_topic_configs_enabled, sync_topic_configs_interval_s:
        ``sync.topic.configs.*``: topic config sync (default on, 600 s).
    sync_topic_acls_enabled, sync_topic_acls_interval_s:
        ``sync.topic.acls.*``: topic ACL sync (default on, 600 s).
    emit_heartbeats_enabled, emit_heartbeats_interval_s:
        ``emit.heartbeats.*``: heartbeats (default on, 1 s).
    emit_checkpoints_enabled, emit_checkpoints_interval_s:
        ``emit.checkpoints.*``: checkpoints (default on, 60 s).
    sync_group_offsets_enabled, sync_group_offsets_interval_s:
        ``sync.group.offsets.*``: writing translated offsets to idle target groups (default off, 60 s).
        For all these ``x.enabled`` + ``x.interval.seconds`` pairs a job is off when its flag
        is False; a negative interval turns the flag off (as MM2's scheduler does).
    emit_offset_syncs_enabled:
        ``emit.offset-syncs.enabled``.
    heartbeats_replication_enabled:
        ``heartbeats.replication.enabled`` (Kafka 4.0).
    offset_lag_max:
        ``offset.lag.max``, in records.
    replication_factor, offset_syncs_topic_replication_factor, heartbeats_topic_replication_factor,
    checkpoints_topic_replication_factor, offset_storage_replication_factor:
        Replication factors of created topics; -1 = the broker's default.
    offset_storage_topic:
        Worker key ``<T>.offset.storage.topic``; default ``mm2-offsets.<source>.internal``.
    offset_storage_partitions:
        Worker key ``offset.storage.partitions``; default 25.
    config_storage_topic:
        Worker key ``<T>.config.storage.topic``; default ``mm2-configs.<source>.internal``: where the
        previous replicator's task count is read (:mod:`mirrorspark.mm2.connect_configs`).
    connect_group_id:
        Worker key ``<T>.group.id``; default ``<source>-mm2`` (MM2's dedicated mode): the first part of
        the copy tasks' transactional ids (:func:`~mirrorspark.client.connect_tasks.transactional_id`).
    offset_syncs_topic_location:
        ``"source"`` or ``"target"``.
    consumer_poll_timeout_ms:
        ``consumer.poll.timeout.ms``, in milliseconds; accepted for MM2 compatibility, no effect.
    admin_timeout_ms:
        ``admin.timeout.ms``, in milliseconds: bounds each admin call of the flow's control jobs.
    exactly_once_source_support:
        Worker key ``<T>.exactly.once.source.support``: ``"disabled"``, ``"preparing"`` or ``"enabled"``;
        accepted for MM2 compatibility, no effect yet.
    offset_flush_interval_ms:
        Worker key ``<T>.offset.flush.interval.ms``: how often, in milliseconds, each copy task of
        the continuous engine commits the source offsets of acknowledged records.
    exactly_once_support:
        ``exactly.once.support`` (KIP-618): ``"requested"`` or ``"required"`` (refused at start
        unless the flow runs exactly-once with a ``read_committed`` source consumer).
    transaction_boundary, transaction_boundary_interval_ms:
        ``transaction.boundary`` (``"poll"`` or ``"interval"``; ``"connector"`` is refused at
        start) and ``transaction.boundary.interval.ms`` (ms; 0: ``offset.flush.interval.ms``).
    failover_policy, failover_groups, failover_grace_ms, failover_check_interval_ms, failover_dry_run:
        ``mirrorspark.failover.*``: the failover policy (``"manual"``, ``"under-min-isr"`` or ``"offline"``),
        the regexes of the groups it moves, the grace period (ms), how often the source is described (ms)
        and whether it only reports (:mod:`mirrorspark.replication.connector.failover_watch`).
    offset_flush_records:
        ``mirrorspark.offset.flush.records``: records each copy task copies (acknowledged) before it
        commits, if ``offset.flush.interval.ms`` has not passed first (0: by time only); see
        :mod:`mirrorspark.replication.task.runner`.
    fence_tasks_max:
        ``mirrorspark.exactly.once.fence.tasks.max``: task indexes of the previous replicator fenced when
        its task count cannot be read from :attr:`config_storage_topic`; 0 = not set.
    source_connector_name:
        ``mirrorspark.source.connector.name``: the connector name the flow's source offsets are keyed
        by in its offsets topic (``MirrorSourceConnector`` in MM2's dedicated mode; a Connect-based
        deployment's own name for its ``MirrorSourceConnector``).
    policy:
        The replication policy.
    source_consumer:
        Data consumer on S (``enable.auto.commit=false`` forced, ``auto.offset.reset=earliest``
        unless overridden).
    source_admin, source_producer:
        Admin and (offset-syncs, when the location is ``source``) producer on S.
    target_producer:
        Data producer on T (also the offset-syncs producer when the location is ``target``);
        includes ``<T>.producer.*`` and ``S->T.producer.override.*``.
    target_admin, target_consumer:
        Admin and consumer on T (the consumer gets the same forced settings as ``source_consumer``).
    extra:
        Every other flow-level property after the merge (e.g. ``exactly.once.support``), read-only.
    replica_placement:
        ``mirrorspark.replica.placement``: placements of the remote topics the flow creates, by remote
        topic regex (:class:`~mirrorspark.core.placement_rules.PlacementRules`), validated at load; ``None`` =
        the target broker's own placement (``replication.factor``).
    transforms:
        ``transforms`` / ``predicates`` and their sub-keys (``S->T.`` ones over top-level ones, key by
        key), validated at load (:func:`~mirrorspark.core.transforms.parse_transforms`); empty = records
        copied unchanged.
    executor_source_bootstrap_servers, executor_target_bootstrap_servers:
        ``mirrorspark.executor.source.bootstrap.servers`` / ``...target...``: the ``bootstrap.servers`` the
        copy tasks use for the source / target instead of the cluster's own (a driver on another network
        than its executors); empty = the cluster's.
    connector_clients:
        The client settings of a checkpoint or heartbeat connector that runs clients of its own
        (``S->T.mirrorspark.<kind>.*``, as a Kafka Connect deployment's connectors do), keyed
        ``"<kind>.<field>"`` (``"checkpoint.source_admin"``); see :meth:`for_connector`.

    Notes
    -----
    Mirrors ``MirrorMakerConfig.connectorBaseConfig`` + ``workerConfig`` and the typed
    getters of ``MirrorSourceConfig``, ``MirrorCheckpointConfig`` and ``MirrorHeartbeatConfig``.
    """

    source: str
    target: str
    enabled: bool
    topics: tuple[str, ...]
    topics_exclude: tuple[str, ...]
    groups: tuple[str, ...]
    groups_exclude: tuple[str, ...]
    config_properties_exclude: tuple[str, ...]
    use_defaults_from: str
    tasks_max: int
    refresh_topics_enabled: bool
    refresh_topics_interval_s: float
    refresh_groups_enabled: bool
    refresh_groups_interval_s: float
    sync_topic_configs_enabled: bool
    sync_topic_configs_interval_s: float
    sync_topic_acls_enabled: bool
    sync_topic_acls_interval_s: float
    emit_heartbeats_enabled: bool
    emit_heartbeats_interval_s: float
    emit_checkpoints_enabled: bool
    emit_checkpoints_interval_s: float
    sync_group_offsets_enabled: bool
    sync_group_offsets_interval_s: float
    emit_offset_syncs_enabled: bool
    heartbeats_replication_enabled: bool
    offset_lag_max: int
    replication_factor: int
    offset_syncs_topic_replication_factor: int
    heartbeats_topic_replication_factor: int
    checkpoints_topic_replication_factor: int
    offset_storage_replication_factor: int
    offset_storage_topic: str
    offset_storage_partitions: int
    config_storage_topic: str
    connect_group_id: str
    offset_syncs_topic_location: str
    consumer_poll_timeout_ms: int
    admin_timeout_ms: int
    exactly_once_source_support: str
    offset_flush_interval_ms: int
    exactly_once_support: str
    transaction_boundary: str
    transaction_boundary_interval_ms: int
    failover_policy: str = "manual"
    failover_groups: tuple[str, ...] = (".*",)
    failover_grace_ms: int = 30_000
    failover_check_interval_ms: int = 5_000
    failover_dry_run: bool = False
    offset_flush_records: int = 1000
    source_connector_name: str = "MirrorSourceConnector"
    fence_tasks_max: int = 0
    policy: PolicyConfig
    source_consumer: ClientSettings
    source_admin: ClientSettings
    source_producer: ClientSettings
    target_producer: ClientSettings
    target_admin: ClientSettings
    target_consumer: ClientSettings
    extra: Mapping[str, str]
    replica_placement: PlacementRules | None = None
    transforms: TransformsConfig = NO_TRANSFORMS
    executor_source_bootstrap_servers: str = ""
    executor_target_bootstrap_servers: str = ""
    connector_clients: Mapping[str, ClientSettings] = field(default_factory=dict)

    _MAPPING_FIELDS = ("extra", "connector_clients")

    def __post_init__(self) -> None:
        self._freeze_mappings()

    def __hash__(self) -> int:
        return hash((self.source, self.target, self.enabled))

    @property
    def name(self) -> str:
        """The flow's name as MM2 writes it, ``"<source>-><target>"``."""
        return f"{self.source}->{self.target}"

    @property
    def admin_timeout_s(self) -> float:
        """:attr:`admin_timeout_ms` in seconds."""
        return self.admin_timeout_ms / 1000

    @property
    def failover_check_interval_s(self) -> float:
        """:attr:`failover_check_interval_ms` in seconds."""
        return self.failover_check_interval_ms / 1000

    def for_connector(self, kind: str) -> FlowConfig:
        """Return the flow as connector ``kind`` (``"checkpoint"``, ``"heartbeat"``) runs it: with its own clients.

        The same flow when the connector has none (MM2's dedicated mode: one client config per flow).
        """
        own: dict[str, Any] = {k[len(kind) + 1 :]: v for k, v in self.connector_clients.items() if k.startswith(kind)}
        return replace(self, **own, connector_clients={}) if own else self


@dataclass(frozen=True, kw_only=True)
class DataPathConfig:
    """mirrorspark's own settings (top-level ``mirrorspark.*`` keys): the data path, and the identity-cycle check.

    Parameters
    ----------
    read_mode:
        ``mirrorspark.read.mode``: always ``"consumer"`` (confluent-kafka consumers inside Spark
        tasks); the key is kept so that files setting it still load. ``"spark-kafka"`` was
        removed (a :class:`~mirrorspark.errors.ConfigError`).
    identity_allow_cycles:
        ``mirrorspark.identity.allow.cycles``: start even if enabled flows form a cycle through
        an identity-style flow (:func:`mirrorspark.mm2.topology.check_identity_cycles`).
    on_gap:
        ``mirrorspark.on.gap``: ``"continue"`` (resume at the log start after a gap) or ``"stop"``
        (halt the flow), see :mod:`mirrorspark.core.gaps`.
    metrics_interval_ms:
        ``mirrorspark.metrics.interval.ms``: how often the driver writes each flow's raw metrics
        (:mod:`mirrorspark.replication.worker.metrics_publisher`), in ms.

    Notes
    -----
    mirrorspark's own; MM2 has no counterpart (Connect's worker polls one task at a time).
    """

    read_mode: str = "consumer"
    identity_allow_cycles: bool = False
    on_gap: str = "continue"
    metrics_interval_ms: int = 5000


@dataclass(frozen=True, kw_only=True, repr=False)
class ServiceConfig:
    """The metrics service's settings (``mirrorspark.service.*``; ``mirrorspark service``).

    Parameters
    ----------
    auth_token:
        ``mirrorspark.service.auth.token``: the bearer token the API requires; ``""`` = none.
        Never shown: the ``repr`` masks it.
    checkpoint_location:
        ``mirrorspark.service.checkpoint.location``: the Spark job's checkpoint location; ``""`` =
        the default under the local state directory.
    metrics_topic:
        ``mirrorspark.service.metrics.topic``: the compacted topic of the window aggregates.
    trigger_interval_ms:
        ``mirrorspark.service.trigger.interval.ms``: the Spark job's micro-batch interval (ms).
    """

    auth_token: str = ""
    checkpoint_location: str = ""
    metrics_topic: str = "mirrorspark-metrics.internal"
    trigger_interval_ms: int = 5000

    def __repr__(self) -> str:
        token = MASK if self.auth_token else "''"
        return (
            f"ServiceConfig(auth_token={token}, checkpoint_location={self.checkpoint_location!r}, "
            f"metrics_topic={self.metrics_topic!r}, trigger_interval_ms={self.trigger_interval_ms})"
        )


@dataclass(frozen=True, kw_only=True, repr=False)
class MirrorConfig(_Frozen):
    """A whole ``mm2.properties``, parsed and validated.

    Parameters
    ----------
    clusters:
        Clusters by alias, in the order of ``clusters``; read-only.
    flows:
        Every ordered pair (S, T), S != T, in MM2's order (for S in clusters: for T in clusters).
    data_path:
        mirrorspark's data-path settings.
    service:
        The metrics service's settings.
    admin_timeout_ms:
        The top-level ``admin.timeout.ms`` (the default of every flow's), in milliseconds: bounds each admin
        call of the tools that serve no flow (``replica-status``, ``elect``, ``placement``, the service,
        ``MirrorClient``).
    warnings:
        Human-readable warnings (unknown keys, deprecated keys, keys MM2 ignores), each also
        logged once at WARNING by this module's logger.
    source_name:
        Where the properties came from (a path, or ``"<properties>"``).
    target_clusters:
        The ``--clusters`` option (targets this node serves) given to :func:`load_config` /
        :func:`parse_config`, or ``None`` for all; the default of ``targets`` in
        :meth:`enabled_flows` and :meth:`heartbeat_flows`.

    Notes
    -----
    Mirrors MM2's ``MirrorMakerConfig`` plus the herder selection of its ``MirrorMaker`` driver.
    """

    clusters: Mapping[str, ClusterConfig]
    flows: tuple[FlowConfig, ...]
    data_path: DataPathConfig = field(default_factory=DataPathConfig)
    service: ServiceConfig = field(default_factory=ServiceConfig)
    admin_timeout_ms: int = 60_000
    warnings: tuple[str, ...] = ()
    source_name: str = "<properties>"
    target_clusters: tuple[str, ...] | None = None

    _MAPPING_FIELDS = ("clusters",)

    def __post_init__(self) -> None:
        self._freeze_mappings()
        object.__setattr__(self, "flows", tuple(self.flows))
        object.__setattr__(self, "warnings", tuple(self.warnings))
        if self.target_clusters is not None:
            object.__setattr__(self, "target_clusters", tuple(self._check_aliases(self.target_clusters, "--clusters")))

    def __hash__(self) -> int:
        return hash((self.source_name, self.flows))

    def _unknown(self, alias: str, what: str) -> UnknownAliasError:
        known = ", ".join(self.clusters) or "(none)"
        return UnknownAliasError(
            f"{self.source_name}: {what} names cluster alias {alias!r}, which is not in 'clusters' "
            f"(known: {known}); use one of those or add it to 'clusters'"
        )

    def _check_aliases(self, aliases: Iterable[str], what: str) -> list[str]:
        if isinstance(aliases, str):
            raise TypeError(f"{what}: expected a sequence of aliases, got the string {aliases!r}")
        checked = list(aliases)
        for alias in checked:
            if alias not in self.clusters:
                raise self._unknown(alias, what)
        return checked

    @property
    def admin_timeout_s(self) -> float:
        """:attr:`admin_timeout_ms` in seconds."""
        return self.admin_timeout_ms / 1000

    def cluster(self, alias: str) -> ClusterConfig:
        """Return the cluster called ``alias``.

        Parameters
        ----------
        alias:
            A cluster alias, e.g. ``"primary"``.

        Returns
        -------
        ClusterConfig
            The cluster's configuration.

        Raises
        ------
        UnknownAliasError
            If ``alias`` is not in ``clusters``; the message lists the known aliases.
        """
        if alias not in self.clusters:
            raise self._unknown(alias, "the request")
        return self.clusters[alias]

    def flow(self, source: str, target: str) -> FlowConfig:
        """Return the flow ``source->target``.

        Parameters
        ----------
        source, target:
            The flow's cluster aliases.

        Returns
        -------
        FlowConfig
            The flow's configuration (every ordered pair of clusters is a flow, enabled or not,
            as in MM2's ``MirrorMakerConfig``).

        Raises
        ------
        UnknownAliasError
            If either alias is not in ``clusters``.
        ConfigError
            If ``source == target`` (MM2 has no such flow).
        """
        self._check_aliases((source, target), f"flow {source}->{target}")
        for f in self.flows:
            if f.source == source and f.target == target:
                return f
        raise ConfigError(f"{self.source_name}: there is no flow {source}->{target}: source and target must differ")

    def _targets(self, targets: Sequence[str] | None) -> tuple[FlowConfig, ...]:
        if targets is None:
            targets = self.target_clusters
        if targets is None:
            return self.flows
        wanted = set(self._check_aliases(targets, "--clusters"))
        return tuple(f for f in self.flows if f.target in wanted)

    def enabled_flows(self, targets: Sequence[str] | None = None) -> tuple[FlowConfig, ...]:
        """Flows that replicate (``S->T.enabled=true``), in order.

        Parameters
        ----------
        targets:
            MM2's ``--clusters`` option: keep only flows whose **target** is listed;
            ``None`` = :attr:`target_clusters` (all flows if that is ``None`` too).

        Returns
        -------
        tuple[FlowConfig, ...]
            Possibly empty (no enabled flow is not an error here).

        Raises
        ------
        UnknownAliasError
            If ``targets`` names an alias not in ``clusters``.
        """
        return tuple(f for f in self._targets(targets) if f.enabled)

    def heartbeat_flows(self, targets: Sequence[str] | None = None) -> tuple[FlowConfig, ...]:
        """Flows whose heartbeat connector emits heartbeats, in order.

        MM2's ``clusterPairs`` rule: a flow gets a herder if it is enabled **or** heartbeats
        are enabled for it (``S->T.emit.heartbeats.enabled``, else the top-level key, else
        true); its heartbeat connector then emits iff ``emit_heartbeats_enabled``. So with
        three clusters and nothing set, all six flows emit heartbeats.

        Parameters
        ----------
        targets:
            As in :meth:`enabled_flows`.

        Returns
        -------
        tuple[FlowConfig, ...]

        Raises
        ------
        UnknownAliasError
            If ``targets`` names an alias not in ``clusters``.
        """
        # A flow with emit_heartbeats_enabled always has a herder, so the rule reduces to that flag.
        return tuple(f for f in self._targets(targets) if f.emit_heartbeats_enabled)


__all__ = [
    "ClientSettings",
    "ClusterConfig",
    "DataPathConfig",
    "FlowConfig",
    "MirrorConfig",
    "PolicyConfig",
    "ServiceConfig",
]
