"""The progress record codec (``mm2-progress.<source>.internal``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.core.lifetime_totals import TopicTotals, decode_totals, encode_totals
from mirrorspark.mm2.internal_topics import TOTALS_PREFIX, mirrorspark_topic
from mirrorspark.mm2.policy import DefaultReplicationPolicy

pytestmark = pytest.mark.unit


def test_layout() -> None:
    key, value = encode_totals("A->B", "t1", TopicTotals(3, 30, 6, 1700000000000))
    assert key == b'{"flow":"A->B","topic":"t1"}'
    assert value == b'{"records":3,"value_bytes":30,"key_bytes":6,"timestamp":1700000000000}'


def test_topic_is_internal_and_never_replicated() -> None:
    policy = DefaultReplicationPolicy()
    assert mirrorspark_topic(TOTALS_PREFIX, None, "A") == "mm2-progress.A.internal"
    assert policy.is_internal_topic(mirrorspark_topic(TOTALS_PREFIX, None, "A"))


@given(st.text(min_size=1), st.text(min_size=1), st.integers(0, 2**62), st.integers(0, 2**62))
def test_round_trip(flow: str, topic: str, records: int, size: int) -> None:
    p = TopicTotals(records, size, size // 2, 1)
    assert decode_totals(*encode_totals(flow, topic, p)) == (flow, topic, p)


@pytest.mark.parametrize(("key", "value"), [(None, b"{}"), (b"{}", None), (b"not json", b"{}"), (b'{"flow":1}', b"{}")])
def test_foreign_or_broken_records_are_ignored(key: bytes | None, value: bytes | None) -> None:
    assert decode_totals(key, value) is None
