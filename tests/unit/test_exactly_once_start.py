"""Exactly-once as KIP-618 means it, on the in-memory fakes (``engine-audit.md`` F3, F4).

A copy task reads its own start offsets after ``init_transactions`` (which fenced the previous
producer of its id and completed or aborted its transaction): a driver position left behind by
a lost progress report, or read before the fencing, never makes it copy a committed record
again; an offset the source partition cannot hold is never adopted. Before a new generation
starts, every transactional id the flow's tasks may have used is fenced (Connect's
``fenceZombies``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from test_copy_task_runner import OFFSETS, Task, step, stop_after

from fakes import FakeAdmin, FakeConsumer, FakeTaskProducer, FlowLockStub, two_clusters
from mirrorspark.client.context import FlowContext
from mirrorspark.core.progress_records import PartitionReport
from mirrorspark.errors import ClusterError, TransactionCoordinatorError
from mirrorspark.kafka.admin import ClusterAdmin
from mirrorspark.mm2.connect_offsets import (
    OffsetHistory,
    default_partition,
    source_offset_key,
    source_offset_value,
    task_transactional_id,
)
from mirrorspark.replication.connector.flow import Flow
from mirrorspark.replication.task.commit import TopicIdsReader
from mirrorspark.replication.task.runner import CopyTaskRunner
from mirrorspark.replication.task.spec import PartitionAssignment, PartitionKey, TaskOutcome
from mirrorspark.replication.task.stored_offsets import read_stored_offsets
from mirrorspark.replication.worker import supervisor as supervisor_module
from mirrorspark.replication.worker.fencing import fence_flow, fence_ids, fence_zombies
from mirrorspark.replication.worker.supervisor import FlowSupervisor

pytestmark = pytest.mark.unit

TID = task_transactional_id("A-mm2", "MirrorSourceConnector", 0)


class EosTask(Task):
    """An exactly-once task of ``A->B`` over ``t`` whose data producer has task 0's transactional id and
    which reads its stored source offsets after ``init_transactions`` (``tests/fakes.py``)."""

    def __init__(self, *, start: int = 0, records: int = 10, restarted: bool = False) -> None:
        super().__init__(records=records, eos=True)
        parts = tuple(dataclasses.replace(a, start=start, restarted=restarted) for a in self.spec.partitions)
        self.spec = dataclasses.replace(self.spec, partitions=parts)
        self.data = FakeTaskProducer(self.b, transactional_id=TID)
        self.runner = self.build()

    def read(self, keys: Sequence[PartitionKey]) -> Mapping[PartitionKey, OffsetHistory]:
        admin = ClusterAdmin(FakeAdmin(self.b), "B")
        return read_stored_offsets(self.spec, keys, consumer=FakeConsumer(self.b), admin=admin, timeout_s=5)

    def build(self, *, stored: bool = True, topic_ids: TopicIdsReader | None = None) -> CopyTaskRunner:
        return CopyTaskRunner(
            self.spec,
            consumer=self.consumer,
            data=self.data,
            commit_producer=self.commits,
            syncs_producer=self.syncs,
            grants=self.grants,
            clock=lambda: self.now,
            stored_offsets=self.read if stored else None,
            topic_ids=topic_ids,
        )

    def store(self, *offsets: int, partition: int = 0) -> None:
        """Source offsets of ``t-<partition>`` committed to ``mm2-offsets`` by an earlier task, oldest first."""
        key = source_offset_key("A", "t", partition)
        for o in offsets:
            self.b.append(OFFSETS, key, source_offset_value(o), partition=default_partition(key, 25))

    def copied(self) -> list[bytes | None]:
        return [r.value for r in self.b.records("A.t")]


def values(first: int, last: int) -> list[bytes]:
    return [f"v0-{i}".encode() for i in range(first, last + 1)]


def test_c7_a_stale_driver_position_starts_at_the_stored_offset() -> None:
    """C7. F3: the driver's position (2) is stale, the report of the commit up to offset 6 was lost; the task
    starts after the stored offset and copies nothing twice (without the read: records 2..6 twice)."""
    t = EosTask(start=2)
    t.b.topics["A.t"].partitions[0].extend(t.a.records("t")[:7])  # what that commit copied: 0..6
    t.store(6)
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.copied() == values(0, 9)
    assert t.committed() == {0: 9}


def test_c7_a_commit_prepared_by_the_previous_producer_of_the_id_is_completed_before_the_start_is_read() -> None:
    """C7. F4: the previous task of index 0 sent the commit of records 0..4 with their offset and died before the
    answer (PREPARE_COMMIT): invisible when the driver read ``mm2-offsets``, completed by the new task's
    ``init_transactions``; the new task reads after it and starts at 5."""
    t = EosTask(start=0)
    old = FakeTaskProducer(t.b, transactional_id=TID)
    old.init_transactions()
    old.begin_transaction()
    for r in t.a.records("t")[:5]:
        old.produce("A.t", r.value, r.key, 0)
    key = source_offset_key("A", "t", 0)
    old.produce(OFFSETS, source_offset_value(4), key, default_partition(key, 25))
    old.die_after_end_txn()
    assert t.copied() == [] and t.committed() == {}  # what the driver saw
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert old.fenced
    assert t.copied() == values(0, 9)
    with pytest.raises(KafkaException, match="fenced"):
        old.commit_transaction()


def test_an_open_transaction_of_the_previous_producer_is_aborted_and_copied_once() -> None:
    t = EosTask(start=0)
    old = FakeTaskProducer(t.b, transactional_id=TID)
    old.init_transactions()
    old.begin_transaction()
    for r in t.a.records("t")[:5]:
        old.produce("A.t", r.value, r.key, 0)
    old.flush()  # acknowledged, never committed: the task was killed mid-transaction
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.copied() == values(0, 9)


class _StuckAdmin:
    """The offsets topic's high watermarks (23) and last stable offsets (20): a transaction open at offset 20."""

    def end_offsets(self, partitions: Sequence[PartitionKey], *, read_committed: bool = False) -> dict:
        return {tp: 20 if read_committed else 23 for tp in partitions}


