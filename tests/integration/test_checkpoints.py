"""Consumer migration end to end: checkpoints, failover, failback, group offset sync.

A consumer group moves between clusters "without skipping records or losing
progress" (SRM): every test checks that a consumer starting from translated
offsets reads every record it had not consumed, and counts what it reads again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from helpers import (
    ActiveMember,
    Bootstrap,
    admin,
    assert_eventually,
    consume_all,
    create_topic,
    produce,
    target_offsets,
    unique_name,
)
from helpers import commit_offsets as commit
from pyspark.sql import SparkSession

from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.records import Checkpoint
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

LAG_MAX = 10


def config(clusters: LocalClusters, flows: list[tuple[str, str]], **extra: str) -> MirrorConfig:
    text = clusters.mm2_properties(
        flows,
        extra={
            "refresh.topics.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "offset.lag.max": str(LAG_MAX),
            "tasks.max": "2",
            **extra,
        },
    )
    return parse_config(parse_properties(text))


def replicate(cfg: MirrorConfig, spark: SparkSession) -> Replicator:
    r = Replicator(cfg, spark)
    r.run(until_caught_up=True)
    return r


def checkpoints(bootstrap: Bootstrap, topic: str, group: str) -> dict[tuple[str, int], Checkpoint]:
    """The last checkpoint per (topic, partition) of a group, as RemoteClusterUtils reads them."""
    out: dict[tuple[str, int], Checkpoint] = {}
    for r in consume_all(bootstrap, topic):
        cp = Checkpoint.decode(r["key"], r["value"])
        if cp.consumer_group_id == group:
            out[(cp.topic, cp.partition)] = cp
    return out


def read_from(bootstrap: Bootstrap, topic: str, partition: int, offset: int) -> list[bytes]:
    """Values a consumer starting at ``offset`` reads to the end of the partition."""
    return [r["value"] for r in consume_all(bootstrap, topic) if r["partition"] == partition and r["offset"] >= offset]


def check_no_skip(source_values: list[bytes], committed: int, target_values: list[bytes]) -> int:
    """Assert the consumer on the target reads every unconsumed record; return the re-read count."""
    remaining = source_values[committed:]
    assert target_values[len(target_values) - len(remaining) :] == remaining, "a record was skipped"
    return len(target_values) - len(remaining)


def test_failover_reads_every_remaining_record(local_clusters: LocalClusters, spark: SparkSession) -> None:
    failover_scenario(local_clusters, spark)


def failover_scenario(clusters: LocalClusters, spark: SparkSession) -> None:
    """Checkpoints of a group committed on the source let a consumer fail over without skipping a record.

    First from the running flow's copy history (no re-read), then, in a new process, from the copied
    segments it restores from the progress channel (still no re-read; MM2's rule over the offset syncs
    alone re-reads up to ``offset.lag.max``). Shared with the TLS / SASL_SSL clusters (test_security).
    """
    p, b = clusters.cluster("primary").client_config(), clusters.cluster("backup").client_config()
    topic, group = unique_name("failover"), unique_name("group")
    create_topic(p, topic, partitions=3)
    produce(p, topic, [{"value": f"v{i}".encode(), "partition": i % 3} for i in range(300)])
    committed = {(topic, 0): 50, (topic, 1): 37, (topic, 2): 100}
    commit(p, group, committed)
    cfg = config(clusters, [("primary", "backup")], topics=topic)
    replicate(cfg, spark)

    cps = checkpoints(b, "primary.checkpoints.internal", group)
    assert set(cps) == {(f"primary.{topic}", 0), (f"primary.{topic}", 1), (f"primary.{topic}", 2)}
    for part in range(3):
        cp = cps[(f"primary.{topic}", part)]
        assert cp.upstream_offset == committed[(topic, part)]
        src = read_from(p, topic, part, 0)
        rereads = check_no_skip(src, cp.upstream_offset, read_from(b, f"primary.{topic}", part, cp.downstream_offset))
        assert rereads == 0  # the running flow knew every copied record's downstream offset

    # A new process restores the copied segments from the progress channel: still exact.
    committed2 = {(topic, 0): 73, (topic, 1): 95, (topic, 2): 99}
    commit(p, group, committed2)
    replicate(cfg, spark)
    cps = checkpoints(b, "primary.checkpoints.internal", group)
    for part in range(3):
        cp = cps[(f"primary.{topic}", part)]
        assert cp.upstream_offset == committed2[(topic, part)]
        src = read_from(p, topic, part, 0)
        rereads = check_no_skip(src, cp.upstream_offset, read_from(b, f"primary.{topic}", part, cp.downstream_offset))
        assert rereads == 0  # MM2's rule alone: up to LAG_MAX


def test_group_offset_sync_rules(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """Inactive groups get translated offsets; active groups are left alone; never backwards."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("gsync")
    idle, active, ahead = unique_name("idle"), unique_name("active"), unique_name("ahead")
    create_topic(p, topic, partitions=1)
    produce(p, topic, [{"value": f"v{i}".encode()} for i in range(100)])
    for g in (idle, active, ahead):
        commit(p, g, {(topic, 0): 40})
    remote, elsewhere = f"primary.{topic}", unique_name("elsewhere")
    create_topic(b, remote, partitions=1)  # the flow adopts an existing remote topic
    create_topic(b, elsewhere, partitions=1)
    commit(b, ahead, {(remote, 0): 90})  # the target group already went further
    member = ActiveMember(b, active, elsewhere)  # an active member of the group on the target
    try:
        assert member.assigned.wait(30), "the active consumer never joined"
        cfg = config(
            local_clusters,
            [("primary", "backup")],
            topics=topic,
            **{"sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1"},
        )
        replicate(cfg, spark)
        assert target_offsets(b, idle, remote, 1) == {0: 40}
        assert target_offsets(b, ahead, remote, 1) == {0: 90}, "a group was moved backwards"
        assert target_offsets(b, active, remote, 1)[0] < 0, "an active group was overwritten"
    finally:
        member.close()
    # once the consumers are gone, the group is synced too
    replicate(cfg, spark)
    assert target_offsets(b, active, remote, 1) == {0: 40}


