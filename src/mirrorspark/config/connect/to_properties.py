"""Connector configs converted into the flat mm2.properties map :func:`~mirrorspark.config.parse.parse_config` takes.

Per replication flow ``S->T`` (the connectors sharing ``source.cluster.alias`` = S and ``target.cluster.alias``
= T): each connector key ``k`` becomes ``S->T.k`` (taken from the connector that reads it,
:mod:`~mirrorspark.config.connect.ownership`), so the client chain of
:mod:`~mirrorspark.config.client_chain` composes each client as ``MirrorConnectorConfig`` does:
``<side>.cluster.<client key>`` -> ``<role>.*`` -> ``<side>.<role>.*``. Besides:

* ``clusters`` lists every alias; ``<alias>.bootstrap.servers`` are the servers most connectors' clients of the
  alias reach (connectors reaching it at different ones are warned about), and every other client key
  (``security.protocol``, ``ssl.*``, ``sasl.*``) on which all connectors naming the alias agree becomes
  ``<alias>.<key>`` (cluster-wide tools then reach the cluster too);
* each connector runs its own clients, as under Connect: the flow's client keys (``S->T.<side>.cluster.*``,
  ``S->T.<role>.*``, ``S->T.<side>.<role>.*``) are the source connector's (else the first connector's), and a
  checkpoint or heartbeat connector whose client keys differ gets all of its own as
  ``S->T.mirrorspark.<kind>.<key>`` (issue #37 item 7);
* ``S->T.enabled = true`` iff the flow has a source connector (not ``enabled = false``); without one the flow
  copies nothing (``S->T.enabled = false``), and a checkpoint connector without a source connector is warned about;
* no checkpoint connector: ``S->T.emit.checkpoints.enabled = false`` and ``S->T.sync.group.offsets.enabled = false``;
* every ordered pair of aliases without a heartbeat connector: ``S->T.emit.heartbeats.enabled = false``
  (MM2's dedicated mode would emit heartbeats for every pair);
* ``defaults = "csm"``: ``S->T.sync.group.offsets.enabled = true`` where the checkpoint connector leaves it unset
  (Cloudera Streams Messaging Operator's default; Apache Kafka's is ``false``);
* the source connector's ``name`` becomes ``S->T.mirrorspark.source.connector.name`` (unless it is MM2's
  ``MirrorSourceConnector``): Connect keys the flow's source offsets by it, so mirrorspark resumes from
  what Connect committed and Connect from what mirrorspark committed;
* a connector's ``source.cluster.schema.registry.*`` and ``target.cluster.schema.registry.*`` keys (its clusters'
  Schema Registries, ``<side>.cluster.`` as for every other cluster key) become ``<alias>.schema.registry.*``: a
  cluster has one registry, so connectors naming the alias that set one key differently are refused;
  ``sync.schemas.enabled`` and ``sync.schemas.unknown.ids`` are the source connector's, ``S->T.`` as its other keys;
* ``name``, ``connector.class``, the aliases, ``enabled`` and the converters (checked to be
  ``ByteArrayConverter``) are consumed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from mirrorspark.config.client_chain import consumed_by_clients
from mirrorspark.config.connect.checks import CONVERTER_KEYS, check_connector, check_one_per_kind, check_topics_agree
from mirrorspark.config.connect.model import KINDS, Connector, ConnectorKind, WorkerConfig
from mirrorspark.config.connect.ownership import readers
from mirrorspark.config.connect.shapes import ConnectInput
from mirrorspark.config.connect.worker import worker_properties
from mirrorspark.config.keys import MIRRORSPARK_PREFIX, ROLES, SCHEMA_REGISTRY_PREFIX, SIDES, is_client_key
from mirrorspark.errors import ConfigError
from mirrorspark.mm2.records import MIRROR_SOURCE_CONNECTOR

ConnectDefaults = Literal["apache", "csm"]
"""Whose defaults connector configs are read with: Apache Kafka's, or Cloudera CSM Operator's."""
DEFAULTS: Final[tuple[ConnectDefaults, ...]] = ("apache", "csm")
CONNECTOR_NAME_KEY: Final = "mirrorspark.source.connector.name"
"""The flow key the source connector's name becomes."""
SERVERS: Final = "bootstrap.servers"
_CONSUMED: Final = frozenset({"name", "connector.class", "source.cluster.alias", "target.cluster.alias", "enabled"})


