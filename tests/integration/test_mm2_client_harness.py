"""The MM2 Java client harness (:mod:`mm2_client`) reads hand-made MM2 internal topics.

Checkpoints and heartbeats are written here with :mod:`mirrorspark.mm2.records` codecs only
(no mirrorspark checkpoint or heartbeat code), so these tests check the harness itself:
Kafka's ``RemoteClusterUtils.translateOffsets`` and ``MirrorClient`` run in a JVM against
the session's ``backup`` cluster and their answers come back intact.

``primary.checkpoints.internal``, ``heartbeats`` and ``primary.heartbeats`` have fixed names
and are shared with other tests: they are created only if missing, and assertions look at
this test's unique group and topics only.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException
from helpers import create_topic, produce, unique_name
from mm2_client import mm2_client_info, mm2_translate_offsets

from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.records import Checkpoint, Heartbeat

pytestmark = pytest.mark.integration

COMPACT = {"cleanup.policy": "compact"}
DEFAULT_POLICY = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"


def ensure_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    """Create a topic unless it exists (shared internal topics)."""
    try:
        create_topic(bootstrap, name, partitions=partitions, config=config)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def write_checkpoints(bootstrap: str, topic: str, checkpoints: list[Checkpoint]) -> None:
    produce(bootstrap, topic, [{"key": c.key(), "value": c.value(), "partition": 0} for c in checkpoints])


def write_heartbeat(bootstrap: str, topic: str, heartbeat: Heartbeat) -> None:
    record = {
        "key": heartbeat.key(),
        "value": heartbeat.value(),
        "partition": 0,
        "timestamp_ms": heartbeat.timestamp_ms,
    }
    produce(bootstrap, topic, [record])


def test_translate_offsets_and_client_info_read_hand_made_topics(local_clusters: LocalClusters) -> None:
    backup = local_clusters.bootstrap("backup")
    remote = f"primary.{unique_name('mm2client')}"
    other_remote = f"primary.{unique_name('mm2client')}"  # checkpointed only; need not exist
    group, other_group = unique_name("mm2client-group"), unique_name("mm2client-other")
    create_topic(backup, remote, partitions=2)
    ensure_topic(backup, "primary.checkpoints.internal", config=COMPACT)
    ensure_topic(backup, "heartbeats", config=COMPACT)
    ensure_topic(backup, "primary.heartbeats", config=COMPACT)

    write_checkpoints(
        backup,
        "primary.checkpoints.internal",
        [
            Checkpoint(group, remote, 0, upstream_offset=100, downstream_offset=10),
            Checkpoint(group, remote, 1, upstream_offset=50, downstream_offset=5),
            Checkpoint(group, remote, 0, upstream_offset=200, downstream_offset=20),
            Checkpoint(other_group, remote, 0, upstream_offset=999, downstream_offset=99),
            Checkpoint(group, remote, 1, upstream_offset=70, downstream_offset=7, metadata="meta"),
            Checkpoint(group, other_remote, 3, upstream_offset=1, downstream_offset=1),
            # The last checkpoint wins even when its offset is lower (a group reset).
            Checkpoint(group, remote, 0, upstream_offset=180, downstream_offset=18),
        ],
    )
    now_ms = int(time.time() * 1000)
    write_heartbeat(backup, "heartbeats", Heartbeat("primary", "backup", now_ms))  # flow primary->backup
    write_heartbeat(backup, "primary.heartbeats", Heartbeat("backup", "primary", now_ms))  # replicated from primary

    assert mm2_translate_offsets(backup, "primary", group) == {
        (remote, 0): 18,
        (remote, 1): 7,
        (other_remote, 3): 1,
    }

    weird = 'we"ird\\ä𝄞\t'  # an alias only echoed back: checks the tool's JSON escaping
    info = mm2_client_info(backup, ["primary", "backup", weird])
    assert {"heartbeats", "primary.heartbeats"} <= set(info["heartbeatTopics"])
    assert "primary.checkpoints.internal" in info["checkpointTopics"]
    assert info["upstreamClusters"] == ["primary"]
    assert info["replicationHops"] == {"primary": 1, "backup": -1, weird: -1}
    assert {remote, "primary.heartbeats"} <= set(info["remoteTopics"])
    assert not {"heartbeats", "primary.checkpoints.internal"} & set(info["remoteTopics"])
    for key in ("heartbeatTopics", "checkpointTopics", "upstreamClusters", "remoteTopics"):
        assert info[key] == sorted(info[key])


def test_policy_class_and_separator_are_passed_to_the_client(local_clusters: LocalClusters) -> None:
    backup = local_clusters.bootstrap("backup")
    alias = f"src{uuid.uuid4().hex[:8]}"  # own alias: every topic below is this test's own
    remote = f"{alias}_{unique_name('mm2client')}"
    checkpoints = f"{alias}_checkpoints_internal"  # the internal separator follows "_"
    group = unique_name("mm2client-group")
    create_topic(backup, remote)
    create_topic(backup, checkpoints, config=COMPACT)
    create_topic(backup, f"{alias}_heartbeats", config=COMPACT)
    write_checkpoints(backup, checkpoints, [Checkpoint(group, remote, 0, upstream_offset=5, downstream_offset=3)])
    write_heartbeat(backup, f"{alias}_heartbeats", Heartbeat("backup", alias, int(time.time() * 1000)))

    policy = {"policy_class": DEFAULT_POLICY, "separator": "_"}
    assert mm2_translate_offsets(backup, alias, group, **policy) == {(remote, 0): 3}

    info = mm2_client_info(backup, [alias], **policy)
    assert checkpoints in info["checkpointTopics"]
    assert "primary.checkpoints.internal" not in info["checkpointTopics"]  # "." is no separator now
    assert f"{alias}_heartbeats" in info["heartbeatTopics"]
    assert alias in info["upstreamClusters"]
    assert info["replicationHops"] == {alias: 1}
    assert remote in info["remoteTopics"]


def test_a_failing_call_raises_assertion_error_with_the_java_error(local_clusters: LocalClusters) -> None:
    backup = local_clusters.bootstrap("backup")
    with pytest.raises(AssertionError, match=r"com\.example\.NoSuchPolicy"):
        mm2_client_info(backup, policy_class="com.example.NoSuchPolicy")
    with pytest.raises(ValueError, match="commas"):
        mm2_client_info(backup, ["a,b"])
