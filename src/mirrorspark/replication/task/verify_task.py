"""One verify task on an executor: read a unit on both clusters, compare it by digests, classify what differs.

A unit (:class:`~mirrorspark.replication.task.verify_spec.VerifyTaskSpec`) is source offsets ``[start, end)`` of
one partition; :func:`~mirrorspark.core.verify.align` maps them to the target. The task reads the source range
once, then the target range its mapped spans cover (from the first mapped target offset to the last mapped one's
end: the target holes between spans included, nothing past the last segment), keeping 16 bytes per mapped
position and side, never the records; compares the chunks' range digests; and re-reads only the positions
:func:`~mirrorspark.core.verify.narrow` finds in mismatching chunks, to classify them. Invariants (named by
``tests/unit/test_verify_task.py``):

- VT1 :func:`verify_unit` returns exactly what :func:`~mirrorspark.core.verify.verify_partition` returns on the
  records read (source ones as :class:`~mirrorspark.replication.task.verify_read.Expected` copies them, the
  offsets it drops as ``dropped``, target ones in the range above): the same counts and the same findings
  (with ``max_findings``, the first ones of them, the others counted by kind in ``omitted``).
- VT2 memory is 33 bytes per mapped offset (a 16-byte digest per side, a state byte), plus the findings (with
  ``max_findings``, at most about twice that many while collecting), the target-hole records' digests and one
  chunk's records while it is classified: a unit of a million 1 KiB records holds ~33 MB, not 2 GB.
- VT3 a record unreadable on the source (below the log start, compacted away, past the log end) counts as
  unverified (C4); on the target it is missing. Gap spans are never read; with no transform, provenance header
  or id translation, unverified spans are not read either (nothing there can be dropped).
- VT4 :func:`run_verify_task` never raises: a Kafka or registry failure comes back as the result's ``error``
  (its :class:`~mirrorspark.errors.ErrorInfo`), with no client setting in it. Reading writes nothing anywhere
  (consumers never commit; the target registry is only looked up).

Limits: a source record without a timestamp (message format v0) is copied stamped with the produce time, so its
copy never matches; a transform that is not a function of its record (a clock, a counter) makes every record
differ.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, cast

from confluent_kafka import Consumer, KafkaError, KafkaException

from mirrorspark.config.keys.masking import MASK, is_secret
from mirrorspark.core.verify.alignment import Alignment, HoleSpan, MappedSpan, UnverifiedSpan, align
from mirrorspark.core.verify.compare import DigestIndex, chunks, classify, classify_target_digest, narrow
from mirrorspark.core.verify.records import (
    ABSENT,
    DIGEST_SIZE,
    Header,
    Record,
    TimestampType,
    combine_digests,
    fields_digest,
)
from mirrorspark.core.verify.report import FINDING_KINDS, Finding, FindingKind, PartitionCounts
from mirrorspark.errors import ClusterError, DataPathError, ErrorInfo, MirrorsparkError
from mirrorspark.kafka.factory import with_logger
from mirrorspark.kafka.protocols import MessageLike, RangeConsumerLike
from mirrorspark.replication.task.verify_read import Expected, LookupIds, read_range, reader_conf
from mirrorspark.replication.task.verify_spec import VerifyTaskResult, VerifyTaskSpec

_TYPES: Final[dict[int, TimestampType]] = {0: "none", 1: "create", 2: "log-append"}
_KEPT, _DROPPED = 1, 2  # a mapped position's source state; 0: no record read
_D = DIGEST_SIZE
_SCAN_FINDS: Final = 32
"""Up to this many digests looked up, each is searched for (``bytes.find``); more, one pass over all positions."""


def source_record(offset: int, copy: tuple[bytes | None, bytes | None, Sequence[Header], int]) -> Record:
    """Return the :class:`Record` of a source record's copy (:meth:`Expected.copy`): ``CreateTime``, as produced."""
    key, value, headers, ts = copy
    return Record(offset, key, value, tuple(headers), "create", ts)


def target_record(m: MessageLike) -> Record:
    """Return the :class:`Record` of a consumed target record."""
    ts_type, ts = m.timestamp()
    headers = cast(list[Header], m.headers() or [])
    return Record(cast(int, m.offset()), m.key(), m.value(), tuple(headers), _TYPES[ts_type], ts if ts_type else -1)


