"""The verify bench case's units, report and sampling pre-check (bench/verify.py, issue #42)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import cli, verify  # noqa: E402


def test_units_cut_every_partition_into_equal_runs() -> None:
    assert verify.unit_bounds({0: 10, 1: 3, 2: 0}, 2) == [(0, 0, 5), (0, 5, 10), (1, 0, 1), (1, 1, 3)]


def test_the_report_shows_each_part_and_says_why_sampling_was_skipped() -> None:
    v = verify.VerifyResults(
        throughput=[
            {
                "value_bytes": 1024,
                "records": 1000,
                "units": 8,
                "runs": 1,
                "wall_s": 2.0,
                "cpu_s": 4.0,
                "records_per_s": 500,
                "records_per_cpu_s": 250,
                "gb_read": 0.002,
                "cpu_s_per_gb": 2000.0,
            }
        ],
        scaling=[
            {"workers": 1, "units": 8, "records": 1000, "wall_s": 4.0},
            {"workers": 2, "units": 8, "records": 1000, "wall_s": 2.0, "speedup": 2.0},
        ],
        sampling_skipped="keys unknown",
    )
    text = verify.verify_markdown(v)
    assert "| 1024 B | 1,000 | 8 | 2.0 | 4.0 | 500 | 250 | 0.002 | 2000.0 |" in text
    assert verify.result_lines(v) == [
        "verify 1024 B: 250 records/s per core, 2000.0 CPU s/GB read",
        "verify speed-up 2 workers / 1 worker: 2.0 (bound 1.7)",
        "verify sampling skipped: keys unknown",
    ]
    assert verify.verify_json(v)["sampling_skipped"] == "keys unknown"


def test_sampling_is_skipped_only_for_unknown_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    from mirrorspark.config import parse

    def refuse(props: object, **_: object) -> None:
        raise parse.ConfigError("<properties>: 3 unknown keys (fix them)\n  unknown key 'verify.sampling.enable'")

    monkeypatch.setattr(parse, "parse_config", refuse)
    assert "unknown to this build" in verify.sampling_unknown()
    monkeypatch.setattr(parse, "parse_config", lambda props, **_: None)
    assert verify.sampling_unknown() == ""


def test_the_case_is_registered() -> None:
    assert "verify" in cli.CASES and "verify" in cli.OWN_SECTIONS
