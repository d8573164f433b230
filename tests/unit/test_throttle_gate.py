"""A copy task's throttle gate (replication/task/throttle_gate.py): runs of a burst, waits that serve the task."""

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
    assert g.pass_through()
    g.hold([Msg(b"", b"x" * 100)] * 3)
    assert len(g.release()) == 3 and not task.served


def test_with_a_share_records_go_a_burst_at_a_time_at_the_rate() -> None:
    task = Task(10_000)  # a burst of 1000 bytes
    g = gate(task)
    assert not g.pass_through()
    g.hold([Msg(None, b"x" * 100) for _ in range(50)])  # 5000 bytes
    runs = []
    while g.held:
        runs.append(len(g.release()))
    assert runs == [10, 10, 10, 10, 10]
    assert task.now == pytest.approx(0.4)  # the first burst at once, then 1000 bytes per 0.1 s
    assert max(task.served) <= WAIT_STEP_S
    assert g.throttled_s == pytest.approx(0.4) and g.sent_bytes == 5000


def test_a_grant_state_other_than_open_ends_the_wait_and_keeps_the_records() -> None:
    task = Task(1000)
    g = gate(task)
    g.hold([Msg(None, b"x" * 1000) for _ in range(2)])
    assert len(g.release()) == 1  # the full bucket's 100 bytes, then 0.9 s of debt
    task.go_on = False
    assert g.release() == [] and len(g.held) == 1 and g.sent_bytes == 1000


def test_a_lifted_share_lets_everything_held_through() -> None:
    task = Task(1000)
    g = gate(task)
    g.hold([Msg(None, b"x" * 500) for _ in range(10)])
    assert len(g.release()) == 1
    task.rate = 0
    assert len(g.release()) == 9 and g.pass_through()
