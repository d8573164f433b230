"""The scale case's pure parts: its workloads and options, one run's result, the figures and the lines printed.

Workloads (``--scale-workloads``, comma-separated)
--------------------------------------------------
``topics:TxP``
    One flow of ``T`` topics x ``P`` partitions (``P`` defaults to 4; a bare ``T`` is ``topics:Tx4``,
    as ``--scale-topics`` gives them). Two or more of them give the marginal idle cost per added topic.
``partitions:TxP``
    One flow of ``T`` topics x ``P`` partitions, read as a partition-count workload: ``partitions:100x100`` is
    10,000 partitions in one flow over as many topics as ``topics:100x4``.
``flows:FxT[xP]``
    ``F`` flows of ``T`` topics x ``P`` partitions (default 4) each, in one replicator process: ``F`` source
    aliases of the one source cluster (``s<n>``, fresh per run), each flow ``s<n>->target`` copying its own
    ``T`` topics (MM2's dedicated mode then runs one herder per flow, mirrorspark one flow each). Every flow
    runs ``tasks.max=1`` on both contenders (a flow of a few light topics needs no more).

Every figure of a contender and workload is the median of its successful runs; the idle cores are also
listed run by run (MM2's idle cost comes in bursts that one window catches and the next misses).

Units: seconds, cores (CPU seconds per wall second), millicores (10^-3 cores), bytes; MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FULL_WORKLOADS",
    "KINDS",
    "QUICK_WORKLOADS",
    "ScaleResult",
    "ScaleWorkload",
    "add_arguments",
    "broker_heap",
    "marginal_idle_lines",
    "parse_workloads",
    "scale_lines",
    "scale_markdown",
    "workloads_from_args",
]

KINDS = ("topics", "partitions", "flows")
"""Workload kinds of ``--scale-workloads``."""
FULL_WORKLOADS = "topics:100x4,topics:1000x4,partitions:100x100,flows:50x20"
"""The full run's workloads: the topic growth, 10,000 partitions in one flow, 50 flows of 20 topics."""
QUICK_WORKLOADS = "topics:100x4,topics:1000x4,partitions:10x100,flows:5x20"
"""The quick run's: the same shapes, small enough for a few minutes."""
DEFAULT_PARTITIONS = 4
"""Partitions per topic when a workload does not say."""
FULL_IDLE_S = 60.0
"""The idle window of a full run, seconds (MM2's idle bursts: a 20 s window catches or misses them)."""
QUICK_IDLE_S = 20.0
"""The idle window of a quick run, seconds."""
SMALL_HEAP_PARTITIONS = 5000
"""Most partitions of one workload the brokers hold on the launcher's 512 MiB heap: at 10,000 (100 x 100) the source
broker died of ``OutOfMemoryError: Java heap space`` while mirrorspark copied them (2026-11-30)."""
KAFKA_HEAP = "-Xms1G -Xmx1G"
"""Kafka's own broker heap (``kafka-server-start.sh``), which the brokers get when a workload is larger."""


@dataclass(frozen=True)
class ScaleWorkload:
    """One scale workload: ``flows`` flows of ``topics`` topics x ``partitions`` partitions each.

    Attributes
    ----------
    kind:
        ``"topics"``, ``"partitions"`` or ``"flows"`` (see the module notes).
    flows, topics, partitions:
        Flows, topics per flow, partitions per topic.
    """

    kind: str
    flows: int
    topics: int
    partitions: int

    @property
    def spec(self) -> str:
        """The workload as ``--scale-workloads`` names it, e.g. ``flows:50x20x4``."""
        if self.kind == "flows":
            return f"flows:{self.flows}x{self.topics}x{self.partitions}"
        return f"{self.kind}:{self.topics}x{self.partitions}"

    @property
    def total_topics(self) -> int:
        """Topics over every flow."""
        return self.flows * self.topics

    @property
    def total_partitions(self) -> int:
        """Partitions over every flow."""
        return self.flows * self.topics * self.partitions

    def describe(self) -> str:
        """E.g. ``50 flows x 20 topics x 4 partitions (4,000 partitions)``."""
        flows = f"{self.flows} flow{'s' if self.flows != 1 else ''}"
        return f"{flows} x {self.topics:,} topics x {self.partitions} partitions ({self.total_partitions:,} partitions)"

    def tasks_max(self, tasks: int) -> int:
        """``tasks.max`` of every flow: ``tasks`` (``--tasks``) for one flow, 1 for each of many."""
        return 1 if self.kind == "flows" else tasks

    def prefix(self, flow: int = 0) -> str:
        """Name prefix of one flow's source topics (only ``[a-z0-9-]``), distinct per workload and flow."""
        if self.kind != "flows":
            return f"bench-scale-{self.topics}x{self.partitions}-"
        width = len(str(self.flows - 1))
        return f"bench-scale-{self.flows}f{self.topics}x{self.partitions}-{flow:0{width}d}-"

    def topic_names(self, flow: int = 0) -> list[str]:
        """One flow's source topics, in index order."""
        width = len(str(self.topics - 1))
        return [f"{self.prefix(flow)}{i:0{width}d}" for i in range(self.topics)]

    def regex(self, flow: int = 0) -> str:
        """One flow's ``topics`` regex: exactly its topics (no other workload's or flow's prefix extends it)."""
        return f"{self.prefix(flow)}.*"


