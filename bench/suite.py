"""Cases of the benchmark and the runner that alternates contenders.

:func:`run_case` is the one loop every case uses: load the workload once, one untimed
warm-up run per contender (on a small separate topic), then ``runs`` rounds in which
every contender runs once, always in the same order (A B A B A B), so that slow drift of
the machine (page cache, JIT, GC, thermal) spreads evenly over the contenders. Medians
over the rounds are the reported figures.
"""

from __future__ import annotations

import logging
import os
import platform
import socket
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final

from bench import cpu
from bench.contenders import Contender, MirrorsparkContender, RunMeasurement
from bench.env import SOURCE, BenchEnv
from bench.workload import TAG_HEADER, LoadResult, Workload, load_topic

__all__ = [
    "COMPARE_CONTENDERS",
    "DEPRECATED_CONTENDERS",
    "EOS_RATIO",
    "TRANSFORMS_CONTENDERS",
    "Case",
    "CaseResult",
    "Summary",
    "canonical_contenders",
    "comparison_case",
    "parse_contenders",
    "run_case",
    "transforms_case",
]

log = logging.getLogger(__name__)

Echo = Callable[[str], None]

EOS_RATIO = "throughput ratio mirrorspark-eos/mirrorspark"
"""The compare case's ratio of exactly-once over at-least-once throughput (its ``exactly-once cost`` line)."""


@dataclass(frozen=True)
class Case:
    """One comparison: a workload, the contenders, how often to run them.

    Attributes
    ----------
    name:
        File-name friendly id, e.g. ``"compare"``.
    title:
        Heading for reports.
    workload:
        What every measured run replicates.
    contenders:
        In run order within a round.
    runs:
        Measured rounds (≥ 1; medians need ≥ 3 to mean anything).
    warmup:
        Workload of the untimed warm-up run per contender; ``None`` = no warm-up.
    ratios:
        ``(label, numerator, denominator)``: contender names whose median records/s ratio
        is a headline of the case, printed as ``<label>: <x>``, in order (``ceiling`` names
        the slower of ``ceiling-consume`` and ``ceiling-produce``).
    pause_s:
        Seconds to idle between runs after ``sync()`` (lets the kernel write back and the
        brokers settle).
    wait_idle_s:
        Before each run, wait up to this many seconds for the machine to be idle (other
        processes using < 0.3 cores; see :func:`bench.cpu.wait_idle`).
    size:
        Which preset the workload is: ``"quick"``, ``"full"`` or ``"custom"`` (sizes given by
        hand); keys the case's section in ``bench/README.md``.
    """

    name: str
    title: str
    workload: Workload
    contenders: Sequence[Contender]
    runs: int
    warmup: Workload | None = None
    ratios: Sequence[tuple[str, str, str]] = ()
    pause_s: float = 2.0
    wait_idle_s: float = 0.0
    size: str = "custom"


BUSY_CORES = 0.3
"""Other processes using more cores than this during runs make the figures suspect."""