@dataclass(slots=True)
class _Cost:
    records: int = 0
    bytes: int = 0

    def add(self, msgs: Sequence[MessageLike]) -> None:
        self.records += len(msgs)
        for m in msgs:
            k, v, h = m.key(), m.value(), m.headers()
            self.bytes += (len(k) if k else 0) + (len(v) if v else 0)
            if h:
                self.bytes += _header_bytes(cast(list[Header], h))


class _Findings:
    """The findings of a unit, at most ``cap`` kept (the first by sort key), every one counted by kind (VT2)."""

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        self.kept: list[Finding] = []
        self.counts: Counter[FindingKind] = Counter()

    def append(self, f: Finding) -> None:
        self.counts[f.kind] += 1
        self.kept.append(f)
        if self.cap is not None and len(self.kept) > 2 * self.cap + 1024:
            self._trim(self.cap)

    def _trim(self, n: int) -> None:
        self.kept.sort(key=Finding.sort_key)
        del self.kept[n:]

    def result(self) -> tuple[tuple[Finding, ...], tuple[tuple[FindingKind, int], ...]]:
        """Return the findings listed, sorted, and those left out per kind."""
        self._trim(len(self.kept) if self.cap is None else self.cap)
        rest = self.counts - Counter(f.kind for f in self.kept)
        return tuple(self.kept), tuple((k, rest[k]) for k in FINDING_KINDS if rest[k])


@dataclass(slots=True)
class _Unit:
    """A unit's mapped positions: position ``p`` is source offset ``span.start + i`` of the ``k``-th mapped span."""

    alignment: Alignment
    mapped: tuple[MappedSpan, ...]
    base: list[int]  # first position of each mapped span
    src: bytearray  # 16 bytes per position: the copy's digest, ABSENT when dropped or unread
    state: bytearray  # per position: 0 unread, _KEPT, _DROPPED
    tgt: bytearray  # 16 bytes per position: the target record's digest, ABSENT when none
    findings: _Findings
    holes: list[tuple[int, bytes]] = field(default_factory=list)  # target-hole records: (offset, digest)
    skipped: int = 0
    unverified: int = 0
    verified: int = 0
    digests: int = 0

    @classmethod
    def of(cls, alignment: Alignment, max_findings: int | None = None) -> _Unit:
        mapped = alignment.mapped
        base, n = [], 0
        for s in mapped:
            base.append(n)
            n += s.count
        src, tgt = bytearray(ABSENT) * n, bytearray(ABSENT) * n
        return cls(alignment, mapped, base, src, bytearray(n), tgt, _Findings(max_findings))

    def span_at(self, p: int) -> int:
        """Return the index of the mapped span holding position ``p``."""
        return bisect.bisect_right(self.base, p) - 1


def verify_unit(
    spec: VerifyTaskSpec, *, source: RangeConsumerLike, target: RangeConsumerLike, expected: Expected
) -> VerifyTaskResult:
    """Verify one unit with these consumers (VT1-VT3); raises ClusterError or DataPathError as the reads do."""
    alignment = align(spec.segments, spec.gaps, start=spec.start, end=spec.end)
    unit = _Unit.of(alignment, spec.max_findings)
    cost = _Cost()
    _read_source(spec, unit, source, expected, cost)
    _read_target(spec, unit, target, cost)
    bad = _compare(unit, spec.chunk_size)
    index = _index(unit, bad)
    _classify(spec, unit, bad, index, source, target, expected, cost)
    for d, dg in unit.holes:
        unit.findings.append(classify_target_digest(d, dg, alignment, index))
    findings, omitted = unit.findings.result()
    counts = PartitionCounts(
        verified=unit.verified,
        skipped=unit.skipped,
        gap_offsets=alignment.gap_offsets,
        unverified_offsets=alignment.unverified_offsets + unit.unverified,
        digests=unit.digests,
    )
    return VerifyTaskResult(
        spec.flow,
        spec.source_topic,
        spec.partition,
        spec.target_topic,
        spec.unit,
        counts,
        findings,
        records_read=cost.records,
        bytes_read=cost.bytes,
        omitted=omitted,
    )


_MAPPED, _HOLE, _UNVERIFIED = 0, 1, 2


