"""The consumer migration commands: ``offsets export|translate``, ``failover``, ``checkpoints read``."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from mirrorspark.cli.common import ConfigOption, as_dict, err_console, fail, text_table
from mirrorspark.errors import MirrorsparkError

offsets_app = typer.Typer(
    help="Consumer-group offsets translated from a source cluster to a target (consumer migration).",
    no_args_is_help=True,
)
checkpoints_app = typer.Typer(help="Read MM2 checkpoints (<source>.checkpoints.internal).", no_args_is_help=True)


SourceOption = Annotated[str, typer.Option("--source", help="Alias of the cluster the group consumed on.")]
TargetOption = Annotated[str, typer.Option("--target", help="Alias of the cluster the group moves to.")]
TimeoutOption = Annotated[
    float, typer.Option("--timeout", min=1, help="Seconds for each cluster call and for reading checkpoints.")
]


class ExportFormat(StrEnum):
    """Output formats of ``offsets export``."""

    CSV = "csv"
    JSON = "json"


def _migration(config: Path, source: str, target: str, timeout_s: float) -> Any:
    """Load the config and open a ConsumerMigration for source->target (aliases checked before connecting)."""
    from mirrorspark.config.parse import load_config
    from mirrorspark.migration.consumer_migration import ConsumerMigration

    cfg = load_config(config)
    for w in cfg.warnings:
        err_console.print(f"[yellow]warning[/]: {w}", highlight=False, markup=True)
    return ConsumerMigration(cfg, source=source, target=target, timeout_s=timeout_s)


def _rereads_total(values: list[int | None]) -> str:
    known = sum(v for v in values if v is not None)
    unknown = sum(1 for v in values if v is None)
    return f"{known}" if not unknown else f"at least {known} ({unknown} partition(s) unknown)"


@offsets_app.command("export")
def offsets_export(
    config: ConfigOption,
    source: SourceOption,
    target: TargetOption,
    group: Annotated[
        list[str] | None, typer.Option("--group", help="A consumer group (repeatable); default: every group.")
    ] = None,
    fmt: Annotated[
        ExportFormat, typer.Option("--format", help="csv (for kafka-consumer-groups --from-file) or json.")
    ] = ExportFormat.CSV,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Print translated offsets from the checkpoints on TARGET, as RemoteClusterUtils.translateOffsets reads them.

    The CSV is a plan for `kafka-consumer-groups --reset-offsets --from-file F --execute` on TARGET.

    With one --group: `topic,partition,offset` (pass the same --group there); else `group,topic,partition,offset`.
    """
    from mirrorspark.migration.plans import reset_plan_csv

    try:
        with _migration(config, source, target, timeout) as m:
            latest = m.latest_checkpoints(group or None)
    except MirrorsparkError as e:
        raise fail(e) from None
    for g, cps in latest.items():
        if not cps:
            err_console.print(f"warning: group '{g}' has no checkpoints yet", highlight=False, markup=False)
    if fmt is ExportFormat.JSON:
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
    config: ConfigOption,
    source: SourceOption,
    target: TargetOption,
    group: Annotated[str, typer.Option("--group", help="The consumer group on SOURCE.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Translate a group's current offsets on SOURCE to TARGET now, with the records a switch re-reads.

    Live through the flow's offset syncs (MM2's rule); the latest checkpoint wins when it is for exactly the
    committed offset. Failback topics translate in reverse.
    """
    try:
        with _migration(config, source, target, timeout) as m:
            rows = m.translate_group(group)
    except MirrorsparkError as e:
        raise fail(e) from None
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
    config: ConfigOption,
    source: SourceOption,
    target: TargetOption,
    group: Annotated[str, typer.Option("--group", help="The consumer group to move to TARGET.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be committed; change nothing.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Commit GROUP's latest checkpointed offsets to the same group on TARGET (refused while it has members there).

    Needs only TARGET; with SOURCE reachable the re-reads are computed too.
    """
    try:
        with _migration(config, source, target, timeout) as m:
            plan = m.failover(group, dry_run=dry_run)
    except MirrorsparkError as e:
        raise fail(e) from None
    if json_out:
        out = as_dict(plan)
        out["total_rereads"] = plan.total_rereads
        out["unknown_rereads"] = plan.unknown_rereads
        print(json.dumps(out, indent=2))
    else:
        verb = "dry run, nothing changed: would commit" if dry_run else "committed"
        print(f"group '{group}' on cluster '{target}': {verb} the offsets of the latest checkpoints from '{source}'")
        print(
            text_table(
                ["topic", "partition", "offset", "re-reads"],
                [[o.topic, o.partition, o.offset, o.rereads] for o in plan.offsets],
            ),
            end="",
        )
        print(f"total re-reads: {_rereads_total([o.rereads for o in plan.offsets])}")
    if plan.source_members is None:
        err_console.print(
            f"note: cluster '{source}' is unreachable: the offsets are the checkpoints on '{target}', "
            "their re-reads are unknown",
            highlight=False,
            markup=False,
        )
    elif plan.source_members:
        err_console.print(
            f"warning: group '{group}' still has {plan.source_members} active member(s) on cluster '{source}': "
            "they keep consuming past the checkpoint",
            highlight=False,
            markup=False,
        )


@checkpoints_app.command("read")
def checkpoints_read(
    config: ConfigOption,
    cluster: Annotated[str, typer.Option("--cluster", help="Alias of the cluster holding the checkpoints.")],
    source: SourceOption,
    group: Annotated[str | None, typer.Option("--group", help="Only this consumer group.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the records as JSON.")] = False,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Print the checkpoints of SOURCE's groups on CLUSTER, one line per record as MM2's CheckpointFormatter does."""
    try:
        with _migration(config, source, cluster, timeout) as m:
            records = m.checkpoints(group)
    except MirrorsparkError as e:
        raise fail(e) from None
    if json_out:
        print(json.dumps([as_dict(cp) for cp in records], indent=2))
        return
    for cp in records:
        print(cp.format())
