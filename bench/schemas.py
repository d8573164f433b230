"""The schemas case: what translating schema ids costs a flow, the same flow with and without it (issue #39).

Two contenders side by side on one workload whose values are in Confluent's wire format with real ids
(:attr:`bench.workload.Workload.schema_ids`): ``mirrorspark`` (no registry keys: records copied byte for byte)
and ``mirrorspark-schemas`` (both clusters' ``schema.registry.url`` set, so the flow replicates schemas and
its copy tasks translate every value's id). Two Apicurio registries (:mod:`mirrorspark.kafka.local.registry`)
start once per case set: the source holds :data:`SCHEMA_VERSIONS` versions of each workload topic's value
subject, the target is preloaded with :data:`UNRELATED_SCHEMAS` unrelated schemas so that every id differs.
The target keeps what each run registered (every run's flow has a new source alias, so a new subject
``s<n>.<topic>-value``, with the same schemas as the runs before it).
"""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bench.contenders import MirrorsparkContender
from bench.env import TARGET, BenchEnv
from bench.suite import Case, CaseResult, Summary
from bench.workload import Workload

if TYPE_CHECKING:
    from mirrorspark.config.model import MirrorConfig
    from mirrorspark.replication.driver import Replicator

__all__ = [
    "RATIO_LABEL",
    "SCHEMAS_CONTENDERS",
    "SCHEMAS_WORKLOADS",
    "IdCounts",
    "SchemasContender",
    "avro_version",
    "run_schemas_cases",
    "schemas_case",
    "schemas_json",
    "schemas_line",
    "schemas_markdown",
]

log = logging.getLogger(__name__)

SCHEMAS_CONTENDERS: Final = ("mirrorspark", "mirrorspark-schemas")
"""Contenders of the schemas case, in run order."""
SCHEMAS_WORKLOADS: Final = ((1024, 12), (100, 1))
"""(value bytes, partitions) of the schemas case: the issue's two targets."""
SCHEMA_VERSIONS: Final = 20
"""Versions of each workload topic's value subject on the source: the ids its records cycle over."""
UNRELATED_SCHEMAS: Final = 30
"""Schemas registered on the target before any run, so that the target's ids are not the source's."""
RATIO_LABEL: Final = "throughput ratio mirrorspark-schemas/mirrorspark"
REGISTRIES: Final = ("bench-source", "bench-target")
"""Names of the two registries (their log files)."""


def avro_version(name: str, fields: int) -> str:
    """An Avro record schema ``bench.<name>`` with ``fields`` optional long fields ``f0``...: each one a compatible
    evolution of the one before."""
    return json.dumps(
        {
            "type": "record",
            "name": name,
            "namespace": "bench",
            "fields": [{"name": f"f{i}", "type": ["null", "long"], "default": None} for i in range(fields)],
        }
    )


@dataclass(frozen=True)
class IdCounts:
    """One ``mirrorspark-schemas`` run's id translations: cache hits, misses and unknown ids, and where they were read
    (``"status"``: the flow's status after the run, ``"tasks"``: the copy tasks' progress reports in the driver)."""

    run: int
    hits: int
    misses: int
    unknown: int
    source: str

    @property
    def translated(self) -> int:
        """Ids translated: hits + misses."""
        return self.hits + self.misses

    @property
    def hit_ratio(self) -> float | None:
        """``hits / translated``, ``None`` before any translation."""
        return self.hits / self.translated if self.translated else None


class SchemasContender(MirrorsparkContender):
    """``mirrorspark`` with both clusters' registries named: the flow replicates schemas and translates ids.

    Parameters
    ----------
    tasks_max:
        As :class:`~bench.contenders.MirrorsparkContender`.
    source_url, target_url:
        The registries' ``schema.registry.url``.
    """

    def __init__(self, *, tasks_max: int, source_url: str, target_url: str) -> None:
        super().__init__(tasks_max=tasks_max, name="mirrorspark-schemas")
        self.source_url, self.target_url = source_url, target_url
        self.description += ", <source>.schema.registry.url and target.schema.registry.url set (ids translated)"
        self.counts: list[IdCounts] = []

    def properties(self, workload: Workload, alias: str = "source") -> dict[str, str]:
        """The plain contender's keys and both clusters' registries."""
        props = super().properties(workload, alias)
        props[f"{alias}.schema.registry.url"] = self.source_url
        props[f"{TARGET}.schema.registry.url"] = self.target_url
        return props

    def inspect(self, cfg: MirrorConfig, replicator: Replicator, workload: Workload, run: int) -> str:
        """Keep the run's id counts (its flow's status, else the tasks' reports); fail unless each value got one."""
        flow = replicator.flows[0]
        progress = [p for (t, _), p in flow.partitions.items() if t == workload.topic]
        tasks = IdCounts(
            run,
            sum(p.schema_hits for p in progress),
            sum(p.schema_misses for p in progress),
            sum(p.schema_unknown for p in progress),
            "tasks",
        )
        counts = tasks
        try:
            from mirrorspark.client.status import flow_status

            s = flow_status(cfg, flow.config).schemas
            if s is not None:
                counts = IdCounts(run, s.id_cache_hits, s.id_cache_misses, s.unknown_ids, "status")
        except Exception as e:  # the figures still come from the tasks' reports
            log.warning("%s run %d: no status (%s): id counts from the copy tasks' reports", self.name, run, e)
        self.counts.append(counts)
        if tasks.translated != workload.records or tasks.unknown:
            return f"translated {tasks.translated} ids ({tasks.unknown} unknown) of {workload.records} records"
        return ""