def test_failback_from_backup_to_primary(local_clusters: LocalClusters, spark: SparkSession) -> None:
    failback_scenario(local_clusters, spark)


def failback_scenario(clusters: LocalClusters, spark: SparkSession) -> None:
    """A group that failed over to backup and consumed there moves back to primary without a skip.

    Flows run both ways. While primary was "down", producers wrote to the topic on backup
    (replicated back to primary as ``backup.<topic>``). The B->A flow's checkpoints in
    ``backup.checkpoints.internal`` on primary carry the failback positions under the
    original topic name (MM2's renaming), translated in reverse through A->B's copied runs, which
    the second (restarted) replicator restored from the progress channel: 0 re-reads (MM2's rule
    over the offset syncs alone re-reads up to ``offset.lag.max`` per partition).
    """
    p, b = clusters.bootstrap("primary"), clusters.bootstrap("backup")
    topic, group = unique_name("failback"), unique_name("group")
    create_topic(p, topic, partitions=2)
    create_topic(b, topic, partitions=2)
    produce(p, topic, [{"value": f"a{i}".encode(), "partition": i % 2} for i in range(100)])
    cfg = config(clusters, [("primary", "backup"), ("backup", "primary")], topics=f".*{topic}")
    replicate(cfg, spark)
    # primary goes down; the application fails over to backup: producers write `topic` there,
    # the group consumes the remote topic primary.<topic> and the local one
    produce(b, topic, [{"value": f"b{i}".encode(), "partition": i % 2} for i in range(60)])
    consumed = {(f"primary.{topic}", 0): 31, (f"primary.{topic}", 1): 44, (topic, 0): 12, (topic, 1): 30}
    commit(b, group, consumed)
    # primary is back: replicate, which emits the B->A checkpoints on primary
    replicate(cfg, spark)
    cps = checkpoints(p, "backup.checkpoints.internal", group)
    assert set(cps) == {(topic, 0), (topic, 1), (f"backup.{topic}", 0), (f"backup.{topic}", 1)}
    total_rereads = 0
    for part in range(2):
        # the original topic on primary, translated in reverse
        cp = cps[(topic, part)]
        assert cp.upstream_offset == consumed[(f"primary.{topic}", part)]
        src = read_from(b, f"primary.{topic}", part, 0)
        total_rereads += check_no_skip(src, cp.upstream_offset, read_from(p, topic, part, cp.downstream_offset))
        # the topic produced on backup while primary was down, replicated to primary
        cp = cps[(f"backup.{topic}", part)]
        src = read_from(b, topic, part, 0)
        total_rereads += check_no_skip(
            src, cp.upstream_offset, read_from(p, f"backup.{topic}", part, cp.downstream_offset)
        )
    assert total_rereads == 0  # exact: every offset is inside a copied run, also after the restart


