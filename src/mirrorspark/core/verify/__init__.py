"""The pure core of ``mirrorspark verify``: record digests, alignment, comparison and the report (no I/O).

Layout, bottom up (each module's invariants numbered in its docstring): :mod:`.records` (R: the record model and
its digests), :mod:`.alignment` (A: source offsets mapped to target offsets by copied segments and gaps),
:mod:`.report` (V: findings, counts, JSON, exit status), :mod:`.compare` (C: range digests, narrowing,
classification).

What the Spark job and the CLI supply, per flow and source partition: the copied segments
(``CopiedRanges.segments`` or the progress records' ``PartitionReport.segments``), the partition's gap events, a
window ``[start, end)`` of source offsets (``--since``/``--last``, clipped to the log start and end), and
:class:`Record` s read from both clusters (``read_committed``), the source ones after the flow's transforms, with
the offsets those (or the provenance header, :func:`~mirrorspark.core.provenance.decide`) drop. :func:`align` plans
the ranges, executors compute :func:`chunk_digest` per :class:`Chunk` on each side, and mismatching chunks go
through :func:`narrow`, :func:`classify` and :func:`classify_target_hole`; :func:`verify_partition` does it all in
memory. The CLI builds a :class:`VerifyReport`, prints :meth:`VerifyReport.to_json` for ``--json`` and exits with
:func:`exit_status`.
"""

from mirrorspark.core.verify.alignment import Alignment, GapSpan, HoleSpan, MappedSpan, UnverifiedSpan, align
from mirrorspark.core.verify.compare import (
    DEFAULT_CHUNK_SIZE,
    Chunk,
    DigestIndex,
    chunk_digest,
    chunks,
    classify,
    classify_target_hole,
    index_records,
    narrow,
    verify_partition,
)
from mirrorspark.core.verify.records import Record, first_difference, range_digest, record_digest
from mirrorspark.core.verify.report import (
    DIVERGENCE_EXIT_CODE,
    Finding,
    PartitionCounts,
    PartitionReport,
    VerifyReport,
    exit_status,
    report_from_json,
)

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DIVERGENCE_EXIT_CODE",
    "Alignment",
    "Chunk",
    "DigestIndex",
    "Finding",
    "GapSpan",
    "HoleSpan",
    "MappedSpan",
    "PartitionCounts",
    "PartitionReport",
    "Record",
    "UnverifiedSpan",
    "VerifyReport",
    "align",
    "chunk_digest",
    "chunks",
    "classify",
    "classify_target_hole",
    "exit_status",
    "first_difference",
    "index_records",
    "narrow",
    "range_digest",
    "record_digest",
    "report_from_json",
    "verify_partition",
]
