"""Checkpoints on identically named topics that both flows of a pair write (active/active, beyond MM2).

With ``IdentityReplicationPolicy`` both ways and provenance headers, topic ``orders`` on S holds S's own
records and copies of T's, and ``orders`` on T the reverse. Flow ``S->T`` translates a group's position
``X`` on ``S:orders-p`` to ``D`` on ``T:orders-p`` by MM2's rule, which only speaks of S's records: T's own
records below ``D`` that had not reached S below ``X`` were never consumed, and a consumer starting at ``D``
would skip them. The clamp lowers ``D`` with what the reverse flow ``T->S`` tells of its copies of
``T:orders-p``: its exact copied ranges (same process) or its offset syncs (``u`` on T copied to ``d`` on S).

Invariants (the tests that guard them cite them); ``P`` is the reverse frontier: every T record below ``P``
that ``T->S`` copies reached S below ``X``:

* **N1** No skip, never past MM2's answer: the result is ``min(D, P)``. Every S record at ``X`` or later is at
  or past it on T (MM2's guarantee for ``D``), and every T record of T's own below it reached S below ``X``
  (so the group consumed it). Copies keep each partition's order, so ``P`` is exact from copied ranges
  and ``u + 1`` from the newest sync with ``d < X``.
* **N2** Bounded re-reads: at most MM2's (``t.rereads``) plus ``|D - P|`` positions (``D - P`` under N3),
  plus from syncs the T records copied between ``d`` and ``X`` (at most ``X - d - 1``; 0 from exact ranges).
* **N3** Reverse syncs that all landed at or after ``X``: ``P`` is the smallest synced ``u`` (nothing of T had
  reached S below ``X``). A skip-free answer only while the syncs read reach back to the reverse flow's first
  copy of the partition (no compaction or store reset dropped it): said in ``docs/migration.md``.
* **N4** No reverse information for the partition (the reverse flow copied nothing of it yet, or does not
  keep the name): ``D`` unchanged. T records the reverse flow has not copied at all are not protected.
* **N5** A later commit never clamps lower for the same reverse history (``P`` grows with ``X``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mirrorspark.mm2.checkpoint_rules import GroupOffset, is_failback
from mirrorspark.mm2.policy import ReplicationPolicy
from mirrorspark.mm2.sync_store import OffsetSyncStore
from mirrorspark.mm2.translation import CopiedRanges


@dataclass(frozen=True, slots=True)
class ReverseFrontier:
    """Where T's own records stop having reached S below a position ``X`` (N1), and the slack of that bound.

    ``position`` is ``P`` on T; ``slack`` the T records at or past ``P`` that may still have reached S below
    ``X`` (N2; 0 when exact); ``basis`` is ``"exact"``, ``"offset-syncs"`` or ``"earliest-sync"`` (N3).
    """

    position: int
    slack: int
    basis: str


def keeps_name_both_ways(
    policy: ReplicationPolicy, reverse_policy: ReplicationPolicy, source: str, target: str, topic: str
) -> bool:
    """Whether ``topic`` on S and its copy on T carry one name both ways (``S->T`` and ``T->S`` keep it)."""
    if is_failback(policy, target, topic):
        return False
    return (
        policy.format_remote_topic(source, topic) == topic
        and reverse_policy.format_remote_topic(target, topic) == topic
    )


def reverse_frontier(
    syncs: OffsetSyncStore | None, copied: CopiedRanges | None, topic: str, partition: int, position: int
) -> ReverseFrontier | None:
    """Find ``P`` for a group at ``position`` on S from the reverse flow's copies of ``topic``-``partition`` on T.

    ``syncs``/``copied`` are the reverse flow's (keyed by T's topic); ``None`` without information (N4).
    """
    if copied is not None:
        exact = copied.translate_upstream(topic, partition, position)
        if exact is not None:
            return ReverseFrontier(exact, 0, "exact")
    if syncs is None or not syncs.initialized:
        return None
    known = syncs.syncs(topic, partition)  # newest first
    if not known:
        return None
    for s in known:
        if s.downstream_offset < position:
            return ReverseFrontier(s.upstream_offset + 1, max(0, position - s.downstream_offset - 1), "offset-syncs")
    return ReverseFrontier(min(s.upstream_offset for s in known), 0, "earliest-sync")


def clamp_group_offset(
    go: GroupOffset, syncs: OffsetSyncStore | None, copied: CopiedRanges | None
) -> tuple[GroupOffset, ReverseFrontier | None]:
    """Lower a forward translation of an identically named topic to the reverse frontier (N1-N5).

    ``go`` is MM2's translation; ``syncs``/``copied`` the reverse flow's. Returns it unchanged with ``None``
    when untranslatable or without reverse information.
    """
    cp = go.checkpoint
    if cp is None or go.rereads < 0:
        return go, None
    frontier = reverse_frontier(syncs, copied, cp.topic, cp.partition, go.upstream_offset)
    if frontier is None:
        return go, None
    down, front = cp.downstream_offset, frontier.position
    # S's copies in [P, D) were consumed; T's own records in [D, P) too, unless nothing of T had reached S (N3)
    consumed_own = 0 if frontier.basis == "earliest-sync" else max(0, front - down)
    rereads = go.rereads + max(0, down - front) + consumed_own + frontier.slack
    clamped = min(down, front)
    return replace(go, checkpoint=replace(cp, downstream_offset=clamped), rereads=rereads), frontier


__all__ = ["ReverseFrontier", "clamp_group_offset", "keeps_name_both_ways", "reverse_frontier"]