@dataclass
class ConvertedProperties:
    """mm2.properties keys converted from connector configs."""

    props: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    flows: dict[tuple[str, str], dict[ConnectorKind, Connector]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def connectors_to_properties(
    connectors: Iterable[Connector],
    *,
    defaults: ConnectDefaults = "apache",
    cluster_props: Mapping[str, str] | None = None,
    cluster_origins: Mapping[str, str] | None = None,
    workers: Sequence[WorkerConfig] = (),
) -> ConvertedProperties:
    """Convert MM2 connector configs into mm2.properties keys (rules in the module docstring).

    Raises ConfigError for no connector, one without ``source.cluster.alias``, a converter other than
    ``ByteArrayConverter``, an unresolvable placeholder, a flow's connectors that clash, or an alias without servers.
    """
    if defaults not in DEFAULTS:
        raise ConfigError(f"unknown connector defaults {defaults!r}: use 'apache' or 'csm'")
    out = ConvertedProperties()
    for c in connectors:
        check_connector(c)
        out.flows.setdefault((c.source, c.target), {})
    if not out.flows:
        raise ConfigError(
            "no MM2 connector found: add a MirrorSourceConnector (and its checkpoint and heartbeat connectors)"
        )
    for pair in out.flows:
        out.flows[pair] = check_one_per_kind(c for c in connectors if (c.source, c.target) == pair)
    aliases = _aliases(out.flows)
    out.props["clusters"] = ", ".join(aliases)
    lifted = _cluster_keys(aliases, out)
    out.props.update(cluster_props or {})
    out.origins.update({k: f"'{k}' ({w})" for k, w in (cluster_origins or {}).items()})
    _worker_keys(list(workers), aliases, connectors, out)
    for (s, t), by_kind in out.flows.items():
        _flow(s, t, by_kind, lifted, defaults, out)
    for s in aliases:
        for t in aliases:
            if s != t and "heartbeat" not in out.flows.get((s, t), {}):
                out.props[f"{s}->{t}.emit.heartbeats.enabled"] = "false"
    return out


def _aliases(flows: Mapping[tuple[str, str], object]) -> list[str]:
    seen: dict[str, None] = {}
    for s, t in flows:
        seen.setdefault(s)
        seen.setdefault(t)
    return list(seen)


def input_to_properties(found: ConnectInput, *, defaults: ConnectDefaults = "apache") -> ConvertedProperties:
    """Convert what a file or folder of connector configs holds (:func:`connectors_to_properties` on its parts)."""
    return connectors_to_properties(
        found.connectors,
        defaults=defaults,
        cluster_props=found.cluster_props,
        cluster_origins=found.cluster_origins,
        workers=found.workers,
    )


def _worker_keys(
    workers: list[WorkerConfig], aliases: list[str], connectors: Iterable[Connector], out: ConvertedProperties
) -> None:
    """Write the Connect workers' keys as their clusters' keys (:func:`.worker.worker_properties`)."""
    if not workers:
        return
    servers = {a: out.props[f"{a}.bootstrap.servers"] for a in aliases}
    props, origins = worker_properties(workers, servers, list(connectors))
    for key, value in props.items():
        if is_client_key(key.split(".", 1)[1]) and key in out.props:
            continue
        out.props[key] = value
        out.origins[key] = f"'{key}' ({origins[key]})"


def _naming(
    alias: str, flows: Mapping[tuple[str, str], Mapping[ConnectorKind, Connector]]
) -> list[tuple[str, Connector]]:
    """``(side, connector)`` for every connector naming ``alias`` as its source or target cluster."""
    return [
        (side, c)
        for (s, t), by_kind in flows.items()
        for c in by_kind.values()
        for side, a in zip(SIDES, (s, t), strict=True)
        if a == alias
    ]


def _cluster_keys(aliases: list[str], out: ConvertedProperties) -> dict[tuple[str, str], str]:
    """Write ``<alias>.bootstrap.servers`` and the client keys all connectors agree on; return the values lifted.

    Raises ConfigError (no connector gives an alias bootstrap servers).
    """
    lifted: dict[tuple[str, str], str] = {}
    for alias in aliases:
        naming = _naming(alias, out.flows)
        values: dict[str, dict[str, tuple[str, Connector, str]]] = {}
        for side, c in naming:
            for key, value in c.config.items():
                prefix = f"{side}.cluster."
                if key.startswith(prefix) and is_client_key(key[len(prefix) :]) and key[len(prefix) :] != SERVERS:
                    values.setdefault(key[len(prefix) :], {})[c.name] = (value, c, side)
        servers, origin = _cluster_servers(alias, naming, out)
        out.props[f"{alias}.{SERVERS}"], out.origins[f"{alias}.{SERVERS}"] = servers, origin
        lifted[(alias, SERVERS)] = servers
        _registry_keys(alias, naming, out)
        for key, by_connector in values.items():
            if len(by_connector) == len(naming) and len({v.strip() for v, _, _ in by_connector.values()}) == 1:
                value, first, side = next(iter(by_connector.values()))
                out.props[f"{alias}.{key}"] = value
                out.origins[f"{alias}.{key}"] = _origin(first, f"{side}.cluster.{key}")
                lifted[(alias, key)] = value.strip()
    return lifted


def _registry_keys(alias: str, naming: list[tuple[str, Connector]], out: ConvertedProperties) -> None:
    """Write the ``<side>.cluster.schema.registry.*`` keys of the connectors naming ``alias`` as its own.

    Raises ConfigError (two connectors set one key differently; the message names both, never the values).
    """
    taken: dict[str, tuple[Connector, str]] = {}
    for side, c in naming:
        prefix = f"{side}.cluster."
        for key, value in c.config.items():
            if not _is_registry(key) or not key.startswith(prefix):
                continue
            name = key[len(prefix) :]
            first = taken.setdefault(name, (c, key))
            if first[0].config[first[1]].strip() != value.strip():
                raise ConfigError(
                    f"{first[0].where(first[1])} and {c.where(key)} give cluster '{alias}' different values of "
                    f"'{name}': a cluster has one Schema Registry, so give every connector naming it the same"
                )
            out.props[f"{alias}.{name}"], out.origins[f"{alias}.{name}"] = value, _origin(*first)


def _is_registry(key: str) -> bool:
    """Whether ``key`` is a connector's cluster registry key, ``<side>.cluster.schema.registry.*``."""
    return key.startswith(tuple(f"{side}.cluster.{SCHEMA_REGISTRY_PREFIX}" for side in SIDES))


def _cluster_servers(alias: str, naming: list[tuple[str, Connector]], out: ConvertedProperties) -> tuple[str, str]:
    """Return the bootstrap servers of cluster ``alias`` and where they are written.

    Raises ConfigError (no connector gives the alias bootstrap servers).
    """
    votes: dict[str, list[tuple[Connector, str]]] = {}
    for side, c in naming:
        for servers, key in _reached(c, side).items():
            votes.setdefault(servers, []).append((c, key))
    if not votes:
        names = ", ".join(c.where() for _, c in naming)
        raise ConfigError(
            f"no connector gives cluster '{alias}' bootstrap servers ({names}); set 'source.cluster.bootstrap.servers' "
            "or 'target.cluster.bootstrap.servers' in its connectors"
        )
    best = max(votes, key=lambda v: len(votes[v]))
    if len(votes) > 1:
        reach = "; ".join(f"{', '.join(c.where(k) for c, k in by)} at {v}" for v, by in votes.items())
        out.warnings.append(
            f"the connectors reach cluster '{alias}' at different bootstrap servers ({reach}): mirrorspark runs "
            f"each connector's clients with its own settings, as Connect does, and its tools reach '{alias}' at "
            f"{best}; make sure every address is the same Kafka cluster"
        )
    c, key = votes[best][0]
    return best, _origin(c, key)


def _reached(c: Connector, side: str) -> dict[str, str]:
    """Return the bootstrap servers ``c``'s clients of ``side`` reach, with the keys giving them.

    ``MirrorConnectorConfig`` composes each from ``<side>.cluster.*``, then ``<role>.*``, then ``<side>.<role>.*``.
    """
    reached: dict[str, str] = {}
    for role in ROLES:
        for key in (f"{side}.{role}.{SERVERS}", f"{role}.{SERVERS}", f"{side}.cluster.{SERVERS}"):
            servers = _servers(c.config.get(key, ""))
            if servers:
                reached.setdefault(servers, key)
                break
    return reached


def _servers(value: str) -> str:
    return ",".join(s.strip() for s in value.split(",") if s.strip())


def _origin(c: Connector, key: str) -> str:
    line = c.lines.get(key)
    return f"'{key}' of connector '{c.name}' ({c.file}{'' if line is None else f':{line}'})"


def _flow(
    s: str,
    t: str,
    by_kind: Mapping[ConnectorKind, Connector],
    lifted: Mapping[tuple[str, str], str],
    defaults: ConnectDefaults,
    out: ConvertedProperties,
) -> None:
    """Write the ``S->T.*`` keys of one replication flow."""
    source, checkpoint = by_kind.get("source"), by_kind.get("checkpoint")
    if source is not None and checkpoint is not None:
        check_topics_agree(source, checkpoint)
    if checkpoint is not None and not _enabled(checkpoint):
        checkpoint = None  # MirrorCheckpointConnector with enabled=false emits nothing
    active = {k: c for k, c in by_kind.items() if k != "checkpoint" or checkpoint is not None}
    out.props[f"{s}->{t}.enabled"] = "true" if source is not None and _enabled(source) else "false"
    if source is not None and source.name != MIRROR_SOURCE_CONNECTOR:
        # Connect keys the flow's source offsets by the connector's name: mirrorspark reads and writes them so
        out.props[f"{s}->{t}.{CONNECTOR_NAME_KEY}"] = source.name
        out.origins[f"{s}->{t}.{CONNECTOR_NAME_KEY}"] = f"the name of connector '{source.name}' ({source.file})"
    for key, c in _merged(s, t, active, out).items():
        out.props[f"{s}->{t}.{key}"] = c.config[key]
        out.origins[f"{s}->{t}.{key}"] = _origin(c, key)
    _clients(s, t, active, lifted, out)
    if checkpoint is None:
        out.props[f"{s}->{t}.emit.checkpoints.enabled"] = "false"
        out.props[f"{s}->{t}.sync.group.offsets.enabled"] = "false"
    elif defaults == "csm":
        out.props.setdefault(f"{s}->{t}.sync.group.offsets.enabled", "true")
    if source is None and checkpoint is not None:
        out.warnings.append(
            f"{checkpoint.where()} has no source connector for replication flow {s}->{t}: mirrorspark copies nothing "
            f"and emits no checkpoints for {s}->{t} ('{s}->{t}.enabled = false'); translate group offsets from the "
            "offset syncs already written with 'mirrorspark offsets translate', or add the flow's source connector"
        )


def _enabled(c: Connector) -> bool:
    return c.config.get("enabled", "true").strip().lower() != "false"


def _merged(
    s: str, t: str, active: Mapping[ConnectorKind, Connector], out: ConvertedProperties
) -> dict[str, Connector]:
    """Per flow key but the client keys (:func:`_clients`), the connector it is taken from (``readers``)."""
    taken: dict[str, Connector] = {}
    for kind in KINDS:
        c = active.get(kind)
        if c is None:
            continue
        for key in c.config:
            if key in _CONSUMED or key.startswith(CONVERTER_KEYS) or _is_client(key) or _is_registry(key):
                continue
            if kind not in readers(key):
                continue
            first = taken.get(key)
            if first is None:
                taken[key] = c
            elif first.config[key].strip() != c.config[key].strip():
                out.warnings.append(
                    f"{first.where(key)} and {c.where(key)} set '{key}' differently; mirrorspark runs one "
                    f"{key.split('.')[0]} setting per replication flow and uses {first.name}'s"
                )
    return taken


def _clients(
    s: str,
    t: str,
    active: Mapping[ConnectorKind, Connector],
    lifted: Mapping[tuple[str, str], str],
    out: ConvertedProperties,
) -> None:
    """Write the flow's client keys (its first connector's: the source connector's) and each other connector's own."""
    kinds = [k for k in KINDS if k in active]
    if not kinds:
        return
    first = active[kinds[0]]
    flow = _own_clients(first, s, t, lifted)
    for key, value in flow.items():
        out.props[f"{s}->{t}.{key}"], out.origins[f"{s}->{t}.{key}"] = value, _origin(first, key)
    for kind in kinds[1:]:
        c = active[kind]
        own = _own_clients(c, s, t, lifted)
        if _normal(own) == _normal(flow):
            continue
        if not own:  # its clients are its clusters': said with its source cluster's bootstrap servers
            key = f"source.cluster.{SERVERS}"
            own = {key: c.config.get(key) or out.props[f"{s}.{SERVERS}"]}
        for key, value in own.items():
            scoped = f"{s}->{t}.{MIRRORSPARK_PREFIX}{kind}.{key}"
            out.props[scoped] = value
            out.origins[scoped] = _origin(c, key) if key in c.config else out.origins[f"{s}.{SERVERS}"]


def _own_clients(c: Connector, s: str, t: str, lifted: Mapping[tuple[str, str], str]) -> dict[str, str]:
    """Return ``c``'s client keys but those of its clusters' values (written as ``<alias>.<key>``)."""
    own: dict[str, str] = {}
    for key, value in c.config.items():
        if key in _CONSUMED or not _is_client(key):
            continue
        side = next((sd for sd in SIDES if key.startswith(f"{sd}.cluster.")), None)
        if side is not None:
            name = key[len(side) + len(".cluster.") :]
            kept = lifted.get((s if side == "source" else t, name))
            if kept is not None and kept == (_servers(value) if name == SERVERS else value.strip()):
                continue
        own[key] = value
    return own


def _is_client(key: str) -> bool:
    """Whether ``key`` composes a client (``<side>.cluster.<client key>``, ``<role>.*``, ``<side>.<role>.*``)."""
    return consumed_by_clients(key) and not key.startswith("producer.override.")


def _normal(clients: Mapping[str, str]) -> dict[str, str]:
    return {k: _servers(v) if k.endswith(SERVERS) else v.strip() for k, v in clients.items()}


__all__ = ["DEFAULTS", "ConnectDefaults", "ConvertedProperties", "connectors_to_properties", "input_to_properties"]
