"""The compare case's ``exactly-once cost: <n> %`` line (issue #44): 1 - mirrorspark-eos/mirrorspark, in %."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import report  # noqa: E402
from bench.suite import EOS_RATIO, CaseResult, comparison_case  # noqa: E402
from bench.workload import LoadResult, Workload  # noqa: E402


def _result(contenders: list[str], ratios: dict[str, float | None], size: int = 1024) -> CaseResult:
    case = comparison_case(workload=Workload("compare", 100, size, 12), runs=1, tasks_max=2, contenders=contenders)
    return CaseResult(case, LoadResult(case.workload.topic, 100, 0.1), None, [], [], ratios=ratios)


@pytest.mark.parametrize(("ratio", "line"), [(0.71, "29 %"), (0.86, "14 %"), (1.02, "-2 %")])
def test_the_compare_case_prints_the_exactly_once_cost_after_its_ratio(ratio: float, line: str) -> None:
    r = _result(["mirrorspark", "mirrorspark-eos"], {EOS_RATIO: ratio})
    lines = report.table(r).splitlines()
    assert lines[-2:] == [f"{EOS_RATIO}: {ratio:.2f}", f"exactly-once cost: {line}"]
    assert f"`exactly-once cost: {line}`" in report.summary_markdown(r)


@pytest.mark.parametrize("size", [1024, 100])
def test_every_workload_that_ran_both_says_its_cost_and_a_failed_side_says_so(size: int) -> None:
    assert _result(["mirrorspark", "mirrorspark-eos"], {EOS_RATIO: 0.5}, size).eos_cost_lines() == [
        "exactly-once cost: 50 %"
    ]
    assert _result(["mirrorspark", "mirrorspark-eos"], {EOS_RATIO: None}, size).eos_cost_lines() == [
        "exactly-once cost: n/a (a contender failed)"
    ]


def test_no_cost_line_without_both_contenders() -> None:
    for contenders in (["mirrorspark", "mm2"], ["mirrorspark-eos", "mm2-eos"]):
        r = _result(contenders, {})
        assert r.eos_cost_lines() == [] and "exactly-once cost" not in report.table(r)
