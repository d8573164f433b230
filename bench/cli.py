"""``python -m bench``: run benchmark cases against local clusters and write the results.

Usage (from the repository root)::

    .venv/bin/python -m bench [--quick] [--read-modes] [--records N] [--record-size B]
                              [--partitions P] [--runs R] [--out FILE] ...

Cases (with no case flag, every case runs):

``--read-modes``
    ``mirrorspark.read.mode`` ``consumer`` vs ``spark-kafka``, same process, same warm
    SparkSession, alternating runs; the last line printed is
    ``read-mode ratio spark-kafka/consumer: <x>`` (median records/s ratio).

Sizes: the default (full) workload is 1,000,000 records x 1 KiB (~1 GB) over 12 partitions,
3 runs; ``--quick`` is 200,000 x 1 KiB, 12 partitions, 3 runs. ``--records``,
``--record-size``, ``--partitions`` and ``--runs`` override either.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bench import cpu, report
from bench.env import BenchEnv
from bench.suite import Case, read_modes_case, run_case
from bench.workload import Workload

__all__ = ["main"]

BENCH_DIR = Path(__file__).resolve().parent
"""``<repo>/bench``."""

FULL = {"records": 1_000_000, "record_size": 1024, "partitions": 12, "runs": 3}
QUICK = {"records": 200_000, "record_size": 1024, "partitions": 12, "runs": 3}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark mirrorspark on local Kafka clusters (started and stopped by the benchmark).",
    )
    p.add_argument("--quick", action="store_true", help="small workload: 200k records x 1 KiB, 12 partitions, 3 runs")
    p.add_argument("--read-modes", action="store_true", help="run only the read-mode comparison")
    p.add_argument("--records", type=int, metavar="N", help="records in the workload")
    p.add_argument("--record-size", type=int, metavar="B", help="bytes per record value")
    p.add_argument("--partitions", type=int, metavar="P", help="partitions of the source topic")
    p.add_argument("--runs", type=int, metavar="R", help="measured runs per contender (medians; >= 3 advised)")
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="results markdown file (default bench/results/<date>-<host>-<case>.md; a .json twin is written too)",
    )
    p.add_argument(
        "--tasks",
        type=int,
        default=os.cpu_count() or 2,
        metavar="T",
        help="tasks.max of the flows, i.e. Spark tasks per batch (default: CPU count, %(default)s)",
    )
    p.add_argument(
        "--batch-records",
        type=int,
        metavar="N",
        help="mirrorspark.batch.max.records.per.partition (default: mirrorspark's, 200000)",
    )
    p.add_argument("--master", default="local[*]", help="Spark master (default %(default)s)")
    p.add_argument(
        "--warmup-records",
        type=int,
        default=20_000,
        metavar="N",
        help="records of the untimed warm-up run per contender (0: none; default %(default)s)",
    )
    p.add_argument("--pause", type=float, default=2.0, metavar="S", help="idle seconds between runs (default 2)")
    p.add_argument(
        "--wait-idle",
        type=float,
        default=60.0,
        metavar="S",
        help="before each run wait up to S seconds for other processes to leave the machine idle (default 60)",
    )
    p.add_argument(
        "--label", default=None, help="machine label in result file names (default: hostname, else 'polyglot')"
    )
    p.add_argument("--no-readme", action="store_true", help="do not update the latest figures in bench/README.md")
    p.add_argument(
        "--work-dir",
        type=Path,
        default=BENCH_DIR / ".work",
        help="where the local clusters live (default bench/.work; wiped per case)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO (DEBUG for bench)")
    return p


def _size(args: argparse.Namespace) -> str:
    """``quick`` / ``full`` for the presets, ``custom`` when a size option overrides one."""
    if any(getattr(args, k) is not None for k in ("records", "record_size", "partitions")):
        return "custom"
    return "quick" if args.quick else "full"


def _workload(args: argparse.Namespace, name: str) -> tuple[Workload, int]:
    base = QUICK if args.quick else FULL
    records = args.records if args.records is not None else base["records"]
    size = args.record_size if args.record_size is not None else base["record_size"]
    parts = args.partitions if args.partitions is not None else base["partitions"]
    runs = args.runs if args.runs is not None else base["runs"]
    for flag, value, low in (("--records", records, 1), ("--record-size", size, 0), ("--partitions", parts, 1)):
        if value < low:
            raise SystemExit(f"{flag} must be >= {low}, got {value}")
    if runs < 1:
        raise SystemExit(f"--runs must be >= 1, got {runs}")
    return Workload(name, records, size, parts), runs


def _read_modes(args: argparse.Namespace) -> Case:
    workload, runs = _workload(args, "readmodes")
    return read_modes_case(
        workload=workload,
        runs=runs,
        tasks_max=args.tasks,
        batch_records=args.batch_records,
        warmup_records=args.warmup_records,
        pause_s=args.pause,
        wait_idle_s=args.wait_idle,
        size=_size(args),
    )


CASES: dict[str, tuple[str, Callable[[argparse.Namespace], Case]]] = {
    "read-modes": ("read_modes", _read_modes),
}
"""Case name -> (argparse attribute of its flag, builder). No flag given: every case runs, in this order."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected cases; print a table per case; write results and README.

    Parameters
    ----------
    argv:
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status: 0 when every contender of every case succeeded, 1 otherwise.
    """
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.verbose:
        logging.getLogger("bench").setLevel(logging.DEBUG)
    logging.getLogger("py4j").setLevel(logging.ERROR)
    command = shlex.join([".venv/bin/python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)])
    label = args.label or socket.gethostname() or "polyglot"
    if not cpu.have_psutil():
        print("warning: psutil is not installed: CPU figures cover the Python driver only", file=sys.stderr)

    selected = [name for name, (flag, _) in CASES.items() if getattr(args, flag)] or list(CASES)
    status = 0
    for name in selected:
        case = CASES[name][1](args)
        with BenchEnv(args.work_dir / name, master=args.master, spark_kafka_jars=True) as env:
            result = run_case(env, case)
        out = args.out
        if out is not None and len(selected) > 1:
            out = out.with_name(f"{out.stem}-{name}{out.suffix or '.md'}")
        path = report.write_results(out or report.results_path(BENCH_DIR / "results", result, label), result, command)
        if not args.no_readme:
            report.update_readme(BENCH_DIR / "README.md", result, path, command)
        print()
        print(f"results: {path}")
        print(report.table(result))
        if any(s.error for s in result.summaries):
            status = 1
    return status