def schemas_case(
    *,
    workload: Workload,
    runs: int,
    tasks_max: int,
    source_url: str,
    target_url: str,
    warmup: Workload | None = None,
    pause_s: float = 2.0,
    wait_idle_s: float = 0.0,
    size: str = "custom",
) -> Case:
    """``mirrorspark`` and ``mirrorspark-schemas`` on one wire-format workload; ratio :data:`RATIO_LABEL`."""
    return Case(
        name=f"schemas-{workload.record_size}b-p{workload.partitions}",
        title=f"Schema ids translated, {workload.record_size} B records, {workload.partitions} partition(s)",
        workload=workload,
        contenders=[
            MirrorsparkContender(tasks_max=tasks_max),
            SchemasContender(tasks_max=tasks_max, source_url=source_url, target_url=target_url),
        ],
        runs=runs,
        warmup=warmup,
        ratios=[(RATIO_LABEL, "mirrorspark-schemas", "mirrorspark")],
        pause_s=pause_s,
        wait_idle_s=wait_idle_s,
        size=size,
    )


def _register(url: str, subject: str, texts: Sequence[str]) -> tuple[int, ...]:
    """Register each Avro schema text as the next version of ``subject``; return their ids."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": url})
    return tuple(client.register_schema(subject, Schema(t, "AVRO")) for t in texts)


def run_schemas_cases(
    env: BenchEnv,
    *,
    records: dict[int, int],
    runs: int,
    tasks_max: int,
    warmup_records: int,
    run: Callable[[Case], CaseResult],
    echo: Callable[[str], None] = print,
    **case_kwargs: Any,
) -> list[CaseResult]:
    """Start both registries, register the workloads' schemas, run :data:`SCHEMAS_WORKLOADS`' cases, stop them.

    ``records`` maps value bytes to the records of a workload; ``run`` runs one case (loads, runs, reports and
    deletes its topics); ``case_kwargs`` go to :func:`schemas_case` (``pause_s``, ``wait_idle_s``, ``size``).
    """
    from mirrorspark.kafka.local.registry import start_registries, stop_registries

    registries = start_registries(REGISTRIES, base_dir=Path(env.work_dir) / "registries")
    try:
        src, tgt = (registries[n].url for n in REGISTRIES)
        echo(f"registries: source {src}, target {tgt}")
        _register(tgt, "bench-unrelated-value", [avro_version("Unrelated", n + 1) for n in range(UNRELATED_SCHEMAS)])
        results = []
        for size, parts in SCHEMAS_WORKLOADS:
            probe = Workload("schemas", records[size], size, parts, schema_ids=(0,))
            texts = [avro_version(f"V{size}x{parts}", n) for n in range(SCHEMA_VERSIONS)]
            ids = _register(src, f"{probe.topic}-value", texts)  # TopicNameStrategy: the topic's value subject
            workload = replace(probe, schema_ids=ids)
            warm = (
                Workload("schemas-warmup", min(warmup_records, records[size]), size, parts, schema_ids=ids)
                if warmup_records > 0
                else None
            )
            case = schemas_case(
                workload=workload,
                runs=runs,
                tasks_max=tasks_max,
                source_url=src,
                target_url=tgt,
                warmup=warm,
                **case_kwargs,
            )
            results.append(run(case))
        return results
    finally:
        stop_registries(registries.values())


def _counts(result: CaseResult) -> list[IdCounts]:
    """The measured runs' id counts of a schemas case (warm-up left out)."""
    c = next((c for c in result.case.contenders if isinstance(c, SchemasContender)), None)
    return [x for x in c.counts if x.run > 0] if c is not None else []


