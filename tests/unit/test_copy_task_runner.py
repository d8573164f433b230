"""The copy task's commit logic on the in-memory fakes: what it commits, when, and what it never commits.

A :class:`CopyTaskRunner` gets its consumer, producers and grant link injected (``tests/fakes.py``):
records wait in flight until the test acknowledges them, deliveries fail where the test says,
transactions commit or abort, the driver's grant comes and goes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from fakes import FakeCluster, FakeErrorMessage, FakeGrants, FakeTaskConsumer, FakeTaskProducer
from mirrorspark.core.progress_records import decode_report, record_kind
from mirrorspark.errors import DataPathError, RecordTooLargeError, error_from_info
from mirrorspark.mm2.connect_offsets import decode_source_offset, decode_topic_id_marker, default_partition
from mirrorspark.mm2.records import OffsetSync
from mirrorspark.replication.task import job
from mirrorspark.replication.task import runner as runner_module
from mirrorspark.replication.task.grant_client import GrantState
from mirrorspark.replication.task.partition import FULL_SCAN_EVERY
from mirrorspark.replication.task.runner import FILL_WAIT_S, HOLD_S, IN_FLIGHT_RECORDS, CopyTaskRunner
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionAssignment, TaskOutcome

pytestmark = pytest.mark.unit

OFFSETS = "mm2-offsets.A.internal"
SYNCS = "mm2-offset-syncs.B.internal"
PROGRESS = "mm2-task-progress.A.internal"


class Task:
    """One copy task of flow ``A->B`` over topic ``t`` (``partitions`` partitions), on fakes."""

    def __init__(
        self,
        *,
        partitions: int = 1,
        records: int = 10,
        eos: bool = False,
        stop_at: dict[tuple[str, int], int] | None = None,
        boundary: str = "interval",
        topic_id: str | None = None,
        restarted: bool = False,
        flush_records: int = 5000,
        connector_name: str = "MirrorSourceConnector",
        after_other_holder: bool = False,
    ) -> None:
        self.a, self.b = FakeCluster("A"), FakeCluster("B")
        self.a.create_topic("t", partitions)
        self.b.create_topic("A.t", partitions)
        self.b.create_topic(OFFSETS, 25)
        self.b.create_topic(PROGRESS, 1)
        self.a.create_topic(SYNCS, 1)
        for p in range(partitions):
            for i in range(records):
                self.a.append("t", f"k{i}".encode(), f"v{p}-{i}".encode(), partition=p, ts=1_000 + i)
        self.spec = CopyTaskSpec(
            flow="A->B",
            source="A",
            target="B",
            task_index=0,
            generation=1,
            consumer_conf={},
            producer_conf={},
            commit_conf={},
            syncs_conf={},
            offsets_topic=OFFSETS,
            offsets_partitions=25,
            syncs_topic=SYNCS,
            progress_topic=PROGRESS,
            partitions=tuple(
                PartitionAssignment("t", p, "A.t", 0, topic_id=topic_id, restarted=restarted) for p in range(partitions)
            ),
            offset_lag_max=100,
            flush_interval_s=1.0,
            grant_address=("127.0.0.1", 0, "token"),
            stall_timeout_s=0.5,
            flush_records=flush_records,
            connector_name=connector_name,
            transactional_id="A-mm2-MirrorSourceConnector-0" if eos else None,
            boundary=boundary,
            stop_at=stop_at,
            after_other_holder=after_other_holder,
        )
        self.consumer = FakeTaskConsumer(self.a)
        self.data = FakeTaskProducer(self.b, transactional=eos)
        self.commits = FakeTaskProducer(self.b)
        self.syncs = FakeTaskProducer(self.a)
        self.grants = FakeGrants()
        self.now = 0.0
        self.runner = CopyTaskRunner(
            self.spec,
            consumer=self.consumer,
            data=self.data,
            commit_producer=self.commits,
            syncs_producer=self.syncs,
            grants=self.grants,
            clock=lambda: self.now,
        )

    def committed(self) -> dict[int, int]:
        """``{partition: last copied offset}`` as ``mm2-offsets`` holds it (the newest record per key)."""
        out: dict[int, int] = {}
        for part in self.b.topics[OFFSETS].partitions:
            for r in part:
                so = decode_source_offset(r.key, r.value)  # type: ignore[arg-type]
                if so is None:
                    assert decode_topic_id_marker(r.key, r.value) is not None  # type: ignore[arg-type]
                    continue
                assert so.offset is not None
                out[so.partition] = so.offset
        return out

    def reports(self) -> list[Any]:
        return [decode_report(r.key, r.value) for r in self.b.records(PROGRESS) if record_kind(r.key) == "report"]


def step(task: Task, hook: Callable[[Task, int], None], turns: int = 50) -> TaskOutcome:
    """Run the task's loop with ``hook(task, turn)`` called at each grants check; return how it ended."""
    turn = [0]
    check = task.grants.check

    def checked() -> Any:
        hook(task, turn[0])
        turn[0] += 1
        if turn[0] > turns:
            raise AssertionError("the task did not end")
        return check()

    task.grants.check = checked  # type: ignore[method-assign]
    return task.runner.run().outcome