def _positive(text: str, item: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{item!r}: {text!r} is not a positive whole number")
    return n


def parse_workloads(spec: str) -> list[ScaleWorkload]:
    """Parse ``--scale-workloads`` (see the module notes), e.g. ``topics:1000x4,partitions:100x100,flows:50x20``.

    Raises ValueError naming the item that is not a workload.
    """
    out = []
    for raw in spec.split(","):
        item = raw.strip().lower()
        if not item:
            continue
        kind, _, shape = item.rpartition(":")
        kind = kind or "topics"
        if kind not in KINDS:
            raise ValueError(f"{item!r}: unknown kind {kind!r}; use {', '.join(KINDS)}")
        sizes = [_positive(s, item) for s in shape.split("x")]
        if kind == "flows":
            if len(sizes) not in (2, 3):
                raise ValueError(f"{item!r}: a flows workload is flows:FLOWSxTOPICS[xPARTITIONS], e.g. flows:50x20")
            out.append(ScaleWorkload(kind, sizes[0], sizes[1], sizes[2] if len(sizes) == 3 else DEFAULT_PARTITIONS))
        else:
            if len(sizes) not in (1, 2):
                raise ValueError(f"{item!r}: a {kind} workload is {kind}:TOPICS[xPARTITIONS], e.g. {kind}:100x100")
            out.append(ScaleWorkload(kind, 1, sizes[0], sizes[1] if len(sizes) == 2 else DEFAULT_PARTITIONS))
    if not out:
        raise ValueError("no scale workload named")
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The case's options of ``python -m bench``."""
    p.add_argument(
        "--scale-workloads",
        metavar="LIST",
        help=f"workloads of the scale case: topics:TxP, partitions:TxP (one flow), flows:FxT[xP] (F flows of T "
        f"topics in one process) (default full: {FULL_WORKLOADS}; quick: {QUICK_WORKLOADS})",
    )
    p.add_argument(
        "--scale-topics", metavar="LIST", help="topic counts of the scale case, as topics:Nx4 workloads (e.g. 100,1000)"
    )
    p.add_argument("--scale-runs", type=int, help="runs per contender and workload of the scale case (3; quick 1)")
    p.add_argument(
        "--scale-idle-seconds",
        type=float,
        metavar="S",
        help=f"idle window of every scale run ({FULL_IDLE_S:g}; quick {QUICK_IDLE_S:g})",
    )


def workloads_from_args(args: argparse.Namespace) -> list[ScaleWorkload]:
    """The workloads the options ask for: ``--scale-topics`` then ``--scale-workloads``, else the run's defaults.

    Raises SystemExit naming the bad option.
    """
    out: list[ScaleWorkload] = []
    for option, spec in (("--scale-topics", args.scale_topics), ("--scale-workloads", args.scale_workloads)):
        if spec:
            try:
                items = parse_workloads(spec)
            except ValueError as e:
                raise SystemExit(f"{option}: {e}") from None
            if option == "--scale-topics" and any(w.kind != "topics" for w in items):
                raise SystemExit("--scale-topics: topic counts only (e.g. 100,1000); see --scale-workloads")
            out += items
    return out or parse_workloads(QUICK_WORKLOADS if args.quick else FULL_WORKLOADS)


def broker_heap(workloads: Sequence[ScaleWorkload]) -> str | None:
    """The brokers' heap the workloads need: :data:`KAFKA_HEAP` above :data:`SMALL_HEAP_PARTITIONS`, else ``None``."""
    return KAFKA_HEAP if any(w.total_partitions > SMALL_HEAP_PARTITIONS for w in workloads) else None


@dataclass(frozen=True)
class ScaleResult:
    """One scale run of one contender.

    Attributes
    ----------
    contender:
        ``"mirrorspark"`` or ``"mm2"``.
    run:
        1-based run index.
    topics, partitions:
        Replicated topics over every flow and partitions per topic (``heartbeats`` not counted).
    records:
        Records over all topics.
    tasks_max:
        ``tasks.max`` of every flow.
    workload:
        The workload's :attr:`ScaleWorkload.spec` (``""`` read as ``topics:<topics>x<partitions>``).
    flows:
        Flows in the replicator process.
    create_s, load_s:
        Seconds the case spent creating and filling the source topics (0 if reused); not measured.
    start_call_s:
        mirrorspark only: seconds inside ``Replicator.start()`` (connect, internal topics,
        committed offsets, discovery, creation of every remote topic); 0 for MM2.
    first_s:
        Seconds from launch until the first remote partition held its records (the start time).
    discovery_s:
        Seconds from launch until every remote partition held its records (0 if never).
    idle_s:
        Length of the idle window, seconds.
    idle_cores:
        CPU cores used by the replicator's process tree over the idle window.
    idle_cpu_s:
        CPU seconds of that window per role (see :data:`bench.cpu.ROLES`).
    idle_broker_cores:
        CPU cores used by both brokers together over the idle window.
    peak_rss_bytes:
        Largest resident memory of the replicator's tree, bytes, sampled every second from launch
        (mirrorspark: from the end of ``Replicator.start()``) to the end of the idle window.
    driver_peak_rss_bytes:
        The same of the tree's root alone: mirrorspark's Python driver (the benchmark's process), MM2's JVM.
    machine_cores:
        Busy cores of the whole machine (every process, anyone else's included) over the idle window.
    error:
        Why the run failed, else ``""``.
    cannot_run:
        Why the contender cannot run the workload at all (e.g. MM2's refused topic creation), else ``""``: no
        figures, and no failure of the benchmark.
    """

    contender: str
    run: int
    topics: int
    partitions: int
    records: int
    tasks_max: int
    workload: str = ""
    flows: int = 1
    create_s: float = 0.0
    load_s: float = 0.0
    start_call_s: float = 0.0
    first_s: float = 0.0
    discovery_s: float = 0.0
    idle_s: float = 0.0
    idle_cores: float = 0.0
    idle_cpu_s: Mapping[str, float] = field(default_factory=dict)
    idle_broker_cores: float = 0.0
    peak_rss_bytes: int = 0
    driver_peak_rss_bytes: int = 0
    machine_cores: float = 0.0
    error: str = ""
    cannot_run: str = ""

    @property
    def ok(self) -> bool:
        """Whether every remote topic got its records and the idle window was measured."""
        return not self.error and not self.cannot_run and self.discovery_s > 0 and self.idle_s > 0

    @property
    def failed(self) -> bool:
        """Whether the run failed (a contender that cannot run the workload has not failed)."""
        return not self.ok and not self.cannot_run

    @property
    def spec(self) -> str:
        """The workload's spec (:attr:`workload`, or the one-flow topics workload it was before workloads had names)."""
        return self.workload or f"topics:{self.topics}x{self.partitions}"

    @property
    def kind(self) -> str:
        """The workload's kind (see :data:`KINDS`)."""
        return self.spec.partition(":")[0]

    @property
    def total_partitions(self) -> int:
        """Replicated partitions (``topics * partitions``)."""
        return self.topics * self.partitions

    @property
    def millicores_per_topic(self) -> float:
        """Idle CPU per replicated topic, millicores (``idle_cores * 1000 / topics``; fixed costs included)."""
        return self.idle_cores * 1000.0 / self.topics if self.topics else 0.0

    @property
    def cores_per_1000_partitions(self) -> float:
        """Idle CPU per 1 000 replicated partitions, cores (fixed costs included)."""
        return self.idle_cores * 1000.0 / self.total_partitions if self.total_partitions else 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "contender": self.contender,
            "run": self.run,
            "workload": self.spec,
            "flows": self.flows,
            "topics": self.topics,
            "partitions": self.partitions,
            "records": self.records,
            "tasks_max": self.tasks_max,
            "create_s": round(self.create_s, 3),
            "load_s": round(self.load_s, 3),
            "start_call_s": round(self.start_call_s, 3),
            "first_s": round(self.first_s, 3),
            "discovery_s": round(self.discovery_s, 3),
            "idle_s": round(self.idle_s, 3),
            "idle_cores": round(self.idle_cores, 4),
            "idle_cpu_s": {k: round(v, 3) for k, v in self.idle_cpu_s.items()},
            "idle_broker_cores": round(self.idle_broker_cores, 4),
            "millicores_per_topic": round(self.millicores_per_topic, 4),
            "cores_per_1000_partitions": round(self.cores_per_1000_partitions, 4),
            "peak_rss_bytes": self.peak_rss_bytes,
            "driver_peak_rss_bytes": self.driver_peak_rss_bytes,
            "machine_cores": round(self.machine_cores, 3),
            "ok": self.ok,
            "error": self.error,
            "cannot_run": self.cannot_run,
        }


