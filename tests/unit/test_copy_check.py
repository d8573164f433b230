"""The suite's one copy checker (``tests/copy_check.py``): every kind of difference named, per partition."""

from __future__ import annotations

from typing import Any

import pytest

from copy_check import assert_copy, compare_copy, copy_differences

pytestmark = pytest.mark.unit


def record(partition: int, offset: int, n: int) -> dict[str, Any]:
    """A record as ``consume_all`` reads it; ``n`` makes its content unique (headers as a list, as read)."""
    return {
        "key": f"k-{partition}-{n}".encode(),
        "value": f"v-{partition}-{n}".encode(),
        "headers": [("seq", n.to_bytes(4, "big")), ("p", bytes([partition]))],
        "timestamp_ms": 1_000 + n,
        "partition": partition,
        "offset": offset,
    }


def copy_of(partition: int, source_ns: list[int]) -> list[dict[str, Any]]:
    """A target partition holding the source records ``source_ns`` in that order, at offsets 0, 1, ..."""
    return [record(partition, offset, n) for offset, n in enumerate(source_ns)]


SOURCE = [record(p, o, o) for p in range(4) for o in range(6)]


def test_a_swap_a_missing_record_and_a_duplicate_are_each_named_per_partition() -> None:
    # Before: test_standalone.copy_differences keyed a dict by tuples holding the headers' list
    # and raised TypeError (unhashable type: 'list') on any difference, hiding the failure.
    target = [
        *copy_of(0, [0, 1, 3, 2, 4, 5]),  # 2 and 3 swapped
        *copy_of(1, [0, 1, 2, 4, 5]),  # 3 missing
        *copy_of(2, [0, 1, 2, 3, 3, 4, 5]),  # 3 twice
        *copy_of(3, [0, 1, 2, 3, 4, 5]),  # exact
    ]
    text = copy_differences(SOURCE, target)
    lines = text.splitlines()
    assert [line.split(":")[0] for line in lines] == ["partition 0", "partition 1", "partition 2"]
    assert "out of order 1 (first: target offset 3 holds source offset 2 after source offset 3)" in lines[0]
    assert "missing 0" in lines[0] and "seen twice 0" in lines[0]
    assert "missing 1 (first missing source offset: 3)" in lines[1]
    assert "out of order 0" in lines[1] and "seen twice 0" in lines[1]
    assert "seen twice 1 (source offsets [3])" in lines[2]
    assert "missing 0" in lines[2] and "out of order 0" in lines[2]

    diffs = compare_copy(SOURCE, target)
    assert diffs[3].exact and not diffs[0].exact
    assert diffs[0].runs() == [(0, 1), (3, 3), (2, 2), (4, 5)]
    assert diffs[2].pairs(5) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 3)]


def test_a_prefix_copied_then_everything_again_shows_as_two_runs() -> None:
    # The shape hypothesis H1 of the standalone flake predicts: a head, then a restart from 0
    target = copy_of(0, [4, 5, 0, 1, 2, 3, 4, 5])
    [line] = copy_differences([r for r in SOURCE if r["partition"] == 0], target).splitlines()
    assert "runs of source offsets in target order [(4, 5), (0, 5)]" in line
    assert "out of order 4 (first: target offset 2 holds source offset 0 after source offset 5)" in line
    assert "seen twice 2 (source offsets [4, 5])" in line


def test_records_the_source_never_held_and_an_empty_target_are_named() -> None:
    stranger = {**record(0, 6, 99), "offset": 6}
    text = copy_differences(SOURCE, [*copy_of(0, list(range(6))), stranger])
    assert "partition 0:" in text and "not from the source 1 (target offsets [6])" in text
    assert "partition 1: source 6 records (offsets 0..5), target 0 records" in text
    assert "missing 6 (first missing source offset: 0)" in text


def test_duplicates_may_be_allowed_but_never_out_of_order_first_copies() -> None:
    source = [r for r in SOURCE if r["partition"] == 0]
    assert_copy(source, copy_of(0, [0, 1, 2, 3, 2, 3, 4, 5]), duplicates=True)  # a re-copy after a restart
    with pytest.raises(AssertionError, match="out of order 4"):
        assert_copy(source, copy_of(0, [4, 5, 0, 1, 2, 3, 4, 5]), duplicates=True)


def test_a_list_of_sent_records_without_offsets_is_numbered_by_place() -> None:
    sent = [{k: v for k, v in r.items() if k != "offset"} for r in SOURCE]
    assert copy_differences(sent, SOURCE) == ""
    assert_copy(SOURCE, [{**r, "offset": r["offset"] + 100} for r in SOURCE])  # target offsets may differ
    assert copy_differences(SOURCE, [{"value": b"x", "partition": 0, "offset": 0}], fields=("value",)) != ""
