"""A background sampler: replication progress, CPU and memory of a process tree, over time.

Every contender — mirrorspark in this process, MirrorMaker 2 and Kafka's perf tools in
child JVMs — is measured the same way: a thread polls, every ``interval_s``,

* the *progress*: records stored in the contender's output topic on the target (sum of
  the partitions' end offsets, one ``ListOffsets`` request), and
* the contender's process tree: CPU seconds per role and resident memory (bytes).

The *copy window* is then read off the samples: from the last sample at which the output
topic was still empty to the first at which it held every record. Throughput is records
over that window, CPU s/GB the tree's CPU over it — start-up (JVM, Connect herders, Spark
session, flow start) is outside it for every contender alike and reported apart.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bench import cpu

__all__ = ["EndOffsets", "Sample", "Sampler", "Window"]

log = logging.getLogger(__name__)

try:  # psutil comes with the dev extra; without it RSS is unknown (0)
    import psutil  # type: ignore[import-untyped, unused-ignore]
except ImportError:  # pragma: no cover - dev extra missing
    psutil = None


@dataclass(frozen=True)
class Sample:
    """One poll.

    Attributes
    ----------
    t:
        ``time.perf_counter()`` seconds.
    wall:
        ``time.time()`` seconds (to line up with timestamps a tool prints).
    progress:
        Records in the output topic (``-1``: unknown, e.g. the topic does not exist yet).
    cpu:
        CPU snapshot of the tree (per pid, with roles).
    rss_bytes:
        Resident set size of the tree, bytes.
    root_rss_bytes:
        Resident set size of the tree's root alone, bytes.
    """

    t: float
    wall: float
    progress: int
    cpu: cpu.CpuSnapshot
    rss_bytes: int
    root_rss_bytes: int = 0


@dataclass(frozen=True)
class Window:
    """The copy window read off a run's samples.

    Attributes
    ----------
    start_s, end_s:
        Seconds since the sampler started: last empty sample, first complete sample.
    cpu:
        CPU of the tree between those two samples, per role.
    """

    start_s: float
    end_s: float
    cpu: cpu.CpuDelta

    @property
    def seconds(self) -> float:
        """Length of the window, seconds."""
        return self.end_s - self.start_s


def _tree_rss(root: int, exclude: Iterable[int]) -> int:
    """Resident memory of ``root``'s process tree without the subtrees at ``exclude`` (bytes)."""
    return _rss(cpu.snapshot(root, exclude=exclude).by_pid)


def _rss(pids: Iterable[int]) -> int:
    """Resident memory of the processes (bytes; those gone are skipped)."""
    if psutil is None:
        return 0
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return total


class EndOffsets:
    """Sum of the end offsets of one or more topics on a cluster, by one ``ListOffsets`` request per call.

    Parameters
    ----------
    bootstrap:
        ``bootstrap.servers`` of the cluster.
    topic:
        The topic (may not exist yet: the call then returns ``-1``), or ``(topic, partitions)``
        pairs whose end offsets are added up.
    partitions:
        The topic's partition count (unused with pairs).
    read_committed:
        Sum the last stable offsets instead (what a ``read_committed`` consumer can reach: the
        committed part of a transactional copy, transaction markers included).
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str | Sequence[tuple[str, int]],
        partitions: int = 0,
        *,
        read_committed: bool = False,
    ) -> None:
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import AdminClient, OffsetSpec

        pairs = [(topic, partitions)] if isinstance(topic, str) else list(topic)
        self._admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        self._request = {TopicPartition(t, p): OffsetSpec.latest() for t, n in pairs for p in range(n)}
        self._isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED

    def __call__(self) -> int:
        try:
            futures = self._admin.list_offsets(self._request, isolation_level=self._isolation, request_timeout=5)
            return sum(f.result(timeout=10).offset for f in futures.values())
        except Exception:
            return -1


class Sampler:
    """Polls progress, CPU and RSS of a process tree in a daemon thread.

    Parameters
    ----------
    root:
        Root pid of the contender's tree (a child JVM, or this process).
    exclude:
        Pids whose subtrees are not the contender's (the brokers).
    progress:
        Returns records in the output topic, ``-1`` when unknown; ``None`` to not poll.
    interval_s:
        Seconds between polls (default 0.05).

    Use as a context manager around the run; afterwards :meth:`window`, :attr:`peak_rss_bytes`.
    """

    def __init__(
        self,
        root: int,
        *,
        exclude: Iterable[int] = (),
        progress: Callable[[], int] | None = None,
        interval_s: float = 0.05,
    ) -> None:
        self.root = root
        self.exclude = set(exclude)
        self.progress = progress
        self.interval_s = interval_s
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-sampler", daemon=True)
        self.t0 = time.perf_counter()
        self._root_role = "driver-py" if root == os.getpid() else "jvm"

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Take the first sample and start polling."""
        self.t0 = time.perf_counter()
        self.sample()
        self._thread.start()

    def stop(self) -> None:
        """Stop polling after one last sample. Idempotent."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(timeout=10)
            self.sample()

    def sample(self) -> Sample:
        """Take one sample now (also usable from the measuring thread)."""
        progress = self.progress() if self.progress is not None else -1
        snap = cpu.snapshot(self.root, exclude=self.exclude, root_role=self._root_role)
        s = Sample(
            t=time.perf_counter(),
            wall=time.time(),
            progress=progress,
            cpu=snap,
            rss_bytes=_rss(snap.by_pid),
            root_rss_bytes=_rss([self.root]),
        )
        self.samples.append(s)
        return s

    def _loop(self) -> None:
        with cpu.measuring_thread():  # the walks are the benchmark's CPU, not the replicator's
            while not self._stop.wait(self.interval_s):
                try:
                    self.sample()
                except Exception:  # the tree may be exiting
                    log.debug("sample failed", exc_info=True)

    def wait_for(self, records: int, timeout_s: float, alive: Callable[[], bool] = lambda: True) -> bool:
        """Wait until a sample shows ``records`` in the output topic; ``False`` on timeout or death."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.samples and self.samples[-1].progress >= records:
                return True
            if not alive():
                return False
            time.sleep(self.interval_s / 2)
        return False

    @property
    def peak_rss_bytes(self) -> int:
        """Largest resident size of the tree seen, bytes."""
        return max((s.rss_bytes for s in self.samples), default=0)

    @property
    def peak_root_rss_bytes(self) -> int:
        """Largest resident size of the tree's root alone seen, bytes."""
        return max((s.root_rss_bytes for s in self.samples), default=0)

    def window(self, records: int) -> Window | None:
        """The copy window: last sample with an empty output topic to the first with ``records``.

        Returns ``None`` if no sample saw the topic complete.
        """
        samples = list(self.samples)
        end = next((i for i, s in enumerate(samples) if s.progress >= records), None)
        if end is None:
            return None
        start = 0
        for i in range(end):
            if samples[i].progress <= 0:
                start = i
        a, b = samples[start], samples[end]
        return Window(a.t - self.t0, b.t - self.t0, cpu.delta(a.cpu, b.cpu))

    def window_between(self, wall_start: float, wall_end: float) -> Window:
        """The window between two ``time.time()`` instants a tool printed (nearest samples outside)."""
        samples = list(self.samples)
        before = [s for s in samples if s.wall <= wall_start] or samples[:1]
        after = [s for s in samples if s.wall >= wall_end] or samples[-1:]
        a, b = before[-1], after[0]
        return Window(wall_start - a.wall + a.t - self.t0, wall_end - b.wall + b.t - self.t0, cpu.delta(a.cpu, b.cpu))
