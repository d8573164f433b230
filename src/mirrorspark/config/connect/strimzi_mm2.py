"""A Strimzi ``KafkaMirrorMaker2`` resource expanded into the connectors the Strimzi operator creates.

Follows Strimzi's ``KafkaMirrorMaker2Connectors`` (``kafka.strimzi.io/v1beta2``): per ``spec.mirrors[]``
entry and per connector given (``sourceConnector``, ``checkpointConnector``, ``heartbeatConnector``) one
connector named ``<source>-><target>.Mirror<Kind>Connector``, whose config is the clusters'
``source.cluster.alias`` / ``bootstrap.servers`` (and the client keys of each cluster's ``config``), then
the connector's own ``config``, then ``topicsPattern`` -> ``topics``, ``topicsExcludePattern`` ->
``topics.exclude``, ``groupsPattern`` -> ``groups``, ``groupsExcludePattern`` -> ``groups.exclude``;
``tasksMax`` -> ``tasks.max``. A cluster's other ``config`` keys (for ``connectCluster``: the Connect
worker's settings, e.g. ``offset.storage.topic``) become cluster-level ``<alias>.<key>`` mm2.properties keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from mirrorspark.config.connect.documents import LineDict, line_of
from mirrorspark.config.connect.model import CONNECTOR_CLASSES, Connector, ConnectorKind
from mirrorspark.config.connect.shapes import ConnectInput, config_value, string_config
from mirrorspark.config.keys import is_client_key
from mirrorspark.errors import ConfigError

_CONNECTOR_FIELDS: Final[dict[str, ConnectorKind]] = {
    "sourceConnector": "source",
    "checkpointConnector": "checkpoint",
    "heartbeatConnector": "heartbeat",
}
_PATTERNS: Final = {
    "topicsPattern": "topics",
    "topicsExcludePattern": "topics.exclude",
    "groupsPattern": "groups",
    "groupsExcludePattern": "groups.exclude",
}


def expand_mirror_maker2(doc: dict[str, Any], file: str, found: ConnectInput, warn: Callable[[str], None]) -> None:
    """Add the connectors (and cluster-level keys) of one ``KafkaMirrorMaker2`` document to ``found``.

    Raises ConfigError (``spec.clusters`` or ``spec.mirrors`` is missing or malformed, a mirror names an alias not in
    ``spec.clusters``, or a cluster uses ``tls``/``authentication`` (Kubernetes secrets mirrorspark cannot read)).
    """
    spec = doc.get("spec")
    if (
        not isinstance(spec, dict)
        or not isinstance(spec.get("clusters"), list)
        or not isinstance(spec.get("mirrors"), list)
    ):
        raise ConfigError(f"{file}: a KafkaMirrorMaker2 needs 'spec.clusters' and 'spec.mirrors' lists")
    clusters = {str(c.get("alias")): c for c in spec["clusters"] if isinstance(c, dict)}
    for alias, cluster in clusters.items():
        _check_cluster(alias, cluster, file)
        _cluster_keys(alias, cluster, file, found)
    for mirror in spec["mirrors"]:
        if not isinstance(mirror, dict):
            raise ConfigError(f"{file}: each entry of 'spec.mirrors' must be a mapping")
        s, t = str(mirror.get("sourceCluster", "")), str(mirror.get("targetCluster", spec.get("connectCluster", "")))
        for alias in (s, t):
            if alias not in clusters:
                raise ConfigError(
                    f"{file}: a mirror names cluster '{alias}', which is not in 'spec.clusters' "
                    f"(known: {', '.join(clusters)}); add it or fix 'sourceCluster'/'targetCluster'"
                )
        if t != spec.get("connectCluster", t):
            warn(f"{file}: mirror {s}->{t} targets a cluster other than 'connectCluster'; Strimzi requires them equal")
        for field_name, kind in _CONNECTOR_FIELDS.items():
            if isinstance(mirror.get(field_name), dict):
                found.connectors.append(_connector(kind, mirror, field_name, clusters[s], clusters[t], file))


def _check_cluster(alias: str, cluster: dict[str, Any], file: str) -> None:
    if not isinstance(cluster.get("bootstrapServers"), str):
        raise ConfigError(f"{file}: cluster '{alias}' of 'spec.clusters' has no 'bootstrapServers'; add it")
    for secret_field in ("tls", "authentication"):
        if cluster.get(secret_field):
            raise ConfigError(
                f"{file}: cluster '{alias}' sets '{secret_field}', whose certificates and passwords Strimzi reads "
                "from Kubernetes secrets mirrorspark cannot read: mount them as files and set the cluster's "
                "'config' (security.protocol, ssl.truststore.location, sasl.jaas.config with ${file:...} ...) instead"
            )


def _cluster_keys(alias: str, cluster: dict[str, Any], file: str, found: ConnectInput) -> None:
    """Add a cluster's non-client ``config`` keys as ``<alias>.<key>`` (``connectCluster``: its worker's)."""
    config = cluster.get("config") or {}
    for key, value in string_config(config, f"{file}: cluster '{alias}'").items():
        if not is_client_key(key):
            found.cluster_props[f"{alias}.{key}"] = value
            line = line_of(config, key)
            found.cluster_origins[f"{alias}.{key}"] = f"{file}{'' if line is None else f':{line}'}"


def _side(cluster: dict[str, Any], prefix: str) -> tuple[dict[str, str], dict[str, int]]:
    """Return the ``<prefix>alias``, ``<prefix>bootstrap.servers`` and client keys of one cluster, with their lines."""
    config = cluster.get("config") or LineDict()
    values = {f"{prefix}alias": str(cluster["alias"]), f"{prefix}bootstrap.servers": str(cluster["bootstrapServers"])}
    lines = {
        f"{prefix}alias": line_of(cluster, "alias"),
        f"{prefix}bootstrap.servers": line_of(cluster, "bootstrapServers"),
    }
    for key, value in string_config(config, f"cluster '{cluster['alias']}'").items():
        if is_client_key(key):
            values[prefix + key] = value
            lines[prefix + key] = line_of(config, key)
    return values, {k: n for k, n in lines.items() if n is not None}


def _connector(
    kind: ConnectorKind,
    mirror: dict[str, Any],
    field_name: str,
    source: dict[str, Any],
    target: dict[str, Any],
    file: str,
) -> Connector:
    spec = mirror[field_name]
    config, lines = _side(target, "target.cluster.")
    source_values, source_lines = _side(source, "source.cluster.")
    config.update(source_values)
    lines.update(source_lines)
    own = spec.get("config") or LineDict()
    name = f"{source['alias']}->{target['alias']}.{CONNECTOR_CLASSES[kind].rsplit('.', 1)[-1]}"
    config.update(string_config(own, f"{file}: connector '{name}'"))
    lines.update(own.lines if isinstance(own, LineDict) else {})
    for pattern, key in _PATTERNS.items():
        if mirror.get(pattern) is not None:
            config[key] = config_value(mirror[pattern], f"{file}: mirror {name}: '{pattern}'")
            line = line_of(mirror, pattern)
            if line is not None:
                lines[key] = line
    if spec.get("tasksMax") is not None:
        config["tasks.max"] = config_value(spec["tasksMax"], f"{file}: connector '{name}': 'tasksMax'")
    return Connector(name=name, kind=kind, config=config, file=file, lines=lines, shape="KafkaMirrorMaker2")


__all__ = ["expand_mirror_maker2"]