def stop_after(n: int) -> Callable[[Task, int], None]:
    def hook(task: Task, turn: int) -> None:
        if turn >= n:
            task.grants.state = GrantState.STOP

    return hook


def test_every_record_is_copied_unchanged_and_committed_on_stop() -> None:
    t = Task(partitions=2, records=5)
    t.a.topics["t"].partitions[0][2].headers = [("h", b"1"), ("h", None)]
    assert step(t, stop_after(3)) == TaskOutcome.STOPPED
    for p in range(2):
        src, dst = t.a.records("t", p), t.b.records("A.t", p)
        assert [(r.key, r.value, r.timestamp_ms, r.headers) for r in dst] == [
            (r.key, r.value, r.timestamp_ms, r.headers) for r in src
        ]
    assert t.committed() == {0: 4, 1: 4}  # Connect's layout: the last copied offset
    last = {r.partition: r for r in t.reports()}
    assert {p: r.next_offset for p, r in last.items()} == {0: 5, 1: 5}
    assert sum(r.records for r in t.reports()) == 10
    syncs = [OffsetSync.decode(r.key, r.value) for r in t.a.records(SYNCS)]
    assert next(s for s in syncs if s.partition == 0) == OffsetSync("t", 0, 0, 0)  # a commit's order is the dirty set's
    assert t.consumer.closed and t.grants.closed


def test_reports_name_the_topic_incarnation_the_task_copied() -> None:
    """engine-audit F2: each progress report carries the source topic's id from the task's spec (KIP-516)."""
    t = Task(partitions=2, records=3, topic_id="Zm9vYmFyMTIzNDU2Nzg5MA")
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.reports() and {r.topic_id for r in t.reports()} == {"Zm9vYmFyMTIzNDU2Nzg5MA"}


def test_c3_only_the_acknowledged_prefix_is_committed() -> None:
    t = Task(records=10)
    t.data.ack_budget = 0

    def hook(task: Task, turn: int) -> None:
        if turn == 1:
            task.data.ack_budget = 6  # 6 of the 10 produced records acknowledged
            task.now = 5.0  # a commit is due
        if turn == 3:
            assert task.committed() == {0: 5}  # records 0..5, nothing past the unacknowledged 6
            task.data.ack_budget = None
            task.now = 10.0
        if turn == 5:
            # the partition stayed dirty: the rest is committed at the next commit, not 30 commits later
            assert task.committed() == {0: 9}
            task.grants.state = GrantState.STOP

    assert step(t, hook) == TaskOutcome.STOPPED
    assert [r.next_offset for r in t.reports()] == [6, 10]


def test_c3_unacknowledged_records_keep_their_partition_for_the_next_commit() -> None:
    """C3. A commit that finds every record of a partition still in flight keeps it dirty (no full-scan wait)."""
    t = Task(records=4)
    t.data.ack_budget = 0
    seen: list[dict[int, int]] = []

    def hook(task: Task, turn: int) -> None:
        if turn == 1:
            task.now = 5.0  # commit with nothing acknowledged
        if turn == 2:
            task.data.ack_budget = None
            task.now = 10.0
        if turn == 3:
            seen.append(task.committed())
            task.grants.state = GrantState.STOP

    step(t, hook)
    assert FULL_SCAN_EVERY > 2 and seen == [{0: 3}]


def test_the_first_commit_comes_as_soon_as_the_first_records_are_acknowledged() -> None:
    """A run killed within its first ``offset.flush.interval.ms`` has committed what it copied (issue #23, item 2).

    Committing only at the interval, a crash loop whose runs lived less than a second never
    committed, and each restart copied the whole backlog again.
    """
    t = Task(records=10)
    t.data.ack_budget = 0
    seen: list[dict[int, int]] = []

    def hook(task: Task, turn: int) -> None:  # the clock never moves
        seen.append(task.committed())
        if turn == 0:
            task.data.ack_budget = 4  # served at the next turn's check of the writes
        if turn == 2:
            task.data.ack_budget = None
        if turn == 3:
            task.grants.state = GrantState.STOP

    assert step(t, hook) == TaskOutcome.STOPPED
    assert seen == [{}, {}, {0: 3}, {0: 3}]  # no commit before an acknowledgement, one right after it
    assert t.committed() == {0: 9}


def test_a_backlog_commits_every_flush_records_acknowledged() -> None:
    """Copying a backlog, a task commits every ``flush_records`` acknowledged records, before the interval.

    The clock never moves: every commit comes from the volume rule (the first one from the first
    acknowledgements).
    """
    t = Task(records=60, flush_records=100)
    seen: list[int | None] = []

    def hook(task: Task, turn: int) -> None:
        seen.append(task.committed().get(0))
        if turn < 8:
            for i in range(60):  # 60 more records per turn of the loop
                task.a.append("t", b"k", f"n{turn}-{i}".encode(), partition=0, ts=2_000)
        else:
            task.grants.state = GrantState.STOP

    step(t, hook)
    # first commit at the first acknowledgement (60 records), then one per 100 or more acknowledged
    assert seen[:7] == [None, 59, 59, 179, 179, 299, 299]
    assert t.committed() == {0: 60 * 9 - 1}