def _header_bytes(headers: Sequence[Header]) -> int:
    return sum(len(n) + len(v or b"") for n, v in headers)


def _read_source(
    spec: VerifyTaskSpec, unit: _Unit, consumer: RangeConsumerLike, expected: Expected, cost: _Cost
) -> None:
    """Digest every source record of the mapped spans, and judge those of holes and unverified spans (C5)."""
    bases = {id(s): b for s, b in zip(unit.mapped, unit.base, strict=True)}
    identity = expected.identity
    plan = [
        (s.start, s.end, _MAPPED, bases[id(s)])
        if isinstance(s, MappedSpan)
        else (s.start, s.end, _HOLE if isinstance(s, HoleSpan) else _UNVERIFIED, -1)
        for s in unit.alignment.spans
        if isinstance(s, MappedSpan | HoleSpan) or (isinstance(s, UnverifiedSpan) and not identity)
    ]
    if not plan:
        return
    src, state, findings, copy_of = unit.src, unit.state, unit.findings, expected.copy
    k, (lo, hi, kind, base) = 0, plan[0]
    for msgs in read_range(consumer, spec.source_topic, spec.partition, plan[0][0], plan[-1][1], flow=spec.flow):
        cost.records += len(msgs)
        for m in msgs:
            o: int = m.offset()  # type: ignore[assignment]  # a record's offset is set
            key, value, headers = m.key(), m.value(), cast(list[Header] | None, m.headers())
            cost.bytes += (len(key) if key else 0) + (len(value) if value else 0)
            if headers:
                cost.bytes += _header_bytes(headers)
            while o >= hi:
                k += 1
                if k == len(plan):
                    return
                lo, hi, kind, base = plan[k]
            if o < lo:
                continue  # a gap span's record (or an unverified one's when nothing can be dropped)
            if identity:  # Expected.copy's result without a transform, header or id to apply
                ts_type, ts = m.timestamp()
                dg: bytes | None = fields_digest(key, value, headers or (), "create", ts if ts_type else 0)
            else:
                copy = copy_of(m)
                dg = None if copy is None else fields_digest(copy[0], copy[1], copy[2], "create", copy[3])
            if kind == _MAPPED:
                p = base + o - lo
                if dg is None:
                    state[p] = _DROPPED
                else:
                    state[p] = _KEPT
                    src[p * _D : p * _D + _D] = dg
            elif dg is None:
                unit.skipped += 1
                if kind == _UNVERIFIED:
                    unit.unverified -= 1  # dropped: needs no copy, acknowledged or not
            elif kind == _HOLE:
                findings.append(Finding("missing", o, None))


def _target_spans(unit: _Unit) -> list[tuple[int, int, int]]:
    """Return the target range's pieces in order: ``(lo, hi, first position)``, ``-1`` for a target hole."""
    out = [(s.downstream_start, s.downstream_end, b) for s, b in zip(unit.mapped, unit.base, strict=True)]
    out += [(lo, hi, -1) for lo, hi in unit.alignment.target_holes]
    return sorted(out)


def _read_target(spec: VerifyTaskSpec, unit: _Unit, consumer: RangeConsumerLike, cost: _Cost) -> None:
    """Digest every target record of the mapped spans' range: mapped positions, and target holes' records (C6)."""
    pieces = _target_spans(unit)
    if not pieces:
        return
    tgt, holes = unit.tgt, unit.holes
    k, (lo, hi, b) = 0, pieces[0]
    for msgs in read_range(consumer, spec.target_topic, spec.partition, pieces[0][0], pieces[-1][1], flow=spec.flow):
        cost.records += len(msgs)
        for m in msgs:
            d: int = m.offset()  # type: ignore[assignment]  # a record's offset is set
            key, value, headers = m.key(), m.value(), cast(list[Header] | None, m.headers())
            cost.bytes += (len(key) if key else 0) + (len(value) if value else 0)
            if headers:
                cost.bytes += _header_bytes(headers)
            while d >= hi:
                k += 1
                lo, hi, b = pieces[k]  # pieces cover the range read without a break
            ts_type, ts = m.timestamp()
            dg = fields_digest(key, value, headers or (), _TYPES[ts_type], ts if ts_type else -1)
            if b < 0:
                holes.append((d, dg))
            else:
                p = b + d - lo
                tgt[p * _D : p * _D + _D] = dg


