"""Verify's history records (core/verify/history.py H1..H3) and capped reports (core/verify/report.py V5)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.verify.history import (
    FINDINGS_KEPT,
    VerifyRun,
    decode_verify_key,
    decode_verify_run,
    encode_verify_run,
)
from mirrorspark.core.verify.report import (
    FINDING_KINDS,
    Finding,
    PartitionCounts,
    PartitionReport,
    VerifyReport,
    capped,
    report_from_json,
)
from mirrorspark.errors import CorruptRecordError

pytestmark = pytest.mark.unit

findings = st.builds(Finding, st.sampled_from(FINDING_KINDS), st.integers(0, 10**6), st.none())
partition_reports = st.builds(
    PartitionReport,
    st.just("a->b"),
    st.sampled_from(["t", "u"]),
    st.integers(0, 3),
    st.just("a.t"),
    st.builds(PartitionCounts, st.integers(0, 10**6)),
    st.lists(findings, max_size=30).map(tuple),
)


@given(partition_reports, st.integers(0, 10))
def test_capping_keeps_the_counts(report: PartitionReport, n: int) -> None:
    """V5: the first n findings listed, divergent and by_kind unchanged, capping twice changes nothing more."""
    c = capped(report, n)
    assert c.findings == report.findings[:n]
    assert c.divergent == report.divergent
    assert c.by_kind() == report.by_kind()
    assert capped(c, n) == c
    doc = json.loads(json.dumps(VerifyReport(1, (c,)).to_json()))
    assert report_from_json(doc).partitions == (c,)


def _run(partitions: tuple[PartitionReport, ...], **kw: object) -> VerifyRun:
    base: dict[str, object] = dict(
        flow="a->b", source="a", target="b", at=1_700_000_000_000, trigger="command", duration_ms=1234
    )
    base.update(kw)
    return VerifyRun(report=VerifyReport(1_700_000_000_000, partitions), **base)  # type: ignore[arg-type]


@given(st.lists(partition_reports, max_size=4).map(tuple), st.sampled_from(["command", "sampling"]))
def test_a_run_round_trips(partitions: tuple[PartitionReport, ...], trigger: str) -> None:
    """H1-H3: one key per run; the value decodes to the run, findings capped."""
    run = _run(partitions, trigger=trigger, since_ms=5, topics="orders.*")
    key, value = encode_verify_run(run)
    assert decode_verify_key(key) == ("a->b", run.at)
    again = decode_verify_run(key, value)
    assert again.report.partitions == tuple(capped(p, FINDINGS_KEPT) for p in partitions)
    assert (again.flow, again.trigger, again.since_ms, again.last, again.topics) == (
        "a->b",
        trigger,
        5,
        None,
        "orders.*",
    )
    assert (again.verified, again.divergent) == (run.verified, run.divergent)


def test_a_large_divergence_stays_a_small_record() -> None:
    """H2: a million findings in a partition are counted, not listed."""
    many = tuple(Finding("missing", o, None) for o in range(1_000_000))
    run = _run((PartitionReport("a->b", "t", 0, "a.t", PartitionCounts(), many),))
    key, value = encode_verify_run(run)
    assert len(value) < 20_000
    assert decode_verify_run(key, value).divergent == 1_000_000


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        (b"x", b"{}", "key is not JSON"),
        (b'{"flow":"a->b","at":1}', b"[]", "must be a JSON object"),
        (b'{"flow":"a->b","at":1}', b'{"v":9}', "unknown version 9"),
        (b'{"flow":"a->b","at":1}', b'{"v":1,"trigger":"cron"}', "trigger must be one of"),
        (b'{"flow":"a->b","at":1}', b'{"v":1,"trigger":"command","report":{"flows":1}}', "report is malformed"),
    ],
)
def test_a_corrupt_record_is_named(key: bytes, value: bytes, says: str) -> None:
    """H3: only CorruptRecordError, naming what is wrong."""
    with pytest.raises(CorruptRecordError, match=says):
        decode_verify_run(key, value)
