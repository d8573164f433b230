"""The randomized fault checker believes a gap only as far as its fault log shows the records removed (audit N12).

Synthetic inputs to :func:`chaos_check.check_flow` (no broker): a gap ``mirrorspark status --json``
would print, the feed's log of what it produced, what the target holds, and the fault log
(:class:`chaos_feed.Removal`). A gap over records still on the source (a position jump) must
fail the verdict, not hide the loss.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]
for folder in ("integration", "faults"):  # the checker and the helpers it imports
    if str(TESTS / folder) not in sys.path:
        sys.path.insert(0, str(TESTS / folder))

from chaos_check import FlowVerdict, check_flow  # noqa: E402
from chaos_feed import FedRecord, Incarnation, Removal  # noqa: E402

LIVES = {"t": [Incarnation(0, "OLDID", 1_000, 100_000), Incarnation(1, "NEWID", 100_000)]}
"""Topic ``t``: created at 1 s, deleted and re-created at 100 s."""


def fed(inc: int, part: int, offset: int) -> bytes:
    return b"chaos|t|%d|%d|%012d|.." % (inc, part, offset)


def log_of(*records: tuple[int, int, int]) -> dict[bytes, FedRecord]:
    return {fed(i, p, o): FedRecord("t", i, p, o) for i, p, o in records}


def deleted(first: int, last: int | None, at: int, partition: int = 0) -> dict[str, Any]:
    """A ``deleted`` gap of flow ``alo->alo_t`` as ``status --json`` prints it."""
    return {"flow": "alo->alo_t", "topic": "t", "partition": partition, "reason": "deleted", "first_lost": first,
            "last_lost": last, "at": at, "old_topic_id": None, "new_topic_id": None}  # fmt: skip


def removal(kind: str, at_ms: int, first: int, end: int, inc: int = 0, partition: int = 0) -> Removal:
    return Removal(kind, at_ms, "t", inc, LIVES["t"][inc].topic_id, partition, first, end)


def verdict(
    log: dict[bytes, FedRecord], copies: dict[bytes, list[tuple[int, int]]], gaps: list[dict[str, Any]],
    removals: list[Removal],
) -> FlowVerdict:  # fmt: skip
    return check_flow("at-least-once", "alo", log=log, lives=LIVES, copies=copies, gaps=gaps, removals=removals,
                      checkpoints=[], bound=0)  # fmt: skip


# records 0..5 of partition 0 produced; 0 and 5 copied; 1..4 missing from the target
LOG = log_of(*((0, 0, o) for o in range(6)))
COPIES = {fed(0, 0, 0): [(0, 0)], fed(0, 0, 5): [(0, 1)]}
# the same partition when its topic is re-created after 4: 0 copied, 1..4 never reached
HEAD_LOG = log_of(*((0, 0, o) for o in range(5)))
HEAD = {fed(0, 0, 0): [(0, 0)]}


def kinds(v: FlowVerdict) -> list[str]:
    return [x.kind for x in v.violations]


def test_a_gap_over_records_still_on_the_source_is_a_loss_and_a_spurious_gap() -> None:
    """A planted ``deleted`` gap over 1..4 with no fault that removed them: the flow jumped over them."""
    v = verdict(LOG, COPIES, [deleted(1, 4, at=5_000)], [])
    assert v.lost == 4 and v.in_gaps == 0 and v.spurious_gaps == 1
    assert kinds(v) == ["lost", "spurious-gap"]
    assert "4 inside a gap, not removed by a fault before they were copied" in v.violations[0].detail
    assert "t-0 deleted 1..4 found at 5000: no fault removed these records" in v.violations[1].detail
    # a fault on another partition, or one after the gap was found, grounds nothing either
    for elsewhere in (removal("delete-records", 4_000, 0, 5, partition=1), removal("delete-records", 6_000, 0, 5)):
        assert kinds(verdict(LOG, COPIES, [deleted(1, 4, at=5_000)], [elsewhere])) == ["lost", "spurious-gap"]


def test_a_spurious_recreated_gap_excuses_nothing() -> None:
    """An old-id gap found before the topic was re-created (a position jump) does not open-endedly excuse."""
    gap = {**deleted(1, None, at=50_000), "reason": "recreated", "old_topic_id": "OLDID", "new_topic_id": "NEWID"}
    recreated = removal("recreate-topic", 99_000, 0, 5)
    v = verdict(HEAD_LOG, HEAD, [gap], [recreated])
    assert v.lost == 4 and kinds(v) == ["lost", "spurious-gap"]
    # the same gap found after the re-creation the fault log shows: every missing record excused
    real = verdict(HEAD_LOG, HEAD, [{**gap, "at": 100_500}], [recreated])
    assert real.ok and real.in_gaps == 4 and real.spurious_gaps == 0
    # naming an incarnation that was never re-created, or a new id that is not a later incarnation
    assert not verdict(HEAD_LOG, HEAD, [{**gap, "at": 100_500, "new_topic_id": "OLDID"}], [recreated]).ok
    assert not verdict(HEAD_LOG, HEAD, [{**gap, "at": 100_500, "old_topic_id": "NEWID"}], [recreated]).ok


def test_a_delete_records_fault_with_its_gap_passes() -> None:
    """``deleteRecords`` before 5 at 4 s, the flow had copied only 0: the gap 1..4 found at 5 s excuses 1..4."""
    v = verdict(LOG, COPIES, [deleted(1, 4, at=5_000)], [removal("delete-records", 4_000, 0, 5)])
    assert v.ok and v.lost == 0 and v.in_gaps == 4 and v.spurious_gaps == 0
    # the removal without the gap: the system lost records without a word
    silent = verdict(LOG, COPIES, [], [removal("delete-records", 4_000, 0, 5)])
    assert silent.lost == 4 and kinds(silent) == ["lost"]


def test_a_gap_wider_than_its_fault_excuses_only_the_removed_records() -> None:
    """``deleteRecords`` removed 0..2 (log start 3); a gap 1..4 leaves 3 and 4, still on the source, lost."""
    v = verdict(LOG, COPIES, [deleted(1, 4, at=5_000)], [removal("delete-records", 4_000, 0, 3)])
    assert v.in_gaps == 2 and v.lost == 2 and v.spurious_gaps == 0
    assert kinds(v) == ["lost"]
    assert "2 inside a gap, not removed by a fault before they were copied" in v.violations[0].detail
    assert "t-0 (incarnation 0) upstream 3..4 (2)" in v.violations[0].detail


def test_an_open_ended_gap_excuses_only_what_the_faults_removed_of_its_incarnation() -> None:
    """A re-creation removed 3..5 (0..2 went before, with a ``deleteRecords`` the log lacks): 1 and 2 stay lost.

    With the earlier removal in the fault log, the whole open-ended gap is grounded; the new
    incarnation's records, which it does not name, are never excused by it.
    """
    log = {**LOG, **log_of((1, 0, 0), (1, 0, 1))}
    copies = {fed(0, 0, 0): [(0, 0)], fed(1, 0, 1): [(0, 2)]}
    gap = {**deleted(1, 3, at=100_500), "reason": "recreated", "old_topic_id": "OLDID", "new_topic_id": "NEWID"}
    recreated = removal("recreate-topic", 99_000, 3, 6)
    v = verdict(log, copies, [gap], [recreated])
    assert v.lost == 3 and v.in_gaps == 3  # 1, 2 and the new incarnation's 0 lost; 3..5 excused
    assert "t-0 (incarnation 0) upstream 1..2 (2)" in v.violations[0].detail
    assert "t-0 (incarnation 1) upstream 0..0 (1)" in v.violations[0].detail
    earlier = removal("delete-records", 2_000, 0, 3)
    both = verdict(log, {**copies, fed(1, 0, 0): [(0, 1)]}, [gap], [earlier, recreated])
    assert both.ok and both.in_gaps == 5


def test_a_truncated_gap_no_fault_explains_is_a_violation_even_when_nothing_is_lost() -> None:
    """The source here is one broker that nothing truncates: a ``truncated`` gap is a position past its end."""
    everything = {value: [(0, rec.offset)] for value, rec in LOG.items()}
    v = verdict(LOG, everything, [{**deleted(6, 9, at=5_000), "reason": "truncated"}], [])
    assert v.lost == 0 and kinds(v) == ["spurious-gap"]


def test_a_real_recreations_gap_with_nothing_left_to_copy_is_no_violation() -> None:
    """The flow had copied all the old topic held (its gap starts at the old end) or did not know where it was."""
    everything = {value: [(0, rec.offset)] for value, rec in LOG.items()}
    gap = {**deleted(6, None, at=100_500), "reason": "recreated", "old_topic_id": "OLDID", "new_topic_id": "NEWID"}
    recreated = removal("recreate-topic", 99_000, 0, 6)
    for first in (6, None):
        assert verdict(LOG, everything, [{**gap, "first_lost": first}], [recreated]).ok, first
    gone = {**gap, "reason": "deleted", "new_topic_id": None}  # the topic seen deleted, before its re-creation
    assert verdict(LOG, everything, [gone], [recreated]).ok

    # a partition the new topic has and the flow never saw (added just after the re-creation): the old topic
    # may have had it, the gap says so from 0; the re-creation grounds it, and it names none of the old records
    unseen = {**gap, "partition": 2, "first_lost": 0}
    assert verdict(LOG, everything, [unseen], [recreated]).ok
    assert not verdict(LOG, everything, [{**unseen, "old_topic_id": "NEWID"}], [recreated]).ok


def test_a_deleted_gap_found_while_a_topic_was_re_created_is_grounded_by_the_re_creation() -> None:
    """Seed 27: the flow saw the old topic's records go during its deletion and named them as ``deleted``, no id."""
    recreated = removal("recreate-topic", 99_000, 0, 5)
    v = verdict(HEAD_LOG, HEAD, [deleted(1, 4, at=100_800)], [recreated])
    assert v.ok and v.in_gaps == 4
    # long after that incarnation's deletion, the same gap names the new incarnation, which lost nothing
    assert kinds(verdict(HEAD_LOG, HEAD, [deleted(1, 4, at=400_000)], [recreated])) == ["lost", "spurious-gap"]


def test_a_gap_from_the_start_of_a_recreated_topic_does_not_excuse_records_the_flow_went_past() -> None:
    """A skip while the topic lived (1, 2 missing, 3 copied), then the re-creation and a gap from offset 0
    (what a flow that saw the topic vanish reports, seeds 6, 15, 27): only 4 and 5, never reached, are excused."""
    copies = {fed(0, 0, 0): [(0, 0)], fed(0, 0, 3): [(0, 1)]}
    gap = {**deleted(0, None, at=100_500), "reason": "recreated", "old_topic_id": "OLDID", "new_topic_id": "NEWID"}
    v = verdict(LOG, copies, [gap], [removal("recreate-topic", 99_000, 0, 6)])
    assert v.lost == 2 and v.in_gaps == 2 and kinds(v) == ["lost"]
    assert "t-0 (incarnation 0) upstream 1..2 (2)" in v.violations[0].detail
    # a deleteRecords before 3, then the re-creation: 1 and 2 went before the flow reached them
    deletion = removal("delete-records", 50_000, 0, 3)
    assert verdict(LOG, copies, [gap], [deletion, removal("recreate-topic", 99_000, 3, 6)]).ok
