"""Verify a flow in-process at the end of an integration test whose flow already ran (``mirrorspark verify``'s path).

Runs :func:`~mirrorspark.replication.worker.verifier.verify_flows` as the command does (the same planning, Spark
job and merge), on the test's own SparkSession and without recording, so a test proves its copy verifies without a
new setup or a Spark start of its own.
"""

from __future__ import annotations

import re
import time

from pyspark.sql import SparkSession

from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.verify.report import PartitionReport
from mirrorspark.replication.connector.verify_plan import WindowRequest
from mirrorspark.replication.worker.verifier import verify_flows


def verify_now(
    spark: SparkSession, cfg: MirrorConfig, source: str, target: str, topics: str, *, since_ms: int | None = None
) -> dict[str, PartitionReport]:
    """Verify flow ``source->target`` over the source topics matching ``topics``; return its reports by ``topic-p``.

    ``since_ms`` is ``--since`` (``0``: every record on the source, not only from the flow's first copy on).
    Asserts that no unit failed (a failed unit's offsets would count as unverified and hide a finding).
    """
    began = time.monotonic()
    ctx = ReplicationContext(cfg).flow(source, target)
    done = verify_flows(spark, [ctx], WindowRequest(re.compile(topics), since_ms), record=False)
    print(f"verify {source}->{target} {topics}: {time.monotonic() - began:.2f} s")  # the suite's cost, with -rP
    assert not done.failures, done.failures
    return {f"{p.topic}-{p.partition}": p for p in done.report.partitions}


def summary(parts: dict[str, PartitionReport]) -> tuple[int, int, int, int, list[object]]:
    """Return (verified, skipped, gap offsets, unverified offsets, findings) over every partition."""
    counts = [p.counts for p in parts.values()]
    findings: list[object] = [(k, f) for k, p in parts.items() for f in p.findings]
    return (
        sum(c.verified for c in counts),
        sum(c.skipped for c in counts),
        sum(c.gap_offsets for c in counts),
        sum(c.unverified_offsets for c in counts),
        findings,
    )
