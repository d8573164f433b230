"""The scale case of ``make bench`` (#44): its workloads and options, the medians, the table and the lines."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import cli  # noqa: E402
from bench.scale_report import (  # noqa: E402
    FULL_WORKLOADS,
    QUICK_WORKLOADS,
    ScaleResult,
    ScaleWorkload,
    marginal_idle_lines,
    parse_workloads,
    scale_lines,
    scale_markdown,
    workloads_from_args,
)


def result(
    contender: str, workload: str, run: int, idle: float, *, flows: int = 1, topics: int = 100, partitions: int = 4
) -> ScaleResult:
    """A successful run of ``workload`` (``topics`` over every flow)."""
    return ScaleResult(
        contender=contender,
        run=run,
        topics=topics,
        partitions=partitions,
        records=topics * partitions,
        tasks_max=2,
        workload=workload,
        flows=flows,
        first_s=2.0 + run,
        discovery_s=10.0 * run,
        idle_s=60.0,
        idle_cores=idle,
        idle_broker_cores=0.1,
        peak_rss_bytes=run * 100_000_000,
        driver_peak_rss_bytes=run * 10_000_000,
    )


def test_workloads_parse_by_kind_with_four_partitions_unless_named() -> None:
    assert parse_workloads("topics:1000x4, partitions:100x100,flows:50x20,100,flows:2x3x8") == [
        ScaleWorkload("topics", 1, 1000, 4),
        ScaleWorkload("partitions", 1, 100, 100),
        ScaleWorkload("flows", 50, 20, 4),
        ScaleWorkload("topics", 1, 100, 4),
        ScaleWorkload("flows", 2, 3, 8),
    ]


@pytest.mark.parametrize(
    "spec", ["lanes:10x4", "flows:50", "flows:1x2x3x4", "topics:0x4", "topics:ax4", "partitions:1x2x3", ""]
)
def test_a_bad_workload_is_refused_by_name(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_workloads(spec)


def test_the_defaults_hold_ten_thousand_partitions_in_one_flow_and_fifty_flows_of_twenty_topics() -> None:
    full = parse_workloads(FULL_WORKLOADS)
    assert ScaleWorkload("partitions", 1, 100, 100) in full
    assert ScaleWorkload("flows", 50, 20, 4) in full
    assert [w.kind for w in parse_workloads(QUICK_WORKLOADS)] == [w.kind for w in full]
    assert all(
        q.total_partitions <= f.total_partitions for q, f in zip(parse_workloads(QUICK_WORKLOADS), full, strict=True)
    )


def test_each_flow_has_its_own_topics_and_no_regex_matches_another_workloads_or_flows() -> None:
    workloads = parse_workloads("topics:100x4,topics:1000x4,topics:100x40,partitions:100x100,flows:12x20,flows:12x2")
    named = [(w, f, n) for w in workloads for f in range(w.flows) for n in w.topic_names(f)]
    assert len({n for _, _, n in named}) == len(named)
    for w in workloads:
        for f in range(w.flows):
            matched = {n for _, _, n in named if re.fullmatch(w.regex(f), n)}
            assert matched == set(w.topic_names(f))
            assert re.fullmatch(r"[a-z0-9-]+", w.prefix(f))


def test_many_flows_run_one_task_each_and_one_flow_the_tasks_asked_for() -> None:
    assert ScaleWorkload("flows", 50, 20, 4).tasks_max(2) == 1
    assert ScaleWorkload("partitions", 1, 100, 100).tasks_max(2) == 2
    assert ScaleWorkload("flows", 50, 20, 4).describe() == "50 flows x 20 topics x 4 partitions (4,000 partitions)"
    assert ScaleWorkload("flows", 50, 20, 4).spec == "flows:50x20x4"


def test_options_keep_scale_topics_and_default_by_run_size() -> None:
    parse = cli._parser().parse_args
    assert workloads_from_args(parse(["--scale-topics", "100,1000"])) == parse_workloads("topics:100,topics:1000")
    assert workloads_from_args(parse(["--quick"])) == parse_workloads(QUICK_WORKLOADS)
    assert workloads_from_args(parse([])) == parse_workloads(FULL_WORKLOADS)
    both = workloads_from_args(parse(["--scale-topics", "10", "--scale-workloads", "flows:2x3"]))
    assert [w.spec for w in both] == ["topics:10x4", "flows:2x3x4"]
    with pytest.raises(SystemExit):
        workloads_from_args(parse(["--scale-workloads", "lanes:3"]))
    with pytest.raises(SystemExit):
        workloads_from_args(parse(["--scale-topics", "flows:2x3"]))


def test_flow_properties_give_every_flow_its_own_topics() -> None:
    from bench.scale import flow_properties

    w = ScaleWorkload("flows", 3, 20, 4)
    props = flow_properties("mm2", w, ["s1", "s2", "s3"], 1, {})
    assert [props[f"s{i + 1}->target.topics"] for i in range(3)] == [w.regex(i) for i in range(3)]
    assert props["tasks.max"] == "1"
    one = flow_properties("mirrorspark", ScaleWorkload("partitions", 1, 10, 100), ["s9"], 2, {})
    assert one["topics"] == "bench-scale-10x100-.*"
    assert not any("->" in k for k in one)
    with pytest.raises(ValueError):
        flow_properties("mm2", w, ["s1"], 1, {})


def test_the_idle_figure_is_the_median_of_the_runs_and_every_run_is_listed() -> None:
    runs = [result("mm2", "partitions:100x100", r, c, partitions=100) for r, c in ((1, 0.071), (2, 0.016), (3, 0.02))]
    table = scale_markdown(runs)
    row = next(line for line in table.splitlines() if line.startswith("| partitions:100x100 | mm2 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[6] == "0.020"  # the median, not the mean (0.036)
    assert cells[7] == "0.071 / 0.016 / 0.020"  # run by run, in run order
    assert cells[12] == "20"  # driver/JVM peak RSS MB: median of 10, 20, 30
    (line,) = scale_lines(runs)
    assert line.startswith("scale partitions:100x100 (1 flow x 100 topics x 100 partitions (10,000 partitions)) mm2:")
    assert "idle 0.020 cores (median of 0.071 / 0.016 / 0.020, 60 s windows)" in line
    assert "all copied 20.0 s" in line and "(JVM 20 MB)" in line


def test_workloads_sit_side_by_side_and_a_contender_that_failed_says_why() -> None:
    ok = result("mirrorspark", "flows:50x20x4", 1, 0.2, flows=50, topics=1000)
    failed = ScaleResult("mm2", 1, 1000, 4, 4000, 1, workload="flows:50x20x4", flows=50, error="RuntimeError: boom\nx")
    table = scale_markdown([ok, failed])
    assert "| flows:50x20x4 | mirrorspark | 50 x 20 x 4 | 1 |" in table
    assert "| flows:50x20x4 | mm2 | 50 x 20 x 4 | 0 | - |" in table
    assert "- mm2 run 1 (flows:50x20x4) failed: RuntimeError: boom" in table
    assert failed.failed and not ok.failed
    lines = scale_lines([ok, failed])
    assert lines[0].startswith(
        "scale flows:50x20x4 (50 flows x 20 topics x 4 partitions (4,000 partitions)) mirrorspark:"
    )
    assert "(driver 10 MB)" in lines[0]
    assert lines[1].endswith("mm2: failed: RuntimeError: boom")


def test_the_marginal_idle_cost_per_topic_reads_only_the_one_flow_topics_workloads() -> None:
    runs = [
        result("mirrorspark", "topics:100x4", 1, 0.02),
        result("mirrorspark", "topics:1000x4", 1, 0.08, topics=1000),
        result("mirrorspark", "partitions:100x100", 1, 0.5, partitions=100),
        result("mirrorspark", "flows:50x20x4", 1, 0.9, flows=50, topics=1000),
        result("mm2", "topics:100x4", 1, 0.03),
    ]
    assert marginal_idle_lines(runs) == [
        "scale marginal idle cost per added topic mirrorspark: 0.067 millicores (100 -> 1,000 topics)"
    ]
    assert scale_lines(runs)[0].startswith("scale partitions:100x100")
    assert not any(line.startswith("scale topics:") for line in scale_lines(runs))
    assert "- mirrorspark: 100 -> 1,000 topics (x10)" in scale_markdown(runs)


def test_results_from_before_workloads_had_names_read_as_topics_workloads() -> None:
    old = ScaleResult("mm2", 1, 1000, 4, 4000, 2, discovery_s=3.0, idle_s=20.0, idle_cores=0.01)
    assert (old.spec, old.kind) == ("topics:1000x4", "topics")
    assert old.to_json()["workload"] == "topics:1000x4"


def test_mm2s_refused_topic_creation_is_named_as_why_it_cannot_run_the_workload() -> None:
    from bench.scale import refusal_in

    log = (
        "[2026-11-30 09:54:52,001] INFO Started MirrorSourceConnector with 100 topic-partitions.\n"
        "[2026-11-30 09:54:53,182] WARN Could not create topic s2.bench-scale-100x100-46. "
        "(org.apache.kafka.connect.mirror.MirrorSourceConnector)\n"
        "java.util.concurrent.CompletionException: org.apache.kafka.common.errors.PolicyViolationException: "
        "Excessively large number of partitions per request.\n"
        "[2026-11-30 09:54:53,184] WARN Could not create topic s2.bench-scale-100x100-47.\n"
    )
    why = refusal_in(log)
    assert "Could not create topic s2.bench-scale-100x100-46" in why
    assert why.endswith("PolicyViolationException: Excessively large number of partitions per request.")
    assert refusal_in(log.splitlines()[0]) == ""


def test_the_brokers_get_kafkas_own_heap_only_for_a_workload_the_small_heap_cannot_hold() -> None:
    from bench.scale_report import KAFKA_HEAP, broker_heap

    assert broker_heap(parse_workloads(FULL_WORKLOADS)) == KAFKA_HEAP  # 10,000 partitions killed a 512 MiB broker
    assert broker_heap(parse_workloads(QUICK_WORKLOADS)) is None


def test_a_contender_that_cannot_run_a_workload_says_why_and_has_not_failed() -> None:
    why = "WARN Could not create topic s2.t. PolicyViolationException: Excessively large number of partitions"
    refused = ScaleResult("mm2", 1, 100, 100, 10_000, 2, workload="partitions:100x100", cannot_run=why)
    assert not refused.ok and not refused.failed
    assert f"- mm2 run 1 (partitions:100x100) cannot run it: {why}" in scale_markdown([refused])
    assert scale_lines([refused])[0].endswith(f"mm2: cannot run it: {why}")
    assert refused.to_json()["cannot_run"] == why