@dataclass(frozen=True, slots=True)
class _Bad:
    """A mismatching mapped position: source offset ``u``, target offset ``d``, position ``p``."""

    u: int
    d: int
    p: int


def _compare(unit: _Unit, size: int) -> list[list[_Bad]]:
    """Compare every chunk's range digests, count what matches (C3), return each mismatching chunk's positions."""
    out: list[list[_Bad]] = []
    src, tgt, state = unit.src, unit.tgt, unit.state
    after = 0  # chunks cover the mapped spans exactly and in order (C1): their positions follow each other
    for c in chunks(unit.alignment, size):
        p0, after = after, after + c.count
        lo, hi = p0 * _D, (p0 + c.count) * _D
        states = state[p0 : p0 + c.count]
        unit.digests += 1
        unit.unverified += states.count(0)
        s, t = bytes(src[lo:hi]), bytes(tgt[lo:hi])
        if combine_digests((s,)) == combine_digests((t,)):
            unit.verified += states.count(_KEPT)
            continue
        found, compared = narrow(_split(s), _split(t))
        unit.digests += compared
        wrong = set(found)
        unit.verified += sum(1 for i in range(c.count) if states[i] == _KEPT and i not in wrong)
        out.append([_Bad(c.start + i, c.downstream_start + i, p0 + i) for i in found])
    return out


def _split(run: bytes) -> list[bytes]:
    return [run[i : i + _D] for i in range(0, len(run), _D)]


def _digest(buf: bytearray, p: int) -> bytes:
    return bytes(buf[p * _D : p * _D + _D])


def _index(unit: _Unit, bad: list[list[_Bad]]) -> DigestIndex:
    """Index where the digests classification looks up sit: at most the first two offsets of each (C4, C6)."""
    want_target: set[bytes] = set()  # the bad positions' copies: are they elsewhere on the target?
    want_source: set[bytes] = {dg for _, dg in unit.holes}  # the target records: which source record's copies?
    for b in (b for run in bad for b in run):
        if unit.state[b.p] == _KEPT:
            want_target.add(_digest(unit.src, b.p))
        t = _digest(unit.tgt, b.p)
        if t != ABSENT:
            want_source.add(t)
    want_source.discard(ABSENT)
    src = {dg: [_source_offset(unit, p) for p in ps] for dg, ps in _positions(unit.src, want_source).items()}
    tgt = {dg: [_target_offset(unit, p) for p in ps] for dg, ps in _positions(unit.tgt, want_target).items()}
    for d, dg in unit.holes:
        if dg in want_target:
            tgt.setdefault(dg, []).append(d)
    return DigestIndex(src, tgt)


