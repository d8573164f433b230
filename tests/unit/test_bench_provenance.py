"""The provenance case of ``make bench`` (#41's cost bound): the same flow with the header off and on, 1 KiB x 12."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mirrorspark.config.parse import parse_config
from mirrorspark.config.properties import parse_properties

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import cli  # noqa: E402
from bench.provenance import PROVENANCE_CONTENDERS, RATIO_LABEL, provenance_case, result_line  # noqa: E402


def test_the_case_runs_the_same_flow_with_the_header_off_and_on() -> None:
    assert "provenance" in cli.CASES and "provenance" in cli.OWN_SECTIONS
    case = provenance_case(records=1000, runs=3, tasks_max=12, warmup_records=100)
    assert (case.workload.record_size, case.workload.partitions, case.workload.records) == (1024, 12, 1000)
    assert tuple(c.name for c in case.contenders) == PROVENANCE_CONTENDERS
    assert case.ratios == [(RATIO_LABEL, "mirrorspark-provenance", "mirrorspark")]
    off, on = (c.properties(case.workload, "s1") for c in case.contenders)  # type: ignore[attr-defined]
    assert {k: v for k, v in on.items() if k not in off} == {"provenance.header.enable": "true"}
    base = "clusters = s1, target\ns1.bootstrap.servers = a:1\ntarget.bootstrap.servers = b:1\n"
    base += "s1->target.enabled = true\n"
    for props, header in ((off, False), (on, True)):
        text = base + "".join(f"{k} = {v}\n" for k, v in props.items())
        assert parse_config(parse_properties(text)).flow("s1", "target").provenance_header_enable is header


def test_the_result_line_gives_the_ratio_and_the_bound() -> None:
    result: Any = SimpleNamespace(case=provenance_case(records=10, runs=1, tasks_max=12), ratios={RATIO_LABEL: 0.9876})
    assert result_line(result) == (
        "provenance 1024 B x 12: throughput ratio mirrorspark-provenance/mirrorspark 0.988 (bound 0.97)"
    )
