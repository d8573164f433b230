"""A copy task's throttle gate (replication/task/throttle_gate.py): polls of a burst, waits that serve the task."""

from __future__ import annotations

from typing import Any

import pytest

from mirrorspark.replication.task.throttle_gate import WAIT_STEP_S, ThrottleGate, record_bytes

pytestmark = pytest.mark.unit


class Msg:
    def __init__(self, key: bytes | None, value: bytes | None, headers: Any = None) -> None:
        self._k, self._v, self._h = key, value, headers

    def key(self) -> bytes | None:
        return self._k

    def value(self) -> bytes | None:
        return self._v

    def headers(self) -> Any:
        return self._h


class Task:
    """The clock, the share and the serving of a task: ``serve`` advances the clock by the wait asked."""

    def __init__(self, rate: int) -> None:
        self.now = 0.0
        self.rate = rate
        self.served: list[float] = []
        self.go_on = True

    def serve(self, wait_s: float) -> bool:
        self.served.append(wait_s)
        self.now += wait_s
        return self.go_on


def gate(task: Task) -> ThrottleGate:
    return ThrottleGate(lambda: task.rate, task.serve, clock=lambda: task.now)


def test_record_bytes_are_key_value_header_names_and_values() -> None:
    assert record_bytes(Msg(b"kk", b"vvv", [("h", b"12"), ("n", None)])) == 2 + 3 + 1 + 2 + 1
    assert record_bytes(Msg(None, None, {"ab": "c"})) == 3


def test_without_a_share_the_gate_is_not_in_the_way() -> None:
    task = Task(0)
    g = gate(task)
    assert g.pass_through() and not task.served


def test_with_a_share_polls_wait_for_the_bucket_and_take_a_burst_of_records() -> None:
    task = Task(10_000)  # a burst of 1000 bytes
    g = gate(task)
    assert not g.pass_through()
    assert g.admit() == 1  # no record size measured yet
    g.spend([Msg(None, b"x" * 100)])
    polls = []
    while g.sent_bytes < 5100:
        most = g.admit()
        polls.append(most)
        g.spend([Msg(None, b"x" * 100) for _ in range(most)])
    assert polls == [10] * 5
    assert task.now == pytest.approx(0.31)  # the full bucket's burst at once, then 1000 bytes per 0.1 s
    assert max(task.served) <= WAIT_STEP_S
    assert g.throttled_s == pytest.approx(0.31) and g.sent_bytes == 5100


def test_a_grant_state_other_than_open_ends_the_wait_without_a_poll() -> None:
    task = Task(1000)
    g = gate(task)
    g.pass_through()
    g.spend([Msg(None, b"x" * 1000)])  # 0.9 s of debt
    task.go_on = False
    assert g.admit() == 0 and len(task.served) == 1


def test_a_lifted_share_lets_the_task_poll_as_before() -> None:
    task = Task(1000)
    g = gate(task)
    g.pass_through()
    g.spend([Msg(None, b"x" * 5000)])
    task.rate = 0
    assert g.pass_through() and g.bucket.wait_s() == 0.0


# --------------------------------------------------------------------------- in the copy task's loop


def test_a_throttled_task_copies_everything_at_its_share_and_a_stop_ends_its_wait() -> None:
    from test_copy_task_runner import Task as CopyTask
    from test_copy_task_runner import step

    from mirrorspark.replication.task.grant_client import GrantState
    from mirrorspark.replication.task.spec import TaskOutcome

    t = CopyTask(partitions=2, records=20)  # records of 2 + 4 or 5 bytes ("k0", "v0-0")
    t.grants.rate = 40  # bytes/s: a burst of 4 bytes, one record a run
    serve = t.data.poll

    def poll(timeout: float = 0) -> int:
        t.now += timeout  # a throttled wait's step passes on the task's clock
        return serve(timeout)

    t.data.poll = poll  # type: ignore[method-assign]

    def hook(task: CopyTask, turn: int) -> None:
        if len(task.b.records("A.t", 0)) + len(task.b.records("A.t", 1)) == 40:
            task.grants.state = GrantState.STOP

    assert step(t, hook, turns=2000) == TaskOutcome.STOPPED
    assert [r.value for r in t.b.records("A.t", 0)] == [r.value for r in t.a.records("t", 0)]
    sent, held = t.grants.spent
    assert sent == sum(len(r.key or b"") + len(r.value or b"") for p in (0, 1) for r in t.a.records("t", p))
    assert held == pytest.approx((sent - 4) / 40, rel=0.05)  # the first burst at once, then at the share
    assert t.committed() == {0: 19, 1: 19}

    stopped = CopyTask(partitions=1, records=20)
    stopped.grants.rate = 2  # a record takes 3 s: the stop comes while the task waits for the second
    acks = stopped.data.poll

    def waits(timeout: float = 0) -> int:
        stopped.now += timeout
        return acks(timeout)

    stopped.data.poll = waits  # type: ignore[method-assign]

    def stop_soon(task: CopyTask, turn: int) -> None:
        if task.now > 3:
            task.grants.state = GrantState.STOP

    assert step(stopped, stop_soon, turns=2000) == TaskOutcome.STOPPED
    copied = len(stopped.b.records("A.t", 0))
    assert 0 < copied < 20 and stopped.committed() == {0: copied - 1}  # only what was produced is committed
