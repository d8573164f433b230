"""Replica placement (issue #14 item 2) on real brokers: 3 brokers per cluster, racks a, a, b.

* a flow with ``mirrorspark.replica.placement`` creates (and grows) its remote topic with each
  partition's replicas in the placement's racks, the preferred leader in the first rack;
* ``mirrorspark placement apply --throttle N`` moves a topic created out of placement with Kafka's
  reassignment tool: the throttle configs are set during the move, ``status`` reports it,
  ``finish`` refuses while it runs and removes the throttles once it is done;
* observers, and racks the target lacks, exit 2.

The clusters are what ``mirrorspark local up --brokers 3 --racks a,a,b`` starts (the same
``start_clusters``), with a small ``replica.fetch.max.bytes`` so that a throttled move is slow
enough to be seen in progress.
"""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicCollection
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic
from helpers import admin, assert_eventually, unique_name

from mirrorspark.config.parse import load_config
from mirrorspark.kafka.local.clusters import start_clusters, stop_clusters
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.replication.driver import Replicator

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "mirrorspark"]
RACKS = {0: "a", 1: "a", 2: "b"}
THROTTLE = 10240  # bytes/s: about 100 s for the 1 MiB this test moves, until the test raises it
BROKER_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
B_THEN_A = {
    "version": 1,
    "replicas": [{"count": 1, "constraints": {"rack": "b"}}, {"count": 1, "constraints": {"rack": "a"}}],
}
A_THEN_B = {
    "version": 1,
    "replicas": [{"count": 1, "constraints": {"rack": "a"}}, {"count": 1, "constraints": {"rack": "b"}}],
}


@pytest.fixture(scope="module")
def racked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClusters]:
    """``primary`` and ``backup``, 3 brokers each on racks a, a, b."""
    base_dir = tmp_path_factory.mktemp("racked-clusters")

    def stop() -> None:
        stop_clusters(base_dir)

    atexit.register(stop)
    try:
        yield start_clusters(
            ["primary", "backup"],
            base_dir=base_dir,
            brokers=3,
            racks=[RACKS[0], RACKS[1], RACKS[2]],
            # small replica fetches: a throttled reassignment moves smoothly instead of in 1 MiB bursts
            extra_broker_props={"replica.fetch.max.bytes": "32768", "replica.fetch.response.max.bytes": "65536"},
            timeout_s=600,  # six JVMs on a busy machine
        )
    finally:
        stop()
        atexit.unregister(stop)


def run_cli(*args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout_s)


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def replicas_of(bootstrap: str, topic: str) -> list[tuple[list[int], list[str], int]]:
    """Per partition: replica ids, their racks, the leader."""
    client = admin(bootstrap)  # kept referenced until the result is in: a dropped client fails its futures
    d = client.describe_topics(TopicCollection([topic]))[topic].result(timeout=30)
    return [
        ([r.id for r in p.replicas], [r.rack for r in p.replicas], p.leader.id)
        for p in sorted(d.partitions, key=lambda p: p.id)
    ]


def throttle_configs(bootstrap: str, topic: str) -> dict[str, str]:
    """The throttle configs set dynamically on broker 2 and on ``topic``."""
    client = admin(bootstrap)
    out: dict[str, str] = {}
    for res in (ConfigResource(ConfigResource.Type.BROKER, "2"), ConfigResource(ConfigResource.Type.TOPIC, topic)):
        entries = client.describe_configs([res])[res].result(timeout=30)
        out.update({n: e.value for n, e in entries.items() if "throttled" in n and e.value and not e.is_default})
    return out


