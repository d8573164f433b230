"""A verification's plan on the driver: what each flow knows, cut into verify tasks (``mirrorspark verify``; no Spark).

:func:`plan_flow` reads, read-only, what a flow knows of its copies: the replicated source topics (``--topics``),
their log start and end offsets (``read_committed``), the copied segments from the progress channel
(:func:`~mirrorspark.client.copied_segments.read_copied_segments`), the gap ledger, and the cluster ids of the
provenance header; it cuts each partition's window into units (:mod:`mirrorspark.core.verify.units`) and each
unit into a :class:`~mirrorspark.replication.task.verify_spec.VerifyTaskSpec` carrying what the flow's copy tasks
get (transforms, provenance, schema-id translation) and both sides' reader settings. :func:`sample_plan` does the
same for ``run``'s continuous sampling, over the running flow's own segments and gaps.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mirrorspark.client.context import FlowContext, SettingsKey
from mirrorspark.client.copied_segments import read_copied_segments
from mirrorspark.client.gap_reader import read_gap_ledger
from mirrorspark.core.gaps import GapEvent
from mirrorspark.core.verify.compare import DEFAULT_CHUNK_SIZE
from mirrorspark.core.verify.report import PartitionCounts
from mirrorspark.core.verify.units import (
    DEFAULT_UNIT_RECORDS,
    PartitionKey,
    Window,
    add_counts,
    partition_window,
    plan_partition,
    sample_ranges,
)
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.replication.connector.provenance_ids import flow_provenance
from mirrorspark.replication.connector.schema_sync import SchemaSync
from mirrorspark.replication.task.spec import ProvenanceSpec, SchemaIdsSpec
from mirrorspark.replication.task.verify_spec import VerifyTaskSpec

MIB: Final = 1024 * 1024

VERIFY_READER_DEFAULTS: Final[Mapping[str, Any]] = {
    # bench/verify_reader.py: librdkafka's 1 s queue backoff left one-partition reads waiting; large fetches
    # carry more per round trip (217k-418k records/s per core read and digested)
    "fetch.queue.backoff.ms": 10,
    "fetch.max.bytes": 64 * MIB,
    "max.partition.fetch.bytes": 16 * MIB,
}
"""librdkafka settings of verify's readers (both sides) that the user's consumer settings may override."""

FINDINGS_PER_UNIT: Final = 10_000
"""Most findings a verify task of ``mirrorspark verify`` lists (the rest counted by kind): a unit whose copies are
all gone stays a small result."""

_READER_OVERRIDES: Final[Mapping[str, Any]] = {
    "isolation.level": "read_committed",  # what a consumer of either side sees: aborted records are no copies
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "error",
}


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """One source partition's verify tasks (in offset order) and the counts of its offsets judged without a read."""

    topic: str
    partition: int
    target_topic: str
    specs: tuple[VerifyTaskSpec, ...]
    unread: PartitionCounts


@dataclass(frozen=True, slots=True)
class FlowPlan:
    """One flow's verification: its partitions' plans, sorted by topic and partition."""

    flow: str
    source: str
    target: str
    partitions: tuple[PartitionPlan, ...]

    @property
    def specs(self) -> list[VerifyTaskSpec]:
        """Every verify task of the flow, partition by partition."""
        return [s for p in self.partitions for s in p.specs]


def reader_confs(ctx: FlowContext) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the librdkafka configurations of the source and target readers of a flow's verify tasks.

    ``read_committed``, assign-only (``group.id`` set for ACLs, never joined), the large fetches of
    :data:`VERIFY_READER_DEFAULTS`; the executors' bootstrap servers when the flow names them. Raises ConfigError as
    :meth:`FlowContext.client_conf`.
    """
    cfg = ctx.flow_config
    out = []
    sides: tuple[tuple[SettingsKey, str, str], ...] = (
        ("source_consumer", "verify-source-consumer", cfg.executor_source_bootstrap_servers),
        ("target_consumer", "verify-target-consumer", cfg.executor_target_bootstrap_servers),
    )
    for key, purpose, bootstrap in sides:
        conf = ctx.client_conf(key, purpose, defaults=VERIFY_READER_DEFAULTS, overrides=_READER_OVERRIDES)
        conf.setdefault("group.id", f"mirrorspark-{cfg.name}")
        if bootstrap.strip():
            conf["bootstrap.servers"] = bootstrap.strip()
        out.append(conf)
    return out[0], out[1]


class SpecBuilder:
    """Builds one flow's verify tasks: the readers' settings and the flow's transforms, provenance and schemas.

    ``max_findings`` caps the findings each task lists (the rest counted by kind; ``None``: no cap).
    """

    def __init__(
        self,
        ctx: FlowContext,
        *,
        provenance: ProvenanceSpec | None,
        schemas: SchemaIdsSpec | None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        unit_records: int = DEFAULT_UNIT_RECORDS,
        max_findings: int | None = FINDINGS_PER_UNIT,
    ) -> None:
        self.ctx = ctx
        self.max_findings = max_findings
        self.confs = reader_confs(ctx)
        self.provenance = provenance
        self.schemas = schemas
        self.chunk_size = chunk_size
        self.unit_records = unit_records

    def target_topic(self, topic: str) -> str:
        """Return the remote topic the flow copies source ``topic`` to (its replication policy)."""
        return self.ctx.policy.format_remote_topic(self.ctx.flow_config.source, topic)

    def partition(
        self,
        topic: str,
        partition: int,
        segments: Sequence[CopiedSegment],
        gaps: Sequence[GapEvent],
        windows: Iterable[Window],
    ) -> PartitionPlan:
        """Cut a partition's windows into units and each unit into a verify task (numbered from 0 in order).

        A flow that may drop records (transforms, provenance header) has its unverified edges read too (core U4).
        """
        mine = tuple(g for g in gaps if g.topic == topic and g.partition == partition)
        target_topic = self.target_topic(topic)
        drops = self.provenance is not None or self.ctx.bound_transforms(topic) is not None
        specs: list[VerifyTaskSpec] = []
        unread = []
        for w in windows:
            plan = plan_partition(segments, mine, w, unit_records=self.unit_records, drops=drops)
            unread.append(plan.unread)
            for lo, hi in plan.units:
                specs.append(self._spec(topic, partition, target_topic, lo, hi, segments, mine, len(specs)))
        return PartitionPlan(topic, partition, target_topic, tuple(specs), add_counts(unread))

    def _spec(
        self,
        topic: str,
        partition: int,
        target_topic: str,
        lo: int,
        hi: int,
        segments: Sequence[CopiedSegment],
        gaps: tuple[GapEvent, ...],
        unit: int,
    ) -> VerifyTaskSpec:
        cfg = self.ctx.flow_config
        return VerifyTaskSpec(
            flow=cfg.name,
            source=cfg.source,
            target=cfg.target,
            source_topic=topic,
            partition=partition,
            target_topic=target_topic,
            start=lo,
            end=hi,
            segments=tuple(s for s in segments if s.upstream_start < hi and s.upstream_end > lo),
            gaps=gaps,
            source_conf=self.confs[0],
            target_conf=self.confs[1],
            transforms=self.ctx.bound_transforms(topic),
            provenance=self.provenance,
            schemas=self.schemas,
            chunk_size=self.chunk_size,
            unit=unit,
            max_findings=self.max_findings,
        )


def schema_spec(ctx: FlowContext) -> SchemaIdsSpec | None:
    """Return the flow's schema-id translation as its copy tasks get it (no registry call), ``None`` when off."""
    sync = SchemaSync.for_flow(ctx, lambda: ctx.topic_filter)
    return sync.task_spec() if sync is not None else None


