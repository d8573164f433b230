"""Switching between Apache Kafka's MirrorMaker 2 and mirrorspark, both ways, on one mm2.properties.

Each test runs the real MM2 (dedicated mode, Kafka's ``connect-mirror`` jars, started by
:func:`mirrorspark.kafka.local.mirror_maker.start_mirror_maker`) and mirrorspark (in-process, on the session's
SparkSession) one after the other on the same flow ``primary->backup``, the same
properties file and the same internal topics, and checks that the remote topic ends up
with every source record exactly once, in partition order: whoever takes over resumes at
the other's committed source offset in ``mm2-offsets.primary.internal``.

MM2 is made fast for a 2-core machine: ``plugin.discovery=service_load`` (no class-path
plugin scan, about 9 s saved), ``--clusters backup`` (no herder for the reverse
heartbeat flow), a 1 s topic refresh and a 1 s offset flush. Every MM2 JVM is stopped in
a ``finally``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from helpers import admin, consume_all, create_topic, end_offsets, produce, unique_name
from pyspark.sql import SparkSession

from copy_check import assert_copy
from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties
from mirrorspark.core import provenance as P
from mirrorspark.errors import LocalClusterError
from mirrorspark.kafka.local.mirror_maker import MirrorMakerProcess, start_mirror_maker
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.connect_offsets import decode_source_offset
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.replication.driver import Replicator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

OFFSETS_TOPIC = "mm2-offsets.primary.internal"  # on backup: MirrorSourceConnector's progress
SYNCS_TOPIC = "mm2-offset-syncs.backup.internal"  # on primary (offset-syncs.topic.location=source)
N, M = 200, 100  # records before and after the switch, split evenly over 2 partitions
MM2_DEADLINE_S = 90.0


def write_properties(clusters: LocalClusters, prefix: str, directory: Path) -> Path:
    """One mm2.properties for both MM2 and mirrorspark: flow primary->backup of ``<prefix>.*``."""
    text = clusters.mm2_properties(
        [("primary", "backup")],
        extra={
            "topics": f"{prefix}.*",
            "tasks.max": "1",
            "refresh.topics.interval.seconds": "1",
            "sync.topic.acls.enabled": "false",
            # Connect commits source offsets every second (default 60 s) and on a graceful stop.
            "backup.offset.flush.interval.ms": "1000",
            # MM2 start-up: skip Connect's class-path plugin scan (driver config and herder worker).
            "plugin.discovery": "service_load",
            "backup.plugin.discovery": "service_load",
        },
    )
    path = directory / "mm2.properties"
    path.write_text(text)
    return path


def run_mirrorspark(properties: Path, spark: SparkSession, **extra: str) -> None:
    """mirrorspark on the same file, until caught up with the end offsets seen at start.

    On the continuous engine (``mirrorspark run``'s): its copy tasks commit the source
    offsets and offset syncs MM2 then resumes from. The keys ``extra`` are added here, not to the
    file, so that MM2 reads exactly what an MM2 user has.
    """
    props = {**parse_properties(properties.read_text()), **extra}
    cfg = parse_config(props)
    r = Replicator(cfg, spark)
    r.run(until_caught_up=True)


@contextmanager
def mirror_maker(properties: Path, base_dir: Path) -> Iterator[MirrorMakerProcess]:
    """MM2 serving the flows into ``backup``; stopped gracefully (SIGTERM) when the block ends."""
    mm2 = start_mirror_maker(properties, base_dir=base_dir, clusters=["backup"])
    try:
        yield mm2
    finally:
        mm2.stop(timeout_s=30)


def wait_for(mm2: MirrorMakerProcess, what: str, condition: Callable[[], bool]) -> float:
    """Poll ``condition`` until true while MM2 runs; return seconds since MM2's launch."""
    deadline = time.monotonic() + MM2_DEADLINE_S
    while not condition():
        if not mm2.running:
            pytest.fail(f"MM2 exited (status {mm2.returncode}) before {what}; log tail:\n{mm2.log_tail(40)}")
        if time.monotonic() >= deadline:
            pytest.fail(f"MM2 did not achieve {what} within {MM2_DEADLINE_S:.0f} s; log tail:\n{mm2.log_tail(40)}")
        time.sleep(0.2)
    return time.monotonic() - mm2.started_at


def record_count(bootstrap: str, topic: str) -> int:
    """Records in a topic (end - start over partitions), 0 while it does not exist or has no leaders yet."""
    try:
        if topic not in admin(bootstrap).list_topics(timeout=10).topics:
            return 0
        return sum(end - start for start, end in end_offsets(bootstrap, topic, timeout_s=10).values())
    except KafkaException:
        return 0


def stored_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """MirrorSourceConnector's committed offsets for ``primary``'s ``topic``: {partition: last copied offset}."""
    out: dict[int, int] = {}
    for r in consume_all(bootstrap, OFFSETS_TOPIC):
        decoded = decode_source_offset(r["key"], r["value"])
        if decoded is None or decoded.cluster != "primary" or decoded.topic != topic:
            continue
        if decoded.offset is None:
            out.pop(decoded.partition, None)
        else:
            out[decoded.partition] = decoded.offset
    return out


def offset_syncs(bootstrap: str, topic: str, from_offset: int = 0) -> list[OffsetSync]:
    """The offset syncs for ``topic`` written at or after ``from_offset`` of the (1-partition) syncs topic."""
    return [
        OffsetSync.decode(r["key"], r["value"])
        for r in consume_all(bootstrap, SYNCS_TOPIC)
        if r["offset"] >= from_offset and OffsetSync.decode(r["key"], r["value"]).topic == topic
    ]


def syncs_end(bootstrap: str) -> int:
    return end_offsets(bootstrap, SYNCS_TOPIC)[0][1]


def by_partition(records: list[dict[str, Any]]) -> dict[int, list[bytes]]:
    """{partition: values in offset order}."""
    out: dict[int, list[bytes]] = {}
    for r in records:
        out.setdefault(r["partition"], []).append(r["value"])
    return out


def produce_batch(bootstrap: str, topic: str, tag: str, count: int) -> None:
    """``count`` records with unique values ``<topic>/<tag><i>``, alternating over partitions 0 and 1."""
    produce(bootstrap, topic, [{"value": f"{topic}/{tag}{i}".encode(), "partition": i % 2} for i in range(count)])


def assert_exact_copy(primary: str, backup: str, topic: str) -> None:
    """The remote topic holds every source record exactly once, in the source's partition order."""
    source = consume_all(primary, topic)
    assert len(source) == N + M
    assert_copy(source, consume_all(backup, f"primary.{topic}"), what=f"primary.{topic}")


def assert_syncs_point_at_copies(primary: str, backup: str, topic: str, syncs: list[OffsetSync]) -> None:
    src = {(r["partition"], r["offset"]): r["value"] for r in consume_all(primary, topic)}
    dst = {(r["partition"], r["offset"]): r["value"] for r in consume_all(backup, f"primary.{topic}")}
    for s in syncs:
        assert src[(s.partition, s.upstream_offset)] == dst[(s.partition, s.downstream_offset)], s


def test_mirrorspark_takes_over_from_mm2(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MM2 copies N records and is stopped gracefully; mirrorspark copies exactly the M produced since."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("mm2-to-ms")
    topic, remote = f"{prefix}.events", f"primary.{prefix}.events"
    create_topic(p, topic, partitions=2)
    produce_batch(p, topic, "a", N)
    properties = write_properties(local_clusters, prefix, tmp_path)

    with mirror_maker(properties, tmp_path) as mm2:
        started_s = mm2.wait_started(timeout_s=MM2_DEADLINE_S)
        copied_s = wait_for(mm2, f"{N} records in {remote}", lambda: record_count(b, remote) >= N)
        stop_t0 = time.monotonic()
        assert mm2.stop() == 143, f"MM2 did not exit on SIGTERM; log tail:\n{mm2.log_tail(40)}"
        stop_s = time.monotonic() - stop_t0

    # Connect committed MM2's progress (offset of the last copied record) on the graceful stop.
    assert stored_offsets(b, topic) == {0: N // 2 - 1, 1: N // 2 - 1}
    mm2_syncs = offset_syncs(p, topic)
    assert mm2_syncs, "MM2 wrote no offset syncs"
    boundary = syncs_end(p)

    produce_batch(p, topic, "b", M)
    ms_t0 = time.monotonic()
    run_mirrorspark(properties, spark)
    ms_s = time.monotonic() - ms_t0

    assert_exact_copy(p, b, topic)
    assert stored_offsets(b, topic) == {0: (N + M) // 2 - 1, 1: (N + M) // 2 - 1}
    # Offset syncs from both, in MM2's binary layout: mirrorspark's start where MM2 stopped.
    ms_syncs = offset_syncs(p, topic, from_offset=boundary)
    assert ms_syncs, "mirrorspark wrote no offset syncs"
    assert {s.partition: s.upstream_offset for s in reversed(ms_syncs)} == {0: N // 2, 1: N // 2}  # first ones
    assert all(s.upstream_offset < N // 2 for s in mm2_syncs)
    assert_syncs_point_at_copies(p, b, topic, mm2_syncs + ms_syncs)
    with capsys.disabled():
        print(
            f"\n[mm2->mirrorspark] MM2 driver started {started_s:.1f} s after launch, {N} records copied"
            f" {copied_s:.1f} s after launch, graceful stop {stop_s:.1f} s; mirrorspark run {ms_s:.1f} s"
        )


def test_mm2_takes_over_from_mirrorspark(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """mirrorspark copies N records; MM2, started on the same file, copies exactly the M produced since."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("ms-to-mm2")
    topic, remote = f"{prefix}.events", f"primary.{prefix}.events"
    create_topic(p, topic, partitions=2)
    produce_batch(p, topic, "a", N)
    properties = write_properties(local_clusters, prefix, tmp_path)

    ms_t0 = time.monotonic()
    run_mirrorspark(properties, spark)
    ms_s = time.monotonic() - ms_t0
    assert stored_offsets(b, topic) == {0: N // 2 - 1, 1: N // 2 - 1}
    assert record_count(b, remote) == N
    boundary = syncs_end(p)

    produce_batch(p, topic, "b", M)
    final = {0: (N + M) // 2 - 1, 1: (N + M) // 2 - 1}
    with mirror_maker(properties, tmp_path) as mm2:
        started_s = mm2.wait_started(timeout_s=MM2_DEADLINE_S)
        copied_s = wait_for(mm2, f"{N + M} records in {remote}", lambda: record_count(b, remote) >= N + M)
        # ...and MM2 committed the end (periodic flush), so any extra copy would have landed by now.
        committed_s = wait_for(mm2, "committing the end offsets", lambda: stored_offsets(b, topic) == final)
        stop_t0 = time.monotonic()
        assert mm2.stop() == 143, f"MM2 did not exit on SIGTERM; log tail:\n{mm2.log_tail(40)}"
        stop_s = time.monotonic() - stop_t0

    assert_exact_copy(p, b, topic)
    assert stored_offsets(b, topic) == final
    # MM2 resumed at mirrorspark's committed offset + 1: its first sync per partition (always emitted
    # for a task's first record) is for upstream offset N/2, not 0.
    mm2_syncs = offset_syncs(p, topic, from_offset=boundary)
    assert mm2_syncs, "MM2 wrote no offset syncs"
    assert {s.partition: s.upstream_offset for s in reversed(mm2_syncs)} == {0: N // 2, 1: N // 2}
    assert_syncs_point_at_copies(p, b, topic, mm2_syncs)
    with capsys.disabled():
        print(
            f"\n[mirrorspark->mm2] mirrorspark run {ms_s:.1f} s; MM2 driver started {started_s:.1f} s after"
            f" launch, {N + M} records present {copied_s:.1f} s and committed {committed_s:.1f} s after launch,"
            f" graceful stop {stop_s:.1f} s"
        )


def test_mm2_takes_over_a_flow_that_carries_the_provenance_header(
    local_clusters: LocalClusters, spark: SparkSession, tmp_path: Path
) -> None:
    """mirrorspark with provenance.header.enable copies N records (stamped); MM2 takes over at the committed offsets
    and copies the M since, every header byte for byte, ours included (MM2 never reads record headers)."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    prefix = unique_name("prov-to-mm2")
    topic, remote = f"{prefix}.events", f"primary.{prefix}.events"
    create_topic(p, topic, partitions=2)
    elsewhere = P.encode(P.Provenance(1, P.cluster_id_bytes("elsewhere"), bytes(4), bytes(4), 0, 7))

    def batch(tag: str, count: int) -> list[dict[str, Any]]:
        """Records with a user header; every third also carries a header of ours (from a cluster "elsewhere")."""
        return [
            {
                "value": f"{topic}/{tag}{i}".encode(),
                "partition": i % 2,
                "headers": [("u", bytes([i % 256, 0]))] + ([(P.HEADER_NAME, elsewhere)] if i % 3 == 0 else []),
            }
            for i in range(count)
        ]

    produce(p, topic, batch("a", N))
    properties = write_properties(local_clusters, prefix, tmp_path)
    run_mirrorspark(properties, spark, **{"primary->backup.provenance.header.enable": "true"})
    assert stored_offsets(b, topic) == {0: N // 2 - 1, 1: N // 2 - 1}
    copies = consume_all(b, remote)
    assert len(copies) == N
    for r in copies:  # the user's header first, then ours: fresh (hop 1) or the one from elsewhere (hop 2)
        assert r["headers"][0][0] == "u" and [h[0] for h in r["headers"][1:]] == [P.HEADER_NAME]
        assert P.decode(r["headers"][1][1]).hops in (1, 2)
    produce(p, topic, batch("b", M))
    final = {0: (N + M) // 2 - 1, 1: (N + M) // 2 - 1}
    with mirror_maker(properties, tmp_path) as mm2:
        mm2.wait_started(timeout_s=MM2_DEADLINE_S)
        wait_for(mm2, f"{N + M} records in {remote}", lambda: record_count(b, remote) >= N + M)
        wait_for(mm2, "committing the end offsets", lambda: stored_offsets(b, topic) == final)
        assert mm2.stop() == 143, f"MM2 did not exit on SIGTERM; log tail:\n{mm2.log_tail(40)}"
    source = consume_all(p, topic)
    # MM2 resumed exactly where mirrorspark committed, and copied the rest as it is, headers included
    assert_copy([r for r in source if b"/b" in r["value"]], [r for r in consume_all(b, remote) if b"/b" in r["value"]])
    assert record_count(b, remote) == N + M


def test_launcher_reports_a_failed_start(tmp_path: Path) -> None:
    """An MM2 that exits during start-up (here: no flows) fails wait_started with its status and log."""
    properties = tmp_path / "mm2.properties"
    properties.write_text("clusters = a\na.bootstrap.servers = 127.0.0.1:1\nplugin.discovery = service_load\n")
    with mirror_maker(properties, tmp_path) as mm2:
        with pytest.raises(LocalClusterError, match=r"(?s)exited during start-up with status 2.*No source->target"):
            mm2.wait_started(timeout_s=MM2_DEADLINE_S)
        assert not mm2.running
    assert mm2.returncode == 2
