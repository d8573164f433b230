"""``mirrorspark drill`` on real clusters: predicted re-reads and skips equal what a real consumer reads.

One scenario for the module: a topic on ``primary`` (2 partitions, 100 records each) copied to ``backup`` by
one run until caught up, then 50 more records per partition that are not copied (the recovery point).
Consumer groups sit at different places: at their checkpoint (inside the copied segment), past it, ahead of
the copy, reset back behind it (a failover would skip records), and one with a member on the target. A big
topic gives Ctrl-C time to land mid-drill.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import ConfigResource
from helpers import admin, assert_eventually, create_topic, produce, unique_name
from helpers import commit_offsets as commit
from pyspark.sql import SparkSession

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.drills import DRILLS_PREFIX, DrillResult, decode_drill
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.internal_topics import mirrorspark_topic
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CLI = [sys.executable, "-m", "mirrorspark"]
COPIED, LATER = 100, 50  # records per partition copied by the run, and produced after it
BIG = 200_000  # records of the big topic (Ctrl-C mid-drill)

Offsets = dict[tuple[str, int], int]


@dataclass(frozen=True)
class Scenario:
    props: Path
    primary: str
    backup: str
    prefix: str
    topic: str
    big: str

    def group(self, role: str) -> str:
        return f"{self.prefix}-{role}"

    def cli(self, *args: str, timeout_s: float = 180) -> subprocess.CompletedProcess[str]:
        cmd = [*CLI, "drill", str(self.props), "--source", "primary", "--target", "backup", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)

    def drill_json(self, *args: str, expect: int = 0) -> dict[str, Any]:
        r = self.cli(*args, "--json")
        assert r.returncode == expect, r.stdout + r.stderr
        out: dict[str, Any] = json.loads(r.stdout)
        return out


@pytest.fixture(scope="module")
def scenario(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenario]:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("drill")
    topic, big, trimmed = f"{prefix}-orders", f"{prefix}-big", f"{prefix}-trimmed"
    create_topic(p, topic, partitions=2)
    produce(
        p, topic, [{"value": f"o{i}".encode(), "key": str(i).encode(), "partition": i % 2} for i in range(2 * COPIED)]
    )
    # the first 40 records deleted before the flow copies anything: its first offset sync is for 40
    create_topic(p, trimmed, partitions=1)
    produce(p, trimmed, [{"value": f"t{i}".encode()} for i in range(COPIED)])
    delete_records(p, trimmed, 0, 40)
    create_topic(p, big, partitions=1)
    for start in range(0, BIG, 50_000):
        produce(p, big, [{"value": f"big-{i}".encode()} for i in range(start, start + 50_000)], timeout_s=120)
    before: dict[str, Offsets] = {
        "inside": {(topic, 0): 50, (topic, 1): 50},
        "moved": {(topic, 0): 50, (topic, 1): 20},
        "ahead": {(topic, 0): 60, (topic, 1): 60},
        "behind": {(topic, 0): 60, (topic, 1): 60},
        "active": {(topic, 0): 70, (topic, 1): 70},
        "trimmed": {(trimmed, 0): 60},
        "big": {(big, 0): 0},
        "interrupted": {(big, 0): 0},
    }
    for role, offsets in before.items():
        commit(p, f"{prefix}-{role}", offsets)
    text = local_clusters.mm2_properties(
        [("primary", "backup")],
        extra={
            "topics": f"{prefix}-.*",
            "groups": f"{prefix}-.*",
            "refresh.groups.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "offset.lag.max": "10",
            "tasks.max": "2",
        },
    )
    props = tmp_path_factory.mktemp("drill") / "mm2.properties"
    props.write_text(text)
    Replicator(parse_config(parse_properties(text)), spark).run(until_caught_up=True)
    # after the run: records not copied yet, and groups that moved on the source since their checkpoints
    produce(p, topic, [{"value": f"later{i}".encode(), "partition": i % 2} for i in range(2 * LATER)])
    commit(p, f"{prefix}-moved", {(topic, 0): 80})
    commit(p, f"{prefix}-ahead", {(topic, 0): 130, (topic, 1): 110})
    commit(p, f"{prefix}-behind", {(topic, 0): 20})
    commit(p, f"{prefix}-trimmed", {(trimmed, 0): 20})  # behind the oldest offset sync (and the log start)
    yield Scenario(props, p, b, prefix, topic, big)


def delete_records(bootstrap: str, topic: str, partition: int, before: int) -> None:
    """``kafka-delete-records``: the partition's log start becomes ``before``."""
    client = admin(bootstrap)  # kept until the future completes
    [fut] = client.delete_records([TopicPartition(topic, partition, before)], request_timeout=30).values()
    fut.result(30)


