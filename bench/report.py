"""Reports: the console table, ``bench/results/*.md`` (+ ``.json``) and ``bench/README.md``.

Units everywhere: records/s; MB/s with MB = 10^6 bytes of keys + values; seconds of wall
time; CPU seconds per GB with GB = 10^9 bytes of keys + values.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

from bench.contenders import RunMeasurement
from bench.suite import BUSY_CORES, CaseResult, Summary

__all__ = ["markdown", "results_path", "table", "update_readme", "write_results"]

README_BEGIN = "<!-- bench:{case}:{size}:begin -->"
README_END = "<!-- bench:{case}:{size}:end -->"

_COLUMNS = (
    "contender",
    "runs",
    "records/s",
    "MB/s",
    "copy s (min-max)",
    "start s",
    "CPU s/GB",
    "cores busy",
    "peak RSS MB",
    "JVM",
    "py workers",
    "driver",
    "brokers CPU s/GB",
    "other procs cores",
)


_RUN_COLUMNS = (
    "contender",
    "run",
    "records",
    "wall s",
    "copy s",
    "start s",
    "records/s",
    "MB/s",
    "CPU s",
    "peak RSS MB",
    "JVM",
    "py workers",
    "driver",
    "brokers CPU s",
    "other procs CPU s",
    "busy cores before",
    "verified",
)
"""Columns of the every-run tables (see :func:`_run_rows`)."""


def _f(x: float, fmt: str) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _row(s: Summary) -> list[str]:
    if s.runs == 0:
        return [s.contender, "0", "FAILED", *([""] * (len(_COLUMNS) - 3))]
    by = s.cpu_s_per_gb_by_role
    return [
        s.contender,
        str(s.runs),
        _f(s.records_per_s, ",.0f"),
        _f(s.mb_per_s, ".1f"),
        f"{_f(s.copy_s, '.2f')} ({_f(s.copy_min_s, '.2f')}-{_f(s.copy_max_s, '.2f')})",
        _f(s.start_s, ".2f"),
        _f(s.cpu_s_per_gb, ".1f"),
        _f(s.cores_busy, ".2f"),
        _f(s.peak_rss_mb, ",.0f"),
        _f(by.get("spark-jvm", 0.0) + by.get("jvm", 0.0), ".1f"),
        _f(by.get("py-workers", 0.0), ".1f"),
        _f(by.get("driver-py", 0.0) + by.get("other", 0.0), ".1f"),
        _f(s.broker_cpu_s_per_gb, ".1f"),
        _f(s.other_cores, ".2f"),
    ]


def table(result: CaseResult) -> str:
    """Fixed-width text table of the medians, the errors, and the ratio line last.

    Returns
    -------
    str
        Lines joined by newlines; the last line is :meth:`CaseResult.ratio_line` when the case has a ratio.
    """
    rows = [list(_COLUMNS), *(_row(s) for s in result.summaries)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = []
    for k, r in enumerate(rows):
        cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append(
        "medians over runs; records/s, MB/s and CPU s/GB over the copy window (start-up apart); MB = 10^6 B of"
        " keys+values; CPU s/GB = the contender's processes' CPU per 10^9 B; brokers measured apart"
    )
    lines.extend(_warnings(result))
    for s in result.summaries:
        if s.error:
            lines.append(f"{s.contender}: ERROR: {s.error}")
    lines.extend(result.cpu_ratio_lines())
    lines.extend(result.ratio_lines())
    lines.extend(result.eos_cost_lines())
    return "\n".join(lines)


def _warnings(result: CaseResult) -> list[str]:
    busy = [s for s in result.summaries if s.runs and s.other_cores >= BUSY_CORES]
    if not busy:
        return []
    worst = max(s.other_cores for s in busy)
    return [
        f"WARNING: other processes used up to {worst:.1f} cores during the runs (median); the machine was not "
        "idle and the figures are skewed — rerun on a quiet machine (--wait-idle helps)"
    ]


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def summary_markdown(result: CaseResult) -> str:
    """Markdown table of the medians plus the ratio line (used in both reports)."""
    text = _md_table(_COLUMNS, [_row(s) for s in result.summaries])
    for w in _warnings(result):
        text += f"\n\n**{w}**"
    for line, cpu_line in zip(result.ratio_lines(), result.cpu_ratio_lines(), strict=True):
        text += (
            f"\n\n`{line}` (median records/s of the first over the second; > 1: the first is faster)"
            f"\n\n`{cpu_line}` (median CPU s/GB, first over second; < 1: the first needs less CPU per GB)"
        )
    for line in result.eos_cost_lines():
        text += f"\n\n`{line}` (1 - throughput ratio mirrorspark-eos/mirrorspark, in %: what exactly-once costs)"
    return text


def _run_rows(runs: Sequence[RunMeasurement]) -> list[list[str]]:
    rows = []
    for m in runs:
        by = m.cpu.by_role
        rows.append(
            [
                m.contender,
                "warm-up" if m.run == 0 else str(m.run),
                f"{m.records:,}",
                f"{m.wall_s:.2f}",
                f"{m.seconds:.2f}",
                f"{m.start_s:.2f}",
                f"{m.records_per_s:,.0f}",
                f"{m.mb_per_s:.1f}",
                f"{m.cpu.total_s:.2f}",
                f"{m.peak_rss_bytes / 1e6:,.0f}",
                f"{by.get('spark-jvm', 0.0) + by.get('jvm', 0.0):.2f}",
                f"{by.get('py-workers', 0.0):.2f}",
                f"{by.get('driver-py', 0.0) + by.get('other', 0.0):.2f}",
                f"{m.broker_cpu_s:.2f}",
                f"{m.other_cpu_s:.2f}",
                f"{m.idle_before_cores:.2f}",
                "yes" if m.verified else ("FAILED: " + m.error[:200] if m.error else "no"),
            ]
        )
    return rows


def markdown(result: CaseResult, command: str) -> str:
    """The full results file: what ran, where, the medians, every run.

    Parameters
    ----------
    result:
        The case's result.
    command:
        The command line that produced it.
    """
    case, env = result.case, result.environment
    w = case.workload
    lines = [
        f"# {case.title}: {result.started_at:%Y-%m-%d} on {env.get('host', '?')}",
        "",
        f"Command: `{command}` (from the repository root)",
        "",
        f"Workload: {w.describe()}, topic `{w.topic}`; loaded once in {result.load.seconds:.1f} s.",
        "",
        "Contenders (run alternately, in this order, once per round):",
        "",
        *(f"* **{c.name}**: {c.description}" for c in case.contenders),
        "",
        "## Medians",
        "",
        summary_markdown(result),
        "",
        "* records/s and MB/s: the workload over the **copy window**: from the last moment the output topic",
        "  was seen empty to the first moment it held every record (polled every 50 ms by end offsets; for",
        "  the consume clients their own clocks). `start s` is the time from launch (mirrorspark: flow start",
        "  on a warm SparkSession; MM2 and the perf tools: JVM launch) until the window opened. MB = 10^6",
        "  bytes of keys + values. `ceiling` is the slower of the consume-only and produce-only passes",
        "  (each with min(tasks.max, partitions) parallel client processes); `ceiling-copy` (the copy floor)",
        "  as many bare Python copy loops (bench/share.py copy).",
        "* CPU s/GB: CPU seconds of the contender's process tree over the copy window (`psutil`) per 10^9",
        "  bytes; split into JVM (Spark driver JVM, or MM2's / the tool's JVM) / py workers / driver.",
        "  `cores busy` = CPU seconds per second of the window. `peak RSS MB`: largest resident memory of",
        "  the tree during the run. Brokers' CPU is measured apart.",
        "* other procs cores: CPU of every other process on the machine during a run (from `/proc/stat`),",
        "  per wall second — work that is neither the replicator nor the brokers; near 0 on a quiet machine.",
        "",
        "## Environment",
        "",
        _md_table(["", ""], [[k, json.dumps(v) if isinstance(v, dict) else str(v)] for k, v in env.items()]),
        "",
        "## Every run",
        "",
        _md_table(
            _RUN_COLUMNS,
            _run_rows([*result.warmups, *result.runs]),
        ),
        "",
    ]
    if result.warmup_load is not None:
        lines.insert(
            6,
            f"Warm-up: one untimed run per contender on `{result.warmup_load.topic}` "
            f"({result.warmup_load.records:,} records) before the measured rounds.\n",
        )
    return "\n".join(lines)


def _summary_json(s: Summary) -> dict[str, object]:
    return {
        "contender": s.contender,
        "runs": s.runs,
        "records_per_s": round(s.records_per_s, 1) if not math.isnan(s.records_per_s) else None,
        "mb_per_s": round(s.mb_per_s, 2) if not math.isnan(s.mb_per_s) else None,
        "copy_s": round(s.copy_s, 3) if not math.isnan(s.copy_s) else None,
        "start_s": round(s.start_s, 3) if not math.isnan(s.start_s) else None,
        "cpu_s_per_gb": round(s.cpu_s_per_gb, 2) if not math.isnan(s.cpu_s_per_gb) else None,
        "peak_rss_mb": round(s.peak_rss_mb, 1) if not math.isnan(s.peak_rss_mb) else None,
        "error": s.error,
    }


def results_path(results_dir: Path, result: CaseResult, label: str) -> Path:
    """``<results_dir>/<YYYY-MM-DD>-<label>-<case>.md`` for a result."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "polyglot"
    return results_dir / f"{result.started_at:%Y-%m-%d}-{safe}-{result.case.name}.md"


