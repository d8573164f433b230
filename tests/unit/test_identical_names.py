"""Checkpoints of identically named topics written by both flows (``core.identical_names``, invariants N1-N5)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from fakes import FakeCluster, FakeTail, two_clusters
from mirrorspark.client.context import ReplicationContext
from mirrorspark.core.followed_groups import Committed
from mirrorspark.core.identical_names import (
    ReverseFrontier,
    clamp_group_offset,
    keeps_name_both_ways,
    reverse_frontier,
)
from mirrorspark.core.provenance import HEADER_NAME as PROVENANCE_HEADER
from mirrorspark.migration.drill_reads import fingerprint
from mirrorspark.mm2.checkpoint_rules import GroupOffset, translate_group_offset
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.mm2.policy import DefaultReplicationPolicy, IdentityReplicationPolicy
from mirrorspark.mm2.records import Checkpoint, OffsetSync
from mirrorspark.mm2.sync_store import OffsetSyncStore
from mirrorspark.mm2.translation import CopiedRanges
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.connector.commit_follower import CommitFollower

pytestmark = pytest.mark.unit

IDENTITY = IdentityReplicationPolicy(source_cluster_alias="A")
IDENTITY_BACK = IdentityReplicationPolicy(source_cluster_alias="B")
DEFAULT = DefaultReplicationPolicy()


def store(*syncs: tuple[int, int], topic: str = "orders") -> OffsetSyncStore:
    s = OffsetSyncStore()
    for upstream, downstream in syncs:
        s.update(OffsetSync(topic, 0, upstream, downstream))
    s.mark_initialized()
    return s


def forward(x: int, d: int, rereads: int = 0) -> GroupOffset:
    return GroupOffset("g", "orders", 0, x, Checkpoint("g", "orders", 0, x, d, "m"), rereads)


# --------------------------------------------------------------------------- when it applies


def test_only_a_topic_both_flows_keep_the_name_of_is_clamped() -> None:
    assert keeps_name_both_ways(IDENTITY, IDENTITY_BACK, "A", "B", "orders")
    assert not keeps_name_both_ways(DEFAULT, DEFAULT, "A", "B", "orders")  # lands as A.orders: B's own are elsewhere
    assert not keeps_name_both_ways(IDENTITY, DEFAULT, "A", "B", "orders")  # B->A copies B's orders to B.orders
    assert not keeps_name_both_ways(DEFAULT, DEFAULT, "A", "B", "B.orders")  # failback: translated back, not clamped


# --------------------------------------------------------------------------- the reverse frontier


def test_n1_reverse_syncs_before_x_give_one_past_the_newest_copied_below_x() -> None:
    reverse = store((10, 3), (30, 20), (50, 41))  # B's 10 landed at A's 3, 30 at 20, 50 at 41
    assert reverse_frontier(reverse, None, "orders", 0, 40) == ReverseFrontier(31, 19, "offset-syncs")
    assert reverse_frontier(reverse, None, "orders", 0, 21) == ReverseFrontier(31, 0, "offset-syncs")
    assert reverse_frontier(reverse, None, "orders", 0, 20) == ReverseFrontier(11, 16, "offset-syncs")


def test_n3_reverse_syncs_all_after_x_give_the_earliest_synced_record() -> None:
    reverse = store((10, 30), (20, 45))
    assert reverse_frontier(reverse, None, "orders", 0, 30) == ReverseFrontier(10, 0, "earliest-sync")


def test_n4_no_reverse_information_leaves_the_translation() -> None:
    assert reverse_frontier(None, None, "orders", 0, 30) is None
    assert reverse_frontier(store((10, 3)), None, "other", 0, 30) is None
    unread = OffsetSyncStore()
    unread.update(OffsetSync("orders", 0, 10, 3))
    assert reverse_frontier(unread, None, "orders", 0, 30) is None
    go = forward(30, 70, 2)
    assert clamp_group_offset(go, None, None) == (go, None)


def test_exact_copied_ranges_win_over_sparse_syncs() -> None:
    copied = CopiedRanges()
    # B's 0..9 landed at A's 5..14, B's 20..29 at A's 30..39 (B's 10..19 are A's copies, skipped)
    copied.add("orders", 0, [CopiedSegment(0, 5, 10), CopiedSegment(20, 30, 10)])
    sparse = store((0, 5))
    assert reverse_frontier(sparse, copied, "orders", 0, 20) == ReverseFrontier(10, 0, "exact")
    assert reverse_frontier(sparse, copied, "orders", 0, 33) == ReverseFrontier(23, 0, "exact")
    assert reverse_frontier(sparse, copied, "orders", 0, 4) == ReverseFrontier(0, 0, "earliest-sync")  # before


def test_n1_n2_the_clamp_lowers_only_and_adds_its_bound_to_the_rereads() -> None:
    reverse = store((10, 3), (30, 20))
    lowered, frontier = clamp_group_offset(forward(25, 40, 2), reverse, None)
    assert frontier == ReverseFrontier(31, 4, "offset-syncs")
    assert lowered.checkpoint is not None and lowered.checkpoint.downstream_offset == 31
    assert lowered.rereads == 2 + 9 + 4
    kept, _ = clamp_group_offset(forward(25, 28, 2), reverse, None)  # D below the frontier: D stays
    assert kept.checkpoint is not None and kept.checkpoint.downstream_offset == 28
    assert kept.rereads == 2 + 3 + 4  # B's own 28..30 were consumed on A: read again
    untranslatable = GroupOffset("g", "orders", 0, 5, None, -1)
    assert clamp_group_offset(untranslatable, reverse, None) == (untranslatable, None)


def test_n3_nothing_of_the_target_had_reached_the_source_adds_no_rereads_above_d() -> None:
    lowered, _ = clamp_group_offset(forward(10, 40, 1), store((35, 12)), None)
    assert lowered.checkpoint is not None and (lowered.checkpoint.downstream_offset, lowered.rereads) == (35, 6)
    kept, _ = clamp_group_offset(forward(10, 30, 1), store((35, 12)), None)
    assert kept.checkpoint is not None and (kept.checkpoint.downstream_offset, kept.rereads) == (30, 1)


# --------------------------------------------------------------------------- a simulated active/active pair


@dataclass
class Pair:
    """Two logs of one partition: each record is (origin, id); flows copy the other side's own records in order."""

    a: list[tuple[str, int]] = field(default_factory=list)
    b: list[tuple[str, int]] = field(default_factory=list)
    ab: list[tuple[int, int]] = field(default_factory=list)  # A->B copies: (offset on A, offset on B)
    ba: list[tuple[int, int]] = field(default_factory=list)
    next_id: int = 0

    def produce(self, log: list[tuple[str, int]], origin: str) -> None:
        log.append((origin, self.next_id))
        self.next_id += 1

    def copy(
        self, src: list[tuple[str, int]], dst: list[tuple[str, int]], origin: str, done: list[tuple[int, int]]
    ) -> None:
        start = done[-1][0] + 1 if done else 0
        for off in range(start, len(src)):
            if src[off][0] == origin:
                dst.append(src[off])
                done.append((off, len(dst) - 1))
                return