class _StuckConsumer:
    """A ``read_committed`` consumer held at the last stable offset (20)."""

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        self.partitions = partitions

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        time.sleep(0.01)
        return []

    def position(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, 20) for tp in partitions]


def test_a_read_held_by_an_open_transaction_names_each_last_stable_offset_and_the_fix() -> None:
    """A transaction open in the offsets topic holds the read: the error names where each partition is stable to
    and how to end a hanging transaction (KIP-664's ``kafka-transactions.sh``); the task is restarted."""
    spec = EosTask().spec
    p = default_partition(source_offset_key("A", "t", 0), 25)
    with pytest.raises(ClusterError) as info:
        read_stored_offsets(spec, [("t", 0)], consumer=_StuckConsumer(), admin=_StuckAdmin(), timeout_s=0.2)
    message = str(info.value)
    assert f"partition {p}: stable to offset 20 of 23" in message
    assert "find-hanging --broker-id" in message
    assert f"abort --topic {OFFSETS} --partition {p} --start-offset" in message


@pytest.mark.parametrize(
    ("stored", "start", "first"),
    [
        ((5_000_000,), 3, 3),  # foreign, past the source's end: never adopted
        ((6, 5_000_000), 3, 7),  # the newest one the source can hold
        ((1,), 3, 3),  # behind the driver: starts never move backwards
        ((-1,), 0, 0),  # Connect's "nothing copied yet"
    ],
)
def test_c7_only_a_stored_offset_the_source_can_hold_moves_the_start(
    stored: tuple[int, ...], start: int, first: int
) -> None:
    t = EosTask(start=start)
    t.store(*stored)
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.copied() == values(first, 9)


def test_c8_a_start_moved_by_a_stored_offset_is_reported_to_the_driver_even_with_nothing_to_copy() -> None:
    t = EosTask(start=2)
    t.store(9)  # everything was copied; the report of it was lost
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.copied() == []
    [report] = t.reports()
    assert (report.next_offset, report.records, report.generation) == (10, 0, 1)


def test_c7_a_restarted_partition_adopts_nothing() -> None:
    """C7. A re-created topic refilled past the old topic's stored offset (6): the task starts at the driver's 0."""
    t = EosTask(start=0, restarted=True)
    t.store(6)
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.copied() == values(0, 9)


def test_c8_a_restarted_partition_commits_its_start_even_with_nothing_to_copy() -> None:
    """C8. Its first transaction writes the new start, so that no later task adopts the old topic's offset either."""
    t = EosTask(start=0, records=0, restarted=True)
    t.store(6)
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.committed() == {0: -1}
    [report] = t.reports()
    assert (report.next_offset, report.records) == (0, 0)


