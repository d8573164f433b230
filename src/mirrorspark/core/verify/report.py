"""The verify report: per flow and partition, counts and findings with offsets; its JSON and exit status (no I/O).

Invariants (named by ``tests/unit/test_verify_report.py``):

- V1 a :class:`Finding` carries its kind and the offsets on both sides it concerns: ``missing`` a source offset
  (and the target offset it should be at, ``None`` when it fell in a hole), ``unexpected`` a target offset,
  ``different`` both and the first differing field, ``duplicated`` the source offset, the extra copy's target
  offset and the first copy's (``related_offset``), ``out_of_order`` both and the source record whose copy sits
  at that target offset (``related_offset``).
- V2 :meth:`PartitionReport.divergent` counts findings; gaps, skipped and unverified offsets never count.
- V3 :func:`exit_status` is 0 when no partition has a finding and :data:`DIVERGENCE_EXIT_CODE` (11) otherwise:
  1 to 9 are :class:`~mirrorspark.errors.MirrorsparkError` codes, 2 usage errors, 10 ``plan``'s changes.
- V4 :meth:`VerifyReport.to_json` is one JSON-ready document, and :func:`report_from_json` inverts it.
- V5 :func:`capped` keeps a partition's first ``n`` findings and counts the rest in ``omitted`` by kind:
  :meth:`PartitionReport.divergent` and :meth:`PartitionReport.by_kind` stay what they were (a history record
  stays small however large the divergence).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal, cast

FindingKind = Literal["missing", "unexpected", "different", "duplicated", "out_of_order"]
"""What a divergent record is."""

FINDING_KINDS: Final[tuple[FindingKind, ...]] = ("missing", "unexpected", "different", "duplicated", "out_of_order")

DIVERGENCE_EXIT_CODE: Final = 11
"""``mirrorspark verify``'s exit status when a finding was made (V3)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One divergent record (V1): Kafka offsets on the source and target, ``None`` where there is none."""

    kind: FindingKind
    source_offset: int | None
    target_offset: int | None
    field: str | None = None
    related_offset: int | None = None

    def sort_key(self) -> tuple[int, int, str]:
        """Order by source offset (target-only findings by target offset), then kind."""
        a = self.source_offset if self.source_offset is not None else -1
        b = self.target_offset if self.target_offset is not None else -1
        return (a, b, self.kind)


@dataclass(frozen=True, slots=True)
class PartitionCounts:
    """What was compared in one partition (record and offset counts; ``digests``: range digests compared, the cost).

    ``verified`` records were equal, ``skipped`` ones dropped by the flow on purpose; ``gap_offsets`` and
    ``unverified_offsets`` are offsets (an upper bound of records).
    """

    verified: int = 0
    skipped: int = 0
    gap_offsets: int = 0
    unverified_offsets: int = 0
    digests: int = 0


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """One source partition of a flow (``topic`` the source topic), copied to ``target_topic``."""

    flow: str
    topic: str
    partition: int
    target_topic: str
    counts: PartitionCounts
    findings: tuple[Finding, ...] = ()
    omitted: tuple[tuple[FindingKind, int], ...] = ()
    """Findings not listed, per kind (:func:`capped`, V5)."""

    @property
    def divergent(self) -> int:
        """Findings, all kinds, the omitted ones too (V2, V5)."""
        return len(self.findings) + sum(n for _, n in self.omitted)

    def by_kind(self) -> dict[str, int]:
        """Return the findings per kind, every kind present (0 for none), the omitted ones too."""
        seen = Counter(f.kind for f in self.findings)
        for kind, n in self.omitted:
            seen[kind] += n
        return {k: seen[k] for k in FINDING_KINDS}


def capped(report: PartitionReport, n: int) -> PartitionReport:
    """Return ``report`` with its first ``n`` (≥ 0) findings listed and the others counted by kind (V5)."""
    if len(report.findings) <= n:
        return report
    rest = Counter(f.kind for f in report.findings[n:])
    for kind, k in report.omitted:
        rest[kind] += k
    omitted = tuple((k, rest[k]) for k in FINDING_KINDS if rest[k])
    return PartitionReport(
        report.flow, report.topic, report.partition, report.target_topic, report.counts, report.findings[:n], omitted
    )


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """One verify run (``at_ms`` epoch ms): its partitions' reports, sorted by flow, topic, partition."""

    at_ms: int
    partitions: tuple[PartitionReport, ...] = field(default=())

    @property
    def clean(self) -> bool:
        """No finding in any partition."""
        return all(p.divergent == 0 for p in self.partitions)

    def to_json(self) -> dict[str, Any]:
        """Return the report as one JSON-ready document (V4): totals, then flows → partitions."""
        flows: dict[str, list[dict[str, Any]]] = {}
        for p in self.partitions:
            row = {
                "topic": p.topic,
                "partition": p.partition,
                "target_topic": p.target_topic,
                **asdict(p.counts),
                **p.by_kind(),
                "findings": [asdict(f) for f in p.findings],
                "omitted": dict(p.omitted),
            }
            flows.setdefault(p.flow, []).append(row)
        return {
            "at_ms": self.at_ms,
            "clean": self.clean,
            "exit_status": exit_status(self),
            "verified": sum(p.counts.verified for p in self.partitions),
            "divergent": sum(p.divergent for p in self.partitions),
            "flows": [{"flow": name, "partitions": rows} for name, rows in flows.items()],
        }


def exit_status(report: VerifyReport) -> int:
    """Return 0 for a clean report, :data:`DIVERGENCE_EXIT_CODE` otherwise (V3)."""
    return 0 if report.clean else DIVERGENCE_EXIT_CODE


_COUNT_KEYS: Final = ("verified", "skipped", "gap_offsets", "unverified_offsets", "digests")


def report_from_json(doc: dict[str, Any]) -> VerifyReport:
    """Rebuild a report from :meth:`VerifyReport.to_json` (V4); raises KeyError or TypeError on another shape."""
    parts = []
    for flow in doc["flows"]:
        for row in flow["partitions"]:
            counts = PartitionCounts(**{k: int(row[k]) for k in _COUNT_KEYS})
            findings = tuple(
                Finding(
                    cast(FindingKind, f["kind"]),
                    f["source_offset"],
                    f["target_offset"],
                    f["field"],
                    f["related_offset"],
                )
                for f in row["findings"]
            )
            omitted = tuple((k, int(row.get("omitted", {}).get(k, 0))) for k in FINDING_KINDS)
            parts.append(
                PartitionReport(
                    flow["flow"],
                    row["topic"],
                    row["partition"],
                    row["target_topic"],
                    counts,
                    findings,
                    tuple((k, n) for k, n in omitted if n),
                )
            )
    return VerifyReport(int(doc["at_ms"]), tuple(parts))


__all__ = [
    "DIVERGENCE_EXIT_CODE",
    "FINDING_KINDS",
    "Finding",
    "FindingKind",
    "PartitionCounts",
    "PartitionReport",
    "VerifyReport",
    "capped",
    "exit_status",
    "report_from_json",
]