@dataclass(frozen=True)
class Summary:
    """Medians of one contender's successful measured runs.

    Attributes
    ----------
    contender, description:
        Who.
    runs:
        Successful measured runs (the medians' sample size).
    records_per_s, mb_per_s:
        Median throughput (records/s; MB/s of keys + values, MB = 10^6 bytes).
    wall_s:
        Median wall time from launch until the target held every record, seconds.
    copy_s, copy_min_s, copy_max_s:
        Median, shortest and longest copy window (what throughput is over), seconds.
    peak_rss_mb:
        Median of the runs' peak resident memory of the contender's processes, MB (10^6 B).
    start_s:
        Median seconds from launch until the copy window opened (start-up).
    cpu_s_per_gb:
        Median replicator CPU seconds per GB (10^9 bytes of keys + values).
    cpu_s_per_gb_by_role:
        Median CPU s/GB per process role (:data:`bench.cpu.ROLES`).
    broker_cpu_s_per_gb:
        Median CPU s/GB of both brokers together.
    cores_busy:
        Median replicator CPU seconds per wall second (how many of the cores it used).
    other_cores:
        Median cores used by processes that are neither the replicator nor the brokers
        during a run (someone else's work on the machine; should be near 0).
    error:
        First error of a failed run, ``""`` when every run succeeded.
    """

    contender: str
    description: str
    runs: int
    records_per_s: float
    mb_per_s: float
    wall_s: float
    copy_s: float
    copy_min_s: float
    copy_max_s: float
    peak_rss_mb: float
    start_s: float
    cpu_s_per_gb: float
    cpu_s_per_gb_by_role: Mapping[str, float]
    broker_cpu_s_per_gb: float
    cores_busy: float
    other_cores: float
    error: str = ""

    @classmethod
    def of(cls, contender: Contender, runs: Sequence[RunMeasurement]) -> Summary:
        """Summarise a contender's measured runs (failed runs are left out of the medians)."""
        ok = [m for m in runs if m.ok]
        errors = [m.error or "not verified" for m in runs if not m.ok]

        def med(f: Callable[[RunMeasurement], float]) -> float:
            return statistics.median(f(m) for m in ok) if ok else float("nan")

        return cls(
            contender=contender.name,
            description=contender.description,
            runs=len(ok),
            records_per_s=med(lambda m: m.records_per_s),
            mb_per_s=med(lambda m: m.mb_per_s),
            wall_s=med(lambda m: m.wall_s),
            copy_s=med(lambda m: m.seconds),
            copy_min_s=min((m.seconds for m in ok), default=float("nan")),
            copy_max_s=max((m.seconds for m in ok), default=float("nan")),
            peak_rss_mb=med(lambda m: m.peak_rss_bytes / 1e6),
            start_s=med(lambda m: m.start_s),
            cpu_s_per_gb=med(lambda m: m.cpu_s_per_gb()),
            cpu_s_per_gb_by_role={r: med(lambda m, r=r: m.cpu_s_per_gb(r)) for r in cpu.ROLES},  # type: ignore[misc]
            broker_cpu_s_per_gb=med(lambda m: m.broker_cpu_s_per_gb),
            cores_busy=med(lambda m: m.cpu.total_s / m.seconds if m.seconds > 0 else 0.0),
            other_cores=med(lambda m: m.other_cpu_s / m.wall_s if m.wall_s > 0 else 0.0),
            error=errors[0] if errors else "",
        )