def _backlog_turns(task: Task, turn: int, seen: list[int | None], *, stop: int, interval_at: int = -1) -> None:
    """A hook: note what is committed, add a backlog batch of 60 records (4 B values), move the clock at a turn."""
    seen.append(task.committed().get(0))
    if turn == interval_at:
        task.now += task.spec.flush_interval_s
    if turn < stop:
        for _ in range(60):
            task.a.append("t", b"k", b"v%03d" % (turn % 1000), partition=0, ts=2_000)
    else:
        task.grants.state = GrantState.STOP


def test_r1_exactly_once_transactions_are_sized_by_bytes_not_flush_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """R1. With ``transaction.boundary=interval`` a backlog's transaction ends at TRANSACTION_BYTES, never at
    ``flush_records`` (a kill aborts the open transaction: nothing of it is copied twice).

    The clock never moves; 5 B a record (1 B key, 4 B value), 60 a turn: 300 B a turn.
    """
    monkeypatch.setattr(runner_module, "TRANSACTION_BYTES", 600)
    t = Task(records=60, eos=True, flush_records=10, boundary="interval")
    for _ in range(60):
        t.a.append("t", b"k", b"v000", partition=0, ts=2_000)  # the first batch: 120 records
    seen: list[int | None] = []
    step(t, lambda task, turn: _backlog_turns(task, turn, seen, stop=8))
    # the first commit at the first acknowledgements (120 records), then one every 600 B (two turns), never
    # every 10 records
    assert seen[:7] == [None, 119, 119, 239, 239, 359, 359]
    assert t.committed() == {0: 120 + 60 * 8 - 1} and t.data.commits == 5  # 4 by bytes or first, 1 at the stop


def test_r1_exactly_once_transactions_commit_at_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """R1. Under TRANSACTION_BYTES, a backlog's transaction spanning full batches commits when the interval passed."""
    monkeypatch.setattr(runner_module, "BACKLOG_RECORDS", 50)  # a batch of 60 is a backlog's
    t = Task(records=60, eos=True, boundary="poll")
    seen: list[int | None] = []
    step(t, lambda task, turn: _backlog_turns(task, turn, seen, stop=8, interval_at=4))
    # the first commit at the first acknowledgements; then nothing until the interval passed at turn 4
    assert seen[:7] == [None, 59, 59, 59, 59, 299, 299]
    assert t.data.commits == 3 and t.committed() == {0: 60 * 9 - 1}


def test_r1_exactly_once_poll_boundary_commits_a_keeping_up_batch_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """R1. With ``transaction.boundary=poll``, a batch smaller than a backlog's is a transaction of its own (latency);
    full batches share one until the interval or TRANSACTION_BYTES."""
    monkeypatch.setattr(runner_module, "BACKLOG_RECORDS", 100)
    monkeypatch.setattr(runner_module, "TRANSACTION_BYTES", 900)
    t = Task(records=60, eos=True, boundary="poll")
    seen: list[int | None] = []
    step(t, lambda task, turn: _backlog_turns(task, turn, seen, stop=8))
    # 60-record batches (not a backlog's): every batch read commits, the clock standing still
    assert seen[:5] == [None, 59, 119, 179, 239]
    monkeypatch.setattr(runner_module, "BACKLOG_RECORDS", 50)
    t = Task(records=60, eos=True, boundary="poll")
    seen = []
    step(t, lambda task, turn: _backlog_turns(task, turn, seen, stop=8))
    # 60-record batches of a backlog: one transaction per 900 B (three batches) after the first
    assert seen[:8] == [None, 59, 59, 59, 239, 239, 239, 419]


def test_flush_records_zero_commits_by_time_after_the_first_commit() -> None:
    """``mirrorspark.offset.flush.records=0``: after the first commit, only the interval makes one due."""
    t = Task(records=60, flush_records=0)
    seen: list[int | None] = []

    def hook(task: Task, turn: int) -> None:
        seen.append(task.committed().get(0))
        for i in range(60):
            task.a.append("t", b"k", f"n{turn}-{i}".encode(), partition=0, ts=2_000)
        if turn == 4:
            task.now = 1.0  # the interval passed
        if turn == 6:
            task.grants.state = GrantState.STOP

    step(t, hook)
    assert seen == [None, 59, 59, 59, 59, 299, 299]  # the interval's commit at turn 4


