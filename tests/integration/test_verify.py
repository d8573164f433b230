"""``mirrorspark verify`` on real clusters, through the command: a clean copy, a broken copier's copies, a gap.

One scenario for the module: six one-partition topics on ``primary`` (``vcmd-...``), 100 records each, copied to
``backup`` by a real flow (one run until caught up). Then the flow is stopped and the test plays a broken copier
on five of them: it writes 10 more source records' copies to the target itself, wrong on purpose, and appends
to the flow's progress channel a report declaring what it "copied" (as a copy task reports a segment); on the
sixth, records are deleted on the source before the flow copies them (a gap, recorded by the flow's second
run). Each topic is verified alone (``--topics``) in a ``mirrorspark verify`` process of its own, with local
Spark and, for a clean and a divergent one, on the two-worker standalone cluster. Last, ``run`` with continuous
sampling appends a ``sampling`` run to the verify history.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from helpers import admin, assert_eventually, consume_all, create_topic, produce, run_in_thread, unique_name
from pyspark.sql import SparkSession
from standalone import StandaloneCluster

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core.progress_records import PartitionReport, decode_report, encode_report, record_kind
from mirrorspark.core.verify.history import VerifyRun, decode_verify_run
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

CLI = [sys.executable, "-m", "mirrorspark"]
COPIED = 100  # records per topic the flow copies
BROKEN = 10  # records per topic the broken copier "copies" after them
BASE_MS = (int(time.time()) - 3600) * 1000  # within retention (7 days): an older record is deleted at once
PROGRESS = "mm2-task-progress.primary.internal"
HISTORY = "mm2-verify.primary.internal"
FLOW = "primary->backup"
KINDS = ("clean", "altered", "missing", "duplicated", "swapped", "gap")


def record(topic: str, i: int) -> dict[str, Any]:
    """Source record ``i`` of a topic: unique key, value, header and timestamp."""
    return {
        "key": f"k{i}".encode(),
        "value": f"{topic}|{i}".encode() + b"x" * (i % 40),
        "headers": [("seq", i.to_bytes(4, "big"))],
        "timestamp_ms": BASE_MS + i,
        "partition": 0,
    }


@dataclass(frozen=True)
class Scenario:
    props: Path
    primary: str
    backup: str
    prefix: str

    def topic(self, kind: str) -> str:
        return f"{self.prefix}-{kind}"

    def cli(self, kind: str, *args: str, timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
        cmd = [*CLI, "verify", str(self.props), "--source", "primary", "--target", "backup"]
        return subprocess.run(
            [*cmd, "--topics", self.topic(kind), *args], capture_output=True, text=True, timeout=timeout_s
        )

    def verify_json(self, kind: str, *args: str, expect: int) -> dict[str, Any]:
        r = self.cli(kind, "--json", *args)
        assert r.returncode == expect, r.stdout + r.stderr[-3000:]
        doc: dict[str, Any] = json.loads(r.stdout)
        return doc


def the_partition(doc: dict[str, Any]) -> dict[str, Any]:
    [flow] = doc["flows"]
    [p] = flow["partitions"]
    assert flow["flow"] == FLOW
    return p  # type: ignore[no-any-return]


def findings(doc: dict[str, Any]) -> list[tuple[str, int | None, int | None, str | None, int | None]]:
    p = the_partition(doc)
    return [(f["kind"], f["source_offset"], f["target_offset"], f["field"], f["related_offset"]) for f in p["findings"]]


def last_report(backup: str, topic: str) -> PartitionReport:
    """The flow's newest progress report of partition 0 of ``topic``."""
    reports = [
        decode_report(r["key"], r["value"])
        for r in consume_all(backup, PROGRESS, timeout_s=30, read_committed=False)
        if record_kind(r["key"]) == "report"
    ]
    mine = [r for r in reports if r.topic == topic and r.partition == 0]
    assert mine, (
        f"no progress report of {topic}-0 among {len(reports)}: {sorted({(r.topic, r.partition) for r in reports})}"
    )
    return mine[-1]


def copier_report(backup: str, topic: str, segments: list[CopiedSegment]) -> None:
    """Append the report a copy task writes after it copied ``segments`` (the flow's newest, its epoch and id)."""
    last = last_report(backup, topic)
    fake = dataclasses.replace(
        last, segments=tuple(segments), next_offset=segments[-1].upstream_end, at=int(time.time() * 1000), seq=0
    )
    key, value = encode_report(fake)
    p = Producer({"bootstrap.servers": backup})
    p.produce(PROGRESS, value=value, key=key, partition=0)
    assert p.flush(30) == 0


