"""The crash-loop scenario of issue #23: kills in a row over a backlog, a Python worker, the target stopped.

One schedule (:func:`crash_loop`) breaks a replicator the same way whoever it is (``mirrorspark
run`` or Apache Kafka's MirrorMaker 2, :class:`Contender`), while a :class:`~scenario.Feed` of
``records`` unique values at ``rate`` records/s builds a backlog:

1. **kill -9 of the whole run, ``kills`` times in a row**: after each launch, once the remote topic
   has grown by ``grow`` records since that launch, wait a random 0-``max_delay_s`` seconds (a seeded
   draw, the same for every contender), kill every process of the run and launch it again at once.
   Every new run starts over a backlog (what the feed produced while the last one restarted):
   a run that commits only every second copies its first second again at every restart.
2. **kill -9 of one Python worker** running a copy task of each flow (mirrorspark only: MM2 has none),
   once the target has grown by ``grow`` more records; the driver restarts the task. The workers
   running copy tasks are killed one at a time until every flow lost one; which flow a worker served
   shows in the run's log afterwards (``<flow>: copy task <n> failed``), so a flow may lose two.
3. **the target stopped**: every broker of the target SIGSTOPped for ``stop_s`` seconds once it has
   grown by ``grow`` more records (the flow's lease group lives there), then SIGCONT.
4. The feed produces its last record; every value must reach the target.

One run may hold several flows (a tail each, e.g. one per mode): every fault strikes them all and
each flow gets figures of its own (:class:`CrashLoopResult`). Resume figures: seconds from each kill
to every partition receiving a record written after it (:meth:`~scenario.Tail.resumed_at`), the
restart included; for the target stop, from SIGCONT.
Units: seconds, records, records per second.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import psutil
from confluent_kafka import KafkaException
from faultkit import abort_hanging_transactions, pause, transactions_report
from helpers import assert_eventually, consume_all
from scenario import Feed, RunProcess, Tail, copy_task_workers, high_watermarks, port_of

from mirrorspark.kafka.local.mirror_maker import MirrorMakerProcess, start_mirror_maker

logger = logging.getLogger("faults")

STOP_RESUME_TIMEOUT_S = 240.0
"""Longest wait for copying to resume after the target's SIGCONT, seconds (a bound: a flow that has not resumed
by then is stuck, see the exactly-once note of ``test_a_crash_loop_over_a_backlog_still_makes_progress``)."""
HANGING_CHECK_S = 75.0
"""Seconds after SIGCONT before the schedule looks for a hanging transaction (``find-hanging`` lists those
open for more than a minute)."""

SEED = 23
"""The seed of the kill delays: every contender and every run gets the same schedule."""
FAILED_TASK = re.compile(r" WARNING mirrorspark\.replication\.worker\.supervisor: (\S+): copy task \d+ failed")
"""The supervisor's line for a failed copy task in ``mirrorspark run``'s log; group 1: the flow's name."""


@dataclass(frozen=True)
class CrashLoopSize:
    """How big the crash loop is.

    Attributes
    ----------
    rate:
        Records per second the feed produces, all partitions together.
    records:
        Records the feed produces in all; ``None``: it produces until the schedule is over (small
        size: the faults always strike a flow that is still fed).
    partitions:
        Source partitions.
    tasks_max:
        ``tasks.max``.
    grow:
        Records the remote topic grows by after a launch (or a fault) before the next fault.
    kills:
        Kills of the whole run in a row.
    max_delay_s:
        Longest random wait between the growth and the kill, seconds.
    stop_s:
        Seconds the target's brokers stay stopped.
    mm2:
        Whether MirrorMaker 2 runs the same schedule in the same test (its figures beside mirrorspark's).
    """

    rate: int
    records: int | None
    partitions: int
    tasks_max: int
    grow: int
    kills: int
    max_delay_s: float
    stop_s: float
    mm2: bool


def failed_tasks(run: RunProcess) -> Counter[str]:
    """Copy tasks the current launch of ``run`` saw fail, by flow name (:data:`FAILED_TASK` lines of its log)."""
    return Counter(FAILED_TASK.findall(run.tail(10**9)))


