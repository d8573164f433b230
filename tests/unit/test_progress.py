"""The progress record codec (``mm2-progress.<source>.internal``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirrorspark.mm2.policy import DefaultReplicationPolicy
from mirrorspark.replication.progress import TopicProgress, decode_progress, encode_progress, progress_topic

pytestmark = pytest.mark.unit


def test_layout() -> None:
    key, value = encode_progress("A->B", "t1", TopicProgress(3, 30, 6, 1700000000000))
    assert key == b'{"flow":"A->B","topic":"t1"}'
    assert value == b'{"records":3,"value_bytes":30,"key_bytes":6,"timestamp":1700000000000}'


def test_topic_is_internal_and_never_replicated() -> None:
    policy = DefaultReplicationPolicy()
    assert progress_topic("A") == "mm2-progress.A.internal"
    assert policy.is_internal_topic(progress_topic("A"))


@given(st.text(min_size=1), st.text(min_size=1), st.integers(0, 2**62), st.integers(0, 2**62))
def test_round_trip(flow: str, topic: str, records: int, size: int) -> None:
    p = TopicProgress(records, size, size // 2, 1)
    assert decode_progress(*encode_progress(flow, topic, p)) == (flow, topic, p)


@pytest.mark.parametrize(("key", "value"), [(None, b"{}"), (b"{}", None), (b"not json", b"{}"), (b'{"flow":1}', b"{}")])
def test_foreign_or_broken_records_are_ignored(key: bytes | None, value: bytes | None) -> None:
    assert decode_progress(key, value) is None
