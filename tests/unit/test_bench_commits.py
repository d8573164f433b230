"""The commits case of ``make bench`` (#40's cost): its latency matching, O2's bound, its report and its CLI wiring."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.replication.connector.commit_follower import FOLLOW_TICK_S

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import cli  # noqa: E402
from bench.commits import (  # noqa: E402
    FULL_GROUPS,
    MM2_REFERENCE_S,
    QUICK_GROUPS,
    CommitsResult,
    commit_latencies,
    commits_json,
    commits_lines,
    commits_markdown,
    o2_bound_per_s,
    quarter_p50s,
)


def test_each_source_commit_meets_the_first_target_commit_at_or_past_its_offset() -> None:
    source = {("g", 0): [(1, 1_000), (2, 2_000), (3, 3_000), (4, 4_000)]}
    target = {("g", 0): [(1, 1_150), (3, 3_020), (4, 4_900)]}  # offset 2 was skipped: batched into 3
    latencies, missed = commit_latencies(source, target, (0, 10_000))
    assert sorted(latencies) == [(1_000, 150), (2_000, 1_020), (3_000, 20), (4_000, 900)] and missed == 0


def test_commits_outside_the_window_are_left_out_and_unreached_ones_counted() -> None:
    source = {("g", 0): [(1, 1_000), (2, 2_000), (3, 3_000)], ("h", 5): [(1, 2_500)]}
    target = {("g", 0): [(2, 2_100)]}
    latencies, missed = commit_latencies(source, target, (2_000, 3_000))
    assert latencies == [(2_000, 100)] and missed == 2  # g@3 never reached, h never synced; g@1 before the window


@given(offsets=st.lists(st.integers(0, 50), min_size=1, max_size=30), lag=st.integers(0, 5_000))
def test_a_target_that_commits_each_offset_later_gives_that_lag(offsets: list[int], lag: int) -> None:
    ordered = sorted(set(offsets))
    source = {("g", 1): [(o, 1_000 * i) for i, o in enumerate(ordered)]}
    target = {("g", 1): [(o, 1_000 * i + lag) for i, o in enumerate(ordered)]}
    latencies, missed = commit_latencies(source, target, (0, 10**9))
    assert [ms for _, ms in latencies] == [lag] * len(ordered) and missed == 0


def test_the_quarters_show_whether_the_follower_falls_behind() -> None:
    pairs = [(ts, ts // 10) for ts in range(0, 4_000, 100)]  # latency grows with the commit's time
    assert quarter_p50s(pairs, (0, 3_999)) == (45.0, 145.0, 245.0, 345.0)
    q = quarter_p50s([(0, 7)], (0, 3_999))
    assert q[0] == 7 and all(math.isnan(x) for x in q[1:])


def test_o2_bounds_checkpoints_by_the_commits_and_the_follow_tick() -> None:
    assert o2_bound_per_s(FULL_GROUPS) == 12_000 and o2_bound_per_s(QUICK_GROUPS, 12) == 1_200
    assert o2_bound_per_s(1, 1) == 1.0 <= 1 / FOLLOW_TICK_S


def _result(**kw: object) -> CommitsResult:
    base: dict[str, object] = dict(
        run=1, groups=100, partitions=12, seconds=20.0, warmup_s=5.0, tasks_max=2, window_s=20.0,
        requests=2_500, commits=24_000, latencies_ms=tuple(range(1, 101)), quarter_p50_ms=(40.0, 45.5, 50.0, 60.0),
        checkpoints=20_000,
        driver_cpu_s=4.0, tree_cpu_s={"driver-py": 4.0, "spark-jvm": 2.0, "py-workers": 1.0},
        baseline_driver_cores=0.05,
    )  # fmt: skip
    return CommitsResult(**{**base, **kw})  # type: ignore[arg-type]


def test_the_figures_of_one_run() -> None:
    r = _result()
    assert r.ok and (r.pct(50), r.pct(99)) == (50.0, 99.0)
    assert (r.checkpoints_per_s, r.driver_cores) == (1_000.0, 0.2)
    assert r.driver_s_per_1000 == pytest.approx(4.0 * 1000 / 24_000)
    j = commits_json([r])[0]
    assert (j["p50_ms"], j["p99_ms"], j["max_ms"], j["o2_bound_per_s"], j["ok"]) == (50.0, 99.0, 100, 1_200, True)
    assert not _result(missed=1).ok and not _result(error="boom").ok and not _result(request_errors=3).ok


def test_the_report_gives_latency_rate_cpu_and_mm2s_reference() -> None:
    md = commits_markdown([_result(), _result(run=2, error="RuntimeError: no flow")])
    assert "| 1 | 1,200 | 50 / 99 / 100 | 40 / 46 / 50 / 60 | 100 / 0 | 1,000 | 1,200 | 20.0 | 5.0 | 0.167 |" in md
    assert "| 2 | FAILED |" in md and "- commits run 2: RuntimeError: no flow" in md
    assert f"~{MM2_REFERENCE_S} s" in md
    (line,) = commits_lines([_result()])
    assert line.startswith("commits 100 groups x 12: source->target commit p50 50 ms, p99 99 ms")
    assert "1,000 checkpoints/s (O2 bound 1,200); driver 20% of a core, 0.167 CPU s per 1,000 commits" in line
    assert commits_lines([_result(error="x")]) == ["commits 100 groups: FAILED"] and commits_lines([]) == []


def test_the_commits_case_is_part_of_every_run_and_has_a_readme_section_of_its_own() -> None:
    assert "commits" in cli.CASES and "commits" in cli._parser().parse_args([]).cases.split(",")
    assert "commits" in cli.OWN_SECTIONS
    args = cli._parser().parse_args(["--commits-groups", "10", "--commits-seconds", "5", "--commits-runs", "2"])
    assert (args.commits_groups, args.commits_seconds, args.commits_runs) == (10, 5.0, 2)
