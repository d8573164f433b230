"""The commits case: what following the source groups' commits costs, and how soon they reach the target (issue #40).

One run (:func:`run_commits`)
----------------------------
1. A fresh source alias and source topic ``bench-commits-<alias>`` (12 partitions) holding ``ticks + 10`` small
   records per partition. The flow ``<alias>->target`` runs as ``python -m mirrorspark run mm2.properties --clusters
   target`` (a subprocess: its Python driver, Spark JVM and Python workers; as the recovery and service cases run it)
   with ``emit.checkpoints.on.commit=true``, ``sync.group.offsets.enabled=true`` and ``groups`` the run's groups, MM2's
   intervals otherwise (checkpoints and sync every 60 s). The run waits until the preloaded records are on the target.
2. A trickle (1 record per partition every 0.5 s) keeps the copy moving until the end.
3. **baseline**: ``baseline_s`` seconds with the flow following and no group committing: the driver's own rate.
4. **commits**: a committer (``python -m bench.committer --commit SPEC``, its own process) commits, every second, offset
   ``k + 1`` (``k``: the second) of every partition for each of ``groups`` groups, with one
   ``AdminClient.alter_consumer_group_offsets`` per group (simple commits: the groups stay Empty, no consumer joins),
   the groups spread evenly over the second. The first ``warmup_s`` seconds are not measured; the window is the next
   ``seconds``. Every committed offset is on the source and copied before the commit (O1 never holds a checkpoint
   back: the latency is the follower's).
5. After the committer ends, until every group-partition's last commit is on the target (``drain_timeout_s`` at
   most), then both clusters' ``__consumer_offsets`` from before the commits are read: for each source commit inside
   the window, the first target commit of that group-partition at or past its offset (a fresh topic copied 1:1:
   the translation is the identity), latency = the target broker's commit timestamp - the source broker's (one
   machine, one clock), as ``tests/integration/test_commit_following.py`` measures it.

Figures: checkpoint records written per second (the end offset of ``<alias>.checkpoints.internal`` on the target,
read at both ends of the window), the driver's CPU (psutil on the ``mirrorspark run`` process: % of one core, and
CPU seconds per 1 000 offset commits, i.e. group-partition records of the source's ``__consumer_offsets``), its
whole tree's, the latency p50/p99/max, and the bound of O2 (at most one checkpoint per group-partition per
``FOLLOW_TICK_S``). MirrorMaker 2 has no such feature: its reference is its default timing, a checkpoint every
``emit.checkpoints.interval.seconds`` (60) then a sync every ``sync.group.offsets.interval.seconds`` (60), i.e. up to
~120 s (it is not run).
"""

from __future__ import annotations

import bisect
import itertools
import json
import logging
import os
import shutil
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import cpu
from bench.committer import COMMIT_EVERY_S, GroupPartition, OffsetsLog, Trickle
from bench.env import SOURCE, TARGET, BenchEnv
from bench.latency import _percentile, contender_properties, launch_bench_child
from bench.recovery import _Replicator, _wait

__all__ = [
    "FULL_GROUPS",
    "MM2_REFERENCE_S",
    "QUICK_GROUPS",
    "CommitsResult",
    "commit_latencies",
    "commits_json",
    "commits_lines",
    "commits_markdown",
    "o2_bound_per_s",
    "quarter_p50s",
    "run_commits",
    "run_commits_case",
]

log = logging.getLogger(__name__)

FULL_GROUPS = 1000
"""Groups committing every second in the full run (``make bench``)."""
QUICK_GROUPS = 100
"""Groups committing every second in ``make bench-quick``."""
PARTITIONS = 12
"""Partitions of the source topic, each committed by every group."""
MM2_CHECKPOINT_S, MM2_SYNC_S = 60, 60
"""MM2's defaults: ``emit.checkpoints.interval.seconds`` and ``sync.group.offsets.interval.seconds``."""
MM2_REFERENCE_S = MM2_CHECKPOINT_S + MM2_SYNC_S
"""Seconds a commit may wait for MM2's checkpoint and then its sync at the defaults."""

Commits = Mapping[GroupPartition, Sequence[tuple[int, int]]]
"""Per group-partition, ``(offset, broker commit timestamp ms)`` in log order."""


def o2_bound_per_s(groups: int, partitions: int = PARTITIONS) -> float:
    """Checkpoints per second O2 allows: at most one per group-partition per ``FOLLOW_TICK_S``, and per commit."""
    from mirrorspark.replication.connector.commit_follower import FOLLOW_TICK_S

    return min(groups * partitions / COMMIT_EVERY_S, groups * partitions / FOLLOW_TICK_S)


