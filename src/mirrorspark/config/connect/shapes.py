"""The shapes connector configs come in: Strimzi ``KafkaConnector``, Kafka Connect REST bodies, ``KafkaMirrorMaker2``.

Each YAML/JSON document is recognised by its content, not its file name:

* ``kind: KafkaConnector`` (``metadata.name``, ``spec.class``, ``spec.tasksMax``, ``spec.config``);
* ``kind: KafkaMirrorMaker2`` (:mod:`~mirrorspark.config.connect.strimzi_mm2`);
* ``kind: List`` with ``items`` (``kubectl get -o yaml``): each item;
* ``{"name": ..., "config": {...}}``: a ``POST /connectors`` body or a ``GET /connectors/<name>`` answer;
* ``{"connector.class": ..., "name": ..., ...}``: a ``PUT /connectors/<name>/config`` body;
* ``{"<name>": {"info": {"name": ..., "config": {...}}, ...}, ...}``: ``GET /connectors?expand=info``;
* a list of REST bodies.

Documents of another ``kind`` (``KafkaConnect``, ``Secret`` ...) and connectors of other classes are skipped
with a warning, so a folder of Kubernetes manifests can be read as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from mirrorspark.config.connect.documents import LineDict, line_of
from mirrorspark.config.connect.model import Connector, WorkerConfig, kind_of_class
from mirrorspark.errors import ConfigError

ACCEPTED_SHAPES: Final = (
    "Strimzi KafkaConnector documents (kind: KafkaConnector, spec.class, spec.config), a Strimzi "
    'KafkaMirrorMaker2 document, Kafka Connect REST JSON ({"name": ..., "config": {...}}, a list of those, '
    "or the GET /connectors?expand=info answer), or an mm2.properties file"
)


@dataclass
class ConnectInput:
    """What a file or folder of connector configs holds."""

    connectors: list[Connector] = field(default_factory=list)
    cluster_props: dict[str, str] = field(default_factory=dict)
    cluster_origins: dict[str, str] = field(default_factory=dict)
    workers: list[WorkerConfig] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def config_value(value: Any, what: str) -> str:
    """Return a YAML/JSON config value as the string Connect holds: ``true``/``false``, numbers as written.

    Raises ConfigError (the value is a list, a mapping or null; ``what`` names the connector and key).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    kind = "null" if value is None else type(value).__name__
    raise ConfigError(f"{what} is a {kind}: connector config values are strings, numbers or booleans; fix the value")


def string_config(config: Any, where: str) -> dict[str, str]:
    """Return a connector's ``config`` mapping with every value a string (:func:`config_value`)."""
    if not isinstance(config, dict):
        raise ConfigError(f"{where}: 'config' must be a mapping of keys to values")
    return {str(k): config_value(v, f"{where}: '{k}'") for k, v in config.items()}


def make_connector(
    name: Any, cls: Any, config: Any, file: str, shape: str, warn: Callable[[str], None], line: int | None = None
) -> Connector | None:
    """Return a :class:`Connector` of MM2's, or ``None`` (warned) for another class.

    Raises ConfigError (the name or class is missing, or a value is not a scalar).
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{file}: a {shape} connector has no name; give each connector a name")
    where = f"{file}: connector '{name}'"
    if not isinstance(cls, str) or not cls.strip():
        raise ConfigError(
            f"{where} has no connector class; set it (e.g. org.apache.kafka.connect.mirror.MirrorSourceConnector)"
        )
    kind = kind_of_class(cls)
    if kind is None:
        warn(f"connector '{name}' ({file}) of class '{cls}' is not one of MM2's connectors; skipped")
        return None
    values = string_config(config, where)
    lines = dict(config.lines) if isinstance(config, LineDict) else {}
    for key in ("name", "connector.class"):
        values.pop(key, None)
    return Connector(name=name.strip(), kind=kind, config=values, file=file, lines=lines, shape=shape, line=line)


def kafka_connector(doc: dict[str, Any], file: str, warn: Callable[[str], None]) -> Connector | None:
    """Read a Strimzi ``KafkaConnector``: ``metadata.name``, ``spec.class``, ``spec.tasksMax`` over ``tasks.max``."""
    metadata, spec = doc.get("metadata") or {}, doc.get("spec") or {}
    if not isinstance(metadata, dict) or not isinstance(spec, dict):
        raise ConfigError(f"{file}: a KafkaConnector needs 'metadata' and 'spec' mappings")
    config = spec.get("config") or LineDict()
    line = line_of(metadata, "name")
    connector = make_connector(metadata.get("name"), spec.get("class"), config, file, "KafkaConnector", warn, line)
    if connector is not None and spec.get("tasksMax") is not None:
        connector.config["tasks.max"] = config_value(spec["tasksMax"], f"{connector.where()}: 'spec.tasksMax'")
        line = line_of(spec, "tasksMax")
        if line is not None:
            connector.lines["tasks.max"] = line
    return connector


def rest_body(doc: dict[str, Any], file: str, warn: Callable[[str], None]) -> Connector | None:
    """``{"name": ..., "config": {...}}``; the name inside ``config`` is Connect's too and must agree."""
    config = doc["config"]
    if isinstance(config, dict) and "name" in config and str(config["name"]) != str(doc["name"]):
        raise ConfigError(
            f"{file}: connector '{doc['name']}' has the name '{config['name']}' in its config; make them equal"
        )
    cls = config.get("connector.class") if isinstance(config, dict) else None
    return make_connector(doc["name"], cls, config, file, "Connect REST", warn, line_of(doc, "name"))


def is_rest_body(doc: Any) -> bool:
    """Whether ``doc`` is ``{"name": ..., "config": {...}}`` (extra keys such as ``tasks`` and ``type`` allowed)."""
    return isinstance(doc, dict) and isinstance(doc.get("name"), str) and isinstance(doc.get("config"), dict)


def is_expand_info(doc: Any) -> bool:
    """Whether ``doc`` is ``GET /connectors?expand=info``: every value a mapping with an ``info`` REST body."""
    return (
        isinstance(doc, dict)
        and bool(doc)
        and all(isinstance(v, dict) and is_rest_body(v.get("info")) for v in doc.values())
    )


__all__ = [
    "ACCEPTED_SHAPES",
    "ConnectInput",
    "config_value",
    "is_expand_info",
    "is_rest_body",
    "kafka_connector",
    "make_connector",
    "rest_body",
    "string_config",
]
