"""Render the fault suite's figures (``build/faults/figures-<size>.jsonl``) as the Markdown of ``docs/faults.md``.

Usage::

    python tests/faults/report.py [FIGURES] [--output docs/faults.md] [--note TEXT]

``FIGURES`` defaults to ``build/faults/figures-full.jsonl`` if it exists, else
``figures-small.jsonl`` (``make faults-report``). A figures file collects one JSON line per
scenario and mode per run (:func:`figures.record`); the table keeps the newest line of each
(scenario, mode), in the order scenarios first appeared. Exit code 2 if there are no figures.
The randomized fault checker's seeds (``make faults-random``: ``build/faults/random.jsonl``,
or ``--random FILE``) get a table of their own, the newest line per (seed, mode).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIGURES_DIR = ROOT / "build" / "faults"
DOC = ROOT / "docs" / "faults.md"

COLUMNS = (
    "scenario",
    "mode",
    "produced",
    "lost",
    "duplicated",
    "bound",
    "seconds to resume",
    "MM2 4.3.1, same faults",
    "notes",
)
RANDOM = FIGURES_DIR / "random.jsonl"
RANDOM_COLUMNS = (
    "seed",
    "mode",
    "duration (s)",
    "faults applied",
    "produced",
    "lost",
    "copied twice",
    "bound",
    "gaps named",
    "verdict",
)


def default_figures() -> Path:
    """The figures file ``make faults-report`` renders: the full-size one if present, else the small one."""
    full = FIGURES_DIR / "figures-full.jsonl"
    return full if full.exists() else FIGURES_DIR / "figures-small.jsonl"


def load(path: Path) -> list[dict[str, Any]]:
    """The newest line per (scenario, mode) of a figures file, in the order the pairs first appeared."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[(row["scenario"], row["mode"])] = row  # a newer line replaces an older one, in place
    return list(rows.values())


def load_random(path: Path) -> list[dict[str, Any]]:
    """The newest line per (seed, mode) of the checker's results file, in the order the pairs first appeared."""
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[(int(row["seed"]), row["mode"])] = row
    return list(rows.values())


