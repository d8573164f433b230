"""The service case's API figures (bench/service.py): nearest-rank percentiles per endpoint, errors counted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench.service import ENDPOINTS, api_figures  # noqa: E402


def test_every_request_then_each_endpoint() -> None:
    samples = [(0, float(ms), True) for ms in range(1, 101)] + [(3, 500.0, False), (3, 7.0, True)]
    rows = api_figures(samples, [label for label, _ in ENDPOINTS])
    assert [r.endpoint for r in rows] == ["all", ENDPOINTS[0][0], ENDPOINTS[3][0]]
    everything, first, last = rows
    assert (everything.requests, everything.errors, everything.max_ms) == (102, 1, 500.0)
    assert (first.requests, first.errors) == (100, 0)
    assert (first.p50_ms, first.p99_ms, first.max_ms) == (50.0, 99.0, 100.0)  # nearest rank: the 50th and 99th
    assert (last.requests, last.errors, last.p50_ms, last.max_ms) == (2, 1, 7.0, 500.0)


def test_no_request_gives_zeros() -> None:
    (only,) = api_figures([], ["x"])
    assert (only.endpoint, only.requests, only.errors, only.p50_ms, only.p99_ms, only.max_ms) == ("all", 0, 0, 0, 0, 0)