@dataclass(frozen=True)
class _Figures:
    """The medians of one contender's successful runs of one workload, and its idle cores run by run."""

    runs: int
    first: float
    all: float
    cores: float
    cores_by_run: tuple[float, ...]
    mc: float
    c1k: float
    brokers: float
    rss: float
    driver_rss: float
    machine: float
    idle_s: float


def _figures(runs: Sequence[ScaleResult]) -> _Figures | None:
    """Medians over the successful ``runs`` (``None`` if none succeeded)."""
    ok = [r for r in runs if r.ok]
    if not ok:
        return None
    return _Figures(
        runs=len(ok),
        first=statistics.median(r.first_s for r in ok),
        all=statistics.median(r.discovery_s for r in ok),
        cores=statistics.median(r.idle_cores for r in ok),
        cores_by_run=tuple(r.idle_cores for r in sorted(ok, key=lambda r: r.run)),
        mc=statistics.median(r.millicores_per_topic for r in ok),
        c1k=statistics.median(r.cores_per_1000_partitions for r in ok),
        brokers=statistics.median(r.idle_broker_cores for r in ok),
        rss=statistics.median(r.peak_rss_bytes / 1e6 for r in ok),
        driver_rss=statistics.median(r.driver_peak_rss_bytes / 1e6 for r in ok),
        machine=statistics.median(r.machine_cores for r in ok),
        idle_s=statistics.median(r.idle_s for r in ok),
    )


