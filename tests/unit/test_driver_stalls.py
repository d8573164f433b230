"""The driver loop never stalls (engine-audit F7) and a dead Spark driver JVM ends every flow at once.

Stub flow, grants, reports and jobs on an injected clock: no broker, no Spark. A stuck job's
``join(timeout)`` advances the clock by ``timeout``, as a real join of a task that does not end would.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from typing import Any

import pytest

from fakes import FlowLockStub, RecordingGrantServer, run_flow_jobs_inline
from mirrorspark.errors import ClusterError, DataPathError, SparkDriverLostError
from mirrorspark.replication.task.spec import CopyTaskSpec, PartitionAssignment
from mirrorspark.replication.worker import supervisor as supervision
from mirrorspark.replication.worker.supervisor import FlowSupervisor, SupervisorState, TaskJob
from mirrorspark.replication.worker.worker import Worker
from mirrorspark.spark_session import DriverJvmWatch, is_gateway_error, popen_probe

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _inline_flow_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    run_flow_jobs_inline(monkeypatch)  # take-overs and joins end within the tick that starts them


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


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


class StuckJob:
    """A copy task's job that does not end by itself; once cancelled it ends ``after_cancel_s`` later."""

    def __init__(self, task: CopyTaskSpec, clock: Clock, after_cancel_s: float = 0.0) -> None:
        self.spec, self.clock, self.after_cancel_s = task, clock, after_cancel_s
        self.cancelled_at: float | None = None
        self.result = self.error = None

    def is_alive(self) -> bool:
        return self.cancelled_at is None or self.clock.t < self.cancelled_at + self.after_cancel_s

    def join(self, timeout: float | None = None) -> None:
        if not self.is_alive():
            return
        wait = timeout or 0.0
        if self.cancelled_at is not None:
            wait = min(wait, self.cancelled_at + self.after_cancel_s - self.clock.t)
        self.clock.t += max(0.0, wait)

    def cancel(self) -> None:
        self.cancelled_at = self.clock.t


class EndedJob:
    def __init__(self, task: CopyTaskSpec, error: Exception | None = None) -> None:
        self.spec, self.error, self.result = task, error, None

    def is_alive(self) -> bool:
        return False

    def join(self, timeout: float | None = None) -> None:
        return None


class StubReports:
    def __init__(self, failing: bool = False) -> None:
        self.failing, self.final_polls = failing, 0

    def poll(self, *, until_end: bool = False, **_: Any) -> int:
        if until_end:
            self.final_polls += 1
            if self.failing:
                raise ClusterError("reading mm2-task-progress.A.internal failed: no leader", retriable=True)
        return 0


class StubFlow(FlowLockStub):
    name = "A->B"
    halted = None
    exactly_once = False
    order = [("t", 0), ("t", 1), ("t", 2)]

    @property
    def assignment(self) -> Any:
        return tuple(self.order), 0

    def __init__(self, reports: StubReports | None = None) -> None:
        self.reports = reports or StubReports()
        self.config = type("Cfg", (), {"tasks_max": 3})()
        self.reloads = 0
        self.reload_fails = False

    def task_specs(self, generation: int, _address: Any, *, stop_at: Any = None, epoch: int = 0) -> list[CopyTaskSpec]:
        return [spec(i, generation) for i in range(3)]

    def reload_positions(self) -> None:
        self.reloads += 1
        if self.reload_fails:
            raise ClusterError("reading mm2-offsets.A.internal failed: Local: Timed out", retriable=True)


def supervisor(
    monkeypatch: pytest.MonkeyPatch, flow: StubFlow | None = None, grants: RecordingGrantServer | None = None
) -> tuple[FlowSupervisor, Clock]:
    clock = Clock()
    monkeypatch.setattr(FlowSupervisor, "_launch", lambda self, s: None)
    sup = FlowSupervisor(flow or StubFlow(), object(), grants or RecordingGrantServer(), None, clock=clock)  # type: ignore[arg-type]
    sup.start()
    return sup, clock


# ------------------------------------------------------------------ stops and aborts under one deadline


