"""The command-line conventions every command follows (issue #24 items 2-3, ux-review section 2).

No broker: each command is stopped by a config error (a missing file, an unknown alias) before
it connects anywhere.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import click
import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from mirrorspark import __version__
from mirrorspark.cli.app import app
from mirrorspark.cli.common import parse_duration, parse_iso_duration
from mirrorspark.cli.conventions import normalize_args
from mirrorspark.errors import ConfigError

pytestmark = pytest.mark.unit

CONFIG = "clusters = A, B\nA.bootstrap.servers = 127.0.0.1:1\nB.bootstrap.servers = 127.0.0.1:1\nA->B.enabled = true\n"


def leaf(*path: str) -> typer.core.TyperCommand:
    """The Click command of ``mirrorspark <path>``."""
    cmd = get_command(app)
    ctx = typer.Context(cmd)
    for name in path:
        cmd = cmd.get_command(ctx, name)  # type: ignore[attr-defined]
    return cmd  # type: ignore[return-value]


def invoke(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, " ".join((r.stdout + r.stderr).split())


# --------------------------------------------------------------------------- list options


@pytest.mark.parametrize(
    ("args", "folded"),
    [
        (["--clusters", "B", "C"], ["--clusters", "B", "--clusters", "C"]),
        (["--clusters", "b,a"], ["--clusters", "b", "--clusters", "a"]),
        (["--clusters=b,a", "--quiet"], ["--clusters", "b", "--clusters", "a", "--quiet"]),
        (["--clusters", "B", "--clusters", "C,D"], ["--clusters", "B", "--clusters", "C", "--clusters", "D"]),
        (["--clusters", "B", "C", "--quiet"], ["--clusters", "B", "--clusters", "C", "--quiet"]),
        (["--clusters"], ["--clusters"]),  # Click then says the value is missing
        (["--conf", "spark.jars=a,b"], ["--conf", "spark.jars=a,b"]),  # not a list option: left alone
    ],
)
def test_a_list_option_takes_repeats_spaces_and_commas(args: list[str], folded: list[str]) -> None:
    """ux-review finding 3: ``--clusters B C`` failed with 'unexpected extra argument', ``b,a`` was one alias."""
    assert normalize_args(leaf("run"), args) == folded


def test_a_regex_list_option_keeps_its_commas() -> None:
    args = ["--add", r"a\.x{1,3}", "b.*", "--list"]
    assert normalize_args(leaf("control", "topics"), args) == ["--add", r"a\.x{1,3}", "--add", "b.*", "--list"]


def test_a_list_ends_at_the_config_file(tmp_path: Path) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    assert normalize_args(leaf("run"), ["--clusters", "B", "C", str(props)]) == [
        "--clusters",
        "B",
        "--clusters",
        "C",
        str(props),
    ]


@pytest.mark.parametrize("clusters", [["B", "Z"], ["B,Z"], ["B", "--clusters", "Z"]])
def test_run_clusters_in_every_spelling_reaches_the_alias_check(tmp_path: Path, clusters: list[str]) -> None:
    """ux-review finding 3 (MM2's ``--clusters B C``): each alias is checked, one line, before connecting."""
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    code, out = invoke("run", str(props), "--clusters", *clusters)
    assert code == 2, out
    assert "[CONFIG_UNKNOWN_ALIAS]" in out and "alias 'Z'" in out


def test_list_options_say_so_in_their_help() -> None:
    for path, option in (
        (("run",), "--clusters"),
        (("offsets", "export"), "--group"),
        (("replica-status",), "--topics"),
        (("control", "topics"), "--add"),
        (("local", "up"), "--clusters"),
    ):
        (param,) = [p for p in leaf(*path).params if option in p.opts]
        assert "(repeatable; also" in (param.help or ""), (path, option)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- CONFIG, positional or --config


def config_commands() -> list[tuple[str, ...]]:
    """Every command with a CONFIG argument."""
    out: list[tuple[str, ...]] = []

    def walk(cmd: object, path: tuple[str, ...]) -> None:
        if isinstance(cmd, typer.core.TyperGroup):
            for name in cmd.list_commands(typer.Context(cmd)):
                walk(cmd.get_command(typer.Context(cmd), name), (*path, name))
        elif any(p.name == "config" for p in cmd.params):  # type: ignore[attr-defined]
            out.append(path)

    walk(get_command(app), ())
    return out


# the options each command needs before it reads CONFIG
REQUIRED: dict[tuple[str, ...], list[str]] = {
    ("run",): [],
    ("status",): [],
    ("plan",): [],
    ("failover",): ["--source", "A", "--target", "B", "--group", "g"],
    ("drill",): ["--source", "A", "--target", "B"],
    ("verify",): ["--source", "A", "--target", "B"],
    ("service",): ["--cluster", "B"],
    ("replica-status",): ["--cluster", "A"],
    ("elect",): ["--cluster", "A", "--type", "preferred", "--all"],
    ("offsets", "export"): ["--source", "A", "--target", "B"],
    ("offsets", "translate"): ["--source", "A", "--target", "B", "--group", "g"],
    ("offsets", "source", "list"): ["--source", "A", "--target", "B"],
    ("offsets", "source", "alter"): ["--source", "A", "--target", "B", "--to-earliest"],
    ("offsets", "source", "reset"): ["--source", "A", "--target", "B"],
    ("offsets", "source", "move"): ["--source", "A", "--target", "B", "--from-connector", "old"],
    ("checkpoints", "read"): ["--source", "A", "--target", "B"],
    ("control", "topics"): ["--source", "A", "--target", "B"],
    ("control", "groups"): ["--source", "A", "--target", "B"],
    ("control", "throttle"): ["--source", "A", "--target", "B"],
    ("config", "convert"): [],
    ("placement", "plan"): ["--cluster", "A", "--placement", "{placement}"],
    ("placement", "apply"): ["--cluster", "A", "--placement", "{placement}"],
    ("placement", "status"): ["--cluster", "A", "--placement", "{placement}"],
    ("placement", "finish"): ["--cluster", "A", "--placement", "{placement}"],
}


def test_every_command_with_config_is_covered() -> None:
    assert sorted(config_commands()) == sorted(REQUIRED)


@pytest.mark.parametrize("path", sorted(REQUIRED), ids=" ".join)
@pytest.mark.parametrize("form", ["positional", "--config", "--config="])
def test_config_is_positional_or_an_option_in_every_command(tmp_path: Path, path: tuple[str, ...], form: str) -> None:
    """ux-review section 2: CONFIG was positional in 6 commands and ``--config`` in 5; now both work in all."""
    placement = tmp_path / "placement.json"
    placement.write_text(json.dumps({"version": 1, "replicas": [{"count": 1, "constraints": {"rack": "a"}}]}))
    missing = str(tmp_path / "nope.properties")
    given = {"positional": [missing], "--config": ["--config", missing], "--config=": [f"--config={missing}"]}[form]
    options = [a.format(placement=placement) for a in REQUIRED[path]]
    code, out = invoke(*path, *options, *given)
    assert code == 2, out
    assert "[CONFIG_INVALID]" in out and "nope.properties" in out


def test_checkpoints_read_takes_target_and_its_old_name_cluster(tmp_path: Path) -> None:
    """ux-review section 2: ``checkpoints read --cluster B --source A`` against ``--source A --target B`` elsewhere."""
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    for role in ("--target", "--cluster"):
        code, out = invoke("checkpoints", "read", str(props), "--source", "A", role, "Z")
        assert code == 2 and "alias 'Z'" in out, out
    code, out = invoke("checkpoints", "read", str(props), "--source", "A", "--target", "B", "--cluster", "Z")
    assert code == 2 and "--cluster is the old name of --target" in out
    assert "--cluster" not in invoke("checkpoints", "read", "--help")[1]


# --------------------------------------------------------------------------- writes need --execute


def test_execute_and_dry_run_together_are_refused(tmp_path: Path) -> None:
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    for path, extra in (
        (("failover",), ["--group", "g"]),
        (("offsets", "source", "alter"), ["--to-latest"]),
        (("offsets", "source", "reset"), []),
        (("offsets", "source", "move"), ["--from-connector", "old"]),
    ):
        code, out = invoke(*path, str(props), "--source", "A", "--target", "B", *extra, "--execute", "--dry-run")
        assert code == 2 and "not both" in out, (path, out)


def test_writing_commands_document_execute() -> None:
    for path in (
        ("failover",),
        ("offsets", "source", "alter"),
        ("offsets", "source", "reset"),
        ("offsets", "source", "move"),
    ):
        options = {o for p in leaf(*path).params for o in p.opts}
        assert {"--execute", "--dry-run"} <= options, path
    alter = {o for p in leaf("offsets", "source", "alter").params for o in p.opts}
    assert {"--to-offset", "--offset", "--to-earliest", "--to-latest", "--to-datetime", "--shift-by"} <= alter
    assert "--by-duration" in alter


@pytest.mark.parametrize(
    ("value", "expected"),
    [("PT30M", datetime.timedelta(minutes=30)), ("P1DT2H", datetime.timedelta(days=1, hours=2)), ("PT0.5S", None)],
)
def test_by_duration_reads_kafkas_iso_durations(value: str, expected: datetime.timedelta | None) -> None:
    assert parse_iso_duration(value) == (expected or datetime.timedelta(milliseconds=500))


@pytest.mark.parametrize("value", ["P", "PT", "1h", "P1Y", "-PT1M"])
def test_by_duration_refuses_anything_else(value: str) -> None:
    with pytest.raises(ConfigError, match="PnDTnHnMnS"):
        parse_iso_duration(value)


# --------------------------------------------------------------------------- --timeout, --version, --json


@pytest.mark.parametrize(
    ("value", "seconds"), [("5s", 5.0), ("5000ms", 5.0), ("2m", 120.0), ("1h", 3600.0), ("30", 30.0), ("0.5", 0.5)]
)
def test_a_timeout_takes_a_unit_and_a_bare_number_is_seconds(value: str, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["0", "5000", "soon", "5 days", "-1s"])
def test_a_timeout_refuses_zero_garbage_and_kafkas_milliseconds(value: str) -> None:
    with pytest.raises(typer.BadParameter):
        parse_duration(value)


def test_status_takes_a_timeout_and_refuses_a_bare_5000(tmp_path: Path) -> None:
    """ux-review finding 6: ``status`` had no ``--timeout``; ``--timeout 5000`` (Kafka's ms) would wait 83 min."""
    props = tmp_path / "mm2.properties"
    props.write_text(CONFIG)
    code, out = invoke("status", str(props), "--timeout", "5000")
    assert code == 2 and "5000ms or 5000s" in out, out


def test_version_flag() -> None:
    """ux-review section 2: ``--version`` was 'No such option'."""
    r = CliRunner().invoke(app, ["--version"])
    assert (r.exit_code, r.stdout.strip()) == (0, __version__)


def test_help_lists_the_exit_codes() -> None:
    out = invoke("--help")[1]
    for code in ("2 bad config or usage", "3 cluster", "6 control", "7 local clusters", "8 service", "130"):
        assert code in out


def test_offsets_export_takes_json() -> None:
    assert "--json" in {o for p in leaf("offsets", "export").params for o in p.opts}


# --------------------------------------------------------------------------- config warnings


def test_a_config_warning_is_one_line_in_one_format(tmp_path: Path) -> None:
    """ux-review finding 1: ``run`` printed each warning twice (a log line and ``warning:``), ``status`` a log line."""
    props = tmp_path / "typo.properties"
    props.write_text(
        "clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:1\n"
        "a->b.enabled = true\na->b.topcs = payments\nmirrorspark.config.lenient = true\n"
    )
    for command in (["status"], ["run", "--until-caught-up"]):
        r = CliRunner().invoke(app, [*command, str(props), "--timeout", "500ms"])
        lines = [line for line in (r.stdout + r.stderr).splitlines() if "a->b.topcs" in line]
        assert len(lines) == 1 and lines[0].startswith("warning: "), (command, lines)
        assert r.exit_code == 3  # the closed port, after the warning


def _commands(cmd: click.Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        return [c for name in cmd.list_commands(ctx) for c in _commands(cmd.get_command(ctx, name), (*path, name))]  # type: ignore[arg-type]
    return [(path, cmd)]


def test_topics_means_a_list_of_topic_names_in_every_command() -> None:
    """ux-review finding 10: ``--topics`` was a list of names in ``replica-status`` and a regex in ``placement``."""
    for path, cmd in _commands(get_command(app)):
        for p in cmd.params:
            if "--topics" in getattr(p, "opts", []):
                assert p.multiple, f"{' '.join(path)} --topics is not a list of topic names"
                assert "regex" not in (getattr(p, "help", "") or "").lower(), path


def test_a_misspelt_key_stops_every_command_with_exit_2_and_the_fix(tmp_path: Path) -> None:
    """ux-review finding 1: ``a->b.topcs`` was a warning, and every topic was replicated."""
    props = tmp_path / "typo.properties"
    props.write_text(
        "clusters = a, b\na.bootstrap.servers = 127.0.0.1:1\nb.bootstrap.servers = 127.0.0.1:1\n"
        "a->b.enabled = true\na->b.topcs = payments\n"
    )
    for command in (["status"], ["run", "--until-caught-up"], ["offsets", "export", "--source", "a", "--target", "b"]):
        code, out = invoke(*command, "--config", str(props))
        assert code == 2, (command, out)
        assert f"{props}:5: unknown key 'a->b.topcs'; did you mean 'a->b.topics'?" in out, out