def _groups(results: Sequence[ScaleResult]) -> list[tuple[str, str, list[ScaleResult]]]:
    """``(workload spec, contender, runs)`` in the order the workloads, then the contenders, first ran."""
    specs = list(dict.fromkeys(r.spec for r in results))
    names = list(dict.fromkeys(r.contender for r in results))
    out = []
    for spec in specs:
        for name in names:
            group = [r for r in results if r.spec == spec and r.contender == name]
            if group:
                out.append((spec, name, group))
    return out


def _by_run(cores: Sequence[float]) -> str:
    return " / ".join(f"{c:.3f}" for c in cores)


def _why(r: ScaleResult) -> str:
    """``cannot run it: <why>`` or ``failed: <the error's first line>`` of a run that has no figures."""
    if r.cannot_run:
        return f"cannot run it: {r.cannot_run}"
    return f"failed: {r.error.splitlines()[0] if r.error else 'no idle window'}"


def _first_error(group: Sequence[ScaleResult]) -> str:
    failed = [r for r in group if not r.ok]
    return _why(failed[0]) if failed else ""


def marginal_idle_lines(results: Sequence[ScaleResult]) -> list[str]:
    """One line per contender: its marginal idle cost per added topic, between the smallest and largest topic count.

    E.g. ``scale marginal idle cost per added topic mirrorspark: 0.020 millicores (100 -> 1,000 topics)``;
    medians over successful runs of the one-flow ``topics`` workloads; a contender with fewer than two topic
    counts measured is left out.
    """
    out = []
    topical = [r for r in results if r.kind == "topics" and r.flows == 1]
    for name in dict.fromkeys(r.contender for r in topical):
        cores: dict[int, float] = {}
        for topics in sorted({r.topics for r in topical if r.contender == name}):
            ok = [r.idle_cores for r in topical if r.contender == name and r.topics == topics and r.ok]
            if ok:
                cores[topics] = statistics.median(ok)
        if len(cores) < 2:
            continue
        (t1, c1), (t2, c2) = min(cores.items()), max(cores.items())
        marginal = (c2 - c1) * 1000.0 / (t2 - t1)
        out.append(
            f"scale marginal idle cost per added topic {name}: {marginal:.3f} millicores ({t1:,} -> {t2:,} topics)"
        )
    return out