def test_an_abort_cancels_every_stuck_task_under_one_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Audit F7: ``_abort_tasks`` joined each task for 30 s in turn: 3 stuck tasks stalled the loop 90 s."""
    sup, clock = supervisor(monkeypatch)
    jobs = [StuckJob(spec(i), clock) for i in range(3)]
    sup.runs = dict(enumerate(jobs))  # type: ignore[arg-type]
    began = clock.t
    sup.fail(DataPathError("A->B: supervising failed"))
    assert all(j.cancelled_at is not None for j in jobs) and sup.runs == {}
    assert clock.t - began <= supervision.STOP_TIMEOUT_S + supervision.CANCEL_WAIT_S


def test_a_stop_cancels_every_stuck_task_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """Audit F7: after the shared 30 s, each stuck task was cancelled and joined for 10 s in turn (30 + N x 10 s)."""
    sup, clock = supervisor(monkeypatch)
    jobs = [StuckJob(spec(i), clock, after_cancel_s=60.0) for i in range(3)]  # ignore their cancel for a minute
    sup.runs = dict(enumerate(jobs))  # type: ignore[arg-type]
    began = clock.t
    read = sup.stop_tasks()
    assert clock.t - began <= supervision.STOP_TIMEOUT_S + supervision.CANCEL_WAIT_S
    assert read  # then the tasks' last reports were read
    assert all(j.cancelled_at is not None for j in jobs) and sup.runs == {}


class ClosingSupervisor:
    """A flow's supervisor whose close waits for every other flow's close to start (a barrier)."""

    def __init__(self, name: str, barrier: threading.Barrier) -> None:
        self.name, self.barrier, self.runs, self.error = name, barrier, {}, None
        self.deadlines: list[float] = []
        self.generation, self.passed = 1, False

    def close(self, *, deadline: float | None = None) -> None:
        self.deadlines.append(deadline or 0.0)
        self.barrier.wait()  # BrokenBarrierError if the flows are stopped one after another
        self.passed = True


def test_flows_are_stopped_at_once_under_one_deadline() -> None:
    """Audit F7: the flows were stopped one after another, each with a fresh 30 s deadline and lease close."""
    barrier = threading.Barrier(3, timeout=2)
    worker = Worker.__new__(Worker)  # no Spark: only stop() is exercised
    worker.supervisors = [ClosingSupervisor(n, barrier) for n in ("A->B", "A->C", "B->C")]  # type: ignore[list-item]
    worker.grants, worker.jvm, worker._closing = RecordingGrantServer(), None, threading.Event()  # type: ignore[assignment]
    worker.grants.close = lambda: None  # type: ignore[attr-defined]
    worker.stop()
    assert all(s.passed for s in worker.supervisors)  # type: ignore[attr-defined]
    assert len({d for s in worker.supervisors for d in s.deadlines}) == 1  # type: ignore[attr-defined]


# ------------------------------------------------------------------ reads backed off, not repeated at every tick


def test_last_reports_that_cannot_be_read_are_not_read_again_at_every_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Audit F7: with no leader on the progress channel, each tick spent 10 s per dead task reading it."""
    reports = StubReports(failing=True)
    sup, clock = supervisor(monkeypatch, StubFlow(reports))
    sup.runs = {i: EndedJob(spec(i)) for i in range(3)}  # type: ignore[misc]
    for _ in range(5):
        sup.tick()  # the ClusterError is logged, the tick returns
    assert reports.final_polls == 1  # one read for the three dead tasks, then backed off
    clock.t += supervision.READ_RETRY_INITIAL_S
    sup.tick()
    sup.tick()
    assert reports.final_polls == 2  # tried again once the backoff passed, then backed off longer
    reports.failing = False
    clock.t += supervision.BACKOFF_MAX_S
    sup.tick()
    assert reports.final_polls == 3 and sup.runs == {} and set(sup.next_start) == {0, 1, 2}


