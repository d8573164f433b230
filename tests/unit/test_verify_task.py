"""The verify task's streaming path (replication/task/verify_task.py VT1-VT4, verify_read.py VR1-VR3) on fake logs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_verify_compare import _segments, simulate

from fakes import FakeRegistry
from mirrorspark.core.gaps import GapEvent
from mirrorspark.core.provenance import HEADER_NAME, Provenance, cluster_id_bytes, encode
from mirrorspark.core.schemas.copier import ReplicatedTopics, SchemaCopier, SubjectNaming
from mirrorspark.core.schemas.registry import SchemaText
from mirrorspark.core.transforms import BoundChain, ConnectRecord
from mirrorspark.core.verify import Finding, PartitionCounts, Record, align, verify_partition
from mirrorspark.core.verify.units import partition_window, plan_partition
from mirrorspark.errors import ClusterError, DataPathError
from mirrorspark.mm2.filters import DefaultTopicFilter
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.mm2.policy import DefaultReplicationPolicy
from mirrorspark.replication.task.spec import ProvenanceSpec
from mirrorspark.replication.task.verify_read import Expected, LookupIds, read_range
from mirrorspark.replication.task.verify_spec import VerifyTaskSpec
from mirrorspark.replication.task.verify_task import failed, run_verify_task, source_record, target_record, verify_unit

pytestmark = pytest.mark.unit

_TYPE = {"none": 0, "create": 1, "log-append": 2}


@dataclass
class Msg:
    """A consumed record (confluent-kafka ``Message``), or an error event with ``err``."""

    t: str
    p: int
    o: int
    k: bytes | None = None
    v: bytes | None = None
    h: list[tuple[str, bytes | None]] | None = None
    ts: tuple[int, int] = (1, 0)
    err: KafkaError | None = None

    def topic(self) -> str:
        return self.t

    def partition(self) -> int:
        return self.p

    def offset(self) -> int:
        return self.o

    def key(self) -> bytes | None:
        return self.k

    def value(self) -> bytes | None:
        return self.v

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self.h

    def timestamp(self) -> tuple[int, int]:
        return self.ts

    def error(self) -> KafkaError | None:
        return self.err


def msg(topic: str, r: Record) -> Msg:
    """The message of a record at its offset."""
    ts = (_TYPE[r.timestamp_type], r.timestamp_ms)
    return Msg(topic, 0, r.offset, r.key, r.value, list(r.headers) or None, ts)


class LogConsumer:
    """An assign-only consumer of sparse logs (compacted, control records): ``{topic: {offset: Msg}}``.

    ``high`` is each log's end offset (past the last record: markers), ``low`` its start; ``consume`` returns at
    most ``batch`` records and, at the end of the log, moves the position to ``high`` as librdkafka does past
    transaction markers.
    """

    def __init__(self, logs: dict[str, dict[int, Msg]], high: dict[str, int], batch: int = 1000) -> None:
        self.logs, self.high, self.batch = logs, high, batch
        self.low = {t: min(log, default=high[t]) for t, log in logs.items()}
        self.at: tuple[str, int] | None = None
        self.assigns = 0

    def assign(self, partitions: list[TopicPartition], /) -> None:
        self.at = (partitions[0].topic, partitions[0].offset)
        self.assigns += 1

    def consume(self, num_messages: int = 1, timeout: float = -1) -> Sequence[Msg]:
        assert self.at is not None
        topic, pos = self.at
        log, out = self.logs[topic], []
        while pos < self.high[topic] and len(out) < min(num_messages, self.batch):
            if pos in log:
                out.append(log[pos])
            pos += 1
        if not out:
            pos = self.high[topic]
        self.at = (topic, pos)
        return out

    def position(self, partitions: list[TopicPartition], /) -> list[TopicPartition]:
        assert self.at is not None
        return [TopicPartition(self.at[0], 0, self.at[1])]

    def get_watermark_offsets(self, partition: TopicPartition, /, timeout: float = -1) -> tuple[int, int]:
        return self.low[partition.topic], self.high[partition.topic]

    def close(self) -> None:
        pass


class DropValues:
    """A transform chain that drops the records whose value is in ``values`` (a filter SMT)."""

    def __init__(self, values: set[bytes]) -> None:
        self.values = values

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        return None if record.value in self.values else record


def spec_for(segments: Sequence[CopiedSegment], gaps: Sequence[GapEvent], start: int, end: int, **kw: Any) -> Any:
    """A unit of topic ``src``-0 copied to ``tgt``-0."""
    return VerifyTaskSpec("a->b", "a", "b", "src", 0, "tgt", start, end, tuple(segments), tuple(gaps), {}, {}, **kw)


def expected_records(source: dict[int, Msg], expected: Expected) -> tuple[dict[int, Record], set[int]]:
    """The source side as verify_partition takes it: the copies, and the offsets the flow drops."""
    out, dropped = {}, set()
    for o, m in source.items():
        copy = expected.copy(m)
        if copy is None:
            dropped.add(o)
        else:
            out[o] = source_record(o, copy)
    return out, dropped


unit_case = st.tuples(
    st.integers(0, 90),  # records
    st.lists(
        st.sampled_from(("ok", "ok", "ok", "drop", "alter-value", "delete", "dup", "foreign", "swap")),
        min_size=1,
        max_size=30,
    ),
    st.one_of(st.none(), st.tuples(st.integers(0, 80), st.integers(1, 15))),  # a gap (deleted before the copy)
    st.integers(0, 4),  # records in flight
    st.sampled_from([1, 3, 16, 1024]),  # chunk size
    st.sets(st.integers(0, 89), max_size=6),  # source records compacted away after their copy
    st.integers(0, 3),  # target records cut off the end of the target log
    st.tuples(st.integers(0, 30), st.integers(0, 30)),  # the unit's window: [a, n - b)
    st.integers(1, 7),  # the fake consumer's batch
    st.sets(st.integers(0, 89), max_size=3),  # records the flow drops now though they were copied (a filter added)
    st.one_of(st.none(), st.integers(0, 4)),  # max_findings
)


@settings(max_examples=300, deadline=None)
@given(unit_case)
def test_the_streaming_path_equals_verify_partition(case: tuple) -> None:  # type: ignore[type-arg]
    """VT1, VT3: on holes, target holes, drops, duplicates, swaps, deletions, compaction and windows, one answer."""
    n, codes, gap, in_flight, size, compacted, cut, (a, b), batch, late, cap = case
    gap = (min(gap[0], n), min(gap[0] + gap[1], n)) if gap else None
    c = simulate(n, codes, gap, 5, in_flight)
    src_log = {u: msg("src", r) for u, r in c.source.items() if u not in compacted}
    tgt_log = {d: msg("tgt", replace(r, offset=d)) for d, r in c.target.items()}
    high_t = max(tgt_log, default=4) + 1 - cut
    tgt_log = {d: m for d, m in tgt_log.items() if d < high_t}
    drops = {cast(bytes, c.source[u].value) for u in c.dropped | (late & set(c.source))}
    transforms = cast(BoundChain, DropValues(drops)) if drops else None
    expected = Expected(target_topic="tgt", partition=0, transforms=transforms)
    start, end = min(a, n), max(min(a, n), n - b)
    segments = _segments(c.acked)
    spec = spec_for(segments, c.gaps, start, end, transforms=transforms, chunk_size=size, max_findings=cap)
    consumers = (
        LogConsumer({"src": src_log}, {"src": n}, batch),
        LogConsumer({"tgt": tgt_log}, {"tgt": high_t}, batch),
    )
    got = verify_unit(spec, source=consumers[0], target=consumers[1], expected=expected)

    alignment = align(segments, c.gaps, start=start, end=end)
    source, dropped = expected_records({u: m for u, m in src_log.items() if start <= u < end}, expected)
    mapped = alignment.mapped
    lo, hi = (mapped[0].downstream_start, mapped[-1].downstream_end) if mapped else (0, 0)
    target = {d: target_record(m) for d, m in tgt_log.items() if lo <= d < hi}
    counts, findings = verify_partition(alignment, source, target, dropped=dropped, chunk_size=size)
    listed = findings if cap is None else findings[:cap]
    rest = Counter(f.kind for f in findings[len(listed) :])
    assert (got.counts, list(got.findings), dict(got.omitted)) == (counts, listed, dict(rest))
    for kind in sorted({f.kind for f in findings}):
        event(kind)
    assert got.error is None
    assert got.records_read >= len([u for u in source if any(s.start <= u < s.end for s in mapped)])


def test_a_clean_unit_reads_each_side_once_and_counts_its_cost() -> None:
    """VT2: a clean copy is verified from digests alone, no re-read; records and bytes of both sides counted."""
    src = {u: Msg("src", 0, u, b"k", b"v" * 10, [("h", b"x")], (1, 1000 + u)) for u in range(50)}
    tgt = {
        100 + u: replace(m, t="tgt", o=100 + u, h=[("h", b"x"), (HEADER_NAME, b"\x01" * 38)]) for u, m in src.items()
    }
    s, t = LogConsumer({"src": src}, {"src": 50}), LogConsumer({"tgt": tgt}, {"tgt": 150})
    spec = spec_for([CopiedSegment(0, 100, 50)], [], 0, 50, chunk_size=16)
    got = verify_unit(spec, source=s, target=t, expected=Expected(target_topic="tgt", partition=0))
    assert got.findings == ()
    assert got.counts == PartitionCounts(verified=50, digests=4)
    assert (s.assigns, t.assigns) == (1, 1)
    assert got.records_read == 100
    assert got.bytes_read == 50 * (1 + 10 + 2) + 50 * (1 + 10 + 2 + len(HEADER_NAME) + 38)


def test_a_record_filtered_after_the_last_copy_is_skipped_not_unverified() -> None:
    """U4 + C5: a filtered record after the last copy leaves no segment; a flow that drops has it read: skipped.

    Source 1..8 copied to target 0..7; 9 filtered (the flow acknowledged it: nothing copied, no segment); 10 in
    flight. The plan of a flow that drops reads the edge, so 9 is skipped and only 10 is unverified.
    """
    values = {9: b"drop", 10: b"v10"}
    src = {u: Msg("src", 0, u, b"k", values.get(u, b"v%d" % u), None, (1, 1000 + u)) for u in range(1, 11)}
    tgt = {u - 1: replace(m, t="tgt", o=u - 1) for u, m in src.items() if u <= 8}
    segments = [CopiedSegment(1, 0, 8)]
    window = partition_window(segments, [], log_start=1, log_end=11)
    assert plan_partition(segments, [], window).unread == PartitionCounts(unverified_offsets=2)  # the old plan
    plan = plan_partition(segments, [], window, drops=True)
    assert (plan.units, plan.unread) == (((1, 11),), PartitionCounts())
    chain = cast(BoundChain, DropValues({b"drop"}))
    spec = spec_for(segments, [], 1, 11, transforms=chain)
    s, t = LogConsumer({"src": src}, {"src": 11}), LogConsumer({"tgt": tgt}, {"tgt": 8})
    got = verify_unit(spec, source=s, target=t, expected=Expected(target_topic="tgt", partition=0, transforms=chain))
    assert got.findings == ()
    assert (got.counts.verified, got.counts.skipped, got.counts.unverified_offsets) == (8, 1, 1)


def test_one_altered_record_is_re_read_and_named_with_its_field() -> None:
    """C4 via the streaming path: only the mismatching chunk is read again."""
    src = {u: Msg("src", 0, u, b"k", b"v%d" % u, None, (1, 1000 + u)) for u in range(40)}
    tgt = {u + 7: replace(m, t="tgt", o=u + 7) for u, m in src.items()}
    tgt[7 + 33] = replace(tgt[40], v=b"changed")
    s, t = LogConsumer({"src": src}, {"src": 40}), LogConsumer({"tgt": tgt}, {"tgt": 47})
    spec = spec_for([CopiedSegment(0, 7, 40)], [], 0, 40, chunk_size=8)
    got = verify_unit(spec, source=s, target=t, expected=Expected(target_topic="tgt", partition=0))
    assert got.findings == (Finding("different", 33, 40, field="value"),)
    assert got.counts.verified == 39
    assert (s.assigns, t.assigns) == (2, 2)


def test_a_read_ends_past_trailing_markers_and_clips_to_the_watermarks() -> None:
    """VR1: offsets past the log end are never asked for; the position passing ``hi`` ends the read."""
    log = {o: Msg("t", 0, o, None, b"%d" % o) for o in (3, 4, 6)}  # 5 and 7..9: markers
    c = LogConsumer({"t": log}, {"t": 10})
    got = [m.offset() for batch in read_range(c, "t", 0, 0, 50, flow="f") for m in batch]
    assert got == [3, 4, 6]
    assert [m.offset() for batch in read_range(c, "t", 0, 4, 6, flow="f") for m in batch] == [4]
    assert list(read_range(c, "t", 0, 12, 20, flow="f")) == []


def test_a_stalled_read_and_an_error_event_fail_without_settings() -> None:
    """VR1: a read that does not move raises ClusterError, an error event DataPathError."""
    c = LogConsumer({"t": {0: Msg("t", 0, 0, None, b"x")}}, {"t": 5})
    c.consume = lambda num_messages=1, timeout=-1: []  # type: ignore[method-assign]  # an open transaction
    c.position = lambda tps: [TopicPartition("t", 0, 0)]  # type: ignore[method-assign]
    ticks = iter(range(0, 1000, 30))
    with pytest.raises(ClusterError, match="stopped at offset 0 short of 5"):
        list(read_range(c, "t", 0, 0, 5, flow="f", clock=lambda: float(next(ticks))))
    bad = Msg("t", 0, 0, err=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "no READ"))
    c = LogConsumer({"t": {0: bad}}, {"t": 1})
    with pytest.raises(DataPathError, match="no READ") as e:
        list(read_range(c, "t", 0, 0, 1, flow="f"))
    assert e.value.kafka_code == "TOPIC_AUTHORIZATION_FAILED"


def test_provenance_drops_what_was_on_the_target_and_transforms_see_the_users_headers() -> None:
    """VR2: a record whose header names the target as origin is dropped; others keep their headers, in order."""
    spec = ProvenanceSpec("source-cluster", "target-cluster")
    ours = encode(Provenance(1, cluster_id_bytes("target-cluster"), b"aaaa", b"tttt", 0, 9))
    seen: list[tuple[Any, ...]] = []

    class Spy:
        def apply(self, record: ConnectRecord) -> ConnectRecord | None:
            seen.append(record.headers)
            return replace(record, value=b"T" + (record.value or b""))

    e = Expected(target_topic="tgt", partition=0, transforms=cast(BoundChain, Spy()), provenance=spec)
    assert e.copy(Msg("src", 0, 0, None, b"v", [("a", b"1"), (HEADER_NAME, ours)])) is None
    got = e.copy(Msg("src", 0, 1, b"k", b"v", [("a", b"1"), ("b", None)], (2, 77)))
    assert got == (b"k", b"Tv", [("a", b"1"), ("b", None)], 77)
    assert seen == [(("a", b"1"), ("b", None))]


def _wire(schema_id: int, body: bytes = b"payload") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def test_schema_ids_are_translated_by_lookup_only() -> None:
    """VR3: a known id from the cache, a held one by lookup, a missing one left as it is; nothing registered."""
    source, target = FakeRegistry("source"), FakeRegistry("target", first_id=500)
    held = SchemaText('{"type": "string"}')
    absent = SchemaText('{"type": "int"}')
    held_id, absent_id = source.register("t-value", held), source.register("t-value", absent)
    target_id = target.register("east.t-value", held)  # the flow names it so
    target.calls.clear()
    naming = SubjectNaming("east", DefaultReplicationPolicy(), ReplicatedTopics(DefaultTopicFilter()))
    ids = LookupIds(SchemaCopier(source, _lookup_only(target), naming), known=((99, 7),))
    assert ids.mapped("t", None, _wire(99)) == (None, _wire(7))
    assert ids.mapped("t", _wire(held_id, b"k"), _wire(held_id)) == (_wire(target_id, b"k"), _wire(target_id))
    assert ids.mapped("t", None, _wire(absent_id)) == (None, _wire(absent_id))
    assert ids.mapped("t", None, _wire(12345)) == (None, _wire(12345))  # unknown on the source
    assert ids.mapped("t", b"plain", b"\x00ab") == (b"plain", b"\x00ab")
    assert target.calls["register"] == 0 and target.calls["set_compatibility"] == 0
    assert ids.missing == 2


def _lookup_only(inner: FakeRegistry) -> Any:
    from mirrorspark.replication.task.verify_read import LookupOnlyRegistry

    return LookupOnlyRegistry(inner)


def test_a_failure_comes_back_as_data_without_secrets() -> None:
    """VT4: a client that cannot be built, or a Kafka error, is the result's error; no setting leaks."""
    secret = "hunter2-secret"
    spec = replace(
        spec_for([CopiedSegment(0, 0, 5)], [], 0, 5),
        source_conf={"bootstrap.servers": "127.0.0.1:1", "sasl.password": secret, "no.such.property": "x"},
    )
    got = run_verify_task(spec)
    assert got.error is not None and got.error.code == "CLUSTER_ERROR"
    assert secret not in repr(got) and secret not in repr(spec)
    leaked = failed(spec, DataPathError(f"broker said: bad password {secret}")).error
    assert leaked is not None and secret not in leaked.message
    assert got.counts == PartitionCounts()
    e = KafkaException(KafkaError(KafkaError._TRANSPORT, "broker down"))
    info = failed(spec, e).error
    assert info is not None and info.kafka_code == "_TRANSPORT" and "broker down" in info.message
    assert failed(spec, ValueError("boom")).error == failed(spec, ValueError("boom")).error
    assert "ValueError: boom" in cast(Any, failed(spec, ValueError("boom")).error).message


