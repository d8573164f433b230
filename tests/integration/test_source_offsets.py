"""``mirrorspark offsets source list|alter|reset`` (issue #15 part 2, KIP-875) against real brokers and the real MM2.

One mm2.properties for mirrorspark and MM2 (``test_mm2_interop.write_properties``: flow
``primary->backup`` of ``<prefix>.*``, one task, 1 s offset flush). Each test checks record-exact
copies: after an alter, exactly the records from the new position are copied again; after a reset,
everything from ``auto.offset.reset=earliest``.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import assert_eventually, consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession
from test_mm2_interop import (
    MM2_DEADLINE_S,
    by_partition,
    mirror_maker,
    offset_syncs,
    record_count,
    run_mirrorspark,
    stored_offsets,
    wait_for,
    write_properties,
)
from typer.testing import CliRunner

from copy_check import assert_copy
from mirrorspark.cli.app import app
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.migration.source_offset_tools import FlowSourceOffsets
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PER_PARTITION = 20


def cli(properties: Path, *args: str) -> Any:
    """Run ``mirrorspark offsets source ...`` on the flow primary->backup."""
    return CliRunner().invoke(
        app, ["offsets", "source", *args, "--config", str(properties), "--source", "primary", "--target", "backup"]
    )


def cli_json(properties: Path, *args: str) -> Any:
    r = cli(properties, *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def setup_flow(local_clusters: LocalClusters, tmp_path: Path, name: str) -> tuple[str, str, str, Path]:
    p = local_clusters.bootstrap("primary")
    prefix = unique_name(name)
    topic = f"{prefix}.events"
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"{topic}/{i}".encode(), "partition": i % 2} for i in range(2 * PER_PARTITION)])
    return p, local_clusters.bootstrap("backup"), topic, write_properties(local_clusters, prefix, tmp_path)


def values(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    return by_partition(consume_all(bootstrap, topic))


def test_list_alter_reset_then_a_run_resumes_exactly(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    p, b, topic, props = setup_flow(local_clusters, tmp_path, "srcoff")
    remote = f"primary.{topic}"
    run_mirrorspark(props, spark)
    assert_copy(consume_all(p, topic), consume_all(b, remote))
    src = values(p, topic)

    # the flow's other topics (heartbeats, other tests' topics on the shared clusters) are listed too
    rows = [r for r in cli_json(props, "list") if r["topic"] == topic]
    assert [(r["topic"], r["partition"], r["position"], r["end_offset"], r["lag"]) for r in rows] == [
        (topic, 0, PER_PARTITION, PER_PARTITION, 0),
        (topic, 1, PER_PARTITION, PER_PARTITION, 0),
    ]
    text = cli(props, "list", "--topic", topic)
    assert text.exit_code == 0 and topic in text.stdout

    # dry runs write nothing; --to-datetime far back = log start, far ahead = end
    plan = cli_json(props, "alter", "--to-datetime", "2000-01-01T00:00:00Z", "--dry-run")
    assert not plan["applied"]
    assert [c["new_position"] for c in plan["changes"] if c["topic"] == topic] == [0, 0]
    plan = cli_json(props, "alter", "--topic", topic, "--to-datetime", "2999-01-01T00:00:00", "--dry-run")
    assert [c["change"] for c in plan["changes"]] == ["unchanged", "unchanged"]
    assert stored_offsets(b, topic) == {0: PER_PARTITION - 1, 1: PER_PARTITION - 1}

    # without --execute an alter only previews, as kafka-consumer-groups --reset-offsets (ux-review finding 4;
    # before, it wrote): nothing is written, and stderr says how to write
    preview = cli(props, "alter", "--topic", topic, "--partition", "0", "--to-offset", "5")
    assert preview.exit_code == 0, preview.output
    assert "preview only: nothing written; add --execute to write" in preview.stderr
    assert stored_offsets(b, topic) == {0: PER_PARTITION - 1, 1: PER_PARTITION - 1}
    assert not cli_json(props, "alter", "--topic", topic, "--partition", "0", "--offset", "5")["applied"]  # old name
    assert stored_offsets(b, topic) == {0: PER_PARTITION - 1, 1: PER_PARTITION - 1}

    # alter partition 0 back to 5 with --execute: Connect's record, and the offset sync of the new segment
    plan = cli_json(props, "alter", "--topic", topic, "--partition", "0", "--to-offset", "5", "--execute")
    assert plan["applied"]
    (change,) = plan["changes"]
    assert change["key"] == f'["MirrorSourceConnector",{{"cluster":"primary","partition":0,"topic":"{topic}"}}]'
    assert (change["value"], change["change"]) == ('{"offset":4}', "rewind")
    assert change["offset_sync"] == {"upstream_offset": 5, "downstream_offset": PER_PARTITION}
    assert stored_offsets(b, topic) == {0: 4, 1: PER_PARTITION - 1}
    last = {s.partition: s for s in offset_syncs(p, topic)}
    assert (last[0].upstream_offset, last[0].downstream_offset) == (5, PER_PARTITION)

    # Kafka's --shift-by and --by-duration (previews): -2 from each stored position; the last hour = log start
    shifted = cli_json(props, "alter", "--topic", topic, "--shift-by", "-2")
    assert [c["new_position"] for c in shifted["changes"]] == [3, PER_PARTITION - 2]
    recent = cli_json(props, "alter", "--topic", topic, "--by-duration", "PT1H")
    assert [c["new_position"] for c in recent["changes"]] == [0, 0]
    assert stored_offsets(b, topic) == {0: 4, 1: PER_PARTITION - 1}

    # reset partition 1: a tombstone; the next run starts it at auto.offset.reset (earliest)
    assert not cli_json(props, "reset", "--topic", topic, "--partition", "1")["applied"]  # a preview first
    assert stored_offsets(b, topic) == {0: 4, 1: PER_PARTITION - 1}
    plan = cli_json(props, "reset", "--topic", topic, "--partition", "1", "--execute")
    assert [(c["value"], c["change"]) for c in plan["changes"]] == [(None, "reset")]
    assert stored_offsets(b, topic) == {0: 4}
    listed = {r["partition"]: r["position"] for r in cli_json(props, "list", "--topic", topic)}
    assert listed == {0: 5, 1: None}

    run_mirrorspark(props, spark)
    assert values(b, remote) == {0: src[0] + src[0][5:], 1: src[1] + src[1]}
    assert stored_offsets(b, topic) == {0: PER_PARTITION - 1, 1: PER_PARTITION - 1}


def test_bad_requests_exit_non_zero_with_the_fix(local_clusters: LocalClusters, tmp_path: Path) -> None:
    p, _, topic, props = setup_flow(local_clusters, tmp_path, "srcoff-bad")
    other = unique_name("not-replicated")
    create_topic(p, other, partitions=1)
    cases = [
        (("list", "--topic", "nope"), "does not exist on cluster 'primary'"),
        (("alter", "--topic", topic, "--partition", "7", "--to-offset", "1"), "partition 7 is out of range"),
        (("alter", "--topic", topic, "--to-datetime", "yesterday"), "not an ISO 8601 date-time"),
        (("alter", "--topic", topic), "give exactly one of"),
        (("alter", "--topic", topic, "--to-offset", "1", "--shift-by", "1"), "give exactly one of"),
        (("alter", "--topic", topic, "--to-latest", "--execute", "--dry-run"), "not both"),
        (("alter", "--topic", topic, "--by-duration", "1h"), "PnDTnHnMnS"),
        (("alter", "--topic", other, "--to-latest"), "is not replicated by flow"),
    ]
    for args, message in cases:
        r = cli(props, *args)
        assert r.exit_code == 2, (args, r.output)
        assert message in " ".join(r.output.split()), (args, r.output)
    r = CliRunner().invoke(
        app, ["offsets", "source", "list", "--config", str(props), "--source", "nowhere", "--target", "backup"]
    )
    assert r.exit_code == 2 and "nowhere" in r.output


def test_refused_while_the_flow_runs(local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path) -> None:
    _, b, topic, props = setup_flow(local_clusters, tmp_path, "srcoff-run")
    cfg = parse_config(parse_properties(props.read_text()))
    replicator = Replicator(cfg, spark)
    runner = threading.Thread(target=replicator.run, name="test-srcoff-flow", daemon=True)
    try:
        replicator.start()
        runner.start()
        with FlowSourceOffsets(cfg, source="primary", target="backup") as so:
            assert_eventually(so.running, timeout_s=60, message="the flow's lease group never became active")
        assert_eventually(lambda: stored_offsets(b, topic) == {0: PER_PARTITION - 1, 1: PER_PARTITION - 1}, 60)
        r = cli(props, "alter", "--topic", topic, "--to-earliest", "--execute")
        assert r.exit_code == 6, r.output
        out = " ".join(r.output.split())
        assert "is running" in out and "mirrorspark-lease-primary->backup" in out and "nothing was written" in out
        assert cli(props, "reset", "--execute").exit_code == 6
        plan = cli(props, "alter", "--topic", topic, "--to-earliest", "--dry-run")  # plans, warns
        assert plan.exit_code == 0 and "is running" in plan.output
        assert stored_offsets(b, topic) == {0: PER_PARTITION - 1, 1: PER_PARTITION - 1}
    finally:
        replicator.request_stop()
        runner.join(90)


def test_mm2_resumes_at_the_altered_positions(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    p, b, topic, props = setup_flow(local_clusters, tmp_path, "srcoff-mm2")
    remote = f"primary.{topic}"
    run_mirrorspark(props, spark)
    src = values(p, topic)
    cli_json(props, "alter", "--topic", topic, "--to-offset", "10", "--execute")
    assert stored_offsets(b, topic) == {0: 9, 1: 9}
    expected = 2 * PER_PARTITION + 2 * (PER_PARTITION - 10)
    with mirror_maker(props, tmp_path) as mm2:
        mm2.wait_started(timeout_s=MM2_DEADLINE_S)
        wait_for(mm2, f"{expected} records in {remote}", lambda: record_count(b, remote) >= expected)
        # MM2 itself is seen running: MirrorSourceConnector RUNNING in Connect's status topic
        r = cli(props, "reset", "--topic", topic, "--execute")
        assert r.exit_code == 6, r.output
        assert "running in MM2" in " ".join(r.output.split()) and "mm2-status.primary.internal" in r.output
        assert mm2.stop() == 143, mm2.log_tail(40)
    assert values(b, remote) == {0: src[0] + src[0][10:], 1: src[1] + src[1][10:]}
    # stopped gracefully, MM2 marked its connector UNASSIGNED: the flow is free again
    assert cli_json(props, "reset", "--topic", topic, "--dry-run")["running"] is None
    assert stored_offsets(b, topic) == {0: PER_PARTITION - 1, 1: PER_PARTITION - 1}
