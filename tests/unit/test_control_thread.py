"""Control jobs never hold up supervision (issue #28 item 3): they run on a thread of their own, each
holding its flow's lock; the driver loop and a flow's supervisor wait for neither (fakes: no broker, no Spark).

Before, the driver loop ran the control jobs on its own thread, supervising between two jobs: a topic
refresh blocked 25 s on a stopped target held the flow's lease loss unanswered for as long (a 10 s
lifetime-totals write delayed it 8.6 s in the fault run of issue #23).
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
from test_supervisor_lease import StubFlow, StubGrants, StubLease

from fakes import two_clusters
from mirrorspark.replication.driver import FlowStats, Replicator
from mirrorspark.replication.worker.supervisor import FlowSupervisor

pytestmark = pytest.mark.unit


class TickingWorker:
    """The driver loop's view of the copy tasks: counts its supervision rounds."""

    driver_lost = None
    failed: list[Any] = []

    def __init__(self, supervisors: list[Any]) -> None:
        self.supervisors = supervisors
        self.ticks = 0

    def tick(self) -> None:
        self.ticks += 1


class Stuck:
    """A control job of ``flow`` stuck in a call to a cluster that stopped answering, until released."""

    def __init__(self, flow: Any) -> None:
        self.flow, self.inside, self.release = flow, threading.Event(), threading.Event()

    def __call__(self) -> None:
        with self.flow.held():
            self.inside.set()
            self.release.wait(30)


def ticks_after(worker: TickingWorker, n: int, timeout_s: float = 10.0) -> bool:
    """Whether the loop ran ``n`` more supervision rounds within ``timeout_s``."""
    target, deadline = worker.ticks + n, time.monotonic() + timeout_s
    while worker.ticks < target and time.monotonic() < deadline:
        time.sleep(0.01)
    return worker.ticks >= target


def test_the_driver_loop_supervises_on_while_a_control_job_is_stuck(monkeypatch: pytest.MonkeyPatch) -> None:
    """A control job stuck on an unreachable target: the loop still supervises every tick and reports
    the flow's last stats (not waiting for the job's lock); a stop ends the loop at once, and the run's
    close waits for the job before it releases the flow's clients."""
    cfg, a, _b, clients = two_clusters()
    a.create_topic("orders", 1)
    reports: list[list[FlowStats]] = []
    replicator = Replicator(cfg, clients=clients, on_stats=reports.append)
    monkeypatch.setattr(replicator, "join_leases", lambda: None)  # the lease group needs a real coordinator
    replicator.start()
    [flow] = replicator.flows
    stuck = Stuck(flow)
    replicator.control.add("refresh topics A->B (stuck)", 0, stuck)
    worker = TickingWorker([SimpleNamespace(name=flow.name, state="running")])
    loop = threading.Thread(target=replicator._loop, args=(worker,), kwargs={"until_caught_up": False}, daemon=True)
    try:
        loop.start()
        assert stuck.inside.wait(10), "the control jobs did not run"
        assert ticks_after(worker, 20), f"the driver loop stopped supervising while a control job ran ({worker.ticks})"
        assert reports and [s.flow for s in reports[-1]] == ["A->B"]  # the report did not wait for the job either
        replicator.request_stop()
        loop.join(5)
        assert not loop.is_alive(), "the loop waited for the stuck job to end"
    finally:
        replicator.request_stop()
        stuck.release.set()
        replicator.close()
    assert not any(t.name == "mirrorspark-control" for t in threading.enumerate())


def test_a_lease_loss_is_acted_on_while_a_control_job_holds_the_flow() -> None:
    """Another instance took the lease while a job of the flow holds its lock: the next tick aborts the running
    generation all the same. The take-over of a lease held again (on the flow's thread) waits for the job (it
    reads the flow's positions under its lock), and happens as soon as the job ends."""
    lease, grants, flow = StubLease(), StubGrants(), StubFlow()
    sup = FlowSupervisor(flow, object(), grants, lease)  # type: ignore[arg-type]
    sup.state, lease.held, lease.epoch = "standby", True, 5
    sup.tick()
    assert sup.background.join(5)  # the take-over runs on the flow's thread (engine-audit-2 N4)
    assert (sup.state, sup.generation) == ("running", 1)
    job = Stuck(flow)
    threading.Thread(target=job, daemon=True).start()
    try:
        assert job.inside.wait(5)
        lease.held, lease.standby = False, True  # back in the group without the lease: another instance holds it
        sup.tick()
        assert sup.state == "standby" and ("abort", 1) in grants.calls
        lease.held, lease.standby, lease.epoch = True, False, 8
        sup.tick()
        assert (sup.state, sup.generation, flow.reloads) == ("standby", 1, 1)  # the take-over waits for the job
    finally:
        job.release.set()
    deadline = time.monotonic() + 5
    while sup.state != "running" and time.monotonic() < deadline:
        sup.tick()
        time.sleep(0.01)
    assert (sup.state, sup.epoch, sup.generation, flow.reloads) == ("running", 8, 2, 2)
