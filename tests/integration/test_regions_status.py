"""Multi-region on Apache Kafka: follower fetching, replica status and leader elections (issue #14).

A 3-broker source ``east`` and a 3-broker target ``west``, both started by ``mirrorspark local up
--brokers 3 --racks a,a,b`` (racks plus ``RackAwareReplicaSelector``), shared by the module's tests
and stopped at its end. Node 0 is each cluster's only KRaft controller, so only brokers 1 and 2 are
ever stopped. The tests run in file order; each leaves every broker running, except the last
(unclean election), which restarts them in its cleanup.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic
from helpers import admin, assert_eventually, consume_all, produce, unique_name
from pyspark.sql import SparkSession
from test_replication import running
from typer.testing import CliRunner

from copy_check import assert_copy
from mirrorspark.cli.app import app
from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.parse import load_config
from mirrorspark.core.progress_records import decode_report, record_kind
from mirrorspark.core.replica_rows import broker_rx_bytes
from mirrorspark.kafka.local.clusters import load_clusters, restart_cluster, stop_broker, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.internal_topics import TASK_PROGRESS_PREFIX, mirrorspark_topic
from mirrorspark.replication.driver import Replicator
from mirrorspark.service.replica_metrics import ReplicaCollector, remote_copy_families, replica_families

# six brokers and a Spark session: slow to start on a loaded 2-core machine (well under 600 s on a quiet one)
pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.timeout(1500)]

RACKS = "a,a,b"  # brokers 0 and 1 in rack a, broker 2 in rack b


@pytest.fixture(scope="module")
def regions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClusters]:
    """``east`` and ``west``, 3 brokers each in racks a, a, b, started by the CLI (``local up``)."""
    base = tmp_path_factory.mktemp("regions")
    r = CliRunner().invoke(
        app,
        [
            "local",
            "up",
            "--clusters",
            "east,west",
            "--brokers",
            "3",
            "--racks",
            RACKS,
            "--dir",
            str(base),
            "--timeout",
            "300",
        ],
    )
    try:
        assert r.exit_code == 0, r.output
        yield load_clusters(base)
    finally:
        stop_clusters(base)


def write_config(clusters: LocalClusters, tmp_path: Path, topics: str, **extra: str) -> Path:
    """mm2.properties with the flow east->west replicating ``topics``, fast intervals."""
    text = clusters.mm2_properties(
        [("east", "west")],
        extra={
            "topics": topics,
            "refresh.topics.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "west.offset.flush.interval.ms": "1000",  # a worker key of the target
            "tasks.max": "2",
            **extra,
        },
    )
    path = tmp_path / "mm2.properties"
    path.write_text(text)
    return path


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def create_placed_topic(bootstrap: str, name: str, assignment: list[list[int]], **config: str) -> None:
    """Create a topic with an explicit replica assignment and wait until every replica is in the ISR."""
    client = admin(bootstrap)
    new = NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment, config=config)
    client.create_topics([new], request_timeout=30)[name].result(timeout=30)
    assert_eventually(
        lambda: layout(bootstrap, name) == {p: (r[0], sorted(r)) for p, r in enumerate(assignment)},
        timeout_s=60,
        message=f"{name}: replicas not all in sync",
    )


def layout(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int]]]:
    """``{partition: (leader, sorted ISR)}`` from metadata."""
    t = admin(bootstrap).list_topics(topic=topic, timeout=10).topics[topic]
    return {p.id: (p.leader, sorted(p.isrs)) for p in t.partitions.values()}


def status_rows(config: Path, *args: str) -> list[dict[str, Any]]:
    r = cli("replica-status", str(config), "--cluster", "east", "--json", *args)
    assert r.exit_code == 0, r.output
    rows: list[dict[str, Any]] = json.loads(r.stdout)
    return rows


def progress_reports(bootstrap: str, flow: str) -> list[Any]:
    out = []
    for rec in consume_all(bootstrap, mirrorspark_topic(TASK_PROGRESS_PREFIX, None, "east")):
        if record_kind(rec["key"]) == "report":
            rep = decode_report(rec["key"], rec["value"])
            if rep.flow == flow:
                out.append(rep)
    return out


def test_the_replicator_fetches_from_the_follower_in_its_rack(
    regions: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    east, west = regions.bootstrap("east"), regions.bootstrap("west")
    topic = unique_name("ff")
    create_placed_topic(east, topic, [[0, 2], [1, 2]])  # leaders in rack a, an in-sync follower in rack b
    payload = b"x" * 1024
    produce(east, topic, [{"value": payload + str(i).encode(), "partition": i % 2} for i in range(200)])
    # east.client.rack: the mirrorspark per-cluster form; statistics every second for the reports
    config = write_config(
        regions,
        tmp_path,
        topic,
        **{"east.client.rack": "b", "east.consumer.statistics.interval.ms": "1000"},
    )
    cfg = load_config(config)
    sent = [200]

    def reports_name_the_fetch_broker() -> bool:
        produce(east, topic, [{"value": payload + b"more", "partition": i % 2} for i in range(20)])
        sent[0] += 20
        reports = progress_reports(west, "east->west")
        known = [r for r in reports if r.records and r.fetched_from >= 0]
        seen = sorted({(r.partition, r.fetched_from, r.leader) for r in reports})
        assert {r.partition for r in known} == {0, 1}, f"{len(reports)} reports; (partition, from, leader): {seen}"
        return True

    with running(cfg, spark):
        assert_eventually(reports_name_the_fetch_broker, timeout_s=300, message="no report names its fetch broker")
        assert_eventually(
            lambda: len(consume_all(west, f"east.{topic}")) == sent[0], timeout_s=60, message="not all copied"
        )
    reports = [r for r in progress_reports(west, "east->west") if r.records and r.fetched_from >= 0]
    by_broker: dict[int, int] = {}
    for r in reports:
        by_broker[r.fetched_from] = by_broker.get(r.fetched_from, 0) + r.value_bytes + r.key_bytes
    assert set(by_broker) == {2}, by_broker  # every copied byte came from broker 2 (rack b), a follower
    # ... a follower: the leaders are 0 and 1 (a loaded machine may move a leadership for a while; the
    # reports made while broker 2 led do not count as follower fetches, the others must exist)
    assert any(r.leader in (0, 1) for r in reports), {(r.partition, r.leader) for r in reports}
    assert_copy(consume_all(east, topic), consume_all(west, f"east.{topic}"))  # record-exact

    # librdkafka's per-broker statistics of a consumer with the copy tasks' settings
    ctx = ReplicationContext(cfg).flow("east", "west")
    conf = ctx.client_conf(
        "source_consumer", "replication-consumer", overrides={"enable.auto.commit": False, "group.id": "ff-probe"}
    )
    assert conf["client.rack"] == "b"
    stats: list[dict[str, Any]] = []
    consumer = Consumer({**conf, "statistics.interval.ms": 500, "stats_cb": lambda s: stats.append(json.loads(s))})
    consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    got = 0
    deadline = time.monotonic() + 60
    while got < sent[0] and time.monotonic() < deadline:
        got += len([m for m in consumer.consume(500, timeout=1.0) if m.error() is None])
    for _ in range(4):  # a statistics document after the last fetch
        consumer.poll(0.5)
    consumer.close()
    assert got == sent[0]
    rx = broker_rx_bytes(stats[-1])
    assert rx[2] > 200 * 1024, rx  # the records' bytes came from broker 2 ...
    assert rx.get(0, 0) + rx.get(1, 0) < rx[2] / 10, rx  # ... not from the leaders (metadata only)

    # the remote copies of the partitions: caught up
    shown = cli("replica-status", str(config), "--cluster", "east", "--topics", topic, "--remote")
    print(shown.stdout)  # the examples of docs/multi-region.md come from here (pytest -s)
    rows = status_rows(config, "--topics", topic, "--remote", "--leaders")
    assert [(r["partition"], r["replica"], r["rack"]) for r in rows] == [(0, 0, "a"), (1, 1, "a")]
    for r in rows:
        [copy] = r["remote"]
        assert copy["cluster"] == "west" and copy["remoteTopic"] == f"east.{topic}"
        assert copy["position"] == r["logEndOffset"] and copy["lagRecords"] == 0 and copy["lagSeconds"] == 0
    # the same copies as the service's series
    collector = ReplicaCollector(load_config(config), "east")
    series = remote_copy_families("east", collector.states(), collector.copies())
    values = {(f.name, s.labels["topic"], s.labels["partition"]): s for f in series for s in f.samples}
    for p in (0, 1):
        assert values[("mirrorspark_remote_copies_count", topic, str(p))].value == 1
        lag = values[("mirrorspark_remote_copy_lag_records", topic, str(p))]
        assert lag.value == 0
        assert (lag.labels["remote_cluster"], lag.labels["remote_topic"]) == ("west", f"east.{topic}")
        assert values[("mirrorspark_remote_copy_lag_seconds", topic, str(p))].value == 0


def test_replica_status_follows_a_broker_out_of_the_isr_and_back(regions: LocalClusters, tmp_path: Path) -> None:
    east = regions.bootstrap("east")
    topic = unique_name("rs")
    create_placed_topic(east, topic, [[0, 1, 2], [1, 2, 0]])
    produce(east, topic, [{"value": str(i).encode(), "partition": i % 2} for i in range(10)])
    config = write_config(regions, tmp_path, topic)

    rows = status_rows(config, "--topics", topic)
    assert len(rows) == 6
    assert all(r["isInIsr"] and r["isCaughtUp"] and not r["isObserver"] for r in rows)
    assert {(r["partition"], r["replica"]) for r in rows if r["isLeader"]} == {(0, 0), (1, 1)}
    assert {(r["replica"], r["rack"]) for r in rows} == {(0, "a"), (1, "a"), (2, "b")}
    assert {(r["partition"], r["logStartOffset"], r["logEndOffset"]) for r in rows} == {(0, 0, 5), (1, 0, 5)}
    assert {r["replica"] for r in status_rows(config, "--topics", topic, "--partitions", "1", "--leaders")} == {1}
    followers = status_rows(config, "--topics", topic, "--leaders", "exclude")
    assert len(followers) == 4 and not any(r["isLeader"] for r in followers)
    table = cli("replica-status", str(config), "--cluster", "east", "--topics", topic, "--verbose")
    assert table.exit_code == 0 and "LastFetchLagMs" in table.stdout and "-1 = not given" in table.stdout

    state = stop_broker(load_clusters(regions.base_dir), "east", 2)
    try:

        def replica_2_out() -> bool:
            out = [r for r in status_rows(config, "--topics", topic) if r["replica"] == 2]
            return len(out) == 2 and not any(r["isInIsr"] or r["isCaughtUp"] for r in out)

        assert_eventually(replica_2_out, timeout_s=60, message="broker 2 stayed in the ISR")
        print(cli("replica-status", str(config), "--cluster", "east", "--topics", topic).stdout)
        assert all(r["isInIsr"] for r in status_rows(config, "--topics", topic) if r["replica"] != 2)
        # the service's series (MRC's partition metrics)
        series = replica_families("east", ReplicaCollector(load_config(config), "east").states())
        values = {(f.name, s.labels["topic"], s.labels["partition"]): s.value for f in series for s in f.samples}
        for p in (0, 1):
            assert values[("mirrorspark_replicas_count", topic, str(p))] == 3
            assert values[("mirrorspark_in_sync_replicas_count", topic, str(p))] == 2
            assert values[("mirrorspark_is_not_caught_up", topic, str(p))] == 1
    finally:
        state = restart_cluster(state, "east")

    def all_caught_up() -> bool:
        return all(r["isInIsr"] and r["isCaughtUp"] for r in status_rows(config, "--topics", topic))

    assert_eventually(all_caught_up, timeout_s=90, message="broker 2 did not catch up")


def test_a_preferred_election_moves_the_leader_back(regions: LocalClusters, tmp_path: Path) -> None:
    east = regions.bootstrap("east")
    topic = unique_name("pe")
    create_placed_topic(east, topic, [[1, 2]])
    config = write_config(regions, tmp_path, topic)
    state = stop_broker(load_clusters(regions.base_dir), "east", 1)
    try:
        assert_eventually(lambda: layout(east, topic)[0] == (2, [2]), timeout_s=60, message="no failover to 2")
    finally:
        state = restart_cluster(state, "east")
    assert_eventually(lambda: layout(east, topic)[0][1] == [1, 2], timeout_s=90, message="1 did not rejoin")

    r = cli("elect", str(config), "--cluster", "east", "--type", "preferred", "--topic", topic, "--json")
    assert r.exit_code == 0, r.output
    [outcome] = json.loads(r.stdout)
    # (the controller's own preferred-leader check, every 300 s, may have been quicker: then nothing to do)
    assert (outcome["leader_before"], outcome["error"]) in {(2, None), (1, "ELECTION_NOT_NEEDED")}, outcome
    assert outcome["leader_after"] == 1
    assert layout(east, topic)[0][0] == 1
    again = cli("elect", str(config), "--cluster", "east", "--type", "preferred", "--topic", topic)
    assert again.exit_code == 0 and "ELECTION_NOT_NEEDED" in again.stdout
    print(again.stdout)


def test_an_unclean_election_truncates_and_the_flow_records_a_gap(
    regions: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    east = regions.bootstrap("east")
    topic = unique_name("uc")
    create_placed_topic(east, topic, [[1, 2]], **{"min.insync.replicas": "1"})
    produce(east, topic, [{"value": f"a{i}".encode()} for i in range(50)])
    config = write_config(regions, tmp_path, topic)
    cfg = load_config(config)
    state = stop_broker(load_clusters(regions.base_dir), "east", 2)  # out of the ISR: it keeps 50 records
    try:
        assert_eventually(lambda: layout(east, topic)[0] == (1, [1]), timeout_s=60, message="2 stayed in the ISR")
        produce(east, topic, [{"value": f"b{i}".encode()} for i in range(50)])  # only broker 1 has these
        Replicator(cfg, spark).run(until_caught_up=True)  # the flow copies all 100
        state = stop_broker(state, "east", 1)  # the only in-sync replica is gone: no leader
        state = restart_cluster(state, "east", node_ids=[2])
        assert_eventually(lambda: layout(east, topic)[0][0] == -1, timeout_s=60, message="the partition has a leader")
        offline = status_rows(config, "--topics", topic)
        assert {(r["replica"], r["isLeader"], r["isInIsr"], r["logEndOffset"]) for r in offline} == {
            (1, False, False, -1),
            (2, False, False, -1),
        }

        refused = cli("elect", str(config), "--cluster", "east", "--type", "unclean", "--topic", topic)
        assert refused.exit_code == 2 and "--yes-i-may-lose-data" in refused.output
        args = ["--topic", topic, "--partition", "0", "--yes-i-may-lose-data", "--json"]
        r = cli("elect", str(config), "--cluster", "east", "--type", "unclean", *args)
        assert r.exit_code == 0, r.output
        print(r.stdout)
        [outcome] = json.loads(r.stdout)
        assert (outcome["leader_before"], outcome["leader_after"], outcome["error"]) == (-1, 2, None)
        assert (outcome["end_before"], outcome["end_after"]) == (-1, 50)

        Replicator(cfg, spark).run(until_caught_up=True)  # finds its position (100) beyond the end (50)
        status = cli("status", str(config), "--json")
        assert status.exit_code == 0, status.output
        gaps = [g for g in json.loads(status.stdout)["gaps"] if g["topic"] == topic]
        print(gaps)
        assert [(g["reason"], g["partition"], g["first_lost"], g["last_lost"]) for g in gaps] == [
            ("truncated", 0, 50, 99)
        ]
    finally:
        restart_cluster(state, "east")
