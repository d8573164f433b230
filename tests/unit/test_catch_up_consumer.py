"""Parallel catch-up of one partition (catch_up.py, #43): order, holes, errors, memory, seek, pause, switch-off."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorspark.kafka.protocols import MessageLike
from mirrorspark.replication.task import catch_up as catch_up_module
from mirrorspark.replication.task import job
from mirrorspark.replication.task.catch_up import CatchUpConsumer
from mirrorspark.replication.task.idle import IdleConsumer
from mirrorspark.replication.task.spec import PartitionKey
from polling import assert_eventually

pytestmark = pytest.mark.unit

HOT: PartitionKey = ("hot", 0)
COLD: PartitionKey = ("cold", 0)


class LogMessage:
    """A record or an error event of a :class:`FakeLog`."""

    def __init__(self, key: PartitionKey, offset: int, code: int | None = None) -> None:
        self._key, self._offset, self._code = key, offset, code

    def error(self) -> KafkaError | None:
        return None if self._code is None else KafkaError(self._code)

    def topic(self) -> str:
        return self._key[0]

    def partition(self) -> int:
        return self._key[1]

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return None

    def value(self) -> bytes | None:
        return b"v" * 100

    def headers(self) -> None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return (0, 0)


class FakeLog:
    """Partitions as offsets with holes (markers, aborted or compacted records) up to a high watermark.

    ``errors``: an error event a consumer meets at that offset instead of reading on (``_AUTO_OFFSET_RESET``).
    """

    def __init__(self) -> None:
        self.offsets: dict[PartitionKey, list[int]] = {}
        self.high: dict[PartitionKey, int] = {}
        self.errors: dict[tuple[PartitionKey, int], int] = {}

    def put(self, key: PartitionKey, offsets: Iterable[int], high: int | None = None) -> None:
        got = sorted(set(offsets))
        self.offsets[key] = got
        self.high[key] = high if high is not None else (got[-1] + 1 if got else 0)


class LogConsumer:
    """A consumer of a :class:`FakeLog`: position past the last record returned, or at the end past trailing holes."""

    def __init__(self, log: FakeLog, batch: int = 50) -> None:
        self.log, self.batch = log, batch
        self.positions: dict[PartitionKey, int] = {}
        self.paused: set[PartitionKey] = set()
        self.closed = False
        self.assigned = 0
        self.lock = threading.Lock()

    def assign(self, partitions: list[TopicPartition], /) -> None:
        with self.lock:
            self.positions = {(tp.topic, tp.partition): tp.offset for tp in partitions}
            self.paused.clear()
            self.assigned += 1

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[MessageLike]:
        out: list[MessageLike] = []
        with self.lock:
            for key, pos in self.positions.items():
                if key in self.paused:
                    continue
                for o in self.log.offsets.get(key, []):
                    if len(out) >= min(num_messages, self.batch):
                        break
                    code = self.log.errors.get((key, o))
                    if o >= pos and code is not None:
                        out.append(LogMessage(key, o, code))
                        break
                    if o >= pos:
                        out.append(LogMessage(key, o))
                        pos = o + 1
                if not any(pos <= o for o in self.log.offsets.get(key, [])):
                    pos = max(pos, self.log.high[key])  # past the trailing markers
                self.positions[key] = pos
        if not out and timeout > 0:
            time.sleep(min(timeout, 0.005))
        return out

    def poll(self, timeout: float = -1) -> MessageLike | None:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def position(self, partitions: list[TopicPartition], /) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.positions.get((tp.topic, tp.partition), -1001))
            for tp in partitions
        ]

    def pause(self, partitions: list[TopicPartition], /) -> None:
        self.paused |= {(tp.topic, tp.partition) for tp in partitions}

    def resume(self, partitions: list[TopicPartition], /) -> None:
        self.paused -= {(tp.topic, tp.partition) for tp in partitions}

    def seek(self, partition: TopicPartition, /) -> None:
        self.positions[(partition.topic, partition.partition)] = partition.offset

    def get_watermark_offsets(
        self, partition: TopicPartition, /, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        return 0, self.log.high[(partition.topic, partition.partition)]

    def close(self) -> None:
        self.closed = True


class Readers:
    """A reader factory that keeps what it built."""

    def __init__(self, log: FakeLog, batch: int = 50) -> None:
        self.log, self.batch = log, batch
        self.built: list[LogConsumer] = []

    def __call__(self, index: int) -> LogConsumer:
        c = LogConsumer(self.log, self.batch)
        self.built.append(c)
        return c


def wrapped(
    log: FakeLog, *, count: int = 3, backlog: int = 100, chunk: int | None = 200, batch: int = 50
) -> tuple[CatchUpConsumer, LogConsumer, Readers]:
    main = LogConsumer(log, batch)
    readers = Readers(log, batch)
    c = CatchUpConsumer(main, readers, count=count, backlog_records=backlog, chunk_records=chunk)
    c.assign([TopicPartition(*k, 0) for k in log.offsets])
    return c, main, readers


def drain(
    c: CatchUpConsumer, want: int, *, until: Callable[[list[MessageLike]], bool] | None = None, seconds: float = 10
) -> list[MessageLike]:
    """Consume until ``want`` records (or ``until`` says so), ``seconds`` at most."""
    out: list[MessageLike] = []
    deadline = time.monotonic() + seconds
    while len(out) < want and time.monotonic() < deadline:
        out += c.consume(97, 0.02)
        if until is not None and until(out):
            break
    return out


def offsets_of(msgs: Iterable[MessageLike], key: PartitionKey) -> list[int]:
    return [m.offset() for m in msgs if (m.topic(), m.partition()) == key and m.error() is None]  # type: ignore[misc]


def holed(n: int, every: int = 7) -> list[int]:
    """Offsets 0..n-1 less every ``every``-th and a run at each multiple of 200 (a chunk's end with the default)."""
    return [o for o in range(n) if o % every != 3 and not (195 <= o % 200 <= 199)]


def test_u1_u2_records_come_once_in_order_across_chunks_and_holes() -> None:
    log = FakeLog()
    log.put(HOT, holed(3000), high=3005)  # trailing markers past the last record
    log.put(COLD, range(500))
    c, _, readers = wrapped(log, count=4)
    got = drain(c, len(log.offsets[HOT]) + 500)
    try:
        assert offsets_of(got, HOT) == log.offsets[HOT]
        assert offsets_of(got, COLD) == list(range(500))
        assert c.rounds == 2 and 1 <= len(readers.built) <= 4  # both backlogs are large: a round each, one pool
        assert drain(c, 1, until=lambda _: not c._rounds) == []
        assert c.position([TopicPartition(*HOT)])[0].offset == 3005  # past the trailing holes (U2)
    finally:
        c.close()


def test_u5_position_is_the_next_offset_handed_out_in_a_round() -> None:
    log = FakeLog()
    log.put(HOT, holed(2000))
    c, _, _ = wrapped(log, count=2)
    try:
        last = -1
        while last < 100:
            m = c.poll(0.1)
            last = m.offset() if m is not None else last  # type: ignore[assignment]
        assert c.rounds == 1
        assert c.position([TopicPartition(*HOT)])[0].offset == last + 1
        while last != 194:  # the last record before a chunk's end hole
            m = c.poll(0.1)
            last = m.offset() if m is not None else last  # type: ignore[assignment]
        assert c.position([TopicPartition(*HOT)])[0].offset in (195, 200)  # past the hole once the chunk is done
        assert c.poll(1.0).offset() == 200  # type: ignore[union-attr]
        assert c.position([TopicPartition(*HOT)])[0].offset == 201
    finally:
        c.close()


def test_u5_a_seek_in_a_round_reads_on_from_the_sought_offset() -> None:
    log = FakeLog()
    log.put(HOT, range(4000))
    c, _, _ = wrapped(log)
    try:
        first = offsets_of(drain(c, 700), HOT)
        assert first == list(range(len(first)))
        c.seek(TopicPartition(*HOT, 250))  # as the exactly-once committer's rewind
        rest = offsets_of(drain(c, 4000 - 250), HOT)
        assert rest == list(range(250, 4000))
    finally:
        c.close()


def test_u5_a_seek_or_pause_ends_only_its_own_partitions_round() -> None:
    log = FakeLog()
    log.put(HOT, range(4000))
    log.put(COLD, range(4000))
    c, _, _ = wrapped(log, count=4)
    try:
        first = drain(c, 1500)
        assert c.rounds == 2
        c.seek(TopicPartition(*HOT, 100))
        assert COLD in c._rounds and HOT not in c._rounds
        c.pause([TopicPartition(*COLD)])
        assert not c._rounds
        rest = drain(c, 3900)
        assert offsets_of(rest, HOT) == list(range(100, 4000))
        cold = offsets_of(first + rest, COLD)
        assert cold == list(range(len(cold))) and c.position([TopicPartition(*COLD)])[0].offset == len(cold)
    finally:
        c.close()


def test_at_most_half_the_readers_rounds_run_at_once_on_the_largest_backlogs() -> None:
    log = FakeLog()
    sizes = {("t", 0): 3000, ("t", 1): 9000, ("t", 2): 6000}
    for key, n in sizes.items():
        log.put(key, range(n))
    c, _, _ = wrapped(log, count=5)
    try:
        first = drain(c, 1)
        assert set(c._rounds) == {("t", 1), ("t", 2)}  # 5 readers: 2 rounds; ("t", 0) stays with the main consumer
        got = first + drain(c, sum(sizes.values()) - len(first))
        for key, n in sizes.items():
            assert offsets_of(got, key) == list(range(n))
    finally:
        c.close()


def test_u5_a_paused_partition_hands_out_nothing_more() -> None:
    log = FakeLog()
    log.put(HOT, range(4000))
    log.put(COLD, range(60))  # below the backlog: no round of its own
    c, _, _ = wrapped(log)
    try:
        got = offsets_of(drain(c, 300), HOT)
        assert got == list(range(len(got)))
        c.pause([TopicPartition(*HOT)])
        later = drain(c, 1000, seconds=0.5)
        assert offsets_of(later, HOT) == []
        assert c.rounds == 1  # no new round for a paused partition
    finally:
        c.close()


def test_u3_a_readers_error_is_handed_out_in_its_place_and_the_main_consumer_reads_on() -> None:
    log = FakeLog()
    log.put(HOT, range(3000))
    log.errors[(HOT, 1234)] = KafkaError._AUTO_OFFSET_RESET
    c, main, _ = wrapped(log)
    try:
        got = drain(c, 3000, until=lambda g: any(m.error() is not None for m in g))
        i = next(i for i, m in enumerate(got) if m.error() is not None)
        assert offsets_of(got[:i], HOT) == list(range(1234))
        assert got[i].error().code() == KafkaError._AUTO_OFFSET_RESET  # type: ignore[union-attr]
        assert offsets_of(got[i + 1 :], HOT) == []
        assert HOT not in main.paused and main.positions[HOT] == 1234  # the main consumer meets it next
        assert c.position([TopicPartition(*HOT)])[0].offset == 1234
    finally:
        c.close()


def test_u3_a_failing_reader_ends_the_round_where_it_was_and_catch_up_is_off() -> None:
    log = FakeLog()
    log.put(HOT, range(3000))
    main = LogConsumer(log)

    def broken(index: int) -> LogConsumer:
        raise RuntimeError("no reader")

    c = CatchUpConsumer(main, broken, count=2, backlog_records=100, chunk_records=200)
    c.assign([TopicPartition(*HOT, 0)])
    try:
        assert offsets_of(drain(c, 3000), HOT) == list(range(3000))
        assert c.rounds == 1
    finally:
        c.close()


def test_u4_at_most_two_chunks_per_reader_are_held_across_the_rounds() -> None:
    log = FakeLog()
    log.put(HOT, range(20_000))
    log.put(COLD, range(20_000))
    c, _, _ = wrapped(log, count=4, chunk=500)
    try:
        first = drain(c, 1)
        # the readers fetch what they may (on a loaded machine, not within a fixed time); nothing more is handed out
        assert_eventually(lambda: c._held == 8, timeout_s=20, interval_s=0.05)
        time.sleep(0.2)  # and then hold no more than that
        assert c.rounds == 2 and set(c._rounds) == {HOT, COLD}
        held = [len(rnd.chunks) for rnd in c._rounds.values()]
        assert sum(held) == c._held == 8 and min(held) >= 2  # the round holding fewest is cut next
        assert sum(len(ch.records) for rnd in c._rounds.values() for ch in rnd.chunks) <= 8 * 500
        rest = drain(c, 40_000 - len(first))
        for key in (HOT, COLD):
            assert offsets_of(first + rest, key) == list(range(20_000))
    finally:
        c.close()


def test_u1_a_reader_reads_on_into_its_rounds_next_chunk_without_a_restart() -> None:
    log = FakeLog()
    log.put(HOT, holed(4000))
    log.put(COLD, range(4000))
    c, _, readers = wrapped(log, count=2, chunk=200, batch=60)
    try:
        got = drain(c, len(log.offsets[HOT]) + 4000)
        assert offsets_of(got, HOT) == log.offsets[HOT] and offsets_of(got, COLD) == list(range(4000))
        assert sum(r.assigned for r in readers.built) < 20  # of 40 chunks: each reader mostly on one partition
    finally:
        c.close()


def test_u6_a_small_backlog_stays_with_the_main_consumer_and_a_round_switches_itself_off() -> None:
    log = FakeLog()
    log.put(HOT, range(50))
    c, main, readers = wrapped(log, backlog=100)
    try:
        assert offsets_of(drain(c, 50), HOT) == list(range(50))
        assert c.rounds == 0 and readers.built == []
        log.put(HOT, range(1000))  # a backlog comes: a round; then the new records stay with the main consumer
        c._evaluate_at = 0
        assert offsets_of(drain(c, 950), HOT) == list(range(50, 1000))
        assert c.rounds == 1 and not c._rounds
        log.put(HOT, range(1050))
        assert offsets_of(drain(c, 50), HOT) == list(range(1000, 1050))
        assert c.rounds == 1 and HOT not in main.paused
    finally:
        c.close()


def test_u7_close_joins_the_readers_and_closes_every_consumer() -> None:
    log = FakeLog()
    log.put(HOT, range(5000))
    c, main, readers = wrapped(log)
    drain(c, 100)
    c.close()
    assert main.closed and readers.built and all(r.closed for r in readers.built)
    assert not any(t.is_alive() for t in c._threads)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    present=st.lists(st.booleans(), min_size=1, max_size=1500),
    chunk=st.integers(min_value=1, max_value=400),
    count=st.integers(min_value=2, max_value=5),
    batch=st.integers(min_value=1, max_value=60),
    trailing=st.integers(min_value=0, max_value=5),
)
def test_u1_u2_any_holes_any_chunks_any_readers_give_the_source_order(
    present: list[bool], chunk: int, count: int, batch: int, trailing: int
) -> None:
    log = FakeLog()
    offsets = [o for o, p in enumerate(present) if p]
    log.put(HOT, offsets, high=len(present) + trailing)
    c, _, _ = wrapped(log, count=count, backlog=1, chunk=chunk, batch=batch)
    try:
        assert offsets_of(drain(c, len(offsets)), HOT) == offsets
        assert (offsets[-1] + 1 if offsets else 0) <= c.position([TopicPartition(*HOT)])[0].offset
        assert drain(c, 1, until=lambda _: not c._rounds) == []  # the round's trailing holes are passed
        assert c.position([TopicPartition(*HOT)])[0].offset == len(present) + trailing
    finally:
        c.close()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    logs=st.lists(st.lists(st.booleans(), max_size=800), min_size=2, max_size=4),
    chunk=st.integers(min_value=1, max_value=300),
    count=st.integers(min_value=2, max_value=4),
    batch=st.integers(min_value=1, max_value=60),
    backlog=st.integers(min_value=1, max_value=400),
)
def test_u1_u2_several_rounds_share_the_readers_and_each_partition_keeps_its_order(
    logs: list[list[bool]], chunk: int, count: int, batch: int, backlog: int
) -> None:
    log = FakeLog()
    keys: list[PartitionKey] = [("t", i) for i in range(len(logs))]
    for key, present in zip(keys, logs, strict=True):
        log.put(key, [o for o, p in enumerate(present) if p], high=len(present))
    c, _, readers = wrapped(log, count=count, backlog=backlog, chunk=chunk, batch=batch)
    try:
        got = drain(c, sum(len(log.offsets[k]) for k in keys))
        for key in keys:
            assert offsets_of(got, key) == log.offsets[key]
        assert drain(c, 1, until=lambda _: not c._rounds) == []
        assert [tp.offset for tp in c.position([TopicPartition(*k) for k in keys])] == [len(p) for p in logs]
        assert len(readers.built) <= count and c._held == 0
    finally:
        c.close()


