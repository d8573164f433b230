"""A connector as Kafka Connect holds it: name, kind, flat string config, where it was written."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

ConnectorKind = Literal["source", "checkpoint", "heartbeat"]
"""Which of MM2's three connectors: ``Mirror{Source,Checkpoint,Heartbeat}Connector``."""

MIRROR_PACKAGE: Final = "org.apache.kafka.connect.mirror"
CONNECTOR_CLASSES: Final[dict[ConnectorKind, str]] = {
    "source": f"{MIRROR_PACKAGE}.MirrorSourceConnector",
    "checkpoint": f"{MIRROR_PACKAGE}.MirrorCheckpointConnector",
    "heartbeat": f"{MIRROR_PACKAGE}.MirrorHeartbeatConnector",
}
KINDS: Final[tuple[ConnectorKind, ...]] = ("source", "checkpoint", "heartbeat")


def kind_of_class(name: str) -> ConnectorKind | None:
    """Return the connector kind of a ``connector.class`` value, or ``None`` for a class that is not one of MM2's."""
    simple = name.strip().rsplit(".", 1)[-1]
    for kind, cls in CONNECTOR_CLASSES.items():
        full_simple = cls.rsplit(".", 1)[-1]
        if name.strip() == cls or simple in (full_simple, full_simple.removesuffix("Connector")):
            return kind
    return None


@dataclass(frozen=True, kw_only=True)
class Connector:
    """One MM2 connector of a Kafka Connect deployment (a ``KafkaConnector``, a REST body, a ``KafkaMirrorMaker2``)."""

    name: str
    kind: ConnectorKind
    config: dict[str, str]
    file: str
    lines: dict[str, int] = field(default_factory=dict)
    shape: str = "Connect REST"
    line: int | None = None

    @property
    def source(self) -> str:
        """``source.cluster.alias`` (stripped; ``""`` if missing)."""
        return self.config.get("source.cluster.alias", "").strip()

    @property
    def target(self) -> str:
        """``target.cluster.alias``, MM2's default ``target`` if missing (``MirrorConnectorConfig``)."""
        return self.config.get("target.cluster.alias", "target").strip()

    def where(self, key: str | None = None) -> str:
        """``"connector '<name>' (<file>:<line>)"``, the line of ``key`` when known."""
        line = self.lines.get(key, self.line) if key is not None else self.line
        return f"connector '{self.name}' ({self.file}{'' if line is None else f':{line}'})"


@dataclass(frozen=True)
class WorkerConfig:
    """A Kafka Connect worker's config (``connect-distributed.properties`` or a Strimzi ``KafkaConnect``)."""

    file: str
    config: dict[str, str]
    lines: dict[str, int] = field(default_factory=dict)

    def where(self, key: str | None = None) -> str:
        """Return ``"the Connect worker config <file>:<line>"``, the line of ``key`` when known."""
        line = self.lines.get(key) if key is not None else None
        return f"the Connect worker config {self.file}{'' if line is None else f':{line}'}"


__all__ = [
    "CONNECTOR_CLASSES",
    "KINDS",
    "MIRROR_PACKAGE",
    "Connector",
    "ConnectorKind",
    "WorkerConfig",
    "kind_of_class",
]
