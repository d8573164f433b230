"""The drill's pure rules: predicted re-reads and skips, copies matched to originals, the history record."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.drills import (
    DRILLS_PREFIX,
    DrillResult,
    GroupDrill,
    GroupPartitionDrill,
    PartitionRecoveryPoint,
    PolicyVerdict,
    RecoveryPoint,
    decode_drill,
    encode_drill,
    match_copies,
    matches_any_group,
    policy_verdict,
    predict_partition,
    shadow_group,
)
from mirrorspark.core.failover_policy import PartitionHealth
from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.internal_topics import mirrorspark_topic
from mirrorspark.mm2.policy import DefaultReplicationPolicy


def fp(offset: int) -> bytes:
    return offset.to_bytes(16, "big")


def result(**kw: object) -> DrillResult:
    rp = RecoveryPoint(
        (PartitionRecoveryPoint("t", 0, 150, 100, 50, 12.5), PartitionRecoveryPoint("t", 1, 80, 80, 0, 0.0)), 1, 7
    )
    row = GroupPartitionDrill("A.t", 0, "t", 80, 50, 50, 30, 0, "exact", 70, 30, 0, 95, 5)
    group = GroupDrill("g", (row,), 0, 0, None, 42, 50, ("t-1",))
    base: dict[str, object] = dict(
        flow="A->B",
        source="A",
        target="B",
        at=1_700_000_000_000,
        executed=True,
        recovery_point=rp,
        groups=(group,),
        policy=PolicyVerdict("under-min-isr", False, "nothing", "healthy", ("g",), 30_000),
        duration_ms=1234,
    )
    base.update(kw)
    return DrillResult(**base)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- prediction


@pytest.mark.parametrize(
    ("committed", "copied", "upstream", "r_cp", "start", "expected"),
    [
        (50, 100, 50, 0, 0, (0, 0)),  # at an exact checkpoint: nothing again, nothing skipped
        (80, 100, 50, 0, 0, (30, 0)),  # consumed 30 more since the checkpoint
        (130, 100, 60, 0, 0, (40, 0)),  # ahead of the copy: only what is on the target is read again
        (55, 100, 60, 9, 0, (4, 0)),  # MM2's bound: the first record read is the copy of 51
        (20, 100, 60, 0, 0, (0, 40)),  # reset back since the checkpoint: 20..59 skipped
        (20, 100, 60, 0, 40, (0, 20)),  # ...but 20..39 are gone from the source: 40..59 skipped
        (None, 100, 60, 3, 0, (3, 0)),  # committed unknown: counted against the checkpoint
    ],
)
def test_predict_partition(
    committed: int | None, copied: int, upstream: int, r_cp: int, start: int, expected: tuple[int, int]
) -> None:
    assert predict_partition(committed, copied, upstream, r_cp, source_start=start) == expected


@given(
    committed=st.integers(0, 500),
    copied=st.integers(0, 500),
    upstream=st.integers(0, 500),
    r_cp=st.integers(0, 500),
)
def test_prediction_never_both_rereads_and_skips(committed: int, copied: int, upstream: int, r_cp: int) -> None:
    rereads, skips = predict_partition(committed, copied, upstream, min(r_cp, upstream))
    assert rereads >= 0 and skips >= 0 and not (rereads and skips)


# --------------------------------------------------------------------------- measurement


def test_match_copies_counts_rereads_before_the_committed_offset() -> None:
    source = [(o, fp(o)) for o in range(0, 150)]
    target = [fp(o) for o in range(50, 100)]  # a consumer at the copy of 50, the copy reaching 99
    got = match_copies(target, source, 80)
    assert (got.rereads, got.skips, got.unmatched, got.frontier) == (30, 0, 0, 100)


def test_match_copies_counts_skips_up_to_the_frontier_only() -> None:
    source = [(o, fp(o)) for o in range(40, 150)]  # 0..39 deleted from the source
    target = [fp(o) for o in range(60, 100)]
    got = match_copies(target, source, 20)
    assert (got.rereads, got.skips, got.frontier) == (0, 20, 100)  # 40..59; 100..149 are not copied yet


def test_match_copies_counts_a_duplicate_copy_as_a_reread_and_unknown_records_apart() -> None:
    source = [(o, fp(o)) for o in range(10)]
    target = [fp(3), fp(4), fp(5), fp(4), fp(5), fp(6), b"x" * 16]
    got = match_copies(target, source, 3)
    assert (got.rereads, got.skips, got.unmatched, got.frontier) == (2, 0, 1, 7)


def test_match_copies_of_nothing() -> None:
    assert match_copies([], [(0, fp(0))], 0).frontier is None


# --------------------------------------------------------------------------- names


def test_names() -> None:
    assert mirrorspark_topic(DRILLS_PREFIX, None, "A") == "mm2-drills.A.internal"
    assert mirrorspark_topic(DRILLS_PREFIX, DefaultReplicationPolicy(), "A") == "mm2-drills.A.internal"
    assert shadow_group("orders") == "mirrorspark-drill.orders"


@pytest.mark.parametrize(("pattern", "every"), [(".*", True), (".+", True), ("(?s).*", True), ("orders-.*", False)])
def test_matches_any_group(pattern: str, every: bool) -> None:
    assert matches_any_group(pattern) is every


# --------------------------------------------------------------------------- the history record


def test_record_round_trips_with_its_totals() -> None:
    r = result()
    key, value = encode_drill(r)
    assert json.loads(key) == {"flow": "A->B", "at": 1_700_000_000_000}
    raw = json.loads(value)
    assert raw["v"] == 1 and raw["rereads"] == 30 and raw["skips"] == 0
    assert raw["recovery_point"]["records"] == 50 and raw["recovery_point"]["seconds"] == 12.5
    assert raw["groups"][0]["measured_rereads"] == 30
    assert decode_drill(key, value) == r


def test_totals_are_unknown_when_a_partition_is() -> None:
    row = GroupPartitionDrill("A.t", 0, "t", None, 5, 5, None, None, "unknown")
    r = result(groups=(GroupDrill("g", (row,), 0, None),), policy=None)
    assert r.rereads is None and r.skips is None
    assert decode_drill(*encode_drill(r)) == r


def test_recovery_point_seconds_unknown_when_a_waiting_partition_is() -> None:
    rp = RecoveryPoint((PartitionRecoveryPoint("t", 0, 10, 5, 5, -1.0), PartitionRecoveryPoint("t", 1, 9, 9, 0, -1.0)))
    assert (rp.records, rp.max_records, rp.seconds) == (5, 5, -1.0)
    assert RecoveryPoint(()).seconds == 0.0


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        (b"{}", b"not json", "not JSON"),
        (b"{}", b'{"v": 2}', "unknown version"),
        (b"{}", json.dumps({**result().to_json(), "at": "soon"}).encode(), "at must be int"),
        (b"{}", json.dumps({**result().to_json(), "groups": [1]}).encode(), "groups must be a list of objects"),
        (b"{}", json.dumps({**result().to_json(), "executed": 1}).encode(), "executed must be bool"),
    ],
)
def test_a_corrupt_record_names_the_field(key: bytes, value: bytes, named: str) -> None:
    with pytest.raises(CorruptRecordError, match=named):
        decode_drill(key, value)


# --------------------------------------------------------------------------- the failover policy's dry run


def health(leader: int | None, isr: int = 3) -> PartitionHealth:
    return PartitionHealth("t", 0, leader, isr, 3, 2)


@pytest.mark.parametrize(
    ("policy", "dry_run", "parts", "action", "reason"),
    [
        ("under-min-isr", False, [health(1)], "nothing", "the source is healthy: none of its 1 partitions"),
        ("under-min-isr", False, [health(1, isr=1)], "fail over", "1 of 1 source partitions offline or under min ISR"),
        ("offline", False, [health(1, isr=1)], "nothing", "none of its 1 partitions is offline"),
        ("offline", False, [health(None, isr=0)], "fail over", "t-0 (no leader)"),
        ("offline", True, [health(None, isr=0)], "record only", "t-0 (no leader)"),
        ("manual", False, [health(None, isr=0)], "record only", "t-0 (no leader)"),
    ],
)
def test_policy_verdict(policy: str, dry_run: bool, parts: list[PartitionHealth], action: str, reason: str) -> None:
    v = policy_verdict(
        policy,
        parts,
        source="A",
        dry_run=dry_run,
        grace_ms=5000,
        group_patterns=("orders-.*",),
        groups=["orders-1", "billing"],
    )
    assert (v.policy, v.action, v.breached, v.groups, v.grace_ms) == (
        policy,
        action,
        action != "nothing",
        ("orders-1",),
        5000,
    )
    assert reason in v.reason