class Contender(Protocol):
    """A replicator the schedule can launch, kill and stop."""

    name: str
    relaunch_when_stuck: bool
    """Whether a contender that did not resume after the target stop is relaunched (as its operator would)."""

    def launch(self) -> None:
        """Start it (the previous process must be gone)."""
        ...

    def kill(self) -> None:
        """``kill -9`` of every process of it; returns once they are gone."""
        ...

    def copy_task_workers(self, source: str, count: int) -> list[psutil.Process]:
        """The processes running a copy task, once there are ``count`` (``[]`` at once if it has none)."""
        ...

    def failed_tasks(self) -> Counter[str]:
        """Copy tasks its current launch saw fail, by flow name (from its log)."""
        ...

    def check(self) -> None:
        """Raise if it exited."""
        ...

    def log_tail(self) -> str:
        """The end of its current log (for a failure's message)."""
        ...

    def stop(self) -> int | None:
        """Stop it gracefully (SIGTERM), then kill what is left; its exit code."""
        ...


class MirrorsparkContender:
    """``mirrorspark run`` as a subprocess (:class:`~scenario.RunProcess`)."""

    name = "mirrorspark"
    relaunch_when_stuck = False  # it must resume by itself

    def __init__(self, properties: Path, log_dir: Path) -> None:
        self.run = RunProcess(properties, log_dir)

    def launch(self) -> None:
        self.run.launch()

    def kill(self) -> None:
        self.run.kill()

    def copy_task_workers(self, source: str, count: int) -> list[psutil.Process]:
        def found() -> list[psutil.Process] | None:
            self.run.check()
            assert self.run.proc is not None, "not running"
            workers = copy_task_workers(self.run.proc.pid, port_of(source))
            return workers if len(workers) >= count else None

        return assert_eventually(found, timeout_s=120, message=f"not {count} Python workers connected to the source")

    def failed_tasks(self) -> Counter[str]:
        return failed_tasks(self.run)

    def check(self) -> None:
        self.run.check()

    def log_tail(self) -> str:
        return self.run.tail(6000)

    def stop(self) -> int | None:
        return self.run.stop()


class MirrorMakerContender:
    """Apache Kafka's MirrorMaker 2 (:func:`~mirrorspark.kafka.local.mirror_maker.start_mirror_maker`)."""

    name = "MM2"
    relaunch_when_stuck = True  # Connect never restarts a failed task: its operator restarts it

    def __init__(self, properties: Path, base_dir: Path, target: str) -> None:
        self.properties, self.base_dir, self.target = properties, base_dir, target
        self.mm: MirrorMakerProcess | None = None

    def launch(self) -> None:
        assert self.mm is None, "the previous MirrorMaker is still there"
        self.mm = start_mirror_maker(self.properties, base_dir=self.base_dir, clusters=[self.target])

    def kill(self) -> None:
        assert self.mm is not None, "not running"
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.mm.pid, signal.SIGKILL)
        assert_eventually(lambda: not self.mm or not self.mm.running, timeout_s=30, message="MM2 survived SIGKILL")
        self.mm.stop()  # reaps it
        self.mm = None

    def copy_task_workers(self, source: str, count: int) -> list[psutil.Process]:
        return []

    def failed_tasks(self) -> Counter[str]:
        return Counter()

    def check(self) -> None:
        if self.mm is not None and not self.mm.running:
            raise RuntimeError(f"MirrorMaker exited ({self.mm.returncode}):\n{self.mm.log_tail()}")

    def log_tail(self) -> str:
        return self.mm.log_tail() if self.mm is not None else ""

    def stop(self) -> int | None:
        if self.mm is None:
            return None
        code = self.mm.stop()
        self.mm = None
        return 0 if code in (0, 143) else code