def hit_ratio(result: CaseResult) -> float | None:
    """The median over the measured runs of each run's id cache hit ratio, ``None`` without one."""
    ratios = [r for r in (x.hit_ratio for x in _counts(result)) if r is not None]
    return statistics.median(ratios) if ratios else None


def schemas_line(workload: Workload, ratio: float | None, hits: float | None) -> str:
    """E.g. ``schemas workload 100 B x 1: throughput ratio mirrorspark-schemas/mirrorspark 0.95; id cache hit ratio
    0.9999`` (``n/a`` where a side failed)."""
    r = f"{ratio:.2f}" if ratio is not None else "n/a"
    h = f"{hits:.4f}" if hits is not None else "n/a"
    return (
        f"schemas workload {workload.record_size} B x {workload.partitions}: "
        f"throughput ratio mirrorspark-schemas/mirrorspark {r}; id cache hit ratio {h}"
    )


def result_line(result: CaseResult) -> str:
    """:func:`schemas_line` of one case's result."""
    return schemas_line(result.case.workload, result.ratios.get(RATIO_LABEL), hit_ratio(result))


def _rate(s: Summary | None) -> str:
    return f"{s.records_per_s:,.0f} ({s.mb_per_s:.1f} MB/s)" if s is not None and s.runs else "n/a"


def _cpu(s: Summary | None) -> str:
    return f"{s.cpu_s_per_gb:.1f}" if s is not None and s.runs else "n/a"


def _row(r: CaseResult) -> list[str]:
    """One workload's row of :func:`schemas_markdown`."""
    w = r.case.workload
    a, b = r.summary("mirrorspark"), r.summary("mirrorspark-schemas")
    counts = _counts(r)

    def med(f: Callable[[IdCounts], int]) -> str:
        return f"{statistics.median(f(x) for x in counts):,.0f}" if counts else "n/a"

    ratio, h = r.ratios.get(RATIO_LABEL), hit_ratio(r)
    return [
        f"{w.record_size} B x {w.partitions}",
        f"{w.records:,} ({w.payload_bytes / 1e6:,.0f} MB)",
        str(min(a.runs if a else 0, b.runs if b else 0)),
        _rate(a),
        _rate(b),
        "n/a" if ratio is None else f"{ratio:.2f}",
        f"{_cpu(a)} / {_cpu(b)}",
        med(lambda x: x.translated),
        med(lambda x: x.misses),
        "n/a" if h is None else f"{h:.4f}",
        ", ".join(sorted({x.source for x in counts})) or "n/a",
        f"{max((s.other_cores for s in (a, b) if s is not None and s.runs), default=0.0):.2f}",
    ]


_HEADER: Final = (
    "records x partitions",
    "records (size)",
    "runs",
    "mirrorspark rec/s",
    "mirrorspark-schemas rec/s",
    "schemas/plain",
    "CPU s/GB plain / schemas",
    "ids translated per run",
    "id cache misses per run",
    "id cache hit ratio",
    "counts from",
    "other procs cores",
)


def schemas_markdown(results: Sequence[CaseResult]) -> str:
    """One table row per workload (both contenders' medians, the ratio, the id counts per run), then the lines."""
    table = "\n".join(
        ["| " + " | ".join(_HEADER) + " |", "|" + "|".join("---" for _ in _HEADER) + "|"]
        + ["| " + " | ".join(_row(r)) + " |" for r in results]
    )
    lines = "\n".join(f"`{result_line(r)}`" for r in results)
    return (
        f"{SCHEMA_VERSIONS} schema ids per workload (each partition cycles over all of them; values in wire format, "
        "random bytes after the id); the target registry preloaded so every id differs; medians over the runs.\n\n"
        f"{table}\n\n{lines}"
    )


def schemas_json(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """Plain-JSON form of the schemas cases (for ``bench/results/*.json``)."""
    from bench import report

    return [
        {
            "workload": {"records": w.records, "record_size": w.record_size, "partitions": w.partitions},
            "schema_ids": list(w.schema_ids),
            "ratios": r.ratios,
            "cpu_ratios": r.cpu_ratios,
            "id_cache_hit_ratio": hit_ratio(r),
            "id_counts": [vars(x) | {"hit_ratio": x.hit_ratio} for x in _counts(r)],
            "summaries": [report._summary_json(x) for x in r.summaries],
            "runs": [m.to_json() for m in [*r.warmups, *r.runs]],
        }
        for r in results
        for w in [r.case.workload]
    ]