def test_a_failed_offsets_reload_is_not_retried_at_every_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Audit F7: an exactly-once restart re-read mm2-offsets (up to minutes) at every tick while it failed."""
    flow = StubFlow()
    sup, clock = supervisor(monkeypatch, flow)  # started (not exactly-once: no ids to fence in a stub)
    flow.exactly_once, flow.reload_fails = True, True  # type: ignore[misc]
    sup.runs.clear()
    sup.next_start = {0: clock.t}
    for _ in range(5):
        sup.tick()
    assert flow.reloads == 1 and sup.next_start == {0: 1000.0}
    clock.t += supervision.READ_RETRY_INITIAL_S
    flow.reload_fails = False
    sup.tick()
    assert flow.reloads == 2 and sup.next_start == {} and sup.restarts == 1


# ------------------------------------------------------------------ the Spark driver JVM's death


class DeadProbe:
    def __init__(self) -> None:
        self.dead = False

    def __call__(self) -> str | None:
        return "the Spark driver JVM (pid 4242) died (killed by SIGKILL)" if self.dead else None


def test_a_job_failing_because_the_jvm_died_names_the_jvm() -> None:
    probe = DeadProbe()
    job = TaskJob(object(), spec(0), DriverJvmWatch(probe))  # type: ignore[arg-type]
    assert type(job.job_error(RuntimeError("Job 3 cancelled"))) is DataPathError
    probe.dead = True
    error = job.job_error(ConnectionRefusedError(111, "Connection refused"))
    assert isinstance(error, SparkDriverLostError) and "pid 4242" in str(error) and error.fatal


def test_py4j_connection_errors_mean_the_jvm_is_gone_even_unwatched() -> None:
    from py4j.protocol import Py4JNetworkError

    job = TaskJob(object(), spec(0))  # type: ignore[arg-type]
    for e in (ConnectionRefusedError(111, "Connection refused"), Py4JNetworkError("Answer from Java side is empty")):
        assert is_gateway_error(e)
        assert isinstance(job.job_error(e), SparkDriverLostError)
    wrapped = RuntimeError("An error occurred while calling o42.collect")
    wrapped.__cause__ = Py4JNetworkError("Error while sending or receiving")
    assert is_gateway_error(wrapped) and not is_gateway_error(RuntimeError("Job aborted"))


def test_a_task_lost_with_the_jvm_aborts_the_flow_and_restarts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the JVM's death was a retriable data-path error: six restarts, ``Connection refused`` each, 35 s."""
    grants = RecordingGrantServer()
    sup, _ = supervisor(monkeypatch, grants=grants)
    sup.runs = {0: EndedJob(spec(0), SparkDriverLostError("the Spark driver JVM (pid 1) died")), 1: EndedJob(spec(1))}  # type: ignore[dict-item]
    sup.tick()
    assert sup.state == SupervisorState.FAILED and isinstance(sup.error, SparkDriverLostError)
    assert ("abort", "A->B", 1) in grants.calls and ("stop", "A->B", 1) not in grants.calls  # nothing committed
    assert sup.runs == {} and sup.next_start == {} and sup.restarts == 0


def test_the_worker_stops_granting_and_aborts_every_flow_once_the_jvm_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = DeadProbe()
    grants = RecordingGrantServer()
    watch = DriverJvmWatch(probe)
    worker = Worker.__new__(Worker)
    sups = [supervisor(monkeypatch, grants=grants)[0] for _ in range(2)]
    worker.supervisors, worker.grants, worker.jvm = sups, grants, watch  # type: ignore[assignment]
    watch.on_lost(worker._on_driver_lost)
    worker.tick()
    assert worker.driver_lost is None and all(s.state == SupervisorState.RUNNING for s in sups)
    probe.dead = True
    assert watch.check() is not None  # what the watch thread does every 0.2 s
    assert worker.driver_lost is watch.lost and ("abort", "A->B", 1) in grants.calls
    worker.tick()
    assert all(s.state == SupervisorState.FAILED and s.error is watch.lost for s in sups)
    granted = len(grants.calls)
    worker._closing = threading.Event()
    worker._closing.clear()
    worker._grant_loop()  # returns after its first wait: no grant after the death (a task's abort is final)
    assert grants.calls[granted:] == []


def test_the_watch_names_a_killed_process_with_its_pid_and_signal() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    seen: list[SparkDriverLostError] = []
    watch = DriverJvmWatch(popen_probe(proc), interval_s=0.01)
    watch.on_lost(seen.append)
    watch.start()
    try:
        assert watch.check() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        watch._thread.join(10)  # type: ignore[union-attr]
        assert len(seen) == 1 and seen[0] is watch.lost
        assert f"pid {proc.pid}" in str(seen[0]) and "SIGKILL" in str(seen[0])
        late: list[SparkDriverLostError] = []
        watch.on_lost(late.append)  # already dead: called at once
        assert late == seen
    finally:
        watch.close()
        if proc.poll() is None:
            proc.kill()


# ------------------------------------------------------------------ shutdown calls with no timeout