@dataclass(frozen=True, slots=True)
class WindowRequest:
    """What ``mirrorspark verify`` was asked for: which topics, and which window of them.

    ``topics`` is a compiled regex source topics match in full (``None``: every replicated topic); ``since_ms``
    (epoch ms) or ``last`` (copied records per partition), or neither (everything the flow knows).
    """

    topics: re.Pattern[str] | None = None
    since_ms: int | None = None
    last: int | None = None


def plan_flow(
    ctx: FlowContext,
    request: WindowRequest,
    *,
    source_admin: ClusterAdmin,
    target_admin: ClusterAdmin,
    unit_records: int = DEFAULT_UNIT_RECORDS,
    timeout_s: float = 30.0,
) -> FlowPlan:
    """Read what the flow knows (read-only) and cut it into verify tasks, partition by partition.

    Raises ClusterError when a cluster or an internal topic cannot be read, ConfigError (provenance header on and a
    cluster telling no id; a client setting librdkafka refuses).
    """
    cfg = ctx.flow_config
    topics = {
        t: n
        for t, n in source_admin.list_topics().items()
        if ctx.replicates_topic(t) and (request.topics is None or request.topics.fullmatch(t))
    }
    keys = sorted((t, p) for t, n in topics.items() for p in range(n))
    ids = {t: d.topic_id for t, d in source_admin.describe_topics(topics).items() if d.topic_id}
    copied = read_copied_segments(ctx, topic_ids=ids, timeout_s=timeout_s)
    gaps = read_gap_ledger(ctx, client_id=ctx.client_id("verify-gaps-consumer"), timeout_s=timeout_s).gaps
    starts = source_admin.start_offsets(keys)
    ends = source_admin.end_offsets(keys, read_committed=True)
    since = source_admin.offsets_for_timestamp(keys, request.since_ms) if request.since_ms is not None else {}
    builder = SpecBuilder(
        ctx,
        provenance=flow_provenance(cfg, source_admin, target_admin),
        schemas=schema_spec(ctx),
        unit_records=unit_records,
    )
    parts = []
    for t, p in keys:
        segments = copied.segments(t, p)
        mine = [g for g in gaps if g.topic == t and g.partition == p]
        offset = since.get((t, p))
        window = partition_window(
            segments,
            mine,
            log_start=starts[(t, p)],
            log_end=ends[(t, p)],
            since=None if offset is None else (ends[(t, p)] if offset < 0 else offset),
            last=request.last,
        )
        parts.append(builder.partition(t, p, segments, mine, [window]))
    return FlowPlan(cfg.name, cfg.source, cfg.target, tuple(parts))


def sample_plan(
    builder: SpecBuilder,
    segments: Mapping[PartitionKey, Sequence[CopiedSegment]],
    gaps: Sequence[GapEvent],
    *,
    records: int,
    rng: random.Random,
) -> FlowPlan:
    """Plan a continuous sample: random runs of ``records`` copied offsets in all (core ``sample_ranges``)."""
    cfg = builder.ctx.flow_config
    drawn = sample_ranges(segments, records, rng, run=builder.chunk_size)
    parts = [
        builder.partition(t, p, segments[(t, p)], gaps, [Window(lo, lo, hi) for lo, hi in ranges])
        for (t, p), ranges in drawn.items()
    ]
    return FlowPlan(cfg.name, cfg.source, cfg.target, tuple(parts))


__all__ = [
    "FINDINGS_PER_UNIT",
    "VERIFY_READER_DEFAULTS",
    "FlowPlan",
    "PartitionPlan",
    "SpecBuilder",
    "WindowRequest",
    "plan_flow",
    "reader_confs",
    "sample_plan",
    "schema_spec",
]
