"""``mirrorspark verify`` and ``run``'s continuous sampling on the driver: plan, run the verify job, merge, record.

:func:`verify_flows` plans each flow (:func:`~mirrorspark.replication.connector.verify_plan.plan_flow`), runs
every flow's verify tasks in one Spark job (:func:`~mirrorspark.replication.worker.verify_job.run_verify_job`,
injectable), merges each partition's units and unread offsets into one
:class:`~mirrorspark.core.verify.report.PartitionReport` (core ``merge_partition``) and appends one
:class:`~mirrorspark.core.verify.history.VerifyRun` per flow to the flow's verify history. :class:`VerifySampler`
is one flow's continuous sampling in ``run``: a periodic job of its own (``verify.sampling.*``). A unit whose task
failed counts its offsets as unverified and its error is kept in :attr:`Verification.failures`.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mirrorspark.client.context import FlowContext
from mirrorspark.client.verify_history import record_verify_run
from mirrorspark.core.verify.history import FINDINGS_KEPT, Trigger, VerifyRun
from mirrorspark.core.verify.report import Finding, FindingKind, PartitionCounts, PartitionReport, VerifyReport
from mirrorspark.core.verify.units import DEFAULT_UNIT_RECORDS, merge_partition
from mirrorspark.errors import ErrorInfo
from mirrorspark.replication.connector.scheduler import PeriodicJob
from mirrorspark.replication.connector.verify_plan import FlowPlan, SpecBuilder, WindowRequest, plan_flow, sample_plan
from mirrorspark.replication.task.verify_spec import VerifyTaskResult, VerifyTaskSpec
from mirrorspark.replication.worker.verify_job import run_verify_job

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mirrorspark.replication.connector.flow import Flow

log = logging.getLogger(__name__)

FINDINGS_LOGGED = 10
"""Most findings a divergent sample's ERROR line names."""

SAMPLE_LOCK_WAIT_S = 10.0
"""Seconds a sample waits for its flow's lock (held by a control job) to draw its ranges, before it is skipped."""


class JobRunner(Protocol):
    """Runs verify tasks on Spark (:func:`~mirrorspark.replication.worker.verify_job.run_verify_job`)."""

    def __call__(
        self, spark: SparkSession, specs: Sequence[VerifyTaskSpec], *, description: str
    ) -> list[VerifyTaskResult]:
        """Return one result per spec, in order."""
        ...


@dataclass(frozen=True, slots=True)
class Verification:
    """One verification: the report of every flow, a history run per flow, failed units, and what was read."""

    report: VerifyReport
    runs: tuple[VerifyRun, ...]
    failures: tuple[ErrorInfo, ...] = ()
    records_read: int = 0
    bytes_read: int = 0


def merge_results(
    plan: FlowPlan, results: Sequence[VerifyTaskResult], failures: list[ErrorInfo]
) -> tuple[PartitionReport, ...]:
    """Merge a flow's unit results (in ``plan.specs`` order) into one report per partition; failed units unverified."""
    out = []
    at = 0
    for part in plan.partitions:
        parts: list[tuple[PartitionCounts, Sequence[Finding], Sequence[tuple[FindingKind, int]]]] = [
            (part.unread, (), ())
        ]
        for spec in part.specs:
            r = results[at]
            at += 1
            if r.error is not None:
                failures.append(r.error)
                parts.append((PartitionCounts(unverified_offsets=spec.end - spec.start), (), ()))
            else:
                parts.append((r.counts, r.findings, r.omitted))
        out.append(merge_partition(plan.flow, part.topic, part.partition, part.target_topic, parts))
    return tuple(out)


def run_plans(
    spark: SparkSession,
    plans: Sequence[FlowPlan],
    *,
    trigger: Trigger,
    request: WindowRequest | None = None,
    runner: JobRunner = run_verify_job,
    clock: Callable[[], float] = time.time,
) -> Verification:
    """Run every plan's verify tasks in one Spark job and build the report and a history run per flow.

    Raises MirrorsparkError when the job itself fails (a failed unit is a failure, not an error).
    """
    request = request if request is not None else WindowRequest()
    began = clock()
    specs = [s for p in plans for s in p.specs]
    flows = ", ".join(p.flow for p in plans)
    results = (
        runner(spark, specs, description=f"mirrorspark verify ({trigger}) {flows}: {len(specs)} unit(s)")
        if specs
        else []
    )
    at_ms = int(began * 1000)
    duration_ms = int((clock() - began) * 1000)
    failures: list[ErrorInfo] = []
    runs = []
    parts: list[PartitionReport] = []
    offset = 0
    for plan in plans:
        n = len(plan.specs)
        mine = merge_results(plan, results[offset : offset + n], failures)
        offset += n
        parts.extend(mine)
        runs.append(
            VerifyRun(
                flow=plan.flow,
                source=plan.source,
                target=plan.target,
                at=at_ms,
                trigger=trigger,
                duration_ms=duration_ms,
                report=VerifyReport(at_ms, mine),
                since_ms=request.since_ms,
                last=request.last,
                topics=request.topics.pattern if request.topics is not None else None,
            )
        )
    return Verification(
        VerifyReport(at_ms, tuple(parts)),
        tuple(runs),
        tuple(failures),
        sum(r.records_read for r in results),
        sum(r.bytes_read for r in results),
    )