@pytest.mark.parametrize(("readers", "wrapped_type"), [(1, LogConsumer), (4, CatchUpConsumer)])
def test_u6_one_reader_means_no_wrapper(monkeypatch: pytest.MonkeyPatch, readers: int, wrapped_type: type) -> None:
    """``run_copy_task`` hands the runner its consumer as it is with one reader, the catch-up wrapper with more.

    Either way inside the idle-partitions wrapper (``idle.py``), which is what the runner sees.
    """
    seen: list[Any] = []

    class Runner:
        def __init__(self, spec: Any, *, consumer: Any, **_: Any) -> None:
            seen.append(consumer)

        def run(self) -> Any:
            raise RuntimeError("stop here")

    monkeypatch.setattr(job, "Consumer", lambda conf: LogConsumer(FakeLog()))
    monkeypatch.setattr(job, "_producer", lambda conf, **_: None)
    monkeypatch.setattr(job, "GrantClient", lambda *a, **k: None)
    monkeypatch.setattr(job, "CopyTaskRunner", Runner)
    spec = _Spec(catch_up_readers=readers)
    with pytest.raises(RuntimeError, match="stop here"):
        job.run_copy_task(spec)  # type: ignore[arg-type]
    assert type(seen[0]) is IdleConsumer
    assert type(seen[0]._inner) is wrapped_type


