"""Per-connector clients of Connect input (issue #37 item 7): each connector's clients from its own config.

Kafka Connect runs each MM2 connector with the clients its own config composes (``MirrorConnectorConfig``:
``<side>.cluster.*`` -> ``<role>.*`` -> ``<side>.<role>.*``); a folder where only the source connector reaches
the source through ``source.consumer.*``/``source.admin.*``/``source.producer.*`` runs under Connect and so
under mirrorspark.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fakes import FakeAdmin, FakeCluster, done, two_clusters
from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.convert import convert_config
from mirrorspark.config.model import ClientSettings, FlowConfig
from mirrorspark.config.parse import load_config, parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.errors import ConfigError
from mirrorspark.replication.connector.connector_clusters import check_connector_clusters
from mirrorspark.replication.driver import Replicator

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


def test_each_connector_runs_its_own_clients(tmp_path: Path) -> None:
    """The copy's clients are the source connector's, the checkpoint emitter's the checkpoint connector's, the
    heartbeats' the heartbeat connector's: a setting of one connector reaches none of the others' clients."""
    cfg = load_config(
        routed_folder(
            tmp_path,
            **{"source.admin.request.timeout.ms": "7000", "target.cluster.bootstrap.servers": "west-2:9092"},
        ),
        env={},
    )
    flow = cfg.flow("east", "west")
    checkpoint, heartbeat = flow.for_connector("checkpoint"), flow.for_connector("heartbeat")
    assert servers(checkpoint) == dict.fromkeys(servers(flow), EAST) | {
        "target_admin": "west-2:9092",
        "target_producer": "west-2:9092",
    }
    assert checkpoint.source_admin.get("request.timeout.ms") == "7000"
    assert flow.source_admin.get("request.timeout.ms") is None
    assert heartbeat.source_admin.get("request.timeout.ms") is None
    assert servers(heartbeat) == dict.fromkeys(servers(flow), EAST) | {"target_admin": WEST, "target_producer": WEST}
    # the flow's own clients (the source connector's) are not the checkpoint connector's
    assert flow.target_admin.get("bootstrap.servers") == WEST
    assert flow.for_connector("checkpoint").groups == flow.groups  # everything else is the flow's


def test_config_convert_writes_each_connectors_clients_and_round_trips(tmp_path: Path) -> None:
    path = routed_folder(tmp_path, **{"source.admin.request.timeout.ms": "7000"})
    text = convert_config(path, env={})
    props = parse_properties(text)
    assert props["east.bootstrap.servers"] == EAST
    assert props["east->west.source.cluster.bootstrap.servers"] == INTERNAL
    assert props["east->west.source.consumer.bootstrap.servers"] == EAST
    assert props["east->west.mirrorspark.checkpoint.source.admin.request.timeout.ms"] == "7000"
    assert props["east->west.mirrorspark.heartbeat.source.cluster.bootstrap.servers"] == EAST
    assert not any(k.startswith("east->west.mirrorspark.checkpoint.source.consumer") for k in props)
    converted = parse_config(props)
    original = load_config(path, env={})
    for kind in ("source", "checkpoint", "heartbeat"):
        assert converted.flow("east", "west").for_connector(kind) == original.flow("east", "west").for_connector(kind)
    # and back to connectors: each gets its own clients again
    mm2 = tmp_path / "mm2.properties"
    mm2.write_text(text)
    back = {c["name"]: c["config"] for c in json.loads(convert_config(mm2, to="rest", env={}))}
    assert back["mm2-source"]["source.consumer.bootstrap.servers"] == EAST
    assert back["east-to-west-checkpoint"]["source.admin.request.timeout.ms"] == "7000"
    assert "source.consumer.bootstrap.servers" not in back["east-to-west-checkpoint"]
    assert "source.consumer.bootstrap.servers" not in back["east-to-west-heartbeat"]
    assert not any(k.startswith("mirrorspark.") for c in back.values() for k in c)


def test_connectors_agreeing_on_their_clients_write_them_once(tmp_path: Path) -> None:
    """MM2's dedicated mode (one client config per flow) converts as before: no per-connector keys."""
    same = {"source.consumer.max.poll.records": "100", **ROUTED}
    path = folder(tmp_path, *(connector(n, c, **same) for n, c in (("s", SRC), ("c", CKP), ("h", HB))))
    props = parse_properties(convert_config(path, env={}))
    assert props["east->west.source.consumer.max.poll.records"] == "100"
    assert not any(".mirrorspark.checkpoint." in k or ".mirrorspark.heartbeat." in k for k in props)


def test_connector_client_keys_are_checked_by_name() -> None:
    base = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
    ok = parse_config(parse_properties(base + "A->B.mirrorspark.checkpoint.source.admin.request.timeout.ms = 5\n"))
    assert ok.flow("A", "B").for_connector("checkpoint").source_admin.get("request.timeout.ms") == "5"
    assert "mirrorspark.checkpoint.source.admin.request.timeout.ms" not in ok.flow("A", "B").extra
    typo = r"unknown key 'A->B.mirrorspark.checkpoint.source.admin.request.timout.ms'"
    with pytest.raises(ConfigError, match=typo):
        parse_config(parse_properties(base + "A->B.mirrorspark.checkpoint.source.admin.request.timout.ms = 5\n"))
    with pytest.raises(ConfigError, match=r"unknown key 'mirrorspark.checkpoint.source.admin.request.timeout.ms'"):
        parse_config(parse_properties(base + "mirrorspark.checkpoint.source.admin.request.timeout.ms = 5\n"))


