"""CPU accounting of process trees.

A mirrorspark run spans three kinds of processes: the Python driver (this process),
the Spark driver JVM (a child of it, started by PySpark's ``launch_gateway``) and the
Spark Python workers (children of the JVM's ``pyspark.daemon``). The local brokers are
children of this process too (``start_clusters`` launches them) but are not part of the
replicator: they are excluded from the tree and measured on their own.

:func:`snapshot` reads, for every live process of a tree, ``user + system`` CPU time plus
``children_user + children_system`` (the CPU of its descendants that already exited and
were reaped). A descendant that lives through the window is counted by its own times;
one that exits and is reaped inside the window moves into its parent's ``children_*``.
The sum over the tree is therefore the CPU spent by the tree, with one blind spot: a
process that exits during the window and is reaped by a process *outside* the tree.
Spark's workers are reused (``spark.python.worker.reuse``) and the JVM outlives every
run, so in practice every process of interest is alive at both ends of a window.

When the replicator runs in this process (mirrorspark's driver), the benchmark's own measuring
threads (:class:`bench.sampler.Sampler`'s, registered with :func:`measuring_thread`) run in it too:
their CPU is taken off this process's figure, so that the tree's CPU is the replicator's alone, as
it is for a replicator in a child process (MM2's JVM), whose sampler is never in its tree.

The driver's own share is also read with :func:`resource.getrusage` (``RUSAGE_SELF``);
``RUSAGE_CHILDREN`` only covers reaped children, i.e. already part of the tree sum.
Without :mod:`psutil` only those two are available and the figures say so
(``complete=False``).
"""

from __future__ import annotations

import contextlib
import os
import resource
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

try:
    import psutil  # type: ignore[import-untyped, unused-ignore]
except ImportError:  # pragma: no cover - psutil is a dev extra
    psutil = None

__all__ = [
    "ROLES",
    "CpuDelta",
    "CpuSnapshot",
    "MachineCpu",
    "Meter",
    "have_psutil",
    "machine_cpu",
    "measuring_cpu_s",
    "measuring_thread",
    "snapshot",
    "snapshot_pids",
    "wait_idle",
]

ROLES = ("driver-py", "spark-jvm", "py-workers", "jvm", "other")
"""Process roles of a replicator tree, in report order."""


def have_psutil() -> bool:
    """Whether process-tree accounting is available (``psutil`` importable)."""
    return psutil is not None


@dataclass(frozen=True)
class CpuSnapshot:
    """CPU seconds consumed so far by a set of processes, per role.

    Attributes
    ----------
    by_pid:
        ``pid -> (role, cpu seconds)``: ``user + system + children_user + children_system``
        of each live process, in seconds since the process started.
    self_rusage_s:
        ``ru_utime + ru_stime`` of this process from ``getrusage(RUSAGE_SELF)``, in seconds.
    complete:
        ``False`` when psutil is missing and only this process (and its reaped children) is seen.
    """

    by_pid: Mapping[int, tuple[str, float]]
    self_rusage_s: float
    complete: bool = True

    @property
    def total_s(self) -> float:
        """CPU seconds of every process in the snapshot since each started."""
        return sum(c for _, c in self.by_pid.values())


@dataclass(frozen=True)
class CpuDelta:
    """CPU seconds spent by a set of processes between two snapshots.

    Attributes
    ----------
    by_role:
        Seconds per role (see :data:`ROLES`; brokers use ``"broker"``).
    complete:
        Whether every process of the tree was visible (psutil available).
    """

    by_role: Mapping[str, float] = field(default_factory=dict)
    complete: bool = True

    @property
    def total_s(self) -> float:
        """All roles together, in CPU seconds."""
        return sum(self.by_role.values())


def _cpu_s(p: Any) -> float:
    t = p.cpu_times()
    return float(t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0))


