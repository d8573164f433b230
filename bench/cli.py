"""``python -m bench``: mirrorspark against MirrorMaker 2 and the hardware ceiling, on local clusters.

Usage (from the repository root)::

    .venv/bin/python -m bench            # full: ``make bench``
    .venv/bin/python -m bench --quick    # a few minutes: ``make bench-quick``

Cases (``--cases``, default all):

``compare``
    Per workload (``--workloads``, e.g. ``1024x12,100x96``: value bytes x partitions) one case:
    mirrorspark (``mirrorspark run --until-caught-up`` on its copy tasks), MirrorMaker 2 (defaults,
    and with a tuned data producer), the ceiling (the consume-only and produce-only passes with
    ``min(tasks.max, partitions)`` parallel clients each) and, in 1 KiB x 12 only unless named,
    both replicators with exactly-once on the target, alternately, ``--runs`` rounds, medians.
``transforms``
    1 KiB x 12 partitions, every other record with a header: mirrorspark and MM2 each without
    transforms, with a ``Filter`` + ``HasHeaderKey`` predicate dropping half the records, and with
    an ``InsertHeader`` on every record (the same Connect transform keys for both); medians as
    ``compare``.
``latency``
    5 000 records/s for 60 s (quick: 15 s) while mirrorspark (``mirrorspark run``), then MM2,
    replicates; p50/p99/max.
``scale``
    Workloads (``--scale-workloads``): one flow of 100 and 1 000 topics x 4 partitions, one flow of 100
    topics x 100 partitions (10 000 partitions), 50 flows of 20 topics x 4 in one process (quick: 100 and
    1 000 x 4, 10 x 100, 5 flows of 20): start time, time until all copied, peak RSS, idle CPU over 60 s
    (quick 20 s), medians and each run's (mirrorspark, MM2; ``bench/scale.py``).
``recovery``
    ``kill -9`` mid-copy of a whole mirrorspark run (``python -m mirrorspark run``) and of MM2's
    JVM, then a restart; and of mirrorspark's Spark Python workers: records copied twice and
    seconds until copying resumes.
``schemas``
    1 KiB x 12 and 100 B x 1, values in Confluent's wire format over 20 schema ids: mirrorspark without
    and with schema replication (both clusters' registries, two local Apicurio registries, ids
    translated), alternately; the throughput ratio and the id cache's hit ratio.
``service``
    ``mirrorspark service`` beside a ``mirrorspark run`` flow: the service's CPU and memory at idle
    (60 s; quick 20 s), under 5 000 records/s (60 s; quick 15 s) and under an API load test of 20
    concurrent clients (30 s; quick 15 s), next to the replicator's; the API's p50/p99/max.
``provenance``
    1 KiB x 12 partitions (records as ``compare``'s): mirrorspark with ``provenance.header.enable`` off and on,
    alternately, ``--runs`` rounds, medians; the throughput ratio on/off (the issue's bound: at least 0.97).
``commits``
    1 000 groups (quick 100) x 12 partitions committing every second on the source while a ``mirrorspark run`` flow
    follows them (``emit.checkpoints.on.commit``, ``sync.group.offsets.enabled``) for 60 s (quick 20 s):
    source-commit -> target-commit latency p50/p99, checkpoints written per second, the driver's CPU.
``wan``
    RTT 0 and ``--rtt-ms`` (100) through a latency proxy: MM2 tuned and mirrorspark catching up 1 and 12 partitions,
    and a throttled flow (``bench/wan.py``); its own results file, ``bench/results/<date>-<host>-wan.md``.
``verify``
    ``mirrorspark verify``'s Spark job on a clean byte-identical copy (1 KiB and 100 B, 4 partitions x 2 units):
    records/s per core on ``local[1]`` and CPU s/GB read, the speed-up of 2 standalone workers over 1, and
    ``mirrorspark run``'s throughput with continuous sampling on / off (``bench/verify.py``).

Before them, one line per compare workload (``workload 100 B x 1: throughput ratio mirrorspark/mm2-tuned <t>,
mirrorspark/mm2 <d>; CPU s/GB ratio mirrorspark/mm2-tuned <c>``) and, with the scale case, one per contender
(``scale marginal idle cost per added topic <contender>: <m> millicores (100 -> 1,000 topics)``, then one per
partitions and flows workload: ``scale <workload> (<shape>) <contender>: start <s> s, all copied <a> s, peak RSS
<m> MB (driver <d> MB), idle <c> cores (median of <c1> / <c2> / <c3>, 60 s windows), brokers <b> cores``) and, with the
schemas case, one per workload (``schemas workload 1024 B x 12: throughput ratio mirrorspark-schemas/mirrorspark
<r>; id cache hit ratio <h>``), with the provenance case ``provenance 1024 B x 12: throughput ratio
mirrorspark-provenance/mirrorspark <r> (bound 0.97)`` and, with the commits case, ``commits <G> groups x 12:
source->target commit p50 <a> ms, p99 <b> ms ...``.
The last lines printed are the headline ratios of the 1 KiB / 12-partition workload:
``throughput ratio mirrorspark/mm2: <x>``, ``throughput ratio mirrorspark/ceiling: <y>``,
``throughput ratio mirrorspark/mm2-tuned: <z>``, then those of exactly-once:
``throughput ratio mirrorspark-eos/mirrorspark``, ``mirrorspark-eos/mm2-eos`` and ``mm2-eos/mm2``
(each only when both of its contenders ran), and ``exactly-once cost: <n> %`` (1 - the first, in %; also
in the table of each compare workload that ran mirrorspark-eos and mirrorspark).
Results: ``bench/results/<date>-<host>[-quick].md`` (+ ``.json``); the latest figures go into
``bench/README.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import cpu, report, scale_report, wan
from bench.env import BenchEnv
from bench.suite import (
    COMPARE_CONTENDERS,
    DEPRECATED_CONTENDERS,
    TRANSFORMS_CONTENDERS,
    Case,
    CaseResult,
    parse_contenders,
    run_case,
)
from bench.workload import Workload

__all__ = ["main"]

BENCH_DIR = Path(__file__).resolve().parent
"""``<repo>/bench``."""

FULL_RECORDS = {1024: 1_000_000, 100: 2_000_000}
"""Records per workload of the full run by value size: ~1 GB of 1 KiB records, ~224 MB of 100 B ones."""
QUICK_RECORDS = {1024: 200_000, 100: 1_000_000}
SCHEMAS_QUICK_RECORDS = {1024: 200_000, 100: 400_000}
"""Records per workload of the quick schemas case (the full one sizes them as :data:`FULL_RECORDS`)."""
FULL_WORKLOADS = "1024x12,1024x1,1024x96,100x12,100x1,100x96"
QUICK_WORKLOADS = "1024x12"
HEADLINE = (1024, 12)
"""The workload whose ratios are printed last."""
_DEPRECATED_NOTE = "".join(
    f"; {old} is a deprecated name of {new} (one engine since issue #22)" for old, new in DEPRECATED_CONTENDERS.items()
)
"""What ``--help`` says of the old contender names still accepted."""
CASES = (
    "compare",
    "transforms",
    "schemas",
    "provenance",
    "latency",
    "scale",
    "recovery",
    "service",
    "commits",
    "verify",
    "wan",
)
SERVICE_HEADING = "Metrics service cost"
"""Heading of the service case in the results file (it has a section of its own in bench/README.md)."""
SCHEMAS_HEADING = "Schema replication"
"""Heading of the schemas case in the results file (it has a section of its own in bench/README.md)."""
COMMITS_HEADING = "Following commits"
"""Heading of the commits case in the results file (it has a section of its own in bench/README.md)."""
PROVENANCE_HEADING = "Provenance header cost"
"""Heading of the provenance case in the results file (it has a section of its own in bench/README.md)."""
VERIFY_HEADING = "Verify"
"""Heading of the verify case in the results file (it has a section of its own in bench/README.md)."""
OWN_SECTIONS = {"service", "schemas", "commits", "provenance", "verify", "wan"}
"""Cases whose README figures have a section of their own: a run of only these leaves the quick/full section."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark mirrorspark on local Kafka clusters (started and stopped by the benchmark).",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="1 KiB x 12 partitions (200k records, 3 runs; schemas: 200k and 400k of 100 B x 1), 15 s latency, "
        "small scale workloads (20 s idle windows), one recovery "
        "run per scenario",
    )
    p.add_argument(
        "--cases",
        default=",".join(CASES),
        help=f"comma-separated cases to run: {', '.join(CASES)} (default all)",
    )
    p.add_argument(
        "--workloads",
        help=f"compare workloads as SIZExPARTITIONS (default full: {FULL_WORKLOADS}; quick: {QUICK_WORKLOADS})",
    )
    p.add_argument(
        "--contenders",
        default=",".join(COMPARE_CONTENDERS),
        help="contenders (default %(default)s; the latency, scale and recovery cases run mirrorspark and mm2 of them)"
        f"{_DEPRECATED_NOTE}",
    )
    p.add_argument(
        "--transforms-contenders",
        default=",".join(TRANSFORMS_CONTENDERS),
        help=f"contenders of the transforms case (default %(default)s){_DEPRECATED_NOTE}",
    )
    p.add_argument("--latency-seconds", type=float, help="measured produce window of the latency case (60; quick 15)")
    p.add_argument("--latency-rate", type=int, default=5000, help="records/s of the latency case (default 5000)")
    p.add_argument("--records", type=int, metavar="N", help="records in the workload")
    p.add_argument("--runs", type=int, metavar="R", help="measured runs per contender (default 3; medians)")
    p.add_argument("--latency-runs", type=int, help="runs per contender of the latency case (default 3; quick 1)")
    p.add_argument("--recovery-runs", type=int, help="runs per scenario of the recovery case (default 3; quick 1)")
    p.add_argument(
        "--recovery-rate", type=int, default=5000, help="records/s fed during the recovery case (default 5000)"
    )
    p.add_argument(
        "--recovery-kill-after",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds of copying before the kill in the recovery case (default 5)",
    )
    p.add_argument(
        "--recovery-flush-ms",
        type=int,
        metavar="MS",
        help="offset.flush.interval.ms of both contenders in the recovery case (default: each one's own, "
        "mirrorspark 1000, MM2/Connect 60000)",
    )
    p.add_argument("--service-runs", type=int, help="runs of the service case (default 3; quick 1)")
    p.add_argument(
        "--service-idle-seconds", type=float, metavar="S", help="idle phase of the service case (60; quick 20)"
    )
    p.add_argument(
        "--service-seconds",
        type=float,
        metavar="S",
        help="measured load phase of the service case, at --latency-rate (60; quick 15)",
    )
    p.add_argument(
        "--service-api-seconds", type=float, metavar="S", help="API load test of the service case (30; quick 15)"
    )
    p.add_argument(
        "--service-clients",
        type=int,
        default=20,
        metavar="N",
        help="concurrent clients of the service case's API load test (default %(default)s)",
    )
    p.add_argument(
        "--commits-groups",
        type=int,
        metavar="N",
        help="groups committing every second in the commits case (1000; quick 100)",
    )
    p.add_argument(
        "--commits-seconds", type=float, metavar="S", help="measured seconds of the commits case (60; quick 20)"
    )
    p.add_argument("--commits-runs", type=int, metavar="R", help="runs of the commits case (default 3; quick 1)")
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
        help="tasks.max of the flows, i.e. copy tasks per flow up to its partition count, and clients per ceiling "
        "pass (default: CPU count, %(default)s)",
    )
    p.add_argument(
        "--batch-records",
        type=int,
        metavar="N",
        help="deprecated and ignored (with a warning): it set mirrorspark.batch.max.records.per.partition of the "
        "batch engine, retired in issue #22",
    )
    p.add_argument(
        "--master",
        help="Spark master of the in-process runs (default local[N], N = max(CPU count, --tasks): each copy task "
        "keeps one task slot)",
    )
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
    wan.add_arguments(p)
    scale_report.add_arguments(p)
    return p


