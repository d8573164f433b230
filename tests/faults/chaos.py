"""The randomized fault checker (issue #23 item 7): ``make faults-random SEED=7 DURATION=180 MODE=both``.

Usage::

    python tests/faults/chaos.py --seed 7 --duration 180 --mode both [--rate 200] [--kinds kill-run,...]

1. The schedule is drawn from the seed alone (:func:`chaos_faults.draw_schedule`) and printed
   first: the same seed replays the same faults, on the same topics and partitions, in the same order.
2. A source (1 broker) and a target (3 brokers, ``min.insync.replicas=2``, or ``--target-brokers``)
   start in a directory of their own; ``--topics`` source topics feed records with unique,
   checkable values (:mod:`chaos_feed`), and a consumer group reads them on the source, committing
   as it reads. One ``mirrorspark run`` (a subprocess in its own session) runs one flow per mode:
   the source under alias ``alo`` to the target as ``alo_t`` (at least once) and ``eos`` to
   ``eos_t`` (exactly once), so both modes live through the same faults at the same moments.
3. Once every remote topic receives records, the faults strike at their times; a run that exits
   by itself is relaunched, as an operator's supervisor would (and counted).
4. After ``--duration`` s the faults are repaired, the feed stops, the flows get time to copy the
   rest; the run stops; :mod:`chaos_check` proves the verdict from the clusters and the fault log
   (which source records each ``delete-records``/``recreate-topic`` removed, :attr:`Cell.removed`:
   a gap the system reports excuses only those) and prints it as a table. Exit code 1 on any
   violation (each line names the seed, the violation and the records), 0 otherwise. One JSON
   line per mode goes to ``build/faults/random.jsonl`` for ``docs/faults.md`` (:mod:`report`).

The at-least-once bound (:func:`duplicate_bound`) is stated per fault from the commit rule: a
copy task commits every ``offset.flush.interval.ms`` (``--flush-ms``) and, with
``--commit-every N``, also every N acknowledged records.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent, HERE.parent / "integration", HERE.parents[1] / "src"):  # as pytest's conftest does
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))  # this checkout's mirrorspark first, then the test helpers

from chaos_check import (  # noqa: E402
    FlowVerdict,
    add_position_violations,
    check_flow,
    read_checkpoints,
    read_copies,
    status_gaps,
    watermarks,
)
from chaos_faults import FAULTS, Cell, Planned, draw_schedule, format_schedule  # noqa: E402
from chaos_feed import ChaosFeed, SourceGroup  # noqa: E402
from figures import ROOT, machine  # noqa: E402
from proxy import proxy_every_broker  # noqa: E402
from scenario import MODES, RunProcess, mode_properties  # noqa: E402

from mirrorspark.config.properties import format_properties  # noqa: E402
from mirrorspark.kafka.local.clusters import load_clusters, restart_cluster, start_clusters, stop_clusters  # noqa: E402

SOURCE_ALIAS = {"at-least-once": "alo", "exactly-once": "eos"}
TARGET_ALIAS = {"at-least-once": "alo_t", "exactly-once": "eos_t"}
DEFAULT_KINDS = tuple(FAULTS)
FIGURES = ROOT / "build" / "faults" / "random.jsonl"
SLACK_S = 4.0
"""Seconds of records per fault the bound allows beyond the commit rule: commits in flight, acks pending."""


@dataclass(frozen=True)
class Options:
    """One checker run's settings (``--help`` describes each)."""

    seed: int
    duration_s: float
    modes: tuple[str, ...]
    rate: int
    topics: int
    partitions: int
    tasks_max: int
    target_brokers: int
    spacing_s: float
    kinds: tuple[str, ...]
    flush_ms: int
    commit_every: int
    settle_s: float
    extra: tuple[str, ...]
    figures: Path


