"""Where a copy task's CPU goes: py-spy over the copy tasks' Python workers during a bounded copy (issue #26).

``python -m bench.profile --workloads 100x1,1024x1`` starts the benchmark's clusters and SparkSession
(:class:`bench.env.BenchEnv`), loads each workload once, runs ``mirrorspark run --until-caught-up``
once to warm up and once under ``py-spy record --subprocesses`` (sampling this process and its
descendants, the PySpark workers among them), and writes, per workload, the functions of the copy
tasks' workers by their own samples (self) and by the samples of stacks they are on (total), as a
Markdown table (``bench/results/<date>-<host>-profile.md``) and the raw collapsed stacks of every
process in the work directory (``<work dir>/<name>-<size>x<partitions>.txt``; readable by flamegraph tools).

Only samples of a stack through ``run_copy_task`` count (the copy tasks' threads); the driver,
the JVMs and idle PySpark daemons are left out. py-spy samples wall-clock stacks, idle included
(``--idle`` off: a thread waiting in ``poll`` is not sampled), so the shares are of the CPU the copy
tasks' Python threads used, librdkafka's own threads apart.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.contenders import EXACTLY_ONCE, MirrorsparkContender
from bench.env import SOURCE, BenchEnv
from bench.workload import Workload, load_topic

RATE_HZ = 250
"""py-spy's samples per second per thread."""

TOP = 30
"""Functions listed per table."""

COPY_TASK_FRAME = "run_copy_task"
"""A stack through this function is a copy task's."""


@dataclass(frozen=True)
class Profile:
    """The copy tasks' samples of one run.

    ``stacks`` maps a collapsed stack (frames ``;``-joined, outermost first) to its samples.
    """

    workload: Workload
    stacks: Counter[str]
    records_per_s: float

    @property
    def samples(self) -> int:
        """Samples of the copy tasks' threads."""
        return sum(self.stacks.values())

    def self_top(self, n: int = TOP) -> list[tuple[str, int]]:
        """The ``n`` functions with the most samples at the top of the stack."""
        own: Counter[str] = Counter()
        for stack, count in self.stacks.items():
            own[stack.rsplit(";", 1)[-1]] += count
        return own.most_common(n)

    def total_top(self, n: int = TOP) -> list[tuple[str, int]]:
        """The ``n`` functions on the most samples' stacks (each counted once per stack)."""
        total: Counter[str] = Counter()
        for stack, count in self.stacks.items():
            for frame in set(stack.split(";")):
                total[frame] += count
        return total.most_common(n)


def copy_task_stacks(lines: Iterable[str]) -> Counter[str]:
    """Return the copy tasks' stacks of py-spy's raw output (``frame;frame;... count`` per line).

    Each stack is cut to its frames from ``run_copy_task`` on.
    """
    stacks: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        at = next((i for i, f in enumerate(frames) if f.startswith(f"{COPY_TASK_FRAME} ")), None)
        if at is not None:
            stacks[";".join(frames[at:])] += int(count)
    return stacks


def profile_run(env: BenchEnv, workload: Workload, out: Path, *, exactly_once: bool = False) -> Profile:
    """Run one bounded copy of ``workload`` under py-spy; return the copy tasks' samples (raw stacks in ``out``).

    ``exactly_once``: the copy writes in transactions (:data:`~bench.contenders.EXACTLY_ONCE`).
    """
    contender = _contender(exactly_once=exactly_once)
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if py_spy is None:
        raise SystemExit("error: py-spy is missing: make install (it is in the dev extra)")
    cmd = [py_spy, "record", "--pid", str(os.getpid()), "--subprocesses", "--rate", str(RATE_HZ)]
    cmd += ["--format", "raw", "--output", str(out), "--nonblocking"]
    spy = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        time.sleep(2.0)  # py-spy attached
        m = contender.run(env, workload, 1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            spy.send_signal(signal.SIGINT)
        _, err = spy.communicate(timeout=120)
    if m.error:
        raise SystemExit(f"error: the profiled run failed: {m.error}")
    if not out.is_file():
        raise SystemExit(f"error: py-spy wrote no profile: {err.decode(errors='replace')[-2000:]}")
    rate = m.records / m.copy_s if m.copy_s else 0.0
    return Profile(workload, copy_task_stacks(out.read_text().splitlines()), rate)


def _contender(*, exactly_once: bool) -> MirrorsparkContender:
    if exactly_once:
        return MirrorsparkContender(tasks_max=2, extra=EXACTLY_ONCE, name="mirrorspark-eos")
    return MirrorsparkContender(tasks_max=2)


def markdown(profiles: list[Profile], command: str) -> str:
    """The profiles as one Markdown document."""
    lines = [
        f"# Copy task profile: {dt.date.today().isoformat()} on {socket.gethostname()}",
        "",
        f"Command: `{command}`. py-spy {RATE_HZ} Hz over the copy tasks' Python workers "
        "(stacks through `run_copy_task`), one bounded copy (`mirrorspark run --until-caught-up`, tasks.max=2) "
        "after a warm-up; librdkafka's own threads are not sampled. Shares are of the copy tasks' samples.",
    ]
    for p in profiles:
        w = p.workload
        lines += [
            "",
            f"## {w.record_size} B x {w.partitions}: {w.records:,} records, {p.records_per_s:,.0f} records/s",
            "",
            f"{p.samples:,} samples.",
        ]
        for title, top in (("self", p.self_top()), ("total", p.total_top())):
            lines += ["", f"| {title} % | samples | function (file:line) |", "|---|---|---|"]
            lines += [f"| {100 * c / max(1, p.samples):.1f} | {c:,} | `{f}` |" for f, c in top]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Profile each workload; print where the Markdown went."""
    ap = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="100x1,1024x1", help="SIZExPARTITIONS, comma-separated")
    ap.add_argument("--records", type=int, default=1_000_000, help="records per workload")
    ap.add_argument(
        "--out", type=Path, default=None, help="Markdown file (default bench/results/<date>-<host>-profile.md)"
    )
    ap.add_argument("--work-dir", type=Path, default=Path("bench/.work/profile"))
    ap.add_argument(
        "--exactly-once", action="store_true", help="profile mirrorspark-eos (records in transactions, KIP-618)"
    )
    args = ap.parse_args(argv)
    out = args.out or Path("bench/results") / f"{dt.date.today().isoformat()}-{socket.gethostname()}-profile.md"
    workloads = []
    for spec in args.workloads.split(","):
        size, _, parts = spec.partition("x")
        workloads.append(Workload(f"profile-{size}b-p{parts}", args.records, int(size), int(parts)))
    profiles = []
    with BenchEnv(args.work_dir, master="local[2]") as env:
        for w in workloads:
            load_topic(env.bootstrap(SOURCE), w)
            warm = Workload(f"{w.name}-warm", 20_000, w.record_size, w.partitions)
            load_topic(env.bootstrap(SOURCE), warm)
            _contender(exactly_once=args.exactly_once).run(env, warm, 0)
            raw = args.work_dir / f"{out.stem}-{w.record_size}x{w.partitions}.txt"
            profiles.append(profile_run(env, w, raw, exactly_once=args.exactly_once))
            print(f"profiled {w.record_size} B x {w.partitions}: {profiles[-1].samples:,} samples -> {raw}", flush=True)
    out.write_text(markdown(profiles, "python -m bench.profile " + " ".join(argv or sys.argv[1:])))
    print(f"profile: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
