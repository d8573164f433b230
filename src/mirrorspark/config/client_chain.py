"""Client settings composed as MM2 composes them (``clusterProps``, ``MirrorConnectorConfig``): per cluster, per flow.

The settings of one client role (``admin``, ``consumer``, ``producer``) of one side of a flow are composed
from lowest to highest precedence: top-level client keys (``bootstrap.servers``, ``security.protocol``,
``ssl.*``, ``sasl.*``) -> cluster ``C.<client key>`` -> flow ``S->T.<side>.cluster.<client key>`` ->
top-level ``<role>.*`` -> flow ``S->T.<role>.*`` -> cluster ``C.<role>.*`` -> top-level
``<side>.<role>.*`` -> flow ``S->T.<side>.<role>.*`` (-> flow ``S->T.producer.override.*`` for the data
producer). A cluster's own settings (for tools that serve no flow) are the first two links and ``C.<role>.*``.

A flow's checkpoint or heartbeat connector may run clients of its own (a Kafka Connect deployment composes each
connector's clients from its own config): when the flow sets any ``S->T.mirrorspark.<kind>.<flow client key>``,
that connector's clients are composed with those keys in place of the flow's own ``S->T.<side>.cluster.*``,
``S->T.<role>.*`` and ``S->T.<side>.<role>.*`` (``S->T.producer.override.*`` stays the source connector's).
"""

from __future__ import annotations

from collections.abc import Mapping

from mirrorspark.config.keys import (
    CONNECTOR_CLIENT_PREFIXES,
    KEYS,
    MIRRORSPARK_PREFIX,
    ROLES,
    SIDE_CLUSTER_PREFIXES,
    SIDE_ROLE_PREFIXES,
    SIDES,
    is_client_key,
)
from mirrorspark.config.model import ClientSettings, ClusterConfig
from mirrorspark.config.raw import RawConfig, strip_prefix
from mirrorspark.config.schema_sync import cluster_registry
from mirrorspark.config.values import split_list
from mirrorspark.errors import ConfigError


def cluster_config(raw: RawConfig, alias: str) -> ClusterConfig:
    """Compose the configuration of cluster ``alias``: its bootstrap servers, its clients' settings (``clusterProps``).

    Raises ConfigError when the cluster has no ``<alias>.bootstrap.servers`` nor top-level ``bootstrap.servers``, or
    its Schema Registry keys do not hold (:func:`~mirrorspark.config.schema_sync.cluster_registry`).
    """
    own = raw.cluster_raw[alias]
    servers = join_servers(own.get("bootstrap.servers") or raw.top_all.get("bootstrap.servers") or "")
    if not servers:
        raise ConfigError(
            f"{raw.src}: cluster '{alias}' has no bootstrap servers: add "
            f"'{alias}.bootstrap.servers = host1:9092,host2:9092'"
        )
    roles = {role: client_settings({**_base_client(raw, alias, role), **_role_props(own, role)}) for role in ROLES}
    return ClusterConfig(
        alias=alias,
        bootstrap_servers=servers,
        admin=roles["admin"],
        consumer=roles["consumer"],
        producer=roles["producer"],
        schema_registry=cluster_registry(raw, alias),
    )


def flow_clients(raw: RawConfig, s: str, t: str, *, connector: str | None = None) -> dict[str, dict[str, str]]:
    """Compose the six client settings of flow ``S->T``, by :class:`~mirrorspark.config.FlowConfig` field.

    Both consumers get ``enable.auto.commit = false`` (forced, as MM2) and ``auto.offset.reset = earliest`` unless set;
    ``connector`` composes a checkpoint or heartbeat connector's own, from ``S->T.mirrorspark.<connector>.*``.
    """
    flow = raw.flow_raw.get((s, t), {})
    if connector is not None:
        flow = strip_prefix(flow, f"{MIRRORSPARK_PREFIX}{connector}.")
    clients = {
        f"{side}_{role}": _flow_client(raw, s if side == "source" else t, side, role, flow)
        for side in SIDES
        for role in ROLES
    }
    if connector is None:
        clients["target_producer"].update(strip_prefix(flow, "producer.override."))
    for name in ("source_consumer", "target_consumer"):
        c = clients[name]
        if c.get("enable.auto.commit", "false").strip().lower() != "false":
            raw.warn(f"{s}->{t}: enable.auto.commit for the {name.replace('_', ' ')} is forced to false, as in MM2")
        c["enable.auto.commit"] = "false"
        c.setdefault("auto.offset.reset", "earliest")
    return clients