def duplicate_bound(
    faults: int, *, rate: int, flush_ms: int, tasks: int, commit_every: int, outage_s: float = 0.0
) -> int:
    """The at-least-once bound on records copied twice, for ``faults`` faults (MM2's commit rule, per task).

    A fault that ends copy tasks without their last commit (kill of the run, of a worker, of the
    JVM; a lost lease; a generation change) makes their successors copy again what they copied
    since their last commit. Time rule: a task commits every ``flush_ms``, so all tasks together
    re-copy at most ``rate x (flush_ms / 1000 + SLACK_S)`` records of a caught-up feed (``rate``
    records/s). Volume rule (``commit_every`` > 0): a task also commits every ``commit_every``
    acknowledged records, so ``tasks`` tasks re-copy at most ``tasks x commit_every`` plus the
    slack, whatever the backlog (the time rule alone does not bound a kill during a backlog).
    Per fault the smaller of the two, times ``faults``. Plus what the feed produced during
    ``outage_s`` seconds of outages (a target broker down, the run frozen): a flow that loses its
    lease meanwhile ends its tasks without a commit, and what they had queued reaches the target
    anyway (as :func:`faultkit.duplicate_bound` allows for a target outage).
    """
    by_time = math.ceil(rate * (flush_ms / 1000 + SLACK_S))
    per_fault = by_time if commit_every <= 0 else min(by_time, tasks * commit_every + math.ceil(rate * SLACK_S))
    return faults * per_fault + math.ceil(rate * outage_s)


def properties(
    o: Options, source: Any, target: Any, topics: list[str], group: str, *, executor_target: str | None = None
) -> str:
    """The ``mm2.properties`` of the run: one flow per mode of ``o.modes``, from ``source`` to ``target``.

    ``executor_target``: the target's direct ``bootstrap.servers`` for the copy tasks when the
    driver's go through proxies (``cut-driver``).
    """
    props: dict[str, str] = {
        "clusters": ", ".join([*(SOURCE_ALIAS[m] for m in o.modes), *(TARGET_ALIAS[m] for m in o.modes)])
    }
    for mode in o.modes:
        s, t = SOURCE_ALIAS[mode], TARGET_ALIAS[mode]
        for alias, cluster in ((s, source), (t, target)):
            for key, value in cluster.java_client_properties().items():
                props[f"{alias}.{key}"] = value
        props[f"{s}->{t}.enabled"] = "true"
        props[f"{t}.offset.flush.interval.ms"] = str(o.flush_ms)
        props.update(mode_properties(mode, s, t))
    for key in ("replication.factor", "offset-syncs.topic.replication.factor", "heartbeats.topic.replication.factor",
                "checkpoints.topic.replication.factor", "offset.storage.replication.factor",
                "config.storage.replication.factor", "status.storage.replication.factor"):  # fmt: skip
        props[key] = "-1"  # each cluster's default.replication.factor: its broker count (up to 3)
    props.update(
        {
            "topics": "|".join(topics),
            "groups": group,
            "tasks.max": str(o.tasks_max),
            "refresh.topics.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "sync.group.offsets.enabled": "false",
            "offset.lag.max": "100",
        }
    )
    if executor_target is not None:
        props["mirrorspark.executor.target.bootstrap.servers"] = executor_target
    for kind in o.kinds:
        FAULTS[kind].configure(props, [(SOURCE_ALIAS[m], TARGET_ALIAS[m]) for m in o.modes])
    for kv in o.extra:
        key, _, value = kv.partition("=")
        props[key.strip()] = value.strip()
    return format_properties(props, header=f"# mm2.properties of the randomized fault checker, seed {o.seed}")


def remote_topics(mode: str, topics: list[str]) -> list[str]:
    """The remote topics of ``mode``'s flow."""
    return [f"{SOURCE_ALIAS[mode]}.{t}" for t in topics]


def wait_copying(cell: Cell, modes: tuple[str, ...], topics: list[str], timeout_s: float = 900.0) -> None:
    """Wait until every remote topic of every flow holds records (relaunching a run that exits)."""
    deadline = time.monotonic() + timeout_s
    pending = {r for m in modes for r in remote_topics(m, topics)}
    while pending:
        supervise(cell)
        for remote in list(pending):
            with contextlib.suppress(Exception):  # not created yet, no leader yet
                if sum(watermarks(cell.target, remote, read_committed=True).values()) > 0:
                    pending.discard(remote)
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing copied into {sorted(pending)} within {timeout_s:.0f} s:\n{cell.run.tail()}")
        time.sleep(1.0)


def supervise(cell: Cell) -> None:
    """Relaunch the run if it exited by itself (an operator's supervisor), noting how it ended."""
    proc = cell.run.proc
    if proc is not None and proc.poll() is not None:
        cell.notes.append(f"run #{cell.run.launches} exited {proc.returncode} by itself: relaunched")
        print(f"  run #{cell.run.launches} exited {proc.returncode} by itself:\n{cell.run.tail(1500)}", flush=True)
        cell.run.proc = None
        cell.run.launch()