def _role(p: Any, root: int, root_role: str) -> str:
    if p.pid == root:
        return root_role
    try:
        name = p.name().lower()
    except Exception:
        return "other"
    if name == "java" or name.startswith("java"):
        return "spark-jvm"
    if name.startswith("python"):
        return "py-workers"
    return "other"


_measuring: dict[int, int] = {}  # thread ident -> its CPU clock id
_measuring_ended_s = 0.0  # CPU seconds of measuring threads that have ended
_measuring_lock = threading.Lock()


@contextlib.contextmanager
def measuring_thread() -> Iterator[None]:
    """Count the calling thread's CPU as the benchmark's own, not the replicator's, while the block runs.

    Used by :class:`bench.sampler.Sampler`'s thread: its process-tree walks cost this process
    CPU that a replicator in a child process is never charged.
    """
    global _measuring_ended_s
    ident = threading.get_ident()
    with _measuring_lock:
        _measuring[ident] = time.pthread_getcpuclockid(ident)
    try:
        yield
    finally:
        with _measuring_lock:
            del _measuring[ident]
            _measuring_ended_s += time.thread_time()


def measuring_cpu_s() -> float:
    """CPU seconds this process's measuring threads (:func:`measuring_thread`) have used, ended ones included."""
    with _measuring_lock:
        total = _measuring_ended_s
        for clock in _measuring.values():
            with contextlib.suppress(OSError):
                total += time.clock_gettime(clock)
    return total


def _children_map() -> dict[int, list[int]]:
    """``{ppid: [pid, ...]}`` of every process, from one pass over ``/proc`` (``children()`` makes one per call)."""
    kids: dict[int, list[int]] = {}
    for p in psutil.process_iter(["ppid"]):
        ppid = p.info.get("ppid")
        if ppid is not None:
            kids.setdefault(ppid, []).append(p.pid)
    return kids


def _self_rusage_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def snapshot(root: int | None = None, exclude: Iterable[int] = (), *, root_role: str = "driver-py") -> CpuSnapshot:
    """CPU seconds of ``root`` and its descendants, except the subtrees rooted at ``exclude``.

    Parameters
    ----------
    root:
        Root process id; default this process.
    exclude:
        Process ids whose whole subtree is left out (e.g. the local brokers).
    root_role:
        Role of the root itself (default ``driver-py``; ``jvm`` for a child JVM contender).

    Returns
    -------
    CpuSnapshot
        One entry per live process, with its role.
    """
    root = os.getpid() if root is None else root
    if psutil is None:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        own = _self_rusage_s()
        return CpuSnapshot({root: ("driver-py", own + r.ru_utime + r.ru_stime)}, own, complete=False)
    skip = set(exclude)
    out: dict[int, tuple[str, float]] = {}
    kids = _children_map()
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in skip:
            continue
        try:
            p = psutil.Process(pid)
            cpu_s = _cpu_s(p) - (measuring_cpu_s() if pid == os.getpid() else 0.0)
            out[pid] = (_role(p, root, root_role), cpu_s)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        stack.extend(kids.get(pid, ()))
    return CpuSnapshot(out, _self_rusage_s())


def snapshot_pids(pids: Iterable[int], role: str) -> CpuSnapshot:
    """CPU seconds of given processes and their descendants, all under one role.

    Parameters
    ----------
    pids:
        Process ids (e.g. the brokers' JVMs); missing ones are skipped.
    role:
        Role name to file them under (e.g. ``"broker"``).
    """
    if psutil is None:
        return CpuSnapshot({}, 0.0, complete=False)
    out: dict[int, tuple[str, float]] = {}
    for pid in pids:
        try:
            top = psutil.Process(pid)
            for p in [top, *top.children(recursive=True)]:
                out[p.pid] = (role, _cpu_s(p))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return CpuSnapshot(out, 0.0)