class _Spec:
    """What ``run_copy_task`` reads of a spec before it runs the task."""

    def __init__(self, catch_up_readers: int) -> None:
        self.catch_up_readers = catch_up_readers
        self.catch_up_backlog_records = 100
        self.producer_conf: dict[str, Any] = {}
        self.commit_conf: dict[str, Any] = {}
        self.consumer_conf: dict[str, Any] = {"client.id": "a->b|replication|consumer"}
        self.syncs_conf = None
        self.schemas = None
        self.exactly_once = False
        self.transactional_id = None
        self.grant_address = ("h", 1, "t")
        self.flow, self.task_index, self.generation = "a->b", 0, 1
        self.offsets_consumer_conf = self.offsets_admin_conf = self.source_admin_conf = None


def test_the_readers_client_ids_say_who_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[dict[str, Any]] = []
    monkeypatch.setattr(job, "Consumer", lambda conf: built.append(conf))
    job.catch_up_reader(_Spec(4))(2)  # type: ignore[arg-type]
    assert built[0]["client.id"] == "a->b|replication|consumer|catch-up-2"
    assert built[0]["enable.auto.commit"] is False


def test_chunks_are_sized_by_bytes_within_their_bounds() -> None:
    assert catch_up_module.CHUNK_RECORDS_MIN <= catch_up_module.FIRST_CHUNK_RECORDS <= catch_up_module.CHUNK_RECORDS_MAX


def test_u5_a_partition_paused_in_a_round_resumes_where_it_stopped_once_in_order() -> None:
    log = FakeLog()
    log.put(HOT, range(4000))
    c, main, _ = wrapped(log)
    try:
        first = offsets_of(drain(c, 700), HOT)
        assert c.rounds == 1
        c.pause([TopicPartition(*HOT)])  # as idle.py pauses a partition (a stalled round's)
        assert offsets_of(drain(c, 1, seconds=0.3), HOT) == []
        c.resume([TopicPartition(*HOT)])  # and wakes it: the main consumer was behind the round
        assert HOT not in main.paused
        rest = offsets_of(drain(c, 4000 - len(first)), HOT)
        assert first + rest == list(range(4000))
    finally:
        c.close()
