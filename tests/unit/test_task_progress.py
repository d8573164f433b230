"""The progress channel's record layout and the task channel's commands (no broker)."""

from __future__ import annotations

import json
import time

import pytest

from mirrorspark.core.progress_records import (
    SEGMENTS_KEPT,
    PartitionReport,
    decode_report,
    encode_report,
    newest_segments,
)
from mirrorspark.errors import CorruptRecordError
from mirrorspark.mm2.offset_syncs import CopiedSegment
from mirrorspark.replication.task.grant_client import GrantClient
from mirrorspark.replication.worker.grant_server import GrantServer
from polling import assert_eventually

pytestmark = pytest.mark.unit


def report(**kw: object) -> PartitionReport:
    base: dict[str, object] = {
        "flow": "A->B",
        "topic": "t",
        "partition": 2,
        "task": 1,
        "generation": 3,
        "next_offset": 100,
        "records": 10,
        "value_bytes": 1000,
        "key_bytes": 20,
        "latency_ms_sum": 50,
        "latency_ms_max": 9,
        "latency_samples": 3,
        "segments": (CopiedSegment(80, 7, 10), CopiedSegment(91, 17, 9)),
        "at": 1_700_000_000_000,
    }
    base.update(kw)
    return PartitionReport(**base)  # type: ignore[arg-type]


def test_a_report_round_trips_in_the_documented_layout() -> None:
    r = report()
    key, value = encode_report(r)
    assert json.loads(key) == {"flow": "A->B", "topic": "t", "partition": 2}
    assert json.loads(value)["segments"] == [[80, 7, 10], [91, 17, 9]]
    assert decode_report(key, value) == r


@pytest.mark.parametrize(
    "value",
    [
        b"{}",
        b'{"task":1}',
        b"[1,2]",
        b"not json",
    ],
)
def test_a_foreign_value_is_a_corrupt_record(value: bytes) -> None:
    key, _ = encode_report(report())
    with pytest.raises(CorruptRecordError):
        decode_report(key, value)


def test_negative_offsets_and_empty_segments_are_refused() -> None:
    key, value = encode_report(report())
    doc = json.loads(value)
    for field, bad in (("next_offset", -1), ("records", True), ("segments", [[1, 2, 0]]), ("segments", [[1, 2]])):
        with pytest.raises(CorruptRecordError):
            decode_report(key, json.dumps({**doc, field: bad}).encode())


def test_newest_segments_merge_a_continuing_run_and_keep_the_newest() -> None:
    kept = (CopiedSegment(0, 0, 10),)
    assert newest_segments(kept, [CopiedSegment(10, 10, 5)]) == (CopiedSegment(0, 0, 15),)
    assert newest_segments(kept, [CopiedSegment(11, 10, 5)]) == (CopiedSegment(0, 0, 10), CopiedSegment(11, 10, 5))
    many = [CopiedSegment(i * 2, i, 1) for i in range(SEGMENTS_KEPT + 10)]
    out = newest_segments((), many)
    assert len(out) == SEGMENTS_KEPT and out[-1] == many[-1]


def test_the_grant_link_carries_grants_stop_and_abort() -> None:
    grants = GrantServer()
    try:
        client = GrantClient(grants.address, {"flow": "A->B", "task": 0, "generation": 1})
        assert client.check() == "open" and not client.may_commit()  # no grant yet
        grants.grant("A->B", 1, time.monotonic() + 5.0)
        assert_eventually(client.may_commit, timeout_s=5, message="no grant arrived")
        grants.grant("A->B", 2, time.monotonic() + 5.0)  # another generation's grant is not this task's
        grants.stop("A->B", 1)
        assert_eventually(lambda: client.check() == "stop", timeout_s=5)
        assert client.may_commit()  # a stopping task still commits what was acknowledged
        grants.abort("A->B", 1)
        assert_eventually(lambda: client.check() == "abort", timeout_s=5)
        assert not client.may_commit()
        client.close()
    finally:
        grants.close()


def test_a_late_task_of_an_older_generation_never_gets_a_grant() -> None:
    """engine-audit F8: a copy task whose hello arrives after its flow moved to a newer generation is refused.

    Before, it got its generation's last grant (kept until an abort): it could commit stale positions, and
    in exactly-once mode its ``init_transactions`` fenced the current task with the same index.
    """
    grants = GrantServer()
    try:
        grants.grant("A->B", 1, time.monotonic() + 5.0)
        grants.stop("A->B", 1)  # generation 1 stopped (its tasks commit and end) ...
        grants.grant("A->B", 2, time.monotonic() + 5.0)  # ... and generation 2 started
        late = GrantClient(grants.address, {"flow": "A->B", "task": 0, "generation": 1})
        assert_eventually(lambda: late.check() in ("abort", "closed"), timeout_s=5, message="the late task stays open")
        assert not late.may_commit()
        current = GrantClient(grants.address, {"flow": "A->B", "task": 0, "generation": 2})
        assert_eventually(current.may_commit, timeout_s=5, message="the current generation got no grant")
        grants.grant(
            "A->B", 1, time.monotonic() + 5.0
        )  # a renewal of the old generation (a race with the grant thread): ignored
        assert late.check() in ("abort", "closed") and current.check() == "open"
        late.close()
        current.close()
    finally:
        grants.close()


def test_a_connection_with_a_wrong_token_gets_nothing_and_a_closed_grant_link_ends_the_task() -> None:
    grants = GrantServer()
    host, port, _ = grants.address
    try:
        intruder = GrantClient((host, port, "wrong"), {"flow": "A->B", "task": 0, "generation": 1})
        assert_eventually(lambda: intruder.check() == "closed", timeout_s=5, message="a wrong token was accepted")
        client = GrantClient(grants.address, {"flow": "A->B", "task": 0, "generation": 1})
        grants.close()
        assert_eventually(lambda: client.check() == "closed", timeout_s=5)
    finally:
        grants.close()