def partitions(result: dict[str, Any], group: str) -> dict[int, dict[str, Any]]:
    (g,) = [g for g in result["groups"] if g["group"] == group]
    return {p["partition"]: p for p in g["partitions"]}


def shadow_groups(bootstrap: str, prefix: str) -> list[str]:
    client = admin(bootstrap)  # kept until the future completes
    groups = client.list_consumer_groups().result(30)
    return sorted(g.group_id for g in groups.valid if g.group_id.startswith(f"mirrorspark-drill.{prefix}"))


# --------------------------------------------------------------------------- prediction


def test_drill_predicts_the_recovery_point_and_each_groups_rereads(scenario: Scenario) -> None:
    s = scenario
    r = s.drill_json("--groups", f"{s.prefix}-(inside|moved|ahead)", "--no-record")
    assert r["executed"] is False and r["flow"] == "primary->backup"
    mine = [p for p in r["recovery_point"]["partitions"] if p["topic"] == s.topic]
    assert [(p["partition"], p["position"], p["records"]) for p in mine] == [(0, 100, 50), (1, 100, 50)]
    assert all(p["seconds"] > 0 for p in mine)
    assert r["recovery_point"]["records"] >= 2 * LATER
    expected = {"inside": (0, 0), "moved": (30, 0), "ahead": (40, 40)}  # re-reads of partition 0, 1
    for role, (p0, p1) in expected.items():
        rows = partitions(r, s.group(role))
        assert (rows[0]["rereads"], rows[1]["rereads"]) == (p0, p1), role
        assert rows[0]["skips"] == rows[1]["skips"] == 0
        assert rows[0]["target_offset"] == rows[0]["checkpoint_upstream"]  # fresh remote topic: same offsets
        assert {row["basis"] for row in rows.values()} == {"exact"}
    ahead = partitions(r, s.group("ahead"))
    assert (ahead[0]["source_lag"], ahead[1]["source_lag"]) == (20, 40)
    assert r["policy"]["policy"] == "manual" and r["policy"]["action"] == "nothing"
    assert "healthy" in r["policy"]["reason"]
    assert shadow_groups(s.backup, s.prefix) == []


def test_drill_prints_a_table_a_person_reads(scenario: Scenario) -> None:
    s = scenario
    r = s.cli("--groups", f"{s.prefix}-(inside|moved)", "--no-record")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("drill of flow primary->backup at ")
    assert "prediction only: no consumer group changed" in out
    assert "recovery point: " in out and "gaps in the ledger: none" in out
    (moved,) = [line.split() for line in out.splitlines() if line.startswith(s.group("moved"))]
    assert moved[1:3] == ["2", "0/0"] and moved[4:7] == ["30", "0", "exact"]
    assert "total re-reads: 30; total skips: 0" in out
    assert "failover policy manual: nothing now" in out


def test_a_failover_that_would_skip_records_is_an_error_naming_the_partition(scenario: Scenario) -> None:
    s = scenario
    r = s.cli("--groups", s.group("behind"), "--no-record")
    assert r.returncode == 4, r.stdout + r.stderr
    assert "[DATA_GAP]" in r.stderr and f"group '{s.group('behind')}' primary.{s.topic}-0 (40 records)" in r.stderr
    assert "Traceback" not in r.stderr
    rows = partitions(s.drill_json("--groups", s.group("behind"), "--no-record", expect=4), s.group("behind"))
    assert (rows[0]["skips"], rows[0]["rereads"], rows[1]["skips"]) == (40, 0, 0)


def test_a_group_behind_the_oldest_offset_sync_skips_only_what_the_source_still_has(scenario: Scenario) -> None:
    """The checkpoint (60 -> 20: the copy starts at the log start 40) is ahead of the group, reset to 20."""
    s = scenario
    r = s.drill_json("--groups", s.group("trimmed"), "--no-record", expect=4)
    (row,) = partitions(r, s.group("trimmed")).values()
    assert (row["committed"], row["checkpoint_upstream"], row["target_offset"]) == (20, 60, 20)
    assert (row["rereads"], row["skips"], row["basis"]) == (0, 20, "exact")  # 40..59: 20..39 are gone everywhere


# --------------------------------------------------------------------------- execution