def test_c3_a_failed_delivery_fails_the_task_and_commits_nothing_past_it() -> None:
    t = Task(records=10)
    t.data.fail_at = {4: KafkaError.TOPIC_AUTHORIZATION_FAILED}
    with pytest.raises(DataPathError, match=r"t-0@4 to A\.t failed.*WRITE on topic 'A\.t'") as e:
        step(t, stop_after(1))
    assert e.value.kafka_code == "TOPIC_AUTHORIZATION_FAILED"
    info = e.value.info(flow="A->B", task=0)
    assert (info.partition, info.fatal, info.code) == ("t-0", True, "DATA_PATH_ERROR")
    assert t.committed() == {}


def test_a_record_too_large_is_fatal_and_survives_the_trip_as_data() -> None:
    t = Task(records=3)
    t.data.fail_at = {1: KafkaError.MSG_SIZE_TOO_LARGE}
    with pytest.raises(RecordTooLargeError) as e:
        step(t, stop_after(1))
    back = error_from_info(e.value.info(flow="A->B", task=0))
    assert isinstance(back, RecordTooLargeError) and back.fatal and back.partition == "t-0"


def test_c1_without_a_valid_grant_nothing_is_committed() -> None:
    t = Task(records=5)
    t.grants.granted = False  # the driver lost the flow's lease, or froze

    def hook(task: Task, turn: int) -> None:
        task.now = 5.0 * turn

    assert step(t, hook) == TaskOutcome.ORPHANED
    assert t.committed() == {} and t.b.records(PROGRESS) == []


@pytest.mark.parametrize("eos", [False, True], ids=["at-least-once", "exactly-once"])
@pytest.mark.parametrize("records", [0, 5], ids=["nothing-to-copy", "all-copied"])
def test_c2_an_idle_task_ends_when_its_grant_lapses(eos: bool, records: int) -> None:
    """C2. engine-audit F8: a zombie with nothing to copy (driver frozen, or lease lost) gives its slot up.

    Before, a commit with nothing to write never looked at the grant: at least once, the task kept
    polling forever; exactly once, until the next full scan (:data:`FULL_SCAN_EVERY` commits).
    """
    t = Task(records=records, eos=eos)

    def hook(task: Task, turn: int) -> None:
        task.now = 2.0 * turn  # a commit is due at every turn
        if turn == 3:
            task.grants.granted = False  # the last grant expired, none comes

    # not only at the next full scan; at least once, after holding HOLD_S for the lease to come back (2 s a check)
    turns = FULL_SCAN_EVERY - 10 + (0 if eos else int(HOLD_S / 2) + 2)
    assert step(t, hook, turns=turns) == TaskOutcome.ORPHANED
    assert t.committed() == ({0: records - 1} if records else {})


@pytest.mark.parametrize("eos", [False, True], ids=["at-least-once", "exactly-once"])
def test_c1_a_commit_waits_for_a_grant_that_comes_late(eos: bool) -> None:
    """C1. A bounded copy read to its end before the driver's first grant arrived: it waits, then commits.

    Ending ``orphaned`` instead made the supervisor copy every record again (a remote topic of 100
    records held them twice).
    """
    t = Task(records=5, eos=eos, stop_at={("t", 0): 5})
    t.grants.granted = False

    def hook(task: Task, turn: int) -> None:
        task.now = 0.5 * turn
        if turn == 6:
            task.grants.granted = True  # the driver answered the task's hello

    assert step(t, hook) == TaskOutcome.CAUGHT_UP
    assert t.committed() == {0: 4} and [r.value for r in t.b.records("A.t")] == [r.value for r in t.a.records("t")]


def test_c1_at_least_once_a_commit_without_a_grant_holds_until_the_grant_comes_back() -> None:
    """C1. The driver's lease was lost (the target stopped) longer than a commit waits for a grant: the task
    copies nothing more and keeps its acknowledged records until the driver, holding the lease again,
    grants it; then it commits them instead of ending ``orphaned`` (and a new generation copying them again)."""
    t = Task(records=10)
    t.grants.granted = False

    def hook(task: Task, turn: int) -> None:
        task.now = 1.0 * turn  # a second per look at the grants
        if turn == 40:  # 40 s later: far past GRANT_WAIT_S
            task.grants.granted = True
        if turn == 45:
            task.grants.state = GrantState.STOP

    assert step(t, hook, turns=100) == TaskOutcome.STOPPED
    assert t.committed() == {0: 9}
    assert len(t.b.records("A.t")) == 10  # nothing copied twice


def test_c1_an_abort_while_holding_ends_the_task_without_a_commit() -> None:
    t = Task(records=10)
    t.grants.granted = False

    def hook(task: Task, turn: int) -> None:
        task.now = 1.0 * turn
        if turn == 25:
            task.grants.state = GrantState.ABORT  # the lease is lost for good: a new generation copies

    assert step(t, hook, turns=100) == TaskOutcome.ORPHANED
    assert t.committed() == {}