def strike(cell: Cell, plan: list[Planned], topics: list[str], duration_s: float) -> list[dict[str, Any]]:
    """Apply the schedule's faults at their times for ``duration_s`` s; returns what happened to each."""
    t0, applied = time.monotonic(), []
    todo = list(plan)
    while time.monotonic() - t0 < duration_s or todo:
        supervise(cell)
        now = time.monotonic()
        for due in [r for r in cell.restore if r[0] <= now]:
            cell.restore.remove(due)
            print(f"  t+{now - t0:6.1f} s  repair: {due[2]()}", flush=True)
        if todo and now - t0 >= todo[0].at_s:
            p = todo.pop(0)
            fault = FAULTS[p.kind]
            note = fault.skip(cell)
            if note is None:
                try:
                    note = fault.apply(cell, topics[p.params["topic"] % len(topics)], p.params)
                except Exception as e:  # a fault that could not be applied is a note, not a verdict
                    note = f"skipped: {type(e).__name__}: {e}"
            applied.append({"at_s": p.at_s, "kind": p.kind, "note": note})
            print(f"  t+{time.monotonic() - t0:6.1f} s  {p.kind:<15} {note}", flush=True)
        time.sleep(0.2)
    for _, what, repair in cell.restore:
        print(f"  end: repair {what}: {repair()}", flush=True)
    cell.restore.clear()
    return applied


def settle(cell: Cell, o: Options, topics: list[str], env: dict[str, str], props: Path, timeout_s: float) -> None:
    """Wait (up to ``timeout_s``) until every produced record is copied or in a gap, in every flow."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        supervise(cell)
        with contextlib.suppress(Exception):  # the status or a read failed: look again
            verdicts = check_all(cell, o, topics, env, props, bound_faults=0, quick=True)
            if all(v.lost == 0 for v in verdicts):
                return
        time.sleep(5.0)


def check_all(
    cell: Cell, o: Options, topics: list[str], env: dict[str, str], props: Path, *, bound_faults: int, quick: bool
) -> list[FlowVerdict]:
    """The verdict of every flow (``quick``: losses only, no checkpoints or stored positions)."""
    gaps = status_gaps(props, env)
    log = dict(cell.feed.log)
    lives = {t: cell.feed.incarnations(t) for t in topics}
    out = []
    for mode in o.modes:
        alias = SOURCE_ALIAS[mode]
        copies = read_copies(cell.target, remote_topics(mode, topics), read_committed=mode == "exactly-once")
        bound = (
            0
            if mode == "exactly-once"
            else duplicate_bound(
                bound_faults,
                rate=o.rate,
                flush_ms=o.flush_ms,
                tasks=o.tasks_max,
                commit_every=o.commit_every,
                outage_s=cell.outage_s,
            )
        )
        checkpoints = [] if quick else read_checkpoints(cell.target, alias)
        out.append(check_flow(mode, alias, log=log, lives=lives, copies=copies, gaps=gaps, removals=cell.removed,
                              checkpoints=checkpoints, bound=bound))  # fmt: skip
    return out


def verdict_table(seed: int, verdicts: list[FlowVerdict]) -> str:
    """The verdict as a text table, then one line per violation (naming the seed and the records)."""
    head = ("mode", "produced", "copied", "in gaps", "lost", "copied twice", "bound", "gaps named", "checkpoints",
            "verdict")  # fmt: skip
    rows = [
        (
            v.mode,
            v.produced,
            v.copied,
            v.in_gaps,
            v.lost,
            v.copied_twice,
            v.bound,
            v.gaps_named,
            v.checkpoints,
            "PASS" if v.ok else f"FAIL ({len(v.violations)})",
        )
        for v in verdicts
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    lines = [f"verdict of seed {seed}:"]
    for r in (head, *rows):
        lines.append("  " + "  ".join(str(x).rjust(w) for x, w in zip(r, widths, strict=True)))
    for v in verdicts:
        lines += ["  " + x.line(seed, v.mode) for x in v.violations]
    return "\n".join(lines)


def gap_lines(gaps: list[dict[str, Any]]) -> str:
    """The gaps ``status --json`` names, one line each (for the verdict's reader)."""
    lines = [f"gaps named by mirrorspark status --json: {len(gaps)}"]
    for g in gaps:
        ids = f" topic id {g['old_topic_id']} -> {g['new_topic_id']}" if g["reason"] == "recreated" else ""
        lines.append(
            f"  {g['flow']} {g['topic']}-{g['partition']} {g['reason']} {g['first_lost']}..{g['last_lost']}{ids}"
            f" at {g['at']}"
        )
    return "\n".join(lines)


def removal_lines(cell: Cell) -> str:
    """The fault log's removals (what each ``delete-records``/``recreate-topic`` removed), one line each."""
    lines = [f"source records removed by the faults (the fault log): {len(cell.removed)} removal(s)"]
    lines += [f"  {r.line()}" for r in cell.removed]
    return "\n".join(lines)


def record(o: Options, v: FlowVerdict, applied: list[dict[str, Any]], faults: int, cell: Cell) -> None:
    """Append one mode's row to ``o.figures`` (JSON lines: :mod:`report` renders the random-seed table)."""
    o.figures.parent.mkdir(parents=True, exist_ok=True)
    row = {
        "seed": o.seed,
        "mode": v.mode,
        "duration_s": o.duration_s,
        "faults": [f"{a['kind']}" + (" (skipped)" if str(a["note"]).startswith("skipped") else "") for a in applied],
        "faults_counted": faults,
        "outage_s": round(cell.outage_s, 1),
        "produced": v.produced,
        "lost": v.lost,
        "in_gaps": v.in_gaps,
        "copied_twice": v.copied_twice,
        "bound": v.bound,
        "gaps_named": v.gaps_named,
        "spurious_gaps": v.spurious_gaps,
        "removals": len(cell.removed),
        "verdict": "pass" if v.ok else "fail",
        "violations": [x.line(o.seed, v.mode) for x in v.violations][:10],
        "notes": cell.notes[:10],
        "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": machine(),
    }
    with o.figures.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def run(o: Options) -> int:
    """One seed, start to verdict; returns the exit code (0 pass, 1 violation)."""
    plan = draw_schedule(o.seed, o.duration_s, o.kinds, o.topics, spacing_s=o.spacing_s)
    print(format_schedule(o.seed, plan), flush=True)
    print(json.dumps({"seed": o.seed, "schedule": [asdict(p) for p in plan]}), flush=True)
    (ROOT / "build" / "faults").mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix=f"chaos-{o.seed}-", dir=ROOT / "build" / "faults"))
    code = 1
    try:
        code = _run(o, plan, base)
        return code
    finally:
        for alias in ("src", "tgt"):
            with contextlib.suppress(Exception):
                stop_clusters(base / alias)
        if code == 0:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"the clusters' data and the runs' logs (run-<n>.log) are kept in {base}", flush=True)


