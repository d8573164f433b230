"""``mirrorspark drill``: a flow's disaster-recovery drill, predicted (default) or executed on shadow groups."""

from __future__ import annotations

import datetime
import json
import signal
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from mirrorspark.cli.common import ConfigArgument, JsonOption, TimeoutOption, err_console, fail, text_table
from mirrorspark.core.drills import DrillResult, GroupDrill
from mirrorspark.errors import ControlError, DataGapError

PARTITIONS_SHOWN = 20
"""Most partitions of the recovery point the table lists (the ones furthest behind; the rest are counted)."""


def _utc(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _n(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def _secs(s: float) -> str:
    return "unknown" if s < 0 else f"{s:.1f} s"


def _members(g: GroupDrill) -> str:
    return f"{g.target_members}/{'-' if g.source_members is None else g.source_members}"


def _basis(g: GroupDrill) -> str:
    kinds = sorted({p.basis for p in g.partitions})
    return ",".join(kinds) or "-"


def print_drill(r: DrillResult) -> None:
    """Print a drill's tables for a person: the recovery point, the groups, the failover policy."""
    what = "executed on shadow groups" if r.executed else "prediction only: no consumer group changed"
    print(f"drill of flow {r.flow} at {_utc(r.at)} ({what}; {r.duration_ms / 1000:.1f} s)")
    rp = r.recovery_point
    gaps = "none" if not rp.gap_events else f"{rp.gap_events} event(s), {rp.gap_records:,} records"
    behind_by = (
        f"{rp.records:,} records not on '{r.target}' (at most {rp.max_records:,} in one partition), the oldest "
        f"written {_secs(rp.seconds)} ago"
        if rp.records
        else f"every source record is on '{r.target}'"
    )
    print(f"recovery point: {behind_by}; gaps in the ledger: {gaps}")
    behind = sorted((p for p in rp.partitions if p.records > 0), key=lambda p: (-p.records, p.topic, p.partition))
    if behind:
        rows: list[list[object]] = [
            [p.topic, p.partition, p.end_offset, p.position if p.position >= 0 else None, p.records, _secs(p.seconds)]
            for p in behind[:PARTITIONS_SHOWN]
        ]
        print(text_table(["topic", "partition", "end offset", "copied to", "records", "oldest"], rows), end="")
        if len(behind) > PARTITIONS_SHOWN:
            print(f"... and {len(behind) - PARTITIONS_SHOWN} more partition(s) behind")
    if not r.groups:
        print(f"consumer groups: none drilled (no checkpoints on '{r.target}' for the groups asked)")
    else:
        headers = ["group", "partitions", "members target/source", "source lag", "re-reads", "skips", "from"]
        if r.executed:
            headers += ["measured re-reads", "measured skips", "recovery ms", "failback re-reads"]
        rows = []
        for g in r.groups:
            row: list[object] = [
                g.group,
                len(g.partitions),
                _members(g),
                _n(g.source_lag),
                _n(g.rereads),
                _n(g.skips),
                _basis(g),
            ]
            if r.executed:
                fb = [p.failback_rereads for p in g.partitions]
                row += (
                    ["refused"] * 4
                    if g.refused
                    else [
                        _n(g.measured_rereads),
                        _n(g.measured_skips),
                        _n(g.recovery_ms),
                        _n(None if any(v is None for v in fb) else sum(v for v in fb if v is not None)),
                    ]
                )
            rows.append(row)
        print(f"consumer groups (a failover to '{r.target}'):")
        print(text_table(headers, rows), end="")
        print(f"total re-reads: {_n(r.rereads)}; total skips: {_n(r.skips)}")
        for g in r.groups:
            if g.without_checkpoint:
                shown = ", ".join(g.without_checkpoint[:5]) + (" ..." if len(g.without_checkpoint) > 5 else "")
                print(
                    f"note: group '{g.group}' has no checkpoint for {shown}: "
                    "a failover leaves those to auto.offset.reset"
                )
            if g.refused:
                print(f"refused: {g.refused}")
    if r.policy is not None:
        v = r.policy
        move = ", ".join(v.groups) or "none"
        print(
            f"failover policy {v.policy}: {v.action} now: {v.reason}; groups it moves: {move} "
            f"(after {v.grace_ms / 1000:.1f} s of failure)"
        )


def _skipping_error(r: DrillResult) -> DataGapError | None:
    """Build the error for a drill whose failover would skip (or skipped) records, naming the partitions."""
    named = [
        f"group '{g.group}' {p.topic}-{p.partition} ({max(p.skips or 0, p.measured_skips or 0)} records)"
        for g in r.groups
        for p in g.skipping
    ]
    if not named:
        return None
    return DataGapError(
        f"a failover of flow {r.flow} skips records: {'; '.join(named[:10])}"
        + (f" and {len(named) - 10} more" if len(named) > 10 else "")
        + ": the checkpoints are ahead of the groups (reset back since); let the flow emit new checkpoints "
        "(emit.checkpoints.interval.seconds) before failing over, or fail over with an explicit reset plan"
    )


def _refused_error(r: DrillResult) -> ControlError | None:
    """Build the error for an executed drill that left groups alone because they have members."""
    refused = [g.group for g in r.groups if g.refused]
    if not refused:
        return None
    return ControlError(
        f"not drilled: {', '.join(repr(g) for g in refused)} (active members): a drill never moves a group in use; "
        "stop its consumers, or leave it out with --groups"
    )


def drill(
    config: ConfigArgument,
    source: Annotated[str, typer.Option("--source", help="Alias of the flow's source cluster (the one that fails).")],
    target: Annotated[str, typer.Option("--target", help="Alias of the flow's target cluster (where groups go).")],
    groups: Annotated[
        str | None, typer.Option("--groups", help="Regex the drilled group ids match in full (default: every group).")
    ] = None,
    execute: Annotated[
        bool,
        typer.Option(
            "--execute",
            help="Fail each group over to a shadow group (mirrorspark-drill.<group>) and measure it; deleted after.",
        ),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="With --execute: allow drilling every group.")] = False,
    no_record: Annotated[
        bool, typer.Option("--no-record", help="Do not append the result to the drill history on TARGET.")
    ] = False,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Measure what a failover of SOURCE->TARGET would lose, re-read and skip now, per flow and consumer group.

    Read-only by default: the recovery point (SOURCE records not yet on TARGET, and their age).

    Per group: the offsets a failover commits, the records it reads again and skips, its members and lag.

    Also what the failover policy would do now, and why.

    --execute measures it on shadow groups (mirrorspark-drill.<group>), deleted after, also on Ctrl-C.

    Every drill is appended to mm2-drills.<source>.internal on TARGET unless --no-record.

    Exits 4 when a failover would skip records, 6 when --execute left a group with members alone.
    """
    from mirrorspark.config.parse import load_config
    from mirrorspark.migration.drill import FlowDrill, record_drill

    interrupted: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if not interrupted:
            interrupted.append(signum)
            raise KeyboardInterrupt
        err_console.print("deleting the shadow groups; wait", highlight=False, markup=False)

    previous: dict[int, Any] = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        cfg = load_config(Path(config))
        with FlowDrill(cfg, source=source, target=target, groups=groups, timeout_s=timeout) as d:
            if execute:
                result = d.execute(
                    yes=yes,
                    on_group=lambda g: err_console.print(f"drilling group '{g}'", highlight=False, markup=False),
                )
            else:
                result = d.predict()
            topic = None if no_record else record_drill(d.migration, result)
    except KeyboardInterrupt:
        err_console.print("interrupted: the drill's shadow groups were deleted", highlight=False, markup=False)
        raise typer.Exit(130) from None
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if json_out:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print_drill(result)
        if topic is not None:
            print(f"recorded in {topic} on '{target}'")
    problem = _skipping_error(result) or _refused_error(result)
    if problem is not None:
        raise fail(problem)


__all__ = ["drill", "print_drill"]
