"""One scheduler for periodic control work (MM2 ``Scheduler``): named jobs, failures logged and retried.

Each component declares its jobs (:class:`DeclaresJobs`, as MM2's connectors schedule theirs in
``start()``); the driver registers them with :meth:`Scheduler.add_jobs`. The clock is injectable.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger(__name__)


SLOW_JOB_S = 1.0
"""A job taking longer than its interval and than this many seconds is logged (a 50 ms job's 60 ms is not news)."""


@dataclass
class Job:
    """A named periodic job: ``interval_s`` seconds between starts (``<= 0``: once), ``next_run`` on the clock."""

    name: str
    interval_s: float
    fn: Callable[[], None]
    next_run: float
    runs: int = 0
    failures: int = 0
    last_error: str | None = None
    running: bool = False


@dataclass(frozen=True)
class PeriodicJob:
    """A job as its component declares it: ``fn`` every ``interval_s`` s, first ``initial_delay_s`` s in."""

    name: str
    interval_s: float
    fn: Callable[[], object]
    initial_delay_s: float = 0.0


class DeclaresJobs(Protocol):
    """A component with periodic jobs of its own."""

    def jobs(self) -> list[PeriodicJob]:
        """Its jobs, in registration order (none when its features are disabled)."""
        ...


class Scheduler:
    """Runs named periodic jobs from a caller's loop or its own thread; a job never runs concurrently with itself."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._jobs: list[Job] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def jobs(self) -> tuple[Job, ...]:
        """The registered jobs."""
        with self._lock:
            return tuple(self._jobs)

    def add(self, name: str, interval_s: float, fn: Callable[[], None], *, initial_delay_s: float = 0.0) -> Job:
        """Register a job; its first run is ``initial_delay_s`` seconds from now."""
        job = Job(name, interval_s, fn, self._clock() + initial_delay_s)
        with self._lock:
            self._jobs.append(job)
        return job

    def add_jobs(self, component: DeclaresJobs, *, lock: threading.RLock | None = None) -> list[Job]:
        """Register ``component``'s declared jobs in order, each holding ``lock`` while it runs."""
        return [
            self.add(j.name, j.interval_s, _held(j.fn, lock), initial_delay_s=j.initial_delay_s)
            for j in component.jobs()
        ]

    def run_pending(self) -> int:
        """Run every due job in registration order; return how many ran.

        A job more than one interval behind runs once (missed runs skipped); after :meth:`stop` no further
        job of the round starts.
        """
        now = self._clock()
        with self._lock:
            due = [j for j in self._jobs if j.next_run <= now and not j.running]
            for job in due:
                job.running = True
        ran = 0
        for job in due:
            if self._stop.is_set() and self._thread is not None:
                with self._lock:
                    job.running = False
                continue
            ran += 1
            started = self._clock()
            try:
                job.fn()
                job.last_error = None
            except Exception as e:
                job.failures += 1
                job.last_error = str(e)
                log.warning("job '%s' failed (will retry): %s", job.name, e)
            job.runs += 1
            took = self._clock() - started
            if job.interval_s > 0 and took > max(job.interval_s, SLOW_JOB_S):
                log.warning("job '%s' took %.1f s, longer than its %.1f s interval", job.name, took, job.interval_s)
            with self._lock:
                job.running = False
                if job.interval_s > 0:
                    job.next_run += job.interval_s
                    if job.next_run <= self._clock():
                        job.next_run = self._clock() + job.interval_s
                else:
                    self._jobs.remove(job)
        return ran

    def seconds_to_next(self) -> float | None:
        """Seconds until the next job is due (0 if overdue), ``None`` without jobs."""
        with self._lock:
            if not self._jobs:
                return None
            return max(0.0, min(j.next_run for j in self._jobs) - self._clock())

    def start(self, *, name: str = "mirrorspark-scheduler", tick_s: float = 0.1) -> None:
        """Run jobs on a daemon thread ``name`` until :meth:`stop` (idle ticks of ``tick_s`` s); no-op if running."""
        if self._thread is not None:
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.is_set():
                self.run_pending()
                wait = self.seconds_to_next()
                self._stop.wait(tick_s if wait is None else min(max(wait, 0.01), tick_s * 10))

        self._thread = threading.Thread(target=loop, name=name, daemon=True)
        self._thread.start()

    def stop(self, *, timeout_s: float = 10.0) -> bool:
        """Stop the thread, waiting up to ``timeout_s`` s for a running job; whether no thread runs any more.

        ``False``: a job still runs, and whatever it uses must not be released yet.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                return False
            self._thread = None
        return True


def _held(fn: Callable[[], object], lock: threading.RLock | None) -> Callable[[], None]:
    """``fn`` as a scheduler job (its result dropped), holding ``lock`` while it runs."""

    def run() -> None:
        with lock if lock is not None else contextlib.nullcontext():
            fn()

    return run


__all__ = ["SLOW_JOB_S", "DeclaresJobs", "Job", "PeriodicJob", "Scheduler"]