def _run(o: Options, plan: list[Planned], base: Path) -> int:
    src_dir, tgt_dir = base / "src", base / "tgt"
    extra = {"min.insync.replicas": "2"} if o.target_brokers >= 3 else {}
    src = start_clusters(["src"], base_dir=src_dir, brokers=1, timeout_s=300).cluster("src")
    tgt = start_clusters(["tgt"], base_dir=tgt_dir, brokers=o.target_brokers, extra_broker_props=extra, timeout_s=300)
    tag = f"chaos-{o.seed}-{uuid.uuid4().hex[:6]}"
    topics, group = [f"{tag}-t{i}" for i in range(o.topics)], f"{tag}-group"
    props = base / "mm2.properties"
    driver_target, proxies = tgt.cluster("tgt"), None
    if "cut-driver" in o.kinds:  # the driver's clients through proxies, the copy tasks direct
        proxies = proxy_every_broker(load_clusters(tgt_dir), "tgt")
        driver_target = replace(driver_target, bootstrap_servers=proxies.bootstrap_servers)
    direct = tgt.bootstrap("tgt") if proxies is not None else None
    props.write_text(properties(o, src, driver_target, topics, group, executor_target=direct))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    feed = ChaosFeed(src.bootstrap_servers, topics, partitions=o.partitions, rate=o.rate).start()
    reader = SourceGroup(src.bootstrap_servers, group, f"^{tag}-t.*")
    cell = Cell(RunProcess(props, base, env=env), feed, src.bootstrap_servers, tgt.bootstrap("tgt"), tgt_dir, "tgt",
                [SOURCE_ALIAS[m] for m in o.modes], driver_proxies=proxies)  # fmt: skip
    try:
        cell.run.launch()
        wait_copying(cell, o.modes, topics)
        print(f"copying into every remote topic: the faults begin ({len(plan)} over {o.duration_s:.0f} s)", flush=True)
        applied = strike(cell, plan, topics, o.duration_s)
        _repair_brokers(tgt_dir)
        feed.finish()
        reader.close()
        settle(cell, o, topics, env, props, o.settle_s)
        code = cell.run.stop()
        if code != 0:
            cell.notes.append(f"the last run did not stop cleanly on SIGTERM ({code})")
        faults = sum(1 for a in applied if not str(a["note"]).startswith("skipped")) + sum(
            1 for n in cell.notes if "by itself" in n
        )
        verdicts = check_all(cell, o, topics, env, props, bound_faults=faults, quick=False)
        ends = _feed_ends(cell, topics)
        for v in verdicts:
            alias = SOURCE_ALIAS[v.mode]
            foreign = {(t, part, off) for a, t, part, off in cell.foreign if a == alias}
            add_position_violations(v, cell.target, alias, ends, foreign)
        print(verdict_table(o.seed, verdicts), flush=True)
        print(gap_lines(status_gaps(props, env)), flush=True)
        print(removal_lines(cell), flush=True)
        for n in cell.notes:
            print(f"  note: {n}", flush=True)
        for v in verdicts:
            record(o, v, applied, faults, cell)
        return 0 if all(v.ok for v in verdicts) else 1
    finally:
        with contextlib.suppress(Exception):
            cell.run.stop(timeout_s=30)
        with contextlib.suppress(Exception):
            reader.close()
        with contextlib.suppress(Exception):
            feed.finish()
        if proxies is not None:
            proxies.close()


