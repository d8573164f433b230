"""No write unchecked on the driver: checkpoints, heartbeats and lifetime totals check delivery.

A failed write is sent again (bounded); the state that depends on it (checkpoint store,
published totals) advances only once it is acknowledged; a write that still fails raises a
ClusterError naming the flow, the topic and the cluster (or, for heartbeats and totals, is
logged at WARNING and written again at the next tick). Group offset sync moves a group only
forward and only when its state is known. Against the in-memory fakes. (The copy tasks' own
commit writes: ``test_copy_task_runner.py``.)
"""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError

from fakes import FakeClients, FakeCluster, FakeProducer, two_clusters
from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.progress_records import PartitionReport
from mirrorspark.errors import ClusterError
from mirrorspark.kafka.delivery import Outgoing, deliver
from mirrorspark.mm2.records import Checkpoint, OffsetSync
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.connector.heartbeats import HeartbeatEmitter
from mirrorspark.replication.connector.totals_publisher import TotalsPublisher

pytestmark = pytest.mark.unit

SYNCS = "mm2-offset-syncs.B.internal"  # A->B's offset syncs, on A (offset-syncs.topic.location=source)
OFFSETS = "mm2-offsets.A.internal"  # on B
CHECKPOINTS = "A.checkpoints.internal"  # on B
FOREVER = 10**9


def started_flow(cfg: MirrorConfig, clients: FakeClients) -> Flow:
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    return flow


def flow_with_backlog() -> tuple[Flow, FakeCluster, FakeCluster]:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    a.fill("orders", 0, 5)
    return started_flow(cfg, clients), a, b


def copied(flow: Flow, next_offset: int = 5) -> None:
    """A copy task's progress report: ``orders-0`` copied and committed up to ``next_offset``."""
    report = PartitionReport(
        flow="A->B",
        topic="orders",
        partition=0,
        task=0,
        generation=1,
        next_offset=next_offset,
        records=next_offset,
        value_bytes=10,
        key_bytes=0,
        latency_ms_sum=0,
        latency_ms_max=0,
        latency_samples=0,
        segments=(),
        at=1_000,
    )
    assert flow.apply_report(report)


def test_deliver_sends_failed_records_again_in_order_and_then_raises() -> None:
    cluster = FakeCluster("B")
    cluster.create_topic("t", 1)
    producer = FakeProducer(cluster)
    cluster.failing_writes["t"] = 1  # the first send of the first record fails
    records = [Outgoing("t", b"k", str(i).encode(), partition=0) for i in range(3)]
    deliver(producer, records, what="test", alias="B", sleep=lambda _: None)
    # sent again from the first that failed, in order: the newest record of a key stays the newest
    assert [r.value for r in cluster.records("t")] == [b"1", b"2", b"0", b"1", b"2"]
    cluster.failing_writes["t"] = FOREVER
    with pytest.raises(ClusterError, match="test: writing to topic 't' on cluster 'B' failed") as e:
        deliver(producer, records, what="test", alias="B", attempts=3, sleep=lambda _: None)
    assert e.value.kafka_code == "_MSG_TIMED_OUT"
    assert producer.failed == 1 + 3 * 3  # bounded: every attempt sends all three again


def emitter(cfg: MirrorConfig, clients: FakeClients) -> CheckpointEmitter:
    contexts = ReplicationContext(cfg, clients)
    ctx = contexts.flow("A", "B")
    e = CheckpointEmitter(ctx, reverse=contexts.reverse(ctx), clock_ms=lambda: 1_000)
    e.start()
    return e


def checkpointed(extra: str = "") -> tuple[CheckpointEmitter, FakeCluster, FakeCluster]:
    cfg, a, b, clients = two_clusters(extra)
    a.create_topic("orders", 1)
    a.create_topic(SYNCS, 1)
    s = OffsetSync("orders", 0, 10, 110)
    a.append(SYNCS, s.key(), s.value())
    a.commit("app", {("orders", 0): 10})
    return emitter(cfg, clients), a, b


def test_checkpoints_enter_the_store_only_once_acknowledged() -> None:
    e, _, b = checkpointed()
    b.failing_writes[CHECKPOINTS] = FOREVER
    with pytest.raises(ClusterError, match=f"A->B: checkpoints: writing to topic '{CHECKPOINTS}' on cluster 'B'"):
        e.emit()
    assert e.store.get("app", "A.orders", 0) is None  # not "more recent than" a checkpoint never written
    b.failing_writes[CHECKPOINTS] = 0
    [cp] = e.emit()  # the next cycle writes it
    assert cp == Checkpoint("app", "A.orders", 0, 10, 110, "")
    assert [Checkpoint.decode(r.key, r.value) for r in b.records(CHECKPOINTS)] == [cp]
    assert e.store.get("app", "A.orders", 0) == cp