@dataclass
class CrashLoopResult:
    """What the schedule did to one contender.

    Attributes
    ----------
    kill_resumes:
        Seconds from each kill of the whole run until every partition received a new record (a kill
        after the feed's last record was copied has none).
    worker_kills:
        Kills of one of the flow's Python workers: 1, or 2 when a kill meant for another flow struck
        this one again (0 when the contender has no Python worker).
    worker_resumes:
        The same as ``kill_resumes`` for each of them.
    stop_resume:
        Seconds from SIGCONT of the target until every partition received a new record.
    relaunched_after_stop:
        Whether it had not resumed :data:`STOP_RESUME_TIMEOUT_S` after SIGCONT and was relaunched
        (its ``stop_resume`` then counts the wait and the relaunch).
    aborted_hanging:
        The hanging transactions (KIP-664) the schedule aborted on the target after SIGCONT, as the
        operator would, ``topic-partition@start-offset``: the target's coordinator lost a commit's markers.
    delays:
        The random waits before the kills, seconds.
    phases:
        Each fault's name and the remote topic's end offsets (partition -> offset) when it struck:
        a copy at or past a phase's offsets and before the next one's was written after that fault
        (:func:`copied_twice_by_phase`).
    twice:
        Copies beyond the first by the fault they were written after (:func:`copied_twice_by_phase`;
        filled once the contender stopped), records.
    """

    kill_resumes: list[float] = field(default_factory=list)
    worker_kills: int = 0
    worker_resumes: list[float] = field(default_factory=list)
    stop_resume: float | None = None
    relaunched_after_stop: bool = False
    aborted_hanging: list[str] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    phases: list[tuple[str, dict[int, int]]] = field(default_factory=list)
    twice: dict[str, int] = field(default_factory=dict)

    def notes(self) -> str:
        """The resume figures in a few words, for a figures row."""
        parts = [
            "resumed after " + (", ".join(f"{s:.1f}" for s in self.kill_resumes) or "-") + " s",
            "kills " + ", ".join(f"{d:.2f}" for d in self.delays) + " s after the growth",
        ]
        if self.worker_resumes:
            parts.append("worker kill: resumed after " + ", ".join(f"{s:.1f}" for s in self.worker_resumes) + " s")
        if self.relaunched_after_stop:
            parts.append(
                f"target stop: had not resumed {STOP_RESUME_TIMEOUT_S:.0f} s after SIGCONT (its tasks failed), "
                f"relaunched by hand: resumed {self.stop_resume or 0:.1f} s after SIGCONT"
            )
        elif self.stop_resume is not None:
            parts.append(f"target stop: resumed {self.stop_resume:.1f} s after SIGCONT")
        if self.aborted_hanging:
            parts.append(f"target stop: {len(self.aborted_hanging)} hanging transaction partitions aborted by hand")
        if self.twice:
            parts.append("copied twice after: " + ", ".join(f"{k} {n:,}" for k, n in self.twice.items()))
        return "; ".join(parts)


def _grown(tail: Tail) -> int:
    """Records on the remote topic as the tail saw them (offsets, all partitions together)."""
    return sum(o + 1 for o in tail.newest().values())


def _wait_grown(
    tail: Tail, feed: Feed, base: int, grow: int, alive: Callable[[], object], timeout_s: float = 600.0
) -> None:
    """Wait until the remote topic grew by ``grow`` records past ``base``, or the feed's last record arrived."""

    def grown() -> bool:
        alive()
        if _grown(tail) >= base + grow:
            return True
        return _fed_and_copied(feed, tail)

    assert_eventually(grown, timeout_s=timeout_s, interval_s=0.05, message=f"the target did not grow by {grow}")


def _fed_and_copied(feed: Feed, tail: Tail) -> bool:
    """Whether a feed with a limit produced its last record and the tail saw every one: nothing left to grow."""
    return feed.limit is not None and feed.sent >= feed.limit and len(tail.seen) >= feed.limit


def _wait_resumed(
    tail: Tail,
    feed: Feed,
    marks: dict[int, int],
    since: float,
    alive: Callable[[], object],
    timeout_s: float = 900.0,
) -> float | None:
    """:meth:`~scenario.Tail.wait_resumed`, or ``None`` once everything fed was copied (nothing left to resume)."""

    def resumed() -> float | None:
        alive()
        at = tail.resumed_at(marks)
        if at is not None:
            return at
        return -1.0 if _fed_and_copied(feed, tail) else None

    at = assert_eventually(resumed, timeout_s=timeout_s, interval_s=0.1, message="copying did not resume")
    return None if at < 0 else max(0.0, at - since)