@pytest.mark.parametrize(
    ("records", "timeouts"),
    [(500, [0]), (2 * IN_FLIGHT_RECORDS + 500, [0, FILL_WAIT_S, FILL_WAIT_S])],
    ids=["keeping-up", "backlog"],
)
def test_only_a_backlog_makes_a_poll_wait_to_fill(records: int, timeouts: list[float]) -> None:
    """Small records copy faster in full polls (at least once, each cut to IN_FLIGHT_RECORDS); a task keeping up
    with its source never waits for more."""
    t = Task(records=records, stop_at={("t", 0): records})
    assert step(t, lambda task, turn: None) == TaskOutcome.CAUGHT_UP
    assert t.consumer.consume_timeouts == timeouts and t.committed() == {0: records - 1}


def test_an_abort_ends_the_task_without_a_last_commit() -> None:
    t = Task(records=5)

    def hook(task: Task, turn: int) -> None:
        if turn == 0:  # before the first commit (due as soon as the records are acknowledged)
            task.grants.state = GrantState.ABORT

    assert step(t, hook) == TaskOutcome.ORPHANED
    assert t.committed() == {}


def test_a_position_out_of_range_is_committed_up_to_it_and_reported() -> None:
    t = Task(partitions=2, records=5)
    t.a.delete_records("t", 1, 3)  # records 0..2 of t-1 gone before they were copied

    result = t.runner.run()
    assert result.outcome == TaskOutcome.OUT_OF_RANGE
    assert result.out_of_range == (("t", 1),)
    assert t.committed() == {0: 4}  # the partition still readable is committed


def test_a_log_truncation_ends_the_task_out_of_range_for_the_driver_to_check() -> None:
    """engine-audit F8: KIP-320's ``_LOG_TRUNCATION`` (an unclean election cut the source log) goes the gap's way.

    Before, it failed the task (a ``DataPathError``), and every restart from the committed position could
    fail again or skip the new leader's records silently; now the driver checks the position and names the gap.
    """
    t = Task(partitions=2, records=5)
    t.consumer.errors = [FakeErrorMessage("t", 1, KafkaError._LOG_TRUNCATION)]
    result = t.runner.run()
    assert result.outcome == TaskOutcome.OUT_OF_RANGE and result.out_of_range == (("t", 1),)
    assert ("t", 1) in t.consumer.paused and t.committed()[0] == 4


def test_a_bounded_copy_ends_caught_up_at_its_end_offsets() -> None:
    t = Task(partitions=2, records=6, stop_at={("t", 0): 4, ("t", 1): 6})
    result = t.runner.run()
    assert result.outcome == TaskOutcome.CAUGHT_UP
    assert t.committed()[1] == 5 and t.committed()[0] >= 3  # at least to the end offsets listed at start
    assert result.records >= 10


def test_c9_a_timed_out_commit_write_is_written_again_by_the_next_commit() -> None:
    """C9. At least once, a commit write that timed out (a stopped target) does not fail the task.

    Before, the task failed and its restart copied again everything produced since its last
    landed commit. Now the next commit writes every partition's position again, and the lost
    report again (``test_report_runs.py``: counted once by the driver when it had landed after all).
    """
    t = Task(partitions=2, records=5)
    # the first commit's first partition (the dirty set's order): its offset and its report
    t.commits.fail_at = {0: KafkaError._MSG_TIMED_OUT, 1: KafkaError._MSG_TIMED_OUT}

    def hook(task: Task, turn: int) -> None:
        task.now = 5.0 * turn
        if turn == 1:
            assert list(task.committed().values()) == [4]  # one partition's position was lost
        if turn >= 4:
            task.grants.state = GrantState.STOP

    assert step(t, hook) == TaskOutcome.STOPPED
    assert t.committed() == {0: 4, 1: 4}
    assert sum(r.records for r in t.reports()) == 10  # the lost report's 5 records are reported once
    for p in range(2):  # copied once
        assert [r.value for r in t.b.records("A.t", p)] == [f"v{p}-{i}".encode() for i in range(5)]


def test_c9_a_commit_write_lost_at_the_final_commit_fails_the_task() -> None:
    """C9. The last commit of a task is never put off: a lost write there fails the task (copied again, never lost)."""
    t = Task(records=5)
    t.commits.fail_at = {0: KafkaError._MSG_TIMED_OUT}
    with pytest.raises(DataPathError, match=f"writing to '{OFFSETS}' on cluster 'B' failed") as e:
        step(t, stop_after(0))
    assert e.value.kafka_code == "_MSG_TIMED_OUT"


@pytest.mark.parametrize("eos", [False, True], ids=["at-least-once", "exactly-once"])
def test_a_commit_write_refused_for_good_fails_the_task(eos: bool) -> None:
    t = Task(records=5, eos=eos)
    code = KafkaError.TOPIC_AUTHORIZATION_FAILED if not eos else KafkaError._MSG_TIMED_OUT
    t.commits.fail_at = {0: code}

    def hook(task: Task, turn: int) -> None:
        task.now = 5.0 * turn

    target = OFFSETS if not eos else PROGRESS  # exactly once, the offsets ride in the transaction
    with pytest.raises(DataPathError, match=f"writing to '{target}' on cluster 'B' failed") as e:
        step(t, hook)
    assert e.value.kafka_code == KafkaError(code).name()


