"""Per-connector clients of Connect input (issue #37 item 7): each connector's clients from its own config.

Kafka Connect runs each MM2 connector with the clients its own config composes (``MirrorConnectorConfig``:
``<side>.cluster.*`` -> ``<role>.*`` -> ``<side>.<role>.*``); a folder where only the source connector reaches
the source through ``source.consumer.*``/``source.admin.*``/``source.producer.*`` runs under Connect and so
under mirrorspark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mirrorspark.config.model import FlowConfig
from mirrorspark.config.parse import load_config

SRC = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CKP = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
HB = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"
INTERNAL = "east-internal.example:9092"  # the source connector's own source.cluster.bootstrap.servers
EAST = "east:9092"
WEST = "west:9092"
ROUTED = {f"source.{role}.bootstrap.servers": EAST for role in ("consumer", "admin", "producer")}


def connector(name: str, cls: str, **config: str) -> dict[str, Any]:
    base = {
        "connector.class": cls,
        "source.cluster.alias": "east",
        "source.cluster.bootstrap.servers": EAST,
        "target.cluster.alias": "west",
        "target.cluster.bootstrap.servers": WEST,
    }
    return {"name": name, "config": {**base, **config}}


def folder(tmp_path: Path, *bodies: dict[str, Any]) -> Path:
    path = tmp_path / "connectors"
    path.mkdir()
    for b in bodies:
        (path / f"{b['name']}.json").write_text(json.dumps(b))
    return path


def routed_folder(tmp_path: Path, **checkpoint: str) -> Path:
    """The three connectors; only the source connector reaches east through role overrides."""
    return folder(
        tmp_path,
        connector("mm2-source", SRC, **{"source.cluster.bootstrap.servers": INTERNAL, **ROUTED}),
        connector("mm2-checkpoint", CKP, **checkpoint),
        connector("mm2-heartbeat", HB),
    )


def servers(flow: FlowConfig) -> dict[str, str | None]:
    return {
        name: getattr(flow, name).get("bootstrap.servers")
        for name in ("source_admin", "source_consumer", "source_producer", "target_admin", "target_producer")
    }


def test_a_source_connector_reaching_the_source_through_role_overrides_converts(tmp_path: Path) -> None:
    cfg = load_config(routed_folder(tmp_path), env={})
    assert cfg.clusters["east"].bootstrap_servers == EAST
    flow = cfg.flow("east", "west")
    assert flow.enabled and flow.emit_checkpoints_enabled and flow.emit_heartbeats_enabled
    assert servers(flow) == dict.fromkeys(servers(flow), EAST) | {"target_admin": WEST, "target_producer": WEST}