def _wait_resumed_after_stop(
    tail: Tail,
    feed: Feed,
    marks: dict[int, int],
    since: float,
    alive: Callable[[], object],
    target: str,
    out: CrashLoopResult,
) -> float | None:
    """:func:`_wait_resumed` for :data:`STOP_RESUME_TIMEOUT_S` after SIGCONT, acting meanwhile as the operator would.

    From :data:`HANGING_CHECK_S` on, every 30 s, a hanging transaction on the target is aborted
    (:func:`~faultkit.abort_hanging_transactions`, what the task's error asks for); the first abort
    starts the wait over. Each abort is kept in :attr:`CrashLoopResult.aborted_hanging`.
    """
    deadline = time.monotonic() + STOP_RESUME_TIMEOUT_S
    check_at = time.monotonic() + HANGING_CHECK_S
    while True:
        try:
            return _wait_resumed(
                tail, feed, marks, since, alive, timeout_s=max(1.0, min(check_at, deadline) - time.monotonic())
            )
        except AssertionError:
            alive()
            if time.monotonic() >= deadline:
                raise
        aborted = abort_hanging_transactions(target)
        if aborted:
            logger.warning("aborted hanging transactions on the target, as its operator would: %s", ", ".join(aborted))
            if not out.aborted_hanging:
                deadline = time.monotonic() + STOP_RESUME_TIMEOUT_S
            out.aborted_hanging += aborted
        check_at = time.monotonic() + 30.0


def _marks(target: str, remote: str, timeout_s: float = 120.0) -> dict[int, int]:
    """:func:`~scenario.high_watermarks`, asked again while the target's brokers come back (e.g. after SIGCONT,
    ``FENCED_LEADER_EPOCH`` from stale metadata)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return high_watermarks(target, remote)
        except KafkaException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def _pause_alive(seconds: float, alive: Callable[[], object]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive()
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))


def crash_loop(
    contender: Contender,
    *,
    size: CrashLoopSize,
    feed: Feed,
    tails: Mapping[str, Tail],
    source: str,
    target: str,
    target_pids: list[int],
) -> dict[str, CrashLoopResult]:
    """Run the schedule of the module notes against ``contender``; the feed and the tails already run.

    ``tails``: a tail on each flow's remote topic, by the flow's name (``source->target``). Returns
    each flow's result once every fault is over and the feed produced its last record (a feed without
    a limit still runs); the contender still runs. A wait that times out fails with the end of the
    contender's log in its message (a CI run keeps nothing else).
    """
    with _log_on_failure(contender, target):
        out = {flow: CrashLoopResult() for flow in tails}
        contender.launch()
        base = _kill_runs(contender, size, feed, tails, target, out)
        base = _kill_workers(contender, size, feed, tails, source, target, base, out)
        _stop_target(contender, size, feed, tails, target, target_pids, base, out)
        if size.records is not None:
            assert_eventually(
                lambda: contender.check() or feed.sent >= (size.records or 0),
                timeout_s=size.records / size.rate + 600,
                message="the feed did not produce its records",
            )
        return out


def _kill_runs(
    contender: Contender,
    size: CrashLoopSize,
    feed: Feed,
    tails: Mapping[str, Tail],
    target: str,
    out: dict[str, CrashLoopResult],
) -> dict[str, int]:
    """Step 1: the kills of the whole run (launched), each relaunched at once; each remote topic's size after them."""
    rng = random.Random(SEED)
    base = {flow: _grown(tail) for flow, tail in tails.items()}
    for n in range(size.kills):
        for flow, tail in tails.items():
            _wait_grown(tail, feed, base[flow], size.grow, contender.check)
        delay = rng.uniform(0.0, size.max_delay_s)
        _pause_alive(delay, contender.check)
        killed_at = time.monotonic()
        contender.kill()
        marks = {flow: high_watermarks(target, tail.topic) for flow, tail in tails.items()}
        contender.launch()
        logger.info(
            "%s: kill %d of %d, %.2f s after the growth; launched again", contender.name, n + 1, size.kills, delay
        )
        for flow, tail in tails.items():
            out[flow].delays.append(delay)
            out[flow].phases.append((f"kill {n + 1}", marks[flow]))
            base[flow] = sum(marks[flow].values())
            resumed = _wait_resumed(tail, feed, marks[flow], killed_at, contender.check)
            if resumed is not None:
                out[flow].kill_resumes.append(resumed)
    return base


