"""The transforms case of ``make bench``: its tagged workload and the flow keys both replicators get."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.config.parse import parse_config

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench.suite import FILTER_TAGGED, INSERT_HEADER, TRANSFORMS_CONTENDERS, transforms_case  # noqa: E402
from bench.workload import Workload  # noqa: E402


@given(records=st.integers(0, 500), partitions=st.integers(1, 40))
def test_untagged_records_counts_the_records_a_filter_of_tagged_ones_keeps(records: int, partitions: int) -> None:
    w = Workload("x", records, 10, partitions, tagged=True)
    assert w.untagged_records == sum(1 for i in range(records) if not w.is_tagged(i))
    per_partition = [[w.is_tagged(i) for i in range(records) if i % partitions == p] for p in range(partitions)]
    assert all(tags[1::2] == [True] * len(tags[1::2]) and not any(tags[::2]) for tags in per_partition)


def test_an_untagged_workload_keeps_every_record_and_its_topic_name() -> None:
    w = Workload("compare", 100, 1024, 12)
    assert w.untagged_records == 100 and not any(w.is_tagged(i) for i in range(100))
    assert w.topic == "bench-compare-100x1024b-p12"
    assert Workload("smt", 100, 1024, 12, tagged=True).topic.endswith("-tagged")


def test_both_replicators_get_the_same_transforms_as_keys_of_the_runs_flow() -> None:
    case = transforms_case(records=1000, runs=1, tasks_max=2)
    assert [c.name for c in case.contenders] == list(TRANSFORMS_CONTENDERS)
    by_name = {c.name: c for c in case.contenders}
    for a, b, keys in (
        ("mirrorspark-filter", "mm2-filter", FILTER_TAGGED),
        ("mirrorspark-insert", "mm2-insert", INSERT_HEADER),
    ):
        pa = by_name[a].properties(case.workload, "s7")  # type: ignore[attr-defined]
        pb = by_name[b].properties(case.workload, "s7")  # type: ignore[attr-defined]
        flow = {k: v for k, v in pa.items() if k.startswith("s7->target.")}
        assert flow == {f"s7->target.{k}": v for k, v in keys.items()}
        assert {k: v for k, v in pb.items() if k.startswith("s7->target.")} == flow
    assert not any("->" in k for k in by_name["mm2"].properties(case.workload, "s7"))  # type: ignore[attr-defined]
    # mirrorspark reads the keys as a flow's transform chain, as MM2 does
    props = by_name["mirrorspark-filter"].properties(case.workload, "s7")  # type: ignore[attr-defined]
    cfg = parse_config(
        {
            "clusters": "s7, target",
            "s7.bootstrap.servers": "a:1",
            "target.bootstrap.servers": "b:1",
            "s7->target.enabled": "true",
            **props,
        },
        source_name="bench",
    )
    (flow_cfg,) = [f for f in cfg.flows if f.enabled]
    assert [t.type for t in flow_cfg.transforms.transforms] == ["org.apache.kafka.connect.transforms.Filter"]
