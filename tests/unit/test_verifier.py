"""verify's driver side over in-memory clusters: plans, merged units, the history, continuous samples (a fake job)."""

from __future__ import annotations

import logging
import random
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from fakes import FakeCluster, two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.client.verify_history import read_verify_history
from mirrorspark.core.gaps import GapEvent, encode_gap
from mirrorspark.core.progress_records import PartitionReport, encode_report
from mirrorspark.core.verify import PartitionCounts, Record, align, verify_partition
from mirrorspark.errors import ErrorInfo
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.connector.verify_plan import VERIFY_READER_DEFAULTS, WindowRequest, reader_confs
from mirrorspark.replication.driver import spare_slots
from mirrorspark.replication.task.verify_spec import VerifyTaskResult, VerifyTaskSpec
from mirrorspark.replication.worker.verifier import VerifySampler, describe_findings, verify_flows

pytestmark = pytest.mark.unit

PROGRESS = "mm2-task-progress.A.internal"
S = CopiedSegment


def records(cluster: FakeCluster, topic: str, partition: int) -> dict[int, Record]:
    """A fake partition's readable records as verify compares them."""
    start = cluster.log_start(topic, partition)
    out = {}
    for o, r in enumerate(cluster.records(topic, partition)):
        if o >= start:
            headers = tuple((n, v.encode() if isinstance(v, str) else v) for n, v in (r.headers or []))
            out[o] = Record(o, r.key, r.value, headers, "create", r.timestamp_ms)
    return out


class FakeJob:
    """``run_verify_job`` computed in memory with ``verify_partition`` over the fake clusters' records."""

    def __init__(self, a: FakeCluster, b: FakeCluster) -> None:
        self.a, self.b = a, b
        self.failing: set[int] = set()  # units that fail
        self.specs: list[VerifyTaskSpec] = []

    def __call__(self, spark: Any, specs: Sequence[VerifyTaskSpec], *, description: str) -> list[VerifyTaskResult]:
        self.specs += specs
        out = []
        for s in specs:
            if s.unit in self.failing:
                out.append(
                    VerifyTaskResult(
                        s.flow,
                        s.source_topic,
                        s.partition,
                        s.target_topic,
                        s.unit,
                        PartitionCounts(),
                        error=ErrorInfo("DATA_PATH_ERROR", "reader failed"),
                    )
                )
                continue
            a = align(s.segments, s.gaps, start=s.start, end=s.end)
            src, tgt = records(self.a, s.source_topic, s.partition), records(self.b, s.target_topic, s.partition)
            counts, findings = verify_partition(a, src, tgt, chunk_size=s.chunk_size)
            listed = findings[: s.max_findings] if s.max_findings is not None else findings
            omitted = tuple(Counter(f.kind for f in findings[len(listed) :]).items())
            n = len(src) + len(tgt)
            out.append(
                VerifyTaskResult(
                    s.flow,
                    s.source_topic,
                    s.partition,
                    s.target_topic,
                    s.unit,
                    counts,
                    tuple(listed),
                    n,
                    omitted=omitted,
                )
            )
        return out


def report(
    topic: str, partition: int, segments: list[CopiedSegment], *, topic_id: str | None = None
) -> tuple[bytes, bytes]:
    end = segments[-1].upstream_end if segments else 0
    return encode_report(
        PartitionReport("A->B", topic, partition, 0, 1, end, 0, 0, 0, 0, 0, 0, tuple(segments), 0, topic_id=topic_id)
    )


def copy(a: FakeCluster, b: FakeCluster, topic: str, partition: int, upto: int) -> None:
    """Copy records [0, upto) of a partition to A.<topic> as the flow would, and report the segment."""
    b.create_topic(f"A.{topic}", len(a.topics[topic].partitions))
    for r in a.records(topic, partition)[:upto]:
        b.append(f"A.{topic}", r.key, r.value, partition=partition, ts=r.timestamp_ms)
    b.create_topic(PROGRESS, 1)
    b.append(PROGRESS, *report(topic, partition, [S(0, 0, upto)]))


