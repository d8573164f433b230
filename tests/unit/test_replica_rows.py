"""Pure logic of replica status, elections and follower fetching (mirrorspark.core.replica_rows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrorspark.config.parse import parse_config
from mirrorspark.core.progress_records import PartitionReport, decode_report, encode_report
from mirrorspark.core.replica_rows import (
    JSON_KEYS,
    LEGEND,
    ElectionOutcome,
    FetchSource,
    PartitionState,
    RemoteCopy,
    broker_rx_bytes,
    copy_lag,
    election_failures,
    fetch_sources,
    lag_seconds,
    parse_partitions,
    partition_counts,
    replica_rows,
)
from mirrorspark.errors import ConfigError, CorruptRecordError

pytestmark = pytest.mark.unit

RACKS = {0: "a", 1: "a", 2: "b"}


def state(topic: str = "t", partition: int = 0, leader: int = 0, isr: tuple[int, ...] = (0, 1, 2)) -> PartitionState:
    return PartitionState(topic, partition, leader, (0, 1, 2), isr, RACKS, 5, 42, internal=topic.startswith("__"))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("0", {0}), ("0,5-7", {0, 5, 6, 7}), (" 3 , 1-1 ,", {1, 3}), ("2-4,3", {2, 3, 4})],
)
def test_partition_lists(spec: str, expected: set[int]) -> None:
    assert parse_partitions(spec) == expected


@pytest.mark.parametrize("spec", ["", ",", "x", "1-", "-1", "5-2", "1.5"])
def test_bad_partition_lists_name_the_syntax(spec: str) -> None:
    with pytest.raises(ConfigError, match=r"0,5-7|a-b"):
        parse_partitions(spec)


def test_one_row_per_replica_in_assignment_order() -> None:
    rows = replica_rows([state(partition=1, leader=1, isr=(1, 0)), state(partition=0)])
    assert [(r.partition, r.replica) for r in rows] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    p1 = {r.replica: r for r in rows if r.partition == 1}
    assert p1[1].is_leader and not p1[0].is_leader
    assert [p1[i].is_in_isr for i in (0, 1, 2)] == [True, True, False]
    assert [p1[i].is_caught_up for i in (0, 1, 2)] == [True, True, False]  # caught up = in the ISR
    assert p1[2].rack == "b" and p1[0].rack == "a"
    assert (p1[1].last_fetch_lag_ms, p1[0].last_fetch_lag_ms) == (0, -1)
    assert all(not r.is_observer and r.is_isr_eligible for r in rows)
    assert {(r.log_start_offset, r.log_end_offset) for r in rows} == {(5, 42)}


def test_json_keys_are_kafka_replica_status_names() -> None:
    [row] = replica_rows([state()], leaders="only")
    doc = row.to_json()
    assert list(doc) == list(JSON_KEYS)
    assert doc["isObserver"] is False and doc["isLeader"] is True and doc["rack"] == "a"
    assert {"topic", "partition", "replica", "isInIsr", "isCaughtUp", "logStartOffset", "logEndOffset"} <= set(doc)
    json.dumps(doc)


def test_filters() -> None:
    states = [state(), state(partition=5), state("__consumer_offsets", 0)]
    assert {r.replica for r in replica_rows(states, leaders="only")} == {0}
    assert {r.replica for r in replica_rows(states, leaders="exclude")} == {1, 2}
    assert {r.partition for r in replica_rows(states, partitions=frozenset({5}))} == {5}
    assert {r.topic for r in replica_rows(states, exclude_internal=True)} == {"t"}


def test_a_partition_without_leader_has_no_isr_member_and_unknown_offsets() -> None:
    offline = PartitionState("t", 0, -1, (1, 2), (1,), RACKS)
    rows = replica_rows([offline])
    assert not any(r.is_leader or r.is_in_isr or r.is_caught_up for r in rows)
    assert {(r.log_start_offset, r.log_end_offset) for r in rows} == {(-1, -1)}
    assert partition_counts(offline).in_sync == 0 and partition_counts(offline).not_caught_up == 1
    assert "-1" in LEGEND and "observers" in LEGEND


def test_partition_counts() -> None:
    c = partition_counts(state(isr=(0, 1)))
    assert (c.replicas, c.in_sync, c.caught_up, c.not_caught_up) == (3, 2, 2, 1)
    assert partition_counts(state()).not_caught_up == 0


def test_remote_copy_lag() -> None:
    assert copy_lag(10, 15) == 5
    assert copy_lag(20, 15) == 0  # a truncated source: nothing waits
    assert copy_lag(-1, 15) == copy_lag(3, -1) == -1
    assert lag_seconds(0, None, 10_000) == 0.0
    assert lag_seconds(5, 4_000, 10_000) == 6.0
    assert lag_seconds(5, None, 10_000) == lag_seconds(-1, 4_000, 10_000) == -1.0


def test_election_outcomes() -> None:
    cut = ElectionOutcome("t", 0, -1, 2, 100, 60)
    assert cut.truncated == 40
    assert ElectionOutcome("t", 0, -1, 2, -1, 60).truncated == 0
    ok = ElectionOutcome("t", 1, 1, 0, 5, 5, "ELECTION_NOT_NEEDED")
    bad = ElectionOutcome("t", 2, -1, -1, -1, -1, "ELIGIBLE_LEADERS_NOT_AVAILABLE")
    assert election_failures([cut, ok, bad]) == [bad]


STATS = {
    "brokers": {
        "127.0.0.1:9092/bootstrap": {"nodeid": -1, "rxbytes": 300},
        "127.0.0.1:9093/1": {"nodeid": 1, "rxbytes": 1_000},
        "127.0.0.1:9094/2": {"nodeid": 2, "rxbytes": 90_000},
    },
    "topics": {
        "t": {
            "partitions": {
                "0": {"partition": 0, "broker": 2, "leader": 1},
                "1": {"partition": 1, "broker": 1, "leader": 1},
                "-1": {"partition": -1, "broker": -1, "leader": -1},
            }
        },
        "odd": {"partitions": "nonsense"},
    },
}


def test_fetch_sources_from_librdkafka_statistics() -> None:
    sources = fetch_sources(STATS)
    assert sources == {("t", 0): FetchSource(2, 1), ("t", 1): FetchSource(1, 1)}
    assert sources[("t", 0)].from_follower and not sources[("t", 1)].from_follower
    assert broker_rx_bytes(STATS) == {1: 1_000, 2: 90_000}
    assert fetch_sources({}) == {} and broker_rx_bytes({"brokers": []}) == {}


def report(**kw: int) -> PartitionReport:
    return PartitionReport("A->B", "t", 0, 0, 1, 10, 10, 100, 0, 0, 0, 0, (), 1, **kw)


def test_reports_carry_the_fetch_source() -> None:
    r = report(fetched_from=2, leader=1)
    assert decode_report(*encode_report(r)) == r
    key, value = encode_report(report())
    old = json.loads(value)
    del old["fetched_from"], old["leader"]  # written before the fields existed
    back = decode_report(key, json.dumps(old).encode())
    assert (back.fetched_from, back.leader) == (-1, -1)
    old["fetched_from"] = -5
    with pytest.raises(CorruptRecordError, match="fetched_from"):
        decode_report(key, json.dumps(old).encode())


def config(text: str) -> dict[str, str | None]:
    props = dict(line.split("=", 1) for line in text.strip().splitlines())
    cfg = parse_config({"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092", **props})
    f = cfg.flow("A", "B")
    return {
        "source consumer": f.source_consumer.get("client.rack"),
        "source admin": f.source_admin.get("client.rack"),
        "target consumer": f.target_consumer.get("client.rack"),
        "cluster consumer": cfg.cluster("A").consumer.get("client.rack"),
    }


def test_client_rack_reaches_the_source_consumers_with_mm2_precedence() -> None:
    assert config("A.client.rack=r1") == {
        "source consumer": "r1",
        "source admin": None,
        "target consumer": None,
        "cluster consumer": "r1",
    }
    assert config("client.rack=r0")["target consumer"] == "r0"
    assert config("client.rack=r0\nA.client.rack=r1")["source consumer"] == "r1"
    assert config("A.client.rack=r1\nA.consumer.client.rack=r2")["source consumer"] == "r2"
    both = config("A.consumer.client.rack=r2\nA->B.source.consumer.client.rack=r3\nA->B.enabled=true")
    assert both["source consumer"] == "r3" and both["cluster consumer"] == "r2"


def test_client_rack_reaches_the_copy_tasks_librdkafka_config() -> None:
    from mirrorspark.client.context import ReplicationContext

    cfg = parse_config(
        {
            "clusters": "A, B",
            "A.bootstrap.servers": "a:9092",
            "B.bootstrap.servers": "b:9092",
            "A.client.rack": "rack-b",
            "A->B.enabled": "true",
        }
    )
    ctx = ReplicationContext(cfg).flow("A", "B")
    assert ctx.client_conf("source_consumer", "replication-consumer")["client.rack"] == "rack-b"
    assert not cfg.warnings


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replica-status", "--cluster", "A", "--partitions", "1-x"], "0,5-7"),
        (["replica-status", "--cluster", "A", "--leaders", "sometimes"], "--leaders exclude"),
        (["elect", "--cluster", "A", "--type", "unclean", "--topic", "t"], "--yes-i-may-lose-data"),
        (["elect", "--cluster", "A", "--type", "preferred"], "--topic T"),
        (["elect", "--cluster", "A", "--type", "preferred", "--all", "--topic", "t"], "--topic T"),
        (["elect", "--cluster", "A", "--type", "preferred", "--all", "--partition", "1"], "--partition needs --topic"),
    ],
)
def test_bad_command_lines_exit_2_before_connecting(tmp_path: Path, args: list[str], message: str) -> None:
    from typer.testing import CliRunner

    from mirrorspark.cli.app import app

    props = tmp_path / "mm2.properties"
    props.write_text("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\n")
    r = CliRunner().invoke(app, [args[0], str(props), *args[1:]])
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split())


def test_replica_count_series() -> None:
    from mirrorspark.service.replica_metrics import replica_families

    fams = {f.name: f for f in replica_families("east", [state(isr=(0, 1)), state(partition=1)])}
    assert set(fams) == {
        "mirrorspark_replicas_count",
        "mirrorspark_in_sync_replicas_count",
        "mirrorspark_caught_up_replicas_count",
        "mirrorspark_is_not_caught_up",
    }
    samples = {(f.name, s.labels["partition"]): s.value for f in fams.values() for s in f.samples}
    assert samples[("mirrorspark_replicas_count", "0")] == 3
    assert samples[("mirrorspark_in_sync_replicas_count", "0")] == 2
    assert samples[("mirrorspark_is_not_caught_up", "0")] == 1
    assert samples[("mirrorspark_is_not_caught_up", "1")] == 0
    assert {s.labels["cluster"] for f in fams.values() for s in f.samples} == {"east"}


def test_remote_copy_series() -> None:
    from mirrorspark.service.replica_metrics import remote_copy_families

    copies = {
        ("t", 0): [
            RemoteCopy("t", 0, "east->west", "west", "east.t", 40, 2, 1.5),
            RemoteCopy("t", 0, "east->north", "north", "east.t", -1, -1, -1),  # nothing committed yet
        ]
    }
    fams = {f.name: f for f in remote_copy_families("east", [state(), state(partition=1)], copies)}
    assert set(fams) == {
        "mirrorspark_remote_copies_count",
        "mirrorspark_remote_copy_lag_records",
        "mirrorspark_remote_copy_lag_seconds",
    }
    counts = {s.labels["partition"]: s.value for s in fams["mirrorspark_remote_copies_count"].samples}
    assert counts == {"0": 2, "1": 0}
    lags = {
        (s.labels["remote_cluster"], s.labels["remote_topic"]): s.value
        for s in fams["mirrorspark_remote_copy_lag_records"].samples
    }
    assert lags == {("west", "east.t"): 2}  # north's unknown lag is left out, never -1
    [age] = fams["mirrorspark_remote_copy_lag_seconds"].samples
    assert age.value == 1.5 and age.labels == {
        "cluster": "east",
        "topic": "t",
        "partition": "0",
        "remote_cluster": "west",
        "remote_topic": "east.t",
    }