@dataclass
class CaseResult:
    """Everything a case measured, for the reports.

    Attributes
    ----------
    case:
        The case.
    load, warmup_load:
        How loading the workload (and the warm-up workload) went.
    warmups:
        The warm-up run of each contender.
    runs:
        Every measured run, in the order they ran.
    summaries:
        Per contender, in the case's order.
    ratios:
        Per :attr:`Case.ratios` label, the ratio of median records/s (``None`` if a side failed).
    cpu_ratios:
        Per label, the same pair's ratio of median CPU s/GB (numerator's over denominator's).
    environment:
        Machine, versions, Spark and cluster start-up seconds, options.
    started_at, finished_at:
        UTC timestamps.
    """

    case: Case
    load: LoadResult
    warmup_load: LoadResult | None
    warmups: list[RunMeasurement]
    runs: list[RunMeasurement]
    summaries: list[Summary] = field(default_factory=list)
    ratios: dict[str, float | None] = field(default_factory=dict)
    cpu_ratios: dict[str, float | None] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None

    def summary(self, contender: str) -> Summary | None:
        """The summary of a contender (or the synthetic ``ceiling``), ``None`` if absent."""
        return next((x for x in self.summaries if x.contender == contender), None)

    def ratio_lines(self) -> list[str]:
        """The headline lines, e.g. ``throughput ratio mirrorspark/mm2: 3.10``, in case order."""
        out = []
        for label, _, _ in self.case.ratios:
            value = self.ratios.get(label)
            out.append(f"{label}: {value:.2f}" if value is not None else f"{label}: n/a (a contender failed)")
        return out

    def eos_cost_lines(self) -> list[str]:
        """``exactly-once cost: <n> %`` when the case ran mirrorspark-eos and mirrorspark, else nothing.

        ``n`` = (1 - ``throughput ratio mirrorspark-eos/mirrorspark``) x 100, rounded: the share of
        mirrorspark's at-least-once throughput that exactly-once on the target costs (< 0: it was faster).
        """
        if EOS_RATIO not in (label for label, _, _ in self.case.ratios):
            return []
        value = self.ratios.get(EOS_RATIO)
        if value is None:
            return ["exactly-once cost: n/a (a contender failed)"]
        return [f"exactly-once cost: {round((1 - value) * 100)} %"]

    def workload_line(self) -> str:
        """The workload's throughput ratios of mirrorspark over MM2 tuned and at defaults, on one line.

        E.g. ``workload 100 B x 1: throughput ratio mirrorspark/mm2-tuned 1.15, mirrorspark/mm2 2.40;
        CPU s/GB ratio mirrorspark/mm2-tuned 0.95`` (``n/a`` where a contender did not run or failed).
        """

        def fmt(value: float | None) -> str:
            return f"{value:.2f}" if value is not None else "n/a"

        def ratio(num: str, den: str, of: Callable[[Summary], float]) -> float | None:
            a, b = self.summary(num), self.summary(den)
            if a is None or b is None or not of(b) or not of(a):
                return None
            return of(a) / of(b)

        w = self.case.workload
        tuned = ratio("mirrorspark", "mm2-tuned", lambda x: x.records_per_s)
        default = ratio("mirrorspark", "mm2", lambda x: x.records_per_s)
        cpu = ratio("mirrorspark", "mm2-tuned", lambda x: x.cpu_s_per_gb)
        return (
            f"workload {w.record_size} B x {w.partitions}: throughput ratio mirrorspark/mm2-tuned {fmt(tuned)}, "
            f"mirrorspark/mm2 {fmt(default)}; CPU s/GB ratio mirrorspark/mm2-tuned {fmt(cpu)}"
        )

    def cpu_ratio_lines(self) -> list[str]:
        """E.g. ``CPU s/GB ratio mirrorspark/mm2: 0.30``, one per headline ratio."""
        out = []
        for label, num, den in self.case.ratios:
            value = self.cpu_ratios.get(label)
            out.append(
                f"CPU s/GB ratio {num}/{den}: {value:.2f}" if value is not None else f"CPU s/GB ratio {num}/{den}: n/a"
            )
        return out


def _settle(pause_s: float) -> None:
    os.sync()
    time.sleep(pause_s)


def _run_one(case: Case, c: Contender, env: BenchEnv, workload: Workload, run: int, echo: Echo) -> RunMeasurement:
    busy = cpu.wait_idle(case.wait_idle_s)
    if busy >= BUSY_CORES:
        echo(f"note: the machine is busy with other work ({busy:.1f} cores) before {c.name} run {run}")
    m = replace(c.run(env, workload, run), idle_before_cores=busy)
    echo(_describe_run(m))
    _settle(case.pause_s)
    return m


def _describe_run(m: RunMeasurement) -> str:
    if m.error:
        return f"{m.contender:<22} run {m.run}: FAILED: {m.error.splitlines()[0][:300]}"
    label = "warm-up" if m.run == 0 else f"run {m.run}"
    return (
        f"{m.contender:<22} {label:<8} {m.records:>10,} rec {m.seconds:7.2f} s "
        f"(start {m.start_s:.2f} s, peak RSS {m.peak_rss_bytes / 1e6:,.0f} MB) "
        f"{m.records_per_s:>10,.0f} rec/s {m.mb_per_s:7.1f} MB/s  "
        f"cpu {m.cpu.total_s:6.2f} s = {m.cpu_s_per_gb():6.1f} s/GB  brokers {m.broker_cpu_s:5.2f} s  "
        f"other procs {m.other_cpu_s / m.wall_s if m.wall_s else 0:.2f} cores"
        + ("" if m.verified else "  (NOT VERIFIED)")
    )


