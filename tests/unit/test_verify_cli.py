"""``mirrorspark verify``'s options: the window's time, usage errors before anything connects, the human output."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mirrorspark.cli.app import app
from mirrorspark.cli.verify import parse_since, print_verification
from mirrorspark.core.verify.history import VerifyRun
from mirrorspark.core.verify.report import Finding, PartitionCounts, PartitionReport, VerifyReport
from mirrorspark.errors import ConfigError
from mirrorspark.replication.worker.verifier import Verification

pytestmark = pytest.mark.unit

CONFIG = "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\nA->B.enabled = true\n"
NOW = 1_800_000_000_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("30m", NOW - 1_800_000),
        ("2h", NOW - 7_200_000),
        ("1d", NOW - 86_400_000),
        ("PT30M", NOW - 1_800_000),
        ("P1DT1H", NOW - 90_000_000),
        ("2026-11-30T08:00:00Z", int(datetime.datetime(2026, 11, 30, 8, tzinfo=datetime.UTC).timestamp() * 1000)),
        ("2026-11-30T08:00:00", int(datetime.datetime(2026, 11, 30, 8, tzinfo=datetime.UTC).timestamp() * 1000)),
        ("2026-11-30T09:00:00+01:00", int(datetime.datetime(2026, 11, 30, 8, tzinfo=datetime.UTC).timestamp() * 1000)),
    ],
)
def test_since_is_a_time_or_a_duration_ago(text: str, ms: int) -> None:
    assert parse_since(text, now_ms=NOW) == ms


@pytest.mark.parametrize("text", ["yesterday", "P", "30", "-5m", "PT"])
def test_another_since_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="--since"):
        parse_since(text, now_ms=NOW)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--since", "1h", "--last", "5"], "--since and --last"),
        (["--topics", "("], "CONFIG_BAD_REGEX"),
        (["--since", "soon"], "--since 'soon'"),
        (["--last", "0"], "--last"),
    ],
)
def test_usage_errors_exit_2_before_anything_connects(tmp_path: Path, args: list[str], says: str) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    r = CliRunner().invoke(app, ["verify", str(props), "--source", "A", "--target", "B", *args])
    assert r.exit_code == 2, r.output
    assert says in " ".join((r.stdout + r.stderr).split())


def test_an_unknown_alias_exits_2(tmp_path: Path) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    r = CliRunner().invoke(app, ["verify", str(props), "--source", "A", "--target", "Z"])
    assert r.exit_code == 2 and "CONFIG_UNKNOWN_ALIAS" in r.stdout + r.stderr


def test_the_human_output_names_each_finding_with_both_offsets(capsys: pytest.CaptureFixture[str]) -> None:
    findings = (Finding("different", 4, 4, "value"), Finding("missing", 7, None), Finding("duplicated", 2, 9, None, 2))
    part = PartitionReport("A->B", "orders", 0, "A.orders", PartitionCounts(verified=7, unverified_offsets=2), findings)
    report = VerifyReport(NOW, (part,))
    run = VerifyRun("A->B", "A", "B", NOW, "command", 1500, report)
    print_verification(Verification(report, (run,), records_read=20), recorded="mm2-verify.A.internal", target="B")
    out = capsys.readouterr().out
    assert "verify of flow A->B at 2027-01-15T08:00:00Z (1.5 s): 3 divergent record(s); 7 records verified" in out
    assert "orders  0          A.orders      7         0        0            2           1        0" in out
    assert "different   orders-0  4       A.orders-0  4       value" in out
    assert "missing     orders-0  7       A.orders-0  -       -" in out
    assert "duplicated  orders-0  2       A.orders-0  9       -      2" in out
    assert "recorded in mm2-verify.A.internal on 'B'" in out
