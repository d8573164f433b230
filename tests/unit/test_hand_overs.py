"""Hand-overs of a flow's lease off the driver loop, without overlapping writers (engine-audit-2 N4, N5, N10).

Stub flows, leases, grants and jobs: no broker, no Spark. The take-overs and joins run on the
flows' own threads here (the real :class:`~mirrorspark.replication.worker.takeover.FlowThread`).
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from fakes import FlowLockStub, RecordingGrantServer
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionAssignment
from mirrorspark.replication.worker import supervisor as supervision
from mirrorspark.replication.worker import takeover
from mirrorspark.replication.worker.supervisor import FlowSupervisor, SupervisorState
from mirrorspark.replication.worker.worker import Worker

pytestmark = pytest.mark.unit

BLOCKED_S = 60.0
"""How long a blocked read or join would take (the audit's 60 s ``reload_positions``)."""


class StubLease:
    def __init__(self, epoch: int, *, safe_at: float = 0.0) -> None:
        self.held, self.epoch, self.failure, self.standby, self.safe_at = True, epoch, None, False, safe_at

    def holds(self, epoch: int) -> bool:
        return self.held and self.epoch == epoch

    def grant(self, epoch: int, seconds: float) -> float | None:
        return 1e9 if self.holds(epoch) else None

    def may_grant(self, epoch: int) -> bool:
        return self.holds(epoch)

    def void_grants(self) -> None:
        pass

    def claimed_only_by_self(self, after: int, upto: int) -> bool:
        return False


class StubReports:
    def poll(self, **_: Any) -> bool:
        return False


class StubFlow(FlowLockStub):
    halted = None
    exactly_once = False
    order = (("t", 0),)
    assignment = (order, 0)
    task_count_seen = 0
    config = SimpleNamespace(tasks_max=1)

    def __init__(self, name: str, *, blocked: threading.Event | None = None) -> None:
        self.name, self.reports, self.blocked = name, StubReports(), blocked
        self.position = 0  # where mm2-offsets says task 0's partition was committed
        self.committed = 0  # what mm2-offsets holds now (a previous holder's late commit moves it)
        self.reads: list[float] = []

    def reload_positions(self) -> None:
        if self.blocked is not None:
            self.blocked.wait(BLOCKED_S)  # mm2-offsets' leader is gone: the read takes up to max.block.ms
        self.reads.append(time.monotonic())
        self.position = self.committed

    def task_specs(self, generation: int, address: Any, *, stop_at: Any = None, epoch: int = 0) -> list[CopyTaskSpec]:
        return [
            CopyTaskSpec(
                flow=self.name,
                source="A",
                target="B",
                task_index=0,
                generation=generation,
                consumer_conf={},
                producer_conf={},
                commit_conf={},
                syncs_conf=None,
                offsets_topic="mm2-offsets.A.internal",
                offsets_partitions=25,
                syncs_topic="mm2-offset-syncs.B.internal",
                progress_topic="mm2-task-progress.A.internal",
                partitions=(PartitionAssignment("t", 0, "A.t", self.position),),
                offset_lag_max=100,
                flush_interval_s=1.0,
                grant_address=address,
                epoch=epoch,
            )
        ]


class BlockedJob:
    """A copy task's job that ends only once ``released`` (a join waits for it, up to its timeout)."""

    def __init__(self, spec: CopyTaskSpec, released: threading.Event) -> None:
        self.spec, self.released = spec, released
        self.result = self.error = None

    def is_alive(self) -> bool:
        return not self.released.is_set()

    def join(self, timeout: float | None = None) -> None:
        self.released.wait(timeout)

    def cancel(self) -> None: ...


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[CopyTaskSpec]:
    specs: list[CopyTaskSpec] = []
    monkeypatch.setattr(FlowSupervisor, "_launch", lambda self, spec: specs.append(spec))
    return specs


def settle(sup: FlowSupervisor) -> None:
    """Wait for the flow's thread, then tick: its end is acted on."""
    background = getattr(sup, "background", None)  # before engine-audit-2 N4, the tick did it all
    if background is not None:
        assert background.join(10), f"{sup.name}: its {background.what} did not end"
    sup.tick()


def test_a_lease_loss_is_acted_on_within_one_tick_while_another_flows_take_over_is_blocked(
    launched: list[CopyTaskSpec],
) -> None:
    """engine-audit-2 N4: flow A's take-over reads mm2-offsets for up to 60 s (its leader gone); flow B's lease
    is lost meanwhile, with a task that takes long to end. The tick must come back at once, B standby and its
    task told to abort; A's take-over still under way. Before, the tick ran A's read (and B's join) itself:
    every flow of the driver waited for it."""
    release = threading.Event()
    try:
        grants = RecordingGrantServer()
        a = FlowSupervisor(StubFlow("A->B", blocked=release), object(), grants, StubLease(3))  # type: ignore[arg-type]
        a.state = SupervisorState.STANDBY
        b_lease = StubLease(5)
        b = FlowSupervisor(StubFlow("A->C"), object(), grants, b_lease)  # type: ignore[arg-type]
        b.state, b.epoch, b.generation = SupervisorState.RUNNING, 5, 1
        b.runs = {0: BlockedJob(b.flow.task_specs(1, grants.address)[0], release)}  # type: ignore[dict-item]
        b_lease.held, b_lease.standby = False, True  # another instance holds B's lease now
        worker = Worker.__new__(Worker)  # no Spark: only tick() is exercised
        worker.supervisors, worker.grants, worker.jvm = [a, b], grants, None  # type: ignore[assignment]

        ticked = threading.Thread(target=worker.tick, daemon=True)
        ticked.start()
        ticked.join(10)  # far less than BLOCKED_S: the tick waits on no read nor join
        assert not ticked.is_alive(), "the driver loop's tick waited for a flow's take-over or join"
        assert b.state == SupervisorState.STANDBY and ("abort", "A->C", 1) in grants.calls
        assert a.background.pending and a.state == SupervisorState.STANDBY  # A's read still blocked
        worker.tick()  # a tick while both flows' jobs are under way changes nothing
        assert a.state == SupervisorState.STANDBY and a.generation == 0
    finally:
        release.set()
    settle(a)
    settle(b)
    assert (a.state, a.epoch, a.generation) == (SupervisorState.RUNNING, 3, 1) and len(launched) == 1
    assert b.runs == {} and b.state == SupervisorState.STANDBY


def test_the_lock_is_not_held_across_a_take_overs_wait(
    launched: list[CopyTaskSpec], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a take-over waits for the previous holder's last commit, the flow's control jobs run (its lock is free)."""
    monkeypatch.setattr(takeover, "TAKEOVER_MARGIN_S", 0.0)
    monkeypatch.setattr(supervision, "TAKEOVER_MARGIN_S", 0.0, raising=False)
    flow = StubFlow("A->B")
    sup = FlowSupervisor(flow, object(), RecordingGrantServer(), StubLease(7, safe_at=time.monotonic() + 0.5))  # type: ignore[arg-type]
    sup.state = SupervisorState.STANDBY
    sup.tick()
    assert sup.background.pending
    with flow.held(wait_s=0) as held:
        assert held  # a control job of the flow would run
    settle(sup)
    assert sup.state == SupervisorState.RUNNING


@pytest.mark.parametrize("previous", ["another-instance", "this-instance"])
def test_a_take_over_reads_the_positions_once_the_previous_holders_last_commit_landed(
    previous: str, launched: list[CopyTaskSpec], monkeypatch: pytest.MonkeyPatch
) -> None:
    """engine-audit-2 N5/N10: the previous holder's last commit (position 0 -> 40) lands while the new holder
    waits for safe_at. A take-over after another instance's holding reads mm2-offsets only once safe_at plus
    a margin passed: its task starts at 40, and produces nothing before its first grant. Before, it read at
    once (0) and its task copied 0..39 again, alongside the previous holder's last copies."""
    monkeypatch.setattr(takeover, "TAKEOVER_MARGIN_S", 0.1)
    monkeypatch.setattr(supervision, "TAKEOVER_MARGIN_S", 0.1, raising=False)
    flow = StubFlow("A->B")
    safe_at = time.monotonic() + 0.3
    lease = StubLease(9, safe_at=safe_at)
    sup = FlowSupervisor(flow, object(), RecordingGrantServer(), lease)  # type: ignore[arg-type]
    sup.state = SupervisorState.STANDBY
    if previous == "this-instance":
        sup.epoch = 8  # this instance held epoch 8, its tasks ended: nothing of another holder to wait for
        lease.claimed_only_by_self = lambda after, upto: True  # type: ignore[method-assign]
    landed = threading.Timer(0.2, lambda: setattr(flow, "committed", 40))  # lands before safe_at
    landed.start()
    try:
        sup.tick()
        settle(sup)
    finally:
        landed.cancel()
    (spec,) = launched
    if previous == "another-instance":
        assert flow.reads and flow.reads[0] >= safe_at + 0.1
        assert spec.partitions[0].start == 40 and spec.after_other_holder
    else:
        assert spec.partitions[0].start == 0 and not spec.after_other_holder  # started at once
    assert (sup.state, sup.epoch) == (SupervisorState.RUNNING, 9)