def delta(before: CpuSnapshot, after: CpuSnapshot) -> CpuDelta:
    """CPU spent between two snapshots of the same tree, per role.

    A process present only in ``after`` started inside the window and counts in full;
    one present only in ``before`` is ignored (its time, if reaped by a process of the
    tree, appears in that parent's ``children_*``).

    Returns
    -------
    CpuDelta
        Seconds per role; never negative.
    """
    by_role: dict[str, float] = {}
    for pid, (role, cpu) in after.by_pid.items():
        prev = before.by_pid.get(pid)
        d = cpu - (prev[1] if prev is not None else 0.0)
        by_role[role] = by_role.get(role, 0.0) + max(0.0, d)
    return CpuDelta(by_role, complete=before.complete and after.complete)


@dataclass(frozen=True)
class MachineCpu:
    """Whole-machine CPU counters from ``/proc/stat`` (all cores), in seconds.

    Attributes
    ----------
    busy_s:
        Time the cores ran anything (user, nice, system, irq, softirq; guest is inside user).
    steal_s:
        Time the hypervisor gave our virtual cores to someone else.
    """

    busy_s: float
    steal_s: float

    def __sub__(self, other: MachineCpu) -> MachineCpu:
        return MachineCpu(self.busy_s - other.busy_s, self.steal_s - other.steal_s)


def machine_cpu() -> MachineCpu:
    """Read the machine's CPU counters; zeros where ``/proc/stat`` is missing (not Linux)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return MachineCpu(0.0, 0.0)
    hz = os.sysconf("SC_CLK_TCK")
    fields += [0] * (8 - len(fields))
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return MachineCpu((user + nice + system + irq + softirq) / hz, steal / hz)


def wait_idle(max_wait_s: float, *, cores: float = 0.3, window_s: float = 1.0) -> float:
    """Wait until the whole machine uses less than ``cores`` cores over a ``window_s`` window.

    Other work on the machine (a test suite, another benchmark) skews every figure; the
    benchmark is idle between runs, so machine load then is someone else's.

    Parameters
    ----------
    max_wait_s:
        Give up after this many seconds (0: do not wait, just measure one window).
    cores:
        Busy-cores threshold.
    window_s:
        Length of one measurement window, in seconds.

    Returns
    -------
    float
        Busy cores in the last window (≥ ``cores`` when the wait gave up).
    """
    deadline = time.monotonic() + max_wait_s
    while True:
        a = machine_cpu()
        time.sleep(window_s)
        busy = (machine_cpu() - a).busy_s / window_s
        if busy < cores or time.monotonic() >= deadline:
            return busy


class Meter:
    """Measures one run: wall time, a process tree's CPU, the brokers' CPU and the whole machine's.

    Parameters
    ----------
    root:
        Root of the replicator's process tree (default this process).
    brokers:
        Broker JVM pids: excluded from the tree, measured as ``broker``.

    Use :meth:`start` then :meth:`stop`; the results are attributes afterwards.

    Attributes
    ----------
    wall_s:
        Seconds between start and stop.
    tree:
        CPU of the tree per role.
    broker_s:
        CPU seconds of the brokers.
    machine:
        Whole-machine busy and steal seconds (all processes, ours included).
    """

    def __init__(self, brokers: Iterable[int], root: int | None = None) -> None:
        self.root = root
        self.brokers = list(brokers)
        self.wall_s = 0.0
        self.tree = CpuDelta()
        self.broker_s = 0.0
        self.machine = MachineCpu(0.0, 0.0)

    def start(self) -> None:
        """Take the first snapshots (call right before the measured work)."""
        self._m0 = machine_cpu()
        self._tree0 = snapshot(self.root, exclude=self.brokers)
        self._bro0 = snapshot_pids(self.brokers, "broker")
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        """Take the second snapshots and compute the deltas."""
        self.wall_s = time.perf_counter() - self._t0
        self.tree = delta(self._tree0, snapshot(self.root, exclude=self.brokers))
        self.broker_s = delta(self._bro0, snapshot_pids(self.brokers, "broker")).total_s
        self.machine = machine_cpu() - self._m0