# ------------------------------------------------------------------------------ exactly once


def test_c4_exactly_once_commits_records_and_offsets_in_one_transaction() -> None:
    t = Task(records=5, eos=True)
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.data.initialised and t.data.commits >= 1
    assert [r.value for r in t.b.records("A.t")] == [f"v0-{i}".encode() for i in range(5)]
    assert t.committed() == {0: 4}
    syncs = [OffsetSync.decode(r.key, r.value) for r in t.a.records(SYNCS)]
    assert next(s for s in syncs if s.partition == 0) == OffsetSync("t", 0, 0, 0)  # a commit's order is the dirty set's


def test_c5_an_abortable_commit_rewinds_to_the_committed_positions() -> None:
    t = Task(records=5, eos=True)
    t.data.commit_errors = [KafkaError(KafkaError._OUTDATED, "abortable", txn_requires_abort=True)]

    def hook(task: Task, turn: int) -> None:
        if turn == 0:
            task.now = 5.0  # the first commit is due: it aborts
        if turn == 1:
            assert task.data.aborts == 1 and ("t", 0, 0) in task.consumer.seeks
            assert task.b.records("A.t") == [] and task.committed() == {}
        if turn == 3:
            task.grants.state = GrantState.STOP

    assert step(t, hook) == TaskOutcome.STOPPED
    assert [r.value for r in t.b.records("A.t")] == [f"v0-{i}".encode() for i in range(5)]  # once each
    assert t.committed() == {0: 4}


def test_c5_after_a_rewind_a_failed_delivery_names_its_own_record() -> None:
    """C5. engine-audit F8: records purged by an abort are not failures of the records produced after the rewind.

    librdkafka serves the purged records' delivery reports (``_PURGE_QUEUE``) during
    ``abort_transaction``. Counted as failures and never reset, they shifted the index of the next
    real failure past ``upstream``: the task failed blaming offset -1 (or a wrong record) instead of
    the record that failed.
    """
    t = Task(records=5, eos=True)
    t.data.commit_errors = [KafkaError(KafkaError._OUTDATED, "abortable", txn_requires_abort=True)]
    t.data.ack_budget = 0  # the first transaction's records are still in flight when it aborts

    def hook(task: Task, turn: int) -> None:
        if turn == 0:
            task.now = 5.0  # the first commit is due: it aborts, purging the 5 records in flight
        if turn == 1:
            assert task.data.aborts == 1 and task.data.purged >= 5
            task.data.ack_budget = None
            task.data.fail_at = {2: KafkaError.TOPIC_AUTHORIZATION_FAILED}  # the third record read again
            task.now = 10.0

    with pytest.raises(DataPathError, match=r"t-0@2 to A\.t failed") as e:
        step(t, hook)
    assert e.value.kafka_code == "TOPIC_AUTHORIZATION_FAILED" and t.committed() == {}


def test_a_refused_task_never_initialises_its_transactional_id() -> None:
    """engine-audit F8: a late task of an older generation, refused by the driver, ends before ``init_transactions``.

    Before, it initialised its transactional id first: that fenced the current task with the same index.
    """
    t = Task(records=5, eos=True)
    t.grants.granted = False
    t.grants.state = GrantState.ABORT  # the driver's answer to a stale hello
    assert t.runner.run().outcome == TaskOutcome.ORPHANED
    assert not t.data.initialised and t.b.records("A.t") == [] and t.committed() == {}


def test_a_fenced_producer_fails_the_task() -> None:
    t = Task(records=5, eos=True)
    t.data.commit_errors = [KafkaError(KafkaError._FENCED, "fenced", fatal=True)]
    with pytest.raises(DataPathError, match="another producer with this transactional id took over"):
        step(t, stop_after(1))
    assert t.committed() == {}


def test_c1_exactly_once_without_a_grant_aborts_the_transaction() -> None:
    t = Task(records=5, eos=True)
    t.grants.granted = False

    def hook(task: Task, turn: int) -> None:
        task.now = 5.0 * turn

    assert step(t, hook) == TaskOutcome.ORPHANED
    assert t.data.aborts >= 1 and t.b.records("A.t") == [] and t.committed() == {}