def simulate(seed: int, steps: int = 400) -> Pair:
    rng = random.Random(seed)
    pair = Pair()
    lag_ba = rng.choice([0.1, 0.3, 0.6])  # how often B->A gets a turn: it lags behind
    for _ in range(steps):
        r = rng.random()
        if r < 0.3:
            pair.produce(pair.a, "A")
        elif r < 0.6:
            pair.produce(pair.b, "B")
        elif r < 0.85:
            pair.copy(pair.a, pair.b, "A", pair.ab)
        elif rng.random() < lag_ba * 4:
            pair.copy(pair.b, pair.a, "B", pair.ba)
    return pair


def sampled(copies: list[tuple[int, int]], rng: random.Random, every: float) -> OffsetSyncStore:
    s = OffsetSyncStore()
    for i, (up, down) in enumerate(copies):
        if i == 0 or rng.random() < every:  # MM2 always syncs a task's first record
            s.update(OffsetSync("orders", 0, up, down))
    s.mark_initialized()
    return s


@pytest.mark.parametrize("seed", range(40))
def test_n1_n2_n5_no_skip_and_bounded_rereads_in_a_simulated_active_active_pair(seed: int) -> None:
    rng = random.Random(seed)
    pair = simulate(seed)
    every = rng.choice([1.0, 0.2, 0.05])
    fwd, rev = sampled(pair.ab, rng, every), sampled(pair.ba, rng, every)
    exact = CopiedRanges()
    if seed % 3 == 0:
        exact.add("orders", 0, [CopiedSegment(up, down, 1) for up, down in pair.ba])
    previous = -1
    for x in range(len(pair.a) + 1):
        go = translate_group_offset(IDENTITY, "A", "B", "g", "orders", 0, x, syncs=fwd)
        if go.checkpoint is None:
            continue
        clamped, frontier = clamp_group_offset(go, rev, exact if seed % 3 == 0 else None)
        assert clamped.checkpoint is not None
        position = clamped.checkpoint.downstream_offset
        assert position <= go.checkpoint.downstream_offset  # N1: never past MM2's answer
        consumed = set(pair.a[:x])
        if frontier is not None:
            skipped = [r for r in pair.b[:position] if r not in consumed]
            assert not skipped, f"x={x}: B records below {position} never consumed: {skipped}"
            reread = sum(1 for r in pair.b[position:] if r in consumed)
            assert reread <= clamped.rereads, f"x={x}: {reread} re-reads above the bound {clamped.rereads}"
            assert position >= previous  # N5
            previous = position
        else:  # N4: B->A copied nothing yet; only B's own records can be below D unconsumed
            assert all(r[0] == "B" for r in pair.b[:position] if r not in consumed)


