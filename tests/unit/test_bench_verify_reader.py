"""The verify-reader benchmark's record digest and its median summary (issue #42)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import verify_reader  # noqa: E402


def test_the_digest_covers_every_field_and_their_boundaries() -> None:
    base = verify_reader.record_digest(b"k", b"v", [("h", b"1")], 5)
    assert len(base) == 16
    assert base == verify_reader.record_digest(b"k", b"v", [("h", b"1")], 5)
    others = {
        verify_reader.record_digest(b"kv", b"", [("h", b"1")], 5),  # the key/value boundary moved
        verify_reader.record_digest(None, b"kv", [("h", b"1")], 5),
        verify_reader.record_digest(b"k", b"v", [("h", None)], 5),
        verify_reader.record_digest(b"k", b"v", [], 5),
        verify_reader.record_digest(b"k", b"v", [("h", b"1")], 6),
        verify_reader.record_digest(b"k", None, [("h", b"1")], 5),
    }
    assert base not in others
    assert len(others) == 6


def test_the_summary_takes_medians_and_refuses_differing_digests() -> None:
    runs = [
        {"records": 100, "wall_s": w, "cpu_s": c, "digests": {"0": "ab"}}
        for w, c in ((1.0, 0.5), (2.0, 1.0), (4.0, 2.0))
    ]
    row = verify_reader.summarize("ck", 100, 1, runs)
    assert (row["wall_s"], row["cpu_s"], row["records_per_s_wall"], row["records_per_cpu_s"]) == (2.0, 1.0, 50, 100)
    assert "| ck | 100 B | 1 | 100 |" in verify_reader.table([row])
    with pytest.raises(RuntimeError, match="digests differ"):
        verify_reader.summarize("ck", 100, 1, [*runs, {**runs[0], "digests": {"0": "cd"}}])
