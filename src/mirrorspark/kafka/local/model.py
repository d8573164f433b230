"""Local clusters as data: brokers, clusters, their client configs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mirrorspark.config.properties import format_properties
from mirrorspark.errors import LocalClusterError, UnknownAliasError
from mirrorspark.kafka.local.settings import (
    ADMIN_USER,
    CCOMPAT_PATH,
    HOST,
    KAFKA_PROTOCOL,
    SASL_MECHANISM,
    SASL_SECURITY,
    SecurityProtocol,
)

# --------------------------------------------------------------------------------------------
# Public data model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalBroker:
    """One broker (JVM process) of a local cluster."""

    node_id: int
    port: int
    controller_port: int
    rack: str | None
    pid: int
    log_path: Path
    controller: bool = field(default=False, kw_only=True)
    #: With a WAN listener (``start_clusters(wan=True)``): the port it listens on, and the port it advertises, where a
    #: :class:`~mirrorspark.kafka.local.latency_proxy.LatencyProxy` forwards to it; 0 without one.
    wan_listen_port: int = field(default=0, kw_only=True)
    wan_port: int = field(default=0, kw_only=True)

    @property
    def node_dir(self) -> Path:
        """Directory of this node: ``server.properties``, ``kafka.log`` and ``data/``."""
        return self.log_path.parent

    @property
    def properties_path(self) -> Path:
        """The node's ``server.properties``."""
        return self.node_dir / "server.properties"

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>`` of the client listener."""
        return f"{HOST}:{self.port}"


@dataclass(frozen=True, kw_only=True)
class LocalSchemaRegistry:
    """One Schema Registry (an Apicurio Registry JVM, in-memory storage) of a local cluster."""

    port: int
    management_port: int
    pid: int
    log_path: Path

    @property
    def url(self) -> str:
        """The Confluent-compatible API, ``http://127.0.0.1:<port>/apis/ccompat/v7``: a ``schema.registry.url``."""
        return f"http://{HOST}:{self.port}{CCOMPAT_PATH}"


@dataclass(frozen=True)
class LocalCluster:
    """One local Kafka cluster: its alias, brokers and how to connect."""

    alias: str
    bootstrap_servers: str
    data_dir: Path
    brokers: tuple[LocalBroker, ...]
    cluster_id: str = field(default="", kw_only=True)
    security: SecurityProtocol = field(default="plaintext", kw_only=True)
    sasl_users: Mapping[str, str] = field(default_factory=dict, kw_only=True, repr=False)
    ca_location: Path | None = field(default=None, kw_only=True)
    schema_registry: LocalSchemaRegistry | None = field(default=None, kw_only=True)

    @property
    def wan_bootstrap_servers(self) -> str:
        """The brokers' advertised WAN addresses, reached through a latency proxy (:func:`wan_link`).

        Raises LocalClusterError if the cluster was started without a WAN listener.
        """
        if not all(b.wan_port for b in self.brokers):
            raise LocalClusterError(f"cluster '{self.alias}' has no WAN listener: start it with wan=True")
        return ",".join(f"{HOST}:{b.wan_port}" for b in self.brokers)

    def client_config(self, user: str | None = None) -> dict[str, str]:
        """Return a librdkafka (confluent-kafka) client configuration for this cluster.

        Raises LocalClusterError if ``user`` is not one of the cluster's SASL users.
        """
        config = self._transport()
        if self.ca_location is not None:
            config["ssl.ca.location"] = str(self.ca_location)
        if self.security in SASL_SECURITY:
            name, password = self._credentials(user)
            config.update({"sasl.username": name, "sasl.password": password})
        return config

    def java_client_properties(self, user: str | None = None) -> dict[str, str]:
        """Return a Java Kafka client configuration (MM2, Spark's ``kafka.*`` options).

        Raises LocalClusterError if ``user`` is not one of the cluster's SASL users.
        """
        config = self._transport()
        if self.ca_location is not None:
            config["ssl.truststore.type"] = "PEM"
            config["ssl.truststore.location"] = str(self.ca_location)
        if self.security in SASL_SECURITY:
            name, password = self._credentials(user)
            module = (
                "org.apache.kafka.common.security.scram.ScramLoginModule"
                if self.security == "sasl_ssl"
                else "org.apache.kafka.common.security.plain.PlainLoginModule"
            )
            config["sasl.jaas.config"] = f'{module} required username="{name}" password="{password}";'
        return config

    def _transport(self) -> dict[str, str]:
        """``bootstrap.servers``, ``security.protocol`` and ``sasl.mechanism`` (same in Java and librdkafka)."""
        config = {"bootstrap.servers": self.bootstrap_servers}
        if self.security != "plaintext":
            config["security.protocol"] = KAFKA_PROTOCOL[self.security]
        if self.security in SASL_SECURITY:
            config["sasl.mechanism"] = SASL_MECHANISM[self.security]
        return config

    def _credentials(self, user: str | None) -> tuple[str, str]:
        name = ADMIN_USER if user is None else user
        if name not in self.sasl_users:
            raise LocalClusterError(
                f"cluster {self.alias!r} has no SASL user {name!r}: use one of {', '.join(sorted(self.sasl_users))}"
            )
        return name, self.sasl_users[name]


