"""A flow's topic discovery and remote topics (MM2 ``MirrorSourceConnector``), against in-memory clusters."""

from __future__ import annotations

import pytest

from fakes import FakeClients, FakeCluster, two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.replication.connector.flow import Flow

pytestmark = pytest.mark.unit


def started_flow(cfg: MirrorConfig, clients: FakeClients) -> Flow:
    flow = Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path)
    flow.start()
    return flow


def test_source_topics_get_remote_topics_with_partitions_and_configs() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 3, {"retention.ms": "1000"})
    a.create_topic("payments", 1)
    flow = started_flow(cfg, clients)
    assert flow.remote_topics == {"orders": "A.orders", "payments": "A.payments"}
    assert len(b.topics["A.orders"].partitions) == 3
    assert b.topics["A.orders"].config == {"retention.ms": "1000"}  # set on the source; defaults stay the target's
    assert b.topics["A.payments"].config == {}
    assert flow.order == [("orders", 0), ("orders", 1), ("orders", 2), ("payments", 0)]
    # internal topics of the flow exist on the clusters
    assert "mm2-offsets.A.internal" in b.topics
    assert "mm2-offset-syncs.B.internal" in a.topics  # offset-syncs.topic.location=source


def test_internal_topics_cycles_and_filtered_topics_are_skipped() -> None:
    cfg, a, b, clients = two_clusters("A->B.topics = .*\nA->B.topics.exclude = .*\\.secret\n")
    for name in (
        "orders",
        "orders.secret",  # topics.exclude
        "B.orders",  # came from B: replicating it back to B is a cycle
        "__consumer_offsets",  # Kafka's own
        "mm2-offsets.B.internal",  # MM2's internal topics
        "B.checkpoints.internal",
        "heartbeats",  # heartbeats are replicated whatever the lists say
        "C.heartbeats",  # ...also those from further upstream
        "B.heartbeats",  # but not back to where they came from
    ):
        a.create_topic(name, 1)
    flow = started_flow(cfg, clients)
    assert sorted(flow.remote_topics.values()) == ["A.C.heartbeats", "A.heartbeats", "A.orders"]
    assert "A.B.orders" not in b.topics
    assert "A.orders.secret" not in b.topics


def test_heartbeats_follow_the_topic_lists_when_their_replication_is_off() -> None:
    cfg, a, _, clients = two_clusters("A->B.topics = orders\nA->B.heartbeats.replication.enabled = false\n")
    a.create_topic("orders", 1)
    a.create_topic("heartbeats", 1)
    assert started_flow(cfg, clients).remote_topics == {"orders": "A.orders"}


def test_refresh_finds_new_topics_and_partitions_and_grows_remote_topics() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    flow = started_flow(cfg, clients)
    assert flow.refresh_topics() == []
    a.add_partitions("orders", 3)
    a.create_topic("late", 2)
    added = flow.refresh_topics()
    assert sorted(added) == [("late", 0), ("late", 1), ("orders", 1), ("orders", 2)]
    assert len(b.topics["A.orders"].partitions) == 3
    assert len(b.topics["A.late"].partitions) == 2
    assert flow.refresh_topics() == []


def test_existing_remote_topics_are_kept_and_only_grown() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 2)
    b.create_topic("A.orders", 1, {"retention.ms": "5"})
    b.create_topic("A.wide", 4)
    a.create_topic("wide", 2)
    flow = started_flow(cfg, clients)
    assert len(b.topics["A.orders"].partitions) == 2
    assert b.topics["A.orders"].config == {"retention.ms": "5"}  # not recreated: the target's own configs stay
    assert len(b.topics["A.wide"].partitions) == 4  # never shrunk
    assert flow.topic_partitions == {"orders": 2, "wide": 2}


GRANT_ADDRESS = ("127.0.0.1", 1, "token")


def test_positions_start_at_the_log_start_and_tasks_cover_every_partition() -> None:
    cfg, a, _, clients = two_clusters("tasks.max = 2\n")
    a.create_topic("orders", 2)
    a.fill("orders", 0, 5)
    a.fill("orders", 1, 3)
    flow = started_flow(cfg, clients)
    assert {k: p.position for k, p in flow.partitions.items()} == {("orders", 0): 0, ("orders", 1): 0}
    tasks = flow.task_specs(1, GRANT_ADDRESS)
    assert [t.task_index for t in tasks] == [0, 1]  # min(tasks.max, partitions), MM2's round-robin
    starts = {(p.source_topic, p.partition): p.start for t in tasks for p in t.partitions}
    assert starts == {("orders", 0): 0, ("orders", 1): 0}
    assert [p.target_topic for t in tasks for p in t.partitions] == ["A.orders", "A.orders"]
    assert all(t.stop_at is None for t in tasks)
    bounded = flow.task_specs(2, GRANT_ADDRESS, stop_at={("orders", 0): 5})
    assert [t.stop_at for t in bounded] == [{("orders", 0): 5}, {("orders", 1): 0}]  # unlisted: ends where it is


def test_task_confs_follow_the_client_id_rule_and_are_built_once() -> None:
    cfg, a, _, clients = two_clusters("A.consumer.client.id = app\n")
    a.create_topic("orders", 1)
    a.fill("orders", 0, 1)
    flow = started_flow(cfg, clients)
    first = flow.task_specs(1, GRANT_ADDRESS)[0]
    consumer_conf, producer_conf = first.consumer_conf, first.producer_conf
    assert consumer_conf["client.id"] == "app|A->B|mirrorspark|replication-consumer"  # the user's id is kept
    assert producer_conf["client.id"] == "A->B|mirrorspark|replication-producer"
    assert consumer_conf["enable.auto.commit"] is False
    assert producer_conf["enable.idempotence"] is True
    assert producer_conf["linger.ms"] == 5
    assert flow.task_specs(2, GRANT_ADDRESS)[0].consumer_conf is first.consumer_conf  # not rebuilt per generation
    assert len(clients.translated) == len(set(clients.translated))


def test_flow_clients_are_named_by_the_flow() -> None:
    cfg, _, _, clients = two_clusters()
    started_flow(cfg, clients)
    assert "A->B|mirrorspark|replication-source-admin" in clients.client_ids
    assert "A->B|mirrorspark|gaps-producer" in clients.client_ids
    assert all(cid.startswith("A->B|mirrorspark|") for cid in clients.client_ids)


def test_two_clusters_helper_routes_by_bootstrap() -> None:
    _, a, b, clients = two_clusters()
    assert isinstance(a, FakeCluster) and clients.clusters == {"a:9092": a, "b:9092": b}
