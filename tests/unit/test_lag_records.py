"""The driver's ``lag`` records of idle topics (#44): an unchanged topic is written every other round, still current.

On fake clusters (no broker): :class:`MetricsPublisher` and the service's reading of a topic as replicated while its
newest ``lag`` record is at most two rounds older than the flow's (``service.feed``).
"""

from __future__ import annotations

import pytest

from fakes import FakeCluster, two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.core.progress_records import decode_topic_lag, record_kind
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.worker.metrics_publisher import UNCHANGED_LAG_ROUNDS, MetricsPublisher

pytestmark = pytest.mark.unit

CHANNEL = "mm2-task-progress.A.internal"  # A->B's progress channel, on B
INTERVAL_MS = 1000


def lag_ats(b: FakeCluster, topic: str) -> list[int]:
    out = []
    for r in b.records(CHANNEL):
        if record_kind(r.key) == "lag":
            lag = decode_topic_lag(r.key, r.value)
            if lag.topic == topic:
                out.append(lag.at)
    return out


def test_an_unchanged_topics_lag_is_written_every_other_round_and_a_change_at_once() -> None:
    cfg, a, b, clients = two_clusters("A->B.topics = idle.*\n")
    for name in ("idle-1", "idle-2"):
        a.create_topic(name, 2)
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    flow.refresh_topics()
    now = [1_800_000_000_000]
    pub = MetricsPublisher(flow, interval_ms=INTERVAL_MS, clock_ms=lambda: now[0])
    pub.start()
    rounds = []
    for _ in range(6):
        pub.publish()
        rounds.append(now[0])
        now[0] += INTERVAL_MS
    assert UNCHANGED_LAG_ROUNDS == 2
    assert lag_ats(b, "idle-1") == rounds[::2]  # unchanged: every other round
    # at every round a reader keeps the topic: its newest lag at most two rounds older than the flow record
    assert all(at - max(x for x in lag_ats(b, "idle-1") if x <= at) < 2 * INTERVAL_MS for at in rounds)
    flow.partitions[("idle-2", 1)].end_offset = 5  # moved (and copied): written in the very next round
    flow.partitions[("idle-2", 1)].position = 5
    pub.publish()
    assert lag_ats(b, "idle-2")[-1] == now[0]
    now[0] += INTERVAL_MS
    pub.publish()  # the round after: neither changed since its write the round before
    assert lag_ats(b, "idle-2")[-1] == lag_ats(b, "idle-1")[-1] == now[0] - INTERVAL_MS