def delete_records(bootstrap: str, topic: str, before: int) -> None:
    """``kafka-delete-records``: partition 0's log start becomes ``before``."""
    client = admin(bootstrap)  # kept until the future completes
    [fut] = client.delete_records([TopicPartition(topic, 0, before)], request_timeout=30).values()
    fut.result(30)


def break_copies(s: Scenario) -> None:
    """Play a broken copier: 10 more source records per topic, their copies written wrong on purpose."""
    p, b = s.primary, s.backup
    new = range(COPIED, COPIED + BROKEN)
    for kind in ("altered", "missing", "duplicated", "swapped"):
        produce(p, s.topic(kind), [record(s.topic(kind), i) for i in new], idempotent=True)

    def copies(kind: str, order: list[int]) -> None:
        rows = [record(s.topic(kind), i) for i in order]
        if kind == "altered":
            rows[5] = {**rows[5], "value": b"altered by the copier"}  # source 105 -> target 105
        produce(b, f"primary.{s.topic(kind)}", rows, idempotent=True)

    copies("altered", list(new))
    copier_report(b, s.topic("altered"), [CopiedSegment(0, 0, COPIED + BROKEN)])
    # acknowledged but never written: 108 and 109; and the target's first two copies deleted
    copies("missing", list(new)[:-2])
    delete_records(b, f"primary.{s.topic('missing')}", 2)
    copier_report(b, s.topic("missing"), [CopiedSegment(0, 0, COPIED + BROKEN)])
    # record 104 written twice (a retried batch): target 104 and 105, then 105.. at 106..
    copies("duplicated", [*range(100, 105), 104, *range(105, 110)])
    copier_report(b, s.topic("duplicated"), [CopiedSegment(0, 0, 105), CopiedSegment(105, 106, 5)])
    # records 103 and 106 swapped
    copies("swapped", [100, 101, 102, 106, 104, 105, 103, 107, 108, 109])
    copier_report(b, s.topic("swapped"), [CopiedSegment(0, 0, COPIED + BROKEN)])


@pytest.fixture(scope="module")
def scenario(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenario]:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("vcmd")
    s = Scenario(tmp_path_factory.mktemp("verify") / "mm2.properties", p, b, prefix)
    for kind in KINDS:
        create_topic(p, s.topic(kind))
        produce(p, s.topic(kind), [record(s.topic(kind), i) for i in range(COPIED)], idempotent=True)
    text = local_clusters.mm2_properties(
        [("primary", "backup")],
        extra={"topics": f"{prefix}-.*", "tasks.max": "2", "emit.checkpoints.enabled": "false"},
    )
    s.props.write_text(text)
    Replicator(parse_config(parse_properties(text)), spark).run(until_caught_up=True)
    # the gap: 50 more records, 30 of them deleted before the flow's next run copies them
    gap = s.topic("gap")
    produce(p, gap, [record(gap, i) for i in range(COPIED, COPIED + 50)], idempotent=True)
    delete_records(p, gap, COPIED + 30)
    Replicator(parse_config(parse_properties(text)), spark).run(until_caught_up=True)
    break_copies(s)
    yield s


def history(backup: str, trigger: str, topic: str) -> list[VerifyRun]:
    runs = [decode_verify_run(r["key"], r["value"]) for r in consume_all(backup, HISTORY, timeout_s=30)]
    return [r for r in runs if r.trigger == trigger and any(p.topic == topic for p in r.report.partitions)]


# --------------------------------------------------------------------------- local Spark


def test_a_clean_flow_verifies_clean_and_is_recorded(scenario: Scenario) -> None:
    doc = scenario.verify_json("clean", expect=0)
    p = the_partition(doc)
    assert (doc["clean"], doc["exit_status"], doc["verified"], doc["divergent"]) == (True, 0, COPIED, 0)
    assert (p["topic"], p["target_topic"], p["unverified_offsets"], p["gap_offsets"]) == (
        scenario.topic("clean"),
        f"primary.{scenario.topic('clean')}",
        0,
        0,
    )
    assert doc["recorded"] == HISTORY and doc["failures"] == []
    [run] = history(scenario.backup, "command", scenario.topic("clean"))
    assert (run.flow, run.verified, run.divergent, run.topics) == (FLOW, COPIED, 0, scenario.topic("clean"))


def test_a_record_altered_on_the_target_is_different_named_in_the_human_output(scenario: Scenario) -> None:
    r = scenario.cli("altered", "--no-record")
    assert r.returncode == 11, r.stdout + r.stderr[-3000:]
    out = r.stdout
    assert "verify of flow primary->backup" in out and "1 divergent record(s); 109 records verified" in out
    topic = scenario.topic("altered")
    assert f"different  {topic}-0  105     primary.{topic}-0  105     value" in out
    assert history(scenario.backup, "command", topic) == []