class _FatalProducer:
    """A producer in librdkafka's fatal state: releasing it raises, as a refused transactional id leaves it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def _fatal(self, name: str) -> None:
        self.calls.append(name)
        raise KafkaException(KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "refused", fatal=True))

    def purge(self) -> None:
        self._fatal("purge")

    def flush(self, timeout: float) -> int:
        self._fatal("flush")
        return 0

    def close(self) -> None:
        self._fatal("close")


@pytest.mark.parametrize("clean", [False, True])
def test_releasing_a_producer_in_a_fatal_state_never_hides_how_the_task_ended(clean: bool) -> None:
    producer = _FatalProducer()
    job._release(producer, clean=clean)  # no exception: the task's own error is the one reported
    assert producer.calls == (["flush"] if clean else ["purge"])


def test_c8_a_restarted_partition_commits_its_new_start_even_with_nothing_to_copy() -> None:
    """C8. At least once too: a re-created topic's first commit supersedes the old topic's stored offset.

    Before, a partition that copied nothing committed nothing: ``mm2-offsets`` kept the old topic's
    offset, and a restart resumed the new topic there (its first records never copied).
    """
    t = Task(records=0, restarted=True)
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.committed() == {0: -1}  # next offset 0 (MM2 seeks to the beginning for -1)
    [report] = t.reports()
    assert (report.next_offset, report.records) == (0, 0)


def test_at_least_once_copying_goes_on_until_the_first_grant_comes() -> None:
    """A new holder of the flow's lease starts its tasks at once and grants only from its ``safe_at``: the task
    copies meanwhile and commits at the first grant. Before, its first commit stood waiting for the grant and
    copying stopped with it."""
    t = Task(records=10)
    t.grants.granted = False
    copied: list[int] = []

    def hook(task: Task, turn: int) -> None:
        task.now = 0.5 * turn
        copied.append(len(task.b.records("A.t")))
        if turn in (1, 2):  # the source grows while the grant has not come
            task.a.append("t", b"k", f"late-{turn}".encode(), partition=0, ts=2_000 + turn)
        if turn == 4:  # 2 s after the start: the take-over's wait is over
            assert task.committed() == {}
            task.grants.granted = True
        if turn == 7:
            task.grants.state = GrantState.STOP

    assert step(t, hook) == TaskOutcome.STOPPED
    assert copied[4] == 12  # all copied before the grant
    assert t.committed() == {0: 11}


def test_after_another_instances_holding_a_task_produces_nothing_before_its_first_grant() -> None:
    """engine-audit-2 N5: the previous holder of the flow's lease was another instance, whose last records may
    still be landing: the new holder's task copies nothing until its first grant (the driver grants from the
    take-over's ``safe_at``), then everything. Before, it copied up to PRE_GRANT_RECORDS records at once:
    two writers of the same remote partitions, the first copies out of order."""
    t = Task(records=10, after_other_holder=True)
    t.grants.granted = False
    copied: list[int] = []

    def hook(task: Task, turn: int) -> None:
        task.now = 0.5 * turn
        copied.append(len(task.b.records("A.t")))
        if turn == 6:  # 3 s after the start: safe_at passed, the driver grants
            task.grants.granted = True
        if turn == 12:
            task.grants.state = GrantState.STOP

    assert step(t, hook) == TaskOutcome.STOPPED
    assert copied[:7] == [0] * 7  # nothing before the grant
    assert len(t.b.records("A.t")) == 10 and t.committed() == {0: 9}


def test_after_another_instances_holding_no_grant_ends_the_task_without_copying() -> None:
    t = Task(records=10, after_other_holder=True)
    t.grants.granted = False

    def hook(task: Task, turn: int) -> None:
        task.now = 1.0 * turn  # the driver never grants (it lost the lease meanwhile)

    assert step(t, hook) == TaskOutcome.ORPHANED
    assert t.b.records("A.t") == [] and t.committed() == {}


def test_at_least_once_a_task_whose_grant_lapsed_copies_nothing_more() -> None:
    """engine-audit-2 N5: the driver lost the flow's lease (cut off from the target): the task's last grant
    ends before another instance can take the flow over. It copies nothing more from then on, not until its
    next commit is due (``offset.flush.interval.ms`` later), so none of its copies lands alongside the new
    holder's; and it commits what was acknowledged once the grant comes back."""
    t = Task(records=5)
    copied: list[int] = []

    def hook(task: Task, turn: int) -> None:
        task.now = 0.05 * turn  # the next commit by time is due 20 turns after the last
        copied.append(len(task.b.records("A.t")))
        if turn == 3:
            task.grants.granted = False  # the last grant ended
        if 3 <= turn < 15:  # the source grows meanwhile
            task.a.append("t", b"k", f"late-{turn}".encode(), partition=0, ts=2_000 + turn)
        if turn == 40:
            task.grants.granted = True
        if turn == 45:
            task.grants.state = GrantState.STOP

    assert step(t, hook, turns=200) == TaskOutcome.STOPPED
    assert copied[3] >= 5 and max(copied[4:40]) <= copied[3] + 1  # at most the turn's batch, then nothing
    assert len(t.b.records("A.t")) == 17 and t.committed() == {0: 16}