def test_a_folder_whose_connectors_contradict_each_other_is_still_refused(tmp_path: Path) -> None:
    """Per-connector clients do not make contradictory connectors one flow: a checkpoint connector translating
    offsets for other topics than the source connector copies is refused, naming both and the fix."""
    with pytest.raises(ConfigError) as e:
        load_config(routed_folder(tmp_path, topics="other"), env={})
    message = str(e.value)
    assert "connector 'mm2-source'" in message and "connector 'mm2-checkpoint'" in message
    assert "give both connectors the same values" in message


def test_the_driver_runs_checkpoints_and_heartbeats_on_their_connectors_clients() -> None:
    """The replicator's checkpoint emitter and heartbeats create their clients from their connectors' settings."""
    cfg, a, b, clients = two_clusters(
        "A->B.source.consumer.bootstrap.servers = a-copy:9092\n"
        "A->B.source.admin.bootstrap.servers = a-copy:9092\n"
        "A->B.mirrorspark.checkpoint.source.cluster.bootstrap.servers = a-checkpoint:9092\n"
        "A->B.mirrorspark.heartbeat.target.cluster.bootstrap.servers = b-heartbeat:9092\n"
    )
    clients.clusters.update({"a-copy:9092": a, "a-checkpoint:9092": a, "b-heartbeat:9092": b})
    seen: list[tuple[str, str]] = []
    route = clients._cluster

    def recorded(settings: ClientSettings, client_id: str) -> FakeCluster:
        seen.append((client_id.rsplit("|", 1)[-1], settings.bootstrap_servers))
        return route(settings, client_id)

    clients._cluster = recorded  # type: ignore[method-assign]
    replicator = Replicator(cfg, clients=clients)
    try:
        [cp] = replicator.checkpoints
        cp.refresh_groups()
        replicator.heartbeats.start()
    finally:
        replicator.close()
    assert ("replication-source-admin", "a-copy:9092") in seen
    assert ("checkpoint-source-admin", "a-checkpoint:9092") in seen
    assert ("heartbeats-target-admin", "b-heartbeat:9092") in seen
    assert ("heartbeats-target-producer", "b-heartbeat:9092") in seen


@pytest.fixture
def cluster_ids(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fake admins answer DescribeCluster with their cluster's name as its id; the ids asked, in order."""
    asked: list[str] = []

    def describe(self: FakeAdmin, **_: Any) -> Any:
        asked.append(self.cluster.alias)
        return done(SimpleNamespace(cluster_id=self.cluster.alias, nodes=[]))

    monkeypatch.setattr(FakeAdmin, "describe_cluster", describe)
    return asked


def test_connectors_reaching_one_alias_in_two_kafka_clusters_are_refused_at_start(cluster_ids: list[str]) -> None:
    """The checkpoint connector's 'A' is the Kafka cluster B: its checkpoints could never translate the source
    connector's offset syncs. The addresses could not tell; the cluster ids do."""
    cfg, _a, b, clients = two_clusters("A->B.mirrorspark.checkpoint.source.cluster.bootstrap.servers = b-also:9092\n")
    clients.clusters["b-also:9092"] = b
    with pytest.raises(ConfigError) as e:
        check_connector_clusters(ReplicationContext(cfg, clients).flow("A", "B"))
    message = str(e.value)
    assert "the source connector's clients reach cluster 'A' at a:9092 (Kafka cluster id A)" in message
    assert "the checkpoint connector's at b-also:9092 (cluster id B)" in message
    assert "point the checkpoint connector's source.cluster.bootstrap.servers" in message
    assert "'A->B.mirrorspark.checkpoint.source.*'" in message


def test_one_kafka_cluster_at_two_addresses_starts(cluster_ids: list[str]) -> None:
    cfg, a, _b, clients = two_clusters(
        "A->B.source.admin.bootstrap.servers = a-listener-2:9092\n"
        "A->B.mirrorspark.checkpoint.source.cluster.bootstrap.servers = a:9092\n"
        "A->B.mirrorspark.heartbeat.source.cluster.bootstrap.servers = nowhere:9092\n"  # heartbeats: target only
    )
    clients.clusters["a-listener-2:9092"] = a
    check_connector_clusters(ReplicationContext(cfg, clients).flow("A", "B"))
    assert sorted(cluster_ids) == ["A", "A", "B"]  # one question per address a connector uses
    cluster_ids.clear()
    plain, _, _, plain_clients = two_clusters()
    check_connector_clusters(ReplicationContext(plain, plain_clients).flow("A", "B"))
    assert cluster_ids == []  # one client config per flow (MM2's dedicated mode): nothing to ask