def test_execute_measures_what_it_predicted_and_leaves_no_shadow_group(scenario: Scenario) -> None:
    s = scenario
    r = s.drill_json("--execute", "--groups", f"{s.prefix}-(inside|moved|ahead|behind|trimmed)", expect=4)
    assert r["executed"] is True
    for g in r["groups"]:
        assert g["recovery_ms"] is not None and g["recovery_ms"] >= 0, g
        for p in g["partitions"]:
            assert (p["measured_rereads"], p["measured_skips"]) == (p["rereads"], p["skips"]), (g["group"], p)
            assert p["failback_offset"] is not None and p["failback_rereads"] is not None
    reads = {g["group"]: g["records_read"] for g in r["groups"]}
    # from the checkpoints (50/50, 50/20, 60/60, 60/60) to the copy's end (100 per partition)
    assert reads == {
        s.group("inside"): 100,
        s.group("moved"): 130,
        s.group("ahead"): 80,
        s.group("behind"): 80,
        s.group("trimmed"): 40,
    }
    assert shadow_groups(s.backup, s.prefix) == [] and shadow_groups(s.primary, s.prefix) == []
    # the real groups are untouched on both clusters
    assert partitions(r, s.group("moved"))[0]["committed"] == 80
    client = admin(s.backup)
    assert not any(g.group_id == s.group("moved") for g in client.list_consumer_groups().result(30).valid)


def test_execute_refuses_a_group_with_members(scenario: Scenario) -> None:
    s = scenario
    member = Consumer({"bootstrap.servers": s.backup, "group.id": s.group("active"), "enable.auto.commit": False})
    try:
        member.subscribe([f"primary.{s.topic}"])
        assert_eventually(lambda: member.poll(0.5) is not None or bool(member.assignment()), timeout_s=60)
        r = s.cli("--execute", "--groups", s.group("active"), "--no-record")
        assert r.returncode == 6, r.stdout + r.stderr
        assert "[CONTROL_ERROR]" in r.stderr and f"'{s.group('active')}' (active members)" in r.stderr
        assert "refused: group" in r.stdout and "1 on 'backup'" in r.stdout
        assert shadow_groups(s.backup, s.prefix) == []
    finally:
        member.close()


@pytest.mark.parametrize("groups", [[], ["--groups", ".*"]])
def test_execute_of_every_group_needs_yes(scenario: Scenario, groups: list[str]) -> None:
    r = scenario.cli("--execute", *groups, "--no-record")
    assert r.returncode == 6, r.stdout + r.stderr
    assert "add --yes to drill them all" in r.stderr
    assert shadow_groups(scenario.backup, scenario.prefix) == []


def test_ctrl_c_mid_drill_deletes_the_shadow_groups(scenario: Scenario) -> None:
    s = scenario
    cmd = [*CLI, "drill", str(s.props), "--source", "primary", "--target", "backup"]
    proc = subprocess.Popen(
        [*cmd, "--execute", "--groups", s.group("interrupted"), "--no-record"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the shadow group on the target exists from the failover's commit until the drill ends
        assert_eventually(lambda: shadow_groups(s.backup, s.prefix) != [], timeout_s=120, interval_s=0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert "interrupted: the drill's shadow groups were deleted" in err
    assert "Traceback" not in err
    assert shadow_groups(s.backup, s.prefix) == [] and shadow_groups(s.primary, s.prefix) == []


# --------------------------------------------------------------------------- history and bad input


def test_every_drill_is_recorded_on_the_target(scenario: Scenario) -> None:
    s = scenario
    before = time.time() * 1000
    r = s.cli("--groups", s.group("inside"))
    assert r.returncode == 0, r.stderr
    topic = mirrorspark_topic(DRILLS_PREFIX, None, "primary")
    assert f"recorded in {topic} on 'backup'" in r.stdout
    c = Consumer(
        {"bootstrap.servers": s.backup, "group.id": unique_name("drill-reader"), "auto.offset.reset": "earliest"}
    )
    try:
        c.subscribe([topic])
        seen: list[DrillResult] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(d.at >= before for d in seen):
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                seen.append(decode_drill(m.key(), m.value()))
    finally:
        c.close()
    mine = [d for d in seen if d.at >= before]
    assert mine and mine[-1].flow == "primary->backup" and mine[-1].groups[0].group == s.group("inside")
    client = admin(s.backup)
    (cfg,) = [f.result(30) for f in client.describe_configs([ConfigResource("topic", topic)]).values()]
    assert cfg["cleanup.policy"].value == "compact"


@pytest.mark.parametrize(
    ("args", "code", "named"),
    [
        (["--groups", "orders-("], 2, "--groups 'orders-(' is not a regular expression"),
        (["--target", "nowhere"], 2, "nowhere"),
    ],
)
def test_bad_input_exits_naming_the_problem(scenario: Scenario, args: list[str], code: int, named: str) -> None:
    r = scenario.cli(*args, "--no-record")
    assert r.returncode == code, r.stdout + r.stderr
    assert named in r.stderr and "Traceback" not in r.stderr