def test_closing_checkpoints_never_waits_for_a_stuck_offset_syncs_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Audit F7: ``CheckpointEmitter.close`` joined its background read of the offset syncs with no timeout."""
    from mirrorspark.replication.connector import checkpoint_emitter
    from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter

    monkeypatch.setattr(checkpoint_emitter, "LOADER_JOIN_S", 0.05, raising=False)
    release = threading.Event()
    emitter = CheckpointEmitter.__new__(CheckpointEmitter)  # no cluster: only close() is exercised
    closed: list[str] = []
    emitter.name, emitter._producer, emitter._closing = "A->B", None, threading.Event()
    emitter.translator = type("T", (), {"close": lambda self: closed.append("translator")})()  # type: ignore[assignment]
    emitter._loader = threading.Thread(target=release.wait, daemon=True)  # a read that never ends by itself
    emitter._loader.start()
    closer = threading.Thread(target=emitter.close, daemon=True)
    closer.start()
    closer.join(5)
    try:
        assert not closer.is_alive(), "close() waited for the stuck read"
        assert closed == []  # the read's clients are not released under it
    finally:
        release.set()


def test_the_run_command_names_a_gateway_error_of_the_drivers_own_spark_calls() -> None:
    """A Py4J error out of the driver's own Spark calls (the slot check) was a raw traceback."""
    from py4j.protocol import Py4JNetworkError

    from mirrorspark.cli.app import _spark_driver_lost

    lost = _spark_driver_lost(Py4JNetworkError("Answer from Java side is empty"))
    assert isinstance(lost, SparkDriverLostError) and "Spark driver JVM" in str(lost) and lost.exit_code == 9
    assert _spark_driver_lost(ValueError("a bug")) is None
    assert _spark_driver_lost(DataPathError("A->B: copy task 0 failed")) is None  # already one line


def test_the_watch_follows_pysparks_gateway_process_or_the_spark_submit_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark import SparkContext

    proc = type("Proc", (), {"pid": 4242, "poll": lambda self: -9})()
    monkeypatch.setattr(SparkContext, "_gateway", type("Gateway", (), {"proc": proc})(), raising=False)
    watch = DriverJvmWatch.of(object())  # type: ignore[arg-type]
    assert watch is not None and "pid 4242" in str(watch.check()) and "SIGKILL" in str(watch.lost)
    monkeypatch.setattr(SparkContext, "_gateway", type("Gateway", (), {"proc": None})(), raising=False)
    monkeypatch.delenv("SPARK_ENV_LOADED", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert DriverJvmWatch.of(object()) is None  # nothing to watch: Py4J's errors still name the JVM
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "4040")  # launched by spark-submit: its JVM is our parent
    watch = DriverJvmWatch.of(object())  # type: ignore[arg-type]
    assert watch is not None and watch.check() is None


def test_the_run_command_exits_within_its_grace_when_the_jvm_died_and_the_loop_is_stuck(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A driver loop blocked on an unreachable cluster must not keep a dead JVM's run alive (issue #23 item 3)."""
    from mirrorspark.cli.app import _JvmDeathDeadline

    exits: list[int] = []
    done = threading.Event()

    def exit_(code: int) -> None:
        exits.append(code)
        done.set()

    deadline = _JvmDeathDeadline(grace_s=0.05, exit=exit_)
    deadline.on_lost(SparkDriverLostError("the Spark driver JVM (pid 4242) was killed by SIGKILL"))
    assert done.wait(5)
    assert exits == [9]
    assert "SPARK_DRIVER_LOST" in capsys.readouterr().err
    settled = _JvmDeathDeadline(grace_s=0.05, exit=exit_)
    settled.settled.set()  # the run ended by itself within the grace: the command prints and exits as usual
    settled.on_lost(SparkDriverLostError("the Spark driver JVM (pid 4242) was killed by SIGKILL"))
    threading.Event().wait(0.3)
    assert exits == [9]


def test_a_stop_requested_while_starting_ends_the_run_without_starting_copy_tasks() -> None:
    """A SIGTERM while Spark still starts (a standby stopped early): ``run`` closes the flows, no copy task starts."""
    from fakes import two_clusters
    from mirrorspark.replication.driver import DriverState, Replicator

    cfg, a, _b, clients = two_clusters()
    a.create_topic("orders", 1)
    replicator = Replicator(cfg, clients=clients)
    for flow in replicator.flows:  # what start() did before the stop
        flow.start()
    replicator.state = DriverState.RUNNING
    replicator.spark = object()  # any use of it (a copy task started) would raise
    replicator.request_stop()
    [stats] = replicator.run()
    assert replicator.worker is None and stats.state == "stopped"