@pytest.mark.parametrize(
    ("now_id", "outcome", "copied"), [("OLD", TaskOutcome.STOPPED, 10), ("NEW", TaskOutcome.OUT_OF_RANGE, 0)]
)
def test_c6_records_read_after_the_topic_was_recreated_under_the_task_are_never_committed(
    now_id: str, outcome: TaskOutcome, copied: int
) -> None:
    """C6. The consumer follows the topic by name: re-created under the task, it reads the new topic's records at
    the old positions. Committed as the old topic's, they were copied twice once the driver started the new
    topic over (faults-random seed 42). The ids are read before each commit: the transaction is aborted and
    the partition reported out of range, for the driver to find the re-creation."""
    t = EosTask(start=0)
    parts = tuple(dataclasses.replace(a, topic_id="OLD") for a in t.spec.partitions)
    t.spec = dataclasses.replace(t.spec, partitions=parts)
    asked: list[Sequence[str]] = []

    def ids(topics: Sequence[str]) -> Mapping[str, str]:
        asked.append(topics)
        return dict.fromkeys(topics, now_id)

    t.runner = t.build(topic_ids=ids)
    assert step(t, stop_after(2)) == outcome
    assert len(t.copied()) == copied and asked and asked[0] == ["t"]
    assert t.committed() == ({0: 9} if copied else {})


def test_without_the_read_the_task_starts_at_the_driver_position() -> None:
    """The at-least-once path and the driver's own start are unchanged (no stored-offsets reader)."""
    t = EosTask(start=2)
    t.runner = t.build(stored=False)
    t.store(6)
    assert step(t, stop_after(2)) == TaskOutcome.STOPPED
    assert t.copied() == values(2, 9)


# ------------------------------------------------------------------------------ fencing every id


def flow_of(extra: str = "") -> tuple[Flow, Any, Any]:
    cfg, a, b, clients = two_clusters("B.exactly.once.source.support = enabled\n" + extra)
    a.create_topic("t", 4)
    return Flow(FlowContext.build(cfg, cfg.flow("A", "B"), clients=clients), cfg.data_path), a, b


def test_fencing_ends_every_previous_owners_transaction_and_fences_it() -> None:
    """Task 1 of the previous generation (an index the new one no longer has) left a transaction open, and
    task 2 one whose commit it had sent: both are fenced; the first is aborted, the second committed."""
    flow, _, b = flow_of("tasks.max = 3\n")
    b.create_topic("A.t", 4)
    owners = []
    for i, value in ((1, b"open"), (2, b"prepared")):
        p = FakeTaskProducer(b, transactional_id=task_transactional_id("A-mm2", "MirrorSourceConnector", i))
        p.init_transactions()
        p.begin_transaction()
        p.produce("A.t", value, None, 0)
        p.flush()
        owners.append(p)
    owners[1].die_after_end_txn()
    fence_flow(flow, 3)
    assert sorted(b.inits[-3:]) == fence_ids(flow.config, 3)
    assert all(p.fenced for p in owners)
    assert [r.value for r in b.records("A.t")] == [b"prepared"]


@pytest.mark.parametrize(
    ("code", "error", "message"),
    [
        (
            KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            ClusterError,
            "may not use transactional id 'A-mm2-MirrorSourceConnector-1'",
        ),
        (KafkaError._TIMED_OUT, TransactionCoordinatorError, "did not initialise transactional id 'A-mm2-"),
    ],
)
def test_an_id_that_cannot_be_fenced_is_named_with_the_fix(code: int, error: type, message: str) -> None:
    flow, _, b = flow_of("tasks.max = 2\n")
    b.init_errors[task_transactional_id("A-mm2", "MirrorSourceConnector", 1)] = code
    with pytest.raises(error, match=message):
        fence_flow(flow, 2)


def test_fence_zombies_is_bounded_by_its_timeout() -> None:
    class Hanging:
        def init_transactions(self, timeout: float) -> None:
            time.sleep(2.0)  # a coordinator that does not answer

    with pytest.raises(ClusterError, match=r"did not finish within 0 s on cluster 'B' \(transactional ids x-0\)"):
        fence_zombies("A->B", "A", "B", ["x-0"], lambda tid: Hanging(), timeout_s=0.2)


class StubReports:
    def poll(self, **_: Any) -> bool:
        return False


class StubGrants:
    address = ("127.0.0.1", 0, "token")

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def grant(self, flow: str, generation: int, seconds: float) -> None:
        self.calls.append(("grant", generation))

    def stop(self, flow: str, generation: int) -> None:
        self.calls.append(("stop", generation))

    def forget(self, *_: Any) -> None:
        pass

    def throttle(self, *_: Any) -> None: ...


class EosFlow(FlowLockStub):
    """An exactly-once flow whose task specs are recorded, not run (the supervisor's start alone)."""

    name = "A->B"
    halted = None
    exactly_once = True
    order = [("t", 0), ("t", 1)]
    assignment = (tuple(order), 0)

    def __init__(self, tasks_max: int, task_count_seen: int = 0) -> None:
        self.task_count_seen = task_count_seen
        self.reports = StubReports()
        self.config = type("Cfg", (), {"tasks_max": tasks_max})()
        self.specs: list[int] = []

    fence_count = Flow.fence_count
    previous_tasks = 0

    def task_specs(self, generation: int, address: Any, *, stop_at: Any = None, epoch: int = 0) -> list[Any]:
        self.specs.append(generation)
        return []


