"""The Kafka Connect worker's own config beside the connectors: where Connect keeps the source offsets.

Connector configs say what to copy; the worker running them says where their source offsets live
(``offset.storage.topic`` on the worker's cluster), how often they are committed
(``offset.flush.interval.ms``), whether transactions are used (``exactly.once.source.support``), under which
transactional ids (``group.id``) and with how many tasks before (``config.storage.topic``), and how the
data producer is set (``producer.*``: a source connector's records are produced by the worker). mirrorspark
reads the worker's config from

* a ``*.properties`` file in the folder of connector configs holding ``bootstrap.servers`` and
  ``offset.storage.topic`` (a ``connect-distributed.properties``), or
* a Strimzi ``KafkaConnect`` document (``spec.bootstrapServers``, ``spec.config``) among the connector documents,

and applies it to the cluster alias whose bootstrap servers are the worker's (the target: MirrorSourceConnector's
records go to the worker's cluster), as mm2.properties' ``<alias>.<key>`` worker keys
(:func:`worker_properties`). So mirrorspark resumes from the offsets the worker committed, and the worker from
mirrorspark's (issue #25 item 5). Without it, an alias keeps MM2's dedicated-mode names
(``mm2-offsets.<source>.internal``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from mirrorspark.config.connect.checks import BYTE_ARRAY_CONVERTER, CONVERTER_KEYS
from mirrorspark.config.connect.documents import line_of, read_text
from mirrorspark.config.connect.model import Connector, WorkerConfig
from mirrorspark.config.connect.shapes import string_config
from mirrorspark.config.keys import is_client_key
from mirrorspark.config.properties import parse_properties_with_lines
from mirrorspark.errors import ConfigError

IGNORED_WORKER_KEYS: Final = frozenset(
    {"bootstrap.servers", "plugin.path", "listeners", "plugin.discovery", "client.id"}
)
"""Worker keys that tell mirrorspark nothing (REST, plugins); ``bootstrap.servers`` picks the alias.

``group.id`` and ``config.storage.topic`` are kept: exactly once, the copy tasks' transactional ids are
``<group.id>-<connector>-<task>`` and the previous task count is read from the config topic (KIP-618).
"""
_WORKER_MARKERS: Final = ("bootstrap.servers", "offset.storage.topic")


def read_worker_properties(path: Path) -> WorkerConfig | None:
    """Read a ``*.properties`` file of a folder of connector configs; ``None`` if it is no Connect worker config.

    Raises ConfigError naming the file when it cannot be read or parsed.
    """
    try:
        props, lines = parse_properties_with_lines(read_text(path))
    except ConfigError as e:
        raise ConfigError(f"{path}: {e.message}") from e
    if not all(k in props for k in _WORKER_MARKERS):
        return None
    return WorkerConfig(str(path), props, lines)


def kafka_connect_worker(doc: Mapping[str, Any], where: str) -> WorkerConfig:
    """Read a Strimzi ``KafkaConnect`` document's worker config (``spec.bootstrapServers`` and ``spec.config``).

    Raises ConfigError (``spec.bootstrapServers`` is missing, or a config value is not a scalar).
    """
    spec = doc.get("spec") or {}
    servers = spec.get("bootstrapServers")
    if not isinstance(servers, str):
        raise ConfigError(f"{where}: the KafkaConnect document has no 'spec.bootstrapServers'; add it")
    raw = spec.get("config") or {}
    config = {"bootstrap.servers": servers, **string_config(raw, f"{where}: KafkaConnect 'spec.config'")}
    lines = {k: n for k in config if (n := line_of(raw, k)) is not None}
    if (n := line_of(spec, "bootstrapServers")) is not None:
        lines["bootstrap.servers"] = n
    return WorkerConfig(where, config, lines)


def worker_properties(
    workers: list[WorkerConfig], cluster_servers: Mapping[str, str], connectors: list[Connector]
) -> tuple[dict[str, str], dict[str, str]]:
    """Return the mm2.properties keys of the workers' configs and where each was written.

    Raises ConfigError (a worker's ``bootstrap.servers`` are no alias's; two workers run on one alias; a worker's
    converter is not ``ByteArrayConverter`` and some connector does not set its own).
    """
    by_servers = {_servers(v): a for a, v in cluster_servers.items()}
    props: dict[str, str] = {}
    origins: dict[str, str] = {}
    seen: dict[str, WorkerConfig] = {}
    for w in workers:
        alias = by_servers.get(_servers(w.config["bootstrap.servers"]))
        if alias is None:
            known = ", ".join(f"{a}: {v}" for a, v in cluster_servers.items())
            raise ConfigError(
                f"{w.where('bootstrap.servers')}: its bootstrap.servers ({w.config['bootstrap.servers']}) are none "
                f"of the clusters the connectors name ({known}); a MirrorSourceConnector's records go to its "
                "worker's cluster: give the worker the target cluster's bootstrap servers"
            )
        if alias in seen:
            raise ConfigError(
                f"{seen[alias].where()} and {w.where()} are both workers of cluster '{alias}'; keep the config "
                "of the Connect cluster that runs the connectors"
            )
        seen[alias] = w
        _check_converters(w, connectors)
        for key, value in w.config.items():
            if key in IGNORED_WORKER_KEYS or key.startswith(CONVERTER_KEYS):
                continue
            name = f"{alias}.{key}"
            props[name] = value
            line = w.lines.get(key)
            origins[name] = f"{w.file}{'' if line is None else f':{line}'}"
            if is_client_key(key):
                origins[name] += " (the worker's; the connectors' own setting wins)"
    return props, origins


def _servers(value: str) -> str:
    return ",".join(sorted(s.strip() for s in value.split(",") if s.strip()))


def _check_converters(w: WorkerConfig, connectors: list[Connector]) -> None:
    for key in ("key.converter", "value.converter", "header.converter"):
        value = w.config.get(key, BYTE_ARRAY_CONVERTER).strip()
        if value in (BYTE_ARRAY_CONVERTER, BYTE_ARRAY_CONVERTER.rsplit(".", 1)[-1]):
            continue
        bare = [c for c in connectors if key not in c.config]
        if bare:
            raise ConfigError(
                f"{w.where(key)}: {key} = {value} applies to {bare[0].where()}, which sets none: it changes the "
                f"records' bytes, and mirrorspark copies them unchanged; set {key} = {BYTE_ARRAY_CONVERTER} in the "
                "connector (or the worker)"
            )


__all__ = [
    "IGNORED_WORKER_KEYS",
    "kafka_connect_worker",
    "read_worker_properties",
    "worker_properties",
]
