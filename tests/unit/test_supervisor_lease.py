"""A flow's supervisor follows its lease epoch by epoch (stub flow, grants and lease: no broker, no Spark)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from fakes import FlowLockStub, run_flow_jobs_inline
from mirrorspark.errors import ClusterError, DataPathError
from mirrorspark.replication.worker import supervisor as supervisor_module
from mirrorspark.replication.worker.supervisor import RECLAIM_S, FlowSupervisor
from mirrorspark.replication.worker.worker import Worker

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _inline_flow_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    run_flow_jobs_inline(monkeypatch)  # take-overs and joins end within the tick that starts them


class StubLease:
    def __init__(self) -> None:
        self.held, self.epoch, self.failure, self.standby = False, 0, None, False
        self.safe_at = 0.0  # nothing to wait out before taking over

    def holds(self, epoch: int) -> bool:
        return self.held and self.epoch == epoch

    def grant(self, epoch: int, seconds: float) -> float | None:
        return 1e9 if self.holds(epoch) else None

    def may_grant(self, epoch: int) -> bool:
        return self.holds(epoch)

    def void_grants(self) -> None:
        pass

    own: frozenset[int] = frozenset()  # epochs of claims this instance wrote whose commit failed

    def claimed_only_by_self(self, after: int, upto: int) -> bool:
        return all(e in self.own for e in range(after + 1, upto))


class StubGrants:
    address = ("127.0.0.1", 0)

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def grant(self, flow: str, generation: int, deadline: float) -> None:
        self.calls.append(("grant", generation))

    def abort(self, flow: str, generation: int) -> None:
        self.calls.append(("abort", generation))

    def throttle(self, *_: Any) -> None: ...


class StubProgress:
    def poll(self, **_kw: Any) -> bool:
        return False


class StubFlow(FlowLockStub):
    name = "A->B"
    halted = None
    exactly_once = False
    order: tuple[tuple[str, int], ...] = (("t", 0),)
    assignment = (order, 0)

    task_count_seen = 0
    fence_count = 1
    config = SimpleNamespace(tasks_max=1)

    def __init__(self) -> None:
        self.reports = StubProgress()
        self.reloads = 0

    def reload_positions(self) -> None:
        self.reloads += 1

    def task_specs(self, generation: int, address: Any, *, stop_at: Any = None, epoch: int = 0) -> list[Any]:
        return []  # no Spark task: the supervisor's lease logic alone


def test_a_lease_lost_and_taken_again_between_two_ticks_restarts_under_the_new_epoch() -> None:
    """The running generation was granted under epoch 5; the lease is lost and taken again (epoch 9)
    before the next tick: the old generation is aborted, then a new one starts from the committed
    positions under epoch 9 (granted again), instead of running on with no grant (a stalled flow)."""
    lease, grants, flow = StubLease(), StubGrants(), StubFlow()
    sup = FlowSupervisor(flow, object(), grants, lease)  # type: ignore[arg-type]
    sup.state = "standby"  # what begin() leaves after starting the lease
    lease.held, lease.epoch = True, 5
    sup.tick()
    assert (sup.state, sup.epoch, sup.generation) == ("running", 5, 1) and flow.reloads == 1
    lease.epoch = 9  # lost and re-acquired since the last tick: still held, under another epoch
    sup.tick()
    assert sup.state == "standby" and ("abort", 1) in grants.calls
    sup.tick()
    assert (sup.state, sup.epoch, sup.generation) == ("running", 9, 2) and flow.reloads == 2
    assert grants.calls[-1] == ("grant", 2)


def running(lease: StubLease, grants: StubGrants, flow: StubFlow, epoch: int) -> FlowSupervisor:
    sup = FlowSupervisor(flow, object(), grants, lease)  # type: ignore[arg-type]
    sup.state, lease.held, lease.epoch = "standby", True, epoch
    sup.tick()
    assert (sup.state, sup.epoch, sup.generation) == ("running", epoch, 1)
    return sup


def test_a_lease_taken_back_under_the_next_epoch_lets_the_running_generation_commit() -> None:
    """The target stopped (the lease group lives there): the lease is lost, then taken back under the very
    next epoch (no other holder in between). At least once, the running tasks waited without committing;
    they are granted again and commit what the target acknowledged, not aborted and copied again by a new
    generation (issue #23: "the target stop lost the lease and ended the tasks without committing")."""
    lease, grants, flow = StubLease(), StubGrants(), StubFlow()
    sup = running(lease, grants, flow, 5)
    lease.held = False  # the lease thread found the membership lost
    sup.tick()
    sup.tick()
    assert sup.state == "running" and ("abort", 1) not in grants.calls
    lease.held, lease.epoch = True, 6  # taken back: the next claim is ours
    sup.tick()
    assert (sup.state, sup.epoch, sup.generation, flow.reloads) == ("running", 6, 1, 1)
    assert grants.calls[-1] == ("grant", 1) and ("abort", 1) not in grants.calls
    lease.held = False  # lost again; our claim 7 is written but its commit fails (NOT_COORDINATOR), claim 8 holds
    sup.tick()
    lease.held, lease.epoch, lease.own = True, 8, frozenset({7, 8})
    sup.tick()
    assert (sup.state, sup.epoch, sup.generation) == ("running", 8, 1) and ("abort", 1) not in grants.calls


@pytest.mark.parametrize("case", ["another-holder-between", "standby", "exactly-once", "too-long"])
def test_a_lease_lost_for_good_aborts_the_running_generation(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another claim in between (epoch 7, not 6), back in the group as a standby (another instance holds the
    lease), exactly-once (the open transactions were aborted), or no lease back within RECLAIM_S: the running
    generation is aborted and a new one starts at the take-over."""
    lease, grants, flow = StubLease(), StubGrants(), StubFlow()
    flow.exactly_once = case == "exactly-once"
    monkeypatch.setattr(supervisor_module, "fence_flow", lambda _flow, _count: 0.0)  # no producer in a stub
    sup = running(lease, grants, flow, 5)
    lease.held = False
    lease.standby = case == "standby"
    sup.tick()
    lease.standby = False
    if case == "too-long":
        sup._lost_at = time.monotonic() - RECLAIM_S - 1
        sup.tick()
    if case == "another-holder-between":
        lease.held, lease.epoch = True, 7
        sup.tick()
    assert sup.state == "standby" and ("abort", 1) in grants.calls
    lease.held, lease.epoch = True, 8
    sup.tick()
    assert (sup.state, sup.epoch, sup.generation) == ("running", 8, 2)


class FailingReloadFlow(StubFlow):
    """``mm2-offsets`` cannot be read for the first ``failures`` take-overs (its leader just died)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def reload_positions(self) -> None:
        if self.failures:
            self.failures -= 1
            raise ClusterError("reading mm2-offsets failed: Local: Timed out", retriable=True)
        super().reload_positions()


def test_a_cluster_error_while_taking_over_is_retried_after_a_backoff() -> None:
    """The take-over's read of the committed offsets fails twice (the target's broker died): the tick that
    sees it logs and returns, the flow stays standby, and the take-over is tried again once a backoff passed
    (it runs on the flow's thread: engine-audit-2 N4). Before, the error left the tick and ended the driver
    loop, which supervises every flow: nothing was copied any more."""
    lease, flow = StubLease(), FailingReloadFlow(failures=2)
    now = [1000.0]
    sup = FlowSupervisor(flow, object(), StubGrants(), lease, clock=lambda: now[0])  # type: ignore[arg-type]
    sup.state, lease.held, lease.epoch = "standby", True, 3
    for _ in range(4):  # the failure seen, then backed off: no retry at every tick
        sup.tick()
    assert (sup.state, sup.generation, flow.failures) == ("standby", 0, 1)
    now[0] += supervisor_module.READ_RETRY_INITIAL_S
    sup.tick()
    sup.tick()
    assert (sup.state, sup.generation, flow.failures) == ("standby", 0, 0)
    now[0] += 2 * supervisor_module.READ_RETRY_INITIAL_S
    sup.tick()
    assert (sup.state, sup.epoch, sup.generation) == ("running", 3, 1) and flow.reloads == 1


class ExplodingSupervisor:
    """A flow whose supervision raises what no supervisor retries (a bug)."""

    name = "A->C"

    def __init__(self) -> None:
        self.state, self.error, self.ticks = "running", None, 0

    def tick(self) -> None:
        self.ticks += 1
        raise KeyError("positions")

    def fail(self, error: Exception) -> None:
        self.state, self.error = "failed", error


def test_one_flows_unexpected_error_fails_that_flow_and_the_others_go_on() -> None:
    engine = Worker.__new__(Worker)  # no Spark: only tick() is exercised
    lease = StubLease()
    lease.held, lease.epoch = True, 1
    healthy = FlowSupervisor(StubFlow(), object(), StubGrants(), lease)  # type: ignore[arg-type]
    healthy.state = "standby"
    broken = ExplodingSupervisor()
    engine.supervisors = [broken, healthy]  # type: ignore[list-item]
    engine.tick()
    assert broken.state == "failed" and isinstance(broken.error, DataPathError)
    assert "KeyError" in str(broken.error)
    assert healthy.state == "running"  # ticked after the broken one


def test_failing_a_flow_aborts_its_running_generation() -> None:
    lease, grants, flow = StubLease(), StubGrants(), StubFlow()
    sup = FlowSupervisor(flow, object(), grants, lease)  # type: ignore[arg-type]
    sup.state, lease.held, lease.epoch = "standby", True, 2
    sup.tick()
    sup.fail(DataPathError("A->B: supervising failed: KeyError('positions')"))
    assert sup.state == "failed" and ("abort", 1) in grants.calls
    sup.tick()  # a failed flow is left alone
    assert sup.state == "failed" and sup.generation == 1