def scale_lines(results: Sequence[ScaleResult]) -> list[str]:
    """One line per workload and contender beyond the topic growth (partitions, flows): its figures, or why none.

    E.g. ``scale flows:50x20x4 (50 flows x 20 topics x 4 partitions (4,000 partitions)) mm2: start 4.1 s, all copied
    30.2 s, peak RSS 900 MB (JVM 900 MB), idle 0.016 cores (median of 0.071 / 0.016 / 0.016, 60 s windows),
    brokers 0.300 cores``; a contender without a successful run gets ``cannot run it: <why>`` or ``failed: <the
    first run's error>``.
    """
    out = []
    for spec, name, group in _groups(results):
        if group[0].kind == "topics":
            continue
        head = f"scale {spec} ({_describe(group[0])}) {name}"
        f = _figures(group)
        if f is None:
            out.append(f"{head}: {_first_error(group)}")
            continue
        root = "driver" if name == "mirrorspark" else "JVM"
        out.append(
            f"{head}: start {f.first:.1f} s, all copied {f.all:.1f} s, peak RSS {f.rss:,.0f} MB ({root} "
            f"{f.driver_rss:,.0f} MB), idle {f.cores:.3f} cores (median of {_by_run(f.cores_by_run)}, "
            f"{f.idle_s:.0f} s windows), brokers {f.brokers:.3f} cores"
        )
    return out


def _describe(r: ScaleResult) -> str:
    """The workload of a result in words (:meth:`ScaleWorkload.describe`)."""
    return ScaleWorkload(r.kind, r.flows, r.topics // max(r.flows, 1), r.partitions).describe()


def scale_markdown(results: Sequence[ScaleResult]) -> str:
    """A markdown table of a scale case (medians over successful runs, idle cores run by run) and how the cost grows.

    Rows by workload, then contender (side by side). Columns: seconds until the first and every remote
    partition held its records, idle CPU in cores (median, then each run's) and per topic (millicores) /
    per 1 000 partitions, brokers' idle CPU, peak RSS of the tree and of its root (mirrorspark's driver, MM2's
    JVM) in MB. Below the table, per contender, the growth from the smallest to the largest topic count of the
    one-flow ``topics`` workloads and the marginal idle cost per added topic. Failed runs are listed last.
    """
    if not results:
        return "_no scale runs_\n"
    lines = [
        "| workload | contender | flows x topics x partitions | runs | first copied s | all copied s | idle cores "
        "| idle cores by run | millicores/topic | cores/1000 partitions | brokers idle cores | peak RSS MB "
        "| driver/JVM peak RSS MB | machine busy cores |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    medians: dict[tuple[str, int, int], _Figures] = {}
    for spec, name, group in _groups(results):
        r0 = group[0]
        shape = f"{r0.flows} x {r0.topics // max(r0.flows, 1):,} x {r0.partitions}"
        f = _figures(group)
        if f is None:
            lines.append(f"| {spec} | {name} | {shape} | 0 | - | - | - | - | - | - | - | - | - | - |")
            continue
        if r0.kind == "topics" and r0.flows == 1:
            medians[(name, r0.topics, r0.partitions)] = f
        lines.append(
            f"| {spec} | {name} | {shape} | {f.runs} | {f.first:.1f} | {f.all:.1f} | {f.cores:.3f} "
            f"| {_by_run(f.cores_by_run)} | {f.mc:.2f} | {f.c1k:.3f} | {f.brokers:.3f} | {f.rss:,.0f} "
            f"| {f.driver_rss:,.0f} | {f.machine:.2f} |"
        )
    growth = _growth(medians)
    if growth:
        lines += ["", "How the cost grows with the topic count (one flow):", "", *growth]
    failed = [r for r in results if not r.ok]
    if failed:
        lines.append("")
        for r in failed:
            lines.append(f"- {r.contender} run {r.run} ({r.spec}) {_why(r)}")
    return "\n".join(lines) + "\n"


def _growth(medians: Mapping[tuple[str, int, int], _Figures]) -> list[str]:
    """Per contender, the smallest against the largest topic count: copy time, idle cores, marginal cost, RSS."""

    def ratio(x: float, y: float) -> str:
        return f"x{y / x:.1f}" if x > 0 else "n/a"

    out = []
    for name in dict.fromkeys(n for n, _, _ in medians):
        have = sorted((t, p) for (n, t, p) in medians if n == name)
        if len(have) < 2:
            continue
        (t1, p1), (t2, p2) = have[0], have[-1]
        a, b = medians[(name, t1, p1)], medians[(name, t2, p2)]
        added = t2 - t1
        marginal = (b.cores - a.cores) * 1000.0 / added if added else 0.0
        out.append(
            f"- {name}: {t1:,} -> {t2:,} topics (x{t2 / t1:g}): all copied {a.all:.1f} s -> {b.all:.1f} s "
            f"({ratio(a.all, b.all)}), idle {a.cores:.3f} -> {b.cores:.3f} cores "
            f"({ratio(a.cores, b.cores)}); marginal idle cost {marginal:.3f} millicores per added topic, "
            f"peak RSS {a.rss:,.0f} -> {b.rss:,.0f} MB"
        )
    return out
