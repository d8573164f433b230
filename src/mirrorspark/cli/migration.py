"""The consumer migration commands: ``offsets export|translate|source``, ``failover``, ``checkpoints read``.

The commands that write offsets (``failover``, ``offsets source alter|reset|move``) preview unless
``--execute`` is given, as ``kafka-consumer-groups --reset-offsets`` does.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mirrorspark.cli.common import (
    ConfigArgument,
    DryRunOption,
    ExecuteOption,
    JsonOption,
    TimeoutOption,
    as_dict,
    err_console,
    list_option,
    one_of,
    preview,
    print_preview_note,
    text_table,
)
from mirrorspark.cli.conventions import ConventionGroup

if TYPE_CHECKING:
    from mirrorspark.migration.source_offset_tools import Target

offsets_app = typer.Typer(
    help="Consumer-group offsets translated from a source cluster to a target (consumer migration).",
    no_args_is_help=True,
    cls=ConventionGroup,
)
checkpoints_app = typer.Typer(
    help="Read MM2 checkpoints (<source>.checkpoints.internal).", no_args_is_help=True, cls=ConventionGroup
)


SourceOption = Annotated[str, typer.Option("--source", help="Alias of the cluster the group consumed on.")]
TargetOption = Annotated[str, typer.Option("--target", help="Alias of the cluster the group moves to.")]


class ExportFormat(StrEnum):
    """Output formats of ``offsets export``."""

    CSV = "csv"
    JSON = "json"


def _migration(config: Path, source: str, target: str, timeout_s: float | None) -> Any:
    """Load the config and open a ConsumerMigration for source->target (aliases checked before connecting)."""
    from mirrorspark.config.parse import load_config
    from mirrorspark.migration.consumer_migration import ConsumerMigration

    cfg = load_config(config)
    return ConsumerMigration(cfg, source=source, target=target, timeout_s=timeout_s)


def _rereads_total(values: list[int | None]) -> str:
    known = sum(v for v in values if v is not None)
    unknown = sum(1 for v in values if v is None)
    return f"{known}" if not unknown else f"at least {known} ({unknown} partition(s) unknown)"


@offsets_app.command("export")
def offsets_export(
    config: ConfigArgument,
    source: SourceOption,
    target: TargetOption,
    group: Annotated[list[str] | None, list_option("--group", help="Consumer groups (default: every group).")] = None,
    fmt: Annotated[
        ExportFormat, typer.Option("--format", help="csv (for kafka-consumer-groups --from-file) or json.")
    ] = ExportFormat.CSV,
    json_out: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    timeout: TimeoutOption = None,
) -> None:
    """Print translated offsets from the checkpoints on TARGET, as RemoteClusterUtils.translateOffsets reads them.

    The CSV is a plan for `kafka-consumer-groups --reset-offsets --from-file F --execute` on TARGET.

    With one --group: `topic,partition,offset` (pass the same --group there); else `group,topic,partition,offset`.
    """
    from mirrorspark.migration.plans import reset_plan_csv

    with _migration(config, source, target, timeout) as m:
        latest = m.latest_checkpoints(group or None)
    for g, cps in latest.items():
        if not cps:
            err_console.print(f"warning: group '{g}' has no checkpoints yet", highlight=False, markup=False)
    if fmt is ExportFormat.JSON or json_out:
        rows = [
            {
                "group": g,
                "topic": cp.topic,
                "partition": cp.partition,
                "offset": cp.downstream_offset,
                "upstream_offset": cp.upstream_offset,
                "metadata": cp.metadata,
            }
            for g, cps in latest.items()
            for cp in cps.values()
        ]
        print(json.dumps(rows, indent=2))
        return
    plan = {g: {tp: cp.downstream_offset for tp, cp in cps.items()} for g, cps in latest.items()}
    single = group is not None and len(set(group)) == 1
    sys.stdout.write(reset_plan_csv(plan, with_group=not single))


@offsets_app.command("translate")
def offsets_translate(
    config: ConfigArgument,
    source: SourceOption,
    target: TargetOption,
    group: Annotated[str, typer.Option("--group", help="The consumer group on SOURCE.")],
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Translate a group's current offsets on SOURCE to TARGET now, with the records a switch re-reads.

    Live through the flow's offset syncs (MM2's rule); the latest checkpoint wins when it is for exactly the
    committed offset. Failback topics translate in reverse.
    """
    with _migration(config, source, target, timeout) as m:
        rows = m.translate_group(group)
    if json_out:
        print(json.dumps([as_dict(r) for r in rows], indent=2))
        return
    if not rows:
        print(f"group '{group}' has no committed offsets on cluster '{source}' for topics the flow replicates")
        return
    print(f"group '{group}': {source} -> {target}")
    print(
        text_table(
            ["topic", "partition", "source offset", "target topic", "target offset", "target end", "re-reads", "from"],
            [
                [
                    r.topic,
                    r.partition,
                    r.source_offset,
                    r.target_topic,
                    r.target_offset,
                    r.target_end_offset,
                    r.rereads,
                    r.basis,
                ]
                for r in rows
            ],
        ),
        end="",
    )
    print(f"total re-reads: {_rereads_total([r.rereads for r in rows])}")


