"""Following the source's commits (``commit_follower``, O1-O2; ``followed_groups``), against in-memory clusters."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fakes import FakeClients, FakeTail, two_clusters
from mirrorspark.client.context import ReplicationContext
from mirrorspark.config.model import MirrorConfig
from mirrorspark.core.followed_groups import Committed, FollowedGroups
from mirrorspark.mm2.consumer_offsets import GroupMetadata, OffsetCommit
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.mm2.records import Checkpoint, OffsetSync
from mirrorspark.mm2.translation import CopiedRanges
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter
from mirrorspark.replication.connector.commit_follower import CommitFollower

pytestmark = pytest.mark.unit

CHECKPOINTS = "A.checkpoints.internal"


def follower(
    cfg: MirrorConfig, clients: FakeClients, position: dict[tuple[str, int], int]
) -> tuple[CommitFollower, FakeTail]:
    a = clients.clusters["a:9092"]
    a.create_topic("orders", 1)
    a.create_topic("mm2-offset-syncs.B.internal", 1)
    a.append("mm2-offset-syncs.B.internal", *_sync(OffsetSync("orders", 0, 0, 0)))
    b = clients.clusters["b:9092"]
    b.create_topic("A.orders", 1)
    b.fill("A.orders", 0, 200)
    copied = CopiedRanges()
    copied.add("orders", 0, [CopiedSegment(0, 0, 200)])
    contexts = ReplicationContext(cfg, clients)
    ctx = contexts.flow("A", "B")
    e = CheckpointEmitter(ctx, reverse=contexts.reverse(ctx), copied=copied, clock_ms=lambda: 2_000)
    e.start()
    f = CommitFollower(e, copied_to=lambda t, p: position.get((t, p)), clock_ms=lambda: 2_000)
    tail = FakeTail()
    f.source = tail  # type: ignore[assignment]
    return f, tail


def _sync(s: OffsetSync) -> tuple[bytes, bytes]:
    return s.key(), s.value()


def written(clients: FakeClients) -> list[Checkpoint]:
    return [Checkpoint.decode(r.key, r.value) for r in clients.clusters["b:9092"].records(CHECKPOINTS)]


def test_o1_a_commit_waits_until_the_copy_has_passed_it() -> None:
    cfg, _, _, clients = two_clusters()
    position = {("orders", 0): 40}
    f, tail = follower(cfg, clients, position)
    tail.commit("app", "orders", 0, 50, "m")
    assert f.step() == []  # copied to 40 only: a translation now would be short of the commit
    assert f.figures.waiting == 1
    position[("orders", 0)] = 50
    assert f.step() == [Checkpoint("app", "A.orders", 0, 50, 50, "m")]
    assert written(clients) == [Checkpoint("app", "A.orders", 0, 50, 50, "m")]
    assert f.figures.waiting == 0 and f.figures.latencies_ms[-1] == 1_000
    assert f.step() == []  # nothing new


def test_o2_one_checkpoint_per_group_partition_per_tick_the_newest() -> None:
    cfg, _, _, clients = two_clusters()
    f, tail = follower(cfg, clients, {("orders", 0): 200})
    for offset in (10, 20, 30):
        tail.commit("app", "orders", 0, offset)
    tail.commit("other", "orders", 0, 15)
    assert sorted((cp.consumer_group_id, cp.upstream_offset) for cp in f.step()) == [("app", 30), ("other", 15)]
    assert len(written(clients)) == 2
    assert f.figures.commits == 4 and f.figures.checkpoints == 2


def test_groups_and_topics_outside_the_lists_are_not_followed() -> None:
    cfg, _, _, clients = two_clusters("A->B.groups = app.*\nA->B.topics = orders\n")
    f, tail = follower(cfg, clients, {("orders", 0): 200, ("other", 0): 200})
    tail.commit("batch", "orders", 0, 10)
    tail.commit("app-1", "other", 0, 10)
    tail.commit("app-1", "orders", 0, 10)
    assert [cp.consumer_group_id for cp in f.step()] == ["app-1"]


def test_the_cycles_take_the_followed_commits_once_read() -> None:
    cfg, _, _, clients = two_clusters()
    f, _tail = follower(cfg, clients, {("orders", 0): 200})
    assert f.emitter.followed is None
    f.step()
    assert f.emitter.followed is not None


def test_followed_groups_keep_the_newest_commit_and_members_and_honour_tombstones() -> None:
    groups = FollowedGroups()
    assert groups.apply(OffsetCommit("g", "t", 0, 5, "m\x00", 100, -1)) == Committed(5, "m", 100)  # NUL cut
    assert groups.apply(OffsetCommit("g", "t", 1, 7, "", 101, -1)) is not None
    assert groups.committed("g") == {("t", 0): Committed(5, "m", 100), ("t", 1): Committed(7, "", 101)}
    assert groups.apply(OffsetCommit("g", "t", 0, None, "", -1, -1)) is None  # deleted
    assert groups.committed("g") == {("t", 1): Committed(7, "", 101)}
    assert groups.members("g") is None
    groups.apply(GroupMetadata("g", "consumer", 3, ("m-1",)))
    assert groups.members("g") == ("m-1",)
    groups.apply(GroupMetadata("g", None, -1, ()))  # the group was deleted
    assert groups.members("g") is None
    groups.apply(OffsetCommit("g", "t", 1, None, "", -1, -1))
    assert groups.groups() == [] and groups.committed("g") == {}


def test_o2_a_long_step_is_followed_by_as_long_a_rest() -> None:
    cfg, _, _, clients = two_clusters()
    f, tail = follower(cfg, clients, {("orders", 0): 200})
    now = [100.0]
    f._monotonic = lambda: now[0]  # type: ignore[method-assign]
    read = tail.read

    def slow_read(on_commit: Callable[[str, str, int, Committed], None] | None = None) -> int:
        now[0] += 2.0  # this step takes 2 s
        return read(on_commit)

    tail.read = slow_read  # type: ignore[method-assign]
    tail.commit("app", "orders", 0, 10)
    assert len(f.step()) == 1  # ends at 102 s: rests until about 104 s
    tail.commit("app", "orders", 0, 20)
    now[0] = 103.0
    assert f.step() == [] and tail.pending  # resting: the commit is not even read yet
    now[0] = 104.0
    assert [cp.upstream_offset for cp in f.step()] == [20]