def render_random(rows: Sequence[Mapping[str, Any]], source: str) -> list[str]:
    """The Markdown section of the randomized fault checker's seeds (``make faults-random``)."""
    lines = [
        "",
        "## Random seeds (`make faults-random`)",
        "",
        f"From `{source}`. Each seed draws a schedule of faults (`tests/faults/chaos_faults.py`: kill -9 of the run, "
        "of a Python worker, of the Spark driver JVM, the target's partition leader, only the driver's network to the "
        "target cut (the copy tasks connected directly), a topic deleted and re-created, `deleteRecords` past the "
        "copied position, partitions added, a foreign `mm2-offsets` record) while records with unique values flow "
        "into several topics, and "
        "`tests/faults/chaos_check.py` proves from the clusters and the fault log (which source records each "
        "`deleteRecords` and each re-creation removed: partition, topic id, offsets, when), never trusting what the "
        "system says about itself: every record produced is on the target, or both named by a gap "
        "`mirrorspark status --json` reports and removed by a fault before that gap was found and before the flow "
        "reached it (no later record the same removal took is on the target) (**lost** counts the others; a gap wider "
        "than what its faults removed excuses only the removed records), every gap reported is "
        "grounded in a fault (a gap no fault explains, a position jump over records still on the source, fails as a "
        "`spurious-gap`), copies beyond the first stay within the **bound** (0 for a `read_committed` reader in "
        "exactly-once mode), first copies keep "
        "each partition's order, and no checkpoint translates past a copied record. Replay a seed with "
        "`make faults-random SEED=<seed> DURATION=<s> MODE=both`; a skipped fault is marked so.",
        "",
        "| " + " | ".join(RANDOM_COLUMNS) + " |",
        "|" + "---|" * len(RANDOM_COLUMNS),
    ]
    for r in rows:
        faults = r.get("faults", [])
        why = [str(v).split(" records: ")[0] for v in r.get("violations", [])[:3]]  # the records: in the jsonl
        verdict = "pass" if r.get("verdict") == "pass" else "**fail**: " + "; ".join(why)
        cells = (
            r["seed"],
            r["mode"],
            f"{float(r['duration_s']):.0f}",
            f"{len(faults)}: {', '.join(faults)}" if faults else "0",
            f"{int(r['produced']):,}",
            f"{int(r['lost']):,}",
            f"{int(r['copied_twice']):,}",
            f"{int(r['bound']):,}",
            r.get("gaps_named", 0),
            verdict,
        )
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def render(
    rows: Sequence[Mapping[str, Any]],
    source: str,
    note: str = "",
    random_rows: Sequence[Mapping[str, Any]] = (),
    random_source: str = "",
) -> str:
    """The Markdown of ``docs/faults.md`` for ``rows`` (lines of a figures file).

    ``source`` names the file; ``note`` is a sentence added under the header (e.g. how loaded the
    machine was); ``random_rows`` (lines of the checker's results, from ``random_source``) add the
    random-seed table when there are any.
    """
    sizes = sorted({str(r.get("size", "?")) for r in rows})
    dates = sorted(str(r.get("at", "")) for r in rows if r.get("at"))
    machines = sorted({str(r["machine"]) for r in rows if r.get("machine")})
    failed = [r for r in rows if r["lost"] or (r["mode"] == "exactly-once" and r["duplicated"])]
    lines = [
        "# What the fault suite survived",
        "",
        f"Generated by `make faults-report` (`python tests/faults/report.py`) from `{source}`; do not edit by hand.",
        "",
        f"* **Size:** {', '.join(sizes)} (`make test` runs every scenario small; `make faults` at full size, "
        "then regenerates this page).",
        f"* **Date:** {' to '.join(dict.fromkeys([dates[0], dates[-1]]))} (local time of the runs)."
        if dates
        else "* **Date:** unknown.",
        f"* **Machine:** {'; '.join(machines) or 'unknown'}.",
        *([f"* **Note:** {note}"] if note else []),
        "",
        "Each scenario (`tests/faults/`) replicates a topic of its own with real Kafka brokers and real "
        "Spark while a feed keeps producing records with unique values, breaks something mid-copy, and "
        "counts exactly what reached the target. **lost** must be 0. **duplicated** counts copies beyond "
        "the first: in exactly-once mode as a `read_committed` consumer sees them (must be 0); in "
        "at-least-once mode it may reach the stated **bound**: what the feed produces in 1 s (four of "
        "mirrorspark's `offset.flush.interval.ms`, 250 ms) plus slack, per fault (a copy task commits what the "
        "target acknowledged every flush interval; its successor re-copies what came after). **seconds to resume**: "
        "from the fault until every partition of the remote topic received a newly copied record (the worst "
        "fault where there were several; the notes list each). **MM2 4.3.1, same faults**: Apache Kafka's "
        "MirrorMaker 2 put through the same schedule in the same test, where the scenario runs it (the crash loop "
        "at full size).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in rows:
        resume = "-" if r.get("resume_s") is None else f"{float(r['resume_s']):.1f}"
        cells = (
            r["scenario"],
            r["mode"],
            f"{int(r['produced']):,}",
            f"{int(r['lost']):,}",
            f"{int(r['duplicated']):,}",
            r.get("bound", ""),
            resume,
            r.get("mm2") or "-",
            r.get("notes", ""),
        )
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if failed:
        lines += [
            "",
            f"**{len(failed)} row(s) broke a guarantee**: "
            + ", ".join(f"{r['scenario']} ({r['mode']})" for r in failed)
            + ".",
        ]
    if random_rows:
        lines += render_random(random_rows, random_source)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Render a figures file into ``docs/faults.md`` (or ``--output``); 2 if there is nothing to render."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="?", type=Path, help="a figures file (default: the newest of build/faults)")
    parser.add_argument("--output", "-o", type=Path, default=DOC, help="where to write (default: docs/faults.md)")
    parser.add_argument("--note", default="", help="a sentence for the header (e.g. how loaded the machine was)")
    parser.add_argument("--random", type=Path, default=RANDOM, help="the random checker's results (if present)")
    parser.add_argument(
        "--random-only",
        action="store_true",
        help="replace only the random seeds' section of the page, keeping the suite's table (make faults-random)",
    )
    args = parser.parse_args(argv)
    if args.random_only:
        return _random_only(args.random, args.output)
    path: Path = args.figures or default_figures()
    if not path.exists():
        print(f"no fault figures at {path}: run `make faults` (or the fault suite) first", file=sys.stderr)
        return 2
    rows = load(path)
    if not rows:
        print(f"{path} holds no figures: run `make faults` (or the fault suite) first", file=sys.stderr)
        return 2
    source = _relative(path)
    random_path: Path = args.random
    random_rows = load_random(random_path) if random_path.exists() else []
    text = render(rows, source, args.note, random_rows, _relative(random_path))
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(rows)} rows from {source})")
    return 0


def _random_only(random_path: Path, output: Path) -> int:
    """Replace the random seeds' section of ``output`` by the one of ``random_path``; 2 if either is missing."""
    rows = load_random(random_path) if random_path.exists() else []
    if not rows or not output.exists():
        print(f"nothing to render: {random_path} or {output} is missing or empty", file=sys.stderr)
        return 2
    page = output.read_text(encoding="utf-8")
    head = page.split("\n## Random seeds", 1)[0].rstrip("\n")
    output.write_text(head + "\n" + "\n".join(render_random(rows, _relative(random_path))) + "\n", encoding="utf-8")
    print(f"wrote the random seeds of {output} ({len(rows)} rows from {_relative(random_path)})")
    return 0


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
