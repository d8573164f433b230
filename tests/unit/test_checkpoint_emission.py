"""Checkpoint emission and group offset sync rules (MM2 ``MirrorCheckpointTask``), against in-memory clusters."""

from __future__ import annotations

import pytest

from fakes import FakeClients, FakeCluster, FakeGroup, two_clusters
from mirrorspark.client.context import ReplicationContext
from mirrorspark.client.translator import OffsetTranslator
from mirrorspark.config.model import MirrorConfig
from mirrorspark.mm2.records import Checkpoint, OffsetSync
from mirrorspark.replication.connector.checkpoint_emitter import CheckpointEmitter

pytestmark = pytest.mark.unit

FORWARD_SYNCS = "mm2-offset-syncs.B.internal"  # A->B's offset syncs, on A (offset-syncs.topic.location=source)
REVERSE_SYNCS = "mm2-offset-syncs.A.internal"  # B->A's, on B
CHECKPOINTS = "A.checkpoints.internal"  # on B


def sync(cluster: FakeCluster, topic: str, s: OffsetSync) -> None:
    cluster.create_topic(topic, 1)
    cluster.append(topic, s.key(), s.value())


def emitter(cfg: MirrorConfig, clients: FakeClients, *, now_ms: int = 1_000) -> CheckpointEmitter:
    contexts = ReplicationContext(cfg, clients)
    ctx = contexts.flow("A", "B")
    e = CheckpointEmitter(ctx, reverse=contexts.reverse(ctx), clock_ms=lambda: now_ms)
    e.start()
    return e


def written(b: FakeCluster) -> list[Checkpoint]:
    return [Checkpoint.decode(r.key, r.value) for r in b.records(CHECKPOINTS)]


def test_a_checkpoint_is_written_only_when_more_recent() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    sync(a, FORWARD_SYNCS, OffsetSync("orders", 0, 10, 110))
    a.commit("app", {("orders", 0): 10}, metadata="m")
    e = emitter(cfg, clients)
    [cp] = e.emit()
    assert cp == Checkpoint("app", "A.orders", 0, 10, 110, "m")
    assert written(b) == [cp]
    assert e.emit() == []  # nothing new: nothing written
    # the group moves on: MM2's +1 rule translates conservatively, the downstream offset grows
    a.commit("app", {("orders", 0): 15})
    [later] = e.emit()
    assert (later.upstream_offset, later.downstream_offset) == (15, 111)
    # a sync for the new position: an exact, larger downstream offset is more recent
    sync(a, FORWARD_SYNCS, OffsetSync("orders", 0, 15, 120))
    [exact] = e.emit()
    assert exact.downstream_offset == 120
    assert len(written(b)) == 3


def test_an_upstream_rewind_is_written_even_if_the_downstream_offset_goes_down() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    sync(a, FORWARD_SYNCS, OffsetSync("orders", 0, 5, 105))
    sync(a, FORWARD_SYNCS, OffsetSync("orders", 0, 20, 120))
    a.commit("app", {("orders", 0): 20})
    e = emitter(cfg, clients)
    assert [cp.downstream_offset for cp in e.emit()] == [120]
    a.commit("app", {("orders", 0): 5})  # the consumer was reset to an earlier offset
    assert [cp.downstream_offset for cp in e.emit()] == [105]
    assert [cp.upstream_offset for cp in written(b)] == [20, 5]


def test_groups_and_topics_outside_the_lists_get_no_checkpoints() -> None:
    cfg, a, _, clients = two_clusters("A->B.groups = app.*\nA->B.topics = orders\n")
    for t in ("orders", "other"):
        a.create_topic(t, 1)
        sync(a, FORWARD_SYNCS, OffsetSync(t, 0, 1, 1))
    a.commit("app-1", {("orders", 0): 1, ("other", 0): 1})
    a.commit("batch", {("orders", 0): 1})
    a.commit("console-consumer-1", {("orders", 0): 1})
    e = emitter(cfg, clients)
    assert [(cp.consumer_group_id, cp.topic) for cp in e.emit()] == [("app-1", "A.orders")]


def test_untranslatable_offsets_get_no_checkpoint() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    sync(a, FORWARD_SYNCS, OffsetSync("orders", 0, 50, 150))
    a.commit("app", {("orders", 0): 10})  # before every sync: MM2 cannot translate it
    e = emitter(cfg, clients)
    assert e.emit() == []
    assert written(b) == []


def test_failback_topics_are_renamed_and_translated_through_the_reverse_flow() -> None:
    """A group on A reading ``B.orders`` (copied from B by B->A) is checkpointed as ``orders`` on B."""
    cfg, a, b, clients = two_clusters("B->A.enabled = true\n")
    a.create_topic("B.orders", 1)
    # B->A copied B's orders@40 to A's B.orders@7
    sync(b, REVERSE_SYNCS, OffsetSync("orders", 0, 40, 7))
    a.commit("app", {("B.orders", 0): 7})
    e = emitter(cfg, clients)
    [cp] = e.emit()
    assert (cp.consumer_group_id, cp.topic, cp.partition) == ("app", "orders", 0)
    assert (cp.upstream_offset, cp.downstream_offset) == (7, 40)


