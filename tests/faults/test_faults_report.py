"""``docs/faults.md`` from a figures file: one row per scenario and mode, the newest line of each (no brokers)."""

from __future__ import annotations

import json
from pathlib import Path

import report
from scenario import AT_LEAST_ONCE, EXACTLY_ONCE, duplicate_bound, mode_properties


def line(scenario: str, mode: str, **over: object) -> str:
    row = {
        "scenario": scenario,
        "mode": mode,
        "produced": 1000,
        "lost": 0,
        "duplicated": 0,
        "resume_s": 7.25,
        "bound": "0 (read_committed)",
        "notes": "a | b",
        "size": "small",
        "at": "2026-11-25T12:00:00",
        "machine": "2 CPUs, 24 GiB",
        **over,
    }
    return json.dumps(row) + "\n"


def test_the_table_keeps_the_newest_line_per_scenario_and_mode(tmp_path: Path) -> None:
    figures = tmp_path / "figures-small.jsonl"
    figures.write_text(
        line("kill A", AT_LEAST_ONCE, duplicated=5, at="2026-11-25T11:00:00")
        + line("kill A", EXACTLY_ONCE)
        + line("kill A", AT_LEAST_ONCE, duplicated=9, produced=2000)
        + line("kill B", AT_LEAST_ONCE, resume_s=None)
    )
    out = tmp_path / "faults.md"
    assert report.main([str(figures), "--output", str(out), "--note", "a busy machine"]) == 0
    text = out.read_text()
    rows = [r for r in text.splitlines() if r.startswith("| kill")]
    assert rows == [
        "| kill A | at-least-once | 2,000 | 0 | 9 | 0 (read_committed) | 7.2 | - | a \\| b |",
        "| kill A | exactly-once | 1,000 | 0 | 0 | 0 (read_committed) | 7.2 | - | a \\| b |",
        "| kill B | at-least-once | 1,000 | 0 | 0 | 0 (read_committed) | - | - | a \\| b |",
    ]
    assert "**Size:** small" in text and "**Date:** 2026-11-25T12:00:00 (local" in text
    assert "2 CPUs, 24 GiB" in text and "a busy machine" in text and "broke a guarantee" not in text


def test_a_broken_guarantee_is_named_and_missing_figures_exit_2(tmp_path: Path) -> None:
    figures = tmp_path / "f.jsonl"
    figures.write_text(line("kill A", EXACTLY_ONCE, duplicated=3) + line("kill B", AT_LEAST_ONCE, lost=1))
    out = tmp_path / "faults.md"
    assert report.main([str(figures), "-o", str(out)]) == 0
    assert "**2 row(s) broke a guarantee**: kill A (exactly-once), kill B (at-least-once)." in out.read_text()
    assert report.main([str(tmp_path / "none.jsonl"), "-o", str(out)]) == 2


def test_the_at_least_once_bound_and_the_mode_keys() -> None:
    assert duplicate_bound(200, 4) == 4 * 200 * 5  # 4 faults x 200 records/s x (1 s flush + 4 s slack)
    assert duplicate_bound(1000, 1, slack_s=0.5) == 1500
    assert mode_properties(AT_LEAST_ONCE, "a", "b") == {}
    assert mode_properties(EXACTLY_ONCE, "a", "b")["b.exactly.once.source.support"] == "enabled"
    assert mode_properties(EXACTLY_ONCE, "a", "b")["a->b.transaction.boundary"] == "interval"