def test_a_new_generation_starts_only_after_every_id_is_fenced(monkeypatch: pytest.MonkeyPatch) -> None:
    fenced: list[int] = []
    outcome: list[Exception | None] = [ClusterError("the coordinator moved"), None]

    def fence(flow: Any, count: int) -> float:
        fenced.append(count)
        e = outcome.pop(0)
        if e is not None:
            raise e
        return 0.0

    monkeypatch.setattr(supervisor_module, "fence_flow", fence)
    flow = EosFlow(tasks_max=2, task_count_seen=4)  # an earlier run had 4 tasks: their ids are fenced too
    sup = FlowSupervisor(flow, object(), StubGrants(), None)  # type: ignore[arg-type]
    sup.generation = 3  # a later generation: a failed fencing is retried, nothing starts before
    with pytest.raises(ClusterError):
        sup.start()
    assert (sup.generation, flow.specs) == (3, [])
    sup.start()
    assert (sup.generation, flow.specs, fenced) == (4, [4], [4, 4])


@pytest.mark.parametrize(
    ("error", "generation"),
    [
        (TransactionCoordinatorError("flow A->B: no transaction coordinator"), 0),  # at the first start only
        (ClusterError("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kafka_code="TRANSACTIONAL_ID_AUTHORIZATION_FAILED"), 0),
        (ClusterError("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kafka_code="TRANSACTIONAL_ID_AUTHORIZATION_FAILED"), 5),
    ],
    ids=["no-coordinator", "not-authorized", "not-authorized-later"],
)
def test_a_fencing_error_no_retry_can_fix_fails_the_flow(
    monkeypatch: pytest.MonkeyPatch, error: ClusterError, generation: int
) -> None:
    def fence(flow: Any, count: int) -> float:
        raise error

    monkeypatch.setattr(supervisor_module, "fence_flow", fence)
    flow = EosFlow(tasks_max=1)
    sup = FlowSupervisor(flow, object(), StubGrants(), None)  # type: ignore[arg-type]
    sup.generation = generation
    sup.start()
    assert (sup.state, sup.failures, sup.restarts, flow.specs) == ("failed", 1, 0, [])
    assert sup.error is error


# ------------------------------------------------------------------------------ the driver's side


def test_a_recreated_topic_is_restarted_until_a_task_of_it_reports() -> None:
    flow, a, _ = flow_of()
    a.fill("t", 0, 5)
    flow.start()
    assert not flow.partitions[("t", 0)].restarted
    a.recreate_topic("t", 4)
    flow.refresh_topics()
    assert flow.partitions[("t", 0)].restarted
    specs = flow.task_specs(2, ("127.0.0.1", 0, "x"))
    assert [p.restarted for s in specs for p in s.partitions if p.key == ("t", 0)] == [True]
    assert specs[0].offsets_consumer_conf is not None
    assert specs[0].offsets_consumer_conf["isolation.level"] == "read_committed"
    report = PartitionReport(
        flow="A->B",
        topic="t",
        partition=0,
        task=0,
        generation=2,
        next_offset=0,
        records=0,
        value_bytes=0,
        key_bytes=0,
        latency_ms_sum=0,
        latency_ms_max=0,
        latency_samples=0,
        segments=(),
        at=0,
    )
    flow.apply_report(report, generation=2)
    assert not flow.partitions[("t", 0)].restarted
    assert flow.task_count_seen == 1  # the previous owners' indexes, fenced at the next start
    later = {p.key: p.restarted for s in flow.task_specs(3, ("127.0.0.1", 0, "x")) for p in s.partitions}
    assert later == {("t", 0): False, ("t", 1): True, ("t", 2): True, ("t", 3): True}


def test_partition_assignment_defaults_keep_old_specs() -> None:
    assert PartitionAssignment("t", 0, "A.t", 0).restarted is False


def test_a_failed_fencing_is_named_even_when_closing_its_producer_would_raise() -> None:
    """confluent-kafka's ``close`` of a producer whose ``init_transactions`` timed out raises ``SystemError``."""

    class Unanswered:
        def init_transactions(self, timeout: float) -> None:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to initialize Producer ID"))

        def close(self) -> None:
            raise SystemError("<built-in method close> returned a result with an exception set")

    with pytest.raises(TransactionCoordinatorError, match="did not initialise transactional id 'x-0' within 10 s"):
        fence_zombies("A->B", "A", "B", ["x-0"], lambda tid: Unanswered(), timeout_s=10)