def _contenders(spec: str, option: str) -> list[str]:
    """The contenders an option names (:func:`bench.suite.parse_contenders`), warning on stderr about old names."""
    names, deprecated = parse_contenders(spec)
    for old in deprecated:
        print(
            f"warning: {option}: {old!r} is a deprecated name of {DEPRECATED_CONTENDERS[old]!r} "
            "(mirrorspark has one engine since issue #22)",
            file=sys.stderr,
        )
    return names


def _workloads(args: argparse.Namespace) -> list[Workload]:
    spec = args.workloads or (QUICK_WORKLOADS if args.quick else FULL_WORKLOADS)
    out = []
    for item in spec.split(","):
        try:
            size_s, parts_s = item.strip().lower().split("x")
            size, parts = int(size_s), int(parts_s)
        except ValueError:
            raise SystemExit(f"--workloads: {item!r} is not SIZExPARTITIONS (e.g. 1024x12)") from None
        table = QUICK_RECORDS if args.quick else FULL_RECORDS
        records = args.records if args.records is not None else table.get(size, max(1, 10**9 // max(size, 1) // 1))
        out.append(Workload("compare", records, size, parts))
    return out


def _run_case(env: BenchEnv, case: Case, results: list[CaseResult]) -> bool:
    """Run one comparison-style case (:func:`_run_one_case`) and keep its result; return whether every contender
    succeeded."""
    result = _run_one_case(env, case)
    results.append(result)
    return not any(s.error for s in result.summaries)


def _run_one_case(env: BenchEnv, case: Case) -> CaseResult:
    """Run one comparison-style case, print its table, then delete its source topics."""
    result = run_case(env, case)
    print(report.table(result), flush=True)
    topics = [case.workload.topic, case.warmup.topic] if case.warmup else [case.workload.topic]
    env.delete_topics("source", topics)
    return result


def _verify(
    env: BenchEnv, args: argparse.Namespace, runs: int, extra_json: dict[str, object]
) -> tuple[str, list[str], bool]:
    """Run the verify case (``bench/verify.py``); its section, result lines and whether it ran clean."""
    from bench import verify

    records = verify.QUICK_RECORDS if args.quick else verify.FULL_RECORDS
    if args.records is not None:
        records = {size: args.records for size in records}
    print(f"== verify: {records} records x {verify.PARTITIONS} partitions, then sampling off and on", flush=True)
    sampling_records = args.records or (QUICK_RECORDS if args.quick else FULL_RECORDS)[1024]
    case = verify.sampling_case(
        records=sampling_records,
        runs=runs,
        tasks_max=args.tasks,
        warmup_records=args.warmup_records,
        pause_s=args.pause,
        size="quick" if args.quick else "full",
    )
    v = verify.run_verify_case(
        env.bootstrap("source"),
        env.bootstrap("target"),
        records=records,
        repeats=1 if args.quick else 3,
        work_dir=env.work_dir / "verify",
        sampling=lambda: _run_one_case(env, case),
    )
    body = verify.verify_markdown(v)
    print(body, flush=True)
    extra_json["verify"] = verify.verify_json(v)
    failed = bool(v.errors) or (v.sampling is not None and any(s.error for s in v.sampling.summaries))
    return body, verify.result_lines(v), not failed


def _run_all(args: argparse.Namespace, command: str, label: str) -> int:
    """The comparison, latency and scale cases in one environment; one results file."""
    from datetime import UTC, datetime

    from bench import commits, latency, provenance, recovery, scale, schemas, service
    from bench.suite import comparison_case, environment, transforms_case

    cases = {c.strip() for c in args.cases.split(",") if c.strip()}
    started = datetime.now(UTC).isoformat(timespec="seconds")
    runs = args.runs if args.runs is not None else 3
    contenders = _contenders(args.contenders, "--contenders")
    transforms_contenders = _contenders(args.transforms_contenders, "--transforms-contenders")
    if args.batch_records is not None:
        print("warning: --batch-records is ignored: the batch engine was retired in issue #22", file=sys.stderr)
    results: list[CaseResult] = []
    sections: list[tuple[str, str]] = []
    extra_json: dict[str, object] = {}
    status = 0
    master = args.master or f"local[{max(os.cpu_count() or 1, args.tasks)}]"
    recovery_lines: list[str] = []
    service_body = ""
    service_lines: list[str] = []
    scale_lines: list[str] = []
    schema_results: list[CaseResult] = []
    schemas_body = ""
    provenance_results: list[CaseResult] = []
    provenance_body = ""
    commits_body = ""
    commits_lines: list[str] = []
    verify_body = ""
    verify_lines: list[str] = []
    heap = scale_report.broker_heap(scale_report.workloads_from_args(args)) if "scale" in cases else None
    with BenchEnv(args.work_dir / ("quick" if args.quick else "full"), master=master, broker_heap=heap) as env:
        if "compare" in cases:
            for w in _workloads(args):
                case = comparison_case(
                    workload=w,
                    runs=runs,
                    tasks_max=args.tasks,
                    warmup_records=args.warmup_records,
                    pause_s=args.pause,
                    wait_idle_s=args.wait_idle,
                    size="quick" if args.quick else "full",
                    contenders=contenders,
                )
                if not _run_case(env, case, results):
                    status = 1
        if "transforms" in cases:
            records = (
                args.records if args.records is not None else (QUICK_RECORDS if args.quick else FULL_RECORDS)[1024]
            )
            case = transforms_case(
                records=records,
                runs=runs,
                tasks_max=args.tasks,
                warmup_records=args.warmup_records,
                pause_s=args.pause,
                wait_idle_s=args.wait_idle,
                size="quick" if args.quick else "full",
                contenders=transforms_contenders,
            )
            if not _run_case(env, case, results):
                status = 1
        if "schemas" in cases:
            defaults = SCHEMAS_QUICK_RECORDS if args.quick else FULL_RECORDS
            sizes = {s: defaults[s] if args.records is None else args.records for s, _ in schemas.SCHEMAS_WORKLOADS}
            print(f"== schemas: {sizes} records, {runs} run(s) each", flush=True)
            schema_results = schemas.run_schemas_cases(
                env,
                records=sizes,
                runs=runs,
                tasks_max=args.tasks,
                warmup_records=args.warmup_records,
                run=lambda case: _run_one_case(env, case),
                pause_s=args.pause,
                wait_idle_s=args.wait_idle,
                size="quick" if args.quick else "full",
            )
            schemas_body = schemas.schemas_markdown(schema_results)
            print(schemas_body, flush=True)
            sections.append((SCHEMAS_HEADING, schemas_body))
            extra_json["schemas"] = schemas.schemas_json(schema_results)
            if any(s.error for r in schema_results for s in r.summaries):
                status = 1
        if "provenance" in cases:
            records = (
                args.records if args.records is not None else (QUICK_RECORDS if args.quick else FULL_RECORDS)[1024]
            )
            print(f"== provenance: {records:,} records of 1 KiB x 12, header off and on, {runs} run(s)", flush=True)
            case = provenance.provenance_case(
                records=records,
                runs=runs,
                tasks_max=args.tasks,
                warmup_records=args.warmup_records,
                pause_s=args.pause,
                wait_idle_s=args.wait_idle,
                size="quick" if args.quick else "full",
            )
            if not _run_case(env, case, provenance_results):
                status = 1
            provenance_body = provenance.provenance_markdown(provenance_results)
            print(provenance_body, flush=True)
            sections.append((PROVENANCE_HEADING, provenance_body))
            extra_json["provenance"] = provenance.provenance_json(provenance_results)
        if "latency" in cases:
            seconds = args.latency_seconds or (15.0 if args.quick else 60.0)
            lat_runs = args.latency_runs or (1 if args.quick else 3)
            print(f"== latency: {args.latency_rate:,} records/s for {seconds:g} s, {lat_runs} run(s) each", flush=True)
            lat = latency.run_latency_case(
                env,
                tasks_max=args.tasks,
                runs=lat_runs,
                rate=args.latency_rate,
                seconds=seconds,
                contenders=[c for c in latency.CONTENDERS if c in contenders],
            )
            body = latency.latency_markdown(lat)
            print(body, flush=True)
            sections.append(("Latency", body))
            extra_json["latency"] = [r.to_json() for r in lat]
            if any(not r.ok for r in lat):
                status = 1
        if "scale" in cases:
            body, scale_lines, extra_json["scale"], ok = scale.run_from_args(env, args, contenders)
            sections.append(("Scale", body))
            status = status if ok else 1
        if "recovery" in cases:
            rec_runs = args.recovery_runs or (1 if args.quick else 3)
            scenarios = recovery.scenario_filter(contenders)
            print(
                f"== recovery: kill -9 mid-copy at {args.recovery_rate:,} records/s, {len(scenarios)} scenario(s), "
                f"{rec_runs} run(s) each",
                flush=True,
            )
            rec = recovery.run_recovery_case(
                env,
                tasks_max=args.tasks,
                scenarios=scenarios,
                runs=rec_runs,
                rate=args.recovery_rate,
                kill_after_s=args.recovery_kill_after,
                flush_ms=args.recovery_flush_ms,
            )
            body = recovery.recovery_markdown(rec)
            print(body, flush=True)
            sections.append(("Recovery", body))
            extra_json["recovery"] = [r.to_json() for r in rec]
            recovery_lines = [*recovery.recovery_lines(rec), *recovery.startup_lines(rec)]
            if any(not r.ok for r in rec):
                status = 1
        if "service" in cases:
            svc_runs = args.service_runs or (1 if args.quick else 3)
            svc_kwargs = {
                "rate": args.latency_rate,
                "seconds": args.service_seconds or (15.0 if args.quick else 60.0),
                "idle_s": args.service_idle_seconds or (20.0 if args.quick else 60.0),
                "api_s": args.service_api_seconds or (15.0 if args.quick else 30.0),
                "clients": args.service_clients,
            }
            print(
                f"== service: mirrorspark service beside a flow: idle {svc_kwargs['idle_s']:g} s, "
                f"{args.latency_rate:,} records/s for {svc_kwargs['seconds']:g} s, {args.service_clients} API clients "
                f"for {svc_kwargs['api_s']:g} s, {svc_runs} run(s)",
                flush=True,
            )
            svc = service.run_service_case(
                env, tasks_max=args.tasks, runs=svc_runs, wait_idle_s=args.wait_idle, **svc_kwargs
            )
            service_body = service.service_markdown(svc)
            print(service_body, flush=True)
            sections.append((SERVICE_HEADING, service_body))
            extra_json["service"] = [r.to_json() for r in svc]
            service_lines = service.service_lines(svc)
            if any(not r.ok for r in svc):
                status = 1
        if "commits" in cases:
            com_kwargs = {
                "groups": args.commits_groups or (commits.QUICK_GROUPS if args.quick else commits.FULL_GROUPS),
                "seconds": args.commits_seconds or (20.0 if args.quick else 60.0),
                "warmup_s": 5.0 if args.quick else 10.0,
                "baseline_s": 5.0 if args.quick else 10.0,
            }
            com_runs = args.commits_runs or (1 if args.quick else 3)
            print(
                f"== commits: {com_kwargs['groups']:,} groups x {commits.PARTITIONS} partitions committing every "
                f"second, followed for {com_kwargs['seconds']:g} s, {com_runs} run(s)",
                flush=True,
            )
            com = commits.run_commits_case(
                env, tasks_max=args.tasks, runs=com_runs, wait_idle_s=args.wait_idle, **com_kwargs
            )
            commits_body = commits.commits_markdown(com)
            print(commits_body, flush=True)
            sections.append((COMMITS_HEADING, commits_body))
            extra_json["commits"] = commits.commits_json(com)
            commits_lines = commits.commits_lines(com)
            if any(not r.ok for r in com):
                status = 1
        if "verify" in cases:
            verify_body, verify_lines, ok = _verify(env, args, runs, extra_json)
            sections.append((VERIFY_HEADING, verify_body))
            status = status if ok else 1
        env_info = environment(env)
    suffix = "-quick" if args.quick else ""
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in label).strip("-") or "polyglot"
    out = args.out or BENCH_DIR / "results" / f"{started[:10]}-{safe}{suffix}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = report.bench_markdown([*results, *schema_results, *provenance_results], sections, command, env_info, started)
    out.write_text(text)
    data = {
        "command": command,
        "started_at": started,
        "environment": env_info,
        "compare": [
            {
                "workload": {
                    "records": r.case.workload.records,
                    "record_size": r.case.workload.record_size,
                    "partitions": r.case.workload.partitions,
                },
                "ratios": r.ratios,
                "cpu_ratios": r.cpu_ratios,
                "summaries": [report._summary_json(x) for x in r.summaries],
                "runs": [m.to_json() for m in [*r.warmups, *r.runs]],
            }
            for r in results
        ],
        **extra_json,
    }
    out.with_suffix(".json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    if not args.no_readme:
        try:
            link = out.resolve().relative_to(BENCH_DIR)
        except ValueError:
            link = out
        latest = (
            f"Latest {'quick' if args.quick else 'full'} run: {started[:10]}, `{command}`, host "
            f"`{env_info.get('host')}` ({env_info.get('cpus')} cores, {env_info.get('mem_gib')} GiB); "
            f"details in [{link}]({link})."
        )
        if cases - OWN_SECTIONS:
            body = "\n\n".join(
                [
                    latest,
                    report.headline_table(results) if results else "_no comparison run_",
                    *(
                        f"**{h}**\n\n{b}"
                        for h, b in sections
                        if h
                        not in (SERVICE_HEADING, SCHEMAS_HEADING, COMMITS_HEADING, PROVENANCE_HEADING, VERIFY_HEADING)
                    ),
                ]
            )
            report.update_readme_section(BENCH_DIR / "README.md", "quick" if args.quick else "full", body)
        if service_body:
            report.update_readme_section(BENCH_DIR / "README.md", "service", f"{latest}\n\n{service_body}")
        if schemas_body:
            report.update_readme_section(BENCH_DIR / "README.md", "schemas", f"{latest}\n\n{schemas_body}")
        if provenance_body:
            report.update_readme_section(BENCH_DIR / "README.md", "provenance", f"{latest}\n\n{provenance_body}")
        if commits_body:
            report.update_readme_section(BENCH_DIR / "README.md", "commits", f"{latest}\n\n{commits_body}")
        if verify_body:
            report.update_readme_section(BENCH_DIR / "README.md", "verify", f"{latest}\n\n{verify_body}")
    print()
    print(f"results: {out}")
    for line in [
        *recovery_lines,
        *service_lines,
        *scale_lines,
        *(r.workload_line() for r in results),
        *(schemas.result_line(r) for r in schema_results),
        *(provenance.result_line(r) for r in provenance_results),
        *commits_lines,
        *verify_lines,
    ]:
        print(line)
    headline = next(
        (r for r in results if (r.case.workload.record_size, r.case.workload.partitions) == HEADLINE),
        results[0] if results else None,
    )
    if headline is not None:
        for line in [*headline.ratio_lines(), *headline.eos_cost_lines()]:
            print(line)
    return status


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

    cases = {c.strip() for c in args.cases.split(",") if c.strip()}
    if cases - set(CASES):
        raise SystemExit(f"--cases: unknown case(s) {sorted(cases - set(CASES))}; choose from {', '.join(CASES)}")
    status = wan.run_from_args(args, command, label, BENCH_DIR) if "wan" in cases else 0  # its own env and file
    return max(status, _run_all(args, command, label)) if cases - {"wan"} else status