def test_translation_never_skips_across_markers_and_compaction(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    """Transaction markers and compaction leave gaps upstream; every translation stays conservative."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("gaps")
    txn, compacted = f"{prefix}.txn", f"{prefix}.compacted"
    create_topic(p, txn, partitions=1)
    create_topic(
        p,
        compacted,
        partitions=1,
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.001",
            "min.compaction.lag.ms": "0",
            "delete.retention.ms": "0",
        },
    )
    tp = Producer({"bootstrap.servers": p, "transactional.id": unique_name("txn")})
    tp.init_transactions(30)
    for t in range(5):
        tp.begin_transaction()
        for i in range(7):
            tp.produce(txn, f"t{t}-{i}".encode(), partition=0)
        tp.commit_transaction(30)
    produce(p, compacted, [{"key": f"k{i % 5}".encode(), "value": f"c{i}".encode()} for i in range(50)])

    def compacted_enough() -> bool:
        # a new record after segment.ms rolls the segment, which the cleaner may then compact
        produce(p, compacted, [{"key": b"roll", "value": b"roll"}])
        return len([r for r in consume_all(p, compacted) if r["key"] != b"roll"]) < 50

    assert_eventually(compacted_enough, timeout_s=90, message="the log cleaner did not compact")
    cfg = config(local_clusters, [("primary", "backup")], topics=f"{prefix}.*")
    r = replicate(cfg, spark)
    contexts = ReplicationContext(cfg)
    flow, reverse = contexts.flow("primary", "backup"), contexts.flow("backup", "primary")
    exact = CheckpointEmitter(flow, reverse=reverse, copied=r.flows[0].copied)
    syncs_only = CheckpointEmitter(flow, reverse=reverse)
    for e in (exact, syncs_only):
        e.syncs = None
        from mirrorspark.client.checkpoint_reader import OffsetSyncReader

        e.syncs = OffsetSyncReader(
            cfg, e.flow_config, e.context.internal_topics, read_to_end_required=False, client_id="test"
        )
        e.syncs.load()
    for topic in (txn, compacted):
        src = consume_all(p, topic)
        dst = consume_all(b, f"primary.{topic}")
        assert [r["value"] for r in src] == [r["value"] for r in dst]
        end = admin_end(p, topic)
        for g in range(0, end + 1):
            unread = [r["value"] for r in src if r["offset"] >= g]
            for e in (exact, syncs_only):
                go = e.translate("g", topic, 0, g)
                if go.checkpoint is None:
                    continue
                reads = [r["value"] for r in dst if r["offset"] >= go.checkpoint.downstream_offset]
                assert reads[len(reads) - len(unread) :] == unread, f"skip at {topic}@{g}"
                if e is exact:
                    assert len(reads) == len(unread), f"exact translation re-read at {topic}@{g}"
    for e in (exact, syncs_only):
        e.close()


def admin_end(bootstrap: str, topic: str) -> int:
    from helpers import end_offsets

    return end_offsets(bootstrap, topic)[0][1]


def _unused() -> Iterator[Any]:  # keeps imports used by type checkers honest
    yield admin


def test_groups_created_while_running_are_checkpointed(local_clusters: LocalClusters, spark: SparkSession) -> None:
    """A group that appears after start is found within refresh.groups.interval.seconds."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic, group = unique_name("newgroup"), unique_name("late")
    create_topic(p, topic, partitions=1)
    produce(p, topic, [{"value": f"v{i}".encode()} for i in range(30)])
    cfg = config(local_clusters, [("primary", "backup")], topics=topic)
    r = Replicator(cfg, spark)
    r.start()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            r.run()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        assert_eventually(lambda: r.flows[0].partitions[(topic, 0)].position == 30, timeout_s=60)
        commit(p, group, {(topic, 0): 17})
        assert_eventually(
            lambda: (
                (cp := checkpoints(b, "primary.checkpoints.internal", group).get((f"primary.{topic}", 0))) is not None
                and (cp.upstream_offset, cp.downstream_offset) == (17, 17)
            ),
            timeout_s=60,
        )
    finally:
        r.request_stop()
        t.join(60)
    assert not errors, errors
