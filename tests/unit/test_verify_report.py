"""Verify's report, JSON and exit status (core/verify/report.py V1..V4)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark import errors
from mirrorspark.cli.plan import CHANGES_EXIT_CODE
from mirrorspark.core.verify.report import (
    DIVERGENCE_EXIT_CODE,
    FINDING_KINDS,
    Finding,
    PartitionCounts,
    PartitionReport,
    VerifyReport,
    exit_status,
    report_from_json,
)

pytestmark = pytest.mark.unit

offsets = st.one_of(st.none(), st.integers(0, 10**9))
findings = st.builds(
    Finding,
    st.sampled_from(FINDING_KINDS),
    offsets,
    offsets,
    st.one_of(st.none(), st.sampled_from(["key", "value"])),
    offsets,
)
counts = st.builds(PartitionCounts, *(st.integers(0, 10**6) for _ in range(5)))
partitions = st.builds(
    PartitionReport,
    st.sampled_from(["a->b", "b->a"]),
    st.sampled_from(["t", "u"]),
    st.integers(0, 5),
    st.just("a.t"),
    counts,
    st.lists(findings, max_size=4).map(tuple),
)
reports = st.builds(VerifyReport, st.integers(0, 2**41), st.lists(partitions, max_size=5).map(tuple))


@given(reports)
def test_the_json_document_round_trips(report: VerifyReport) -> None:
    """V4 (through a real JSON text), grouped by flow."""
    doc = json.loads(json.dumps(report.to_json()))
    again = report_from_json(doc)
    assert sorted(again.partitions, key=repr) == sorted(report.partitions, key=repr)
    assert doc["divergent"] == sum(p.divergent for p in report.partitions)
    assert doc["exit_status"] == exit_status(report)


@given(reports)
def test_exit_status_is_zero_iff_no_finding(report: VerifyReport) -> None:
    """V2, V3: gaps, skips and unverified offsets never make a run divergent."""
    assert exit_status(report) == (0 if all(not p.findings for p in report.partitions) else DIVERGENCE_EXIT_CODE)


def test_the_divergence_code_is_no_other_exit_code() -> None:
    """V3: not an error's code, not 2 (usage), not plan's 10."""
    codes = {
        c.exit_code for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.MirrorsparkError)
    }
    assert DIVERGENCE_EXIT_CODE not in codes | {0, 2, CHANGES_EXIT_CODE}


def test_counts_per_kind_and_the_sort_order() -> None:
    """V1: every kind listed; findings order by source offset, target-only ones first."""
    p = PartitionReport(
        "a->b", "t", 0, "a.t", PartitionCounts(verified=3), (Finding("missing", 4, 9), Finding("missing", 5, None))
    )
    assert p.by_kind() == {"missing": 2, "unexpected": 0, "different": 0, "duplicated": 0, "out_of_order": 0}
    fs = [Finding("missing", 4, 9), Finding("unexpected", None, 7)]
    assert sorted(fs, key=Finding.sort_key)[0].kind == "unexpected"