def setup(n: int = 10, **extra: str) -> tuple[FlowContext, FakeCluster, FakeCluster, FakeJob]:
    cfg, a, b, clients = two_clusters("".join(f"{k} = {v}\n" for k, v in extra.items()))
    a.create_topic("orders", 1)
    for i in range(n):
        a.append("orders", f"k{i}".encode(), f"v{i}".encode(), ts=1000 + i)
    ctx = FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients)
    return ctx, a, b, FakeJob(a, b)


def test_a_clean_copy_verifies_clean_and_is_recorded() -> None:
    ctx, a, b, job = setup()
    copy(a, b, "orders", 0, 10)
    done = verify_flows(None, [ctx], WindowRequest(), runner=job)  # type: ignore[arg-type]
    assert done.report.clean
    [p] = done.report.partitions
    assert (p.topic, p.target_topic, p.counts.verified, p.counts.unverified_offsets) == ("orders", "A.orders", 10, 0)
    [run] = read_verify_history(ctx)
    assert (run.trigger, run.verified, run.divergent, run.flow) == ("command", 10, 0, "A->B")


def test_records_not_copied_yet_are_unverified_and_a_divergence_is_named() -> None:
    ctx, a, b, job = setup(12)
    copy(a, b, "orders", 0, 10)
    b.topics["A.orders"].partitions[0][4].value = b"changed"
    done = verify_flows(None, [ctx], WindowRequest(), runner=job, record=False)  # type: ignore[arg-type]
    [p] = done.report.partitions
    assert p.counts.unverified_offsets == 2  # offsets 10, 11: in flight
    [f] = p.findings
    assert (f.kind, f.source_offset, f.target_offset, f.field) == ("different", 4, 4, "value")
    assert "different (orders-0 offset 4 -> A.orders offset 4, value)" in describe_findings(done.runs[0])
    assert read_verify_history(ctx) == []  # --no-record


def test_units_are_merged_and_a_failed_unit_is_unverified() -> None:
    ctx, a, b, job = setup()
    copy(a, b, "orders", 0, 10)
    done = verify_flows(None, [ctx], WindowRequest(), runner=job, record=False, unit_records=4)  # type: ignore[arg-type]
    assert [(s.start, s.end, s.unit) for s in job.specs] == [(0, 4, 0), (4, 8, 1), (8, 10, 2)]
    assert done.report.partitions[0].counts.verified == 10
    job.failing = {1}
    done = verify_flows(None, [ctx], WindowRequest(), runner=job, record=False, unit_records=4)  # type: ignore[arg-type]
    counts = done.report.partitions[0].counts
    assert (counts.verified, counts.unverified_offsets) == (6, 4)
    assert [e.message for e in done.failures] == ["reader failed"]


def test_a_range_deleted_before_it_was_copied_is_a_gap() -> None:
    ctx, a, b, job = setup(20)
    copy(a, b, "orders", 0, 10)
    a.delete_records("orders", 0, 15)  # 10..14 never copied; 0..9 copied, then gone on the source too
    b.create_topic("mm2-gaps.A.internal", 1)
    b.append("mm2-gaps.A.internal", *encode_gap(GapEvent("A->B", "orders", 0, "deleted", 10, 14, at=1)))
    done = verify_flows(None, [ctx], WindowRequest(), runner=job, record=False)  # type: ignore[arg-type]
    counts = done.report.partitions[0].counts
    assert done.report.clean
    assert (counts.gap_offsets, counts.unverified_offsets, counts.verified) == (5, 10 + 5, 0)
    assert job.specs == []  # nothing readable is mapped: no unit