def write_results(path: Path, result: CaseResult, command: str) -> Path:
    """Write the markdown results file and a ``.json`` twin next to it; return the ``.md`` path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(result, command))
    data = {
        "case": result.case.name,
        "command": command,
        "started_at": result.started_at.isoformat(),
        "finished_at": result.finished_at.isoformat() if result.finished_at else None,
        "workload": {
            "topic": result.case.workload.topic,
            "records": result.case.workload.records,
            "record_size": result.case.workload.record_size,
            "partitions": result.case.workload.partitions,
        },
        "contenders": {c.name: c.description for c in result.case.contenders},
        "ratios": {
            label: {"value": result.ratios.get(label), "cpu_s_per_gb": result.cpu_ratios.get(label)}
            for label, _, _ in result.case.ratios
        },
        "summaries": [_summary_json(x) for x in result.summaries],
        "environment": result.environment,
        "load_s": round(result.load.seconds, 3),
        "runs": [m.to_json() for m in [*result.warmups, *result.runs]],
    }
    path.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n")
    return path


def update_readme(readme: Path, result: CaseResult, results_file: Path, command: str) -> None:
    """Replace the "latest figures" section of ``bench/README.md`` for this case and size (appended if missing).

    One section per case and workload size (``quick``, ``full``, ``custom``; see
    :attr:`bench.suite.Case.size`), between ``<!-- bench:<case>:<size>:begin -->`` and
    ``<!-- bench:<case>:<size>:end -->``.

    Parameters
    ----------
    readme:
        ``bench/README.md``.
    result:
        The case's result.
    results_file:
        The results file written for it (linked relative to the README).
    command:
        The command line that produced it.
    """
    keys = {"case": result.case.name, "size": result.case.size}
    begin, end = README_BEGIN.format(**keys), README_END.format(**keys)
    env = result.environment
    try:
        link = results_file.resolve().relative_to(readme.resolve().parent)
    except ValueError:
        link = results_file
    section = "\n".join(
        [
            begin,
            f"Latest {result.case.size} run: {result.started_at:%Y-%m-%d}, `{command}`, host `{env.get('host')}` "
            f"({env.get('cpus')} cores, {env.get('mem_gib')} GiB), Spark `{env.get('spark', {}).get('master', '?')}`; "
            f"{result.case.workload.describe()}; details in [{link}]({link}).",
            "",
            summary_markdown(result),
            end,
        ]
    )
    text = readme.read_text() if readme.exists() else ""
    i, j = text.find(begin), text.find(end)
    if i >= 0 and j > i:
        text = text[:i] + section + text[j + len(end) :]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section + "\n"
    readme.write_text(text)


def _ceiling_clients(r: CaseResult) -> int:
    """Parallel clients of each ceiling pass of a case (``min(tasks.max, partitions)``), 0 without a ceiling."""
    from bench.contenders import client_shares

    tasks = [getattr(c, "tasks_max", 0) for c in r.case.contenders if c.name.startswith("ceiling-")]
    return len(client_shares(r.case.workload.partitions, tasks[0])) if tasks and tasks[0] else 0


def headline_table(results: Sequence[CaseResult]) -> str:
    """One markdown row per comparison workload: every contender's median records/s and the headline ratios."""
    rows = []
    for r in results:
        ms = r.summary("mirrorspark")
        if ms is None or r.case.name.startswith("schemas-"):  # the schemas case has a table of its own
            continue
        mm2, tuned, ceil = r.summary("mm2"), r.summary("mm2-tuned"), r.summary("ceiling")
        floor = r.summary("ceiling-copy")
        w = r.case.workload

        def rate(x: Summary | None) -> str:
            if x is None or not x.runs:
                return "n/a"
            return f"{x.records_per_s:,.0f} ({x.mb_per_s:.1f} MB/s)"

        def cpu(x: Summary | None) -> str:
            return "n/a" if x is None or not x.runs else f"{x.cpu_s_per_gb:.1f}"

        def rss(x: Summary | None) -> str:
            return "n/a" if x is None or not x.runs else f"{x.peak_rss_mb:,.0f}"

        def ratio(label: str, r: CaseResult = r) -> str:
            v = r.ratios.get(label)
            return "n/a" if v is None else f"{v:.2f}"

        pass_ = "n/a"
        if ceil is not None and ceil.runs:
            slower = "produce" if "ceiling-produce" in ceil.description else "consume"
            pass_ = f"{slower}, {_ceiling_clients(r)} client(s)"
        rows.append(
            [
                f"{w.record_size} B x {w.partitions}",
                f"{w.records:,} ({w.payload_bytes / 1e6:,.0f} MB)",
                rate(ms),
                rate(mm2),
                rate(tuned),
                rate(ceil),
                pass_,
                rate(floor),
                ratio("throughput ratio mirrorspark/mm2"),
                ratio("throughput ratio mirrorspark/mm2-tuned"),
                ratio("throughput ratio mirrorspark/ceiling"),
                ratio("throughput ratio mirrorspark/ceiling-copy"),
                f"{cpu(ms)} / {cpu(mm2)} / {cpu(tuned)} / {cpu(ceil)}",
                f"{rss(ms)} / {rss(mm2)} / {rss(tuned)}",
            ]
        )
    header = [
        "records x partitions",
        "records (size)",
        "mirrorspark rec/s",
        "MM2 rec/s",
        "MM2-tuned rec/s",
        "ceiling rec/s",
        "ceiling: slower pass, clients",
        "copy floor rec/s",
        "mirrorspark/MM2",
        "mirrorspark/MM2-tuned",
        "mirrorspark/ceiling",
        "mirrorspark/copy floor",
        "CPU s/GB mirrorspark / MM2 / MM2-tuned / ceiling",
        "peak RSS MB mirrorspark / MM2 / MM2-tuned",
    ]
    return _md_table(header, rows)


