"""The frozen configuration model: client settings, clusters, flows, the whole file."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, ClassVar

from mirrorspark.config.keys import MASK, show
from mirrorspark.config.librdkafka import SPARK_REJECTED, to_librdkafka
from mirrorspark.config.schema_registry import SchemaRegistrySettings
from mirrorspark.core.placement_rules import PlacementRules
from mirrorspark.core.rename_rules import NO_RENAMING, RenamingConfig
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

    MM2's ``MirrorConnectorConfig.sourceConsumerConfig`` and friends; immutable, hashable, picklable, secrets masked in
    ``repr``.
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

        Raises ConfigError if no ``bootstrap.servers`` is set.
        """
        value = self.properties.get("bootstrap.servers")
        if not value:
            raise ConfigError("client settings have no bootstrap.servers: set '<alias>.bootstrap.servers'")
        return value

    def get(self, key: str, default: str | None = None) -> str | None:
        """Return the value of Java client property ``key``, or ``default`` if it is not set."""
        return self.properties.get(key, default)

    def with_overrides(self, overrides: Mapping[str, str]) -> ClientSettings:
        """Return a copy with ``overrides`` applied on top (an override wins)."""
        return ClientSettings(properties={**self.properties, **overrides})

    def to_librdkafka(self) -> dict[str, str]:
        """Translate these settings to a confluent-kafka (librdkafka) configuration (the one place).

        Shared keys are kept, Java-only ones dropped, unknown ones kept (librdkafka names typos). Translated:
        ``sasl.jaas.config`` (PLAIN/SCRAM, OAUTHBEARER, Kerberos), Java trust and key stores (PEM, PKCS#12, in-line
        PEM), ``ssl.endpoint.identification.algorithm=""`` -> ``none``, socket buffers (-1 -> 0), ``buffer.memory``
        (bytes -> KiB), ``delivery.timeout.ms``, ``fetch.max.wait.ms``, ``max.request.size``,
        ``compression.<type>.level``, ``auto.offset.reset=none`` -> ``error``. Raises ConfigError when a JAAS config
        or a store (JKS) cannot be translated; the message says what to set and never holds a secret.
        """
        return to_librdkafka(self.properties)

    def to_spark_options(self) -> dict[str, str]:
        """Translate these settings to Spark Kafka source options: ``kafka.``-prefixed, minus those Spark rejects."""
        return {f"kafka.{k}": v for k, v in self.properties.items() if k not in SPARK_REJECTED}


@dataclass(frozen=True, kw_only=True, repr=False)
class ClusterConfig(_Frozen):
    """One Kafka cluster named in ``clusters``; ``schema_registry``: ``None`` without ``<alias>.schema.registry.*``."""

    alias: str
    bootstrap_servers: str
    admin: ClientSettings
    consumer: ClientSettings
    producer: ClientSettings
    schema_registry: SchemaRegistrySettings | None = None


@dataclass(frozen=True, kw_only=True)
class PolicyConfig:
    """The replication policy of a flow (``replication.policy.*`` keys)."""

    class_name: str = DEFAULT_POLICY_CLASS
    separator: str = "."
    internal_topic_separator_enabled: bool = True


@dataclass(frozen=True, kw_only=True, repr=False)
class FlowConfig(_Frozen):
    """Everything one replication flow S->T needs, merged and typed (MM2's ``connectorBaseConfig`` + ``workerConfig``).

    Each field comes from ``S->T.<key>``, else the top-level ``<key>``, else MM2's default (worker fields from
    ``<T>.<key>``); the key filling it is declared once in :data:`CONFIG_KEYS`. Durations in ``_s`` or ``_ms``.
    ``sync_schemas_enabled``: whether the flow replicates schemas and translates schema ids (``sync.schemas.enabled``,
    by default iff both clusters name a Schema Registry); ``sync_schemas_unknown_ids``: ``"fail"`` or ``"copy"``;
    ``sync_schemas_interval_s``: seconds between the driver's schema syncs; ``provenance_header_enable``: whether the
    flow stamps and checks the provenance header (``provenance.header.enable``, :mod:`mirrorspark.core.provenance`);
    ``verify_sampling_*``: ``run``'s continuous verification (``verify.sampling.*``, ms and records);
    ``link_rtt_ms``, ``link_rate``: the source link's RTT (ms) and bandwidth (bytes/s) fetches are sized for;
    ``catch_up_*``: parallel catch-up of one partition (readers, backlog records); ``throttled_rate``: the flow's
    byte rate limit (bytes/s, 0 = none);
    ``renaming``: the ``topic.rename.*`` keys (falsy when none).
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
    sync_schemas_enabled: bool = False
    sync_schemas_unknown_ids: str = "fail"
    sync_schemas_interval_s: float = 10.0
    emit_checkpoints_on_commit: bool = False
    provenance_header_enable: bool = False
    verify_sampling_enable: bool = False
    verify_sampling_interval_ms: int = 600_000
    verify_sampling_records: int = 10_000
    link_rtt_ms: int = 0
    link_rate: int = 125_000_000
    catch_up_readers: int = 1
    catch_up_backlog_records: int = 100_000
    throttled_rate: int = 0
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
    renaming: RenamingConfig = NO_RENAMING
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
        """Return the flow as connector ``kind`` (``"checkpoint"``, ``"heartbeat"``) runs it: with its own clients."""
        own: dict[str, Any] = {k[len(kind) + 1 :]: v for k, v in self.connector_clients.items() if k.startswith(kind)}
        return replace(self, **own, connector_clients={}) if own else self


@dataclass(frozen=True, kw_only=True)
class DataPathConfig:
    """mirrorspark's own settings (top-level ``mirrorspark.*`` keys): the data path, and the identity-cycle check."""

    read_mode: str = "consumer"
    identity_allow_cycles: bool = False
    on_gap: str = "continue"
    metrics_interval_ms: int = 5000


@dataclass(frozen=True, kw_only=True, repr=False)
class ServiceConfig:
    """The metrics service's settings (``mirrorspark.service.*``; ``mirrorspark service``)."""

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
    "SchemaRegistrySettings",
    "ServiceConfig",
]
