"""The verify job on real clusters and local Spark: hand-made units of a hand-written target, findings with offsets.

The target topics are written by this test, not by a flow (the driver side plans units from a flow's copied
segments: ``tests/integration/test_verify*.py`` of the CLI); the segments given are what a flow would have
acknowledged. Topics are named ``vexec-...``.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from helpers import admin, create_topic, produce, unique_name
from pyspark.sql import SparkSession

from mirrorspark.core.provenance import HEADER_NAME
from mirrorspark.core.verify import Finding
from mirrorspark.kafka.local.model import LocalClusters
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.replication.task.verify_spec import VerifyTaskSpec
from mirrorspark.replication.worker.verify_job import run_verify_job

pytestmark = [pytest.mark.integration, pytest.mark.spark]

N = 3000
TS0 = int(time.time() * 1000) - N  # recent: never past the topics' retention
FOREIGN = 5  # records on the divergent target before the copy's first: its segment starts at offset 5


def _records() -> list[dict[str, Any]]:
    return [
        {
            "key": b"k%d" % (u % 7),
            "value": b"value-%05d" % u + b"x" * (u % 50),
            "headers": [("h", b"%d" % (u % 3))] if u % 2 else None,
            "timestamp_ms": TS0 + u,
            "partition": 0,
        }
        for u in range(N)
    ]


def _copies(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The copies a flow writes: the same fields and the provenance header last (ignored by verify)."""
    return [{**r, "headers": [*(r["headers"] or []), (HEADER_NAME, b"\x01" * 38)]} for r in records]


def _units(
    clusters: LocalClusters, source: str, target: str, segment: CopiedSegment, cuts: list[int]
) -> list[VerifyTaskSpec]:
    bounds = [0, *cuts, N]
    return [
        VerifyTaskSpec(
            "primary->backup",
            "primary",
            "backup",
            source,
            0,
            target,
            lo,
            hi,
            (segment,),
            (),
            {"bootstrap.servers": clusters.bootstrap("primary")},
            {"bootstrap.servers": clusters.bootstrap("backup")},
            chunk_size=256,
            unit=i,
        )
        for i, (lo, hi) in enumerate(itertools.pairwise(bounds))
    ]


def test_a_clean_copy_verifies_clean_and_an_altered_and_a_missing_record_are_named(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    """VJ1-VJ2 on real clusters: every record verified; then record 1500 altered and record 0 deleted on the target."""
    p, b = local_clusters.bootstrap("primary"), local_clusters.bootstrap("backup")
    source, clean, bad = unique_name("vexec-src"), unique_name("vexec-clean"), unique_name("vexec-bad")
    create_topic(p, source)
    create_topic(b, clean)
    create_topic(b, bad)
    records = _records()
    produce(p, source, records, idempotent=True)
    produce(b, clean, _copies(records), idempotent=True)
    altered = _copies(records)
    altered[1500] = {**altered[1500], "value": b"altered"}
    foreign = [{"key": None, "value": b"before the copy", "partition": 0}] * FOREIGN
    produce(b, bad, foreign + altered, idempotent=True)
    # the copy of source record 0 (target offset 5) deleted, with what preceded it
    client = admin(b)  # kept until the future completes
    [fut] = client.delete_records([TopicPartition(bad, 0, FOREIGN + 1)], request_timeout=30).values()
    fut.result(timeout=30)

    specs = _units(local_clusters, source, clean, CopiedSegment(0, 0, N), [1000, 2000])
    specs += _units(local_clusters, source, bad, CopiedSegment(0, FOREIGN, N), [1400])
    results = run_verify_job(spark, specs, description="vexec: 3 clean units, 2 divergent")

    assert [(r.target_topic, r.unit) for r in results] == [(clean, 0), (clean, 1), (clean, 2), (bad, 0), (bad, 1)]
    assert all(r.error is None for r in results), [r.error for r in results]
    assert [r.counts.verified for r in results] == [1000, 1000, 1000, 1399, 1599]
    assert [r.findings for r in results[:3]] == [(), (), ()]
    assert results[3].findings == (Finding("missing", 0, FOREIGN),)
    assert results[4].findings == (Finding("different", 1500, 1500 + FOREIGN, field="value"),)
    assert sum(r.records_read for r in results[:3]) >= 2 * N
    assert all(r.counts.unverified_offsets == 0 and r.counts.gap_offsets == 0 for r in results)


def test_a_unit_that_cannot_be_read_comes_back_with_its_error(
    local_clusters: LocalClusters, spark: SparkSession
) -> None:
    """VJ2: a unit whose target topic does not exist fails alone, as data; the other one is verified."""
    p = local_clusters.bootstrap("primary")
    source = unique_name("vexec-src")
    create_topic(p, source)
    produce(p, source, _records(), idempotent=True)
    [ok] = _units(local_clusters, source, source, CopiedSegment(0, 0, N), [])
    ok = replace(ok, target_conf=ok.source_conf)  # the source is its own exact copy
    missing = replace(ok, target_topic="vexec-no-such-topic", unit=1)
    results = run_verify_job(spark, [ok, missing], description="vexec: a unit of a missing topic")
    assert results[0].error is None and results[0].counts.verified == N and results[0].findings == ()
    error = results[1].error
    assert error is not None and error.code == "CLUSTER_ERROR", error