def test_records_missing_on_the_target_are_named_with_both_offsets(scenario: Scenario) -> None:
    doc = scenario.verify_json("missing", "--no-record", expect=11)
    assert findings(doc) == [
        ("missing", 0, 0, None, None),
        ("missing", 1, 1, None, None),
        ("missing", 108, 108, None, None),
        ("missing", 109, 109, None, None),
    ]
    assert the_partition(doc)["verified"] == COPIED + BROKEN - 4


def test_a_record_produced_twice_is_duplicated(scenario: Scenario) -> None:
    doc = scenario.verify_json("duplicated", "--no-record", expect=11)
    assert findings(doc) == [("duplicated", 104, 105, None, 104)]
    assert (doc["verified"], doc["exit_status"]) == (COPIED + BROKEN, 11)


def test_two_records_swapped_are_out_of_order(scenario: Scenario) -> None:
    doc = scenario.verify_json("swapped", "--no-record", expect=11)
    assert findings(doc) == [("out_of_order", 103, 103, None, 106), ("out_of_order", 106, 106, None, 103)]


def test_a_range_deleted_on_the_source_before_it_was_copied_is_a_gap(scenario: Scenario) -> None:
    doc = scenario.verify_json("gap", "--no-record", expect=0)
    p = the_partition(doc)
    # 100..129 lost (the ledger's gap); 0..99 copied, but gone on the source with them: unverified
    assert (p["gap_offsets"], p["unverified_offsets"], p["verified"], p["findings"]) == (30, COPIED, 20, [])


def test_last_and_since_narrow_the_window(scenario: Scenario) -> None:
    doc = scenario.verify_json("altered", "--no-record", "--last", "3", expect=0)
    assert the_partition(doc)["verified"] == 3  # 107..109: after the altered record
    since = datetime.datetime.fromtimestamp((BASE_MS + 107) / 1000, tz=datetime.UTC).isoformat(timespec="milliseconds")
    doc = scenario.verify_json("swapped", "--no-record", "--since", since, expect=0)
    assert the_partition(doc)["verified"] == 3  # timestamps from BASE_MS + 107 on


# --------------------------------------------------------------------------- the standalone cluster


def test_clean_and_divergent_on_the_standalone_cluster(scenario: Scenario, spark_standalone: StandaloneCluster) -> None:
    """One verification of the clean and the swapped topic, their units spread over the two workers' executors."""
    clean, swapped = scenario.topic("clean"), scenario.topic("swapped")
    cmd = [*CLI, "verify", str(scenario.props), "--source", "primary", "--target", "backup", "--json", "--no-record"]
    args = ["--topics", f"{clean}|{swapped}", "--master", spark_standalone.url]
    r = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=240)
    assert r.returncode == 11, r.stdout + r.stderr[-3000:]
    [flow] = json.loads(r.stdout)["flows"]
    by_topic = {p["topic"]: p for p in flow["partitions"]}
    assert (by_topic[clean]["verified"], by_topic[clean]["findings"]) == (COPIED, [])
    assert [
        (f["kind"], f["source_offset"], f["target_offset"], f["related_offset"]) for f in by_topic[swapped]["findings"]
    ] == [
        ("out_of_order", 103, 103, 106),
        ("out_of_order", 106, 106, 103),
    ]


# --------------------------------------------------------------------------- continuous sampling


def test_run_with_sampling_records_sampling_runs(local_clusters: LocalClusters, spark: SparkSession) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    topic = unique_name("vcmd-sampled")
    create_topic(p, topic)
    produce(p, topic, [record(topic, i) for i in range(2000)], idempotent=True)
    text = local_clusters.mm2_properties(
        [("primary", "backup")],
        extra={
            "topics": topic,
            "verify.sampling.enable": "true",
            "verify.sampling.interval.ms": "1000",
            "verify.sampling.records": "300",
        },
    )
    replicator = Replicator(parse_config(parse_properties(text)), spark)
    errors: list[BaseException] = []
    thread = run_in_thread(replicator, errors)
    try:

        def sampled() -> VerifyRun:
            try:
                runs = [r for r in history(b, "sampling", topic) if r.verified]
            except Exception as e:  # the history topic not created yet
                raise AssertionError(f"no verify history yet: {e}") from e
            assert runs, "no sampling run with verified records yet"
            return runs[-1]

        run = assert_eventually(sampled, timeout_s=120)
    finally:
        replicator.request_stop()
        thread.join(120)
    assert not errors, errors
    # the sample may also draw from the flow's heartbeats, which the session's other tests write to: only this
    # test's own topic is judged (a CI run found 8 "different" records in primary.heartbeats, a compacted topic)
    ours = [part for part in run.report.partitions if part.topic == topic]
    assert run.flow == FLOW and ours and sum(part.divergent for part in ours) == 0 and 0 < run.verified <= 300
