"""The wan case of ``make bench`` (#43): the link's window math, the throttle's figures, its lines and CLI wiring."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.unit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: the bench package

from bench import cli  # noqa: E402
from bench.wan import (  # noqa: E402
    WINDOW_BYTES,
    ThrottleResult,
    WanResult,
    bdp_bytes,
    bdp_fetch_keys,
    connection_rate,
    contenders,
    highest_average,
    throttle_accuracy,
    took_effect_s,
    wan_lines,
)


def steady(
    rate: float, seconds: float, *, step: float = 0.5, start: float = 0.0, base: int = 0
) -> list[tuple[float, int]]:
    """Samples of a copy at a constant ``rate`` bytes/s."""
    return [(start + i * step, base + round(rate * i * step)) for i in range(int(seconds / step) + 1)]


def test_one_connection_carries_a_window_per_round_trip() -> None:
    assert connection_rate(WINDOW_BYTES, 100) == pytest.approx(41_943_040)  # 4 MiB / 0.1 s: ~42 MB/s
    assert connection_rate(WINDOW_BYTES, 0) == math.inf


def test_fetches_are_sized_to_the_bandwidth_delay_product() -> None:
    assert bdp_bytes(100) == 16 * 1024 * 1024  # 12.5 MB at 1 Gb/s, rounded up to a power of two
    assert bdp_bytes(0) == 0 and bdp_fetch_keys(0) == {}
    keys = bdp_fetch_keys(100)
    assert keys["source.consumer.max.partition.fetch.bytes"] == str(16 * 1024 * 1024)
    assert keys["source.consumer.fetch.max.bytes"] == "52428800"  # Kafka's default already holds it
    assert keys["source.consumer.receive.buffer.bytes"] == "-1"  # the OS's autotuning
    assert bdp_fetch_keys(1000)["source.consumer.fetch.max.bytes"] == str(128 * 1024 * 1024)


def test_the_contenders_carry_the_link_settings() -> None:
    mm2, ms = contenders(100, tasks_max=2)
    assert mm2.name == "mm2-tuned" and "source.consumer.max.partition.fetch.bytes=16777216" in mm2.description
    assert "replication.link.rtt.ms=100" in ms.description and "replication.catch.up.readers=4" in ms.description


def test_the_highest_average_is_over_the_densest_window() -> None:
    samples = steady(1_000_000, 20) + [(t + 20.0, 20_000_000 + b) for t, b in steady(3_000_000, 10)[1:]]
    assert highest_average(samples, 10) == pytest.approx(3_000_000, rel=0.01)
    assert highest_average(samples[:10], 10) is None  # 4.5 s of samples: no 10 s window
    assert highest_average([], 10) is None


@given(st.floats(1e5, 1e8), st.floats(10, 60))
def test_a_steady_rate_is_its_own_average(rate: float, seconds: float) -> None:
    assert highest_average(steady(rate, seconds), 10) == pytest.approx(rate, rel=1e-3, abs=1)


def test_throttle_accuracy_is_the_highest_average_over_the_limit() -> None:
    assert throttle_accuracy(steady(8_400_000, 30), 8_000_000) == pytest.approx(1.05, rel=1e-3)
    assert throttle_accuracy(steady(1, 30), 0) is None


def test_a_lowered_limit_takes_effect_when_every_later_second_follows() -> None:
    before = steady(8_000_000, 10)
    after = [(t + 10.0, before[-1][1] + b) for t, b in steady(8_000_000, 2)[1:]]  # 2 s more at the old rate
    slow = [(t + 12.0, after[-1][1] + b) for t, b in steady(4_000_000, 6)[1:]]
    samples = before + after + slow
    took = took_effect_s(samples, 10.0, 8_000_000, 4_000_000)
    assert took == pytest.approx(3.0)  # the first 1 s window entirely in the slow part: 12-13 s
    assert took_effect_s(samples[:24], 10.0, 8_000_000, 4_000_000) is None  # ends before it followed
    raised = before + [(t + 10.0, before[-1][1] + b) for t, b in steady(16_000_000, 5)[1:]]
    assert took_effect_s(raised, 10.0, 8_000_000, 16_000_000) == pytest.approx(1.0)


def test_the_throttle_lines_say_why_a_figure_is_missing() -> None:
    ok = ThrottleResult(8_000_000, 4_000_000, steady(8_000_000, 20), changed_at=None, backlog_bytes=10**9)
    assert ok.lines()[0] == "throttle accuracy: 1.00"
    gone = ThrottleResult(8_000_000, 4_000_000, steady(8_000_000, 20), 20.0, "no such command", 10**9)
    assert gone.lines()[1] == "throttle change took effect in: not available (no such command)"
    early = ThrottleResult(8_000_000, 4_000_000, steady(50_000_000, 20), 20.0, backlog_bytes=100_000_000)
    assert early.copied_before_change and "not measured" in early.lines()[1]
    failed = ThrottleResult(8_000_000, 4_000_000, error="ConfigError: bad")
    assert failed.lines() == [
        "throttle accuracy: n/a (ConfigError: bad)",
        "throttle change took effect in: n/a (the throttled flow failed)",
    ]


def test_without_scenarios_every_ratio_is_not_available() -> None:
    lines = wan_lines(WanResult(100))
    assert lines == [
        "wan 12 partitions throughput at 100 ms / 0 ms mirrorspark: n/a (a contender failed or did not run)",
        "wan 12 partitions throughput at 100 ms / 0 ms mm2-tuned: n/a (a contender failed or did not run)",
        "wan catch-up ratio mirrorspark/mm2-tuned: n/a (a contender failed or did not run)",
    ]


def test_the_cli_knows_the_case_and_its_options() -> None:
    assert "wan" in cli.CASES and "wan" in cli.OWN_SECTIONS
    args = cli._parser().parse_args(["--cases", "wan", "--quick", "--rtt-ms", "50", "--wan-runs", "2"])
    assert (args.cases, args.quick, args.rtt_ms, args.wan_runs) == ("wan", True, 50.0, 2)
    assert cli._parser().parse_args([]).rtt_ms == 100
    with pytest.raises(SystemExit, match="unknown case"):
        cli.main(["--cases", "wan,nope"])


def test_a_failed_control_command_is_named_by_its_message_not_its_frame() -> None:
    from bench.wan import _last_words

    boxed = "Usage: x\n╭─ Error ───╮\n│ No such command 'throttle'.   │\n╰───────────╯\n"
    assert _last_words(boxed) == "No such command 'throttle'."
    assert _last_words("") == ""