def test_without_the_clamp_a_lagging_reverse_flow_makes_mm2s_translation_skip() -> None:
    """The reason for the clamp: MM2's rule alone lands past B's own records that had not reached A."""
    skips = 0
    for seed in range(40):
        pair = simulate(seed)
        fwd = sampled(pair.ab, random.Random(seed), 1.0)
        for x in range(len(pair.a) + 1):
            go = translate_group_offset(IDENTITY, "A", "B", "g", "orders", 0, x, syncs=fwd)
            if go.checkpoint is not None:
                consumed = set(pair.a[:x])
                skips += sum(1 for r in pair.b[: go.checkpoint.downstream_offset] if r not in consumed)
    assert skips > 0


# --------------------------------------------------------------------------- through the emitter (fakes)

ACTIVE_ACTIVE = (
    "B->A.enabled = true\n"
    "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
    "provenance.header.enable = true\n"
)


def put_sync(cluster: FakeCluster, topic: str, s: OffsetSync) -> None:
    cluster.create_topic(topic, 1)
    cluster.append(topic, s.key(), s.value())


def test_the_emitter_clamps_identically_named_checkpoints_with_the_reverse_flows_syncs() -> None:
    cfg, a, b, clients = two_clusters(ACTIVE_ACTIVE)
    a.create_topic("orders", 1)
    put_sync(a, "mm2-offset-syncs.B.internal", OffsetSync("orders", 0, 40, 90))  # A->B: A's 40 at B's 90
    put_sync(b, "mm2-offset-syncs.A.internal", OffsetSync("orders", 0, 60, 30))  # B->A: B's 60 at A's 30
    a.commit("app", {("orders", 0): 45}, metadata="m")
    contexts = ReplicationContext(cfg, clients)
    ctx = contexts.flow("A", "B")
    e = CheckpointEmitter(ctx, reverse=contexts.reverse(ctx), clock_ms=lambda: 1_000)
    e.start()
    [cp] = e.emit()
    assert cp == Checkpoint("app", "orders", 0, 45, 61, "m")  # MM2 alone: 91, past B's own 61..
    assert e.checkpoint_rereads[("app", "orders", 0)] == 4 + 30 + 14
    assert e.translator.shares_name("orders")
    e.close()


def test_a_drill_matches_a_copy_to_its_original_whatever_the_provenance_header() -> None:
    class Message:
        def __init__(self, headers: list[tuple[str, bytes | None]]) -> None:
            self._headers = headers

        def key(self) -> bytes:
            return b"k"

        def value(self) -> bytes:
            return b"v"

        def timestamp(self) -> tuple[int, int]:
            return (1, 1_000)

        def headers(self) -> list[tuple[str, bytes | None]]:
            return self._headers

    original = Message([("trace", b"1")])
    copy = Message([("trace", b"1"), (PROVENANCE_HEADER, b"\x01" * 38)])
    assert fingerprint(original) == fingerprint(copy)
    assert fingerprint(original) != fingerprint(Message([("trace", b"2")]))


def test_the_commit_follower_clamps_with_the_reverse_flows_exact_copies() -> None:
    """B's own 0..9 reached A at 50..59; A's 0..49 reached B at 10..59: a group at A's 50 resumes at B's 0."""
    cfg, a, b, clients = two_clusters(ACTIVE_ACTIVE)
    a.create_topic("orders", 1)
    b.create_topic("orders", 1)
    put_sync(a, "mm2-offset-syncs.B.internal", OffsetSync("orders", 0, 0, 10))
    b.create_topic("mm2-offset-syncs.A.internal", 1)
    copied, reverse_copied = CopiedRanges(), CopiedRanges()
    copied.add("orders", 0, [CopiedSegment(0, 10, 50)])
    reverse_copied.add("orders", 0, [CopiedSegment(0, 50, 10)])
    contexts = ReplicationContext(cfg, clients)
    ctx = contexts.flow("A", "B")
    e = CheckpointEmitter(
        ctx, reverse=contexts.reverse(ctx), copied=copied, reverse_copied=reverse_copied, clock_ms=lambda: 2_000
    )
    e.start()
    f = CommitFollower(e, copied_to=lambda t, p: 60, clock_ms=lambda: 2_000)
    f.source = FakeTail(("app", "orders", 0, Committed(50, "m", 1_000)))  # type: ignore[assignment]
    [cp] = f.step()
    assert cp == Checkpoint("app", "orders", 0, 50, 0, "m")  # MM2's rule alone: 60, past B's own 0..9
    # N2's bound counts the positions 0..59: A's 50 copies are read again, B's own 0..9 for the first time
    assert e.checkpoint_rereads[("app", "orders", 0)] == 60
    f.close()
    e.close()
