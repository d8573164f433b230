"""The one copy checker of the suite: a remote topic against its source partition, record by record.

Every test that says "the remote topic is an exact copy" compares with :func:`assert_copy` (or
reads :func:`copy_differences`), so that a failure always names, per partition, the first missing
source offset, the records out of order, the records seen twice and the records the source never
held, with the runs of source offsets in the order the target holds them (``[(2396, 2499), (0, 2499)]``:
a prefix copied, then everything again). Pure: records are dicts as ``helpers.consume_all`` returns
them (``partition``, ``offset``, ``key``, ``value``, ``headers``, ``timestamp_ms``); a record
without ``offset`` (a test's own list of what it sent) is numbered by its place in its partition.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Record = Mapping[str, Any]

#: What a copy keeps of a record (offsets may differ between a source and its remote topic).
FIELDS = ("key", "value", "headers", "timestamp_ms")

#: How many examples a description lists per kind.
SHOWN = 5


def identity(record: Record, fields: Sequence[str] = FIELDS) -> tuple[Any, ...]:
    """The hashable content of ``record`` that a copy must keep: ``fields`` in order, headers as a tuple of pairs."""
    out: list[Any] = []
    for f in fields:
        v = record.get(f)
        if f == "headers":
            v = tuple((str(h[0]), h[1]) for h in v or ())
        out.append(v)
    return tuple(out)


def numbered(records: Iterable[Record]) -> dict[int, list[tuple[int, Record]]]:
    """``{partition: [(offset, record), ...]}`` in the given order; a record without ``offset`` gets its place."""
    out: dict[int, list[tuple[int, Record]]] = {}
    for r in records:
        rows = out.setdefault(int(r.get("partition", 0)), [])
        rows.append((int(r["offset"]) if r.get("offset") is not None else len(rows), r))
    return out


@dataclass
class PartitionDiff:
    """How one target partition differs from its source partition (all offsets are Kafka offsets)."""

    partition: int
    source_offsets: list[int]
    #: ``(target offset, source offset or None: a record the source does not hold)`` in target order.
    origin: list[tuple[int, int | None]]
    missing: list[int] = field(default_factory=list)
    #: ``(target offset, source offset, the highest source offset already seen before it)``.
    out_of_order: list[tuple[int, int, int]] = field(default_factory=list)
    #: Source offsets held more than once, in target order of their second copy.
    twice: list[int] = field(default_factory=list)
    #: Target offsets of records the source partition does not hold.
    foreign: list[int] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        """Tell whether the target holds every source record once, in source order, and nothing else."""
        return not (self.missing or self.out_of_order or self.twice or self.foreign)

    def runs(self) -> list[tuple[int | None, int | None]]:
        """Runs of consecutive source offsets in target order (``None``: records the source does not hold)."""
        runs: list[list[int | None]] = []
        position = {o: i for i, o in enumerate(self.source_offsets)}
        for _, s in self.origin:
            last = runs[-1][1] if runs else None
            follows = s is not None and last is not None and position[s] == position[last] + 1
            if runs and (follows or (s is None and last is None)):
                runs[-1][1] = s
            else:
                runs.append([s, s])
        return [(a, b) for a, b in runs]

    def pairs(self, n: int = 30) -> list[tuple[int, int | None]]:
        """The first ``n`` (target offset, source offset) pairs."""
        return self.origin[:n]

    def describe(self) -> str:
        """One paragraph: counts, runs, first missing, out of order, twice, foreign (with the first examples)."""
        src = self.source_offsets
        span = f"offsets {src[0]}..{src[-1]}" if src else "empty"
        first_ooo = (
            "target offset {} holds source offset {} after source offset {}".format(*self.out_of_order[0])
            if self.out_of_order
            else "none"
        )
        return (
            f"partition {self.partition}: source {len(src)} records ({span}), target {len(self.origin)} records; "
            f"runs of source offsets in target order {self.runs()[:20]}; "
            f"missing {len(self.missing)} (first missing source offset: "
            f"{self.missing[0] if self.missing else 'none'}); "
            f"out of order {len(self.out_of_order)} (first: {first_ooo}); "
            f"seen twice {len(self.twice)} (source offsets {self.twice[:SHOWN]}); "
            f"not from the source {len(self.foreign)} (target offsets {self.foreign[:SHOWN]})"
        )


def compare_partition(
    partition: int, source: Sequence[tuple[int, Record]], target: Sequence[tuple[int, Record]], fields: Sequence[str]
) -> PartitionDiff:
    """Match each target record to a source record of the same content (its k-th copy to its k-th source record)."""
    where: dict[tuple[Any, ...], list[int]] = {}
    for offset, r in source:
        where.setdefault(identity(r, fields), []).append(offset)
    seen: Counter[tuple[Any, ...]] = Counter()
    diff = PartitionDiff(partition, [o for o, _ in source], [])
    position = {o: i for i, o in enumerate(diff.source_offsets)}
    copied: set[int] = set()
    highest: int | None = None
    for t_offset, r in target:
        key = identity(r, fields)
        candidates = where.get(key)
        if not candidates:
            diff.origin.append((t_offset, None))
            diff.foreign.append(t_offset)
            continue
        s_offset = candidates[seen[key] % len(candidates)]
        seen[key] += 1
        diff.origin.append((t_offset, s_offset))
        if s_offset in copied:
            diff.twice.append(s_offset)
            continue
        copied.add(s_offset)
        if highest is not None and position[s_offset] < position[highest]:
            diff.out_of_order.append((t_offset, s_offset, highest))
        else:
            highest = s_offset
    diff.missing = [o for o in diff.source_offsets if o not in copied]
    return diff


def compare_copy(
    source: Iterable[Record], target: Iterable[Record], *, fields: Sequence[str] = FIELDS
) -> dict[int, PartitionDiff]:
    """``{partition: PartitionDiff}`` for every partition of the source or the target, in partition order."""
    src, dst = numbered(source), numbered(target)
    return {p: compare_partition(p, src.get(p, []), dst.get(p, []), fields) for p in sorted(set(src) | set(dst))}


def copy_differences(
    source: Iterable[Record], target: Iterable[Record], *, fields: Sequence[str] = FIELDS, duplicates: bool = False
) -> str:
    """Describe every partition whose copy is not exact, one line each; ``""`` when the copy is exact.

    ``duplicates=True`` accepts records seen twice (at least once: a re-copy after a restart), but
    still requires every record, nothing foreign, and the first copies in source order.
    """
    lines = []
    for d in compare_copy(source, target, fields=fields).values():
        if d.missing or d.out_of_order or d.foreign or (d.twice and not duplicates):
            lines.append(d.describe())
    return "\n".join(lines)


def assert_copy(
    source: Iterable[Record],
    target: Iterable[Record],
    *,
    fields: Sequence[str] = FIELDS,
    duplicates: bool = False,
    what: str = "the copy",
) -> None:
    """Fail (``AssertionError`` naming each partition's differences) unless ``target`` exactly copies ``source``."""
    differences = copy_differences(source, target, fields=fields, duplicates=duplicates)
    assert not differences, f"{what} differs from its source:\n{differences}"
