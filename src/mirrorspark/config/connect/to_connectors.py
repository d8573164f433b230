"""An mm2.properties file converted into MM2's connectors, as MM2's dedicated driver configures them.

Per replication flow ``S->T`` (``MirrorMakerConfig.connectorBaseConfig``): a ``MirrorSourceConnector`` if
the flow is enabled, a ``MirrorCheckpointConnector`` if it is enabled and emits checkpoints, a
``MirrorHeartbeatConnector`` if it emits heartbeats. Each gets the keys its kind reads
(:mod:`~mirrorspark.config.connect.ownership`) from, lowest precedence first: the top-level connector keys,
then ``S->T.*``; and its clients' settings so that Connect composes them as mirrorspark does
(:mod:`~mirrorspark.config.client_chain`): ``<side>.cluster.<client key>`` (top-level, then ``<alias>.``,
then ``S->T.<side>.cluster.``), ``<role>.*`` (top-level, then ``S->T.``), ``<side>.<role>.*`` (``<alias>.<role>.*``,
top-level ``<side>.<role>.*``, ``S->T.<side>.<role>.*``); a checkpoint or heartbeat connector with clients of its
own (``S->T.mirrorspark.<kind>.*``) gets those in place of the flow's ``S->T.`` client keys. Placeholders are kept
as written.

Each cluster's Schema Registry (``<alias>.schema.registry.*``) goes to the source connector as
``source.cluster.schema.registry.*`` and ``target.cluster.schema.registry.*``, the spelling connector configs are read
with (:mod:`~mirrorspark.config.connect.to_properties`).

Not carried over (listed in :attr:`Connectors.dropped`): Connect worker settings (``<alias>.offset.storage.topic``,
``<alias>.exactly.once.source.support`` ...: set them on the Connect worker) and mirrorspark's top-level keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from mirrorspark.config.client_chain import consumed_by_clients
from mirrorspark.config.connect.model import KINDS, Connector, ConnectorKind
from mirrorspark.config.connect.ownership import readers
from mirrorspark.config.keys import (
    CONNECTOR_CLIENT_KINDS,
    CONNECTOR_CLIENT_PREFIXES,
    KEYS,
    MIRRORSPARK_PREFIX,
    ROLES,
    SCHEMA_REGISTRY_PREFIX,
    SIDES,
    is_client_key,
)
from mirrorspark.config.model import FlowConfig, MirrorConfig
from mirrorspark.config.values import split_list
from mirrorspark.mm2.records import MIRROR_SOURCE_CONNECTOR

_NOT_CONNECTOR: Final = frozenset({"clusters", "enabled", "mirrorspark.source.connector.name"})  # the last: the name
_CONNECTOR_PREFIXES: Final = ("transforms.", "predicates.", "replication.policy.", "errors.")


@dataclass
class Connectors:
    """The connectors of an mm2.properties file."""

    connectors: list[Connector] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def properties_to_connectors(props: Mapping[str, str], config: MirrorConfig, *, file: str) -> Connectors:
    """Convert mm2.properties keys into MM2's connectors (rules in the module docstring)."""
    aliases = split_list(props.get("clusters", ""))
    top, cluster, flows = _classify(props, aliases)
    out = Connectors(dropped=[k for k in props if _dropped(k, aliases)])
    for flow in config.flows:
        kinds = _kinds(config, flow.source, flow.target)
        flow_props = flows.get((flow.source, flow.target), {})
        base = _flow_config(flow.source, flow.target, top, cluster, flow_props)
        for kind in kinds:
            own = _of_connector(kind, flow, top, cluster, flow_props, base)
            own = {k: v for k, v in own.items() if kind in readers(k) and k not in _NOT_CONNECTOR}
            own = {"source.cluster.alias": flow.source, "target.cluster.alias": flow.target, **own}
            name = f"{flow.source}-to-{flow.target}-{kind}".lower()
            if kind == "source" and flow.source_connector_name != MIRROR_SOURCE_CONNECTOR:
                name = flow.source_connector_name  # the name Connect keys the flow's source offsets by
            out.connectors.append(Connector(name=name, kind=kind, config=own, file=file, shape="mm2.properties"))
    return out


