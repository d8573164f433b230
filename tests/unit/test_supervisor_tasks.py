"""What a flow's supervisor does when a copy task's job ends (stub flow, grants and jobs: no broker, no Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from fakes import FlowLockStub, run_flow_jobs_inline
from mirrorspark.errors import DataPathError, RecordTooLargeError
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionAssignment, TaskOutcome, TaskResult
from mirrorspark.replication.worker import supervisor as supervision
from mirrorspark.replication.worker.supervisor import FlowSupervisor, SupervisorState

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _inline_flow_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    run_flow_jobs_inline(monkeypatch)  # take-overs and joins end within the tick that starts them


def spec(index: int, generation: int = 1) -> CopyTaskSpec:
    return CopyTaskSpec(
        flow="A->B",
        source="A",
        target="B",
        task_index=index,
        generation=generation,
        consumer_conf={},
        producer_conf={},
        commit_conf={},
        syncs_conf=None,
        offsets_topic="mm2-offsets.A.internal",
        offsets_partitions=25,
        syncs_topic="mm2-offset-syncs.B.internal",
        progress_topic="mm2-task-progress.A.internal",
        partitions=(PartitionAssignment("t", index, "A.t", 0),),
        offset_lag_max=100,
        flush_interval_s=1.0,
        grant_address=("127.0.0.1", 1, "token"),
    )


class StubJob:
    """A copy task's Spark job that already ended, with a result or an error."""

    def __init__(self, task: CopyTaskSpec, result: TaskResult | None = None, error: Exception | None = None) -> None:
        self.spec, self.result, self.error = task, result, error

    def is_alive(self) -> bool:
        return False

    def join(self, timeout: float | None = None) -> None:
        return None


class StubGrants:
    address = ("127.0.0.1", 1, "token")

    def grant(self, *_: Any) -> None: ...

    def stop(self, *_: Any) -> None: ...

    def abort(self, *_: Any) -> None: ...

    def forget(self, *_: Any) -> None: ...

    def throttle(self, *_: Any) -> None: ...


class StubReports:
    def poll(self, **_: Any) -> int:
        return 0


class StubFlow(FlowLockStub):
    name = "A->B"
    halted = None
    exactly_once = False
    order = [("t", 0), ("t", 1)]
    resets = 0

    @property
    def assignment(self) -> Any:
        return tuple(self.order), self.resets

    def __init__(self) -> None:
        self.reports = StubReports()
        self.checked: list[Any] = []
        self.config = type("Cfg", (), {"tasks_max": 2})()

    def task_specs(self, generation: int, _address: Any, *, stop_at: Any = None, epoch: int = 0) -> list[CopyTaskSpec]:
        return [spec(0, generation), spec(1, generation)]

    def check_positions(self, keys: Any) -> list[Any]:
        self.checked.append(tuple(keys))
        return []


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> FlowSupervisor:
    launched: list[CopyTaskSpec] = []
    monkeypatch.setattr(FlowSupervisor, "_launch", lambda self, s: launched.append(s))
    sup = FlowSupervisor(StubFlow(), object(), StubGrants(), None, stop_at={("t", 0): 10, ("t", 1): 10})  # type: ignore[arg-type]
    sup.start()
    sup.launched = launched  # type: ignore[attr-defined]
    return sup


def ended(sup: FlowSupervisor, index: int, **kw: Any) -> None:
    sup.runs[index] = StubJob(spec(index, sup.generation), **kw)  # type: ignore[assignment]


def test_a_bounded_copys_task_that_caught_up_is_not_restarted(started: FlowSupervisor) -> None:
    sup = started
    for i in (0, 1):
        ended(sup, i, result=TaskResult("A->B", i, 1, TaskOutcome.CAUGHT_UP, records=10))
    sup.tick()
    assert sup.runs == {} and sup.next_start == {} and sup.done()
    assert sup.state == SupervisorState.RUNNING and sup.restarts == 0


def test_a_stopped_or_lost_task_is_restarted(started: FlowSupervisor) -> None:
    sup = started
    ended(sup, 0, result=TaskResult("A->B", 0, 1, TaskOutcome.STOPPED, records=3))
    ended(sup, 1, error=DataPathError("copy task 1 was lost with its Spark executor", retriable=True))
    sup.tick()
    assert 0 not in sup.next_start  # restarted at once, in this tick
    assert sup.restarts == 1 and [s.task_index for s in sup.launched[-1:]] == [0]  # type: ignore[attr-defined]
    assert sup.next_start[1] > 0 and sup.task_failures.by_task == {1: 1}  # after its backoff
    assert not sup.done()


def test_a_task_out_of_range_has_its_positions_checked_then_restarts(started: FlowSupervisor) -> None:
    sup = started
    ended(sup, 1, result=TaskResult("A->B", 1, 1, TaskOutcome.OUT_OF_RANGE, out_of_range=(("t", 1),)))
    sup.tick()
    assert sup.flow.checked == [(("t", 1),)]  # type: ignore[attr-defined]
    assert sup.restarts == 1


def test_an_error_no_retry_can_fix_fails_the_flow_at_once(started: FlowSupervisor) -> None:
    sup = started
    ended(sup, 0, error=RecordTooLargeError("record t-0@5 is larger than remote topic 'A.t' accepts"))
    sup.tick()
    assert sup.state == SupervisorState.FAILED and isinstance(sup.error, RecordTooLargeError)


def test_a_task_failing_again_and_again_fails_the_flow(
    started: FlowSupervisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    sup = started
    monkeypatch.setattr(supervision, "BACKOFF_INITIAL_S", 0.0)
    monkeypatch.setattr(supervision, "BACKOFF_MAX_S", 0.0)
    for _ in range(supervision.MAX_FAILURES):
        ended(sup, 0, error=DataPathError("writing 'A.t' failed: Local: Message timed out", retriable=True))
        sup.tick()
        if sup.state == SupervisorState.FAILED:
            break
    assert sup.state == SupervisorState.FAILED and sup.task_failures.worst == supervision.MAX_FAILURES


def test_a_recreated_topic_starts_a_new_generation(started: FlowSupervisor) -> None:
    """engine-audit F2: same partitions, a new topic: the tasks still copying the old one are stopped and restarted."""
    started.flow.resets += 1  # type: ignore[attr-defined]
    started.tick()
    assert started.generation == 2 and [s.generation for s in started.launched] == [1, 1, 2, 2]  # type: ignore[attr-defined]


def test_a_restart_says_how_the_assignment_changed() -> None:
    """The log line of a restart names what changed, so an operator sees why the copy tasks restarted."""
    from mirrorspark.replication.worker.restart_policy import assignment_change as change

    old = ((("t", 0), ("t", 1)), 0)
    assert change(old, ((("heartbeats", 0), ("t", 0), ("t", 1)), 0)) == (
        "assignment changed: 1 partition added (heartbeats-0)"
    )
    grown = ((("t", 0), ("t", 1), ("t", 2), ("t", 3), ("u", 0)), 1)
    assert change(old, grown) == "assignment changed: 3 partitions added (t-2, t-3, u-0), 1 topic(s) re-created"
    assert change(grown, ((("t", 0),), 1)) == "assignment changed: 4 partitions dropped (t-1, t-2, t-3, ...)"
