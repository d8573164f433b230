"""The recovery case: what a crash costs — records copied twice, and seconds until copying resumes.

Each contender replicates a topic that a steady producer feeds while the benchmark kills it with
``SIGKILL`` mid-copy, restarts it where that applies, and counts what reached the target.

Scenarios (:data:`SCENARIOS`)
-----------------------------
``mirrorspark``, whole run
    ``python -m mirrorspark run <mm2.properties> --clusters target`` as a subprocess (its copy
    tasks run in Spark's Python workers): its Python driver, Spark JVM, PySpark daemon and Python
    workers are all killed at once (``kill -9`` of every process of its tree), then the same
    command is launched again. The new instance waits for the flow's lease (the dead holder's
    session expires after 6 s) and resumes from the committed offsets.
``mm2``, whole run
    Apache Kafka's MirrorMaker 2 (dedicated mode, a JVM, as in the other cases) killed with
    ``kill -9`` and launched again with the same ``mm2.properties``; it resumes from the source
    offsets Connect last flushed.
``mirrorspark``, Python workers
    The same mirrorspark subprocess, but only the Spark Python workers are killed (every child
    of the ``pyspark.daemon`` process: the processes running the copy tasks); the driver stays
    up, sees the copy tasks fail and restarts them from their committed offsets (after
    ``mirrorspark``'s restart backoff, 1 s).

One run (:func:`run_recovery`)
-----------------------------
1. A fresh source alias and source topic ``bench-recovery-<alias>`` (``partitions``
   partitions) with one marker record per partition; the replicator starts and the run waits
   until the remote topic holds the markers (the replicator is copying: ``start_s``).
2. A *tail* (a consumer thread of this process) reads the remote topic from the beginning and
   counts, per record, how often it arrived; a *feed* (a producer thread) writes ``rate``
   records per second, round-robin over the partitions, each value unique (its sequence number
   in 12 digits, then random bytes up to ``record_size``).
3. Once the tail has seen a fed record, the run waits ``kill_after_s`` more seconds (copying
   at the steady rate, several commit intervals), then kills, and relaunches at once for a
   whole-run kill.
4. **resume**: the first record the tail receives more than 0.5 s after the kill (records
   already in flight at the kill land before that): ``resume_s`` from the kill,
   ``restart_s`` from the relaunch.
5. The feed runs ``tail_s`` more seconds and stops; the run waits until the tail holds every
   fed record (``all_copied_s``, from the kill), stops the replicator (``SIGTERM``) and deletes
   the topics.
6. **copied twice** = records received - distinct records received (what was copied again after
   the restart, from the last committed offsets); **lost** = fed - distinct received (must be 0).

Both replicators run at their defaults: mirrorspark commits every ``offset.flush.interval.ms``
= 250 ms (or every ``mirrorspark.offset.flush.records`` = 1 000 records per task), Connect (MM2)
every 60 000 ms (``--recovery-flush-ms`` sets both).

Units: seconds, records.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.env import SOURCE, TARGET, BenchEnv
from bench.latency import _produce_markers, contender_properties
from bench.startup import median_marks, read_marks, startup_line

__all__ = [
    "SCENARIOS",
    "RecoveryResult",
    "launch_mirrorspark",
    "recovery_lines",
    "recovery_markdown",
    "run_recovery",
    "run_recovery_case",
    "scenario_filter",
    "startup_lines",
    "stop_mirrorspark",
]

log = logging.getLogger(__name__)

SCENARIOS: tuple[tuple[str, str], ...] = (("mirrorspark", "run"), ("mm2", "run"), ("mirrorspark", "worker"))
"""``(contender, what is killed)`` in run order: ``run`` = every process of the replicator, ``worker`` = the
Spark Python workers of mirrorspark."""

KILLED = {"run": "whole run", "worker": "Python workers"}
"""How the tables name what was killed."""

DEFAULT_FLUSH_MS = {"mirrorspark": 250, "mm2": 60_000}
"""``offset.flush.interval.ms`` of each contender at its defaults (mirrorspark's; Kafka Connect's)."""

_GRACE_S = 0.5
"""Records the tail receives within this many seconds after the kill were in flight at the kill."""
_POLL_S = 0.1


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class RecoveryResult:
    """One recovery run of one scenario.

    Attributes
    ----------
    contender, killed:
        ``"mirrorspark"`` or ``"mm2"``; ``"run"`` (every process) or ``"worker"`` (Python workers).
    run:
        1-based run index.
    rate, partitions, record_size, tasks_max:
        The feed (records/s, partitions, value bytes) and ``tasks.max``.
    flush_ms:
        ``offset.flush.interval.ms`` the contender ran with.
    start_s:
        Seconds from launch until the remote topic held the markers.
    processes_killed:
        Processes that got ``SIGKILL``.
    produced:
        Records fed (markers excluded).
    before_kill:
        Distinct fed records on the target at the kill.
    received, unique:
        Fed records the tail received (every copy), and distinct ones.
    resume_s:
        Seconds from the kill to the first record copied after it.
    restart_s:
        Seconds from the relaunch to that record (whole-run kills; 0 otherwise).
    all_copied_s:
        Seconds from the kill until every fed record was on the target.
    start_marks, restart_marks:
        Where the launch's and the relaunch's seconds went (:mod:`bench.startup`): ``{mark:
        seconds after that launch}``, ``first record`` last; the relaunch's only for whole-run kills.
    error:
        Why the run failed, else ``""``.
    """

    contender: str
    killed: str
    run: int
    rate: int
    partitions: int
    record_size: int
    tasks_max: int
    flush_ms: int
    start_s: float = 0.0
    processes_killed: int = 0
    produced: int = 0
    before_kill: int = 0
    received: int = 0
    unique: int = 0
    resume_s: float = 0.0
    restart_s: float = 0.0
    all_copied_s: float = 0.0
    start_marks: dict[str, float] = field(default_factory=dict)
    restart_marks: dict[str, float] = field(default_factory=dict)
    error: str = ""

    @property
    def duplicates(self) -> int:
        """Records copied twice (more precisely: copies beyond the first)."""
        return self.received - self.unique

    @property
    def lost(self) -> int:
        """Fed records that never reached the target."""
        return self.produced - self.unique

    @property
    def ok(self) -> bool:
        """Whether the run got through the kill and every fed record reached the target."""
        return not self.error and self.produced > 0 and self.lost == 0 and self.resume_s > 0

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "contender": self.contender,
            "killed": self.killed,
            "run": self.run,
            "rate": self.rate,
            "partitions": self.partitions,
            "record_size": self.record_size,
            "tasks_max": self.tasks_max,
            "flush_ms": self.flush_ms,
            "start_s": round(self.start_s, 3),
            "processes_killed": self.processes_killed,
            "produced": self.produced,
            "before_kill": self.before_kill,
            "received": self.received,
            "unique": self.unique,
            "duplicates": self.duplicates,
            "lost": self.lost,
            "resume_s": round(self.resume_s, 3),
            "restart_s": round(self.restart_s, 3),
            "all_copied_s": round(self.all_copied_s, 3),
            "start_marks": {k: round(v, 3) for k, v in self.start_marks.items()},
            "restart_marks": {k: round(v, 3) for k, v in self.restart_marks.items()},
            "ok": self.ok,
            "error": self.error,
        }


# --------------------------------------------------------------------------- feed and tail


class _Feed:
    """A producer thread: ``rate`` records/s with unique values (``%012d`` sequence + random bytes)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int, record_size: int) -> None:
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self.pad = os.urandom(max(0, record_size - 12))
        self.sent = 0
        self.error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-recovery-feed", daemon=True)

    def start(self) -> _Feed:
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5, "log_level": 3})
        errors: list[str] = []

        def on_delivery(err: Any, _msg: Any) -> None:
            if err is not None and len(errors) < 5:
                errors.append(str(err))

        t0 = time.perf_counter()
        tick = 0
        try:
            while not self._stop.is_set():
                due = int((time.perf_counter() - t0) * self.rate) + 1
                while self.sent < due:
                    i = self.sent
                    try:
                        p.produce(
                            self.topic, b"%012d" % i + self.pad, partition=i % self.partitions, on_delivery=on_delivery
                        )
                    except BufferError:
                        p.poll(0.01)
                        continue
                    self.sent = i + 1
                p.poll(0)
                tick += 1
                pause = t0 + tick * 0.01 - time.perf_counter()
                if pause > 0:
                    self._stop.wait(pause)
                elif pause < -1.0:
                    tick = int((time.perf_counter() - t0) / 0.01)
        finally:
            left = p.flush(60)
            if left or errors:
                self.error = f"feed: {left} records unacknowledged; delivery errors: {errors}"

    def stop(self) -> int:
        """Stop producing, wait for the acknowledgements; return the records fed."""
        self._stop.set()
        self._thread.join(120)
        return self.sent