def test_a_flow_creates_and_grows_remote_topics_in_placement(racked: LocalClusters, tmp_path: Path) -> None:
    p, b = racked.bootstrap("primary"), racked.bootstrap("backup")
    topic = unique_name("placed")
    source = admin(p)
    source.create_topics([NewTopic(topic, num_partitions=4, replication_factor=3)])[topic].result(timeout=30)
    placement = write_json(tmp_path / "placement.json", B_THEN_A)
    props = racked.mm2_properties(
        flows=[("primary", "backup")],
        extra={
            "primary->backup.topics": topic,
            "primary->backup.mirrorspark.replica.placement": str(placement),
            "emit.checkpoints.enabled": "false",
            "sync.topic.acls.enabled": "false",
        },
    )
    (tmp_path / "mm2.properties").write_text(props)
    r = Replicator(load_config(tmp_path / "mm2.properties"))
    r.start()  # creates the remote topic
    try:
        remote = f"primary.{topic}"
        placed = replicas_of(b, remote)
        assert len(placed) == 4
        for ids, racks, leader in placed:
            assert racks == ["b", "a"], placed  # count 1 in b (preferred leader), count 1 in a
            assert leader == ids[0] == 2
        assert {ids[1] for ids, _, _ in placed} == {0, 1}  # spread over rack a's brokers
        source.create_partitions([NewPartitions(topic, 6)])[topic].result(timeout=30)

        def grown() -> bool:
            # grows the remote topic: the new partitions are placed too (refreshed at each look: the
            # source's metadata may show the new partitions a moment after create_partitions returned)
            r.flows[0].refresh_topics()
            rows = replicas_of(b, remote)
            assert len(rows) == 6 and all(racks == ["b", "a"] for _, racks, _ in rows), rows
            return True

        assert_eventually(grown, timeout_s=60)
    finally:
        r.close()


def test_placement_apply_moves_out_of_placement_partitions_under_a_throttle(
    racked: LocalClusters, tmp_path: Path
) -> None:
    b = racked.bootstrap("backup")
    topic = unique_name("misplaced")
    # p0 and p1 both in rack a (p1 led from 1), p2 led from rack b: all three out of A_THEN_B
    new = NewTopic(topic, num_partitions=3, replica_assignment=[[0, 1], [1, 0], [2, 0]])
    target = admin(b)
    target.create_topics([new])[topic].result(timeout=30)
    # small batches: a fetch returns at least one whole batch, so big ones would slip past the throttle
    producer = Producer({"bootstrap.servers": b, "linger.ms": 5, "batch.num.messages": 8, "acks": "all"})
    for i in range(1024):  # 512 KiB in each of p0 and p1, the partitions whose data moves
        producer.produce(topic, b"x" * 1024, partition=i % 2)
    assert producer.flush(60) == 0
    conf = tmp_path / "mm2.properties"
    conf.write_text(racked.mm2_properties(flows=[]))
    placement = write_json(tmp_path / "a-then-b.json", A_THEN_B)
    common = [str(conf), "--cluster", "backup", "--placement", str(placement), "--topic-regex", topic]

    plan = run_cli("placement", "plan", *common, "--json")
    assert plan.returncode == 0, plan.stderr
    moves = {m["partition"]: m for m in json.loads(plan.stdout)["moves"]}
    assert moves[0]["target"] == [0, 2] and moves[0]["adding"] == [2] and moves[0]["removing"] == [1]
    assert moves[1]["target"] == [1, 2] and moves[1]["adding"] == [2] and moves[1]["removing"] == [0]
    assert moves[2]["target"] == [0, 2] and moves[2]["adding"] == [] and moves[2]["removing"] == []  # a reorder

    applied = run_cli("placement", "apply", *common, "--throttle", str(THROTTLE))
    assert applied.returncode == 0, applied.stderr
    assert f"started 3 reassignment(s) with a replication throttle of {THROTTLE} B/s" in applied.stdout
    set_now = throttle_configs(b, topic)  # set by the tool for the move, kept until `finish`
    assert set_now["leader.replication.throttled.rate"] == str(THROTTLE)
    assert set_now["follower.replication.throttled.rate"] == str(THROTTLE)
    assert "0:2" in set_now["follower.replication.throttled.replicas"]
    assert "0:1" in set_now["leader.replication.throttled.replicas"]

    status = run_cli("placement", "status", *common, "--json")
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    rows = {row["partition"]: row for row in doc["partitions"]}
    assert rows[0]["state"] == "in progress", rows
    assert rows[0]["adding"] == [2] and rows[0]["removing"] == [1] and rows[0]["target"] == [0, 2]
    assert rows[2]["state"] == "done" and rows[2]["replicas"] == [0, 2]
    assert doc["throttles"]["broker 2"]["follower.replication.throttled.rate"] == str(THROTTLE)
    early = run_cli("placement", "finish", *common)
    if early.returncode == 1:  # still moving: nothing changed
        assert "still in progress" in early.stdout
        assert throttle_configs(b, topic)["leader.replication.throttled.rate"] == str(THROTTLE)
    else:  # the move ended between status and finish (a slow machine)
        assert early.returncode == 0, early.stderr
    # raise the brokers' rate, as an operator would (kafka-configs), so that the move ends soon
    client = admin(b)
    fast = [ConfigEntry(n, "104857600", incremental_operation=AlterConfigOpType.SET) for n in BROKER_RATES]
    for broker in RACKS:
        res = ConfigResource(ConfigResource.Type.BROKER, str(broker), incremental_configs=fast)
        client.incremental_alter_configs([res])[res].result(timeout=30)

    def placed() -> dict[str, Any]:
        st = json.loads(run_cli("placement", "status", *common, "--json").stdout)
        assert st["done"] == 3, st["partitions"]
        return st

    assert_eventually(placed, timeout_s=240, interval_s=2, message="the reassignment did not complete")
    finished = run_cli("placement", "finish", *common, "--wait", "60")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "placement finished" in finished.stdout
    assert throttle_configs(b, topic) == {}
    for ids, racks, leader in replicas_of(b, topic):
        assert racks == ["a", "b"] and leader == ids[0], (ids, racks, leader)
    again = run_cli("placement", "plan", *common, "--json")
    assert json.loads(again.stdout)["moves"] == []


