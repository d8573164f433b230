"""The failover policy on real brokers: a flow whose source fails moves its consumer groups to the target.

A 3-broker source and a 1-broker target of this module's own (brokers are stopped here). The running
flow emits checkpoints; when the source's partitions fall under ``mirrorspark.failover.policy`` for
``mirrorspark.failover.grace.ms``, the listed groups' newest checkpoints are committed on the target
as ``mirrorspark failover`` does, never for a group with active members there, and the event is
recorded on the flow's progress channel; the source's recovery is recorded too.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import NewTopic
from helpers import (
    ActiveMember,
    admin,
    assert_eventually,
    commit_offsets,
    consume_all,
    create_topic,
    produce,
    target_offsets,
    unique_name,
)
from pyspark.sql import SparkSession
from test_replication import running

from mirrorspark.client.context import ReplicationContext
from mirrorspark.client.status import read_failover_event
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.progress_records import FailoverEvent
from mirrorspark.kafka.local.clusters import (
    load_clusters,
    restart_cluster,
    start_clusters,
    stop_broker,
    stop_clusters,
)
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.records import Checkpoint
from mirrorspark.replication.driver import Replicator

# a generous per-test timeout: the module starts 4 brokers, and checkpoints need the flow to copy first
pytestmark = [
    pytest.mark.integration,
    pytest.mark.spark,
    pytest.mark.timeout(1200),
]

SRC, TGT = "east", "west"


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClusters]:
    """``east`` (3 brokers) and ``west`` (1 broker), as one :class:`LocalClusters` for ``mm2_properties``."""
    src_dir, tgt_dir = tmp_path_factory.mktemp("failover-east"), tmp_path_factory.mktemp("failover-west")
    try:
        east = start_clusters([SRC], base_dir=src_dir, brokers=3, timeout_s=300)  # a busy machine starts slowly
        west = start_clusters([TGT], base_dir=tgt_dir, brokers=1, timeout_s=300)
        yield dataclasses.replace(east, clusters={**east.clusters, **west.clusters})
    finally:
        stop_clusters(src_dir)
        stop_clusters(tgt_dir)


def make_config(clusters: LocalClusters, topic: str, **extra: str) -> MirrorConfig:
    text = clusters.mm2_properties(
        [(SRC, TGT)],
        extra={
            "topics": topic,
            "refresh.topics.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "offset-syncs.topic.location": "target",  # nothing of the flow's own on the brokers stopped here
            "mirrorspark.failover.grace.ms": "3000",
            "mirrorspark.failover.check.interval.ms": "500",
            **extra,
        },
    )
    return parse_config(parse_properties(text))


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """Commit a group's offset on partition 0 (retried while the new cluster's group coordinators settle)."""
    commit_offsets(bootstrap, group, {(topic, 0): offset})


def checkpoints_of(bootstrap: str, groups: set[str]) -> dict[str, Checkpoint]:
    """The newest checkpoint of each group (one partition each), as the target holds them."""
    out = {}
    for r in consume_all(bootstrap, f"{SRC}.checkpoints.internal"):
        cp = Checkpoint.decode(r["key"], r["value"])
        if cp.consumer_group_id in groups:
            out[cp.consumer_group_id] = cp
    return out


def channel_event(cfg: MirrorConfig) -> FailoverEvent | None:
    ctx = ReplicationContext(cfg).of(cfg.flow(SRC, TGT))
    return read_failover_event(ctx, client_id="failover-test")


def watcher_event(r: Replicator, event: str) -> FailoverEvent:
    last = r.failover_watchers[0].last
    assert last is not None and last.event == event, last
    return last


def test_an_offline_source_partition_moves_idle_groups_and_not_busy_ones(
    clusters: LocalClusters, spark: SparkSession
) -> None:
    src, tgt = clusters.bootstrap(SRC), clusters.bootstrap(TGT)
    topic, idle, busy = unique_name("offline"), unique_name("idle"), unique_name("busy")
    remote = f"{SRC}.{topic}"
    client = admin(src)  # one replica, on broker 2: stopping it takes the partition offline
    client.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[2]])])[topic].result(30)

    def led_by_broker_2() -> bool:
        # a broker's metadata may not hold a topic just created yet (no partitions): not yet, not an error
        partition = client.list_topics(topic=topic, timeout=5).topics[topic].partitions.get(0)
        return partition is not None and partition.leader == 2

    assert_eventually(led_by_broker_2, message=f"{topic}-0 is not led by broker 2")
    produce(src, topic, [{"value": f"v{i}".encode()} for i in range(100)])
    commit(src, idle, topic, 40)
    commit(src, busy, topic, 60)
    cfg = make_config(clusters, topic, **{"mirrorspark.failover.policy": "offline"})
    with running(cfg, spark) as r:
        cps = assert_eventually(
            lambda: both if len(both := checkpoints_of(tgt, {idle, busy})) == 2 else None,
            timeout_s=300,
            message="no checkpoints of both groups",
        )
        assert (cps[idle].upstream_offset, cps[busy].upstream_offset) == (40, 60)
        member = ActiveMember(tgt, busy, remote)
        try:
            assert member.assigned.wait(30), "the target consumer never joined"
            down = stop_broker(clusters, SRC, 2)
            event = assert_eventually(lambda: watcher_event(r, "failover"), timeout_s=300, message="no failover")
            newest = checkpoints_of(tgt, {idle})[idle]  # the flow may have improved its first translation since
            assert newest.upstream_offset == 40
            assert target_offsets(tgt, idle, remote, 1) == {0: newest.downstream_offset}
            assert target_offsets(tgt, busy, remote, 1)[0] < 0, "a group with an active member was moved"
        finally:
            member.close()
        outcomes = {g.group: g for g in event.groups}
        assert (outcomes[idle].outcome, outcomes[idle].offsets) == ("moved", 1)
        assert outcomes[busy].outcome == "refused"
        assert f"consumer group '{busy}' has 1 active member on cluster '{TGT}'" in str(outcomes[busy].detail)
        # of the flow's partitions: the topic's, and the heartbeats topic west->east's heartbeats write on east
        # (one replica, on any broker)
        assert re.fullmatch(
            rf"\d of \d source partitions offline: (heartbeats-0 \(no leader\), )?{topic}-0 \(no leader\)", event.reason
        ), event.reason
        assert (event.policy, event.dry_run, event.events) == ("offline", False, 1)
        assert channel_event(cfg) == event  # what `mirrorspark status` and the service read

        restart_cluster(down, SRC, timeout_s=300)
        back = assert_eventually(lambda: watcher_event(r, "recovered"), timeout_s=300, message="no recovery")
        assert (back.since, back.reason, back.groups) == (event.since, event.reason, ())
    assert channel_event(cfg) == back


def test_dry_run_under_min_isr_reports_and_moves_nothing(
    clusters: LocalClusters, spark: SparkSession, caplog: pytest.LogCaptureFixture
) -> None:
    src, tgt = clusters.bootstrap(SRC), clusters.bootstrap(TGT)
    topic, group = unique_name("min-isr"), unique_name("dry")
    create_topic(src, topic, replication_factor=3, config={"min.insync.replicas": "2"})
    produce(src, topic, [{"value": f"v{i}".encode()} for i in range(50)])
    commit(src, group, topic, 25)
    cfg = make_config(
        clusters,
        topic,
        **{
            "mirrorspark.failover.policy": "under-min-isr",
            "mirrorspark.failover.dry.run": "true",
            # the module's clusters are shared: the target also holds checkpoints of the groups of earlier tests
            "mirrorspark.failover.groups": group,
        },
    )
    caplog.set_level(logging.WARNING, logger="mirrorspark.replication.connector.failover_watch")
    with running(cfg, spark) as r:
        assert_eventually(lambda: group in checkpoints_of(tgt, {group}), timeout_s=300, message="no checkpoint")
        now = load_clusters(clusters.base_dir)  # the brokers' pids as they are (an earlier test restarted some)
        down = stop_broker(now, SRC, 2)
        down = stop_broker(down, SRC, 1)  # ISR [0] < min.insync.replicas 2; the partition keeps its leader
        try:
            event = assert_eventually(lambda: watcher_event(r, "failover"), timeout_s=300, message="no failover")
        finally:
            restart_cluster(down, SRC, timeout_s=300)
    assert [(g.group, g.outcome, g.offsets) for g in event.groups] == [(group, "would-move", 1)]
    assert event.dry_run and event.reason.endswith(f"{topic}-0 (ISR 1 < min ISR 2)")
    assert target_offsets(tgt, group, f"{SRC}.{topic}", 1)[0] < 0, "a dry run committed offsets"
    said = caplog.text
    assert f"dry run: would commit group '{group}' on '{TGT}' at {SRC}.{topic}-0:" in said
    assert "failover (policy under-min-isr, dry run; failed since" in said