def _positions(buf: bytearray, wanted: set[bytes], limit: int = 2) -> dict[bytes, list[int]]:
    """Return the first ``limit`` positions of each wanted digest in ``buf`` (16-byte cells), in order."""
    out: dict[bytes, list[int]] = {}
    if not wanted:
        return out
    if len(wanted) <= _SCAN_FINDS:
        for dg in wanted:
            i = buf.find(dg)
            while i >= 0:
                if i % _D == 0:
                    out.setdefault(dg, []).append(i // _D)
                    if len(out[dg]) == limit:
                        break
                i = buf.find(dg, i + 1)
        return out
    view = bytes(buf)
    for p in range(len(view) // _D):
        dg = view[p * _D : p * _D + _D]
        if dg in wanted:
            held = out.setdefault(dg, [])
            if len(held) < limit:
                held.append(p)
    return out


def _source_offset(unit: _Unit, p: int) -> int:
    k = unit.span_at(p)
    return unit.mapped[k].start + p - unit.base[k]


def _target_offset(unit: _Unit, p: int) -> int:
    k = unit.span_at(p)
    return unit.mapped[k].downstream_start + p - unit.base[k]


def _classify(
    spec: VerifyTaskSpec,
    unit: _Unit,
    bad: list[list[_Bad]],
    index: DigestIndex,
    source: RangeConsumerLike,
    target: RangeConsumerLike,
    expected: Expected,
    cost: _Cost,
) -> None:
    """Re-read each mismatching chunk's differing positions on both sides and classify them (C4)."""
    for run in bad:
        wanted_u = [b.u for b in run if unit.state[b.p] == _KEPT]
        wanted_d = [b.d for b in run if _digest(unit.tgt, b.p) != ABSENT]
        got_s: dict[int, Record] = {}
        if wanted_u:
            for m in _reread(spec, source, spec.source_topic, wanted_u, cost):
                copy = expected.copy(m)
                if copy is not None:
                    got_s[cast(int, m.offset())] = source_record(cast(int, m.offset()), copy)
        got_t = {
            cast(int, m.offset()): target_record(m) for m in _reread(spec, target, spec.target_topic, wanted_d, cost)
        }
        for b in run:
            dropped = unit.state[b.p] == _DROPPED
            f = classify(b.u, b.d, got_s.get(b.u), got_t.get(b.d), dropped=dropped, index=index)
            if f is not None:
                unit.findings.append(f)


def _reread(
    spec: VerifyTaskSpec, consumer: RangeConsumerLike, topic: str, offsets: Sequence[int], cost: _Cost
) -> Iterator[MessageLike]:
    """Yield the records at ``offsets`` (sorted) of ``topic``'s partition, read again."""
    if not offsets:
        return
    wanted = set(offsets)
    for msgs in read_range(consumer, topic, spec.partition, offsets[0], offsets[-1] + 1, flow=spec.flow):
        cost.add(msgs)
        yield from (m for m in msgs if m.offset() in wanted)


def run_verify_task(spec: VerifyTaskSpec) -> VerifyTaskResult:
    """Verify one unit with real consumers (and registries, with ``spec.schemas``); never raises (VT4)."""
    ids: LookupIds | None = None
    consumers: list[Consumer] = []
    try:
        ids = LookupIds.for_task(spec.schemas) if spec.schemas is not None else None
        expected = Expected(
            target_topic=spec.target_topic,
            partition=spec.partition,
            transforms=spec.transforms,
            provenance=spec.provenance,
            ids=ids,
        )
        name = f"{spec.source_topic}-{spec.partition}-{spec.unit}"
        for conf in (spec.source_conf, spec.target_conf):
            c = reader_conf(conf, name)
            consumers.append(Consumer(with_logger(c, str(c["client.id"]))))
        source, target = (cast(RangeConsumerLike, c) for c in consumers)
        return verify_unit(spec, source=source, target=target, expected=expected)
    except Exception as e:
        return failed(spec, e)
    finally:
        _close(consumers)
        if ids is not None:
            ids.close()


def failed(spec: VerifyTaskSpec, e: BaseException) -> VerifyTaskResult:
    """Return a unit's result carrying ``e`` as its error (a Kafka error as ClusterError, anything else by type)."""
    where = f"{spec.source_topic}-{spec.partition}"
    info: ErrorInfo
    if isinstance(e, MirrorsparkError):
        info = e.info(flow=spec.flow, task=spec.unit, partition=e.partition or where)
    elif isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError):
        err: KafkaError = e.args[0]
        info = ClusterError(
            f"flow {spec.flow}: verifying {where} (unit {spec.unit}) failed: {err.str()}",
            kafka_code=err.name(),
            retriable=bool(err.retriable()),
        ).info(flow=spec.flow, task=spec.unit, partition=where)
    else:
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        info = DataPathError(
            f"flow {spec.flow}: verifying {where} (unit {spec.unit}) failed: {type(e).__name__}: {text}"
        ).info(flow=spec.flow, task=spec.unit, partition=where)
    info = replace(info, message=_scrubbed(info.message, spec))
    return VerifyTaskResult(
        spec.flow, spec.source_topic, spec.partition, spec.target_topic, spec.unit, PartitionCounts(), error=info
    )


def _scrubbed(text: str, spec: VerifyTaskSpec) -> str:
    """Return ``text`` with every secret value of both consumers' settings masked (librdkafka may quote one)."""
    for conf in (spec.source_conf, spec.target_conf):
        for k, v in conf.items():
            if is_secret(k) and isinstance(v, str) and v:
                text = text.replace(v, MASK)
    return text


def _close(consumers: Iterable[Consumer]) -> None:
    for c in consumers:
        try:
            c.close()
        except (KafkaException, RuntimeError):  # closing is best effort: the result is what counts
            continue


__all__ = ["failed", "run_verify_task", "source_record", "target_record", "verify_unit"]