@dataclass(frozen=True)
class LocalClusters:
    """The state of one ``up``: every cluster started together under one base directory."""

    base_dir: Path
    clusters: Mapping[str, LocalCluster]

    def cluster(self, alias: str) -> LocalCluster:
        """Return the cluster called ``alias``. Raises UnknownAliasError if there is no such cluster."""
        try:
            return self.clusters[alias]
        except KeyError:
            raise UnknownAliasError(
                f"no local cluster {alias!r} in {self.base_dir}: known aliases are"
                f" {', '.join(self.clusters) or '(none)'}"
            ) from None

    def bootstrap(self, alias: str) -> str:
        """Return ``bootstrap.servers`` of one cluster. Raises UnknownAliasError if there is no such cluster."""
        return self.cluster(alias).bootstrap_servers

    def mm2_properties(
        self,
        flows: Sequence[tuple[str, str]] | None = None,
        extra: Mapping[str, str] | None = None,
    ) -> str:
        """Return a ready-to-use ``mm2.properties`` for these clusters.

        Raises UnknownAliasError if a flow names an alias that is not one of the clusters; LocalClusterError if a flow's
        source and target are the same alias.
        """
        aliases = list(self.clusters)
        if flows is None:
            flows = [(aliases[0], aliases[1])] if len(aliases) >= 2 else []
        for source, target in flows:
            self.cluster(source)
            self.cluster(target)
            if source == target:
                raise LocalClusterError(f"flow {source}->{target} replicates a cluster to itself")
        rf = str(min((len(c.brokers) for c in self.clusters.values()), default=1))
        props: dict[str, str] = {"clusters": ", ".join(aliases)}
        for alias, cluster in self.clusters.items():
            for key, value in cluster.java_client_properties().items():
                props[f"{alias}.{key}"] = value
            if cluster.schema_registry is not None:
                props[f"{alias}.schema.registry.url"] = cluster.schema_registry.url
        for source, target in flows:
            props[f"{source}->{target}.enabled"] = "true"
        for key in (
            "replication.factor",
            "offset-syncs.topic.replication.factor",
            "heartbeats.topic.replication.factor",
            "checkpoints.topic.replication.factor",
            "offset.storage.replication.factor",
            "config.storage.replication.factor",
            "status.storage.replication.factor",
        ):
            props[key] = rf
        props.update(extra or {})
        header = f"# mm2.properties for the local clusters in {self.base_dir} (mirrorspark local)"
        return format_properties(props, header=header, separator=" = ")

    def to_json(self) -> dict[str, dict[str, str]]:
        """Return the librdkafka client configuration of every cluster, by alias, and its ``schema.registry.url``.

        ``schema.registry.url`` (not a librdkafka key: take it out before making a client) only for a cluster
        started with a Schema Registry.
        """
        doc = {}
        for alias, cluster in self.clusters.items():
            config = cluster.client_config()
            if cluster.schema_registry is not None:
                config["schema.registry.url"] = cluster.schema_registry.url
            doc[alias] = config
        return doc


__all__ = ["LocalBroker", "LocalCluster", "LocalClusters", "LocalSchemaRegistry"]