def _kill_workers(
    contender: Contender,
    size: CrashLoopSize,
    feed: Feed,
    tails: Mapping[str, Tail],
    source: str,
    target: str,
    base: dict[str, int],
    out: dict[str, CrashLoopResult],
) -> dict[str, int]:
    """Step 2: the Python workers running copy tasks killed one at a time until every flow lost one (module notes).

    Each flow's remote topic grew by ``grow`` records first; returns their sizes after the last kill.
    """
    for flow, tail in tails.items():
        _wait_grown(tail, feed, base[flow], size.grow, contender.check)
    workers = contender.copy_task_workers(source, size.tasks_max * len(tails))  # each runs its task until killed
    struck: set[str] = set()
    for victim in workers:
        if struck == set(tails):
            break
        failed = contender.failed_tasks()
        killed_at = time.monotonic()
        victim.kill()  # SIGKILL
        victim.wait(30)
        marks = {flow: high_watermarks(target, tail.topic) for flow, tail in tails.items()}
        flow = assert_eventually(
            lambda failed=failed: contender.check() or next(iter(contender.failed_tasks() - failed), None),
            timeout_s=120,
            message="no copy task failed after its Python worker's kill",
        )
        assert flow in tails, f"a copy task of {flow!r} failed, not of a flow of {sorted(tails)}"
        logger.info("%s: killed a Python worker of %s", contender.name, flow)
        struck.add(flow)
        out[flow].worker_kills += 1
        out[flow].phases.append(("worker kill", marks[flow]))
        base[flow] = sum(marks[flow].values())
        resumed = _wait_resumed(tails[flow], feed, marks[flow], killed_at, contender.check)
        if resumed is not None:
            out[flow].worker_resumes.append(resumed)
    if workers:
        assert struck == set(tails), f"killed every copy task's Python worker, struck only {sorted(struck)}"
        for flow, tail in tails.items():
            _wait_grown(tail, feed, base[flow], size.grow, contender.check)
    return base


def _stop_target(
    contender: Contender,
    size: CrashLoopSize,
    feed: Feed,
    tails: Mapping[str, Tail],
    target: str,
    target_pids: list[int],
    base: dict[str, int],
    out: dict[str, CrashLoopResult],
) -> None:
    """Step 3: the target's brokers stopped for ``stop_s`` seconds; returns once every flow resumed after SIGCONT."""
    for flow, tail in tails.items():
        out[flow].phases.append(("target stop", high_watermarks(target, tail.topic)))
    pause(target_pids, size.stop_s)
    resumed_at = time.monotonic()
    marks = {flow: _marks(target, tail.topic) for flow, tail in tails.items()}
    try:
        for flow, tail in tails.items():
            out[flow].stop_resume = _wait_resumed_after_stop(
                tail, feed, marks[flow], resumed_at, contender.check, target, out[flow]
            )
    except AssertionError:
        if not contender.relaunch_when_stuck:
            raise
        logger.warning("%s: stuck %.0f s after the target stop: relaunched", contender.name, STOP_RESUME_TIMEOUT_S)
        contender.kill()
        contender.launch()
        for flow, tail in tails.items():
            out[flow].relaunched_after_stop = True
            out[flow].stop_resume = _wait_resumed(tail, feed, marks[flow], resumed_at, contender.check)


def copied_twice_by_phase(
    target: str, remote: str, produced: set[bytes], phases: list[tuple[str, dict[int, int]]]
) -> dict[str, int]:
    """Count the copies beyond the first of ``produced`` values by the fault they were written after.

    A value's copies are in one partition, in order: each copy after the first is counted in the
    newest phase of :attr:`CrashLoopResult.phases` whose offset for its partition it is at or past
    (``"start"``: before the first fault). Units: records.
    """
    counts = {name: 0 for name in ["start", *(name for name, _ in phases)]}
    seen: set[bytes] = set()
    for r in consume_all(target, remote, timeout_s=180, read_committed=True):
        value = r["value"] or b""
        if value not in produced:
            continue
        if value not in seen:
            seen.add(value)
            continue
        phase = "start"
        for name, marks in phases:
            if r["offset"] >= marks.get(r["partition"], 0):
                phase = name
        counts[phase] += 1
    return counts


@contextlib.contextmanager
def _log_on_failure(contender: Contender, target: str) -> Iterator[None]:
    """Fail with the end of the contender's log, and the target's open transactions, appended to an assertion's message.

    The transactions (:func:`~faultkit.transactions_report`) tell an exactly-once task stuck on an open
    transaction in the offsets topic (its last stable offset not moving) from any other stall.
    """
    try:
        yield
    except AssertionError as e:
        raise AssertionError(
            f"{e}\n--- the end of {contender.name}'s log:\n{contender.log_tail()}"
            f"\n--- the target's transactions:\n{transactions_report(target)}"
        ) from None
