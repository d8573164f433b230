"""The control-work scheduler, driven by a fake clock (and once on its own thread with a real one)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from mirrorspark.replication.connector.scheduler import Job, Scheduler

pytestmark = pytest.mark.unit


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sched(clock: FakeClock) -> Scheduler:
    return Scheduler(clock=clock)


def _recorder(log: list[str], name: str) -> Callable[[], None]:
    return lambda: log.append(name)


def _deadline_wait(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


# ---------------------------------------------------------------------------------------------
# Registration and due jobs
# ---------------------------------------------------------------------------------------------


def test_add_returns_the_registered_job(sched: Scheduler, clock: FakeClock) -> None:
    fn = lambda: None  # noqa: E731
    job = sched.add("refresh topics A->B", 60.0, fn, initial_delay_s=5.0)
    assert isinstance(job, Job)
    assert (job.name, job.interval_s, job.fn, job.next_run) == (
        "refresh topics A->B",
        60.0,
        fn,
        clock.now + 5,
    )
    assert (job.runs, job.failures, job.last_error) == (0, 0, None)
    assert sched.jobs == (job,)


def test_no_jobs_runs_nothing(sched: Scheduler) -> None:
    assert sched.run_pending() == 0
    assert sched.jobs == ()


def test_job_without_delay_is_due_at_once(sched: Scheduler) -> None:
    ran: list[str] = []
    job = sched.add("a", 10, _recorder(ran, "a"))
    assert sched.run_pending() == 1
    assert ran == ["a"]
    assert job.runs == 1


def test_job_is_not_run_before_its_initial_delay(sched: Scheduler, clock: FakeClock) -> None:
    ran: list[str] = []
    sched.add("a", 10, _recorder(ran, "a"), initial_delay_s=3)
    clock.advance(2.999)
    assert sched.run_pending() == 0
    assert ran == []
    clock.advance(0.001)
    assert sched.run_pending() == 1
    assert ran == ["a"]


def test_due_jobs_run_in_registration_order(sched: Scheduler, clock: FakeClock) -> None:
    ran: list[str] = []
    # registered c, a, b with different delays: once all are due, registration order wins
    sched.add("c", 10, _recorder(ran, "c"), initial_delay_s=3)
    sched.add("a", 10, _recorder(ran, "a"), initial_delay_s=1)
    sched.add("b", 10, _recorder(ran, "b"), initial_delay_s=2)
    sched.add("later", 10, _recorder(ran, "later"), initial_delay_s=50)
    clock.advance(5)
    assert sched.run_pending() == 3
    assert ran == ["c", "a", "b"]


def test_only_due_jobs_run(sched: Scheduler, clock: FakeClock) -> None:
    ran: list[str] = []
    sched.add("fast", 1, _recorder(ran, "fast"))
    sched.add("slow", 5, _recorder(ran, "slow"))
    for _ in range(5):
        sched.run_pending()
        clock.advance(1)
    assert ran.count("fast") == 5
    assert ran.count("slow") == 1


# ---------------------------------------------------------------------------------------------
# Intervals
# ---------------------------------------------------------------------------------------------


def test_interval_is_respected(sched: Scheduler, clock: FakeClock) -> None:
    start = clock.now
    job = sched.add("a", 10, lambda: None)
    assert sched.run_pending() == 1
    assert job.next_run == start + 10
    clock.advance(9.999)
    assert sched.run_pending() == 0
    clock.advance(0.001)
    assert sched.run_pending() == 1
    assert job.next_run == start + 20
    assert job.runs == 2


def test_missed_runs_are_not_caught_up(sched: Scheduler, clock: FakeClock) -> None:
    """After a late tick a job runs once, not twice at the same instant.

    ``Job.interval_s`` is documented as the seconds between the starts of two
    runs; rescheduling at ``max(next_run + interval, now)`` makes a job that was
    late by two or more intervals due again at ``now``, i.e. 0 s after it started.
    """
    job = sched.add("a", 10, lambda: None)
    sched.run_pending()
    clock.advance(35)  # three intervals missed
    assert sched.run_pending() == 1
    assert sched.run_pending() == 0
    assert job.runs == 2
    assert clock.now < job.next_run <= clock.now + 10  # one interval from now, not in the past
    clock.advance(9.9)
    assert sched.run_pending() == 0


def test_overrunning_job_is_warned_about(sched: Scheduler, clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    job = sched.add("sync configs", 10, lambda: clock.advance(15))
    with caplog.at_level(logging.WARNING, logger="mirrorspark.replication.connector.scheduler"):
        sched.run_pending()
    assert any("sync configs" in r.getMessage() and "longer than" in r.getMessage() for r in caplog.records)
    assert job.failures == 0
    # never scheduled in the past, and not later than one interval from now
    assert clock.now <= job.next_run <= clock.now + 10


def test_job_within_its_interval_is_not_warned_about(
    sched: Scheduler, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    sched.add("quick", 10, lambda: clock.advance(9))
    with caplog.at_level(logging.WARNING, logger="mirrorspark.replication.connector.scheduler"):
        sched.run_pending()
    assert caplog.records == []


# ---------------------------------------------------------------------------------------------
# Failures
# ---------------------------------------------------------------------------------------------


def test_failure_is_counted_logged_and_not_raised(
    sched: Scheduler, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    def boom() -> None:
        raise RuntimeError("broker went away")

    job = sched.add("heartbeats", 1, boom)
    with caplog.at_level(logging.WARNING, logger="mirrorspark.replication.connector.scheduler"):
        assert sched.run_pending() == 1
    assert (job.runs, job.failures, job.last_error) == (1, 1, "broker went away")
    assert any("heartbeats" in r.getMessage() and "broker went away" in r.getMessage() for r in caplog.records)
    assert sched.jobs == (job,)  # still scheduled


def test_failed_job_is_retried_next_interval_and_success_clears_the_error(sched: Scheduler, clock: FakeClock) -> None:
    calls: list[int] = []

    def flaky() -> None:
        calls.append(1)
        if len(calls) <= 2:
            raise OSError(f"attempt {len(calls)}")

    job = sched.add("checkpoints", 5, flaky)
    sched.run_pending()
    assert sched.run_pending() == 0  # not retried before its interval
    clock.advance(5)
    sched.run_pending()
    assert (job.runs, job.failures, job.last_error) == (2, 2, "attempt 2")
    clock.advance(5)
    sched.run_pending()
    assert (job.runs, job.failures, job.last_error) == (3, 2, None)


def test_a_failing_job_does_not_stop_the_others(sched: Scheduler) -> None:
    ran: list[str] = []

    def boom() -> None:
        raise ValueError("nope")

    sched.add("before", 1, _recorder(ran, "before"))
    sched.add("failing", 1, boom)
    sched.add("after", 1, _recorder(ran, "after"))
    assert sched.run_pending() == 3
    assert ran == ["before", "after"]


def test_job_may_add_jobs_while_running(sched: Scheduler) -> None:
    ran: list[str] = []

    def parent() -> None:
        sched.add("child", 10, _recorder(ran, "child"))

    sched.add("parent", 10, parent)
    assert sched.run_pending() == 1  # the child was not due when the tick started
    assert [j.name for j in sched.jobs] == ["parent", "child"]
    assert sched.run_pending() == 1
    assert ran == ["child"]


# ---------------------------------------------------------------------------------------------
# One-shot jobs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("interval_s", [0, -1, -0.5])
def test_one_shot_job_runs_once_and_is_removed(sched: Scheduler, clock: FakeClock, interval_s: float) -> None:
    ran: list[str] = []
    sched.add("periodic", 1, lambda: None)
    once = sched.add("once", interval_s, _recorder(ran, "once"))
    assert sched.run_pending() == 2
    assert [j.name for j in sched.jobs] == ["periodic"]
    assert once.runs == 1
    clock.advance(100)
    sched.run_pending()
    assert ran == ["once"]


def test_one_shot_job_honours_its_delay(sched: Scheduler, clock: FakeClock) -> None:
    ran: list[str] = []
    sched.add("once", 0, _recorder(ran, "once"), initial_delay_s=2)
    assert sched.run_pending() == 0
    clock.advance(2)
    assert sched.run_pending() == 1
    assert sched.jobs == ()
    assert ran == ["once"]


def test_failing_one_shot_job_is_removed_without_raising(sched: Scheduler) -> None:
    def boom() -> None:
        raise RuntimeError("once")

    job = sched.add("once", 0, boom)
    assert sched.run_pending() == 1
    assert sched.jobs == ()
    assert (job.runs, job.failures, job.last_error) == (1, 1, "once")


# ---------------------------------------------------------------------------------------------
# seconds_to_next
# ---------------------------------------------------------------------------------------------


def test_seconds_to_next_without_jobs_is_none(sched: Scheduler) -> None:
    assert sched.seconds_to_next() is None


def test_seconds_to_next_is_the_earliest_due_job(sched: Scheduler, clock: FakeClock) -> None:
    sched.add("a", 10, lambda: None, initial_delay_s=5)
    sched.add("b", 10, lambda: None, initial_delay_s=3)
    assert sched.seconds_to_next() == pytest.approx(3)
    clock.advance(2)
    assert sched.seconds_to_next() == pytest.approx(1)
    clock.advance(4)  # both overdue
    assert sched.seconds_to_next() == 0.0
    sched.run_pending()
    # fixed rate (as MM2's scheduleAtFixedRate): b was due at +3, so next at +13, i.e. 7 s from +6
    assert sched.seconds_to_next() == pytest.approx(7)


def test_seconds_to_next_becomes_none_after_the_last_one_shot(sched: Scheduler, clock: FakeClock) -> None:
    sched.add("once", 0, lambda: None, initial_delay_s=1)
    assert sched.seconds_to_next() == pytest.approx(1)
    clock.advance(1)
    sched.run_pending()
    assert sched.seconds_to_next() is None


# ---------------------------------------------------------------------------------------------
# Thread safety (documented: "a job never runs concurrently with itself")
# ---------------------------------------------------------------------------------------------


def test_job_never_runs_concurrently_with_itself(sched: Scheduler) -> None:
    """Two threads calling ``run_pending`` must not both run the same due job.

    The job, while running, lets a second thread call ``run_pending`` (as the
    loop of :meth:`Scheduler.start` would if a caller also drove the scheduler).
    """
    active = 0
    max_active = 0
    calls = 0

    def job() -> None:
        nonlocal active, max_active, calls
        calls += 1
        active += 1
        max_active = max(max_active, active)
        try:
            if calls == 1:
                other = threading.Thread(target=sched.run_pending)
                other.start()
                other.join(5)
        finally:
            active -= 1

    sched.add("group sync", 60, job)
    sched.run_pending()
    assert max_active == 1, f"job ran {max_active} times at once"


# ---------------------------------------------------------------------------------------------
# Own thread, real clock
# ---------------------------------------------------------------------------------------------


def test_start_runs_jobs_on_a_thread_and_stop_ends_it() -> None:
    sched = Scheduler()
    thread_name = "test-scheduler-start-stop"
    ran_once = threading.Event()
    periodic = sched.add("tick", 0.01, lambda: None)
    sched.add("once", 0, ran_once.set)

    sched.start(name=thread_name, tick_s=0.01)
    try:
        assert ran_once.wait(5)
        assert _deadline_wait(lambda: periodic.runs >= 3)
        assert any(t.name == thread_name for t in threading.enumerate())
    finally:
        started = time.monotonic()
        sched.stop(timeout_s=5)
        stopped_in = time.monotonic() - started

    assert stopped_in < 2
    assert not any(t.name == thread_name for t in threading.enumerate())
    runs = periodic.runs
    time.sleep(0.05)
    assert periodic.runs == runs  # nothing runs after stop()
    assert [j.name for j in sched.jobs] == ["tick"]


def test_failing_job_does_not_kill_the_thread() -> None:
    sched = Scheduler()
    thread_name = "test-scheduler-failing"

    def boom() -> None:
        raise RuntimeError("always")

    failing = sched.add("failing", 0.01, boom)
    logging.getLogger("mirrorspark.replication.connector.scheduler").disabled = True
    try:
        sched.start(name=thread_name, tick_s=0.01)
        try:
            assert _deadline_wait(lambda: failing.failures >= 3)
            assert any(t.name == thread_name and t.is_alive() for t in threading.enumerate())
        finally:
            sched.stop(timeout_s=5)
    finally:
        logging.getLogger("mirrorspark.replication.connector.scheduler").disabled = False
    assert not any(t.name == thread_name for t in threading.enumerate())


def test_stop_without_start_is_a_no_op() -> None:
    assert Scheduler().stop(timeout_s=0.1)


def test_stop_says_whether_a_running_job_ended() -> None:
    sched = Scheduler()
    inside, release = threading.Event(), threading.Event()
    sched.add("slow", 0, lambda: (inside.set(), release.wait(10)))
    sched.start(name="test-scheduler-slow-job", tick_s=0.01)
    try:
        assert inside.wait(5)
        assert not sched.stop(timeout_s=0.05)  # still inside the job: what it uses must not be released
    finally:
        release.set()
    assert sched.stop(timeout_s=5)
    assert not any(t.name == "test-scheduler-slow-job" for t in threading.enumerate())


def test_a_stop_starts_no_further_job_of_the_round() -> None:
    """Two slow jobs are due together (a refresh and a config sync against a target that stopped answering):
    a stop requested during the first one ends the thread after it, not after both."""
    sched = Scheduler()
    inside, release = threading.Event(), threading.Event()
    ran: list[str] = []
    sched.add("first", 1, lambda: (ran.append("first"), inside.set(), release.wait(10)))
    sched.add("second", 1, lambda: ran.append("second"))
    sched.start(name="test-scheduler-stop-round", tick_s=0.01)
    assert inside.wait(5)
    assert not sched.stop(timeout_s=0)  # asked to stop while the first job runs
    release.set()
    assert sched.stop(timeout_s=5)
    assert ran == ["first"]
    assert not next(j for j in sched.jobs if j.name == "second").running