class _Tail:
    """A consumer thread on the remote topic (from the beginning): copies per fed record and receive times."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.counts = bytearray()
        self.received = 0
        self.unique = 0
        self.batches: list[float] = []  # time.monotonic() of every poll that returned fed records
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-recovery-tail", daemon=True)

    def start(self) -> _Tail:
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"bench-recovery-{self.topic}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "fetch.wait.max.ms": 50,
                "log_level": 3,
            }
        )
        c.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
        counts = self.counts
        try:
            while not self._stop.is_set():
                msgs = c.consume(num_messages=10_000, timeout=_POLL_S)
                now = time.monotonic()
                fed = 0
                for m in msgs:
                    if m.error() is not None:
                        if len(self.errors) < 5:
                            self.errors.append(str(m.error()))
                        continue
                    v = m.value() or b""
                    head = v[:12]
                    if len(head) < 12 or not head.isdigit():
                        continue  # a marker
                    i = int(head)
                    if i >= len(counts):
                        counts.extend(bytes(max(i + 1 - len(counts), 1 << 16)))
                    n = counts[i]
                    if n == 0:
                        self.unique += 1
                    if n < 255:
                        counts[i] = n + 1
                    fed += 1
                self.received += fed
                if fed:
                    self.batches.append(now)
        finally:
            c.close()

    def first_after(self, t: float) -> float | None:
        """``time.monotonic()`` of the first poll after ``t`` that returned fed records, else ``None``."""
        return next((b for b in self.batches if b > t), None)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


# --------------------------------------------------------------------------- the replicator processes


def _tree(pid: int) -> list[Any]:
    import psutil  # type: ignore[import-untyped, unused-ignore]

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _kill(procs: Sequence[Any]) -> int:
    """``SIGKILL`` every process at once; wait until they are gone. Returns how many got the signal."""
    import psutil

    sent = 0
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.send_signal(signal.SIGKILL)
            sent += 1
    psutil.wait_procs(list(procs), timeout=15)
    return sent


def launch_mirrorspark(args: Sequence[str], *, cwd: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m mirrorspark <args>`` (this process's mirrorspark) in a session of its own.

    Parameters
    ----------
    args:
        The command's arguments, e.g. ``["run", "mm2.properties", "--clusters", "target"]``.
    cwd:
        Working directory (the benchmark's work directory: ``.mirrorspark/`` state lands there).
    log_path:
        Where its stdout and stderr go.
    """
    import mirrorspark

    env = dict(os.environ)
    src = str(Path(mirrorspark.__file__).resolve().parents[1])  # the same mirrorspark as this process
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    env.setdefault("MIRRORSPARK_SPARK_LOG_LEVEL", "ERROR")
    with open(log_path, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "mirrorspark", *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_mirrorspark(proc: subprocess.Popen[bytes], what: str, timeout_s: float = 90.0) -> None:
    """Stop a :func:`launch_mirrorspark` process: ``SIGTERM``, then ``kill -9`` of whatever of its tree is left.

    Parameters
    ----------
    proc:
        The process.
    what:
        Its name in the warning when it does not stop within ``timeout_s`` seconds.
    timeout_s:
        Seconds to wait for it after ``SIGTERM``.
    """
    procs = _tree(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        log.warning("%s did not stop within %.0f s of SIGTERM: killed", what, timeout_s)
    _kill([p for p in procs if p.is_running()])
    proc.wait()


class _Replicator:
    """The contender as processes of its own: ``python -m mirrorspark run`` or MirrorMaker 2's JVM."""

    def __init__(self, env: BenchEnv, contender: str, properties: Path) -> None:
        self.env, self.contender, self.properties = env, contender, properties
        self.launches = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.mm: Any = None
        self.log_path: Path | None = None
        self.launched: list[tuple[Path | None, float]] = []  # each launch's log and wall-clock time

    @property
    def pid(self) -> int:
        return self.mm.pid if self.mm is not None else self.proc.pid if self.proc is not None else 0

    def launch(self) -> None:
        self.launches += 1
        launched_at = time.time()
        if self.contender == "mm2":
            from bench.contenders import MM2_HEAP
            from mirrorspark.kafka.local.mirror_maker import start_mirror_maker

            self.mm = start_mirror_maker(self.properties, base_dir=self.env.work_dir, clusters=[TARGET], heap=MM2_HEAP)
            self.log_path = self.mm.log_path
            self.launched.append((self.log_path, launched_at))
            return
        log_path = self.properties.with_name(f"{self.properties.stem}-{self.launches}.log")
        self.proc = launch_mirrorspark(
            ["run", str(self.properties), "--clusters", TARGET, "--quiet"], cwd=self.env.work_dir, log_path=log_path
        )
        self.log_path = log_path
        self.launched.append((log_path, launched_at))

    def marks(self, launch: int, first_record_s: float) -> dict[str, float]:
        """Launch ``launch``'s (0-based) start-up marks (:func:`bench.startup.read_marks`) and its first record."""
        log_path, launched_at = self.launched[launch]
        return {**read_marks(self.contender, log_path, launched_at), "first record": first_record_s}

    def alive(self) -> bool:
        if self.mm is not None:
            return bool(self.mm.running)
        return self.proc is not None and self.proc.poll() is None

    def describe_failure(self) -> str:
        if self.mm is not None:
            return f"MirrorMaker exited; log tail:\n{self.mm.log_tail(10)}"
        tail = self.log_path.read_text(errors="replace")[-1500:] if self.log_path is not None else ""
        return f"mirrorspark run exited ({self.proc.returncode if self.proc else '?'}); log tail:\n{tail}"

    def kill_all(self) -> int:
        """``kill -9`` of every process of the run (driver, JVMs, daemon, workers)."""
        n = _kill(_tree(self.pid))
        if self.mm is not None:
            self.mm.stop()  # reaps it
            self.mm = None
        if self.proc is not None:
            self.proc.wait()
            self.proc = None
        return n

    def kill_workers(self) -> int:
        """``kill -9`` of the Spark Python workers: every child of the PySpark daemon (``pyspark.daemon``, or
        ``mirrorspark.replication.task.daemon`` with a local master)."""
        import psutil

        from mirrorspark.replication.task.daemon import is_daemon_command

        workers = []
        for p in _tree(self.pid):
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                if is_daemon_command(p.cmdline()):
                    workers += p.children()
        return _kill(workers)

    def stop(self) -> None:
        """Stop gracefully (``SIGTERM``: mirrorspark commits and ends; MM2's shutdown hook), then kill what is left."""
        if self.mm is not None:
            self.mm.stop()
            self.mm = None
        if self.proc is not None:
            stop_mirrorspark(self.proc, "mirrorspark run")
            self.proc = None


def _wait(what: str, cond: Any, timeout_s: float, rep: _Replicator | None = None) -> float:
    """Poll ``cond()`` every 50 ms until true; return ``time.monotonic()`` then. Raises on timeout or death."""
    deadline = time.monotonic() + timeout_s
    while True:
        if cond():
            return time.monotonic()
        if rep is not None and not rep.alive():
            raise RuntimeError(f"while waiting for {what}: {rep.describe_failure()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {timeout_s:.0f} s")
        time.sleep(0.05)


# --------------------------------------------------------------------------- one run


def run_recovery(
    env: BenchEnv,
    *,
    contender: str,
    killed: str,
    tasks_max: int,
    rate: int = 5000,
    partitions: int = 12,
    record_size: int = 1024,
    kill_after_s: float = 5.0,
    tail_s: float = 5.0,
    flush_ms: int | None = None,
    run: int = 1,
    start_timeout_s: float = 300.0,
    resume_timeout_s: float = 360.0,
    drain_timeout_s: float = 180.0,
) -> RecoveryResult:
    """Kill one contender mid-copy, restart it, and count what was copied twice (one run, fresh flow).

    Parameters
    ----------
    env:
        Started clusters.
    contender, killed:
        One of :data:`SCENARIOS`.
    tasks_max:
        ``tasks.max`` of the flow.
    rate, partitions, record_size:
        The feed: records per second, source partitions, value bytes.
    kill_after_s:
        Seconds of copying the feed before the kill.
    tail_s:
        Seconds the feed goes on after copying resumed.
    flush_ms:
        ``<target>.offset.flush.interval.ms`` for the contender; ``None`` keeps its default
        (:data:`DEFAULT_FLUSH_MS`).
    run:
        Run index to record.
    start_timeout_s, resume_timeout_s, drain_timeout_s:
        Deadlines: first copy after launch, first copy after the kill, every record copied
        after the feed stopped.

    Returns
    -------
    RecoveryResult
        With ``error`` set if the run failed.
    """
    if (contender, killed) not in SCENARIOS:
        raise ValueError(f"unknown scenario {(contender, killed)}: use one of {SCENARIOS}")
    alias = env.fresh_alias()
    topic = f"bench-recovery-{alias}"
    remote = f"{alias}.{topic}"
    extra = {f"{TARGET}.offset.flush.interval.ms": str(flush_ms)} if flush_ms else {}
    base = RecoveryResult(
        contender=contender,
        killed=killed,
        run=run,
        rate=rate,
        partitions=partitions,
        record_size=record_size,
        tasks_max=tasks_max,
        flush_ms=flush_ms or DEFAULT_FLUSH_MS[contender],
    )
    env.create_topic(SOURCE, topic, partitions)
    _produce_markers(env.bootstrap(SOURCE), topic, partitions)
    path = env.work_dir / f"recovery-{alias}.properties"
    path.write_text(env.mm2_properties(alias, contender_properties(contender, topic, tasks_max, extra)))
    rep = _Replicator(env, contender, path)
    feed: _Feed | None = None
    tail: _Tail | None = None
    error = ""
    start_s = resume_s = restart_s = all_copied_s = 0.0
    start_marks: dict[str, float] = {}
    restart_marks: dict[str, float] = {}
    produced = before = n_killed = 0
    try:
        from bench.sampler import EndOffsets

        t0 = time.monotonic()
        rep.launch()
        stored = EndOffsets(env.bootstrap(TARGET), remote, partitions)
        start_s = _wait("the markers on the target", lambda: stored() >= partitions, start_timeout_s, rep) - t0
        tail = _Tail(env.bootstrap(TARGET), remote, partitions).start()
        feed = _Feed(env.bootstrap(SOURCE), topic, partitions, rate, record_size).start()
        _wait("the first fed record on the target", lambda: tail is not None and tail.received > 0, 120.0, rep)
        deadline = time.monotonic() + kill_after_s
        while time.monotonic() < deadline:
            if not rep.alive():
                raise RuntimeError(rep.describe_failure())
            time.sleep(0.05)
        before = tail.unique
        t_kill = time.monotonic()
        if killed == "run":
            n_killed = rep.kill_all()
            t_launch = time.monotonic()
            rep.launch()
        else:
            n_killed = rep.kill_workers()
            t_launch = 0.0
            if n_killed == 0:
                raise RuntimeError("no Spark Python worker found under the pyspark.daemon process")
        log.info("%s: killed %d process(es) (%s) after %d records", contender, n_killed, killed, before)
        t_resume = _wait(
            "copying to resume",
            lambda: tail is not None and tail.first_after(t_kill + _GRACE_S) is not None,
            resume_timeout_s,
            rep,
        )
        first = tail.first_after(t_kill + _GRACE_S) or t_resume
        resume_s = first - t_kill
        restart_s = first - t_launch if t_launch else 0.0
        time.sleep(tail_s)
        produced = feed.stop()
        if feed.error:
            raise RuntimeError(feed.error)
        t_all = _wait("every fed record on the target", lambda: tail is not None and tail.unique >= produced,
                      drain_timeout_s, rep)  # fmt: skip
        all_copied_s = t_all - t_kill
        time.sleep(0.5)  # copies of a partition arrive before its new records: nothing more is on its way
        start_marks = rep.marks(0, start_s)  # read now: a step may be logged after the first record
        if t_launch:
            restart_marks = rep.marks(1, restart_s)
    except Exception as e:
        log.exception("%s recovery run %d (%s) failed", contender, run, killed)
        error = f"{type(e).__name__}: {e}"
    finally:
        if feed is not None:
            produced = produced or feed.stop()
        try:
            rep.stop()
        finally:
            if tail is not None:
                tail.stop()
    try:
        env.delete_flow_topics(alias)
        env.delete_topics(SOURCE, [topic])
    except Exception:
        log.warning("cleaning up after recovery run %s failed", alias, exc_info=True)
    return replace(
        base,
        start_s=start_s,
        processes_killed=n_killed,
        produced=produced,
        before_kill=before,
        received=tail.received if tail is not None else 0,
        unique=tail.unique if tail is not None else 0,
        resume_s=resume_s,
        restart_s=restart_s,
        all_copied_s=all_copied_s,
        start_marks=start_marks,
        restart_marks=restart_marks,
        error=error,
    )


def run_recovery_case(
    env: BenchEnv,
    *,
    tasks_max: int,
    scenarios: Sequence[tuple[str, str]] = SCENARIOS,
    runs: int = 1,
    pause_s: float = 3.0,
    **kwargs: Any,
) -> list[RecoveryResult]:
    """Run :func:`run_recovery` ``runs`` rounds over ``scenarios`` (A B C A B C ...).

    Parameters
    ----------
    env:
        Started clusters.
    tasks_max:
        ``tasks.max`` of every flow.
    scenarios:
        Of :data:`SCENARIOS`, in run order within a round.
    runs:
        Rounds.
    pause_s:
        Seconds of quiet between two runs.
    kwargs:
        Passed to :func:`run_recovery` (``rate``, ``kill_after_s``, ``flush_ms``, ...).
    """
    results = []
    for r in range(1, runs + 1):
        for contender, killed in scenarios:
            res = run_recovery(env, contender=contender, killed=killed, tasks_max=tasks_max, run=r, **kwargs)
            log.info("recovery %s", res.to_json())
            results.append(res)
            time.sleep(pause_s)
    return results


# --------------------------------------------------------------------------- report


def _groups(results: Sequence[RecoveryResult]) -> list[tuple[str, str, list[RecoveryResult]]]:
    keys = list(dict.fromkeys((r.contender, r.killed) for r in results))
    return [(c, k, [r for r in results if (r.contender, r.killed) == (c, k)]) for c, k in keys]


def recovery_lines(results: Sequence[RecoveryResult]) -> list[str]:
    """One line per scenario: median records copied twice and seconds until copying resumed."""
    out = []
    for contender, killed, group in _groups(results):
        ok = [r for r in group if r.ok]
        if not ok:
            out.append(f"recovery {contender} ({KILLED[killed]} killed): FAILED")
            continue
        dup = statistics.median(r.duplicates for r in ok)
        resume = statistics.median(r.resume_s for r in ok)
        out.append(
            f"recovery {contender} ({KILLED[killed]} killed): {dup:,.0f} records copied twice, "
            f"copying resumed {resume:.1f} s after the kill"
        )
    return out


def startup_lines(results: Sequence[RecoveryResult]) -> list[str]:
    """Where start-up seconds go, per contender: its first launch and its relaunch after ``kill -9`` of the whole run.

    Medians over the successful whole-run scenarios' runs (:func:`bench.startup.median_marks`); one
    line each (:func:`bench.startup.startup_line`).
    """
    out = []
    for contender, killed, group in _groups(results):
        ok = [r for r in group if r.ok and r.start_marks]
        if killed != "run" or not ok:
            continue
        out.append(startup_line(contender, "launch", median_marks([r.start_marks for r in ok])))
        again = [r.restart_marks for r in ok if r.restart_marks]
        if again:
            out.append(startup_line(contender, "relaunch after kill -9", median_marks(again)))
    return out


def recovery_markdown(results: Sequence[RecoveryResult]) -> str:
    """A markdown table of the recovery case (medians over successful runs), its summary lines, failures."""
    if not results:
        return "_no recovery runs_\n"
    first = results[0]
    lines = [
        f"A feed of {first.rate:,} records/s ({first.record_size} B values, unique, {first.partitions} partitions, "
        f"tasks.max={first.tasks_max}) is being copied when the contender is killed with `kill -9`, "
        "then restarted (whole run) or left to recover (Python workers). Copied twice = records received on the "
        "target minus distinct ones; resumed = the first record copied after the kill.",
        "",
        "| contender | killed | runs | offset flush ms | fed records | copied before the kill | copied twice "
        "| lost | resumed s after the kill | s after the relaunch | all copied s after the kill | processes killed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for contender, killed, group in _groups(results):
        ok = [r for r in group if r.ok]
        if not ok:
            lines.append(f"| {contender} | {KILLED[killed]} | 0 |" + " - |" * 9)
            continue

        def med(values: Sequence[float]) -> float:
            return statistics.median(values)

        relaunch = f"{med([r.restart_s for r in ok]):.1f}" if killed == "run" else "-"
        lines.append(
            f"| {contender} | {KILLED[killed]} | {len(ok)} | {ok[0].flush_ms:,} | {med([r.produced for r in ok]):,.0f} "
            f"| {med([r.before_kill for r in ok]):,.0f} | {med([r.duplicates for r in ok]):,.0f} "
            f"| {med([r.lost for r in ok]):,.0f} | {med([r.resume_s for r in ok]):.1f} | {relaunch} "
            f"| {med([r.all_copied_s for r in ok]):.1f} | {med([r.processes_killed for r in ok]):.0f} |"
        )
    lines += ["", *(f"`{line}`" for line in recovery_lines(results))]
    starts = startup_lines(results)
    if starts:
        lines += [
            "",
            "Start-up: seconds after the (re)launch at which each step was logged, medians (`bench/startup.py`); "
            "after a kill -9, mirrorspark's lease waits for the dead holder's session (6 s) to expire.",
            "",
            *(f"`{line}`" for line in starts),
        ]
    failed = [r for r in results if not r.ok]
    if failed:
        lines.append("")
        lines.extend(
            f"- {r.contender} ({KILLED[r.killed]}) run {r.run} failed: "
            f"{r.error.splitlines()[0] if r.error else f'lost {r.lost} records'}"
            for r in failed
        )
    return "\n".join(lines) + "\n"


def scenario_filter(contenders: Sequence[str]) -> list[tuple[str, str]]:
    """The scenarios whose contender is among ``contenders`` (names of the ``--contenders`` option)."""
    return [s for s in SCENARIOS if s[0] in contenders]
