"""A real flow run from each shape of connector configs (issue #25): ``mirrorspark run CONFIG --until-caught-up``.

The examples of ``docs/examples/connect`` are run with the local clusters' addresses, this test's own topic
and, as the clusters have one broker each, replication factors of -1 (the broker's default) put in.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import consume_all, create_topic, produce, unique_name

from mirrorspark.kafka.local.model import LocalClusters

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "connect"
RF_KEYS = (
    "replication.factor",
    "offset-syncs.topic.replication.factor",
    "checkpoints.topic.replication.factor",
    "heartbeats.topic.replication.factor",
)


def _configs(doc: Any) -> list[dict[str, Any]]:
    """Every connector config in a document of any shape."""
    if isinstance(doc, list):
        return [c for d in doc for c in _configs(d)]
    if doc.get("kind") == "KafkaConnector":
        return [doc["spec"]["config"]]
    if doc.get("kind") == "KafkaMirrorMaker2":
        mirrors = doc["spec"]["mirrors"]
        return [m[k].setdefault("config", {}) for m in mirrors for k in m if k.endswith("Connector")]
    if "config" in doc:
        return [doc["config"]]
    if "connector.class" in doc:
        return [doc]
    return [entry["info"]["config"] for entry in doc.values()]


def _copy(src: Path, dst: Path, servers: dict[str, str], topic: str) -> None:
    text = src.read_text()
    for old, new in {**servers, "orders.*, payments": topic}.items():
        text = text.replace(old, new)
    docs = list(yaml.safe_load_all(text))
    for doc in docs:
        for config in _configs(doc):
            config.update(dict.fromkeys(RF_KEYS, "-1"))
    if src.suffix == ".json":
        dst.write_text(json.dumps(docs[0]))
    else:
        dst.write_text(yaml.safe_dump_all(docs, sort_keys=False))


@pytest.mark.parametrize(
    "example",
    [
        "strimzi-connectors.yaml",
        "strimzi-mirror-maker2.yaml",
        "rest-connectors.json",
        "rest-expand-info.json",
        "rest-folder",
    ],
)
def test_a_flow_runs_from_connector_configs(local_clusters: LocalClusters, tmp_path: Path, example: str) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    # the offsets topic and the progress channel take the worker's offset.storage.replication.factor, which
    # connector configs do not carry (Connect's default 3 > 1 broker): created here, once
    for internal, partitions in (("mm2-offsets.primary.internal", 25), ("mm2-task-progress.primary.internal", 1)):
        with contextlib.suppress(Exception):  # created by an earlier parameter
            create_topic(b, internal, partitions=partitions, config={"cleanup.policy": "compact"})
    topic = unique_name("connect")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(20)])
    servers = {"localhost:9092": p, "localhost:9093": b}
    src, config = EXAMPLES / example, tmp_path / example
    if src.is_dir():
        config.mkdir()
        for f in src.iterdir():
            _copy(f, config / f.name, servers, topic)
    else:
        _copy(src, config, servers, topic)
    r = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "run", str(config), "--until-caught-up", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    copied = sorted(rec["value"] for rec in consume_all(b, f"primary.{topic}"))
    assert copied == sorted(f"v{i}".encode() for i in range(20))


def _three_connectors(folder: Path, p: str, b: str, topic: str, own: dict[str, dict[str, str]]) -> Path:
    """A folder of the flow's three connectors (REST bodies), each with its ``own`` keys on top."""
    base = {
        "source.cluster.alias": "primary",
        "source.cluster.bootstrap.servers": p,
        "target.cluster.alias": "backup",
        "target.cluster.bootstrap.servers": b,
        "topics": topic,
        "groups": f"{topic}-.*",
        **dict.fromkeys(RF_KEYS, "-1"),
    }
    folder.mkdir()
    for name, cls in (("mm2-source", "Source"), ("mm2-checkpoint", "Checkpoint"), ("mm2-heartbeat", "Heartbeat")):
        config = {
            "connector.class": f"org.apache.kafka.connect.mirror.Mirror{cls}Connector",
            **base,
            **own.get(name, {}),
        }
        (folder / f"{name}.json").write_text(json.dumps({"name": name, "config": config}))
    return folder


def _run(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mirrorspark", "run", str(folder), "--until-caught-up", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_source_connector_reaching_the_source_through_role_overrides_copies_everything(
    local_clusters: LocalClusters, tmp_path: Path
) -> None:
    """Issue #37 item 7: only the MirrorSourceConnector reaches the source through ``source.consumer.*``,
    ``source.admin.*`` and ``source.producer.*`` (another address of the same broker); its own
    ``source.cluster.bootstrap.servers`` reaches nothing. Connect runs each connector with its own clients, and
    so does mirrorspark: everything is copied."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    swap = {"127.0.0.1": "localhost", "localhost": "127.0.0.1"}
    other = ",".join(swap.get(h, h) + ":" + port for h, port in (s.rsplit(":", 1) for s in p.split(",")))
    assert other != p, p  # the same broker under another address
    for internal, partitions in (("mm2-offsets.primary.internal", 25), ("mm2-task-progress.primary.internal", 1)):
        with contextlib.suppress(Exception):  # created by another test
            create_topic(b, internal, partitions=partitions, config={"cleanup.policy": "compact"})
    topic = unique_name("routed")
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(30)])
    routed = {f"source.{role}.bootstrap.servers": other for role in ("consumer", "admin", "producer")}
    own = {"mm2-source": {"source.cluster.bootstrap.servers": "127.0.0.1:1", **routed}}
    r = _run(_three_connectors(tmp_path / "connectors", p, b, topic, own))
    assert r.returncode == 0, r.stderr
    copied = sorted(rec["value"] for rec in consume_all(b, f"primary.{topic}"))
    assert copied == sorted(f"v{i}".encode() for i in range(30))


def test_a_checkpoint_connector_reaching_another_cluster_under_the_source_alias_is_refused(
    local_clusters: LocalClusters, tmp_path: Path
) -> None:
    """What Connect would run without a word but cannot be one flow: the checkpoint connector's 'primary' is
    the backup cluster (its offset syncs are not there). The cluster ids tell; the start is refused."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("two-clusters")
    own = {"mm2-checkpoint": {"source.cluster.bootstrap.servers": b}}
    r = _run(_three_connectors(tmp_path / "connectors", p, b, topic, own))
    assert r.returncode != 0
    assert "one alias must name one Kafka cluster" in r.stderr, r.stderr
    assert "the checkpoint connector's at " + b in r.stderr, r.stderr