def failover(
    config: ConfigArgument,
    source: SourceOption,
    target: TargetOption,
    group: Annotated[str, typer.Option("--group", help="The consumer group to move to TARGET.")],
    execute: ExecuteOption = False,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Commit GROUP's latest checkpointed offsets to the same group on TARGET (refused while it has members there).

    Previews the offsets unless --execute is given. Needs only TARGET; with SOURCE reachable the re-reads are
    computed too.
    """
    dry_run = preview(execute, dry_run)
    with _migration(config, source, target, timeout) as m:
        plan = m.failover(group, dry_run=dry_run)
    if json_out:
        out = as_dict(plan)
        out["total_rereads"] = plan.total_rereads
        out["unknown_rereads"] = plan.unknown_rereads
        out["consumed_since"] = plan.consumed_since
        print(json.dumps(out, indent=2))
    else:
        verb = "preview only: would commit" if dry_run else "committed"
        print(f"group '{group}' on cluster '{target}': {verb} the offsets of the latest checkpoints from '{source}'")
        print(
            text_table(
                ["topic", "partition", "offset", "re-reads"],
                [[o.topic, o.partition, o.offset, o.rereads] for o in plan.offsets],
            ),
            end="",
        )
        print(f"total re-reads: {_rereads_total([o.rereads for o in plan.offsets])}")
    if dry_run:
        print_preview_note()
    if plan.source_members is None:
        err_console.print(
            f"note: cluster '{source}' is unreachable: the offsets are the checkpoints on '{target}', "
            "their re-reads are unknown",
            highlight=False,
            markup=False,
        )
    elif plan.consumed_since:
        err_console.print(
            f"note: group '{group}' consumed {plan.consumed_since:,} more record(s) on cluster '{source}' since these "
            "checkpoints: a consumer on the target reads those again too (mirrorspark drill counts them)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if plan.source_members:
        err_console.print(
            f"warning: group '{group}' still has {plan.source_members} active member(s) on cluster '{source}': "
            "they keep consuming past the checkpoint",
            highlight=False,
            markup=False,
        )


@checkpoints_app.command("read")
def checkpoints_read(
    config: ConfigArgument,
    source: SourceOption,
    target: Annotated[
        str | None,
        typer.Option("--target", help="Alias of the cluster holding the checkpoints.", show_default=False),
    ] = None,
    cluster: Annotated[str | None, typer.Option("--cluster", hidden=True, help="Old name of --target.")] = None,
    group: Annotated[str | None, typer.Option("--group", help="Only this consumer group.")] = None,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Print the checkpoints of SOURCE's groups on TARGET, one line per record as MM2's CheckpointFormatter does."""
    held_by = one_of(target, cluster, "--target", "--cluster")
    with _migration(config, source, held_by, timeout) as m:
        records = m.checkpoints(group)
    if json_out:
        print(json.dumps([as_dict(cp) for cp in records], indent=2))
        return
    for cp in records:
        print(cp.format())


source_app = typer.Typer(
    help="A flow's source offsets in mm2-offsets.<source>.internal (KIP-875's list, alter, reset; and move).",
    no_args_is_help=True,
    cls=ConventionGroup,
)
offsets_app.add_typer(source_app, name="source")

FlowSourceOption = Annotated[str, typer.Option("--source", help="Alias of the flow's source cluster.")]
FlowTargetOption = Annotated[str, typer.Option("--target", help="Alias of the flow's target cluster.")]
TopicOption = Annotated[str | None, typer.Option("--topic", help="Only this source topic (default: every one).")]
PartitionOption = Annotated[int | None, typer.Option("--partition", min=0, help="Only this partition (needs --topic).")]


def _source_offsets(config: Path, source: str, target: str, timeout_s: float | None) -> Any:
    from mirrorspark.config.parse import load_config
    from mirrorspark.migration.source_offset_tools import FlowSourceOffsets

    cfg = load_config(config)
    return FlowSourceOffsets(cfg, source=source, target=target, timeout_s=timeout_s)


def _dash(v: object) -> object:
    return "-" if v is None else v


@source_app.command("list")
def source_list(
    config: ConfigArgument,
    source: FlowSourceOption,
    target: FlowTargetOption,
    topic: TopicOption = None,
    partition: PartitionOption = None,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Show each partition's committed position (next source offset to copy), source end offset and lag."""
    with _source_offsets(config, source, target, timeout) as so:
        rows = so.list_offsets(topic, partition)
        reset = so.auto_offset_reset
    if json_out:
        print(
            json.dumps(
                [
                    {
                        "topic": f.topic,
                        "partition": f.partition,
                        "position": f.position,
                        "stored_offset": f.stored,
                        "start_offset": f.start,
                        "end_offset": f.end,
                        "lag": f.lag,
                    }
                    for f in rows
                ],
                indent=2,
            )
        )
        return
    print(
        text_table(
            ["topic", "partition", "position", "end offset", "lag"],
            [[f.topic, f.partition, _dash(f.position), f.end, _dash(f.lag)] for f in rows],
        ),
        end="",
    )
    if any(f.position is None for f in rows):
        print(f"position '-': none stored; the next run starts at auto.offset.reset={reset}")


def _print_plan(plan: Any, json_out: bool) -> None:
    from mirrorspark.mm2.alter_offsets import ALTER_NOTE

    if json_out:
        print(
            json.dumps(
                {
                    "flow": plan.flow,
                    "operation": plan.operation,
                    "applied": plan.applied,
                    "offsets_topic": plan.offsets_topic,
                    "syncs_topic": plan.syncs_topic,
                    "auto_offset_reset": plan.auto_offset_reset,
                    "timestamp_ms": plan.timestamp_ms,
                    "running": plan.running,
                    "changes": [
                        {
                            "topic": c.topic,
                            "partition": c.partition,
                            "old_position": c.old_position,
                            "new_position": c.new_position,
                            "stored_offset": c.stored_offset,
                            "change": c.change,
                            "key": c.key.decode(),
                            "value": None if c.value is None else c.value.decode(),
                            "offset_sync": None
                            if c.sync is None
                            else {
                                "upstream_offset": c.sync.upstream_offset,
                                "downstream_offset": c.sync.downstream_offset,
                            },
                        }
                        for c in plan.changes
                    ],
                },
                indent=2,
            )
        )
    else:
        verb = "preview only: would write" if not plan.applied else "wrote"
        print(f"flow {plan.flow}: {plan.operation}: {verb} {len(plan.changes)} record(s) to '{plan.offsets_topic}'")
        print(
            text_table(
                ["topic", "partition", "old position", "new position", "change", "stored value", "offset sync"],
                [
                    [
                        c.topic,
                        c.partition,
                        _dash(c.old_position),
                        _dash(c.new_position) if c.value is not None or c.new_position == 0 else plan.auto_offset_reset,
                        c.change,
                        "tombstone" if c.value is None else c.value.decode(),
                        "-" if c.sync is None else f"{c.sync.upstream_offset}->{c.sync.downstream_offset}",
                    ]
                    for c in plan.changes
                ],
            ),
            end="",
        )
    if not plan.applied:
        print_preview_note()
    if plan.running:
        err_console.print(f"warning: {plan.running}", highlight=False, markup=False)
    if plan.operation == "alter" and not json_out:
        err_console.print(f"note: {ALTER_NOTE}", highlight=False, markup=False)
    if plan.operation == "reset" and not json_out:
        err_console.print(
            f"note: the next run (mirrorspark or MM2) starts these partitions at auto.offset.reset="
            f"{plan.auto_offset_reset}; its first copied record writes their offset sync",
            highlight=False,
            markup=False,
        )


def _alter_choice(
    to_offset: int | None,
    offset: int | None,
    to_earliest: bool,
    to_latest: bool,
    to_datetime: str | None,
    shift_by: int | None,
    by_duration: str | None,
) -> tuple[Target, int | None, str | None]:
    """``source alter``'s one choice: ``(target, offset, ISO time)``; raises SourceOffsetsRequestError unless one."""
    import datetime

    from mirrorspark.cli.common import parse_iso_duration
    from mirrorspark.errors import SourceOffsetsRequestError

    choices: tuple[tuple[str, Target, bool], ...] = (
        ("--to-offset", "offset", to_offset is not None or offset is not None),
        ("--to-earliest", "earliest", to_earliest),
        ("--to-latest", "latest", to_latest),
        ("--to-datetime", "datetime", to_datetime is not None),
        ("--shift-by", "shift", shift_by is not None),
        ("--by-duration", "datetime", by_duration is not None),
    )
    chosen = [(n, to) for n, to, on in choices if on]
    if len(chosen) != 1:
        raise SourceOffsetsRequestError(
            "give exactly one of --to-offset N, --to-earliest, --to-latest, --to-datetime ISO, --shift-by N, "
            "--by-duration PnDTnHnMnS" + (f" (got {', '.join(n for n, _ in chosen)})" if chosen else "")
        )
    new_offset = one_of(to_offset, offset, "--to-offset", "--offset") if chosen[0][1] == "offset" else None
    when = to_datetime
    if by_duration is not None:
        at = datetime.datetime.now(tz=datetime.UTC) - parse_iso_duration(by_duration)
        when = at.isoformat(timespec="milliseconds")
    return chosen[0][1], new_offset, when


@source_app.command("alter")
def source_alter(
    config: ConfigArgument,
    source: FlowSourceOption,
    target: FlowTargetOption,
    topic: TopicOption = None,
    partition: PartitionOption = None,
    to_offset: Annotated[
        int | None,
        typer.Option(
            "--to-offset", min=0, help="The next source offset to copy (stored as offset - 1).", show_default=False
        ),
    ] = None,
    offset: Annotated[int | None, typer.Option("--offset", min=0, hidden=True, help="Old name of --to-offset.")] = None,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="The source partition's log start.")] = False,
    to_latest: Annotated[
        bool, typer.Option("--to-latest", help="The source partition's end (new records only).")
    ] = False,
    to_datetime: Annotated[
        str | None,
        typer.Option(
            "--to-datetime", help="First record at or after this ISO 8601 time (no zone = UTC).", show_default=False
        ),
    ] = None,
    shift_by: Annotated[
        int | None,
        typer.Option(
            "--shift-by",
            help="Move each stored position by N (negative: back), kept within the log.",
            show_default=False,
        ),
    ] = None,
    by_duration: Annotated[
        str | None,
        typer.Option(
            "--by-duration",
            help="First record at or after now minus this ISO 8601 duration PnDTnHnMnS, e.g. PT30M.",
            show_default=False,
        ),
    ] = None,
    execute: ExecuteOption = False,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Set where the flow resumes (refused while it runs). Writes Connect's records, so MM2 resumes there too.

    Previews the new positions unless --execute is given. The choices are kafka-consumer-groups --reset-offsets'.
    """
    dry_run = preview(execute, dry_run)
    to, new_offset, when = _alter_choice(to_offset, offset, to_earliest, to_latest, to_datetime, shift_by, by_duration)
    with _source_offsets(config, source, target, timeout) as so:
        plan = so.alter(
            topic=topic,
            partition=partition,
            to=to,
            offset=new_offset,
            shift=shift_by,
            datetime_iso=when,
            dry_run=dry_run,
        )
    _print_plan(plan, json_out)


@source_app.command("reset")
def source_reset(
    config: ConfigArgument,
    source: FlowSourceOption,
    target: FlowTargetOption,
    topic: TopicOption = None,
    partition: PartitionOption = None,
    execute: ExecuteOption = False,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Delete the stored positions (tombstones): the next run starts at auto.offset.reset (refused while it runs).

    Previews the tombstones unless --execute is given.
    """
    dry_run = preview(execute, dry_run)
    with _source_offsets(config, source, target, timeout) as so:
        plan = so.reset(topic=topic, partition=partition, dry_run=dry_run)
    _print_plan(plan, json_out)


@source_app.command("move")
def source_move(
    config: ConfigArgument,
    source: FlowSourceOption,
    target: FlowTargetOption,
    from_connector: Annotated[
        str,
        typer.Option(
            "--from-connector", help="The connector name the offsets are stored under now.", show_default=False
        ),
    ],
    to_connector: Annotated[
        str | None,
        typer.Option(
            "--to-connector",
            help="The name to store them under (default: the flow's mirrorspark.source.connector.name).",
            show_default=False,
        ),
    ] = None,
    topic: TopicOption = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace offsets the new name already has for these partitions.")
    ] = False,
    execute: ExecuteOption = False,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Store the flow's source offsets under another connector name, after a connector was renamed.

    A flow whose connector name has no stored offsets while another name has its source's refuses to start.

    The name is mirrorspark.source.connector.name, or the Connect connector's name in connector configs.

    The newest offset of each partition under --from-connector is written again under --to-connector.

    Same value, same topic; the old name's records stay. Previews unless --execute is given.

    Refused while the flow runs, and over offsets the new name already has unless --overwrite.
    """
    from mirrorspark.migration.source_offset_move import move_source_offsets

    dry_run = preview(execute, dry_run)
    with _source_offsets(config, source, target, timeout) as so:
        plan = move_source_offsets(
            so,
            from_connector=from_connector,
            to_connector=to_connector,
            topic=topic,
            overwrite=overwrite,
            dry_run=dry_run,
        )
    _print_move(plan, json_out)


def _print_move(plan: Any, json_out: bool) -> None:
    if json_out:
        print(
            json.dumps(
                {
                    "flow": plan.flow,
                    "operation": "move",
                    "applied": plan.applied,
                    "offsets_topic": plan.offsets_topic,
                    "from_connector": plan.from_connector,
                    "to_connector": plan.to_connector,
                    "running": plan.running,
                    "changes": [
                        {
                            "topic": m.topic,
                            "partition": m.partition,
                            "position": m.position,
                            "stored_offset": m.offset,
                            "existing_offset": m.existing,
                            "key": m.key.decode(),
                            "value": m.value.decode(),
                        }
                        for m in plan.moves
                    ],
                },
                indent=2,
            )
        )
    else:
        verb = "preview only: would write" if not plan.applied else "wrote"
        print(
            f"flow {plan.flow}: move: {verb} {len(plan.moves)} record(s) to '{plan.offsets_topic}' under connector "
            f"name '{plan.to_connector}' (from '{plan.from_connector}')"
        )
        print(
            text_table(
                ["topic", "partition", "position", "stored value", f"under '{plan.to_connector}' now"],
                [
                    [
                        m.topic,
                        m.partition,
                        m.position,
                        m.value.decode(),
                        _dash(None if m.existing is None else m.existing + 1),
                    ]
                    for m in plan.moves
                ],
            ),
            end="",
        )
    if not plan.applied:
        print_preview_note()
        if plan.overwrites:
            err_console.print(
                f"warning: '{plan.to_connector}' already has offsets for {len(plan.overwrites)} of these partition(s): "
                "--execute refuses them unless --overwrite is given",
                highlight=False,
                markup=False,
            )
    if plan.running:
        err_console.print(f"warning: {plan.running}", highlight=False, markup=False)
    if plan.to_connector != plan.configured:
        err_console.print(
            f"note: the flow reads its source offsets under '{plan.configured}': set "
            f"{plan.flow}.mirrorspark.source.connector.name = {plan.to_connector} before it runs",
            highlight=False,
            markup=False,
        )