def verify_flows(
    spark: SparkSession,
    contexts: Sequence[FlowContext],
    request: WindowRequest,
    *,
    record: bool = True,
    runner: JobRunner = run_verify_job,
    unit_records: int = DEFAULT_UNIT_RECORDS,
    timeout_s: float = 30.0,
) -> Verification:
    """``mirrorspark verify``: plan each flow (read-only), verify on Spark, append a run per flow unless not ``record``.

    Raises ClusterError (a cluster or internal topic unreadable, the history not written), ConfigError, or
    MirrorsparkError when the Spark job fails.
    """
    plans = []
    for ctx in contexts:
        with (
            ctx.cluster_admin("source", "verify-source-admin") as src,
            ctx.cluster_admin("target", "verify-target-admin") as tgt,
        ):
            plans.append(
                plan_flow(
                    ctx, request, source_admin=src, target_admin=tgt, unit_records=unit_records, timeout_s=timeout_s
                )
            )
    done = run_plans(spark, plans, trigger="command", request=request, runner=runner)
    if record:
        for ctx, run in zip(contexts, done.runs, strict=True):
            record_verify_run(ctx, run, timeout_s=timeout_s)
    return done


def describe_findings(run: VerifyRun, n: int = FINDINGS_LOGGED) -> str:
    """Return the first ``n`` findings of a run as text: kind, partition, offsets on both sides, field."""
    out = []
    for p in run.report.partitions:
        for f in p.findings:
            where = f"{p.topic}-{p.partition} offset {f.source_offset} -> {p.target_topic} offset {f.target_offset}"
            out.append(f"{f.kind} ({where}{', ' + f.field if f.field else ''})")
    more = run.divergent - min(n, len(out))
    return "; ".join(out[:n]) + (f"; and {more} more" if more > 0 else "")


class VerifySampler:
    """One flow's continuous sampling in ``run`` (``verify.sampling.*``): a random sample verified every interval.

    ``spark`` returns the session (``None``: not started yet); ``active`` whether this instance runs the flow (a
    standby samples nothing); ``runner``, ``record`` and ``rng`` are injectable for tests. Never raises into the
    scheduler beyond what it logs: a failed sample is retried at the next interval.
    """

    def __init__(
        self,
        flow: Flow,
        spark: Callable[[], SparkSession | None],
        *,
        active: Callable[[], bool] = lambda: True,
        runner: JobRunner = run_verify_job,
        record: Callable[[FlowContext, VerifyRun], object] = record_verify_run,
        rng: random.Random | None = None,
    ) -> None:
        self.flow = flow
        self.config = flow.config
        self._spark = spark
        self._active = active
        self._runner = runner
        self._record = record
        self._rng = rng if rng is not None else random.Random()
        self._builder: SpecBuilder | None = None
        self.last: VerifyRun | None = None

    def jobs(self) -> list[PeriodicJob]:
        """Declare ``verify sample S->T`` every ``verify.sampling.interval.ms`` when enabled (none otherwise)."""
        if not self.config.verify_sampling_enable:
            return []
        every = self.config.verify_sampling_interval_ms / 1000.0
        return [PeriodicJob(f"verify sample {self.flow.name}", every, self.sample, initial_delay_s=every)]

    def _plan(self) -> FlowPlan:
        """Draw this sample from the flow's copied segments and gaps (under its lock, briefly)."""
        flow = self.flow
        with flow.held(wait_s=SAMPLE_LOCK_WAIT_S) as taken:
            if not taken:  # a control job holds the flow: this sample is skipped, the next one drawn
                log.info("%s: a verify sample skipped: the flow was busy for %.0f s", flow.name, SAMPLE_LOCK_WAIT_S)
                return FlowPlan(flow.name, flow.config.source, flow.config.target, ())
            if self._builder is None:
                schemas = flow.schemas.task_spec() if flow.schemas is not None else None
                self._builder = SpecBuilder(
                    flow.context, provenance=flow.provenance, schemas=schemas, max_findings=FINDINGS_KEPT
                )
            replicated = set(flow.partitions)
            segments = {k: flow.copied.segments(*k) for k in sorted(flow.copied.partitions()) if k in replicated}
            gaps = list(flow.gaps)
        return sample_plan(self._builder, segments, gaps, records=self.config.verify_sampling_records, rng=self._rng)

    def sample(self) -> VerifyRun | None:
        """Verify one sample and append it to the history (trigger ``sampling``); return it (``None``: nothing to do).

        Logs an ERROR naming the findings when the sample diverges, a WARNING for failed units. Raises what planning,
        the Spark job or the history write raised (the scheduler logs it and tries again next interval).
        """
        spark = self._spark()
        if spark is None or not self._active() or self.flow.halted is not None:
            return None
        plan = self._plan()
        if not plan.specs:
            return None
        done = run_plans(spark, [plan], trigger="sampling", runner=self._runner)
        run = done.runs[0]
        self.last = run
        for e in done.failures[:3]:
            log.warning(
                "%s: a verify sample's unit failed (its records count as unverified): %s", self.flow.name, e.message
            )
        if run.divergent:
            log.error(
                "%s: a verify sample of %d copied records found %d divergent record(s): %s; run mirrorspark verify "
                "for the whole flow",
                self.flow.name,
                sum(s.end - s.start for s in plan.specs),
                run.divergent,
                describe_findings(run),
            )
        self._record(self.flow.context, run)
        return run


__all__ = [
    "FINDINGS_LOGGED",
    "SAMPLE_LOCK_WAIT_S",
    "JobRunner",
    "Verification",
    "VerifySampler",
    "describe_findings",
    "merge_results",
    "run_plans",
    "verify_flows",
]