def _of_connector(
    kind: str,
    flow: FlowConfig,
    top: Mapping[str, str],
    cluster: Mapping[str, Mapping[str, str]],
    flow_props: Mapping[str, str],
    base: dict[str, str],
) -> dict[str, str]:
    """Return the flow's connector config as ``kind`` gets it: with its own clients (``S->T.mirrorspark.<kind>.*``)."""
    own = _prefixed(flow_props, f"{MIRRORSPARK_PREFIX}{kind}.") if kind in CONNECTOR_CLIENT_KINDS else {}
    if not own:
        return {k: v for k, v in base.items() if not k.startswith(CONNECTOR_CLIENT_PREFIXES)}
    rest = {k: v for k, v in flow_props.items() if not consumed_by_clients(k) or k.startswith("producer.override.")}
    return _flow_config(flow.source, flow.target, top, cluster, {**rest, **own})


def _kinds(config: MirrorConfig, s: str, t: str) -> list[ConnectorKind]:
    flow = config.flow(s, t)
    wanted = {
        "source": flow.enabled,
        "checkpoint": flow.enabled and flow.emit_checkpoints_enabled,
        "heartbeat": flow.emit_heartbeats_enabled,
    }
    return [k for k in KINDS if wanted[k]]


def _classify(
    props: Mapping[str, str], aliases: tuple[str, ...]
) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[tuple[str, str], dict[str, str]]]:
    """Split keys into top-level, ``<alias>.*`` and ``S->T.*`` (prefixes removed), as MM2 does."""
    top: dict[str, str] = {}
    cluster: dict[str, dict[str, str]] = {a: {} for a in aliases}
    flows: dict[tuple[str, str], dict[str, str]] = {}
    for key, value in props.items():
        head, dot, rest = key.strip().partition(".")
        s, arrow, t = head.partition("->")
        if dot and arrow and s in cluster and t in cluster:
            flows.setdefault((s, t), {})[rest] = value
        elif dot and head in cluster:
            cluster[head][rest] = value
        else:
            top[key.strip()] = value
    return top, cluster, flows


def _dropped(key: str, aliases: tuple[str, ...]) -> bool:
    if key == "clusters":
        return False
    head, _, rest = key.partition(".")
    if head in aliases:
        kept = (SCHEMA_REGISTRY_PREFIX, *(f"{r}." for r in ROLES))
        return not is_client_key(rest) and not rest.startswith(kept)
    if key.startswith(MIRRORSPARK_PREFIX):
        return True
    ck = KEYS.get(key)
    return ck is not None and ck.scope in ("driver", "worker")


def _is_connector_key(key: str) -> bool:
    ck = KEYS.get(key)
    if ck is not None:
        return ck.scope in ("connector", "flow") and key not in _NOT_CONNECTOR
    return key.startswith(_CONNECTOR_PREFIXES)


def _flow_config(
    s: str, t: str, top: Mapping[str, str], cluster: Mapping[str, Mapping[str, str]], flow: Mapping[str, str]
) -> dict[str, str]:
    """Compose the connector config of flow ``S->T`` before it is split by kind (chain in the module docstring)."""
    out = {k: v for k, v in top.items() if _is_connector_key(k)}
    for side, alias in zip(SIDES, (s, t), strict=True):
        for k, v in {**top, **cluster[alias]}.items():
            if is_client_key(k) or (k.startswith(SCHEMA_REGISTRY_PREFIX) and k in cluster[alias]):
                out[f"{side}.cluster.{k}"] = v
        for role in ROLES:
            for k, v in {**_prefixed(cluster[alias], f"{role}."), **_prefixed(top, f"{side}.{role}.")}.items():
                out[f"{side}.{role}.{k}"] = v
    for role in ROLES:
        out.update({f"{role}.{k}": v for k, v in _prefixed(top, f"{role}.").items() if f"{role}.{k}" not in KEYS})
    out.update(flow)
    return out


def _prefixed(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix) and len(k) > len(prefix)}


__all__ = ["Connectors", "properties_to_connectors"]