def run_case(env: BenchEnv, case: Case, *, echo: Echo = print) -> CaseResult:
    """Load, warm up, run the contenders alternately, summarise.

    Parameters
    ----------
    env:
        Started environment.
    case:
        What to run.
    echo:
        Where progress lines go.

    Returns
    -------
    CaseResult
        With summaries and the headline ratio filled in. A contender that fails a run is
        not run again; its summary carries the error.
    """
    started = datetime.now(UTC)
    echo(f"== {case.title}: {case.workload.describe()}, {case.runs} run(s) per contender")
    load = load_topic(env.bootstrap(SOURCE), case.workload)
    echo(
        f"loaded {load.records:,} records into {load.topic} in {load.seconds:.1f} s "
        f"({case.workload.payload_bytes / 1e6 / load.seconds:,.0f} MB/s)"
    )
    warm_load = None
    if case.warmup is not None:
        warm_load = load_topic(env.bootstrap(SOURCE), case.warmup)
    for c in case.contenders:
        t = time.perf_counter()
        c.prepare(env)
        echo(f"prepared {c.name} in {time.perf_counter() - t:.1f} s: {c.description}")
    if env.spark_start_s:
        echo(f"SparkSession start-up (not in any figure): {env.spark_start_s:.1f} s")
    failed: dict[str, str] = {}
    warmups: list[RunMeasurement] = []
    if case.warmup is not None:
        for c in case.contenders:
            m = _run_one(case, c, env, case.warmup, 0, echo)
            warmups.append(m)
            if m.error:
                failed[c.name] = m.error
    runs: list[RunMeasurement] = []
    for i in range(1, case.runs + 1):
        for c in case.contenders:
            if c.name in failed:
                continue
            m = _run_one(case, c, env, case.workload, i, echo)
            runs.append(m)
            if not m.ok:
                failed[c.name] = m.error or "not verified"
    result = CaseResult(case, load, warm_load, warmups, runs, started_at=started)
    for c in case.contenders:
        mine = [m for m in runs if m.contender == c.name]
        if not mine and c.name in failed:  # failed in the warm-up already
            mine = [m for m in warmups if m.contender == c.name]
        result.summaries.append(Summary.of(c, mine))
    ceilings = [x for x in result.summaries if x.contender in ("ceiling-consume", "ceiling-produce")]
    if len(ceilings) == 2 and all(x.runs and not x.error for x in ceilings):
        low = min(ceilings, key=lambda x: x.records_per_s)
        result.summaries.append(
            replace(low, contender="ceiling", description=f"the slower of the two passes ({low.contender})")
        )
    for label, num_name, den_name in case.ratios:
        num, den = result.summary(num_name), result.summary(den_name)
        result.ratios[label] = result.cpu_ratios[label] = None
        if num and den and num.runs and den.runs and not num.error and not den.error:
            result.ratios[label] = num.records_per_s / den.records_per_s
            result.cpu_ratios[label] = num.cpu_s_per_gb / den.cpu_s_per_gb if den.cpu_s_per_gb > 0 else None
    result.environment = environment(env)
    result.finished_at = datetime.now(UTC)
    return result


COMPARE_CONTENDERS = (
    "mirrorspark",
    "mm2",
    "mm2-tuned",
    "ceiling-consume",
    "ceiling-produce",
    "ceiling-copy",
    "mirrorspark-eos",
    "mm2-eos",
)
"""Every contender of the comparison case, in run order (the ``*-eos`` ones only in 1 KiB x 12 by default)."""

DEPRECATED_CONTENDERS: Final = {"mirrorspark-continuous": "mirrorspark"}
"""Old contender names still accepted, and the name each now stands for: ``mirrorspark-continuous`` was the
bounded copy on the continuous engine's copy tasks, which every mirrorspark run uses since the batch engine
was retired (issue #22)."""


def canonical_contenders(names: Sequence[str]) -> list[str]:
    """``names`` with each deprecated name replaced by its current one (:data:`DEPRECATED_CONTENDERS`), each once.

    Parameters
    ----------
    names:
        Contender names, in run order.

    Returns
    -------
    list[str]
        The same order; a name given twice (or under its old and its new name) keeps its first place.
    """
    return list(dict.fromkeys(DEPRECATED_CONTENDERS.get(n, n) for n in names))


