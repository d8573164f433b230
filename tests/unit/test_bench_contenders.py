"""The benchmark's contenders after the batch engine's retirement (#22): one mirrorspark contender per case,
``mirrorspark-continuous`` an accepted old name of it, and no run setting an engine or batch key."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import cli  # noqa: E402
from bench.latency import CONTENDERS, LatencyResult, contender_properties, latency_markdown  # noqa: E402
from bench.scale import ScaleResult, scale_markdown  # noqa: E402
from bench.suite import (  # noqa: E402
    COMPARE_CONTENDERS,
    TRANSFORMS_CONTENDERS,
    canonical_contenders,
    comparison_case,
    parse_contenders,
    transforms_case,
)
from bench.workload import Workload  # noqa: E402

RETIRED_KEYS = ("mirrorspark.engine", "mirrorspark.batch.")


def test_the_old_continuous_name_means_mirrorspark_and_is_reported() -> None:
    assert parse_contenders("mirrorspark-continuous,mm2") == (["mirrorspark", "mm2"], ["mirrorspark-continuous"])
    assert parse_contenders(" mm2 ,, ceiling-consume ") == (["mm2", "ceiling-consume"], [])
    # both names of one contender, or one name twice: it runs once, at its first place
    names, old = parse_contenders("mm2,mirrorspark,mirrorspark-continuous,mm2")
    assert (names, old) == (["mm2", "mirrorspark"], ["mirrorspark-continuous"])
    assert canonical_contenders(["mirrorspark-continuous", "mirrorspark"]) == ["mirrorspark"]


def test_an_old_command_line_runs_the_default_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    old_default = "mirrorspark,mirrorspark-continuous,mm2,mm2-tuned,ceiling-consume,ceiling-produce"
    names = cli._contenders(f"{old_default},ceiling-copy,mirrorspark-eos,mm2-eos", "--contenders")
    assert tuple(names) == COMPARE_CONTENDERS
    assert "'mirrorspark-continuous' is a deprecated name of 'mirrorspark'" in capsys.readouterr().err
    case = comparison_case(workload=Workload("compare", 100, 100, 96), runs=1, tasks_max=2, contenders=names)
    assert [c.name for c in case.contenders] == [c for c in COMPARE_CONTENDERS if not c.endswith("-eos")]
    assert [label for label, _, _ in case.ratios] == [
        "throughput ratio mirrorspark/mm2",
        "throughput ratio mirrorspark/ceiling",
        "throughput ratio mirrorspark/mm2-tuned",
        "throughput ratio mirrorspark/ceiling-copy",
    ]


def test_exactly_once_is_compared_with_the_one_mirrorspark() -> None:
    case = comparison_case(workload=Workload("compare", 100, 1024, 12), runs=1, tasks_max=2)
    assert [c.name for c in case.contenders] == list(COMPARE_CONTENDERS)
    assert [(num, den) for _, num, den in case.ratios][4:] == [
        ("mirrorspark-eos", "mirrorspark"),
        ("mirrorspark-eos", "mm2-eos"),
        ("mm2-eos", "mm2"),
    ]
    with pytest.raises(ValueError, match="unknown contender"):
        comparison_case(workload=Workload("compare", 100, 1024, 12), runs=1, tasks_max=2, contenders=["batch"])


def test_the_transforms_case_takes_the_old_name_too() -> None:
    case = transforms_case(records=100, runs=1, tasks_max=2, contenders=["mirrorspark-continuous", "mm2"])
    assert [c.name for c in case.contenders] == ["mirrorspark", "mm2"]
    assert [label for label, _, _ in case.ratios] == ["throughput ratio mirrorspark/mm2"]


def test_no_run_sets_an_engine_or_a_batch_key() -> None:
    w = Workload("compare", 100, 1024, 12)
    contenders = [
        *comparison_case(workload=w, runs=1, tasks_max=2).contenders,
        *transforms_case(records=100, runs=1, tasks_max=2, contenders=TRANSFORMS_CONTENDERS).contenders,
    ]
    for c in contenders:
        props = c.properties(w, "s3") if hasattr(c, "properties") else {}
        assert not [k for k in props if any(r in k for r in RETIRED_KEYS)], c.name
    for name in CONTENDERS:  # the latency, scale, recovery and service cases
        props = contender_properties(name, "t.*", 2, {})
        assert not [k for k in props if any(r in k for r in RETIRED_KEYS)], name


def test_the_scale_table_has_no_engine_column() -> None:
    runs = [
        ScaleResult("mirrorspark", 1, n, 4, n * 4, 2, first_s=1.0, discovery_s=2.0, idle_s=20.0, idle_cores=0.1)
        for n in (10, 100)
    ]
    lines = scale_markdown(runs).splitlines()
    assert "engine" not in lines[0] and lines[0].count("|") == lines[2].count("|") == lines[3].count("|")
    assert lines[2].startswith("| topics:10x4 | mirrorspark | 1 x 10 x 4 | 1 | 1.0 | 2.0 | 0.100 |")
    assert "batches" not in runs[0].to_json() and "engine" not in runs[0].to_json()


def test_the_latency_table_has_no_engine_or_job_columns() -> None:
    done = LatencyResult("mirrorspark", 1, 5000, 5.0, 12, 1024, 2, produced=10, records=10, produce_s=5.0, p99_ms=42.0)
    failed = LatencyResult("mm2", 1, 5000, 5.0, 12, 1024, 2, error="boom")
    text = latency_markdown([done, failed])
    header, _, ok_row, failed_row = text.splitlines()[2:6]
    assert "engine" not in header and "job" not in header
    assert header.count("|") == ok_row.count("|") == failed_row.count("|")
    assert ok_row.startswith("| mirrorspark | 1 | 10 |") and "| 42 |" in ok_row
    assert failed_row.startswith("| mm2 | 0 |")
    assert "batches" not in done.to_json() and "engine" not in done.to_json()


def test_the_scale_case_says_each_contenders_marginal_idle_cost_per_topic() -> None:
    runs = [
        ScaleResult(name, 1, n, 4, n * 4, 2, first_s=1.0, discovery_s=2.0, idle_s=20.0, idle_cores=cores)
        for name, n, cores in [("mirrorspark", 100, 0.03), ("mirrorspark", 1000, 0.048), ("mm2", 100, 0.03)]
    ]
    from bench.scale import marginal_idle_lines

    assert marginal_idle_lines(runs) == [
        "scale marginal idle cost per added topic mirrorspark: 0.020 millicores (100 -> 1,000 topics)"
    ]  # mm2 ran at one topic count only