def _repair_brokers(tgt_dir: Path) -> None:
    """Start any target broker still down (a repair the schedule's end did not reach)."""
    clusters = load_clusters(tgt_dir)
    if any(b.pid == 0 for b in clusters.cluster("tgt").brokers):
        restart_cluster(clusters, "tgt", timeout_s=300)


def _feed_ends(cell: Cell, topics: list[str]) -> dict[tuple[str, int], int]:
    """``{(topic, partition): high watermark}`` of the source topics now (their live incarnation)."""
    out = {}
    for t in topics:
        for p, end in watermarks(cell.source, t, read_committed=False).items():
            out[(t, p)] = end
    return out


def options(argv: list[str] | None = None) -> Options:
    """Parse the command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True, help="the schedule's seed (replay a failing one)")
    ap.add_argument("--duration", type=float, default=120.0, help="seconds of faults (after copying began)")
    ap.add_argument("--mode", choices=(*MODES, "both"), default="both")
    ap.add_argument("--rate", type=int, default=200, help="records/s fed, all topics together")
    ap.add_argument("--topics", type=int, default=3, help="source topics")
    ap.add_argument("--partitions", type=int, default=2, help="partitions per source topic at the start")
    ap.add_argument("--tasks-max", type=int, default=2, help="tasks.max of each flow")
    ap.add_argument("--target-brokers", type=int, default=3, help="3: min.insync.replicas=2 (kill-leader needs 3)")
    ap.add_argument("--spacing", type=float, default=12.0, help="seconds between faults on average")
    ap.add_argument("--kinds", default=",".join(DEFAULT_KINDS), help=f"comma-separated of {', '.join(FAULTS)}")
    ap.add_argument("--flush-ms", type=int, default=1000, help="offset.flush.interval.ms of the flows")
    ap.add_argument("--commit-every", type=int, default=0, help="records per task between commits (0: time only)")
    ap.add_argument("--settle", type=float, default=240.0, help="seconds to wait for the copy to finish after")
    ap.add_argument("--set", action="append", default=[], help="extra mm2.properties entry key=value (repeatable)")
    ap.add_argument("--figures", type=Path, default=FIGURES, help="JSON-lines file of the results")
    a = ap.parse_args(argv)
    kinds = tuple(k.strip() for k in a.kinds.split(",") if k.strip())
    unknown = [k for k in kinds if k not in FAULTS]
    if unknown:
        ap.error(f"unknown fault kind(s) {unknown}: use {', '.join(FAULTS)}")
    return Options(
        seed=a.seed, duration_s=a.duration, modes=MODES if a.mode == "both" else (a.mode,), rate=a.rate,
        topics=a.topics, partitions=a.partitions, tasks_max=a.tasks_max, target_brokers=a.target_brokers,
        spacing_s=a.spacing, kinds=kinds, flush_ms=a.flush_ms, commit_every=a.commit_every, settle_s=a.settle,
        extra=tuple(a.set), figures=a.figures,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(run(options()))