def _base_client(raw: RawConfig, alias: str, role: str) -> dict[str, str]:
    """MM2's ``clusterProps`` client keys: top-level ones, overridden by ``<alias>.<client key>``.

    Consumers also get ``client.rack`` (KIP-392 follower fetching); MM2 passes on only ``<alias>.consumer.client.rack``.
    """
    rack = ("client.rack",) if role == "consumer" else ()
    base = {k: v for k, v in raw.top_all.items() if is_client_key(k) or k in rack}
    base.update({k: v for k, v in raw.cluster_raw[alias].items() if is_client_key(k) or k in rack})
    return base


def _flow_client(raw: RawConfig, alias: str, side: str, role: str, flow: Mapping[str, str]) -> dict[str, str]:
    """Compose the client settings of one side and role of a flow (the chain in the module docstring)."""
    props = _base_client(raw, alias, role)
    props.update({k: v for k, v in strip_prefix(flow, f"{side}.cluster.").items() if is_client_key(k)})
    props.update(_role_props(raw.top, role))
    props.update(_role_props(flow, role))
    props.update(_role_props(raw.cluster_raw[alias], role))
    props.update(strip_prefix(raw.top, f"{side}.{role}."))
    props.update(strip_prefix(flow, f"{side}.{role}."))
    return props


def _role_props(props: Mapping[str, str], role: str) -> dict[str, str]:
    """``<role>.*`` client properties, skipping MM2 keys that merely start like one (``admin.timeout.ms``)."""
    return {
        k: v
        for k, v in strip_prefix(props, f"{role}.").items()
        if f"{role}.{k}" not in KEYS and not k.startswith("override.")
    }


def consumed_by_clients(key: str) -> bool:
    """Whether a merged flow key feeds a client chain rather than :attr:`FlowConfig.extra`."""
    if key in KEYS:
        return False
    if key.startswith(CONNECTOR_CLIENT_PREFIXES):
        return True
    if key.startswith(SIDE_CLUSTER_PREFIXES):
        return is_client_key(key.split(".", 2)[2])
    if key.startswith(SIDE_ROLE_PREFIXES):
        return True
    role, _, rest = key.partition(".")
    # producer.override.* feeds the data producer; consumer.override.* / admin.override.* stay in extra
    return role in ROLES and (role == "producer" or not rest.startswith("override."))


def connector_client_kinds(raw: RawConfig, s: str, t: str) -> list[str]:
    """Return the connectors of flow ``S->T`` with clients of their own (those with ``S->T.mirrorspark.<kind>.*``)."""
    flow = raw.flow_raw.get((s, t), {})
    return [p[len(MIRRORSPARK_PREFIX) : -1] for p in CONNECTOR_CLIENT_PREFIXES if any(k.startswith(p) for k in flow)]


def client_settings(props: Mapping[str, str]) -> ClientSettings:
    """Client settings with values trimmed, as Kafka's ``ConfigDef`` trims them (lists item by item)."""
    return ClientSettings(
        properties={k: join_servers(v) if k == "bootstrap.servers" else v.strip() for k, v in props.items()}
    )


def join_servers(raw: str) -> str:
    """Normalise a ``bootstrap.servers`` list to ``"h1:9092,h2:9092"`` (items trimmed, empty items dropped)."""
    return ",".join(item for item in split_list(raw) if item)


__all__ = [
    "client_settings",
    "cluster_config",
    "connector_client_kinds",
    "consumed_by_clients",
    "flow_clients",
    "join_servers",
]