def test_observers_and_missing_racks_exit_2(racked: LocalClusters, tmp_path: Path) -> None:
    observers = write_json(
        tmp_path / "observers.json",
        {**A_THEN_B, "observers": [{"count": 1, "constraints": {"rack": "b"}}]},
    )
    conf = tmp_path / "mm2.properties"
    conf.write_text(racked.mm2_properties(flows=[]))
    r = run_cli("placement", "plan", str(conf), "--cluster", "backup", "--placement", str(observers))
    assert r.returncode == 2, r.stderr
    assert "[CONFIG_PLACEMENT]" in r.stderr and "observers" in r.stderr
    assert "replication flow to a cluster in that region" in r.stderr

    with_observers = tmp_path / "observers.properties"
    with_observers.write_text(
        racked.mm2_properties(
            flows=[("primary", "backup")], extra={"primary->backup.mirrorspark.replica.placement": str(observers)}
        )
    )
    r = run_cli("run", str(with_observers), "--until-caught-up", timeout_s=60)
    assert r.returncode == 2 and "observers" in r.stderr, r.stderr

    rack_c = write_json(tmp_path / "c.json", {"version": 1, "replicas": [{"count": 1, "constraints": {"rack": "c"}}]})
    unknown = tmp_path / "rack-c.properties"
    unknown.write_text(
        racked.mm2_properties(
            flows=[("primary", "backup")],
            extra={"primary->backup.mirrorspark.replica.placement": str(rack_c), "primary->backup.topics": "none"},
        )
    )
    r = run_cli("run", str(unknown), "--until-caught-up")
    assert r.returncode == 2, r.stderr
    assert "rack 'c' has no broker on cluster 'backup'" in r.stderr and "a (2), b (1)" in r.stderr
    assert "Traceback" not in r.stderr
