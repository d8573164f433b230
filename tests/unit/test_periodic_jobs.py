"""Each component declares its periodic jobs; the driver registers them under the flow's lock (issue #38 item 3).

MM2's connectors schedule their own jobs in ``start()``; here each declares them (``jobs()``) and the
:class:`~mirrorspark.replication.driver.Replicator` only registers them (fakes: no broker, no Spark).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from fakes import two_clusters
from mirrorspark.replication.connector.scheduler import Job, PeriodicJob, Scheduler
from mirrorspark.replication.driver import Replicator

pytestmark = pytest.mark.unit

T0 = 1000.0

# (scheduler, job, interval s, first run s after registration), in registration order: the wiring before #38
EVERY_JOB = [
    ("control", "publish totals A->B", 5.0, 5.0),
    ("control", "sync topic configs A->B", 600.0, 600.0),
    ("control", "sync topic ACLs A->B", 600.0, 0.0),
    ("control", "refresh topics A->B", 600.0, 600.0),
    ("control", "list end offsets A->B", 5.0, 5.0),
    ("control", "publish totals B->A", 5.0, 5.0),
    ("control", "sync topic ACLs B->A", 600.0, 0.0),
    ("control", "refresh topics B->A", 600.0, 600.0),
    ("control", "list end offsets B->A", 5.0, 5.0),
    ("control", "publish metrics A->B", 5.0, 0.5),
    ("control", "publish metrics B->A", 5.0, 0.5),
    ("control", "checkpoints A->B", 60.0, 60.0),
    ("control", "sync group offsets A->B", 60.0, 60.0),
    ("control", "checkpoints B->A", 60.0, 60.0),
    ("control", "refresh groups B->A", 600.0, 600.0),
    ("control", "sync group offsets B->A", 60.0, 60.0),
    ("heartbeats", "heartbeats A->B", 1.0, 0.0),
    ("heartbeats", "heartbeats B->A", 1.0, 0.0),
    ("heartbeats", "follow throttle A->B", 1.0, 0.0),
    ("heartbeats", "follow throttle B->A", 1.0, 0.0),
    ("failover", "failover watch A->B", 5.0, 5.0),
    ("failover", "failover watch B->A", 5.0, 5.0),
]


def started(monkeypatch: pytest.MonkeyPatch, extra: str) -> tuple[Replicator, dict[str, object]]:
    """A replicator of ``A->B`` (and whatever ``extra`` enables) started on fakes at clock ``T0``.

    Returns it and the lock each job was registered with, by job name; no scheduler thread runs.
    """
    cfg, a, b, clients = two_clusters(extra)
    a.create_topic("orders", 1)
    b.create_topic("payments", 1)
    r = Replicator(cfg, clients=clients)
    r.control, r.background, r.failover = (Scheduler(clock=lambda: T0) for _ in range(3))
    for s in (r.background, r.failover):
        monkeypatch.setattr(s, "start", lambda **_: None)
    monkeypatch.setattr(r, "join_leases", lambda: None)  # the lease group needs a real coordinator
    locks: dict[str, object] = {}
    add_jobs = Scheduler.add_jobs

    def recorded(self: Scheduler, component: Any, *, lock: Any = None) -> list[Job]:
        jobs = add_jobs(self, component, lock=lock)
        locks.update((j.name, lock) for j in jobs)
        return jobs

    monkeypatch.setattr(Scheduler, "add_jobs", recorded)
    r.start()
    return r, locks


def registered(r: Replicator) -> list[tuple[str, str, float, float]]:
    return [
        (label, j.name, j.interval_s, j.next_run - T0)
        for label, s in (("control", r.control), ("heartbeats", r.background), ("failover", r.failover))
        for j in s.jobs
    ]


def test_the_driver_registers_every_components_declared_jobs_as_it_wired_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Names, intervals, first runs and order as the hand wiring had them; control jobs hold their flow's lock.

    A checkpoint emitter's jobs hold the emitter's own lock (its commit follower's too).
    """
    r, locks = started(
        monkeypatch,
        "B->A.enabled = true\nsync.topic.acls.enabled = true\nsync.group.offsets.enabled = true\n"
        "A->B.refresh.groups.enabled = false\nB->A.sync.topic.configs.enabled = false\n",
    )
    try:
        assert registered(r) == EVERY_JOB
        by_flow = {f.name: f.lock for f in r.flows}
        by_emitter = {cp.name: cp.lock for cp in r.checkpoints}
        emitter_jobs = ("checkpoints ", "refresh groups ", "sync group offsets ")
        for label, name, _, _ in EVERY_JOB:
            flow = name.rsplit(" ", 1)[1]
            own = by_emitter[flow] if name.startswith(emitter_jobs) else by_flow[flow]
            expected = own if label == "control" else None
            assert locks[name] is expected, name
    finally:
        r.close()


def test_disabled_features_declare_no_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """With syncs, refreshes, checkpoints and heartbeats off, a flow keeps its totals, lag, metrics, throttle, watch."""
    r, _ = started(
        monkeypatch,
        "sync.topic.configs.enabled = false\nsync.topic.acls.enabled = false\nrefresh.topics.enabled = false\n"
        "emit.checkpoints.enabled = false\nemit.heartbeats.enabled = false\n",
    )
    try:
        assert [name for _, name, _, _ in registered(r)] == [
            "publish totals A->B",
            "list end offsets A->B",
            "publish metrics A->B",
            "follow throttle A->B",
            "failover watch A->B",
        ]
    finally:
        r.close()


class Declares:
    """A component with two jobs that note whether another thread could take ``lock`` while they ran."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self.free_while_running: list[bool] = []

    def jobs(self) -> list[PeriodicJob]:
        return [PeriodicJob("first", 2.0, self.probe, initial_delay_s=2.0), PeriodicJob("second", 3.0, self.probe)]

    def probe(self) -> int:
        taken: list[bool] = []

        def take() -> None:
            taken.append(self.lock.acquire(blocking=False))
            if taken[0]:
                self.lock.release()

        t = threading.Thread(target=take)
        t.start()
        t.join()
        self.free_while_running.append(taken[0])
        return 42  # a job's result is dropped


def test_add_jobs_registers_the_declared_jobs_in_order_each_holding_the_lock() -> None:
    clock = [0.0]
    scheduler = Scheduler(clock=lambda: clock[0])
    lock = threading.RLock()
    component = Declares(lock)
    jobs = scheduler.add_jobs(component, lock=lock)
    assert [(j.name, j.interval_s, j.next_run) for j in jobs] == [("first", 2.0, 2.0), ("second", 3.0, 0.0)]
    assert scheduler.run_pending() == 1 and component.free_while_running == [False]
    clock[0] = 2.0
    assert scheduler.run_pending() == 1 and component.free_while_running == [False, False]
    unlocked = Declares(lock)
    Scheduler().add_jobs(unlocked)[1].fn()
    assert unlocked.free_while_running == [True]