def test_before_the_first_grant_a_task_copies_no_more_than_flush_records() -> None:
    """A crash loop whose runs all die before the new holder's first grant re-copies ``flush_records`` per task
    each time, not the backlog: past them, the first commit waits for the grant and copying waits with it."""
    t = Task(records=5, flush_records=10)
    t.grants.granted = False
    copied: list[int] = []

    def hook(task: Task, turn: int) -> None:
        task.now = 0.1 * turn
        copied.append(len(task.b.records("A.t")))
        if 1 <= turn <= 10:  # the backlog grows by 5 records a turn
            task.a.append("t", b"k", f"more-{turn}".encode(), partition=0, ts=2_000 + turn)
            for i in range(4):
                task.a.append("t", b"k", f"more-{turn}-{i}".encode(), partition=0, ts=2_000 + turn)
        if turn == 20:
            task.grants.granted = True
        if turn == 25:
            task.grants.state = GrantState.STOP

    assert step(t, hook, turns=60) == TaskOutcome.STOPPED
    assert 10 <= copied[19] < 20  # copying stopped at the volume until the grant came
    assert len(t.b.records("A.t")) == 55 and t.committed() == {0: 54}


def test_before_the_first_grant_a_poll_takes_no_more_than_the_allowance_left() -> None:
    """A backlog read in one poll is cut at the pre-grant allowance: exactly ``flush_records`` copied before the
    grant. Before, a poll took a whole batch (up to ``BATCH_RECORDS``) once under the allowance: a crash loop
    killing each run before its first grant re-copied up to 11,000 records per task instead of 1,000."""
    t = Task(records=50, flush_records=10)
    t.grants.granted = False
    copied: list[int] = []

    def hook(task: Task, turn: int) -> None:
        task.now = 0.1 * turn
        copied.append(len(task.b.records("A.t")))
        if turn == 10:
            task.grants.granted = True
        if turn == 15:
            task.grants.state = GrantState.STOP

    assert step(t, hook, turns=40) == TaskOutcome.STOPPED
    assert copied[9] == 10
    assert len(t.b.records("A.t")) == 50 and t.committed() == {0: 49}


def test_a_task_reads_nothing_more_while_too_many_records_are_unacknowledged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stopped target acknowledges nothing: the task stops reading once ``IN_FLIGHT_RECORDS`` are in flight,
    so a restart re-copies that many, not the producer's whole queue (the crash loop's 30 s target stop)."""
    monkeypatch.setattr(runner_module, "IN_FLIGHT_RECORDS", 4)
    t = Task(records=20)
    t.data.ack_budget = 0  # the target is stopped
    produced: list[int] = []

    def hook(task: Task, turn: int) -> None:
        produced.append(len(task.data.in_flight))
        if turn == 5:
            task.data.ack_budget = None  # SIGCONT
        if turn == 20:
            task.grants.state = GrantState.STOP

    assert step(t, hook) == TaskOutcome.STOPPED
    assert max(produced[:5]) == 4  # the cap: a poll takes no more than keeps it (before: a whole batch, 20)
    assert t.committed() == {0: 19} and len(t.b.records("A.t")) == 20


def test_c4_exactly_once_commits_a_restarted_partitions_topic_id_with_its_new_start() -> None:
    """C4. The first transaction of a partition the driver started over (a re-created topic) holds a topic-id
    marker beside its source offset: a kill after the commit and before the progress report no longer leaves
    the new topic's offsets unnamed (the next run started the partition over: faults-random seed 4)."""
    t = Task(records=5, eos=True, restarted=True, topic_id="new-id")
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    markers = [decode_topic_id_marker(r.key, r.value) for r in offsets_records(t)]  # type: ignore[arg-type]
    assert [m for m in markers if m is not None] == [("A", "t", 0, "new-id")]
    assert t.committed() == {0: 4}
    plain = Task(records=5, eos=True, topic_id="new-id")  # not started over: no marker
    assert step(plain, stop_after(2)) == TaskOutcome.STOPPED
    assert all(decode_topic_id_marker(r.key, r.value) is None for r in offsets_records(plain))  # type: ignore[arg-type]


def offsets_records(t: Task) -> list[Any]:
    """Every record of ``mm2-offsets`` (all its partitions)."""
    return [r for part in t.b.topics[OFFSETS].partitions for r in part]


def test_source_offsets_are_keyed_by_the_flows_source_connector_name() -> None:
    """A Connect-based deployment named its MirrorSourceConnector ``dc1-source``: the task commits under that name
    (``mirrorspark.source.connector.name``), where Connect's worker looks for them, and on the key's partition of
    the offsets topic Connect's producer would choose (issue #25 item 5)."""
    task = Task(partitions=2, records=5, connector_name="dc1-source")
    assert step(task, stop_after(5)) == TaskOutcome.STOPPED
    written = [(i, r) for i, part in enumerate(task.b.topics[OFFSETS].partitions) for r in part]
    ours = [(i, r) for i, r in written if r.key.startswith(b'["dc1-source",')]
    assert sorted(decode_source_offset(r.key, r.value, connector_name="dc1-source").offset for _, r in ours) == [4, 4]
    assert all(default_partition(r.key, 25) == i for i, r in ours)
    assert not any(decode_source_offset(r.key, r.value) for _, r in written)  # nothing as MirrorSourceConnector
