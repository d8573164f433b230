"""The provenance case: what ``provenance.header.enable`` costs a flow, the same flow with the header off and on (#41).

Two contenders side by side on 1 KiB x 12 partitions (records without headers, the common case whose fresh header
is the partition's 30-byte prefix and the offset): ``mirrorspark`` (the header off: records copied as they are,
headers unread) and ``mirrorspark-provenance`` (every copy stamped with ``__mirrorspark.provenance``), alternately,
medians; the issue's bound is a ratio of at least 0.97.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from bench.contenders import MirrorsparkContender
from bench.suite import Case, CaseResult, Summary
from bench.workload import Workload

__all__ = [
    "PROVENANCE_CONTENDERS",
    "PROVENANCE_WORKLOAD",
    "RATIO_LABEL",
    "provenance_case",
    "provenance_json",
    "provenance_markdown",
    "result_line",
]

PROVENANCE_CONTENDERS: Final = ("mirrorspark", "mirrorspark-provenance")
"""Contenders of the provenance case, in run order."""
PROVENANCE_WORKLOAD: Final = (1024, 12)
"""(value bytes, partitions) of the provenance case: the issue's target."""
RATIO_LABEL: Final = "throughput ratio mirrorspark-provenance/mirrorspark"
BOUND: Final = 0.97
"""The issue's bound on the ratio (at most 3 % throughput cost)."""


def provenance_case(
    *,
    records: int,
    runs: int,
    tasks_max: int,
    warmup_records: int = 0,
    pause_s: float = 2.0,
    wait_idle_s: float = 0.0,
    size: str = "custom",
) -> Case:
    """``mirrorspark`` with the header off and on, 1 KiB x 12; ratio :data:`RATIO_LABEL`."""
    value, parts = PROVENANCE_WORKLOAD
    workload = Workload("provenance", records, value, parts)
    warmup = Workload("provenance-warmup", min(warmup_records, records), value, parts) if warmup_records > 0 else None
    return Case(
        name=f"provenance-{value}b-p{parts}",
        title=f"Provenance header off and on, {value} B records, {parts} partitions",
        workload=workload,
        contenders=[
            MirrorsparkContender(tasks_max=tasks_max),
            MirrorsparkContender(
                tasks_max=tasks_max, extra={"provenance.header.enable": "true"}, name="mirrorspark-provenance"
            ),
        ],
        runs=runs,
        warmup=warmup,
        ratios=[(RATIO_LABEL, "mirrorspark-provenance", "mirrorspark")],
        pause_s=pause_s,
        wait_idle_s=wait_idle_s,
        size=size,
    )


def result_line(result: CaseResult) -> str:
    """E.g. ``provenance 1024 B x 12: throughput ratio mirrorspark-provenance/mirrorspark 0.99 (bound 0.97)``."""
    w, ratio = result.case.workload, result.ratios.get(RATIO_LABEL)
    r = f"{ratio:.3f}" if ratio is not None else "n/a"
    return f"provenance {w.record_size} B x {w.partitions}: {RATIO_LABEL} {r} (bound {BOUND})"


def _rate(s: Summary | None) -> str:
    return f"{s.records_per_s:,.0f} ({s.mb_per_s:.1f} MB/s)" if s is not None and s.runs else "n/a"


def _cpu(s: Summary | None) -> str:
    return f"{s.cpu_s_per_gb:.1f}" if s is not None and s.runs else "n/a"


_HEADER: Final = (
    "records x partitions",
    "records (size)",
    "runs",
    "header off rec/s",
    "header on rec/s",
    "on/off",
    "CPU s/GB off / on",
)


def provenance_markdown(results: Sequence[CaseResult]) -> str:
    """One table row per case (both contenders' medians and the ratio), then the result lines."""
    rows = []
    for r in results:
        w, a, b = r.case.workload, r.summary("mirrorspark"), r.summary("mirrorspark-provenance")
        ratio = r.ratios.get(RATIO_LABEL)
        rows.append(
            [
                f"{w.record_size} B x {w.partitions}",
                f"{w.records:,} ({w.payload_bytes / 1e6:,.0f} MB)",
                str(min(a.runs if a else 0, b.runs if b else 0)),
                _rate(a),
                _rate(b),
                "n/a" if ratio is None else f"{ratio:.3f}",
                f"{_cpu(a)} / {_cpu(b)}",
            ]
        )
    table = "\n".join(
        ["| " + " | ".join(_HEADER) + " |", "|" + "|".join("---" for _ in _HEADER) + "|"]
        + ["| " + " | ".join(row) + " |" for row in rows]
    )
    lines = "\n".join(f"`{result_line(r)}`" for r in results)
    return f"Records without headers, alternately off and on; medians over the runs.\n\n{table}\n\n{lines}"


def provenance_json(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """Plain-JSON form of the provenance cases (for ``bench/results/*.json``)."""
    from bench import report

    return [
        {
            "workload": {"records": w.records, "record_size": w.record_size, "partitions": w.partitions},
            "ratios": r.ratios,
            "cpu_ratios": r.cpu_ratios,
            "summaries": [report._summary_json(x) for x in r.summaries],
            "runs": [m.to_json() for m in [*r.warmups, *r.runs]],
        }
        for r in results
        for w in [r.case.workload]
    ]
