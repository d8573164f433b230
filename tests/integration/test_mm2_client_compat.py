"""MM2's own Java client reads what mirrorspark writes, and agrees with mirrorspark's API.

`RemoteClusterUtils.translateOffsets` and `MirrorClient` from Kafka's
connect-mirror-client jar run in a small Java harness (`mm2_client.py`).
"""

from __future__ import annotations

import pytest
from helpers import commit_offsets, create_topic, produce, unique_name
from mm2_client import mm2_client_info, mm2_translate_offsets
from pyspark.sql import SparkSession

from mirrorspark.client import mirror_client as client
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_remote_cluster_utils_agrees_with_our_checkpoints(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic, group = unique_name("compat"), unique_name("group")
    create_topic(p, topic, partitions=3)
    produce(p, topic, [{"value": f"v{i}".encode(), "partition": i % 3} for i in range(90)])
    commit_offsets(p, group, {(topic, 0): 11, (topic, 1): 30, (topic, 2): 0})
    text = local_clusters.mm2_properties(
        [("primary", "backup")],
        extra={
            "topics": topic,
            "emit.checkpoints.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
        },
    )
    cfg = parse_config(parse_properties(text))
    # The first run's heartbeats for backup->primary (a disabled flow emits them too, as in MM2) create
    # primary's heartbeats topic; like MM2's topic refresh, the next run's discovery replicates it.
    Replicator(cfg, spark).run(until_caught_up=True)
    Replicator(cfg, spark).run(until_caught_up=True)

    ours = client.translate_offsets(cfg, cluster="backup", remote_alias="primary", group=group)
    theirs = mm2_translate_offsets(b, "primary", group)
    assert ours == theirs
    assert ours == {(f"primary.{topic}", 0): 11, (f"primary.{topic}", 1): 30, (f"primary.{topic}", 2): 0}

    info = mm2_client_info(b, ["primary"])
    assert "primary.heartbeats" in info["heartbeatTopics"]
    assert "primary.checkpoints.internal" in info["checkpointTopics"]
    assert "primary" in info["upstreamClusters"]
    assert info["replicationHops"]["primary"] == 1
    assert f"primary.{topic}" in info["remoteTopics"]
    # and our client says the same
    assert client.replication_hops(cfg, "backup", "primary") == 1
    assert "primary" in client.upstream_clusters(cfg, "backup")
    assert set(info["heartbeatTopics"]) == client.heartbeat_topics(cfg, "backup")
    assert set(info["checkpointTopics"]) == client.checkpoint_topics(cfg, "backup")