def parse_contenders(spec: str) -> tuple[list[str], list[str]]:
    """The contenders a comma-separated option names (``--contenders``, ``--transforms-contenders``).

    Parameters
    ----------
    spec:
        E.g. ``"mirrorspark-continuous,mm2"``; blanks around names and empty items are ignored.

    Returns
    -------
    tuple[list[str], list[str]]
        The names as :func:`canonical_contenders` gives them, and the deprecated names ``spec`` used
        (to warn about), in order.
    """
    given = [c.strip() for c in spec.split(",") if c.strip()]
    return canonical_contenders(given), [c for c in dict.fromkeys(given) if c in DEPRECATED_CONTENDERS]


EOS_WORKLOAD = (1024, 12)
"""(record size, partitions) of the one default workload that also measures exactly-once's cost."""


def comparison_case(
    *,
    workload: Workload,
    runs: int,
    tasks_max: int,
    warmup_records: int = 20_000,
    pause_s: float = 2.0,
    wait_idle_s: float = 0.0,
    size: str = "custom",
    contenders: Sequence[str] = COMPARE_CONTENDERS,
) -> Case:
    """mirrorspark against MirrorMaker 2 (defaults and tuned) and the ceiling, on one workload.

    Parameters
    ----------
    workload:
        What to replicate.
    runs:
        Measured runs per contender (medians; ≥ 3).
    tasks_max:
        ``tasks.max`` for mirrorspark and MM2 alike; the ceiling's passes run
        ``min(tasks_max, partitions)`` clients each.
    warmup_records:
        Records of the untimed warm-up run per contender; 0 = none.
    pause_s, wait_idle_s, size:
        As in :class:`Case`.
    contenders:
        Which of :data:`COMPARE_CONTENDERS` to run (in that order); the names of
        :data:`DEPRECATED_CONTENDERS` are accepted too.

    The case's ratios, in print order: ``mirrorspark/mm2``, ``mirrorspark/ceiling``,
    ``mirrorspark/mm2-tuned``, ``mirrorspark-eos/mirrorspark``, ``mirrorspark-eos/mm2-eos``,
    ``mm2-eos/mm2`` (those whose contenders run).
    """
    from bench.contenders import (
        EXACTLY_ONCE,
        MM2_TUNED_PRODUCER,
        CeilingConsumeContender,
        CeilingCopyContender,
        CeilingProduceContender,
        MirrorMakerContender,
    )

    known: dict[str, Callable[[], Contender]] = {
        "mirrorspark": lambda: MirrorsparkContender(tasks_max=tasks_max),
        "mm2": lambda: MirrorMakerContender(tasks_max=tasks_max),
        "mm2-tuned": lambda: MirrorMakerContender(tasks_max=tasks_max, extra=MM2_TUNED_PRODUCER, name="mm2-tuned"),
        "ceiling-consume": lambda: CeilingConsumeContender(tasks_max=tasks_max),
        "ceiling-produce": lambda: CeilingProduceContender(tasks_max=tasks_max),
        "ceiling-copy": lambda: CeilingCopyContender(tasks_max=tasks_max),
        "mirrorspark-eos": lambda: MirrorsparkContender(
            tasks_max=tasks_max, extra=EXACTLY_ONCE, name="mirrorspark-eos"
        ),
        "mm2-eos": lambda: MirrorMakerContender(tasks_max=tasks_max, extra=EXACTLY_ONCE, name="mm2-eos"),
    }
    contenders = canonical_contenders(contenders)
    if tuple(contenders) == COMPARE_CONTENDERS and (workload.record_size, workload.partitions) != EOS_WORKLOAD:
        contenders = [c for c in contenders if not c.endswith("-eos")]
    unknown = [c for c in contenders if c not in known]
    if unknown:
        raise ValueError(f"unknown contender(s) {unknown}; choose from {sorted(known)}")
    warm = (
        Workload("warmup", min(warmup_records, workload.records), workload.record_size, workload.partitions)
        if warmup_records > 0
        else None
    )
    chosen = set(contenders)
    ratios = []
    if {"mirrorspark", "mm2"} <= chosen:
        ratios.append(("throughput ratio mirrorspark/mm2", "mirrorspark", "mm2"))
    if {"mirrorspark", "ceiling-consume", "ceiling-produce"} <= chosen:
        ratios.append(("throughput ratio mirrorspark/ceiling", "mirrorspark", "ceiling"))
    if {"mirrorspark", "mm2-tuned"} <= chosen:
        ratios.append(("throughput ratio mirrorspark/mm2-tuned", "mirrorspark", "mm2-tuned"))
    if {"mirrorspark", "ceiling-copy"} <= chosen:
        ratios.append(("throughput ratio mirrorspark/ceiling-copy", "mirrorspark", "ceiling-copy"))
    if {"mirrorspark-eos", "mirrorspark"} <= chosen:
        ratios.append((EOS_RATIO, "mirrorspark-eos", "mirrorspark"))
    if {"mirrorspark-eos", "mm2-eos"} <= chosen:
        ratios.append(("throughput ratio mirrorspark-eos/mm2-eos", "mirrorspark-eos", "mm2-eos"))
    if {"mm2-eos", "mm2"} <= chosen:
        ratios.append(("throughput ratio mm2-eos/mm2", "mm2-eos", "mm2"))
    return Case(
        name=f"compare-{workload.record_size}b-p{workload.partitions}",
        title=f"mirrorspark vs MM2 vs ceiling, {workload.record_size} B records, {workload.partitions} partition(s)",
        workload=workload,
        contenders=[known[c]() for c in COMPARE_CONTENDERS if c in chosen],
        runs=runs,
        warmup=warm,
        ratios=ratios,
        pause_s=pause_s,
        wait_idle_s=wait_idle_s,
        size=size,
    )


