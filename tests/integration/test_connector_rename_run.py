"""A renamed source connector against real brokers (engine-audit-2 N3): refused, moved, resumed with no copy twice.

One flow ``primary->backup`` of ``<prefix>.*`` (``test_mm2_interop.write_properties``) runs once under
MM2's name ``MirrorSourceConnector``; the same file then names the connector ``mm2-msc``. Before the
fix the run found no offsets under that name and copied everything again (``earliest``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import consume_all, create_topic, produce, unique_name
from pyspark.sql import SparkSession
from test_mm2_interop import by_partition, record_count, run_mirrorspark, write_properties
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.connect_offsets import decode_source_offset

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PER_PARTITION = 20
OFFSETS_TOPIC = "mm2-offsets.primary.internal"
NEW_NAME = "mm2-msc"


def stored_under(bootstrap: str, topic: str, name: str) -> dict[int, int]:
    """The offsets stored for ``primary``'s ``topic`` under connector ``name``: {partition: last copied offset}."""
    out: dict[int, int] = {}
    for r in consume_all(bootstrap, OFFSETS_TOPIC):
        decoded = decode_source_offset(r["key"], r["value"], connector_name=name)
        if decoded is None or decoded.cluster != "primary" or decoded.topic != topic:
            continue
        if decoded.offset is None:
            out.pop(decoded.partition, None)
        else:
            out[decoded.partition] = decoded.offset
    return out


def move(props: Path, *args: str, old: str = "MirrorSourceConnector") -> Any:
    """Run ``mirrorspark offsets source move`` on the flow primary->backup from connector name ``old``."""
    return CliRunner().invoke(
        app,
        [
            "offsets",
            "source",
            "move",
            str(props),
            "--source",
            "primary",
            "--target",
            "backup",
            "--from-connector",
            old,
            *args,
        ],
    )


def test_a_renamed_connector_refuses_to_run_until_its_offsets_are_moved(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("renamed")
    topic, remote = f"{prefix}.events", f"primary.{prefix}.events"
    create_topic(p, topic, partitions=2)
    produce(p, topic, [{"value": f"{topic}/{i}".encode(), "partition": i % 2} for i in range(2 * PER_PARTITION)])
    props = write_properties(local_clusters, prefix, tmp_path)
    run_mirrorspark(props, spark)  # stores its offsets under MM2's name
    assert record_count(b, remote) == 2 * PER_PARTITION
    old = {0: PER_PARTITION - 1, 1: PER_PARTITION - 1}
    assert stored_under(b, topic, "MirrorSourceConnector") == old

    props.write_text(props.read_text() + f"primary->backup.mirrorspark.source.connector.name = {NEW_NAME}\n")
    r = subprocess.run(
        [sys.executable, "-m", "mirrorspark", "run", str(props), "--until-caught-up", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    message = " ".join(r.stderr.split())
    assert r.returncode == 2, r.stderr  # before: 0, and 40 records copied a second time
    assert "[CONFIG_SOURCE_CONNECTOR_NAME]" in message
    assert f"'{NEW_NAME}'" in message and "'MirrorSourceConnector'" in message and f"'{OFFSETS_TOPIC}'" in message
    assert "mirrorspark offsets source move CONFIG --source primary --target backup" in message
    assert "Traceback" not in r.stderr
    assert record_count(b, remote) == 2 * PER_PARTITION

    preview = move(props)
    assert preview.exit_code == 0, preview.output
    # the flow's partitions (heartbeats included), never another test's topics stored on the shared clusters
    assert f"to '{OFFSETS_TOPIC}' under connector name '{NEW_NAME}' (from 'MirrorSourceConnector')" in preview.stdout
    rows = [line.split() for line in preview.stdout.splitlines()[2:]]
    assert [r for r in rows if r[0] == topic] == [
        [topic, str(n), str(PER_PARTITION), f'{{"offset":{PER_PARTITION - 1}}}', "-"] for n in (0, 1)
    ]
    assert {r[0] for r in rows} <= {topic, "heartbeats"}
    assert "preview only: nothing written" in preview.stderr
    assert stored_under(b, topic, NEW_NAME) == {}

    done = move(props, "--execute")
    assert done.exit_code == 0, done.output
    assert stored_under(b, topic, NEW_NAME) == old
    assert stored_under(b, topic, "MirrorSourceConnector") == old  # left as it was

    produce(p, topic, [{"value": f"{topic}/new/{i}".encode(), "partition": i % 2} for i in range(4)])
    run_mirrorspark(props, spark)
    copied = by_partition(consume_all(b, remote))
    assert copied == by_partition(consume_all(p, topic))  # every record once, in order: nothing copied twice
    assert record_count(b, remote) == 2 * PER_PARTITION + 4
    assert stored_under(b, topic, NEW_NAME) == {0: PER_PARTITION + 1, 1: PER_PARTITION + 1}

    again = move(props, "--execute")  # the old name's offsets are behind now: refused without --overwrite
    assert again.exit_code == 2 and "--overwrite" in again.output, again.output
    nowhere = move(props, old="nope")
    assert nowhere.exit_code == 2 and "under connector name 'nope'" in " ".join(nowhere.output.split())
