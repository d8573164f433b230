"""Group offset sync never writes an active group (G1-G4 of ``group_offset_sync``), against in-memory clusters."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError
from test_checkpoint_emission import with_checkpoints

from fakes import FakeGroup, two_clusters
from mirrorspark.core.group_sync_counts import GroupSyncCounts

pytestmark = pytest.mark.unit

SYNC = "sync.group.offsets.enabled = true\n"


def test_g1_a_group_with_members_is_counted_active_and_left_alone() -> None:
    cfg, a, b, clients = two_clusters(SYNC)
    e = with_checkpoints(cfg, clients, a, {"busy": 10, "idle": 10})
    b.groups["busy"] = FakeGroup(offsets={("A.orders", 0): (5, "")}, members=2)
    assert e.sync_group_offsets() == {"idle": 1}
    assert e.group_sync.counts == {"busy": GroupSyncCounts(skipped_active=1), "idle": GroupSyncCounts(synced=1)}
    assert b.groups["busy"].offsets == {("A.orders", 0): (5, "")}


def test_g1_a_refusal_at_the_write_is_counted_and_never_retried() -> None:
    """Consumers join between the description and the write: the broker refuses, nothing lands later."""
    cfg, a, b, clients = two_clusters(SYNC)
    e = with_checkpoints(cfg, clients, a, {"app": 10})
    b.groups["app"] = FakeGroup(offsets={("A.orders", 0): (5, "")})
    read = e.group_sync.committed

    def joined_meanwhile(group: str) -> dict[tuple[str, int], tuple[int, str]]:
        got = dict(read(group))
        b.groups[group].members = 1  # a consumer joins right after the offsets were read
        return got

    e.group_sync.committed = joined_meanwhile
    assert e.sync_group_offsets() == {}
    assert e.group_sync.counts["app"] == GroupSyncCounts(skipped_active=1)
    # the consumer consumes past the checkpoint and leaves: the next attempt reads afresh, never rewinds
    b.groups["app"] = FakeGroup(offsets={("A.orders", 0): (150, "")})
    e.group_sync.committed = read
    assert e.sync_group_offsets() == {}
    assert b.groups["app"].offsets == {("A.orders", 0): (150, "")}
    assert e.group_sync.counts["app"] == GroupSyncCounts(skipped_active=1)


def test_g2_a_followed_view_is_read_after_the_descriptions_and_gives_the_offsets() -> None:
    cfg, a, b, clients = two_clusters(SYNC)
    e = with_checkpoints(cfg, clients, a, {"app": 10})
    order: list[str] = []

    class View:
        def read(self) -> int:
            order.append("read")
            return 0

        def committed(self, group: str) -> dict[tuple[str, int], tuple[int, str]]:
            order.append(f"committed {group}")
            return {("A.orders", 0): (120, "")}  # the view says it is ahead of the checkpoint (110)

    admin = e.group_sync._admin()
    describe = admin.describe_groups

    def describing(groups: list[str]) -> dict[str, object]:
        order.append("describe")
        return describe(groups)

    admin.describe_groups = describing  # type: ignore[method-assign]
    e.group_sync.view = View()
    assert e.sync_group_offsets() == {}  # forward only, from the view's offsets
    assert order == ["describe", "read", "committed app"]
    assert "app" not in b.groups or b.groups["app"].offsets == {}


def test_g3_a_group_whose_state_cannot_be_read_is_counted_unknown() -> None:
    cfg, a, b, clients = two_clusters(SYNC)
    e = with_checkpoints(cfg, clients, a, {"app": 10})
    b.describe_errors["app"] = KafkaError.COORDINATOR_LOAD_IN_PROGRESS
    assert e.sync_group_offsets() == {}
    assert e.group_sync.counts["app"] == GroupSyncCounts(skipped_unknown=1)
    assert "app" not in b.groups
    del b.describe_errors["app"]
    assert e.sync_group_offsets() == {"app": 1}
    assert e.group_sync.counts["app"] == GroupSyncCounts(synced=1, skipped_unknown=1)


def test_a_subset_of_groups_is_synced_alone() -> None:
    cfg, a, b, clients = two_clusters(SYNC)
    e = with_checkpoints(cfg, clients, a, {"one": 10, "two": 10})
    assert e.group_sync.sync(["two", "unknown"]) == {"two": 1}
    assert "one" not in b.groups and set(e.group_sync.counts) == {"two"}


def test_with_a_view_every_write_goes_at_once_and_each_refusal_counts_alone() -> None:
    cfg, a, b, clients = two_clusters(SYNC)
    e = with_checkpoints(cfg, clients, a, {"one": 10, "two": 10, "three": 10})

    class View:
        def read(self) -> int:
            return 0

        def committed(self, group: str) -> dict[tuple[str, int], tuple[int, str]]:
            if group == "two":  # a consumer joins "two" after its description
                b.groups["two"] = FakeGroup(members=1)
            return {}

    e.group_sync.view = View()
    assert e.sync_group_offsets() == {"one": 1, "three": 1}
    assert e.group_sync.counts == {
        "one": GroupSyncCounts(synced=1),
        "two": GroupSyncCounts(skipped_active=1),
        "three": GroupSyncCounts(synced=1),
    }
    assert b.groups["two"].offsets == {}