TRANSFORMS_CONTENDERS = (
    "mirrorspark",
    "mirrorspark-filter",
    "mirrorspark-insert",
    "mm2",
    "mm2-filter",
    "mm2-insert",
)
"""Contenders of the transforms case, in run order: each replicator without transforms, with a
``Filter`` dropping the tagged half, and with an ``InsertHeader`` on every record."""

FILTER_TAGGED: Final = {
    "transforms": "dropTagged",
    "transforms.dropTagged.type": "org.apache.kafka.connect.transforms.Filter",
    "transforms.dropTagged.predicate": "isTagged",
    "predicates": "isTagged",
    "predicates.isTagged.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
    "predicates.isTagged.name": TAG_HEADER,
}
"""Flow keys of the ``*-filter`` contenders: Connect's ``Filter`` with a ``HasHeaderKey`` predicate,
dropping the records that carry :data:`bench.workload.TAG_HEADER` (half of a tagged workload)."""

INSERT_HEADER: Final = {
    "transforms": "tag",
    "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertHeader",
    "transforms.tag.header": "replicated-by",
    "transforms.tag.value.literal": "bench",
    # MM2's default header.converter (ByteArrayConverter) refuses InsertHeader's string (README, Transforms)
    "header.converter": "org.apache.kafka.connect.storage.StringConverter",
}
"""Flow keys of the ``*-insert`` contenders: Connect's ``InsertHeader`` on every record, with the
``header.converter`` MM2 needs for it (mirrorspark writes the same UTF-8 bytes either way)."""


