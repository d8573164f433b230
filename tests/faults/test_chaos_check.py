"""The randomized fault checker's own logic, without brokers: the schedule, the bound, the verdict, the table."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import chaos
import report
from chaos_check import check_flow
from chaos_faults import FAULTS, draw_schedule
from chaos_feed import FedRecord, Incarnation, Removal, parse_value

from mirrorspark.mm2.records import Checkpoint

LIVES = {"t": [Incarnation(0, "OLDID", 1_000, 100_000), Incarnation(1, "NEWID", 100_000)]}
REMOVED = [
    Removal("delete-records", 3_000, "t", 0, "OLDID", 0, 0, 3),  # deleteRecords before 3 at 3 s
    Removal("recreate-topic", 99_000, "t", 0, "OLDID", 0, 3, 3),  # then the topic re-created (nothing left)
]
"""The fault log matching :data:`LIVES`."""


def fed(inc: int, part: int, offset: int) -> bytes:
    return b"chaos|t|%d|%d|%012d|.." % (inc, part, offset)


def log_of(*records: tuple[int, int, int]) -> dict[bytes, FedRecord]:
    return {fed(i, p, o): FedRecord("t", i, p, o) for i, p, o in records}


def verdict(log: dict[bytes, FedRecord], copies: dict[bytes, list[tuple[int, int]]], **kw: object):  # type: ignore[no-untyped-def]
    args: dict[str, object] = {"gaps": [], "removals": REMOVED, "checkpoints": [], "bound": 0, **kw}
    return check_flow("at-least-once", "alo", log=log, lives=LIVES, copies=copies, **args)  # type: ignore[arg-type]


def test_a_seed_replays_the_same_schedule() -> None:
    kinds = list(FAULTS)
    assert draw_schedule(7, 180, kinds, 3, spacing_s=20) == draw_schedule(7, 180, kinds, 3, spacing_s=20)
    assert draw_schedule(7, 180, kinds, 3, spacing_s=20) != draw_schedule(8, 180, kinds, 3, spacing_s=20)
    plan = draw_schedule(7, 180, kinds, 3, spacing_s=20)
    assert len(plan) == 9
    assert all(b.at_s - a.at_s >= 3.0 for a, b in itertools.pairwise(plan))


def test_a_value_names_its_topic_incarnation_partition_and_sequence() -> None:
    assert parse_value(fed(1, 2, 42)) == ("t", 1, 2, 42)
    assert parse_value(b"other") is None


def test_a_record_missing_from_the_target_is_lost_unless_a_gap_names_it_exactly() -> None:
    log = log_of((0, 0, 0), (0, 0, 1), (0, 0, 2), (1, 0, 0))
    copies = {fed(0, 0, 0): [(0, 0)], fed(1, 0, 0): [(0, 1)]}
    v = verdict(log, copies)
    assert v.lost == 2 and [x.kind for x in v.violations] == ["lost"]
    assert "t-0 (incarnation 0) upstream 1..2 (2)" in v.violations[0].detail
    exact = {"flow": "alo->alo_t", "topic": "t", "partition": 0, "reason": "recreated", "first_lost": 1,
             "last_lost": 2, "at": 100_500, "old_topic_id": "OLDID", "new_topic_id": "NEWID"}  # fmt: skip
    assert verdict(log, copies, gaps=[exact]).ok
    assert verdict(log, copies, gaps=[exact]).in_gaps == 2
    # a gap naming the old topic id covers that incarnation from first_lost on (its end as last listed may be stale)
    assert verdict(log, copies, gaps=[{**exact, "last_lost": 1}]).ok
    assert verdict(log, copies, gaps=[{**exact, "last_lost": None}]).ok
    for wrong in ({"old_topic_id": "NEWID"}, {"first_lost": 2}, {"first_lost": None}, {"partition": 1},
                  {"flow": "eos->eos_t"}):  # fmt: skip
        assert verdict(log, copies, gaps=[{**exact, **wrong}]).lost >= 1, wrong
    deleted = {**exact, "reason": "deleted", "old_topic_id": None, "new_topic_id": None, "at": 4_000}
    assert verdict(log, copies, gaps=[deleted]).ok
    assert not verdict(log, copies, gaps=[{**deleted, "at": 500}]).ok  # found before that incarnation was born


def test_a_recreated_gap_names_every_incarnation_between_its_two_ids() -> None:
    """A topic re-created twice while the flow could not look (seed 3: a driver cut): the middle incarnation's
    records were never seen, and the gap from the first id to the third names them all, and nothing else."""
    three = [Incarnation(0, "A", 1_000, 50_000), Incarnation(1, "B", 50_000, 90_000), Incarnation(2, "C", 90_000)]
    lives = {"t": three}
    log = log_of((0, 0, 7), (1, 0, 0), (1, 0, 1), (2, 0, 0))
    copies = {fed(2, 0, 0): [(0, 0)]}
    gap = {"flow": "alo->alo_t", "topic": "t", "partition": 0, "reason": "recreated", "first_lost": 7,
           "last_lost": None, "at": 95_000, "old_topic_id": "A", "new_topic_id": "C"}  # fmt: skip
    removed = [
        Removal("recreate-topic", 49_000, "t", 0, "A", 0, 0, 8),
        Removal("recreate-topic", 89_000, "t", 1, "B", 0, 0, 2),
    ]
    check = check_flow("at-least-once", "alo", log=log, lives=lives, copies=copies, gaps=[gap], removals=removed,
                       checkpoints=[], bound=0)  # fmt: skip
    assert check.ok and check.in_gaps == 3
    for narrower in ({"new_topic_id": "B"}, {"old_topic_id": "B"}):
        partial = check_flow("at-least-once", "alo", log=log, lives=lives, copies=copies, gaps=[{**gap, **narrower}],
                             removals=removed, checkpoints=[], bound=0)  # fmt: skip
        assert partial.lost >= 1, narrower


def test_copies_beyond_the_first_are_held_to_the_bound() -> None:
    log = log_of((0, 0, 0), (0, 0, 1))
    copies = {fed(0, 0, 0): [(0, 0), (0, 2)], fed(0, 0, 1): [(0, 1), (0, 3)]}
    assert verdict(log, copies, bound=2).ok
    v = verdict(log, copies, bound=1)
    assert [x.kind for x in v.violations] == ["copied-twice"] and v.copied_twice == 2


def test_first_copies_keep_each_partitions_order() -> None:
    log = log_of((0, 0, 0), (0, 0, 1), (0, 0, 2))
    in_order = {fed(0, 0, 0): [(0, 0), (0, 3)], fed(0, 0, 1): [(0, 1)], fed(0, 0, 2): [(0, 2)]}
    assert verdict(log, in_order, bound=9).ok
    swapped = {fed(0, 0, 0): [(0, 0)], fed(0, 0, 1): [(0, 2)], fed(0, 0, 2): [(0, 1)]}
    v = verdict(log, swapped)
    assert [x.kind for x in v.violations] == ["order"]
    assert "upstream 1 first copied at remote offset 2, after upstream 2" in v.violations[0].detail
    assert [x.kind for x in verdict(log, {**in_order, fed(0, 0, 2): [(1, 0)]}, bound=9).violations] == ["order"]


def test_a_checkpoint_may_not_translate_past_the_copy_of_its_record() -> None:
    log = log_of((0, 0, 0), (0, 0, 1), (0, 0, 2))
    copies = {fed(0, 0, 0): [(0, 10)], fed(0, 0, 1): [(0, 11)], fed(0, 0, 2): [(0, 12)]}

    def cp(upstream: int, downstream: int, at_ms: int = 2_000) -> tuple[Checkpoint, int]:
        return Checkpoint("g", "alo.t", 0, upstream, downstream), at_ms

    assert verdict(log, copies, checkpoints=[cp(1, 11), cp(1, 5), cp(3, 13), cp(9, 99)]).ok
    v = verdict(log, copies, checkpoints=[cp(1, 12)])
    assert [x.kind for x in v.violations] == ["checkpoint"]
    assert "(incarnation 0): upstream 1 -> downstream 12, past its last copy at 11" in v.violations[0].detail
    # written while the second incarnation lived (its record 1 was never produced), or too near the re-creation
    assert verdict(log, copies, checkpoints=[cp(1, 12, at_ms=200_000), cp(1, 12, at_ms=90_000)]).ok


def test_the_at_least_once_bound_takes_the_smaller_commit_rule_per_fault() -> None:
    assert chaos.duplicate_bound(3, rate=200, flush_ms=1000, tasks=2, commit_every=0) == 3 * 1000
    assert chaos.duplicate_bound(3, rate=200, flush_ms=1000, tasks=2, commit_every=100) == 3 * (200 + 800)
    assert chaos.duplicate_bound(0, rate=200, flush_ms=1000, tasks=2, commit_every=0) == 0
    assert chaos.duplicate_bound(1, rate=200, flush_ms=1000, tasks=2, commit_every=0, outage_s=2.5) == 1000 + 500


def test_the_report_adds_a_table_of_random_seeds(tmp_path: Path) -> None:
    figures, random = tmp_path / "figures-small.jsonl", tmp_path / "random.jsonl"
    figures.write_text(json.dumps({"scenario": "kill A", "mode": "at-least-once", "produced": 1, "lost": 0,
                                   "duplicated": 0, "resume_s": None}) + "\n")  # fmt: skip
    row = {"seed": 7, "mode": "exactly-once", "duration_s": 120, "faults": ["kill-run", "cut-driver (skipped)"],
           "produced": 24000, "lost": 0, "copied_twice": 0, "bound": 0, "gaps_named": 2, "verdict": "pass"}  # fmt: skip
    failed = {**row, "mode": "at-least-once", "verdict": "fail", "violations": ["seed 7 at-least-once: lost: 3"]}
    random.write_text(json.dumps({**row, "produced": 1}) + "\n" + json.dumps(row) + "\n" + json.dumps(failed) + "\n")
    out = tmp_path / "faults.md"
    assert report.main([str(figures), "--output", str(out), "--random", str(random)]) == 0
    text = out.read_text()
    assert "## Random seeds (`make faults-random`)" in text
    assert "| 7 | exactly-once | 120 | 2: kill-run, cut-driver (skipped) | 24,000 | 0 | 0 | 0 | 2 | pass |" in text
    assert "**fail**: seed 7 at-least-once: lost: 3" in text
    assert text.count("| 7 | exactly-once |") == 1
    suite = text.split("## Random seeds")[0]
    random.write_text(json.dumps({**row, "seed": 8}) + "\n")
    assert report.main(["--random-only", "--output", str(out), "--random", str(random)]) == 0
    again = out.read_text()
    assert again.startswith(suite) and "| 8 | exactly-once |" in again and "| 7 | exactly-once |" not in again