def bench_markdown(
    results: Sequence[CaseResult],
    sections: Sequence[tuple[str, str]],
    command: str,
    environment: dict[str, object],
    started_at: str,
) -> str:
    """The results file of a whole ``python -m bench`` run: headline, each case, extra sections.

    Parameters
    ----------
    results:
        The comparison cases, in run order.
    sections:
        ``(heading, markdown)`` of further cases (latency, scale).
    command:
        The command line.
    environment:
        Machine and versions (:func:`bench.suite.environment`).
    started_at:
        ISO date-time of the start.
    """
    lines = [
        f"# mirrorspark benchmark: {started_at[:10]} on {environment.get('host', '?')}",
        "",
        f"Command: `{command}` (from the repository root). Started {started_at}.",
        "",
        "## Throughput (medians)",
        "",
        headline_table(results),
        "",
        "mirrorspark = `mirrorspark run --until-caught-up` on its copy tasks (min(tasks.max, partitions)",
        "long-running Spark tasks that copy up to the end offsets listed at start, commit and end); MM2 =",
        "Apache Kafka's MirrorMaker 2, dedicated mode, at its defaults; MM2-tuned = the same with the data",
        "producer's `batch.size` 1 MiB and `linger.ms` 5 (`target.producer.*`). All with the same `tasks.max`, topic",
        "filter, heartbeats and checkpoints on. ceiling = the slower of two passes with min(tasks.max,",
        "partitions) parallel client processes each, one per share of the partitions, librdkafka's clients",
        "with the copy tasks' settings (bench/share.py): consumers over the source topic, and idempotent",
        "producers of as many records of the same size into the target. copy floor = `ceiling-copy`: as many",
        "bare one-thread Python copy loops (read a batch, produce each record with a delivery callback that keeps",
        "its target offset), the least a copy with exact offset syncs does per record on this client.",
        "Rates are over the copy window",
        "(start-up apart, see each case). CPU s/GB: CPU seconds of the contender's processes per 10^9 bytes",
        "of keys + values.",
        "",
    ]
    for r in results:
        w = r.case.workload
        lines += [
            f"## {r.case.title}",
            "",
            f"Workload: {w.describe()}, topic `{w.topic}`; loaded once in {r.load.seconds:.1f} s.",
            "",
            *(f"* **{c.name}**: {c.description}" for c in r.case.contenders),
            "",
            summary_markdown(r),
            "",
            "<details><summary>every run</summary>",
            "",
            _md_table(
                _RUN_COLUMNS,
                _run_rows([*r.warmups, *r.runs]),
            ),
            "",
            "</details>",
            "",
        ]
    for heading, body in sections:
        lines += [f"## {heading}", "", body, ""]
    lines += [
        "## How to read it",
        "",
        "* records/s and MB/s: over the **copy window**: from the last moment the output topic was seen empty",
        "  to the first moment it held every record (end offsets polled every 50 ms; for the consume pass",
        "  the clients' own clocks). `start s`: launch (mirrorspark: flow start on a warm SparkSession; MM2",
        "  and the perf tools: JVM launch) until the window opened. MB = 10^6 bytes of keys + values.",
        "* CPU s/GB: CPU of the contender's process tree over the window (`psutil`), per 10^9 bytes, split",
        "  into JVM / Python workers / Python driver; `cores busy` = CPU seconds per window second;",
        "  `peak RSS MB`: largest resident memory of the tree during a run. Brokers are measured apart.",
        "* other procs cores: CPU of every other process on the machine during a run (`/proc/stat`); near 0",
        "  on a quiet machine.",
        "",
        "## Environment",
        "",
        _md_table(["", ""], [[k, json.dumps(v) if isinstance(v, dict) else str(v)] for k, v in environment.items()]),
        "",
    ]
    return "\n".join(lines)


def update_readme_section(readme: Path, key: str, body: str) -> None:
    """Replace the section between ``<!-- bench:<key>:begin -->`` and ``<!-- bench:<key>:end -->``.

    The section is appended when the markers are missing.
    """
    begin, end = f"<!-- bench:{key}:begin -->", f"<!-- bench:{key}:end -->"
    section = f"{begin}\n{body.rstrip()}\n{end}"
    text = readme.read_text() if readme.exists() else ""
    i, j = text.find(begin), text.find(end)
    if i >= 0 and j > i:
        text = text[:i] + section + text[j + len(end) :]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section + "\n"
    readme.write_text(text)
