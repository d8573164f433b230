"""A flow's supervisor follows its lease epoch by epoch (stub flow, channel and lease: no broker, no Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from mirrorspark.replication.engine import FlowSupervisor

pytestmark = pytest.mark.unit


class StubLease:
    def __init__(self) -> None:
        self.held, self.epoch, self.failure = False, 0, None

    def holds(self, epoch: int) -> bool:
        return self.held and self.epoch == epoch


class StubChannel:
    address = ("127.0.0.1", 0)

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def grant(self, flow: str, generation: int, seconds: float) -> None:
        self.calls.append(("grant", generation))

    def abort(self, flow: str, generation: int) -> None:
        self.calls.append(("abort", generation))


class StubProgress:
    def poll(self, **_kw: Any) -> bool:
        return False


class StubFlow:
    name = "A->B"
    halted = None
    order: tuple[tuple[str, int], ...] = (("t", 0),)

    def __init__(self) -> None:
        self.reports = StubProgress()
        self.reloads = 0

    def reload_positions(self) -> None:
        self.reloads += 1

    def stream_tasks(self, generation: int, address: Any) -> list[Any]:
        return []  # no Spark task: the supervisor's lease logic alone


def test_a_lease_lost_and_taken_again_between_two_ticks_restarts_under_the_new_epoch() -> None:
    """The running generation was granted under epoch 5; the lease is lost and taken again (epoch 9)
    before the next tick: the old generation is aborted, then a new one starts from the committed
    positions under epoch 9 (granted again), instead of running on with no grant (a stalled flow)."""
    lease, channel, flow = StubLease(), StubChannel(), StubFlow()
    sup = FlowSupervisor(flow, object(), channel, lease)  # type: ignore[arg-type]
    sup.state = "standby"  # what begin() leaves after starting the lease
    lease.held, lease.epoch = True, 5
    sup.tick()
    assert (sup.state, sup.epoch, sup.generation) == ("running", 5, 1) and flow.reloads == 1
    lease.epoch = 9  # lost and re-acquired since the last tick: still held, under another epoch
    sup.tick()
    assert sup.state == "standby" and ("abort", 1) in channel.calls
    sup.tick()
    assert (sup.state, sup.epoch, sup.generation) == ("running", 9, 2) and flow.reloads == 2
    assert channel.calls[-1] == ("grant", 2)