def test_last_since_and_topics_choose_the_window() -> None:
    ctx, a, b, job = setup()
    a.create_topic("other", 1)
    a.append("other", b"k", b"v")
    copy(a, b, "orders", 0, 10)
    done = verify_flows(None, [ctx], WindowRequest(last=3), runner=job, record=False)  # type: ignore[arg-type]
    assert [p.topic for p in done.report.partitions] == ["orders", "other"]
    assert done.report.partitions[0].counts.verified == 3
    pattern = re.compile("ord.*")
    done = verify_flows(None, [ctx], WindowRequest(pattern, since_ms=1006), runner=job)  # type: ignore[arg-type]
    [p] = done.report.partitions
    assert p.counts.verified == 4  # offsets 6..9 have timestamps >= 1006
    [run] = read_verify_history(ctx)
    assert (run.topics, run.since_ms, run.last) == ("ord.*", 1006, None)


def test_a_report_of_an_earlier_topic_incarnation_is_left_out() -> None:
    ctx, a, b, job = setup()
    copy(a, b, "orders", 0, 10)
    b.append(PROGRESS, *report("orders", 0, [S(0, 100, 10)], topic_id="an-old-id"))
    done = verify_flows(None, [ctx], WindowRequest(), runner=job, record=False)  # type: ignore[arg-type]
    assert done.report.clean and done.report.partitions[0].counts.verified == 10


def test_the_readers_read_committed_with_large_fetches() -> None:
    ctx, *_ = setup(
        1, **{"A.consumer.fetch.max.bytes": "1000", "A->B.mirrorspark.executor.target.bootstrap.servers": "x:1"}
    )
    source, target = reader_confs(ctx)
    assert source["isolation.level"] == target["isolation.level"] == "read_committed"
    assert (
        source["fetch.max.bytes"] == "1000" and target["fetch.max.bytes"] == VERIFY_READER_DEFAULTS["fetch.max.bytes"]
    )
    assert target["bootstrap.servers"] == "x:1" and source["bootstrap.servers"] == "a:9092"
    assert source["fetch.queue.backoff.ms"] == 10 and "verify-source-consumer" in source["client.id"]


def started_flow(ctx: FlowContext) -> Flow:
    flow = Flow(ctx, ctx.config.data_path)
    flow.start()
    return flow


def test_a_sample_is_drawn_from_the_flows_segments_and_recorded(caplog: pytest.LogCaptureFixture) -> None:
    ctx, a, b, job = setup(3000, **{"verify.sampling.enable": "true", "verify.sampling.records": "1500"})
    copy(a, b, "orders", 0, 3000)
    flow = started_flow(ctx)
    recorded: list[Any] = []
    spark: Any = object()  # the fake job never looks at it
    sampler = VerifySampler(
        flow, lambda: spark, runner=job, record=lambda c, r: recorded.append(r), rng=random.Random(7)
    )
    [job_decl] = sampler.jobs()
    assert job_decl.interval_s == 600.0 and job_decl.initial_delay_s == 600.0
    run = sampler.sample()
    assert run is not None and run.trigger == "sampling" and run.verified == 1500 and not run.divergent
    assert recorded == [run]
    assert all(s.end - s.start <= 1024 for s in job.specs)
    b.topics["A.orders"].partitions[0][0:3000] = [
        type(r)(r.key, b"x", r.timestamp_ms) for r in b.topics["A.orders"].partitions[0]
    ]
    with caplog.at_level(logging.ERROR):
        run = sampler.sample()
    assert run is not None and run.divergent == 1500  # 100 listed per unit (max_findings), the rest counted
    assert all(s.max_findings == 100 for s in job.specs)
    assert sum(len(p.findings) for p in run.report.partitions) < 1500
    assert "found 1500 divergent record(s): different (orders-0 offset" in caplog.text
    flow.close()


def test_sampling_is_off_by_default_and_waits_for_spark() -> None:
    ctx, _, _, job = setup()
    flow = started_flow(ctx)
    assert VerifySampler(flow, lambda: None, runner=job).jobs() == []
    assert VerifySampler(flow, lambda: None, runner=job).sample() is None
    flow.close()


def test_a_spare_task_slot_is_kept_for_sampling() -> None:
    off, *_ = setup(1)
    on, *_ = setup(1, **{"A->B.verify.sampling.enable": "true"})
    assert spare_slots([off.flow_config]) == 0
    assert spare_slots([off.flow_config, on.flow_config]) == 1
