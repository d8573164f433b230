"""What the driver hands a verify task and what it hands back: plain, picklable values (``mirrorspark verify``).

One verify task compares one *unit*: source offsets ``[start, end)`` of one source partition with the target
offsets its copied segments map them to (:mod:`mirrorspark.core.verify`). The driver cuts a partition's window
into units only at offsets inside a mapped span (so no target hole straddles two units) and merges the units'
results per partition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mirrorspark.config.keys import masked
from mirrorspark.core.gaps import GapEvent
from mirrorspark.core.transforms import BoundChain
from mirrorspark.core.verify.compare import DEFAULT_CHUNK_SIZE
from mirrorspark.core.verify.report import Finding, FindingKind, PartitionCounts
from mirrorspark.errors import ErrorInfo
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.replication.task.spec import ProvenanceSpec, SchemaIdsSpec


@dataclass(frozen=True, slots=True, repr=False)
class VerifyTaskSpec:
    """One unit of a verification: a source partition's offsets ``[start, end)`` and what maps them to the target.

    ``segments`` are the partition's copied segments overlapping the unit (whole, as kept), ``gaps`` its gap
    events; ``source_conf`` and ``target_conf`` are the consumers' librdkafka configurations (secrets
    included: pickled to the executor, never shown by :meth:`__repr__`). ``transforms``, ``provenance`` and
    ``schemas`` are the flow's, as its copy tasks get them: the source records are compared after them.
    ``unit`` numbers the units of one partition from 0. ``max_findings`` (``None``: all) caps the findings a
    result lists, the first ones by :meth:`~mirrorspark.core.verify.Finding.sort_key`, the rest counted by kind
    in :attr:`VerifyTaskResult.omitted` (a unit whose target is gone stays small).
    """

    flow: str
    source: str
    target: str
    source_topic: str
    partition: int
    target_topic: str
    start: int
    end: int
    segments: tuple[CopiedSegment, ...]
    gaps: tuple[GapEvent, ...]
    source_conf: Mapping[str, Any]
    target_conf: Mapping[str, Any]
    transforms: BoundChain | None = None
    provenance: ProvenanceSpec | None = None
    schemas: SchemaIdsSpec | None = None
    chunk_size: int = DEFAULT_CHUNK_SIZE
    unit: int = 0
    max_findings: int | None = None

    def __repr__(self) -> str:
        """Show the unit without any client secret."""
        return (
            f"VerifyTaskSpec(flow={self.flow!r}, source_topic={self.source_topic!r}, partition={self.partition}, "
            f"start={self.start}, end={self.end}, unit={self.unit}, source_conf={masked(self.source_conf)!r}, "
            f"target_conf={masked(self.target_conf)!r})"
        )


@dataclass(frozen=True, slots=True)
class VerifyTaskResult:
    """What one verify task found in its unit (``error`` set, counts empty, when it failed).

    ``records_read`` and ``bytes_read`` (key + value + headers) count both sides, the cost of the unit;
    ``omitted`` the findings not listed, per kind (``VerifyTaskSpec.max_findings``), as ``PartitionReport.omitted``.
    """

    flow: str
    source_topic: str
    partition: int
    target_topic: str
    unit: int
    counts: PartitionCounts
    findings: tuple[Finding, ...] = ()
    records_read: int = 0
    bytes_read: int = 0
    error: ErrorInfo | None = None
    omitted: tuple[tuple[FindingKind, int], ...] = ()


__all__ = ["VerifyTaskResult", "VerifyTaskSpec"]