def transforms_case(
    *,
    records: int,
    runs: int,
    tasks_max: int,
    record_size: int = 1024,
    partitions: int = 12,
    warmup_records: int = 20_000,
    pause_s: float = 2.0,
    wait_idle_s: float = 0.0,
    size: str = "custom",
    contenders: Sequence[str] = TRANSFORMS_CONTENDERS,
) -> Case:
    """What Single Message Transforms cost, mirrorspark beside MirrorMaker 2 running the same Connect transforms.

    One tagged workload (every other record of each partition carries
    :data:`~bench.workload.TAG_HEADER`), replicated by each replicator without transforms, with
    :data:`FILTER_TAGGED` (the target holds half the records) and with :data:`INSERT_HEADER`. The
    transforms are per-flow keys (``<source>->target.transforms``: MM2 ignores top-level ones).
    Throughput counts every source record read, dropped or not.

    Parameters
    ----------
    records, record_size, partitions:
        The workload.
    runs, tasks_max, warmup_records, pause_s, wait_idle_s, size:
        As :func:`comparison_case`.
    contenders:
        Which of :data:`TRANSFORMS_CONTENDERS` to run (in that order); the names of
        :data:`DEPRECATED_CONTENDERS` are accepted too.

    The case's ratios: ``mirrorspark-filter/mm2-filter``, ``mirrorspark-insert/mm2-insert``,
    ``mirrorspark/mm2`` (no transforms), then each transform's cost to its replicator
    (``mirrorspark-filter/mirrorspark``, ``mm2-filter/mm2``, and the same for insert).
    """
    from bench.contenders import MirrorMakerContender

    def ms(name: str, keys: Mapping[str, str] | None = None, drops: bool = False) -> Contender:
        return MirrorsparkContender(tasks_max=tasks_max, flow_extra=keys, drops_tagged=drops, name=name)

    def mm(name: str, keys: Mapping[str, str] | None = None, drops: bool = False) -> Contender:
        return MirrorMakerContender(tasks_max=tasks_max, flow_extra=keys, drops_tagged=drops, name=name)

    known: dict[str, Callable[[], Contender]] = {
        "mirrorspark": lambda: ms("mirrorspark"),
        "mirrorspark-filter": lambda: ms("mirrorspark-filter", FILTER_TAGGED, drops=True),
        "mirrorspark-insert": lambda: ms("mirrorspark-insert", INSERT_HEADER),
        "mm2": lambda: mm("mm2"),
        "mm2-filter": lambda: mm("mm2-filter", FILTER_TAGGED, drops=True),
        "mm2-insert": lambda: mm("mm2-insert", INSERT_HEADER),
    }
    contenders = canonical_contenders(contenders)
    unknown = [c for c in contenders if c not in known]
    if unknown:
        raise ValueError(f"unknown contender(s) {unknown}; choose from {sorted(known)}")
    workload = Workload("smt", records, record_size, partitions, tagged=True)
    warm = (
        Workload("smt-warmup", min(warmup_records, records), record_size, partitions, tagged=True)
        if warmup_records > 0
        else None
    )
    chosen = set(contenders)
    pairs = [
        ("mirrorspark-filter", "mm2-filter"),
        ("mirrorspark-insert", "mm2-insert"),
        ("mirrorspark", "mm2"),
        ("mirrorspark-filter", "mirrorspark"),
        ("mm2-filter", "mm2"),
        ("mirrorspark-insert", "mirrorspark"),
        ("mm2-insert", "mm2"),
    ]
    ratios = [(f"throughput ratio {a}/{b}", a, b) for a, b in pairs if {a, b} <= chosen]
    return Case(
        name=f"transforms-{record_size}b-p{partitions}",
        title=f"Transforms: Filter (half dropped) and InsertHeader, {record_size} B records, {partitions} partition(s)",
        workload=workload,
        contenders=[known[c]() for c in TRANSFORMS_CONTENDERS if c in chosen],
        runs=runs,
        warmup=warm,
        ratios=ratios,
        pause_s=pause_s,
        wait_idle_s=wait_idle_s,
        size=size,
    )


def environment(env: BenchEnv) -> dict[str, Any]:
    """Machine, versions and start-up times worth printing next to the figures."""
    import confluent_kafka
    import pyarrow
    import pyspark

    from mirrorspark.kafka.jars import jar_dir

    mem_gib = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu_model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass

    def jar_version(directory: str, prefix: str) -> str:
        try:
            jars = sorted(jar_dir(directory).glob(f"{prefix}-*.jar"))
        except Exception:
            return "?"
        return jars[0].stem[len(prefix) + 1 :] if jars else "?"

    spark_conf: dict[str, str] = {}
    if env.spark_started is not None:
        sc = env.spark_started.sparkContext
        spark_conf = {"master": str(sc.master), "default_parallelism": str(sc.defaultParallelism)}
    return {
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model,
        "mem_gib": mem_gib,
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "pyspark": pyspark.__version__,
        "pyarrow": pyarrow.__version__,
        "confluent_kafka": confluent_kafka.version()[0],
        "librdkafka": confluent_kafka.libversion()[0],
        "kafka_broker": jar_version("kafka", "kafka-clients"),
        "spark": spark_conf,
        "spark_start_s": round(env.spark_start_s, 2),
        "cluster_start_s": round(env.cluster_start_s, 2),
        "psutil": cpu.have_psutil(),
    }