def test_loaded_checkpoints_are_not_written_again() -> None:
    cfg, a, b, clients = two_clusters()
    a.create_topic("orders", 1)
    sync(a, FORWARD_SYNCS, OffsetSync("orders", 0, 10, 110))
    a.commit("app", {("orders", 0): 10})
    b.create_topic(CHECKPOINTS, 1)
    old = Checkpoint("app", "A.orders", 0, 10, 110, "")
    b.append(CHECKPOINTS, old.key(), old.value())
    e = emitter(cfg, clients)  # a restart: the checkpoints topic is read first
    assert e.store.get("app", "A.orders", 0) == old
    assert e.emit() == []


# --------------------------------------------------------------------------- group offset sync


def with_checkpoints(
    cfg: MirrorConfig, clients: FakeClients, a: FakeCluster, offsets: dict[str, int]
) -> CheckpointEmitter:
    a.create_topic("orders", 1)
    b = clients.clusters["b:9092"]
    b.create_topic("A.orders", 1)
    b.fill("A.orders", 0, 200)  # the copies the checkpoints point into
    for up in sorted(set(offsets.values())):
        sync(a, FORWARD_SYNCS, OffsetSync("orders", 0, up, up + 100))
    for group, up in offsets.items():
        a.commit(group, {("orders", 0): up})
    e = emitter(cfg, clients)
    e.emit()
    return e


def test_group_offsets_are_synced_to_idle_groups_forward_only() -> None:
    cfg, a, b, clients = two_clusters("sync.group.offsets.enabled = true\n")
    e = with_checkpoints(cfg, clients, a, {"new": 10, "behind": 10, "ahead": 10})
    b.create_topic("A.orders", 1)
    b.commit("behind", {("A.orders", 0): 50})  # behind the checkpoint (110): moved forward
    b.commit("ahead", {("A.orders", 0): 500})  # ahead of it: never moved back
    assert e.sync_group_offsets() == {"behind": 1, "new": 1}
    assert b.groups["new"].offsets == {("A.orders", 0): (110, "")}
    assert b.groups["behind"].offsets == {("A.orders", 0): (110, "")}
    assert b.groups["ahead"].offsets == {("A.orders", 0): (500, "")}
    assert e.sync_group_offsets() == {}  # in step now: nothing to write


def test_groups_with_active_members_are_not_synced() -> None:
    cfg, a, b, clients = two_clusters("sync.group.offsets.enabled = true\n")
    e = with_checkpoints(cfg, clients, a, {"busy": 10, "idle": 10})
    b.groups["busy"] = FakeGroup(offsets={("A.orders", 0): (5, "")}, members=2)
    assert e.sync_group_offsets() == {"idle": 1}
    assert b.groups["busy"].offsets == {("A.orders", 0): (5, "")}
    b.groups["busy"].members = 0  # the consumers stopped
    assert e.sync_group_offsets() == {"busy": 1}
    assert b.groups["busy"].offsets == {("A.orders", 0): (110, "")}


def test_a_checkpoint_past_the_end_of_the_target_partition_is_never_synced(caplog: pytest.LogCaptureFixture) -> None:
    cfg, a, b, clients = two_clusters("sync.group.offsets.enabled = true\n")
    e = with_checkpoints(cfg, clients, a, {"app": 10})
    bogus = Checkpoint("other", "A.orders", 0, 7, 9_000_000, "")  # foreign or corrupt: far past the end (200)
    e.store.update(bogus)
    assert e.sync_group_offsets() == {"app": 1}
    assert "other" not in b.groups
    assert e.invalid_checkpoints == 1
    assert "A.orders-0@9000000" in caplog.text and "ends at 200" in caplog.text


def test_a_cancelled_read_of_the_offset_syncs_publishes_nothing() -> None:
    """A closing emitter's background read stops at its next poll and leaves no half-read store."""
    cfg, a, _, clients = two_clusters()
    for up in range(0, 100, 10):
        sync(a, FORWARD_SYNCS, OffsetSync("orders", 0, up, up + 100))
    contexts = ReplicationContext(cfg, clients)
    ctx = contexts.flow("A", "B")
    translator = OffsetTranslator(ctx, reverse=contexts.reverse(ctx))
    assert translator.load_syncs(cancelled=lambda: True) is False
    assert translator.syncs is None and translator.reverse_syncs is None
    assert translator.load_syncs() is True
    assert translator.translate("g", "orders", 0, 55).checkpoint is not None
