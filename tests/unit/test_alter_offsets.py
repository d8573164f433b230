"""Planning a flow's source-offset alter/reset (KIP-875) in Connect's layout, with the offset syncs of a new segment."""

from __future__ import annotations

import pytest

from mirrorspark.errors import ConfigError, SourceOffsetsRequestError
from mirrorspark.mm2.alter_offsets import (
    PartitionFacts,
    parse_datetime_ms,
    plan_alter,
    plan_reset,
    running_connect_status,
)
from mirrorspark.mm2.connect_offsets import decode_source_offset
from mirrorspark.mm2.internal_topics import connect_status_topic, connect_worker_group, lease_group
from mirrorspark.mm2.records import OffsetSync

pytestmark = pytest.mark.unit


def facts(
    stored: int | None = 99, *, start: int = 0, end: int = 200, remote_end: int | None = 100, **kw: object
) -> PartitionFacts:
    return PartitionFacts("t", 0, stored, start, end, "A.t", remote_end, **kw)  # type: ignore[arg-type]


def test_alter_writes_connects_key_and_last_copied_offset() -> None:
    (c,) = plan_alter("A", [facts()], {("t", 0): 50})
    assert c.key == b'["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t"}]'
    assert c.value == b'{"offset":49}'
    assert c.stored_offset == 49
    assert decode_source_offset(c.key, c.value) == ("A", "t", 0, 49)
    assert (c.old_position, c.new_position, c.change) == (100, 50, "rewind")


@pytest.mark.parametrize(
    ("stored", "new", "change"), [(99, 150, "skip"), (99, 100, "unchanged"), (None, 10, "set"), (99, 20, "rewind")]
)
def test_change_kinds(stored: int | None, new: int, change: str) -> None:
    (c,) = plan_alter("A", [facts(stored)], {("t", 0): new})
    assert c.change == change


def test_position_zero_is_a_tombstone_and_needs_earliest() -> None:
    (c,) = plan_alter("A", [facts()], {("t", 0): 0})
    assert c.value is None
    assert c.new_position == 0
    with pytest.raises(SourceOffsetsRequestError, match=r"auto\.offset\.reset=latest"):
        plan_alter("A", [facts()], {("t", 0): 0}, auto_offset_reset="latest")


@pytest.mark.parametrize("pos", [-1, 9, 201])
def test_position_outside_the_source_partition_is_refused(pos: int) -> None:
    with pytest.raises(SourceOffsetsRequestError, match=r"outside source partition t-0 \(log start 10, end 200\)") as e:
        plan_alter("A", [facts(start=10)], {("t", 0): pos})
    assert isinstance(e.value, ConfigError)
    assert e.value.exit_code == 2


def test_sync_at_the_first_record_of_the_new_segment() -> None:
    (c,) = plan_alter("A", [facts()], {("t", 0): 50}, first_records={("t", 0): 52})
    assert c.sync == OffsetSync("t", 0, 52, 100)


@pytest.mark.parametrize(
    ("kw", "first", "new", "emit"),
    [
        ({"transformed": True}, 50, 50, True),  # a transform may drop the record
        ({"remote_end": None}, 50, 50, True),  # no remote topic yet
        ({}, None, 200, True),  # no record at or after the position yet
        ({}, 100, 100, True),  # unchanged position
        ({}, 50, 50, False),  # flow emits no offset syncs
    ],
)
def test_no_sync_when_it_could_be_untrue(kw: dict[str, object], first: int | None, new: int, emit: bool) -> None:
    firsts = {} if first is None else {("t", 0): first}
    (c,) = plan_alter("A", [facts(**kw)], {("t", 0): new}, first_records=firsts, emit_offset_syncs=emit)
    assert c.sync is None


def test_reset_writes_tombstones() -> None:
    changes = plan_reset("A", [facts(), facts(None)])
    assert [c.value for c in changes] == [None, None]
    assert [c.change for c in changes] == ["reset", "none"]
    assert all(c.sync is None for c in changes)
    assert decode_source_offset(changes[0].key, None) == ("A", "t", 0, None)


def test_list_position_and_lag() -> None:
    f = facts(99, end=150)
    assert (f.position, f.lag) == (100, 50)
    assert (facts(None).position, facts(None).lag) == (None, None)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-11-25T10:00:00Z", 1795600800000),
        ("2026-11-25T11:00:00+01:00", 1795600800000),
        ("2026-11-25T10:00:00", 1795600800000),
    ],
)
def test_datetime(text: str, ms: int) -> None:
    assert parse_datetime_ms(text) == ms


def test_bad_datetime() -> None:
    with pytest.raises(SourceOffsetsRequestError, match="not an ISO 8601 date-time"):
        parse_datetime_ms("yesterday")


def test_group_names() -> None:
    assert lease_group("A->B") == "mirrorspark-lease-A->B"
    assert connect_worker_group("primary") == "primary-mm2"


@pytest.mark.parametrize(
    ("key", "value", "running"),
    [
        (
            b"status-connector-MirrorSourceConnector",
            b'{"state":"RUNNING","trace":null,"worker_id":"w:8083","generation":1}',
            True,
        ),
        (b"status-task-MirrorSourceConnector-0", b'{"state":"RUNNING","worker_id":"w:8083"}', True),
        (b"status-task-MirrorSourceConnector-0", b'{"state":"UNASSIGNED","worker_id":"w:8083"}', False),
        (b"status-connector-MirrorCheckpointConnector", b'{"state":"RUNNING"}', False),
        (b"status-connector-MirrorSourceConnector", None, False),
        (b"status-connector-MirrorSourceConnector", b"not json", False),
    ],
)
def test_connect_status_running(key: bytes, value: bytes | None, running: bool) -> None:
    assert (running_connect_status(key, value) is not None) is running
    assert connect_status_topic("primary") == "mm2-status.primary.internal"
