"""Group offset sync's counts per target group, from the driver's ``group-sync`` records to ``status`` (#40).

On fake clusters (no broker): the driver's :class:`MetricsPublisher` writes a group's counts whenever they changed,
checkpoint cycle or not; ``status`` reads the newest per group (the REST API and /metrics: ``test_service_api``).
"""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest

from fakes import FakeClients, FakeCluster, two_clusters
from mirrorspark.cli.app import _print_flow_status
from mirrorspark.client.context import FlowContext, ReplicationContext
from mirrorspark.client.status import FlowStatus, flow_status
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.group_sync_counts import GroupSyncCounts
from mirrorspark.core.progress_records import (
    GroupMetrics,
    GroupPartition,
    GroupSync,
    decode_group_sync,
    encode_group_metrics,
    encode_group_sync,
    record_kind,
)
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.worker.metrics_publisher import MetricsPublisher

pytestmark = pytest.mark.unit

CHANNEL = "mm2-task-progress.A.internal"  # A->B's progress channel, on B
NOW = 1_800_000_000_000


def publisher(cfg: MirrorConfig, clients: FakeClients) -> tuple[MetricsPublisher, CheckpointEmitter]:
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    contexts = ReplicationContext(cfg, clients)
    ctx = contexts.flow("A", "B")
    emitter = CheckpointEmitter(ctx, reverse=contexts.reverse(ctx), clock_ms=lambda: NOW)
    emitter.start()
    pub = MetricsPublisher(flow, interval_ms=1000, checkpoints=emitter, clock_ms=lambda: NOW)
    pub.start()
    return pub, emitter


def published(b: FakeCluster, kind: str = "group-sync") -> list[bytes]:
    return [r.value for r in b.records(CHANNEL) if record_kind(r.key) == kind]


def test_the_driver_writes_a_groups_counts_whenever_they_changed_without_a_checkpoint_cycle(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cfg, _, b, clients = two_clusters()
    pub, emitter = publisher(cfg, clients)
    assert emitter.last_cycle is None
    pub.publish()
    assert published(b) == []  # no counts yet: nothing
    counts = emitter.group_sync.counts
    counts["app"] = GroupSyncCounts(synced=1)
    pub.publish()
    pub.publish()  # unchanged: not written again
    [rec] = [r for r in b.records(CHANNEL) if record_kind(r.key) == "group-sync"]
    assert decode_group_sync(rec.key, rec.value) == GroupSync("A->B", "app", NOW, GroupSyncCounts(synced=1))
    assert published(b, "group") == []  # still no cycle: no group record
    counts["app"].skipped_active += 1  # the control thread mutates the counts in place
    counts["other"] = GroupSyncCounts(skipped_unknown=3)
    b.failing_writes[CHANNEL] = 10**9
    with caplog.at_level(logging.WARNING):
        assert pub.publish() == 0
    b.failing_writes[CHANNEL] = 0
    pub.publish()  # not marked written while unacknowledged: both written now
    pub.publish()
    assert [json.loads(v) for v in published(b)[1:]] == [
        {"v": 1, "at": NOW, "synced": 1, "skipped_active": 1, "skipped_unknown": 0},
        {"v": 1, "at": NOW, "synced": 0, "skipped_active": 0, "skipped_unknown": 3},
    ]


def _status(cfg: MirrorConfig, clients: FakeClients) -> FlowStatus:
    return flow_status(cfg, cfg.flow("A", "B"), now_ms=NOW, context=ReplicationContext(cfg, clients=clients))


def test_status_shows_each_groups_counts_in_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    b.create_topic(CHANNEL, 1)
    g = GroupMetrics("A->B", "app", NOW, 7, (GroupPartition("orders", "A.orders", 0, 9, 7, 7, 2, 2),))
    b.append(CHANNEL, *encode_group_metrics(g))  # a driver before the counts: no counts
    f = _status(cfg, clients)
    assert f.group_offset_sync == {} and dataclasses.asdict(f)["group_offset_sync"] == {}
    _print_flow_status(f)
    assert "skipped" not in capsys.readouterr().out
    for m in (
        GroupSync("A->B", "app", NOW - 10, GroupSyncCounts(12, 3, 1)),
        GroupSync("A->B", "app", NOW - 9000, GroupSyncCounts(1, 0, 0)),  # older, read later: ignored
        GroupSync("A->B", "billing", NOW - 20, GroupSyncCounts(0, 0, 2)),
        GroupSync("C->B", "app", NOW, GroupSyncCounts(99, 0, 0)),  # another flow's
    ):
        b.append(CHANNEL, *encode_group_sync(m))
    b.append(CHANNEL, b'{"kind":"group-sync","flow":"A->B","group":"app"}', b"junk")  # skipped
    f = _status(cfg, clients)
    assert f.group_offset_sync == {"app": GroupSyncCounts(12, 3, 1), "billing": GroupSyncCounts(0, 0, 2)}
    assert dataclasses.asdict(f)["group_offset_sync"]["app"] == {
        "synced": 12,
        "skipped_active": 3,
        "skipped_unknown": 1,
    }
    _print_flow_status(f)
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("group (offset sync)"))
    assert [line.split() for line in out[start : start + 3]] == [
        ["group", "(offset", "sync)", "synced", "skipped:", "active", "skipped:", "unknown"],
        ["app", "12", "3", "1"],
        ["billing", "0", "0", "2"],
    ]