def commit_latencies(source: Commits, target: Commits, window_ms: tuple[int, int]) -> tuple[list[tuple[int, int]], int]:
    """For each source commit inside ``window_ms`` (inclusive), the first target commit at or past its offset.

    Parameters
    ----------
    source, target:
        Commits per group-partition (the target's of the remote topic), in log order.
    window_ms:
        ``(first, last)`` source commit timestamps measured, epoch ms.

    Returns
    -------
    tuple[list[tuple[int, int]], int]
        ``(source commit timestamp, latency)`` per commit reached (latency = target commit timestamp - source commit
        timestamp, ms), and the commits never reached.
    """
    out: list[tuple[int, int]] = []
    missed = 0
    for key, commits in source.items():
        tgt = target.get(key, ())
        reached = list(itertools.accumulate((o for o, _ in tgt), max))  # bisectable: highest offset so far
        for offset, ts in commits:
            if not window_ms[0] <= ts <= window_ms[1]:
                continue
            i = bisect.bisect_left(reached, offset)
            if i == len(reached):
                missed += 1
            else:
                out.append((ts, tgt[i][1] - ts))
    return out, missed


def quarter_p50s(latencies: Sequence[tuple[int, int]], window_ms: tuple[int, int]) -> tuple[float, ...]:
    """p50 of the ``(source commit ms, latency ms)`` pairs of each quarter of ``window_ms`` (``nan``: none there)."""
    span = max(1, window_ms[1] - window_ms[0] + 1)
    quarters: list[list[int]] = [[], [], [], []]
    for ts, ms in latencies:
        quarters[min(3, max(0, (ts - window_ms[0]) * 4 // span))].append(ms)
    return tuple(statistics.median(q) if q else float("nan") for q in quarters)


@dataclass(frozen=True)
class CommitsResult:
    """One run of the commits case.

    Attributes
    ----------
    run, groups, partitions, seconds, warmup_s, tasks_max:
        Run index, groups committing, partitions each commits, measured and unmeasured seconds, ``tasks.max``.
    start_s:
        Seconds from launching ``mirrorspark run`` until the preloaded records were on the target.
    window_s:
        Wall seconds of the measured window.
    requests, request_errors, committer_late_s, committer_cores:
        The committer's group commits sent and failed, its largest delay behind schedule (s), its CPU cores.
    commits:
        Offset commits (group-partition records) on the source inside the window.
    latencies_ms:
        Per measured commit reached on the target: target commit - source commit, ms (ascending).
    quarter_p50_ms:
        p50 latency of the commits made in each quarter of the window, ms (growing: the follower falls behind).
    missed:
        Measured commits never reached on the target.
    checkpoints:
        Checkpoint records written to the target's checkpoints topic inside the window.
    driver_cpu_s, tree_cpu_s:
        CPU seconds of the driver process, and of the run's tree per role, inside the window.
    baseline_driver_cores:
        Driver cores before any group committed (flow following, trickle running).
    broker_cores, other_cores, idle_before_cores:
        Both brokers, processes outside this benchmark's tree, the machine before the run; cores.
    error:
        Why the run failed, else ``""``.
    """

    run: int
    groups: int
    partitions: int
    seconds: float
    warmup_s: float
    tasks_max: int
    start_s: float = 0.0
    window_s: float = 0.0
    requests: int = 0
    request_errors: int = 0
    committer_late_s: float = 0.0
    committer_cores: float = 0.0
    commits: int = 0
    latencies_ms: tuple[int, ...] = ()
    quarter_p50_ms: tuple[float, ...] = ()
    missed: int = 0
    checkpoints: int = 0
    driver_cpu_s: float = 0.0
    tree_cpu_s: Mapping[str, float] = field(default_factory=dict)
    baseline_driver_cores: float = 0.0
    broker_cores: float = 0.0
    other_cores: float = 0.0
    idle_before_cores: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        """Measured, every commit made, every measured commit reached on the target."""
        return not self.error and self.commits > 0 and not self.missed and not self.request_errors

    def pct(self, q: float) -> float:
        """Nearest-rank percentile ``q`` (0..100) of the latencies, ms."""
        return _percentile(self.latencies_ms, q)

    @property
    def checkpoints_per_s(self) -> float:
        """Checkpoint records written per second of the window."""
        return self.checkpoints / self.window_s if self.window_s > 0 else 0.0

    @property
    def driver_cores(self) -> float:
        """The driver's CPU over the window, in cores (1.0 = one core busy)."""
        return self.driver_cpu_s / self.window_s if self.window_s > 0 else 0.0

    @property
    def driver_s_per_1000(self) -> float:
        """The driver's CPU seconds per 1 000 offset commits (``nan`` without commits)."""
        return self.driver_cpu_s * 1000.0 / self.commits if self.commits else float("nan")

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form (latencies as percentiles)."""
        return {
            "run": self.run,
            "groups": self.groups,
            "partitions": self.partitions,
            "seconds": self.seconds,
            "warmup_s": self.warmup_s,
            "tasks_max": self.tasks_max,
            "start_s": round(self.start_s, 3),
            "window_s": round(self.window_s, 3),
            "requests": self.requests,
            "request_errors": self.request_errors,
            "committer_late_s": round(self.committer_late_s, 3),
            "committer_cores": round(self.committer_cores, 3),
            "commits": self.commits,
            "reached": len(self.latencies_ms),
            "missed": self.missed,
            "p50_ms": self.pct(50),
            "p99_ms": self.pct(99),
            "max_ms": self.latencies_ms[-1] if self.latencies_ms else None,
            "quarter_p50_ms": list(self.quarter_p50_ms),
            "checkpoints": self.checkpoints,
            "checkpoints_per_s": round(self.checkpoints_per_s, 1),
            "o2_bound_per_s": o2_bound_per_s(self.groups, self.partitions),
            "driver_cores": round(self.driver_cores, 4),
            "driver_s_per_1000_commits": round(self.driver_s_per_1000, 4) if self.commits else None,
            "baseline_driver_cores": round(self.baseline_driver_cores, 4),
            "tree_cpu_s": {k: round(v, 3) for k, v in self.tree_cpu_s.items()},
            "broker_cores": round(self.broker_cores, 3),
            "other_cores": round(self.other_cores, 3),
            "idle_before_cores": round(self.idle_before_cores, 3),
            "ok": self.ok,
            "error": self.error,
        }


# --------------------------------------------------------------------------- one run


@dataclass
class _Marks:
    """CPU and checkpoints at one moment of a run."""

    t: float
    tree: cpu.CpuSnapshot
    brokers: cpu.CpuSnapshot
    ours: cpu.CpuSnapshot
    machine: cpu.MachineCpu
    checkpoints: int


def _mark(env: BenchEnv, pid: int, checkpoints: Any) -> _Marks:
    brokers = env.broker_pids()
    return _Marks(
        t=time.monotonic(),
        tree=cpu.snapshot(pid, exclude=brokers, root_role="driver-py"),
        brokers=cpu.snapshot_pids(brokers, "broker"),
        ours=cpu.snapshot(os.getpid()),
        machine=cpu.machine_cpu(),
        checkpoints=int(checkpoints()),
    )


def _sleep_until(wall: float, rep: _Replicator) -> None:
    _wait(f"wall clock {wall:.1f}", lambda: time.time() >= wall, max(0.0, wall - time.time()) + 60.0, rep)


def run_commits(
    env: BenchEnv,
    *,
    groups: int,
    tasks_max: int,
    seconds: float = 60.0,
    warmup_s: float = 10.0,
    baseline_s: float = 10.0,
    partitions: int = PARTITIONS,
    run: int = 1,
    wait_idle_s: float = 0.0,
    start_timeout_s: float = 600.0,
    drain_timeout_s: float = 60.0,
) -> CommitsResult:
    """Measure one flow following ``groups`` groups x ``partitions`` partitions committing every second (fresh flow).

    Parameters
    ----------
    env, tasks_max, run:
        Started clusters, ``tasks.max`` of the flow, the run index to record.
    seconds, warmup_s, baseline_s:
        Measured seconds of commits, unmeasured seconds of commits before them, and measured seconds before any
        commit (the driver following idle groups).
    wait_idle_s:
        Before the run, wait up to this many seconds for the machine to be idle.
    start_timeout_s, drain_timeout_s:
        Deadline of the flow's first copy; seconds the last commits may take to reach the target afterwards.

    Returns
    -------
    CommitsResult
        With ``error`` set if the run failed.
    """
    plan = _Plan(groups, partitions, seconds, warmup_s, baseline_s, env.fresh_alias(), env.work_dir)
    idle_before = cpu.wait_idle(wait_idle_s)
    shutil.rmtree(plan.work, ignore_errors=True)
    plan.work.mkdir(parents=True)
    env.create_topic(SOURCE, plan.topic, partitions)
    trickle = Trickle(env.bootstrap(SOURCE), plan.topic, partitions)
    trickle.preload(plan.ticks + 10)
    extra = {"groups": f"{plan.prefix}.*", "emit.checkpoints.on.commit": "true", "sync.group.offsets.enabled": "true"}
    path = plan.work / "mm2.properties"
    path.write_text(env.mm2_properties(plan.alias, contender_properties("mirrorspark", plan.topic, tasks_max, extra)))
    rep = _Replicator(env, "mirrorspark", path)
    figures: dict[str, Any] = {}
    error = ""
    try:
        figures = _measure(env, rep, trickle, plan, start_timeout_s, drain_timeout_s)
    except Exception as e:
        log.exception("commits run %d failed", run)
        error = f"{type(e).__name__}: {e}"
    finally:
        trickle.stop()
        rep.stop()
    _clean_up(env, plan.alias, plan.topic, [f"{plan.prefix}{i}" for i in range(groups)])
    return CommitsResult(
        run=run, groups=groups, partitions=partitions, seconds=seconds, warmup_s=warmup_s, tasks_max=tasks_max,
        **figures, idle_before_cores=idle_before, error=error,
    )  # fmt: skip


@dataclass(frozen=True)
class _Plan:
    """One run's sizes and names: topic ``bench-commits-<alias>``, groups ``bench-commits-<alias>-g<i>``."""

    groups: int
    partitions: int
    seconds: float
    warmup_s: float
    baseline_s: float
    alias: str
    work_dir: Path

    @property
    def topic(self) -> str:
        return f"bench-commits-{self.alias}"

    @property
    def prefix(self) -> str:
        return f"bench-commits-{self.alias}-g"

    @property
    def ticks(self) -> int:
        return int(self.warmup_s + self.seconds)

    @property
    def work(self) -> Path:
        return self.work_dir / f"commits-{self.alias}"


def _measure(
    env: BenchEnv, rep: _Replicator, trickle: Trickle, plan: _Plan, start_timeout_s: float, drain_timeout_s: float
) -> dict[str, Any]:
    """Launch the flow, measure the baseline and the window, drain, match the commits; return the figures."""
    from bench.sampler import EndOffsets

    remote = f"{plan.alias}.{plan.topic}"
    t0 = time.monotonic()
    rep.launch()
    copied, preloaded = EndOffsets(env.bootstrap(TARGET), remote, plan.partitions), (plan.ticks + 10) * plan.partitions
    start_s = _wait("the preloaded records on the target", lambda: copied() >= preloaded, start_timeout_s, rep) - t0
    trickle.start()
    checkpoints = EndOffsets(env.bootstrap(TARGET), f"{plan.alias}.checkpoints.internal", 1)
    b0 = _mark(env, rep.pid, checkpoints)
    _sleep_until(time.time() + plan.baseline_s, rep)
    b1 = _mark(env, rep.pid, checkpoints)
    logs = (
        OffsetsLog(env.bootstrap(SOURCE), plan.topic, plan.prefix),
        OffsetsLog(env.bootstrap(TARGET), remote, plan.prefix),
    )
    (w0, a), (w1, b), sent = _commit_window(env, rep, checkpoints, plan)

    def drained() -> bool:
        logs[1].read()
        return logs[1].reached(plan.ticks) >= plan.groups * plan.partitions

    try:
        _wait("every last commit on the target", drained, drain_timeout_s, rep)
    except RuntimeError as e:  # the figures say which commits never arrived
        log.warning("commits: %s", e)
    logs[0].read()
    window_ms = (int(w0 * 1000), int(w1 * 1000))
    latencies, missed = commit_latencies(logs[0].commits, logs[1].commits, window_ms)
    for x in logs:
        x.close()
    span, tree = b.t - a.t, cpu.delta(a.tree, b.tree)
    return {
        "start_s": start_s,
        "window_s": span,
        "requests": int(sent["sent"]),
        "request_errors": int(sent["errors"]),
        "committer_late_s": float(sent["late_s"]),
        "committer_cores": float(sent["cpu_s"]) / (plan.ticks * COMMIT_EVERY_S),
        "commits": sum(1 for c in logs[0].commits.values() for _, ts in c if window_ms[0] <= ts <= window_ms[1]),
        "latencies_ms": tuple(sorted(x for _, x in latencies)),
        "quarter_p50_ms": quarter_p50s(latencies, window_ms),
        "missed": missed,
        "checkpoints": b.checkpoints - a.checkpoints,
        "driver_cpu_s": tree.by_role.get("driver-py", 0.0),
        "tree_cpu_s": dict(tree.by_role),
        "baseline_driver_cores": cpu.delta(b0.tree, b1.tree).by_role.get("driver-py", 0.0) / (b1.t - b0.t),
        "broker_cores": cpu.delta(a.brokers, b.brokers).total_s / span,
        "other_cores": max(0.0, (b.machine - a.machine).busy_s - cpu.delta(a.ours, b.ours).total_s) / span,
    }


def _commit_window(
    env: BenchEnv, rep: _Replicator, checkpoints: Any, plan: _Plan
) -> tuple[tuple[float, _Marks], tuple[float, _Marks], dict[str, Any]]:
    """Run the committer; return the window's two marks with their wall clocks, and the committer's counts."""
    start_wall = time.time() + 1.0
    out = plan.work / "committer.json"
    spec = {"source": env.bootstrap(SOURCE), "topic": plan.topic, "prefix": plan.prefix, "groups": plan.groups,
            "partitions": plan.partitions, "ticks": plan.ticks, "start_wall": start_wall, "out": str(out)}  # fmt: skip
    committer = launch_bench_child(
        ["-X", "faulthandler", "-m", "bench.committer", "--commit", json.dumps(spec)], plan.work / "committer.log"
    )
    try:
        _sleep_until(start_wall + plan.warmup_s, rep)
        a = time.time(), _mark(env, rep.pid, checkpoints)
        _sleep_until(start_wall + plan.warmup_s + plan.seconds, rep)
        b = time.time(), _mark(env, rep.pid, checkpoints)
        _wait("the committer to finish", lambda: committer.poll() is not None, 120.0, rep)
    finally:
        if committer.poll() is None:
            committer.kill()
            committer.wait()
    if committer.returncode != 0:
        raise RuntimeError(f"the committer failed ({committer.returncode}): see {plan.work / 'committer.log'}")
    return a, b, json.loads(out.read_text())


def _clean_up(env: BenchEnv, alias: str, topic: str, groups: Sequence[str]) -> None:
    """Delete the run's topics and its groups on both clusters (best effort)."""
    from confluent_kafka.admin import AdminClient

    try:
        env.delete_flow_topics(alias)
        env.delete_topics(SOURCE, [topic])
        for side in (SOURCE, TARGET):
            admin = AdminClient({"bootstrap.servers": env.bootstrap(side), "log_level": 0})
            for i in range(0, len(groups), 100):
                for f in admin.delete_consumer_groups(list(groups[i : i + 100]), request_timeout=30).values():
                    try:
                        f.result(timeout=60)
                    except Exception:  # not on that cluster (never synced)
                        log.debug("deleting a group on %s", side, exc_info=True)
    except Exception:
        log.warning("cleaning up after commits run %s failed", alias, exc_info=True)


def run_commits_case(env: BenchEnv, *, runs: int = 1, pause_s: float = 3.0, **kwargs: Any) -> list[CommitsResult]:
    """Run :func:`run_commits` ``runs`` times (``kwargs``: ``groups``, ``tasks_max``, ``seconds``, ...)."""
    results = []
    for r in range(1, runs + 1):
        res = run_commits(env, run=r, **kwargs)
        log.info("commits %s", res.to_json())
        results.append(res)
        time.sleep(pause_s)
    return results


# --------------------------------------------------------------------------- report


def _med(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def commits_markdown(results: Sequence[CommitsResult]) -> str:
    """One table row per run, then what MM2's defaults give and the failures."""
    if not results:
        return "_no commits runs_\n"
    from mirrorspark.replication.connector.commit_follower import FOLLOW_TICK_S

    first = results[0]
    gp = first.groups * first.partitions
    lines = [
        f"{first.groups:,} groups x {first.partitions} partitions ({gp:,} group-partitions) committing every "
        f"{COMMIT_EVERY_S:g} s on the source ({first.groups:,} `alter_consumer_group_offsets` per second, groups "
        f"Empty), one flow `mirrorspark run` (tasks.max={first.tasks_max}) with `emit.checkpoints.on.commit=true` and "
        f"`sync.group.offsets.enabled=true`, MM2's intervals otherwise; {first.warmup_s:g} s unmeasured, then "
        f"{first.seconds:g} s measured. Latency: the source broker's commit timestamp to the target broker's first "
        "commit of that group-partition at or past it (both clusters' `__consumer_offsets`). Driver = the "
        "`mirrorspark run` Python process (psutil); CPU per 1,000 offset commits = group-partition records.",
        "",
        "| run | commits/s | latency p50 / p99 / max ms | p50 by quarter of the window ms | reached / missed "
        "| checkpoints/s | O2 bound /s "
        "| driver % of a core | driver % before commits | driver CPU s per 1,000 commits | JVM / py workers cores "
        "| brokers cores | committer cores, late s | other procs cores |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if r.error:
            lines.append(f"| {r.run} | FAILED |" + " |" * 12)
            continue
        w = r.window_s or float("nan")
        mx = r.latencies_ms[-1] if r.latencies_ms else float("nan")
        jvm, py = (r.tree_cpu_s.get(k, 0.0) / w for k in ("spark-jvm", "py-workers"))
        lines.append(
            f"| {r.run} | {r.commits / w:,.0f} | {r.pct(50):,.0f} / {r.pct(99):,.0f} / {mx:,.0f} "
            f"| {' / '.join(f'{q:,.0f}' for q in r.quarter_p50_ms)} "
            f"| {len(r.latencies_ms):,} / {r.missed:,} | {r.checkpoints_per_s:,.0f} "
            f"| {o2_bound_per_s(r.groups, r.partitions):,.0f} | {100 * r.driver_cores:.1f} "
            f"| {100 * r.baseline_driver_cores:.1f} | {r.driver_s_per_1000:.3f} | {jvm:.2f} / {py:.2f} "
            f"| {r.broker_cores:.2f} | {r.committer_cores:.2f}, {r.committer_late_s:.2f} | {r.other_cores:.2f} |"
        )
    lines += [
        "",
        f"O2 bound: at most one checkpoint per group-partition per `FOLLOW_TICK_S` ({FOLLOW_TICK_S:g} s) and one per "
        f"commit: min({gp:,} / {COMMIT_EVERY_S:g} s, {gp:,} / {FOLLOW_TICK_S:g} s) per second. "
        f"MirrorMaker 2 (not run; no such feature): a checkpoint every `emit.checkpoints.interval.seconds` "
        f"({MM2_CHECKPOINT_S} s), then a sync every `sync.group.offsets.interval.seconds` ({MM2_SYNC_S} s): a commit "
        f"reaches the target group up to ~{MM2_REFERENCE_S} s later (~{MM2_REFERENCE_S // 2} s on average), and "
        f"it writes {gp:,} checkpoints per {MM2_CHECKPOINT_S} s at most.",
    ]
    for r in results:
        if r.error or not r.ok:
            why = (
                r.error.splitlines()[0]
                if r.error
                else (f"{r.missed} commit(s) never reached the target, {r.request_errors} commit request(s) failed")
            )
            lines += ["", f"- commits run {r.run}: {why}"]
    return "\n".join(lines) + "\n"


def commits_lines(results: Sequence[CommitsResult]) -> list[str]:
    """Headline: ``commits <G> groups x <P>: source->target commit p50 <a> ms, p99 <b> ms; ...`` (medians)."""
    ok = [r for r in results if not r.error and r.commits]
    if not ok:
        return [f"commits {results[0].groups} groups: FAILED"] if results else []
    r0 = ok[0]
    return [
        f"commits {r0.groups:,} groups x {r0.partitions}: source->target commit p50 "
        f"{_med([r.pct(50) for r in ok]):,.0f} ms, p99 {_med([r.pct(99) for r in ok]):,.0f} ms "
        f"(MM2 defaults: up to ~{MM2_REFERENCE_S} s); {_med([r.checkpoints_per_s for r in ok]):,.0f} checkpoints/s "
        f"(O2 bound {o2_bound_per_s(r0.groups, r0.partitions):,.0f}); driver "
        f"{100 * _med([r.driver_cores for r in ok]):.0f}% of a core, "
        f"{_med([r.driver_s_per_1000 for r in ok]):.3f} CPU s per 1,000 commits; "
        f"{sum(r.missed for r in ok)} missed"
    ]


def commits_json(results: Sequence[CommitsResult]) -> list[dict[str, Any]]:
    """Plain-JSON form of every run (for ``bench/results/*.json``)."""
    return [r.to_json() for r in results]