def test_a_unit_whose_target_is_gone_lists_its_first_findings_and_counts_the_rest() -> None:
    """VT2: ``max_findings`` bounds what a result holds; every finding is still counted."""
    src = {u: Msg("src", 0, u, None, b"v%d" % u) for u in range(3000)}
    s, t = LogConsumer({"src": src}, {"src": 3000}), LogConsumer({"tgt": {}}, {"tgt": 0})
    spec = spec_for([CopiedSegment(0, 0, 3000)], [], 0, 3000, max_findings=10)
    got = verify_unit(spec, source=s, target=t, expected=Expected(target_topic="tgt", partition=0))
    assert got.findings == tuple(Finding("missing", u, u) for u in range(10))
    assert got.omitted == (("missing", 2990),)
    assert got.counts.verified == 0 and got.counts.unverified_offsets == 0


def test_a_new_consumer_that_does_not_know_the_partition_yet_waits_for_its_metadata() -> None:
    """VR1: 'Unknown partition' from a consumer created a moment ago is waited out, up to METADATA_WAIT_S."""
    c = LogConsumer({"t": {3: Msg("t", 0, 3, None, b"x")}}, {"t": 4})
    real = c.get_watermark_offsets
    answers = iter([KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART])

    def new_consumer(tp: TopicPartition, timeout: float = -1) -> tuple[int, int]:
        code = next(answers, None)
        if code is not None:
            raise KafkaException(KafkaError(code))
        return real(tp, timeout)

    c.get_watermark_offsets = new_consumer  # type: ignore[method-assign]
    assert [m.offset() for batch in read_range(c, "t", 0, 0, 4, flow="f") for m in batch] == [3]
    c.get_watermark_offsets = lambda tp, timeout=-1: (_ for _ in ()).throw(  # type: ignore[method-assign]
        KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION))
    )
    ticks = iter(range(0, 1000, 5))
    with pytest.raises(KafkaException):
        list(read_range(c, "t", 0, 0, 4, flow="f", clock=lambda: float(next(ticks))))