def test_a_group_whose_description_fails_is_not_synced_nor_rewound(caplog: pytest.LogCaptureFixture) -> None:
    e, _, b = checkpointed("sync.group.offsets.enabled = true\n")
    e.emit()
    b.create_topic("A.orders", 1)
    b.fill("A.orders", 0, 200)  # the copies the checkpoints point into
    b.commit("app", {("A.orders", 0): 500})  # ahead of the checkpoint (110)
    b.describe_errors["app"] = KafkaError.GROUP_AUTHORIZATION_FAILED
    with caplog.at_level(logging.WARNING):
        assert e.sync_group_offsets() == {}
    assert b.groups["app"].offsets == {("A.orders", 0): (500, "")}  # never rewound
    assert "not syncing offsets of group app" in caplog.text and "cluster 'B'" in caplog.text
    del b.describe_errors["app"]
    assert e.sync_group_offsets() == {}  # known Empty now: the forward-only check keeps 500
    assert b.groups["app"].offsets == {("A.orders", 0): (500, "")}


def test_a_group_the_coordinator_does_not_know_is_synced() -> None:
    e, _, b = checkpointed("sync.group.offsets.enabled = true\n")
    e.emit()
    b.create_topic("A.orders", 1)
    b.fill("A.orders", 0, 200)  # the copies the checkpoints point into
    b.describe_errors["app"] = KafkaError.GROUP_ID_NOT_FOUND  # KIP-848: no such group
    assert e.sync_group_offsets() == {"app": 1}
    assert b.groups["app"].offsets == {("A.orders", 0): (110, "")}


def test_failed_heartbeats_are_logged_and_the_next_one_is_written(caplog: pytest.LogCaptureFixture) -> None:
    cfg, _, b, clients = two_clusters()
    ctx = ReplicationContext(cfg, clients).flow("A", "B")
    hb = HeartbeatEmitter([ctx], clock_ms=lambda: 1_000)
    hb.start()
    b.failing_writes["heartbeats"] = 1
    with caplog.at_level(logging.WARNING):
        hb.emit(ctx)
    assert (hb.emitted, hb.failed) == (0, 1)
    assert "writing a heartbeat to topic 'heartbeats' on cluster 'B' failed" in caplog.text
    assert "A->B" in caplog.text
    hb.emit(ctx)
    assert (hb.emitted, hb.failed) == (1, 1)
    assert len(b.records("heartbeats")) == 1


def test_progress_not_acknowledged_is_published_again_next_tick(caplog: pytest.LogCaptureFixture) -> None:
    flow, _, b = flow_with_backlog()
    pub = TotalsPublisher(flow)
    pub.start()
    copied(flow)
    topic = "mm2-progress.A.internal"
    b.failing_writes[topic] = FOREVER
    with caplog.at_level(logging.WARNING):
        assert pub.publish() == 0
    assert f"writing to topic '{topic}' on cluster 'B' failed" in caplog.text
    b.failing_writes[topic] = 0
    assert pub.publish() == 1  # not marked published while unacknowledged: written now
    assert len(b.records(topic)) == 1
    assert pub.publish() == 0  # and only once


def test_a_coordinator_still_loading_is_routine_until_it_lasts(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """COORDINATOR_LOAD_IN_PROGRESS on a fresh cluster: INFO, retried next cycle; a WARNING once it persists."""
    from mirrorspark.replication.connector import group_offset_sync

    e, _, b = checkpointed("sync.group.offsets.enabled = true\n")
    e.emit()
    b.create_topic("A.orders", 1)
    b.fill("A.orders", 0, 200)
    b.commit("app", {("A.orders", 0): 500})
    b.describe_errors["app"] = KafkaError.COORDINATOR_LOAD_IN_PROGRESS
    with caplog.at_level(logging.INFO):
        assert e.sync_group_offsets() == {}
        assert e.sync_group_offsets() == {}
    described = [r for r in caplog.records if "not syncing offsets of group app" in r.getMessage()]
    assert len(described) == 2 and all(r.levelno == logging.INFO for r in described)
    caplog.clear()
    monkeypatch.setattr(group_offset_sync, "TRANSIENT_DESCRIBE_GRACE_S", 0.0)  # it has lasted long enough now
    with caplog.at_level(logging.WARNING):
        assert e.sync_group_offsets() == {}
    assert "not syncing offsets of group app" in caplog.text
    assert b.groups["app"].offsets == {("A.orders", 0): (500, "")}  # never rewound
