"""The pure core of ``mirrorspark verify``: record digests, alignment, comparison and the report (no I/O).

Layout, bottom up (each module's invariants numbered in its docstring): :mod:`.records` (R: the record model and
its digests), :mod:`.alignment` (A: source offsets mapped to target offsets by copied segments and gaps),
:mod:`.report` (V: findings, counts, JSON, exit status), :mod:`.compare` (C: range digests, narrowing,
classification).
"""

from mirrorspark.core.verify.alignment import Alignment, GapSpan, HoleSpan, MappedSpan, UnverifiedSpan, align
from mirrorspark.core.verify.compare import DEFAULT_CHUNK_SIZE, Chunk, chunk_digest, chunks, narrow, verify_partition
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
    "exit_status",
    "first_difference",
    "narrow",
    "range_digest",
    "record_digest",
    "report_from_json",
    "verify_partition",
]
